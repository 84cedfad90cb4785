"""Compiled sweeps over a sparse ``(S*A, S)`` CSR kernel (see the docs page 'Large models').

The kernel is passed as its three CSR arrays ``indptr (S*A + 1,)``, ``indices (nnz,)``,
``data (nnz,)``; row ``s*A + a`` holds ``P(. | s, a)``. Every sweep costs ``O(H * nnz)``
(times the number of right-hand sides), never ``O(S^2)``: these are the pricing and
evaluation steps of the exact planner ([`cmdp_rl.planning.solve`][cmdp_rl.planning.solve]). The forward
evaluation of a randomized policy, on either layout, is
[`forward_value_costs`][cmdp_rl.evaluation.evaluate.forward_value_costs].
"""

from __future__ import annotations

import numba as nb
import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from cmdp_rl.kernels.forward import (
    distribution_serial,
    distribution_threaded,
    forward_chunks,
    stats_serial,
    stats_threaded,
)
from cmdp_rl.plumbing.threads import apply_threads

IntArray = NDArray[np.int64]

#: a sweep runs on several threads when the kernel has at least this many entries (one step's
#: work): below it, starting the threads at each of the ``H`` steps costs more than it saves
PARALLEL_MIN_ENTRIES = 250_000


def kernel_entries(
    kernel: NDArray[np.float64] | sp.csr_array, steps: int
) -> tuple[int, int, IntArray, IntArray, IntArray, NDArray[np.float64]]:
    """The non-zero transitions of the first ``steps`` steps of a kernel in either layout: dense
    ``(S, A, S)`` or step-dependent ``(H, S, A, S)`` (``H >= steps``), or the sparse ``(S*A, S)`` CSR
    kernel (never densified). Returns ``S``, ``S*A`` and, per entry, the step ``h``, the pair
    ``s*A + a``, the next state and the probability (each ``(E,)``; by step, then as the kernel
    lists them), e.g. the flow constraints of the occupancy LP."""
    if sp.issparse(kernel):
        K = sp.coo_array(kernel)
        S, SA = int(K.shape[1]), int(K.shape[0])
        hh = np.repeat(np.arange(steps), K.nnz)
        xb = np.tile(K.row.astype(np.int64), steps)
        s2 = np.tile(K.col.astype(np.int64), steps)
        return S, SA, hh, xb, s2, np.tile(K.data, steps)
    S, A = kernel.shape[-3], kernel.shape[-2]
    per_step = kernel[:steps] if kernel.ndim == 4 else np.broadcast_to(kernel, (steps, S, A, S))
    Kd = per_step.reshape(steps, S * A, S)
    h, pair, nxt = np.nonzero(Kd)
    return S, S * A, h, pair, nxt, Kd[h, pair, nxt]


def dp_sweep(
    indptr: IntArray, indices: IntArray, data: NDArray[np.float64], reward: NDArray[np.float64], H: int
) -> tuple[NDArray[np.float64], NDArray[np.int32]]:
    """One backward DP sweep ``Q_h = reward + K V_{h+1}``, ``V_h = max_a Q_h``, ``V_H = 0``
    (backward induction, the pricing step of the column generation), on
    [`get_threads`][cmdp_rl.plumbing.threads.get_threads] threads: each step splits the states
    over threads, each state's ``Q`` is summed in the kernel's order by one thread, so the result
    is bit-for-bit the same for any thread count.

    Args:
        indptr: ``(S*A + 1,)`` row pointers of the ``(S*A, S)`` CSR kernel.
        indices: ``(nnz,)`` next states of the kernel's entries.
        data: ``(nnz,)`` their probabilities.
        reward: ``(S, A)`` per-step reward (any sign: the planner prices ``r - lambda . c``).
        H: the horizon.

    Returns:
        ``V_0 (S,)`` and the greedy actions ``(H, S)`` int32 (the first maximizing action
        on ties, so the same data give the same policy).
    """
    if int(indptr[-1]) < PARALLEL_MIN_ENTRIES:  # serial code: no thread pool is started at all
        return _dp_sweep_serial(indptr, indices, data, reward, H)
    apply_threads()
    return _dp_sweep(indptr, indices, data, reward, H)


