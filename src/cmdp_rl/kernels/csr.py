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


@nb.njit(cache=True)
def lex_sweep(
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray,
    first: np.ndarray,
    second: np.ndarray,
    H: int,
    tol: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lexicographic DP: maximize ``first``; among the actions within ``tol`` of the best
    first value, maximize ``second`` (the tie-break of the Garnet and N-constraints thresholds:
    the unconstrained optimum with the smallest total cost is ``first = r``, ``second = -sum_i c_i``).

    Returns ``V_0`` of ``first`` and of ``second`` (each ``(S,)``, the latter under the chosen
    policy) and the actions ``(H, S)`` int32.
    """
    S, A = first.shape
    n1 = np.zeros(S)
    n2 = np.zeros(S)
    c1 = np.zeros(S)
    c2 = np.zeros(S)
    q1 = np.empty(A)
    q2 = np.empty(A)
    actions = np.empty((H, S), dtype=np.int32)
    for h in range(H - 1, -1, -1):
        for s in range(S):
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
            actions[h, s] = best_a
        n1, c1 = c1, n1
        n2, c2 = c2, n2
    return n1, n2, actions


@nb.njit(cache=True)
def column_stats(
    indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, actions: np.ndarray, tables: np.ndarray, d0: np.ndarray
) -> np.ndarray:
    """Value and costs from the initial distribution ``d0 (S,)`` of the deterministic Markov policy
    ``actions (H, S)`` for every table of ``tables (S, A, M)`` at once (``r`` and each ``c_i``
    stacked on the last axis).

    A forward pass of the state distribution: one accumulation per kernel entry whatever ``M``,
    and only from reached states (measured three to four times cheaper than the backward
    evaluation with an ``(S, M)`` right-hand side, whose scattered reads of ``M`` values per
    successor dominate). Returns ``(M,)``.
    """
    H, S = actions.shape
    A, M = tables.shape[1], tables.shape[2]
    d = d0.copy()
    nxt = np.zeros(S)
    out = np.zeros(M)
    for h in range(H):
        for s in range(S):
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
        for s in range(S):
            d[s] = nxt[s]
            nxt[s] = 0.0
    return out


@nb.njit(cache=True)
def column_distribution(
    indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, actions: np.ndarray, A: int, d0: np.ndarray
) -> np.ndarray:
    """State distribution ``(H, S)``, ``P(s_h = s)`` from ``d0 (S,)``, of the policy ``actions (H, S)``."""
    H, S = actions.shape
    dist = np.zeros((H, S))
    dist[0] = d0
    for h in range(H - 1):
        for s in range(S):
            d = dist[h, s]
            if d == 0.0:
                continue
            row = s * A + actions[h, s]
            for k in range(indptr[row], indptr[row + 1]):
                dist[h + 1, indices[k]] += d * data[k]
    return dist
