"""Forward passes of the state distribution over a sparse ``(S*A, S)`` CSR kernel, on every thread
with the same bits (see the docs page 'Large models', section 'Threads').

A forward pass pushes the distribution ``d_h (S,)`` one step, ``d_{h+1}(s') = sum_s d_h(s)
P(s' | s, pi_h(s))``, and sums the occupancy's value and costs on the way (eq.
"occupancy-measure"). The push is a scatter: two threads cannot share ``d_{h+1}`` without racing,
and the floating-point order of each ``d_{h+1}(s')`` must not depend on the thread count. So the
source states are cut into a FIXED number of chunks, ``chunks = forward_chunks(S)`` (a function of
``S`` only: ``min(FORWARD_CHUNKS, S // CHUNK_STATES)``, at least 1); chunk ``j`` scatters its
states, in order, into its own buffer ``(S,)``, then ``d_{h+1}(s')`` is the sum of the buffers in
chunk order (the targets split over threads), and the value and costs are the chunks' partial
sums added in chunk order (chunk 0 carries the running total). The threaded and the serial
builds run this same arithmetic: the same bits for any thread count, and with one chunk
(``S < 2 * CHUNK_STATES``) exactly the plain serial scatter's bits. Memory: ``chunks * S`` floats.

Measured at ``S = 10^5`` (``A = 10``, ``b = 3``, ``H = 100``; work on one thread relative to the
plain scatter): 2, 4, 8 and 16 chunks cost 1.12, 1.16, 1.45 and 1.72 (the merge of the buffers
grows with their number); a gather over the transposed kernel reads every action's entries (2.8);
a split by target states reads every entry on each thread (1.55 on two threads); a bucket sort of
the entries by target block keeps the plain scatter's bits but costs 2.3 to 2.8. At ``S = 10^6``
the scattered writes dominate: 2, 4 and 8 chunks cost 0.96, 0.96 and 1.05 (see ``docs/scale.md``,
'Threads').
"""

from __future__ import annotations

import numba as nb
import numpy as np

#: the most chunks of source states a forward pass is cut into (independent of the thread count)
FORWARD_CHUNKS = 4
#: the fewest states per chunk: below ``2 * CHUNK_STATES`` states a pass is one chunk (the plain scatter)
CHUNK_STATES = 4096
#: targets per block of the merge of the chunks' buffers (any split gives the same bits)
MERGE_BLOCK = 4096