@nb.njit(cache=True, inline="always")
def _best_action(
    s: int, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, reward: np.ndarray, nxt: np.ndarray
) -> tuple[float, int]:
    """State ``s``'s ``max_a Q(s, a)`` and its first maximizing action, ``Q = reward + K nxt``
    summed in the kernel's order (the one computation both sweeps share)."""
    A = reward.shape[1]
    best = -np.inf
    best_a = 0
    for a in range(A):
        row = s * A + a
        q = reward[s, a]
        for k in range(indptr[row], indptr[row + 1]):
            q += data[k] * nxt[indices[k]]
        if q > best:
            best = q
            best_a = a
    return best, best_a


@nb.njit(cache=True, parallel=True)
def _dp_sweep(
    indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, reward: np.ndarray, H: int
) -> tuple[np.ndarray, np.ndarray]:
    """[`dp_sweep`][cmdp_rl.kernels.csr.dp_sweep]'s loops; ``V[h % 2]`` is step ``h``'s value
    (``V[(h + 1) % 2]`` the next step's); the states of a step in parallel."""
    S = reward.shape[0]
    V = np.zeros((2, S))
    actions = np.empty((H, S), dtype=np.int32)
    for h in range(H - 1, -1, -1):
        cur = V[h % 2]
        nxt = V[(h + 1) % 2]
        for s in nb.prange(S):
            cur[s], actions[h, s] = _best_action(s, indptr, indices, data, reward, nxt)
    return V[0].copy(), actions


@nb.njit(cache=True)
def _dp_sweep_serial(
    indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, reward: np.ndarray, H: int
) -> tuple[np.ndarray, np.ndarray]:
    """``_dp_sweep`` on one thread, compiled without a thread pool (for kernels below
    ``PARALLEL_MIN_ENTRIES``): the same arithmetic in the same order, so the same bits."""
    S = reward.shape[0]
    V = np.zeros((2, S))
    actions = np.empty((H, S), dtype=np.int32)
    for h in range(H - 1, -1, -1):
        cur = V[h % 2]
        nxt = V[(h + 1) % 2]
        for s in range(S):
            cur[s], actions[h, s] = _best_action(s, indptr, indices, data, reward, nxt)
    return V[0].copy(), actions


def lex_sweep(
    indptr: IntArray,
    indices: IntArray,
    data: NDArray[np.float64],
    first: NDArray[np.float64],
    second: NDArray[np.float64],
    H: int,
    tol: float,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int32]]:
    """Lexicographic DP: maximize ``first``; among the actions within ``tol`` of the best
    first value, maximize ``second`` (the tie-break of the Garnet and N-constraints thresholds:
    the unconstrained optimum with the smallest total cost is ``first = r``, ``second = -sum_i c_i``).

    A backward sweep like [`dp_sweep`][cmdp_rl.kernels.csr.dp_sweep], on as many threads: each step
    splits the states over threads in chunks of ``LEX_CHUNK``, each state's two ``Q`` rows summed in
    the kernel's order by one thread, so the result is bit-for-bit the same for any thread count.

    Args:
        indptr: ``(S*A + 1,)`` row pointers of the ``(S*A, S)`` CSR kernel.
        indices: ``(nnz,)`` next states of the kernel's entries.
        data: ``(nnz,)`` their probabilities.
        first: ``(S, A)`` per-step reward maximized first.
        second: ``(S, A)`` per-step reward maximized among the ties of ``first``.
        H: the horizon.
        tol: how far below the best ``first`` value an action still ties.

    Returns:
        ``V_0`` of ``first`` and of ``second`` (each ``(S,)``, the latter under the chosen
        policy) and the actions ``(H, S)`` int32.
    """
    if int(indptr[-1]) < PARALLEL_MIN_ENTRIES:  # serial code: no thread pool is started at all
        return _lex_sweep_serial(indptr, indices, data, first, second, H, tol)
    apply_threads()
    return _lex_sweep(indptr, indices, data, first, second, H, tol)


