"""Compiled inner loops of extended value iteration (numba, as in rlberry's tabular code).

The greedy fill is a short sequential loop per ``(s, a)`` row (pour the spare
mass into next states in a given order until it runs out); vectorized NumPy
needs a gather, a cumulative sum and several full-size temporaries per step
for it, which made EVI the bottleneck of every re-plan. These kernels keep the
loops and compile them. All shapes are documented in :mod:`.evi`.
"""

from __future__ import annotations

import numba as nb
import numpy as np

# Kernels index the (S, A, S) arrays directly: slicing rows into views inside the
# loops made them three times slower.


@nb.njit(cache=True, inline="always")
def _fill_row(
    lower: np.ndarray, room: np.ndarray, spare: np.ndarray, s: int, a: int, order: np.ndarray, out: np.ndarray
) -> None:
    """Write the greedy-fill distribution of row ``(s, a)`` into ``out (S,)``."""
    for j in range(out.size):
        out[j] = lower[s, a, j]
    left = spare[s, a]
    for k in range(order.size):
        if left <= 0.0:
            break
        j = order[k]
        give = room[s, a, j]
        if give > left:
            give = left
        out[j] += give
        left -= give


@nb.njit(cache=True)
def evi_sweep(
    lower: np.ndarray, room: np.ndarray, spare: np.ndarray, reward: np.ndarray, H: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Backward induction with the inner maximum over plausible rows; see :func:`.evi.evi`."""
    S, A = reward.shape
    V = np.zeros((H + 1, S))
    actions = np.zeros((H, S), dtype=np.int64)
    orders = np.zeros((H, S), dtype=np.int64)
    neg = np.empty(S)
    for h in range(H - 1, -1, -1):
        for j in range(S):
            neg[j] = -V[h + 1, j]
        order = np.argsort(neg, kind="mergesort")  # stable: ties by state index
        orders[h] = order
        for s in range(S):
            best = -np.inf
            best_a = 0
            for a in range(A):
                q = reward[s, a]
                for j in range(S):
                    q += lower[s, a, j] * V[h + 1, j]
                # the greedy fill of _fill_row, summed on the fly (the order of these
                # floating-point sums fixes tie-breaks, hence the published curves)
                left = spare[s, a]
                for k in range(S):  # greedy fill, most valuable states first
                    if left <= 0.0:
                        break
                    j = order[k]
                    give = room[s, a, j]
                    if give > left:
                        give = left
                    q += give * V[h + 1, j]
                    left -= give
                if q > best:
                    best = q
                    best_a = a
            actions[h, s] = best_a
            V[h, s] = best
    return V, actions, orders


@nb.njit(cache=True)
def column_rows(
    lower: np.ndarray, room: np.ndarray, spare: np.ndarray, actions: np.ndarray, orders: np.ndarray, s0: int
) -> tuple[np.ndarray, np.ndarray]:
    """Kernel rows ``(H, S, S)`` of the vertex ``(actions, orders)`` and its state distribution ``(H, S)``."""
    H, S = actions.shape
    rows = np.empty((H, S, S))
    dist = np.zeros((H, S))
    dist[0, s0] = 1.0
    for h in range(H):
        for s in range(S):
            _fill_row(lower, room, spare, s, actions[h, s], orders[h], rows[h, s])
        if h + 1 < H:
            for s in range(S):
                d = dist[h, s]
                if d != 0.0:
                    for j in range(S):
                        dist[h + 1, j] += d * rows[h, s, j]
    return rows, dist


@nb.njit(cache=True)
def fill_rows(lower: np.ndarray, room: np.ndarray, spare: np.ndarray, orders: np.ndarray) -> np.ndarray:
    """Greedy-fill rows ``(H, S, A, S)`` of every ``(s, a)`` with step ``h``'s order ``orders[h]``."""
    H = orders.shape[0]
    S, A = spare.shape
    out = np.empty((H, S, A, S))
    for h in range(H):
        for s in range(S):
            for a in range(A):
                _fill_row(lower, room, spare, s, a, orders[h], out[h, s, a])
    return out
