"""Sweeps of the exact planner restricted to the states reachable at each step (see the docs page
'Large models', 'The exact planner', paragraph 'Reachable states').

A finite-horizon pricing sweep needs ``V_h(s)`` only where step ``h`` can be in ``s`` at all:
``R_0`` is the support of the initial distribution and ``R_{h+1}`` the successors of ``R_h``
under any available action (every entry the CSR kernel stores, zero probabilities included, so
every value a sweep reads on ``R_h`` was computed on ``R_{h+1}``). On models built from programs
(PRISM, JANI) these sets are a few percent of ``S`` per step, so a sweep over them is that much
cheaper; on a Garnet they fill the state space after two steps, and
[`reach_steps`][cmdp_rl.kernels.csr_reach.reach_steps] gives up at once (the full sweeps of
[`cmdp_rl.kernels.csr`][cmdp_rl.kernels.csr] run instead).

On ``R_h`` the restricted sweep does the arithmetic of [`dp_sweep`][cmdp_rl.kernels.csr.dp_sweep]
in the same order (bit-for-bit the same values and actions), and the restricted forward pass that
of [`column_stats`][cmdp_rl.kernels.csr.column_stats]; off ``R_h`` no policy is ever in ``s`` at
step ``h``, and the action table keeps what the caller put there.
"""

from __future__ import annotations

import numba as nb
import numpy as np
from numpy.typing import NDArray

from cmdp_rl.kernels.csr import PARALLEL_MIN_ENTRIES
from cmdp_rl.plumbing.threads import apply_threads

IntArray = NDArray[np.int64]

#: the restriction is kept only when the reachable pairs ``(h, s)`` are at most this fraction of
#: ``H * S`` (else a full sweep costs about the same, and the lists would take memory for nothing)
REACH_FRACTION = 0.5


def reach_steps(
    indptr: IntArray, indices: IntArray, A: int, start: NDArray[np.float64], available: NDArray[np.bool_], H: int
) -> tuple[NDArray[np.int32], IntArray] | None:
    """The states reachable at each step, as ``(order, starts)``: ``order[starts[h]:starts[h + 1]]``
    is ``R_h`` in increasing order (``order (E,)`` int32, ``starts (H + 1,)``), ``R_0`` the support
    of ``start (S,)`` and ``R_{h+1}`` every state the kernel lists in a row ``s*A + a`` with
    ``s`` in ``R_h`` and ``available (S*A,)`` true. ``None`` when the sets would hold more than
    ``REACH_FRACTION`` of the ``H * S`` pairs (judged from the
    steps computed so far, the last set assumed to last: a model whose reachable set fills up
    early is given up within a few steps, and the lists never outgrow that budget)."""
    S = start.shape[0]
    budget = int(REACH_FRACTION * H * S)
    order, starts, ok = _reach_steps(indptr, indices, A, start, available, H, budget)
    return (order, starts) if ok else None


_DEBRUIJN = np.uint64(0x03F79D71B4CB0A89)
_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)
#: bit index of ``2**i`` from the top 6 bits of ``2**i * _DEBRUIJN`` (mod ``2**64``)
_DEBRUIJN_INDEX = np.zeros(64, dtype=np.int64)
for _i in range(64):
    _DEBRUIJN_INDEX[((1 << _i) * 0x03F79D71B4CB0A89 & 0xFFFFFFFFFFFFFFFF) >> 58] = _i


