"""Compiled inner loops of extended value iteration (numba, as in rlberry's tabular code).

The greedy fill is a short sequential loop per ``(s, a)`` row (pour the spare
mass into next states in a given order until it runs out); vectorized NumPy
needs a gather, a cumulative sum and several full-size temporaries per step
for it, which made EVI the bottleneck of every re-plan. These kernels keep the
loops and compile them. All shapes are documented in [`evi`][cmdp_rl.confidence.box].
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


#: the EVI sweep runs on several threads from this many entries of the ``(S, A, S)`` kernel on
#: (one step's work; a compile-time constant of the compiled code): the same threshold as the
#: CSR sweeps' ``PARALLEL_MIN_ENTRIES``
EVI_PARALLEL_MIN_ENTRIES = 250_000


@nb.njit(cache=True)
def evi_sweep(
    lower: np.ndarray, room: np.ndarray, spare: np.ndarray, reward: np.ndarray, H: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Backward induction with the inner maximum over plausible rows; see [`evi`][cmdp_rl.confidence.box.evi].

    The states of each step split over numba's threads (the calling thread's
    ``numba.get_num_threads()``, which the Python entry points set with
    [`apply_threads`][cmdp_rl.plumbing.threads.apply_threads]) when the kernel has at least
    ``EVI_PARALLEL_MIN_ENTRIES`` entries ``S * A * S``: each state's ``Q`` values are summed by one
    thread in the serial order, so the result is bit-for-bit the same for any thread count. Callable
    from compiled code (the learners' batched planning,
    [`colgen_loop`][cmdp_rl.kernels.colgen_loop.colgen_loop]); below the threshold the serial build
    runs (no thread pool). (The thread count is not read here: ``numba.get_num_threads()`` in
    compiled code would stop numba from caching this function and every compiled caller.)
    """
    S, A = reward.shape
    if S * A * S >= EVI_PARALLEL_MIN_ENTRIES:
        return _evi_threaded(lower, room, spare, reward, H)
    return _evi_serial(lower, room, spare, reward, H)


@nb.njit(cache=True, inline="always")
def _evi_order(V: np.ndarray, h: int, orders: np.ndarray) -> np.ndarray:
    """Step ``h``'s fill order: the states by decreasing ``V[h + 1]``, ties by index (stable), also
    written to ``orders[h]``."""
    S = V.shape[1]
    neg = np.empty(S)
    for j in range(S):
        neg[j] = -V[h + 1, j]
    order = np.argsort(neg, kind="mergesort")  # stable: ties by state index
    for j in range(S):  # (an element loop: slice assignment compiles slowly)
        orders[h, j] = order[j]
    return order


@nb.njit(cache=True, inline="always")
def _evi_state(
    s: int,
    h: int,
    lower: np.ndarray,
    room: np.ndarray,
    spare: np.ndarray,
    reward: np.ndarray,
    V: np.ndarray,
    order: np.ndarray,
    actions: np.ndarray,
) -> None:
    """State ``s`` at step ``h``: ``V[h, s]`` and ``actions[h, s]`` from ``V[h + 1]``."""
    S, A = reward.shape
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


@nb.njit(cache=True, parallel=True)
def _evi_threaded(
    lower: np.ndarray, room: np.ndarray, spare: np.ndarray, reward: np.ndarray, H: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``evi_sweep``'s loops, the states of a step in parallel."""
    S = reward.shape[0]
    V = np.zeros((H + 1, S))
    actions = np.zeros((H, S), dtype=np.int64)
    orders = np.zeros((H, S), dtype=np.int64)
    for h in range(H - 1, -1, -1):
        order = _evi_order(V, h, orders)
        for s in nb.prange(S):
            _evi_state(s, h, lower, room, spare, reward, V, order, actions)
    return V, actions, orders


@nb.njit(cache=True)
def _evi_serial(
    lower: np.ndarray, room: np.ndarray, spare: np.ndarray, reward: np.ndarray, H: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``_evi_threaded`` on one thread, compiled without a thread pool: the same bits."""
    S = reward.shape[0]
    V = np.zeros((H + 1, S))
    actions = np.zeros((H, S), dtype=np.int64)
    orders = np.zeros((H, S), dtype=np.int64)
    for h in range(H - 1, -1, -1):
        order = _evi_order(V, h, orders)
        for s in range(S):
            _evi_state(s, h, lower, room, spare, reward, V, order, actions)
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


@nb.njit(cache=True)
def column_into(
    lower: np.ndarray,
    room: np.ndarray,
    spare: np.ndarray,
    actions: np.ndarray,
    orders: np.ndarray,
    r: np.ndarray,
    c: np.ndarray,
    s0: int,
    k: int,
    dist: np.ndarray,
    values: np.ndarray,
    costs: np.ndarray,
) -> None:
    """Forward pass of the vertex ``(actions, orders)`` (each ``(H, S)``) into entry ``k`` of
    ``dist (., H, S)``, ``values`` and ``costs (., N)``, with one ``(S,)`` row buffer (the
    ``(H, S, S)`` rows are not kept: ``column_rows`` recomputes them when needed)."""
    H, S = actions.shape
    N = c.shape[0]
    row = np.empty(S)
    for h in range(H):
        for s in range(S):
            dist[k, h, s] = 0.0
    dist[k, 0, s0] = 1.0
    value = 0.0
    for i in range(N):
        costs[k, i] = 0.0
    for h in range(H):
        order = orders[h]
        for s in range(S):
            d = dist[k, h, s]
            if d == 0.0:
                continue
            a = actions[h, s]
            value += d * r[s, a]
            for i in range(N):
                costs[k, i] += d * c[i, s, a]
            if h + 1 < H:
                _fill_row(lower, room, spare, s, a, order, row)
                for j in range(S):
                    dist[k, h + 1, j] += d * row[j]
    values[k] = value


@nb.njit(cache=True)
def column_values(
    lower: np.ndarray,
    room: np.ndarray,
    spare: np.ndarray,
    actions: np.ndarray,
    orders: np.ndarray,
    s0: int,
    r: np.ndarray,
    c: np.ndarray,
) -> tuple[np.ndarray, float, np.ndarray]:
    """State distribution ``(H, S)``, value and costs ``(N,)`` of the vertex ``(actions, orders)``
    (``column_into`` for one column)."""
    H, S = actions.shape
    dist = np.empty((1, H, S))
    values = np.empty(1)
    costs = np.empty((1, c.shape[0]))
    column_into(lower, room, spare, actions, orders, r, c, s0, 0, dist, values, costs)
    return dist[0], values[0], costs[0]


@nb.njit(cache=True)
def lagrangian_sweep(
    lower: np.ndarray,
    room: np.ndarray,
    spare: np.ndarray,
    r: np.ndarray,
    c: np.ndarray,
    lam: np.ndarray,
    weight_r: float,
    H: int,
    avail: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``evi_sweep`` on the Lagrangian reward ``weight_r * r - sum_i lam_i c_i`` (the pricing step),
    ``-inf`` where ``avail (S, A)`` (the available actions) is ``False``: never the greedy action."""
    S, A = r.shape
    reward = np.empty((S, A))
    for s in range(S):
        for a in range(A):
            q = weight_r * r[s, a]
            for i in range(lam.size):
                q -= lam[i] * c[i, s, a]
            reward[s, a] = q if avail[s, a] else -np.inf
    return evi_sweep(lower, room, spare, reward, H)


__all__ = [
    "EVI_PARALLEL_MIN_ENTRIES",
    "column_into",
    "column_rows",
    "column_values",
    "evi_sweep",
    "fill_rows",
    "lagrangian_sweep",
]