#: states per chunk of the threaded ``lex_sweep`` (each chunk holds its own ``(A,)`` scratch rows)
LEX_CHUNK = 256


@nb.njit(cache=True, inline="always")
def _lex_states(
    lo: int,
    hi: int,
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    first: np.ndarray,
    second: np.ndarray,
    tol: float,
    n1: np.ndarray,
    n2: np.ndarray,
    c1: np.ndarray,
    c2: np.ndarray,
    acts: np.ndarray,
) -> None:
    """``lex_sweep``'s step for the states ``lo .. hi - 1``: ``c1``, ``c2`` (this step's values)
    and ``acts`` (this step's actions) from ``n1``, ``n2`` (the next step's)."""
    A = first.shape[1]
    q1 = np.empty(A)
    q2 = np.empty(A)
    for s in range(lo, hi):
        best = -np.inf
        for a in range(A):
            row = s * A + a
            x = first[s, a]
            y = second[s, a]
            for k in range(indptr[row], indptr[row + 1]):
                x += data[k] * n1[indices[k]]
                y += data[k] * n2[indices[k]]
            q1[a] = x
            q2[a] = y
            if x > best:
                best = x
        best_a = -1
        for a in range(A):
            if q1[a] >= best - tol and (best_a < 0 or q2[a] > q2[best_a]):
                best_a = a
        c1[s] = q1[best_a]
        c2[s] = q2[best_a]
        acts[s] = best_a


