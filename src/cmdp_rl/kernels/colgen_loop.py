"""The dense extended LP's column generation in one compiled call (numba): the pool of extended
columns, the loop of master LP and pricing sweeps, and the mixing of columns into one plan.

[`colgen_loop`][cmdp_rl.kernels.colgen_loop.colgen_loop] is the fast path of the dense extended LP
([`solve_on_arrays`][cmdp_rl.planning.elp_dense.solve_on_arrays]) and of Online-CRL's compiled
batches ([`play_crl_batched`][cmdp_rl.learners.batched.play_crl_batched]): its pricing is the
compiled EVI sweep ([`lagrangian_sweep`][cmdp_rl.kernels.evi.lagrangian_sweep]), its master the
compiled simplex ([`master_lp`][cmdp_rl.kernels.master_lp.master_lp]).
[`mix_plan`][cmdp_rl.kernels.colgen_loop.mix_plan] mixes the columns of every column-generation
loop into one plan.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from cmdp_rl.kernels.evi import column_into, lagrangian_sweep
from cmdp_rl.kernels.master_lp import MASTER_OK, master_lp


@nb.njit(cache=True)
def mix_returns(w: np.ndarray, values: np.ndarray, costs: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
    """The master weights ``w (K,)`` clipped at 0 and normalized, and the mixed value and ``(N,)``
    costs of ``K`` columns of ``values (K,)`` and ``costs (K, N)`` (occupancy is linear: the paper's
    eq. "occupancy-measure"). Returns ``(w, value, costs)``; the sums run in column order."""
    K = w.shape[0]
    N = costs.shape[1]
    wn = np.empty(K)
    tot = 0.0
    for k in range(K):
        wn[k] = max(w[k], 0.0)
        tot += wn[k]
    value = 0.0
    mixed = np.zeros(N)
    for k in range(K):
        wn[k] /= tot
        wk = wn[k]
        if wk <= 0.0:
            continue
        value += wk * values[k]
        for i in range(N):
            mixed[i] += wk * costs[k, i]
    return wn, value, mixed


@nb.njit(cache=True)
def mix_column(mu: np.ndarray, actions: np.ndarray, dist: np.ndarray, wk: float) -> None:
    """In place: ``mu[h, s, actions[h, s]] += wk * dist[h, s]``, a deterministic column's
    occupancy (its ``(H, S)`` actions and state distribution) added to ``mu (H, S, A)`` with weight
    ``wk``."""
    H, S = dist.shape
    for h in range(H):
        for s in range(S):
            mu[h, s, actions[h, s]] += wk * dist[h, s]


@nb.njit(cache=True)
def policy_of_mix(mu: np.ndarray, reach_tol: float) -> np.ndarray:
    """``(H, S, A)`` ``mu / sum_a mu`` where that sum exceeds ``reach_tol``, uniform elsewhere
    ([`policy_from_occupancy`][cmdp_rl.planning.result.policy_from_occupancy], summed in action order)."""
    H, S, A = mu.shape
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
    return policy


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
    mixed value and ``(N,)`` costs ([`mix_returns`][cmdp_rl.kernels.colgen_loop.mix_returns]), the
    mixed occupancy ``mu (H, S, A)`` ([`mix_column`][cmdp_rl.kernels.colgen_loop.mix_column] in column
    order) and its policy ([`policy_of_mix`][cmdp_rl.kernels.colgen_loop.policy_of_mix]).
    """
    K, H, S = dist.shape
    wn, value, mixed = mix_returns(w, values, costs)
    mu = np.zeros((H, S, A))
    for k in range(K):
        if wn[k] > 0.0:
            mix_column(mu, actions[k], dist[k], wn[k])
    return wn, mu, policy_of_mix(mu, reach_tol), value, mixed


