"""The exact planner for a known CMDP: column generation over deterministic Markov policies,
with a certificate of optimality (see the docs pages 'How it works' and 'Large models').

A finite-horizon CMDP's optimum mixes at most ``N + 1`` deterministic Markov policies. The
restricted master LP over the columns found so far,

    max  sum_j w_j V_j   s.t.  sum_j w_j C_{i,j} <= c_bar_i + t,  sum_j w_j = 1,  w >= 0,

has ``N + 1`` rows; its duals ``lambda >= 0`` price a new column by one backward DP sweep
with reward ``r - lambda . c`` (value ``D0`` at ``s0``). Weak duality gives for every
``lambda >= 0`` the bound ``D(lambda) = D0 + lambda . (c_bar + t) >= V*``, so
``gap = min over iterations D(lambda) - value`` certifies the result; the loop stops when
``gap <= gap_tol``. ``t`` is the minimum worst excess when it lies in ``(0, FEAS_TOL]``
(a threshold met only within the solver tolerance), else 0.

Infeasibility is settled by a phase 1 that minimizes the worst excess ``t`` over mixtures;
its duals ``lambda`` (``sum lambda = 1``) give the lower bound
``t* >= min_pi lambda . (C(pi) - c_bar)``, so a ``lambda`` with that bound above
``FEAS_TOL`` proves infeasibility. The problem counts as infeasible exactly when its minimum
worst excess exceeds ``FEAS_TOL`` (``1e-7``, HiGHS' primal tolerance), as for the LP.

Every sweep is a compiled CSR pass ([`cmdp_rl.kernels.csr`][cmdp_rl.kernels.csr]): ``O(H * nnz)`` per pricing,
``O(H * S * b * (N + 1))`` per column evaluation; the master LP is the extended LP's dense simplex
(``_kernels.master_lp``, HiGHS as its fallback). Control returns to Python between
master iterations, so a long solve can be interrupted and report progress.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from cmdp_rl.evaluation.evaluate import value_and_costs
from cmdp_rl.evaluation.stationary import small_solves
from cmdp_rl.kernels.csr import column_distribution, column_stats, dp_sweep, lex_sweep
from cmdp_rl.kernels.evi import MASTER_OK, master_lp, mix_plan
from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.planning.discounted import StationaryPool, solve_discounted_lp
from cmdp_rl.planning.elp_dense import (
    GAP_TOL_PER_STEP as GAP_TOL_PER_STEP,  # default certified gap per step: gap_tol = it * H
)
from cmdp_rl.planning.elp_dense import ELPWorkspace, MasterLP
from cmdp_rl.planning.lp import FEAS_TOL
from cmdp_rl.planning.pool import ColumnStat, PoolBase
from cmdp_rl.planning.result import REACH_TOL, PlanResult, SolverError
from cmdp_rl.planning.thresholds import on_scale, translated
from cmdp_rl.plumbing.names import METHODS
from cmdp_rl.plumbing.validation import CMDPInputError, CMDPTypeError, as_float, check_choice, check_positive_int, plain

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]
Mask = NDArray[np.bool_]

#: phase 1 stops once the worst excess is known to within this (absolute, cost units)
PHASE1_TOL = 1e-10
#: weight of the best bound's multipliers in the stabilized pricing point of phase 2
SMOOTHING = 0.5
#: a column improves the master when its reduced cost exceeds this (relative to 1 + |objective|)
PRICE_TOL = 1e-12

#: ``callback(iteration, gap)`` after every master iteration (``gap`` is ``inf`` in phase 1)
Callback = Callable[[int, float], None]


class ColumnPool(PoolBase):
    """The deterministic Markov policies (columns) of one model, with their values and costs.

    The values and costs do not depend on the thresholds, so one pool serves every solve of
    the same ``K, r, c, s0, H`` (the frontier re-solves with other thresholds warm).

    Args:
        K: ``(S*A, S)`` CSR kernel.
        r: ``(S, A)`` objective per step (any sign).
        c: ``(N, S, A)`` costs per step.
        s0: initial state, or ``(S,)`` initial distribution.
        H: horizon.
    """

    def __init__(self, K: sp.csr_array, r: Array, c: Array, s0: int | Array, H: int) -> None:
        self.indptr = np.ascontiguousarray(K.indptr, dtype=np.int64)
        self.indices = np.ascontiguousarray(K.indices, dtype=np.int64)
        self.data = np.ascontiguousarray(K.data, dtype=np.float64)
        self._init_pool(r, c, s0, H)

    def price(self, weight_r: float, lam: Array) -> tuple[float, NDArray[np.int32]]:
        """One DP sweep on ``weight_r * r - lam . c``: its optimal value from ``rho`` and greedy actions."""
        V0, actions = dp_sweep(self.indptr, self.indices, self.data, self._reward(weight_r, lam), self.H)
        self.sweeps += 1
        best = float(V0[self.s0]) if self.s0 >= 0 else float(V0 @ self.rho)
        self._cut(weight_r, lam, best)
        return best, actions

    def add(self, actions: NDArray[np.integer]) -> tuple[int, bool]:
        """Add a column unless the pool holds it: ``(index, new)``; its value and costs come from
        one forward pass ([`column_stats`][cmdp_rl.kernels.csr.column_stats], counted in ``evaluations``)."""
        stored = np.ascontiguousarray(actions, dtype=self.dtype)
        key = hashlib.blake2b(stored.data, digest_size=16).digest()
        for idx in self._keys.get(key, ()):
            if np.array_equal(self.actions[idx], stored):
                return idx, False
        w0 = column_stats(self.indptr, self.indices, self.data, stored, self.tables, self.rho)
        self.evaluations += 1
        self._keys.setdefault(key, []).append(len(self.actions))
        self.actions.append(stored)
        self.stats.append(ColumnStat(float(w0[0]), w0[1:].copy()))
        return len(self.actions) - 1, True

    def distribution(self, index: int) -> Array:
        """``(H, S)`` state distribution of column ``index`` from ``rho``."""
        out: Array = column_distribution(self.indptr, self.indices, self.data, self.actions[index], self.A, self.rho)
        return out


def model_pool(cmdp: CMDP, r: Array) -> PoolBase:
    """The column pool of ``cmdp`` with objective ``r (S, A)``: deterministic Markov policies of a
    finite-horizon model ([`ColumnPool`][cmdp_rl.planning.solve.ColumnPool]), deterministic stationary policies of a
    discounted one ([`StationaryPool`][cmdp_rl.planning.discounted.StationaryPool])."""
    if cmdp.gamma is not None:
        return StationaryPool(cmdp.K, r, cmdp.c, cmdp.rho, cmdp.gamma)
    return ColumnPool(cmdp.K, r, cmdp.c, cmdp.s0, cmdp.horizon("the column pool"))


def _master(pool: PoolBase, b: Array, phase1: bool, rows: Mask | None = None) -> tuple[Array, float, Array, float]:
    """The restricted master LP over the pool: ``(w, objective, lambda, nu)``; phase 1's objective is
    the worst excess ``t``. Only the constraints ``rows`` (all when ``None``) enter it; the others are
    slack and get multiplier 0. The dense simplex, HiGHS when it gives up."""
    costs, values = pool.costs(), pool.values()
    if rows is not None and not rows.all():
        costs, b = costs[:, rows], b[rows]
    lam = np.zeros(pool.N)
    w, obj, y, status = master_lp(np.ascontiguousarray(costs), values, np.ascontiguousarray(b), phase1)
    n = b.size
    if status == MASTER_OK:
        lam_rows, nu, obj = np.maximum(y[:n], 0.0), float(y[n]), (-obj if phase1 else obj)
    else:
        master = MasterLP(ELPWorkspace("highs"), b, phase1)
        for value, col in zip(values, costs, strict=True):
            master.add(ColumnStat(float(value), col))
        w, obj, lam_rows, nu = master.solve()
    if rows is None:
        return w, obj, lam_rows, nu
    lam[rows] = lam_rows
    return w, obj, lam, nu


@dataclass
class _Outcome:
    status: str
    w: Array
    lam: Array
    gap: float
    bound: float
    t: float
    iterations: int
    gap_tol: float = math.inf


def _phase1(
    pool: PoolBase,
    c_bar: Array,
    max_iter: int,
    callback: Callback | None,
    stop_when_feasible: bool = True,
    tol: float = PHASE1_TOL,
    center: Array | None = None,
    rows: Mask | None = None,
) -> tuple[float, Array, Array, int]:
    """Minimize the worst excess over mixtures of columns. Returns ``(t, w, lambda, iterations)``:
    the smallest worst excess found, its weights and the ``lambda`` of the best lower bound
    (``sum lambda = 1``; when ``t > FEAS_TOL`` it certifies infeasibility). With
    ``stop_when_feasible`` it stops as soon as some mixture meets every threshold (``t <= 0``);
    otherwise it runs to the minimum (the joint Slater gap is ``-t``), to within ``tol``. Pricing
    is stabilized as in ``_phase2`` (the smoothed multipliers stay on the simplex), around
    ``center`` (multipliers on the simplex expected near the optimum, e.g. those of a related
    solve) until a first bound is found. Only the constraints ``rows`` (all when ``None``) enter the
    master (the others must have an excess that never exceeds the minimum, e.g. slack ones)."""
    lower, cert = -np.inf, np.full(pool.N, 1.0 / pool.N) if center is None else center
    known = pool.best_cut(0, c_bar)  # the sweeps of earlier solves on this pool bound t* too
    if known is not None and center is None:
        lower, cert = known
    for it in range(1, max_iter + 1):
        w, t, lam, nu = _master(pool, c_bar, True, rows)
        if callback is not None:
            callback(it, math.inf)
        if stop_when_feasible and t <= 0.0:
            return t, w, lam, it
        improved = False
        for alpha in (SMOOTHING if np.isfinite(lower) or center is not None else 0.0, 0.0):
            lam_s = alpha * cert + (1.0 - alpha) * lam
            best, acts = pool.price(0.0, lam_s)  # max_pi -lam_s . C(pi)
            bound = -best - float(lam_s @ c_bar)  # t* >= min_pi lam_s . (C(pi) - c_bar)
            if bound > lower:
                lower, cert = bound, lam_s
            if t - lower <= tol:
                return t, w, cert, it
            idx, new = pool.add(acts)
            if new and -float(lam @ pool.stats[idx].costs) - nu > PRICE_TOL * (1.0 + abs(t)):
                improved = True
                break
        if not improved:
            return t, w, cert, it
    raise SolverError(f"phase 1 of column generation did not converge in {max_iter} iterations")


def _phase2(
    pool: PoolBase,
    b: Array,
    gap_tol: float,
    max_iter: int,
    callback: Callback | None,
    start: int,
    rows: Mask | None = None,
) -> tuple[Array, Array, float, float, int]:
    """Maximize the value over mixtures meeting ``C w <= b`` until the certified gap is at most
    ``gap_tol``. Returns ``(w, lambda of the best bound, gap, bound, iterations)``; the gap exceeds
    ``gap_tol`` when no column improves the master first (rounding: the caller says
    ``"uncertified"``) or after ``max_iter`` rounds. Only the constraints ``rows`` (all when
    ``None``) enter the master: the others are slack (multiplier 0).

    Pricing is stabilized (Wentges smoothing): each round first prices at
    ``SMOOTHING * lambda_best + (1 - SMOOTHING) * lambda_master``, between the multipliers of
    the best bound so far and the master's; when that column does not improve the master
    (no positive reduced cost at the master's duals), the round prices at the master's duals
    themselves, and if that column does not either, the master is optimal. Every priced
    ``lambda >= 0`` gives a valid bound. Measured: 35-45% fewer rounds than pricing at the
    master's duals alone on Garnet models (S = 150 to 2,000).
    """
    known = pool.best_cut(1, b)  # every earlier pricing sweep on this pool (D(0) = V_u among them)
    assert known is not None
    bound, cert = known
    obj = -math.inf
    for it in range(1, max_iter + 1):
        w, obj, lam, nu = _master(pool, b, False, rows)
        if callback is not None:
            callback(start + it, bound - obj)
        if bound - obj <= gap_tol:
            return w, cert, bound - obj, bound, it
        improved = False
        for alpha in (SMOOTHING, 0.0):
            lam_s = alpha * cert + (1.0 - alpha) * lam
            best, acts = pool.price(1.0, lam_s)
            D = best + float(lam_s @ b)
            if D < bound:
                bound, cert = D, lam_s
            if bound - obj <= gap_tol:
                return w, cert, bound - obj, bound, it
            idx, new = pool.add(acts)
            st = pool.stats[idx]
            if new and st.value - float(lam @ st.costs) - nu > PRICE_TOL * (1.0 + abs(obj)):
                improved = True
                break
        if not improved:  # no column improves the master: optimal up to rounding, which the gap measures
            return w, cert, bound - obj, bound, it
    return w, cert, bound - obj, bound, max_iter  # not closed in max_iter rounds: the caller says so


def run_colgen(
    pool: PoolBase,
    c_bar: Array,
    gap_tol: float,
    max_iter: int = 1000,
    callback: Callback | None = None,
) -> _Outcome:
    """Column generation on ``pool`` for the thresholds ``c_bar (N,)`` (the pool keeps its columns,
    so later calls with other thresholds start warm).

    The thresholds are first brought onto the range of the achievable costs
    ([`on_scale`][cmdp_rl.planning.thresholds.on_scale]): a constraint no policy can violate is
    slack (out of the master, multiplier 0), one no policy can meet makes the problem infeasible
    with the worst excess minimized on numbers of the costs' scale. The outcome is ``"optimal"``
    when the certified gap is at most ``gap_tol``, ``"uncertified"`` when the loop ended without
    closing it (rounding, or ``max_iter`` rounds), ``"infeasible"`` when the minimum worst excess
    exceeds ``FEAS_TOL``."""
    pool.seed()
    N = pool.N
    assert pool.min_costs is not None and pool.max_costs is not None
    th = on_scale(c_bar, pool.min_costs, pool.max_costs)
    if not th.active.any():  # no constraint binds: the unconstrained optimum (a seed column)
        w = np.zeros(len(pool.stats))
        w[int(np.argmax(pool.values()))] = 1.0
        bound = float(pool.unconstrained or 0.0)
        return _Outcome("optimal", w, np.zeros(N), 0.0, bound, 0.0, 0, gap_tol)
    b, rows = th.b, th.active
    excess0 = float(np.min(np.max((pool.costs() - b)[:, rows], axis=1)))
    t, it1 = 0.0, 0
    if excess0 > 0.0:
        t, w, lam, it1 = _phase1(pool, b, max_iter, callback, rows=rows)
        if th.infeasible:  # constraint `worst` alone: max_pi (c_bar_j - C_j(pi)) = c_bar_j - lo_j < -FEAS_TOL
            lam = np.zeros(N)
            lam[th.worst] = 1.0
        if th.infeasible or t > FEAS_TOL:
            return _Outcome("infeasible", w, lam, math.nan, math.nan, t + th.shift, it1)
        t = max(t, 0.0)
    w, lam, gap, bound, it2 = _phase2(pool, b + t, gap_tol, max_iter, callback, it1, rows)
    return _Outcome("optimal", w, lam, gap, bound, t, it1 + it2, gap_tol)


def plan_of(pool: PoolBase, out: _Outcome, c_bar: Array) -> PlanResult:
    """The plan of an outcome: the columns with positive weight mixed by occupancy (a stationary
    pool's ``(S,)`` columns as one-step tables: the plan's policy and occupancy are ``(S, A)``)."""
    w = np.maximum(out.w, 0.0)
    idx = np.flatnonzero(w > 0.0)
    acts = np.stack([pool.actions[j] for j in idx]).astype(np.int64)
    dist = np.stack([pool.distribution(int(j)) for j in idx])
    stationary = acts.ndim == 2
    if stationary:
        acts, dist = acts[:, None, :], dist[:, None, :]
    values, costs = pool.values()[idx], pool.costs()[idx]
    wn, mu, policy, value, mixed = mix_plan(w[idx], acts, dist, values, costs, pool.A, REACH_TOL)
    if stationary:
        acts, mu, policy = acts[:, 0], mu[0], policy[0]
    gap = max(out.bound - value, 0.0) if out.status == "optimal" else math.nan
    status = "uncertified" if out.status == "optimal" and gap > out.gap_tol else out.status
    return PlanResult(
        status=status,
        value=float(value),
        costs=mixed,
        policy=policy,
        occupancy=mu,
        min_costs=pool.min_costs if out.status == "infeasible" else None,
        max_excess=float(np.max(mixed - c_bar)) if c_bar.size else 0.0,
        method="fast",
        iterations=out.iterations,
        info={"t": out.t, "bound": out.bound, "pool": len(pool.stats), "evaluations": pool.evaluations},
        multipliers=out.lam,
        gap=gap,
        sweeps=pool.sweeps,
        columns=acts,
        weights=wn,
    )


def check_gap_tol(gap_tol: Any, H: float) -> float:
    """``gap_tol``: a finite number ``>= 0``; ``None`` gives the default ``1e-9 * H`` (``H`` the
    model's [`max_return`][cmdp_rl.model.cmdp.CMDP.max_return]: ``1 / (1 - gamma)`` for a discounted model)."""
    if gap_tol is None:
        return GAP_TOL_PER_STEP * H
    g = as_float("gap_tol", gap_tol)
    if g < 0:
        raise CMDPInputError(f"gap_tol: must be >= 0 (a bound on V* - value), got {plain(gap_tol)}")
    return g


def solve_fast(
    cmdp: CMDP,
    *,
    gap_tol: float | None = None,
    max_iter: int = 1000,
    callback: Callback | None = None,
    warm_start: Sequence[IntArray] = (),
) -> PlanResult:
    """Column generation with a certificate (``method="fast"`` of [`solve`][cmdp_rl.planning.solve.solve]).

    Args:
        cmdp: the model (dense or sparse; both are swept through ``cmdp.K``).
        gap_tol: stop once ``gap <= gap_tol`` (default ``1e-9 * H``).
        max_iter: cap on master iterations per phase.
        callback: ``callback(iteration, gap)`` after every master iteration.
        warm_start: ``(H, S)`` action tables to put in the pool first (e.g. an earlier
            result's ``columns``).
    """
    gtol = check_gap_tol(gap_tol, cmdp.max_return)
    max_iter = check_positive_int("max_iter", max_iter)
    pool = model_pool(cmdp, cmdp.r)
    shape = (cmdp.S,) if cmdp.H is None else (cmdp.H, cmdp.S)
    for j, acts in enumerate(warm_start):
        a = np.asarray(acts)
        if a.shape != shape or not np.issubdtype(a.dtype, np.integer) or a.min() < 0 or a.max() >= cmdp.A:
            raise CMDPInputError(
                f"warm_start[{j}]: expected an {shape} integer action table with entries in [0, {cmdp.A - 1}]"
            )
        pool.add(np.ascontiguousarray(a, dtype=np.int32))
    with small_solves(cmdp.S) if cmdp.is_discounted else nullcontext():
        out = run_colgen(pool, cmdp.c_bar, gtol, max_iter, callback)
        return plan_of(pool, out, cmdp.c_bar)


def solve(
    cmdp: CMDP,
    method: str = "fast",
    *,
    gap_tol: float | None = None,
    max_iter: int = 1000,
    callback: Callback | None = None,
) -> PlanResult:
    """Solve a CMDP exactly (dense or sparse kernel).

    Args:
        cmdp: the model.
        method: ``"fast"`` (default): column generation over deterministic Markov policies
            with a certified gap; ``"lp"``: the occupation-measure LP of
            the paper's appendix (eq. "lp") solved by HiGHS, the reference.
        gap_tol: ``"fast"`` stops once the certified gap ``V* - value`` is at most this
            (default ``1e-9 * H``).
        max_iter: ``"fast"``: cap on master iterations per phase.
        callback: ``"fast"``: ``callback(iteration, gap)`` after every master iteration
            (progress reports; raising from it interrupts the solve).

    Returns:
        A [`PlanResult`][cmdp_rl.planning.result.PlanResult] with ``value``, ``costs``, ``policy (H, S, A)``,
        ``occupancy``, ``multipliers (N,)`` and ``gap``; ``"fast"`` also ``sweeps``, ``columns (K, H, S)`` and
        ``weights (K,)``. When the thresholds cannot be met (minimum worst excess above
        ``1e-7``), ``status`` is ``"infeasible"``, ``min_costs`` holds the smallest
        achievable cost of each constraint, the policy minimizes the worst excess, ``gap`` is
        ``nan`` and ``multipliers`` certify infeasibility.

    Raises:
        SolverError: the solver stopped for another reason (named in the message).
    """
    if not isinstance(cmdp, CMDP):
        raise CMDPTypeError(f"cmdp: must be a cmdp_rl.CMDP, got {type(cmdp).__name__}")
    check_choice("method", method, METHODS)
    if method == "lp":
        return solve_lp_certified(cmdp, gap_tol=gap_tol)
    return solve_fast(cmdp, gap_tol=gap_tol, max_iter=max_iter, callback=callback)


def solve_lp_certified(cmdp: CMDP, *, gap_tol: float | None = None) -> PlanResult:
    """``solve(cmdp, method="lp")``: the occupation-measure LP (finite-horizon, or Altman's for a
    discounted model) on thresholds brought onto the range of the achievable costs, and its
    certificate.

    The range comes from the column pool's seeding sweeps (each constraint's least and largest
    cost), so a threshold no policy can reach is slack (multiplier exactly 0) and one no policy
    can meet is infeasible, whatever its size. The LP's answer is then checked, not trusted: its
    policy is evaluated exactly (``value``, ``costs``) and its duals ``lambda`` give the bound
    ``D(lambda) = max_pi V_{r - lambda . c}(pi) + lambda . b >= V*`` (one DP sweep, or policy
    iteration), so ``gap = D(lambda) - value``; ``status`` is ``"optimal"`` when that gap is at most
    ``gap_tol`` (default ``1e-9 * H``), ``"uncertified"`` otherwise.
    """
    gtol = check_gap_tol(gap_tol, cmdp.max_return)
    pool = model_pool(cmdp, cmdp.r)
    with small_solves(cmdp.S) if cmdp.is_discounted else nullcontext():
        pool.seed()
        assert pool.min_costs is not None and pool.max_costs is not None
        th = on_scale(cmdp.c_bar, pool.min_costs, pool.max_costs)
        if cmdp.is_discounted:
            plan = solve_discounted_lp(cmdp, th)
        else:
            from cmdp_rl.planning.lp import solve_lp

            plan = solve_lp(cmdp, th)
        if plan.status != "optimal":
            return plan
        lam = plan.multipliers if plan.multipliers is not None else np.zeros(cmdp.N)
        value, costs = value_and_costs(cmdp, plan.policy)
        bound = pool.price(1.0, lam)[0] + float(lam @ (th.b + float(plan.info.get("t", 0.0))))
        gap = max(bound - value, 0.0)
    return dataclasses.replace(
        plan,
        status="optimal" if gap <= gtol else "uncertified",
        value=float(value),
        costs=costs,
        max_excess=float(np.max(costs - cmdp.c_bar)) if cmdp.N else 0.0,
        gap=gap,
        sweeps=pool.sweeps,
        info={**plan.info, "bound": bound},
    )


def unconstrained_least_cost(cmdp: CMDP) -> tuple[NDArray[np.int32], float, Array]:
    """The unconstrained optimum with the smallest total cost among ties (the tie-break of the
    Garnet and N-constraints thresholds): a lexicographic DP (maximize ``r``, then minimize
    ``sum_i c_i`` among optimal actions).

    Returns its ``(H, S)`` actions, value and ``(N,)`` costs.
    """
    H = cmdp.horizon("the least-cost unconstrained optimum")
    pool = ColumnPool(cmdp.K, cmdp.r, cmdp.c, cmdp.s0, H)
    second = -cmdp.c.sum(axis=0) if cmdp.N else np.zeros((cmdp.S, cmdp.A))
    tol = 1e-12 * max(1.0, float(H))
    _, _, acts = lex_sweep(pool.indptr, pool.indices, pool.data, pool.r, np.ascontiguousarray(second), H, tol)
    _, _ = pool.add(acts)
    st = pool.stats[0]
    return acts, st.value, st.costs


def unconstrained_value(cmdp: CMDP) -> float:
    """The unconstrained optimum ``max_pi V(pi)`` from ``s0`` (or ``rho``): one DP sweep, or policy
    iteration for a discounted model."""
    return float(model_pool(cmdp, cmdp.r).price(1.0, np.zeros(cmdp.N))[0])


def min_worst_excess(cmdp: CMDP) -> float:
    """The smallest achievable worst excess ``min_pi max_i (C_i(pi) - c_bar_i)`` (minus the joint
    Slater gap), to within ``1e-10``: phase 1 of the column generation run to its minimum."""
    if cmdp.N == 0:
        raise CMDPInputError("cmdp: has no constraints (N = 0): no constraint excess to minimize")
    pool = model_pool(cmdp, cmdp.r)
    pool.seed()
    assert pool.min_costs is not None and pool.max_costs is not None
    b, shift, keep, _ = translated(cmdp.c_bar, pool.min_costs, pool.max_costs)  # thresholds of any size
    t, _, _, _ = _phase1(pool, b, 1000, None, stop_when_feasible=False, rows=keep)
    return t + shift


def slater_gap(cmdp: CMDP) -> float:
    """The joint Slater gap ``xi = max_pi min_i (c_bar_i - C_i(pi))`` (``inf`` when ``N = 0``): minus
    [`min_worst_excess`][cmdp_rl.planning.solve.min_worst_excess], finite-horizon or discounted (NPG-PD's default
    multiplier bound ``2 / ((1 - gamma) xi)`` uses it)."""
    if cmdp.N == 0:
        return math.inf
    return -min_worst_excess(cmdp)


def _least_total_cost_at_min_worst(pool: PoolBase, gap_tol: float) -> tuple[Array, float, Array]:
    """On a pool whose objective is ``-sum_i c_i``: the mixture minimizing the worst cost
    ``max_i C_i`` and, among those, the total cost. Returns ``(w, t*, lambda)``, ``lambda`` the
    phase-1 multipliers certifying ``t*``."""
    N = pool.N
    pool.seed()
    t, _, lam, _ = _phase1(pool, np.zeros(N), 1000, None, stop_when_feasible=False, tol=gap_tol)
    # the phase-1 mixture meets every row at t (to the master's tolerance): phase 2 starts feasible
    w, _, _, _, _ = _phase2(pool, np.full(N, t + PHASE1_TOL), gap_tol, 1000, None, 0)
    return w, t, lam


def min_worst_cost(cmdp: CMDP, gap_tol: float | None = None) -> tuple[PlanResult, float]:
    """A policy minimizing the worst cost ``max_i C_i`` with a fixed tie-break (that of the Garnet
    and N-constraints thresholds): among the minimizers, the smallest total cost ``sum_i C_i``.

    Returns the plan (a CMDP solve with objective ``-sum_i c_i`` and every threshold at the
    minimum worst cost ``t*``) and ``t*``.
    """
    N = cmdp.N
    if N == 0:
        raise CMDPInputError("cmdp: has no constraints (N = 0): no worst cost to minimize")
    gtol = check_gap_tol(gap_tol, cmdp.max_return)
    pool = model_pool(cmdp, -cmdp.c.sum(axis=0))
    w, t, _ = _least_total_cost_at_min_worst(pool, gtol)
    b = np.full(N, t + PHASE1_TOL)
    out = _Outcome("optimal", w, np.zeros(N), 0.0, math.nan, 0.0, 0)
    return plan_of(pool, out, b), t


def slater_thresholds(cmdp: CMDP, f: float, gap_tol: float | None = None) -> tuple[Array, float]:
    """The thresholds ``c_bar_i = (1 - f) C_i(pi_s) + f C_i(pi_u)`` of the Garnet and N-constraints
    problems (see the docs page 'Environments') and the joint Slater gap
    ``max_pi min_i (c_bar_i - C_i(pi))`` they leave (to within ``gap_tol``, default ``1e-9 * H``).

    ``pi_s`` minimizes the worst cost (the smallest total cost among the minimizers), ``pi_u``
    is the unconstrained optimum with the smallest total cost among ties: both fixed rules, so
    the thresholds do not depend on a solver's choice among tied optima. One column pool (the
    costs do not depend on the objective) serves ``pi_s`` and the Slater gap.
    """
    if not isinstance(cmdp, CMDP):
        raise CMDPTypeError(f"cmdp: must be a cmdp_rl.CMDP, got {type(cmdp).__name__}")
    if cmdp.N == 0:
        raise CMDPInputError("cmdp: has no constraints (N = 0): no thresholds to place")
    f = as_float("f", f)
    if not 0.0 <= f <= 1.0:
        raise CMDPInputError(f"f: the threshold fraction must lie in [0, 1], got {f}")
    H = cmdp.horizon("slater_thresholds")
    gtol = check_gap_tol(gap_tol, H)
    acts_u, _, C_u = unconstrained_least_cost(cmdp)
    pool = ColumnPool(cmdp.K, -cmdp.c.sum(axis=0), cmdp.c, cmdp.s0, H)
    pool.add(acts_u)
    w, _, lam = _least_total_cost_at_min_worst(pool, gtol)
    wn = np.maximum(w, 0.0) / np.maximum(w, 0.0).sum()
    C_s = wn @ pool.costs()[: w.size]
    c_bar: Array = (1.0 - f) * C_s + f * C_u
    t, _, _, _ = _phase1(pool, c_bar, 1000, None, stop_when_feasible=False, tol=gtol, center=lam)
    return c_bar, -t


__all__ = [
    "METHODS",
    "ColumnPool",
    "check_gap_tol",
    "min_worst_cost",
    "min_worst_excess",
    "plan_of",
    "run_colgen",
    "slater_gap",
    "slater_thresholds",
    "solve",
    "solve_fast",
    "unconstrained_least_cost",
    "unconstrained_value",
]