@nb.njit(cache=True, parallel=True)
def _lex_sweep(
    indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, first: np.ndarray, second: np.ndarray, H: int, tol: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """[`lex_sweep`][cmdp_rl.kernels.csr.lex_sweep]'s loops, the chunks of a step in parallel."""
    S = first.shape[0]
    V1 = np.zeros((2, S))
    V2 = np.zeros((2, S))
    actions = np.empty((H, S), dtype=np.int32)
    chunks = (S + LEX_CHUNK - 1) // LEX_CHUNK
    for h in range(H - 1, -1, -1):
        c1, n1 = V1[h % 2], V1[(h + 1) % 2]
        c2, n2 = V2[h % 2], V2[(h + 1) % 2]
        acts = actions[h]
        for j in nb.prange(chunks):
            lo = j * LEX_CHUNK
            _lex_states(lo, min(lo + LEX_CHUNK, S), indptr, indices, data, first, second, tol, n1, n2, c1, c2, acts)
    return V1[0].copy(), V2[0].copy(), actions


@nb.njit(cache=True)
def _lex_sweep_serial(
    indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, first: np.ndarray, second: np.ndarray, H: int, tol: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``_lex_sweep`` on one thread, compiled without a thread pool: the same arithmetic in the
    same order, so the same bits."""
    S = first.shape[0]
    V1 = np.zeros((2, S))
    V2 = np.zeros((2, S))
    actions = np.empty((H, S), dtype=np.int32)
    for h in range(H - 1, -1, -1):
        c1, n1 = V1[h % 2], V1[(h + 1) % 2]
        c2, n2 = V2[h % 2], V2[(h + 1) % 2]
        _lex_states(0, S, indptr, indices, data, first, second, tol, n1, n2, c1, c2, actions[h])
    return V1[0].copy(), V2[0].copy(), actions


def column_stats(
    indptr: IntArray,
    indices: IntArray,
    data: NDArray[np.float64],
    actions: NDArray[np.integer],
    tables: NDArray[np.float64],
    d0: NDArray[np.float64],
) -> NDArray[np.float64]:
    """Value and costs from the initial distribution ``d0 (S,)`` of the deterministic Markov policy
    ``actions (H, S)`` for every table of ``tables (S, A, M)`` at once (``r`` and each ``c_i``
    stacked on the last axis), eq. "occupancy-measure".

    A forward pass of the state distribution: one accumulation per kernel entry whatever ``M``,
    and only from reached states (measured three to four times cheaper than the backward
    evaluation with an ``(S, M)`` right-hand side, whose scattered reads of ``M`` values per
    successor dominate). The source states are cut into
    [`forward_chunks`][cmdp_rl.kernels.forward.forward_chunks]``(S)`` fixed chunks, each scattering
    into its own buffer, the buffers summed in chunk order
    ([`cmdp_rl.kernels.forward`][cmdp_rl.kernels.forward]): on
    [`get_threads`][cmdp_rl.plumbing.threads.get_threads] threads from ``PARALLEL_MIN_ENTRIES``
    entries on, bit-for-bit the same for any thread count (one thread, no thread pool, below).
    Several columns at once: [`columns_stats`][cmdp_rl.kernels.csr.columns_stats].
    Returns ``(M,)``.
    """
    out = np.zeros(tables.shape[2])
    chunks = forward_chunks(actions.shape[1])
    if chunks < 2 or int(indptr[-1]) < PARALLEL_MIN_ENTRIES:
        stats_serial(indptr, indices, data, actions, tables, d0, chunks, out)
    else:
        apply_threads()
        stats_threaded(indptr, indices, data, actions, tables, d0, chunks, out)
    return out


def columns_stats(
    indptr: IntArray,
    indices: IntArray,
    data: NDArray[np.float64],
    columns: NDArray[np.integer],
    tables: NDArray[np.float64],
    d0: NDArray[np.float64],
) -> NDArray[np.float64]:
    """[`column_stats`][cmdp_rl.kernels.csr.column_stats] of every column of ``columns (K, H, S)``
    (a plan's deterministic policies, any integer type), the columns split over
    [`get_threads`][cmdp_rl.plumbing.threads.get_threads] threads: each column's pass is the same
    code on one thread, so row ``k`` is bit-for-bit ``column_stats`` of column ``k`` for any
    thread count. Memory: ``forward_chunks(S) + 1`` vectors ``(S,)`` per column in flight.
    Returns ``(K, M)``."""
    chunks = forward_chunks(columns.shape[2])
    if int(indptr[-1]) < PARALLEL_MIN_ENTRIES or columns.shape[0] < 2:
        return _columns_stats_serial(indptr, indices, data, columns, tables, d0, chunks)
    apply_threads(columns.shape[0])
    return _columns_stats(indptr, indices, data, columns, tables, d0, chunks)


@nb.njit(cache=True, parallel=True)
def _columns_stats(
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    columns: np.ndarray,
    tables: np.ndarray,
    d0: np.ndarray,
    chunks: int,
) -> np.ndarray:
    """``columns_stats``'s columns in parallel, each column's chunks on its own thread."""
    out = np.zeros((columns.shape[0], tables.shape[2]))
    for k in nb.prange(columns.shape[0]):
        stats_serial(indptr, indices, data, columns[k], tables, d0, chunks, out[k])
    return out


@nb.njit(cache=True)
def _columns_stats_serial(
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    columns: np.ndarray,
    tables: np.ndarray,
    d0: np.ndarray,
    chunks: int,
) -> np.ndarray:
    """``_columns_stats`` on one thread, compiled without a thread pool."""
    out = np.zeros((columns.shape[0], tables.shape[2]))
    for k in range(columns.shape[0]):
        stats_serial(indptr, indices, data, columns[k], tables, d0, chunks, out[k])
    return out


def column_distribution(
    indptr: IntArray,
    indices: IntArray,
    data: NDArray[np.float64],
    actions: NDArray[np.integer],
    A: int,
    d0: NDArray[np.float64],
) -> NDArray[np.float64]:
    """State distribution ``(H, S)``, ``P(s_h = s)`` from ``d0 (S,)``, of the policy ``actions (H, S)``:
    the forward pass of [`column_stats`][cmdp_rl.kernels.csr.column_stats] (the same fixed chunks,
    the same threads, the same bits for any thread count)."""
    chunks = forward_chunks(actions.shape[1])
    if chunks < 2 or int(indptr[-1]) < PARALLEL_MIN_ENTRIES:
        return distribution_serial(indptr, indices, data, actions, A, d0, chunks)
    apply_threads()
    return distribution_threaded(indptr, indices, data, actions, A, d0, chunks)