@nb.njit(cache=True)
def uniform_unreached(policy: np.ndarray, mu: np.ndarray, avail: np.ndarray, reach_tol: float) -> None:
    """In place: the rows of ``policy (H, S, A)`` whose occupancy ``mu`` is at most ``reach_tol``
    (unreachable states, uniform over all actions after ``mix_plan``) made uniform over the
    actions ``avail (S, A)`` marks available (a ragged model's mask)."""
    H, S, A = policy.shape
    for h in range(H):
        for s in range(S):
            mass = 0.0
            n = 0
            for a in range(A):
                mass += mu[h, s, a]
                if avail[s, a]:
                    n += 1
            if mass > reach_tol or n == A:
                continue
            for a in range(A):
                policy[h, s, a] = 1.0 / n if avail[s, a] else 0.0


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
    column_into(lower, room, spare, actions, orders, r, c, s0, K, pd, pv, pc)
    return K + 1


@nb.njit(cache=True)
def _seed_pool(
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
    feas_tol: float,
    pool: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    lam: np.ndarray,
    avail: np.ndarray,
) -> tuple[int, bool, float]:
    """The columns before the first master LP: the warm ones, then up to three priced ones (the
    unconstrained optimum unless a warm column will do, the column the previous duals price, and,
    when no column meets the thresholds within ``feas_tol``, phase 1's seed of least total cost).

    Returns ``(K, phase1, excess0)``: the pool's size (-1 when it is full), whether phase 1 is
    needed and the least worst excess of a column (``inf`` when not computed)."""
    pa, po, pd, pv, pc = pool
    N = c.shape[0]
    kw = warm_actions.shape[0]
    # K and phase1 start as plain int64 and bool, not literals: numba would otherwise
    # compile _push and master_lp twice (for the literal, then the plain type)
    K = np.int64(kw) * 0
    phase1 = N < 0
    excess0 = np.inf
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
            _, acts, ords = lagrangian_sweep(lower, room, spare, r, c, lam, weight, H, avail)
        K = _push(lower, room, spare, r, c, s0, pa, po, pd, pv, pc, K, acts, ords)
        if K < 0:
            return K, phase1, excess0
    return K, phase1, excess0


