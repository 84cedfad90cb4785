"""The extended LP solved exactly by column generation over extended policies (DESIGN section 5).

The feasible set of the extended LP is the convex hull of the extended
occupancies of (deterministic policy, per-step extreme plausible kernel) pairs.
A restricted master LP mixes the columns found so far,

    max  sum_j w_j V_j   s.t.  sum_j w_j C_{i,j} <= c_bar_i,  sum_j w_j = 1,  w >= 0,

and its duals ``lambda >= 0`` (costs) and ``nu`` (convexity) price a new column:
EVI on the Lagrangian reward ``r - sum_i lambda_i c_i`` returns the column of
largest reduced value; when that value is at most ``nu + tol`` the master is
optimal for the full extended LP (the gap is bounded by the reduced value).
Infeasibility is settled first by a phase 1 that minimizes the worst excess
``t`` (``sum_j w_j C_{i,j} - t <= c_bar_i``): its minimizer is also the policy
returned when no plausible policy meets the thresholds.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import linprog

from .evi import Box, Column, IntArray, evi, greedy_rows, make_column
from .result import REACH_TOL, PlanResult, SolverError, policy_from_occupancy

Array = NDArray[np.float64]

#: reduced value below which pricing stops (relative to 1 + |objective|)
PRICE_TOL = 1e-10
#: worst excess at or below which the extended LP counts as feasible (HiGHS' primal tolerance)
FEAS_TOL = 1e-7
MASTER_OPTIONS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


class _Pool:
    """The columns of one solve, with de-duplication and the master's dense data."""

    def __init__(self, box: Box, r: Array, c: Array, s0: int) -> None:
        self.box, self.r, self.c, self.s0 = box, r, c, s0
        self.columns: list[Column] = []
        self._keys: set[bytes] = set()

    def add(self, actions: IntArray, order: IntArray) -> bool:
        col = make_column(self.box, actions, order, self.r, self.c, self.s0)
        if col.key() in self._keys:
            return False
        self._keys.add(col.key())
        self.columns.append(col)
        return True

    def values(self) -> Array:
        return np.array([col.value for col in self.columns])

    def costs(self) -> Array:
        N = self.c.shape[0]
        return np.array([col.costs for col in self.columns]).reshape(len(self.columns), N).T


def _master(values: Array, costs: Array, c_bar: Array, phase1: bool
            ) -> tuple[Array, float, Array, float]:
    """Solve the restricted master; return ``(w, objective, lambda, nu)``.

    Phase 2 maximizes ``values @ w``; phase 1 minimizes the worst excess ``t``.
    The duals are signed so that a column ``(V, C)`` improves phase 2 when
    ``V - lambda @ C > nu`` and phase 1 when ``lambda @ C < nu``.
    """
    N, K = costs.shape
    if phase1:
        obj = np.zeros(K + 1)
        obj[-1] = 1.0
        A_ub = np.hstack([costs, -np.ones((N, 1))])
        A_eq = np.hstack([np.ones((1, K)), np.zeros((1, 1))])
        bounds = [(0.0, None)] * K + [(None, None)]
    else:
        obj, A_ub, A_eq, bounds = -values, costs, np.ones((1, K)), [(0.0, None)] * K
    res = linprog(obj, A_ub=A_ub if N else None, b_ub=c_bar if N else None, A_eq=A_eq,
                  b_eq=np.ones(1), bounds=bounds, method="highs", options=MASTER_OPTIONS)
    if res.status != 0:
        raise SolverError(f"restricted master LP: HiGHS status {res.status}: {res.message}")
    lam = -res.ineqlin.marginals if N else np.zeros(0)
    eq = float(res.eqlin.marginals[0])
    if phase1:
        return res.x[:K], float(res.fun), np.maximum(lam, 0.0), eq
    return res.x, float(-res.fun), np.maximum(lam, 0.0), -eq


def _price(pool: _Pool, box: Box, weights: Array, H: int) -> tuple[float, IntArray, IntArray]:
    """EVI on ``r * weights[0] - sum_i weights[1+i] c_i``: best value, actions, order."""
    reward = weights[0] * pool.r - np.tensordot(weights[1:], pool.c, axes=1)
    V, actions, order = evi(box, reward, H)
    return float(V[0, pool.s0]), actions, order