@nb.njit(cache=True)
def _reach_steps(
    indptr: np.ndarray, indices: np.ndarray, A: int, start: np.ndarray, available: np.ndarray, H: int, budget: int
) -> tuple[np.ndarray, np.ndarray, bool]:
    S = start.shape[0]
    bits = np.zeros((S + 63) // 64, dtype=np.uint64)  # R_{h+1} as a bitmap: listed in order, no sort
    one = np.uint64(1)
    cur = np.empty(S, dtype=np.int32)
    n = 0
    for s in range(S):
        if start[s] != 0.0:
            cur[n] = s
            n += 1
    starts = np.zeros(H + 1, dtype=np.int64)
    order = np.empty(min(budget, 4 * S) + 1, dtype=np.int32)
    pos = 0
    for h in range(H):
        if pos + n * (H - h) > budget:  # this step's set for the remaining steps would exceed it
            return order[:0], starts, False
        if pos + n > order.shape[0]:
            grown = np.empty(min(budget, 2 * (pos + n)) + 1, dtype=np.int32)
            grown[:pos] = order[:pos]
            order = grown
        order[pos : pos + n] = cur[:n]
        pos += n
        starts[h + 1] = pos
        if h + 1 == H:
            break
        lo, hi = bits.shape[0], 0  # the words touched
        for i in range(n):
            s = cur[i]
            for a in range(A):
                row = s * A + a
                if not available[row]:
                    continue
                for k in range(indptr[row], indptr[row + 1]):
                    t = indices[k]
                    w = t >> 6
                    bits[w] |= one << np.uint64(t & 63)
                    lo = min(lo, w)
                    hi = max(hi, w + 1)
        n = 0
        for w in range(lo, hi):
            x = bits[w]
            while x != 0:  # its set bits, lowest first (a de Bruijn multiplication finds each one's index)
                low = x & (~x + one)
                cur[n] = w * 64 + _DEBRUIJN_INDEX[((low * _DEBRUIJN) & _MASK64) >> np.uint64(58)]
                n += 1
                x ^= low
            bits[w] = 0
    return order[:pos].copy(), starts, True


def dp_sweep_reach(
    indptr: IntArray,
    indices: IntArray,
    data: NDArray[np.float64],
    reward: NDArray[np.float64],
    order: NDArray[np.int32],
    starts: IntArray,
    actions: NDArray[np.integer],
) -> NDArray[np.float64]:
    """[`dp_sweep`][cmdp_rl.kernels.csr.dp_sweep] on the reachable states only: ``V_h(s)`` and the
    greedy action for ``s`` in ``R_h`` (``order``, ``starts`` from
    [`reach_steps`][cmdp_rl.kernels.csr_reach.reach_steps]), bit-for-bit those of the full sweep.

    Args:
        indptr: ``(S*A + 1,)`` row pointers of the ``(S*A, S)`` CSR kernel.
        indices: ``(nnz,)`` next states of the kernel's entries.
        data: ``(nnz,)`` their probabilities.
        reward: ``(S, A)`` per-step reward (``-inf`` on unavailable pairs).
        order: ``(E,)`` the reachable sets ``R_h``, one after the other.
        starts: ``(H + 1,)`` where each begins (``H = starts.size - 1``).
        actions: ``(H, S)`` integer table, written on the reachable pairs (the caller fills the
            others, e.g. with an available action); any integer type that holds ``A - 1``.

    Returns:
        ``V_0 (S,)`` on ``R_0`` (0 elsewhere).
    """
    H = starts.shape[0] - 1
    per_step = order.shape[0] / max(H, 1) * (indptr[-1] / max(reward.shape[0], 1))
    if per_step < PARALLEL_MIN_ENTRIES:  # as dp_sweep: serial code below a step's worth of entries
        out: NDArray[np.float64] = _sweep_serial(indptr, indices, data, reward, order, starts, actions)
        return out
    apply_threads()
    out = _sweep_parallel(indptr, indices, data, reward, order, starts, actions)
    return out


@nb.njit(cache=True, inline="always")
def _best_action(
    s: int, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, reward: np.ndarray, nxt: np.ndarray
) -> tuple[float, int]:
    """``max_a Q(s, a)`` and the first maximizing action, as ``dp_sweep`` computes them (``Q =
    reward + K nxt`` summed in the kernel's order), skipping the rows of unavailable actions
    (reward ``-inf``: their ``Q`` is ``-inf``, never the first maximum beside an available one)."""
    A = reward.shape[1]
    best = -np.inf
    best_a = 0
    for a in range(A):
        q = reward[s, a]
        if q == -np.inf:
            continue
        row = s * A + a
        for k in range(indptr[row], indptr[row + 1]):
            q += data[k] * nxt[indices[k]]
        if q > best:
            best = q
            best_a = a
    return best, best_a


@nb.njit(cache=True)
def _sweep_serial(
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    reward: np.ndarray,
    order: np.ndarray,
    starts: np.ndarray,
    actions: np.ndarray,
) -> np.ndarray:
    S = reward.shape[0]
    H = starts.shape[0] - 1
    V = np.zeros((2, S))
    for h in range(H - 1, -1, -1):
        cur = V[h % 2]
        nxt = V[(h + 1) % 2]
        for i in range(starts[h], starts[h + 1]):
            s = order[i]
            cur[s], actions[h, s] = _best_action(s, indptr, indices, data, reward, nxt)
    return _on_start(V[0], order, starts)


@nb.njit(cache=True, parallel=True)
def _sweep_parallel(
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    reward: np.ndarray,
    order: np.ndarray,
    starts: np.ndarray,
    actions: np.ndarray,
) -> np.ndarray:
    S = reward.shape[0]
    H = starts.shape[0] - 1
    V = np.zeros((2, S))
    for h in range(H - 1, -1, -1):
        cur = V[h % 2]
        nxt = V[(h + 1) % 2]
        lo = starts[h]
        for i in nb.prange(starts[h + 1] - lo):
            s = order[lo + i]
            cur[s], actions[h, s] = _best_action(s, indptr, indices, data, reward, nxt)
    return _on_start(V[0], order, starts)


@nb.njit(cache=True)
def _on_start(V0: np.ndarray, order: np.ndarray, starts: np.ndarray) -> np.ndarray:
    out = np.zeros(V0.shape[0])
    for i in range(starts[0], starts[1]):
        out[order[i]] = V0[order[i]]
    return out


@nb.njit(cache=True)
def reached_entries(actions: np.ndarray, order: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The entries of an ``(H, S)`` action table on the reachable pairs, step by step (``(E,)``, the
    table's dtype): all that tells two of the planner's columns apart (a digest of them finds a
    column again at a fraction of the cost of the whole table)."""
    out = np.empty(order.shape[0], dtype=actions.dtype)
    for h in range(starts.shape[0] - 1):
        for i in range(starts[h], starts[h + 1]):
            out[i] = actions[h, order[i]]
    return out


@nb.njit(cache=True)
def column_stats_reach(
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    actions: np.ndarray,
    tables: np.ndarray,
    d0: np.ndarray,
    order: np.ndarray,
    starts: np.ndarray,
) -> np.ndarray:
    """[`column_stats`][cmdp_rl.kernels.csr.column_stats] visiting only the reachable states
    ``R_h`` (``order``, ``starts`` from [`reach_steps`][cmdp_rl.kernels.csr_reach.reach_steps]; ``d0``'s
    support is ``R_0``): the same sums in the same order, so the same bits. Returns ``(M,)``: the
    value of the policy ``actions (H, S)`` for every table of ``tables (S, A, M)``."""
    H, S = actions.shape
    A, M = tables.shape[1], tables.shape[2]
    d = d0.copy()
    nxt = np.zeros(S)
    out = np.zeros(M)
    for h in range(H):
        for i in range(starts[h], starts[h + 1]):
            s = order[i]
            ds = d[s]
            if ds == 0.0:
                continue
            a = actions[h, s]
            for m in range(M):
                out[m] += ds * tables[s, a, m]
            if h + 1 < H:
                row = s * A + a
                for k in range(indptr[row], indptr[row + 1]):
                    nxt[indices[k]] += ds * data[k]
        if h + 1 < H:
            for i in range(starts[h], starts[h + 1]):
                d[order[i]] = 0.0
            for i in range(starts[h + 1], starts[h + 2]):
                s = order[i]
                d[s] = nxt[s]
                nxt[s] = 0.0
    return out


@nb.njit(cache=True)
def column_distribution_reach(
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    actions: np.ndarray,
    A: int,
    d0: np.ndarray,
    order: np.ndarray,
    starts: np.ndarray,
) -> np.ndarray:
    """[`column_distribution`][cmdp_rl.kernels.csr.column_distribution] visiting only the reachable
    states: the state distribution ``(H, S)`` of the policy ``actions (H, S)`` from ``d0 (S,)``
    (support ``R_0``), the same sums in the same order (0 off the reachable pairs)."""
    H, S = actions.shape
    dist = np.zeros((H, S))
    dist[0] = d0
    for h in range(H - 1):
        for i in range(starts[h], starts[h + 1]):
            s = order[i]
            d = dist[h, s]
            if d == 0.0:
                continue
            row = s * A + actions[h, s]
            for k in range(indptr[row], indptr[row + 1]):
                dist[h + 1, indices[k]] += d * data[k]
    return dist


__all__ = [
    "REACH_FRACTION",
    "column_distribution_reach",
    "column_stats_reach",
    "dp_sweep_reach",
    "reach_steps",
    "reached_entries",
]
