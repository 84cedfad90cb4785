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


@nb.njit(cache=True)
def evi_sweep(
    lower: np.ndarray, room: np.ndarray, spare: np.ndarray, reward: np.ndarray, H: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Backward induction with the inner maximum over plausible rows; see [`evi`][cmdp_rl.confidence.box.evi]."""
    S, A = reward.shape
    V = np.zeros((H + 1, S))
    actions = np.zeros((H, S), dtype=np.int64)
    orders = np.zeros((H, S), dtype=np.int64)
    neg = np.empty(S)
    for h in range(H - 1, -1, -1):
        for j in range(S):
            neg[j] = -V[h + 1, j]
        order = np.argsort(neg, kind="mergesort")  # stable: ties by state index
        for j in range(S):  # (an element loop: slice assignment compiles slowly)
            orders[h, j] = order[j]
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


# -- column generation (``colgen``) -------------------------------------------------------------------


@nb.njit(cache=True)
def _eval_into(
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
    (``_eval_into`` for one column)."""
    H, S = actions.shape
    dist = np.empty((1, H, S))
    values = np.empty(1)
    costs = np.empty((1, c.shape[0]))
    _eval_into(lower, room, spare, actions, orders, r, c, s0, 0, dist, values, costs)
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
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``evi_sweep`` on the Lagrangian reward ``weight_r * r - sum_i lam_i c_i`` (the pricing step)."""
    S, A = r.shape
    reward = np.empty((S, A))
    for s in range(S):
        for a in range(A):
            q = weight_r * r[s, a]
            for i in range(lam.size):
                q -= lam[i] * c[i, s, a]
            reward[s, a] = q
    return evi_sweep(lower, room, spare, reward, H)


@nb.njit(cache=True)
def mix_plan(
    w: np.ndarray,
    actions: np.ndarray,
    dist: np.ndarray,
    values: np.ndarray,
    costs: np.ndarray,
    A: int,
    reach_tol: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, np.ndarray]:
    """The plan of the master weights ``w (K,)`` over ``K`` columns (``actions, dist (K, H, S)``,
    ``values (K,)``, ``costs (K, N)``).

    Returns ``(w, mu, policy, value, costs)``: the weights clipped at 0 and normalized, the
    mixed occupancy ``mu (H, S, A)``, its policy
    ([`policy_from_occupancy`][cmdp_rl.planning.result.policy_from_occupancy]: ``mu / sum_a mu`` where that sum exceeds
    ``reach_tol``, uniform elsewhere), the mixed value and the ``(N,)`` mixed costs.
    """
    K, H, S = dist.shape
    N = costs.shape[1]
    wn = np.empty(K)
    tot = 0.0
    for k in range(K):
        wn[k] = max(w[k], 0.0)
        tot += wn[k]
    value = 0.0
    mixed = np.zeros(N)
    mu = np.zeros((H, S, A))
    for k in range(K):
        wn[k] /= tot
        wk = wn[k]
        if wk <= 0.0:
            continue
        value += wk * values[k]
        for i in range(N):
            mixed[i] += wk * costs[k, i]
        for h in range(H):
            for s in range(S):
                mu[h, s, actions[k, h, s]] += wk * dist[k, h, s]
    policy = np.empty((H, S, A))
    for h in range(H):
        for s in range(S):
            mass = 0.0
            for a in range(A):
                mass += mu[h, s, a]
            if mass > reach_tol:
                for a in range(A):
                    policy[h, s, a] = mu[h, s, a] / mass
            else:
                for a in range(A):
                    policy[h, s, a] = 1.0 / A
    return wn, mu, policy, value, mixed


@nb.njit(cache=True)
def _solve_small(M: np.ndarray, rhs: np.ndarray, out: np.ndarray) -> bool:
    """``M x = rhs`` for a small dense ``M`` by Gaussian elimination with partial pivoting,
    into ``out``; False when ``M`` is (numerically) singular."""
    m = rhs.size
    T = np.empty((m, m + 1))
    for i in range(m):
        for j in range(m):
            T[i, j] = M[i, j]
        T[i, m] = rhs[i]
    for col in range(m):
        p = col
        big = abs(T[col, col])
        for i in range(col + 1, m):
            if abs(T[i, col]) > big:
                big = abs(T[i, col])
                p = i
        if big < 1e-13:
            return False
        if p != col:
            for j in range(col, m + 1):
                tmp = T[col, j]
                T[col, j] = T[p, j]
                T[p, j] = tmp
        for i in range(col + 1, m):
            f = T[i, col] / T[col, col]
            if f != 0.0:
                for j in range(col, m + 1):
                    T[i, j] -= f * T[col, j]
    for i in range(m - 1, -1, -1):
        acc = T[i, m]
        for j in range(i + 1, m):
            acc -= T[i, j] * out[j]
        out[i] = acc / T[i, i]
    return True


#: master-LP outcomes of ``master_lp``
MASTER_OK, MASTER_FAILED = 0, 1


@nb.njit(cache=True)
def master_lp(
    costs: np.ndarray, v: np.ndarray, b: np.ndarray, phase1: bool
) -> tuple[np.ndarray, float, np.ndarray, int]:
    """The restricted master LP of [`colgen`][cmdp_rl.planning.elp_dense], solved exactly by a dense revised simplex.

    Phase 2 (``phase1=False``): ``max v.w  s.t.  C w <= b,  sum w = 1,  w >= 0``.
    Phase 1: ``max -t  s.t.  C w - t <= b,  sum w = 1,  w >= 0`` (``t`` free, written
    ``t = tp - tm``), whose objective is minus the worst excess.

    ``C`` is ``costs.T``: ``costs`` is ``(K, N)`` (one row per column), ``v`` ``(K,)``,
    ``b`` ``(N,)``. Standard form with slacks, rows
    ``C_i w (- t) + s_i = b_i`` and ``sum w = 1``; ``m = N + 1`` rows, so every basis
    solve is an ``m x m`` Gaussian elimination done afresh (no accumulated round-off).
    Start: the column of least worst excess carries the convexity row, the slacks of
    the rows it meets are basic (phase 1: ``t`` replaces the tightest row's slack); the
    rows it violates get artificial variables, driven to zero by a textbook phase I and
    pivoted out before the real objective is optimized. Entering and leaving variables
    follow Bland's rule, so degenerate (tied, parallel) columns cannot make it cycle.

    Returns ``(w (K,), objective, duals (N + 1,), status)``: ``duals[:N]`` are the cost
    multipliers ``lambda >= 0`` and ``duals[N]`` the convexity dual ``nu``. ``status`` is
    ``MASTER_OK`` only when the final basis passes an independent optimality check
    (primal feasibility of the re-solved basic solution, every reduced cost
    ``<= 1e-9 scale``, ``scale`` the largest entry of the data and at least 1);
    otherwise ``MASTER_FAILED`` and the caller falls back to HiGHS. Where the
    optimum is not unique (tied or parallel columns) it is one of the optimal vertices,
    not necessarily the one HiGHS would return.
    """
    K, N = costs.shape
    m = N + 1
    n = K + N + (2 if phase1 else 0)  # structural + slack (+ t+, t-) columns
    ntot = n + m  # + one artificial per row
    Amat = np.zeros((m, ntot))
    cost = np.zeros(ntot)
    rhs = np.empty(m)
    scale = 1.0
    for i in range(N):
        rhs[i] = b[i]
        scale = max(scale, abs(b[i]))
    rhs[N] = 1.0
    for j in range(K):
        for i in range(N):
            Amat[i, j] = costs[j, i]
            scale = max(scale, abs(costs[j, i]))
        Amat[N, j] = 1.0
        if not phase1:
            cost[j] = v[j]
            scale = max(scale, abs(v[j]))
    for i in range(N):
        Amat[i, K + i] = 1.0
    if phase1:
        for i in range(N):
            Amat[i, K + N] = -1.0
            Amat[i, K + N + 1] = 1.0
        cost[K + N] = -1.0
        cost[K + N + 1] = 1.0
    dtol = 1e-12 * scale  # reduced cost counted as positive
    ptol = 1e-11  # pivot entry counted as positive
    # crash basis around the column of least worst excess
    j0 = 0
    e0 = np.inf
    i0 = 0
    for j in range(K):
        e = -np.inf
        ie = 0
        for i in range(N):
            if costs[j, i] - b[i] > e:
                e = costs[j, i] - b[i]
                ie = i
        if e < e0:
            e0, j0, i0 = e, j, ie
    basis = np.empty(m, dtype=np.int64)
    basis[N] = j0
    n_art = 0
    for i in range(N):
        basis[i] = K + i
    if phase1:  # t = e0 makes row i0 tight and every other row feasible
        basis[i0] = K + N if e0 >= 0.0 else K + N + 1
    else:
        for i in range(N):
            if b[i] - costs[j0, i] < 0.0:
                Amat[i, n + i] = -1.0
                basis[i] = n + i
                n_art += 1
    is_basic = np.zeros(ntot, dtype=np.bool_)
    for i in range(m):
        is_basic[basis[i]] = True
    B = np.empty((m, m))
    Bt = np.empty((m, m))
    xB = np.empty(m)
    y = np.empty(m)
    u = np.empty(m)
    cB = np.empty(m)
    col = np.empty(m)
    phase_cost = np.zeros(ntot)
    stage = 0 if n_art > 0 else 1  # 0: phase I (artificials), 1: real objective
    if stage == 0:
        for i in range(N):
            phase_cost[n + i] = -1.0
    else:
        for j in range(ntot):
            phase_cost[j] = cost[j]
    max_it = 50 * (ntot + m) + 100
    for _ in range(max_it):
        for i in range(m):
            for k in range(m):
                B[i, k] = Amat[i, basis[k]]
                Bt[k, i] = B[i, k]
            cB[i] = phase_cost[basis[i]]
        if not _solve_small(B, rhs, xB) or not _solve_small(Bt, cB, y):
            return np.zeros(K), 0.0, np.zeros(m), MASTER_FAILED
        enter = -1
        for j in range(n):  # Bland: the first improving column (artificials never enter)
            if is_basic[j]:
                continue
            d = phase_cost[j]
            for i in range(m):
                d -= y[i] * Amat[i, j]
            if d > dtol:
                enter = j
                break
        if enter < 0:
            if stage == 1:
                break
            # end of phase I: the artificials must be (numerically) zero, then leave the basis
            art = 0.0
            for i in range(m):
                if basis[i] >= n:
                    art += abs(xB[i])
            if art > 1e-9 * scale:
                return np.zeros(K), 0.0, np.zeros(m), MASTER_FAILED
            for r in range(m):
                if basis[r] < n:
                    continue
                swapped = False
                for j in range(n):
                    if is_basic[j]:
                        continue
                    for i in range(m):
                        col[i] = Amat[i, j]
                    if not _solve_small(B, col, u):
                        return np.zeros(K), 0.0, np.zeros(m), MASTER_FAILED
                    if abs(u[r]) > 1e-9:
                        is_basic[basis[r]] = False
                        basis[r] = j
                        is_basic[j] = True
                        for i in range(m):
                            for k in range(m):
                                B[i, k] = Amat[i, basis[k]]
                        swapped = True
                        break
                if not swapped:
                    return np.zeros(K), 0.0, np.zeros(m), MASTER_FAILED
            stage = 1
            for j in range(ntot):
                phase_cost[j] = cost[j] if j < n else 0.0
            continue
        for i in range(m):
            col[i] = Amat[i, enter]
        if not _solve_small(B, col, u):
            return np.zeros(K), 0.0, np.zeros(m), MASTER_FAILED
        leave = -1
        best = np.inf
        for i in range(m):
            if u[i] > ptol:
                ratio = max(xB[i], 0.0) / u[i]
                if leave < 0 or ratio < best or (ratio == best and basis[i] < basis[leave]):
                    best = ratio
                    leave = i
        if leave < 0:  # unbounded: impossible for these masters (sum w = 1, t >= least excess)
            return np.zeros(K), 0.0, np.zeros(m), MASTER_FAILED
        is_basic[basis[leave]] = False
        basis[leave] = enter
        is_basic[enter] = True
    else:
        return np.zeros(K), 0.0, np.zeros(m), MASTER_FAILED
    # independent optimality check of the final basis (xB, y solved from it above)
    for i in range(m):
        if basis[i] >= n or xB[i] < -1e-10:
            return np.zeros(K), 0.0, np.zeros(m), MASTER_FAILED
    for j in range(n):
        if is_basic[j]:
            continue
        d = cost[j]
        for i in range(m):
            d -= y[i] * Amat[i, j]
        if d > 1e-9 * scale:
            return np.zeros(K), 0.0, np.zeros(m), MASTER_FAILED
    w = np.zeros(K)
    obj = 0.0
    for i in range(m):
        j = basis[i]
        obj += cost[j] * xB[i]
        if j < K:
            w[j] = xB[i]
    return w, obj, y, MASTER_OK


#: outcomes of ``colgen_loop``
LOOP_OPTIMAL, LOOP_INFEASIBLE, LOOP_FALLBACK, LOOP_MAX_ITER, LOOP_FULL = 0, 1, 2, 3, 4


@nb.njit(cache=True)
def _push(
    lower: np.ndarray,
    room: np.ndarray,
    spare: np.ndarray,
    r: np.ndarray,
    c: np.ndarray,
    s0: int,
    pa: np.ndarray,
    po: np.ndarray,
    pd: np.ndarray,
    pv: np.ndarray,
    pc: np.ndarray,
    K: int,
    actions: np.ndarray,
    orders: np.ndarray,
) -> int:
    """Append the vertex ``(actions, orders)`` to the pool ``pa, po, pd, pv, pc`` of ``K``
    columns, evaluated under the box, unless the pool holds it already. Returns the new
    size (``K`` for a duplicate), or -1 when the pool is full."""
    H, S = actions.shape
    for k in range(K):
        same = True
        for h in range(H):
            for s in range(S):
                if pa[k, h, s] != actions[h, s] or po[k, h, s] != orders[h, s]:
                    same = False
                    break
            if not same:
                break
        if same:
            return K
    if K == pv.size:
        return -1
    for h in range(H):  # element loops: slice assignment compiles a lot of checking code
        for s in range(S):
            pa[K, h, s] = actions[h, s]
            po[K, h, s] = orders[h, s]
    _eval_into(lower, room, spare, actions, orders, r, c, s0, K, pd, pv, pc)
    return K + 1


@nb.njit(cache=True)
def colgen_loop(
    lower: np.ndarray,
    room: np.ndarray,
    spare: np.ndarray,
    r: np.ndarray,
    c: np.ndarray,
    c_bar: np.ndarray,
    s0: int,
    H: int,
    warm_actions: np.ndarray,
    warm_orders: np.ndarray,
    warm_duals: np.ndarray,
    max_iter: int,
    feas_tol: float,
    price_tol: float,
    cap: int,
) -> tuple[int, int, int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """The whole column generation of [`solve_colgen`][cmdp_rl.planning.elp_dense.solve_colgen] in one compiled call.

    The same steps, in the same order and with the same stopping rules, as the Python
    reference loop of [`colgen`][cmdp_rl.planning.elp_dense] (its docstrings explain them): warm columns, the
    unconstrained and warm-dual pricing columns, phase 1 if no column is feasible within
    ``feas_tol``, phase 2; the master LP by ``master_lp``. The pool holds at most
    ``cap`` columns (``LOOP_FULL`` beyond: the caller solves again with more room).

    It gives up (``LOOP_FALLBACK``) at the first master LP that fails its optimality
    check (never seen in practice): the caller then re-solves with the reference loop,
    whose master LP is HiGHS. Both reach the same optimum; where it is not unique they
    may return different optimal plans, and duals that differ in the last bits can break
    pricing ties differently, so learning runs are reproducible with either master but
    not across them.

    Returns ``(outcome, iterations, K, w, lambda, actions, orders, dist, values, costs, bound)``:
    ``outcome`` one of ``LOOP_OPTIMAL``, ``LOOP_INFEASIBLE``,
    ``LOOP_FALLBACK``, ``LOOP_MAX_ITER`` or ``LOOP_FULL``; ``w (K,)`` the
    master weights of the ``K`` pool columns whose ``actions``, ``orders``, ``dist
    (., H, S)``, ``values`` and ``costs (., N)`` follow (arrays of ``cap`` entries: slice
    ``[:K]``); ``bound`` the smallest Lagrangian bound ``D(lambda) >= V*`` of phase 2's pricing
    sweeps (the optimistic optimum itself when ``N = 0``; ``inf`` when there is none), so that
    ``bound - value`` is the plan's certified gap.
    """
    S = r.shape[0]
    N = c.shape[0]
    kw = warm_actions.shape[0]
    pa = np.empty((cap, H, S), dtype=np.int64)
    po = np.empty((cap, H, S), dtype=np.int64)
    pd = np.empty((cap, H, S))
    pv = np.empty(cap)
    pc = np.empty((cap, N))
    # K and phase1 start as plain int64 and bool, not literals: numba would otherwise
    # compile _push and master_lp twice (for the literal, then the plain type)
    K = np.int64(kw) * 0
    lam = np.zeros(N)
    w = np.zeros(0)
    phase1 = N < 0
    excess0 = np.inf
    # the columns before the first master LP: the warm ones, then up to three priced ones
    # (one call site each for the sweep and the evaluation keeps the compiled code small)
    for step in range(kw + 3):
        if step < kw:
            acts, ords = warm_actions[step], warm_orders[step]
        else:
            if step == kw:  # the unconstrained optimum, unless a warm column will do
                need, weight = N == 0 or K == 0, 1.0
                lam.fill(0.0)
            elif step == kw + 1:  # the column the previous duals price
                need, weight = N > 0 and warm_duals.size == N and np.any(warm_duals > 0.0), 1.0
                if need:
                    for i in range(N):
                        lam[i] = warm_duals[i]
            else:  # phase 1 when no column meets the thresholds within feas_tol
                for k in range(K):
                    e = -np.inf
                    for i in range(N):
                        e = max(e, pc[k, i] - c_bar[i])
                    excess0 = min(excess0, e)
                phase1 = N > 0 and not excess0 <= feas_tol
                need, weight = phase1, 0.0  # seeded with the column of least total cost
                lam.fill(1.0)
            if not need:
                continue
            _, acts, ords = lagrangian_sweep(lower, room, spare, r, c, lam, weight, H)
        K = _push(lower, room, spare, r, c, s0, pa, po, pd, pv, pc, K, acts, ords)
        if K < 0:
            return LOOP_FULL, 0, 0, w, lam, pa, po, pd, pv, pc, np.inf
    lam.fill(0.0)
    if N == 0:
        w = np.zeros(K)
        w[np.argmax(pv[:K])] = 1.0
        return LOOP_OPTIMAL, 0, K, w, lam, pa, po, pd, pv, pc, pv[np.argmax(pv[:K])]
    t = max(excess0, 0.0)
    iters = 0
    outcome = LOOP_OPTIMAL
    b = np.empty(N)
    priced = np.empty(N)
    bound = np.inf
    for _phase in range(2):
        for i in range(N):
            b[i] = c_bar[i] if phase1 else c_bar[i] + t
        bound = -np.inf if phase1 else np.inf
        fresh = True  # no pricing yet in this phase
        obj = 0.0
        finished = False
        for _ in range(max_iter):
            iters += 1
            w, mobj, y, st = master_lp(pc[:K], pv[:K], b, phase1)
            if st != MASTER_OK:  # the reference loop (HiGHS) takes over
                return LOOP_FALLBACK, iters, K, w, lam, pa, po, pd, pv, pc, np.inf
            obj = -mobj if phase1 else mobj
            same = not fresh
            for i in range(N):
                lam[i] = max(y[i], 0.0)
                if lam[i] != priced[i]:
                    same = False
            nu = y[N]
            tol = price_tol * (1.0 + abs(obj))
            if (phase1 and obj <= 0.0) or same:
                # same duals as the last pricing: it would return the column just added
                finished = True
                break
            fresh = False
            for i in range(N):
                priced[i] = lam[i]
            V, acts, ords = lagrangian_sweep(lower, room, spare, r, c, lam, 0.0 if phase1 else 1.0, H)
            best = V[0, s0]
            lag = 0.0
            for i in range(N):
                lag += lam[i] * b[i]
            if phase1:
                bound = max(bound, -best - lag)
                done = obj - bound <= tol
            else:
                bound = min(bound, best + lag)
                done = bound - obj <= tol
            if done or best <= nu + tol:
                finished = True
                break
            K1 = _push(lower, room, spare, r, c, s0, pa, po, pd, pv, pc, K, acts, ords)
            if K1 < 0:
                return LOOP_FULL, iters, K, w, lam, pa, po, pd, pv, pc, np.inf
            if K1 == K:  # priced a column already in the pool
                finished = True
                break
            K = K1
        if not finished:
            return LOOP_MAX_ITER, iters, K, w, lam, pa, po, pd, pv, pc, np.inf
        if not phase1:
            break
        if obj > feas_tol:
            outcome = LOOP_INFEASIBLE
            break
        phase1 = False
        t = max(obj, 0.0)
    return outcome, iters, K, w, lam, pa, po, pd, pv, pc, bound