@nb.njit(cache=True)
def _run_phase(
    lower: np.ndarray,
    room: np.ndarray,
    spare: np.ndarray,
    r: np.ndarray,
    c: np.ndarray,
    s0: int,
    H: int,
    b: np.ndarray,
    phase1: bool,
    max_iter: int,
    price_tol: float,
    pool: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    K: int,
    w: np.ndarray,
    lam: np.ndarray,
    avail: np.ndarray,
) -> tuple[int, int, int, np.ndarray, float, float]:
    """One phase of the loop on thresholds ``b``: master LP, then a pricing sweep at its duals
    ``lam`` (updated in place), until the best Lagrangian bound meets the master's objective, no
    column prices out, the priced column is in the pool or the duals repeat (phase 1 also stops
    once the master is feasible).

    Returns ``(outcome, iterations, K, w, objective, bound)``: ``outcome`` ``LOOP_OPTIMAL`` when
    the phase finished, else ``LOOP_FALLBACK``, ``LOOP_FULL`` or ``LOOP_MAX_ITER``."""
    pa, po, pd, pv, pc = pool
    N = c.shape[0]
    priced = np.empty(N)
    bound = -np.inf if phase1 else np.inf
    fresh = True  # no pricing yet in this phase
    obj = 0.0
    for it in range(1, max_iter + 1):
        w, mobj, y, st = master_lp(pc[:K], pv[:K], b, phase1)
        if st != MASTER_OK:  # the shared loop takes over
            return LOOP_FALLBACK, it, K, w, obj, np.inf
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
            return LOOP_OPTIMAL, it, K, w, obj, bound
        fresh = False
        for i in range(N):
            priced[i] = lam[i]
        V, acts, ords = lagrangian_sweep(lower, room, spare, r, c, lam, 0.0 if phase1 else 1.0, H, avail)
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
            return LOOP_OPTIMAL, it, K, w, obj, bound
        K1 = _push(lower, room, spare, r, c, s0, pa, po, pd, pv, pc, K, acts, ords)
        if K1 < 0:
            return LOOP_FULL, it, K, w, obj, np.inf
        if K1 == K:  # priced a column already in the pool
            return LOOP_OPTIMAL, it, K, w, obj, bound
        K = K1
    return LOOP_MAX_ITER, max_iter, K, w, obj, np.inf


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
    avail: np.ndarray,
) -> tuple[int, int, int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """The whole column generation of [`solve_colgen`][cmdp_rl.planning.elp_dense.solve_colgen] in one compiled call.

    The phases of the shared loop ([`run_colgen`][cmdp_rl.planning.colgen.run_colgen]) on the extended
    LP's columns, with pricing at the master's duals themselves (no stabilization): warm columns,
    the unconstrained and warm-dual pricing columns, phase 1 (seeded with the column of least total
    cost) if no column is feasible within ``feas_tol``, then phase 2 with ``t`` fixed at the worst
    excess found (0 when some column is feasible). Pricing is EVI on a Lagrangian reward, ``r -
    lambda . c`` in phase 2 and ``-lambda . c`` in phase 1; every pricing value is also a Lagrangian
    bound on the full extended LP (phase 2: ``z* <= best + lambda . b``; phase 1: ``t* >= -best -
    lambda . b``), so a phase stops as soon as the best bound meets the master's objective, not
    only when no column prices out; this cuts the degenerate tail of column generation without
    losing exactness. The master LP is ``master_lp``. The pool holds at most ``cap`` columns
    (``LOOP_FULL`` beyond: the caller solves again with more room). ``avail (S, A)``: the available
    actions (a ragged model's mask; all ``True`` otherwise): no column plays another.

    It gives up (``LOOP_FALLBACK``) at the first master LP that fails its optimality
    check (never seen in practice): the caller then re-solves with the shared loop. Both reach
    the same optimum; where it is not unique they may return different optimal plans, so
    learning runs are reproducible with either loop but not across them.

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
    pa = np.empty((cap, H, S), dtype=np.int64)
    po = np.empty((cap, H, S), dtype=np.int64)
    pd = np.empty((cap, H, S))
    pv = np.empty(cap)
    pc = np.empty((cap, N))
    pool = (pa, po, pd, pv, pc)
    lam = np.zeros(N)
    w = np.zeros(0)
    K, phase1, excess0 = _seed_pool(
        lower, room, spare, r, c, c_bar, s0, H, warm_actions, warm_orders, warm_duals, feas_tol, pool, lam, avail
    )
    if K < 0:
        return LOOP_FULL, 0, 0, w, lam, pa, po, pd, pv, pc, np.inf
    lam.fill(0.0)
    if N == 0:
        w = np.zeros(K)
        w[np.argmax(pv[:K])] = 1.0
        return LOOP_OPTIMAL, 0, K, w, lam, pa, po, pd, pv, pc, pv[np.argmax(pv[:K])]
    t = max(excess0, 0.0)
    iters = 0
    b = np.empty(N)
    for _phase in range(2):
        for i in range(N):
            b[i] = c_bar[i] if phase1 else c_bar[i] + t
        code, it, K, w, obj, bound = _run_phase(
            lower, room, spare, r, c, s0, H, b, phase1, max_iter, price_tol, pool, K, w, lam, avail
        )
        iters += it
        if code != LOOP_OPTIMAL:
            return code, iters, K, w, lam, pa, po, pd, pv, pc, np.inf
        if not phase1:
            break
        if obj > feas_tol:
            return LOOP_INFEASIBLE, iters, K, w, lam, pa, po, pd, pv, pc, bound
        phase1 = False
        t = max(obj, 0.0)
    return LOOP_OPTIMAL, iters, K, w, lam, pa, po, pd, pv, pc, bound


__all__ = [
    "LOOP_FALLBACK",
    "LOOP_FULL",
    "LOOP_INFEASIBLE",
    "LOOP_MAX_ITER",
    "LOOP_OPTIMAL",
    "colgen_loop",
    "mix_column",
    "mix_plan",
    "mix_returns",
    "policy_of_mix",
    "uniform_unreached",
]