def _generate(pool: _Pool, c_bar: Array, H: int, phase1: bool, max_iter: int
              ) -> tuple[Array, float, int]:
    """Alternate master and pricing until no column improves; return ``(w, objective, iters)``."""
    for it in range(1, max_iter + 1):
        w, obj, lam, nu = _master(pool.values(), pool.costs(), c_bar, phase1)
        if phase1:
            best, actions, order = _price(pool, pool.box, np.concatenate([[0.0], lam]), H)
            improving = -best < nu - PRICE_TOL * (1.0 + abs(nu))
        else:
            best, actions, order = _price(pool, pool.box, np.concatenate([[1.0], lam]), H)
            improving = best > nu + PRICE_TOL * (1.0 + abs(nu))
        if not improving or not pool.add(actions, order):
            return w, obj, it
    raise SolverError(f"column generation did not converge in {max_iter} iterations "
                      f"({len(pool.columns)} columns)")


def _assemble(pool: _Pool, w: Array, H: int, A: int) -> tuple[Array, Array]:
    """Mixed occupancy ``mu (H, S, A)`` and kernel ``(H, S, A, S)`` of the columns weighted by ``w``.

    The kernel at ``(h, s, a)`` is ``q / sum_y q`` of the mixed extended occupancy
    ``q = sum_j w_j q_j``; where ``(h, s, a)`` is unreached it is the greedy-fill
    row of the heaviest column's order (any plausible row would do).
    """
    box = pool.box
    S = box.S
    mu = np.zeros((H, S, A))
    q = np.zeros((H, S, A, S))
    hs = (np.arange(H)[:, None], np.arange(S)[None, :])
    for wj, col in zip(w, pool.columns):
        if wj <= 0.0:
            continue
        mass = wj * col.dist                                   # (H, S)
        mu[hs[0], hs[1], col.actions] += mass
        q[hs[0], hs[1], col.actions] += mass[..., None] * col.rows
    heavy = pool.columns[int(np.argmax(w))]
    fallback = np.stack([greedy_rows(box.lower, box.room, box.spare, heavy.order[h])
                         for h in range(H)])
    reached = mu > REACH_TOL
    kernel = np.where(reached[..., None], q / np.where(reached, mu, 1.0)[..., None], fallback)
    return mu, kernel


def solve_colgen(box: Box, r: Array, c: Array, c_bar: Array, s0: int, H: int,
                 warm_start: Sequence[tuple[IntArray, IntArray]] = (),
                 max_iter: int = 1000) -> PlanResult:
    """Solve the extended LP over the plausible set ``box`` by column generation.

    Args:
        box: plausible-set bounds (see :class:`.evi.Box`).
        r: ``(S, A)`` rewards; c: ``(N, S, A)`` costs; c_bar: ``(N,)`` thresholds.
        s0, H: initial state and horizon.
        warm_start: ``(actions, order)`` pairs of earlier columns (e.g. the previous
            episode's ``result.info["columns"]``); they are re-evaluated under ``box``.
        max_iter: cap on master/pricing rounds per phase.

    Returns:
        A :class:`PlanResult` with ``method="fast"``, the optimistic ``kernel``
        and ``info["columns"]`` (the columns with positive weight, for warm starts).
    """
    S, A = r.shape
    N = c.shape[0]
    pool = _Pool(box, r, c, s0)
    for actions, order in warm_start:
        pool.add(np.asarray(actions), np.asarray(order))
    _, actions, order = _price(pool, box, np.concatenate([[1.0], np.zeros(N)]), H)
    pool.add(actions, order)
    iters = 0
    status = "optimal"
    feasible_now = N == 0 or np.any(np.all(pool.costs() <= c_bar[:, None] + FEAS_TOL, axis=0))
    if not feasible_now:
        if N:   # seed phase 1 with the column of least total cost
            _, actions, order = _price(pool, box, np.concatenate([[0.0], np.ones(N)]), H)
            pool.add(actions, order)
        w, excess, iters = _generate(pool, c_bar, H, phase1=True, max_iter=max_iter)
        if excess > FEAS_TOL:
            status = "infeasible"
    if status == "optimal":
        w, _, it2 = _generate(pool, c_bar, H, phase1=False, max_iter=max_iter)
        iters += it2
    w = np.maximum(w, 0.0)
    w /= w.sum()
    mu, kernel = _assemble(pool, w, H, A)
    value = float(w @ pool.values())
    costs = pool.costs() @ w
    min_costs = None
    if status == "infeasible":
        min_costs = np.array([-evi(box, -c[i], H)[0][0, s0] for i in range(N)])
    active = [(col.actions, col.order) for wj, col in zip(w, pool.columns) if wj > 0]
    return PlanResult(
        status=status, value=value, costs=costs, policy=policy_from_occupancy(mu),
        occupancy=mu, kernel=kernel, min_costs=min_costs,
        max_excess=float(np.max(costs - c_bar, initial=-np.inf)) if N else 0.0,
        method="fast", iterations=iters,
        info={"columns": active, "n_columns": len(pool.columns)},
    )