def forward_chunks(S: int) -> int:
    """The number of chunks of source states of a forward pass over ``S`` states:
    ``min(FORWARD_CHUNKS, S // CHUNK_STATES)``, at least 1 (never the thread count)."""
    return int(max(1, min(FORWARD_CHUNKS, S // CHUNK_STATES)))


@nb.njit(cache=True, inline="always")
def _bounds(j: int, chunks: int, S: int) -> tuple[int, int]:
    """The states ``lo .. hi - 1`` of chunk ``j`` of ``chunks``."""
    size = (S + chunks - 1) // chunks
    lo = j * size
    return lo, min(S, lo + size)


@nb.njit(cache=True, inline="always")
def _merge(q: int, bufs: np.ndarray, touched: np.ndarray, d: np.ndarray) -> None:
    """Block ``q`` of targets: ``d[t]`` = the touched chunks' buffers at ``t`` summed in chunk order
    (an untouched buffer is all ``+0.0``: skipping it keeps the bits), the buffers zeroed."""
    S = d.size
    lo = q * MERGE_BLOCK
    hi = min(S, lo + MERGE_BLOCK)
    first = True
    for j in range(bufs.shape[0]):
        if not touched[j]:
            continue
        buf = bufs[j]
        if first:
            for t in range(lo, hi):
                d[t] = buf[t]
                buf[t] = 0.0
            first = False
        else:
            for t in range(lo, hi):
                d[t] += buf[t]
                buf[t] = 0.0
    if first:
        for t in range(lo, hi):
            d[t] = 0.0


@nb.njit(cache=True, inline="always")
def _fold(part: np.ndarray, out: np.ndarray) -> None:
    """``out`` = the chunks' partial sums ``part (chunks, M)`` added in chunk order (chunk 0 carried
    ``out``); the partial sums reset for the next step."""
    for m in range(out.size):
        x = part[0, m]
        for j in range(1, part.shape[0]):
            x += part[j, m]
            part[j, m] = 0.0
        out[m] = x
        part[0, m] = x


@nb.njit(cache=True, inline="always")
def _stats_chunk(
    j: int,
    h: int,
    push: bool,
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    actions: np.ndarray,
    tables: np.ndarray,
    d: np.ndarray,
    bufs: np.ndarray,
    part: np.ndarray,
    touched: np.ndarray,
) -> None:
    """Chunk ``j`` at step ``h`` of a deterministic policy: its states' ``d(s) tables[s, a_h(s)]``
    into ``part[j]`` and (``push``) their rows ``d(s) P(. | s, a_h(s))`` into ``bufs[j]``."""
    A, M = tables.shape[1], tables.shape[2]
    lo, hi = _bounds(j, bufs.shape[0], d.size)
    buf = bufs[j]
    acc = part[j]
    hit = False
    for s in range(lo, hi):
        ds = d[s]
        if ds == 0.0:
            continue
        hit = True
        a = actions[h, s]
        for m in range(M):
            acc[m] += ds * tables[s, a, m]
        if push:
            row = s * A + a
            for k in range(indptr[row], indptr[row + 1]):
                buf[indices[k]] += ds * data[k]
    touched[j] = hit


@nb.njit(cache=True, parallel=True)
def stats_threaded(
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    actions: np.ndarray,
    tables: np.ndarray,
    d0: np.ndarray,
    chunks: int,
    out: np.ndarray,
) -> None:
    """Value and costs ``out (M,)`` (zeros on entry) from ``d0 (S,)`` of the deterministic policy
    ``actions (H, S)`` for the tables ``tables (S, A, M)``, the chunks and then the merge blocks of
    each step on every thread (module docstring; the bits of [`stats_serial`][cmdp_rl.kernels.forward.stats_serial])."""
    H, S = actions.shape
    d = d0.copy()
    bufs = np.zeros((chunks, S))
    part = np.zeros((chunks, out.size))
    touched = np.zeros(chunks, dtype=np.bool_)
    blocks = (S + MERGE_BLOCK - 1) // MERGE_BLOCK
    for h in range(H):
        push = h + 1 < H
        for j in nb.prange(chunks):
            _stats_chunk(j, h, push, indptr, indices, data, actions, tables, d, bufs, part, touched)
        _fold(part, out)
        if push:
            for q in nb.prange(blocks):
                _merge(q, bufs, touched, d)


@nb.njit(cache=True)
def stats_serial(
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    actions: np.ndarray,
    tables: np.ndarray,
    d0: np.ndarray,
    chunks: int,
    out: np.ndarray,
) -> None:
    """[`stats_threaded`][cmdp_rl.kernels.forward.stats_threaded] on one thread, compiled without a
    thread pool: the same chunks in the same order, so the same bits."""
    H, S = actions.shape
    d = d0.copy()
    bufs = np.zeros((chunks, S))
    part = np.zeros((chunks, out.size))
    touched = np.zeros(chunks, dtype=np.bool_)
    blocks = (S + MERGE_BLOCK - 1) // MERGE_BLOCK
    for h in range(H):
        push = h + 1 < H
        for j in range(chunks):
            _stats_chunk(j, h, push, indptr, indices, data, actions, tables, d, bufs, part, touched)
        _fold(part, out)
        if push:
            for q in range(blocks):
                _merge(q, bufs, touched, d)


@nb.njit(cache=True, inline="always")
def _push_chunk(
    j: int, h: int, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, actions: np.ndarray, A: int,
    dist: np.ndarray, bufs: np.ndarray, touched: np.ndarray,
) -> None:  # fmt: skip
    """Chunk ``j``'s rows ``dist[h, s] P(. | s, a_h(s))`` into ``bufs[j]``."""
    lo, hi = _bounds(j, bufs.shape[0], dist.shape[1])
    buf = bufs[j]
    hit = False
    for s in range(lo, hi):
        ds = dist[h, s]
        if ds == 0.0:
            continue
        hit = True
        row = s * A + actions[h, s]
        for k in range(indptr[row], indptr[row + 1]):
            buf[indices[k]] += ds * data[k]
    touched[j] = hit


@nb.njit(cache=True, parallel=True)
def distribution_threaded(
    indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, actions: np.ndarray, A: int, d0: np.ndarray, chunks: int
) -> np.ndarray:
    """State distribution ``(H, S)``, ``P(s_h = s)`` from ``d0 (S,)``, of the deterministic policy
    ``actions (H, S)``, on every thread (the bits of
    [`distribution_serial`][cmdp_rl.kernels.forward.distribution_serial])."""
    H, S = actions.shape
    dist = np.zeros((H, S))
    dist[0] = d0
    bufs = np.zeros((chunks, S))
    touched = np.zeros(chunks, dtype=np.bool_)
    blocks = (S + MERGE_BLOCK - 1) // MERGE_BLOCK
    for h in range(H - 1):
        for j in nb.prange(chunks):
            _push_chunk(j, h, indptr, indices, data, actions, A, dist, bufs, touched)
        for q in nb.prange(blocks):
            _merge(q, bufs, touched, dist[h + 1])
    return dist


@nb.njit(cache=True)
def distribution_serial(
    indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, actions: np.ndarray, A: int, d0: np.ndarray, chunks: int
) -> np.ndarray:
    """[`distribution_threaded`][cmdp_rl.kernels.forward.distribution_threaded] on one thread,
    compiled without a thread pool: the same bits."""
    H, S = actions.shape
    dist = np.zeros((H, S))
    dist[0] = d0
    bufs = np.zeros((chunks, S))
    touched = np.zeros(chunks, dtype=np.bool_)
    blocks = (S + MERGE_BLOCK - 1) // MERGE_BLOCK
    for h in range(H - 1):
        for j in range(chunks):
            _push_chunk(j, h, indptr, indices, data, actions, A, dist, bufs, touched)
        for q in range(blocks):
            _merge(q, bufs, touched, dist[h + 1])
    return dist


@nb.njit(cache=True, inline="always")
def _policy_chunk(
    j: int,
    h: int,
    push: bool,
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    policy: np.ndarray,
    r: np.ndarray,
    c: np.ndarray,
    d: np.ndarray,
    bufs: np.ndarray,
    part: np.ndarray,
    touched: np.ndarray,
) -> None:
    """Chunk ``j`` at step ``h`` of a randomized policy ``(H, S, A)``: ``q = d(s) pi_h(a|s)`` times
    ``r``, then each ``c_i``, into ``part[j] (1 + N,)``; (``push``) ``q P(. | s, a)`` into ``bufs[j]``."""
    A, N = policy.shape[2], c.shape[0]
    lo, hi = _bounds(j, bufs.shape[0], d.size)
    buf = bufs[j]
    acc = part[j]
    hit = False
    for s in range(lo, hi):
        ds = d[s]
        if ds == 0.0:
            continue
        hit = True
        for a in range(A):
            m = ds * policy[h, s, a]
            if m == 0.0:
                continue
            acc[0] += m * r[s, a]
            for i in range(N):
                acc[1 + i] += m * c[i, s, a]
            if push:
                row = s * A + a
                for k in range(indptr[row], indptr[row + 1]):
                    buf[indices[k]] += m * data[k]
    touched[j] = hit


@nb.njit(cache=True, parallel=True)
def policy_threaded(
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    policy: np.ndarray,
    r: np.ndarray,
    c: np.ndarray,
    s0: int,
    chunks: int,
) -> np.ndarray:
    """Value and costs ``(1 + N,)`` from ``s0`` of the randomized Markov policy ``policy (H, S, A)``
    with ``r (S, A)`` and ``c (N, S, A)``, on every thread (the bits of
    [`policy_serial`][cmdp_rl.kernels.forward.policy_serial])."""
    H, S = policy.shape[0], policy.shape[1]
    d = np.zeros(S)
    d[s0] = 1.0
    out = np.zeros(1 + c.shape[0])
    bufs = np.zeros((chunks, S))
    part = np.zeros((chunks, out.size))
    touched = np.zeros(chunks, dtype=np.bool_)
    blocks = (S + MERGE_BLOCK - 1) // MERGE_BLOCK
    for h in range(H):
        push = h + 1 < H
        for j in nb.prange(chunks):
            _policy_chunk(j, h, push, indptr, indices, data, policy, r, c, d, bufs, part, touched)
        _fold(part, out)
        if push:
            for q in nb.prange(blocks):
                _merge(q, bufs, touched, d)
    return out


@nb.njit(cache=True)
def policy_serial(
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    policy: np.ndarray,
    r: np.ndarray,
    c: np.ndarray,
    s0: int,
    chunks: int,
) -> np.ndarray:
    """[`policy_threaded`][cmdp_rl.kernels.forward.policy_threaded] on one thread, compiled without a
    thread pool: the same bits."""
    H, S = policy.shape[0], policy.shape[1]
    d = np.zeros(S)
    d[s0] = 1.0
    out = np.zeros(1 + c.shape[0])
    bufs = np.zeros((chunks, S))
    part = np.zeros((chunks, out.size))
    touched = np.zeros(chunks, dtype=np.bool_)
    blocks = (S + MERGE_BLOCK - 1) // MERGE_BLOCK
    for h in range(H):
        push = h + 1 < H
        for j in range(chunks):
            _policy_chunk(j, h, push, indptr, indices, data, policy, r, c, d, bufs, part, touched)
        _fold(part, out)
        if push:
            for q in range(blocks):
                _merge(q, bufs, touched, d)
    return out


__all__ = [
    "CHUNK_STATES",
    "FORWARD_CHUNKS",
    "MERGE_BLOCK",
    "distribution_serial",
    "distribution_threaded",
    "forward_chunks",
    "policy_serial",
    "policy_threaded",
    "stats_serial",
    "stats_threaded",
]
