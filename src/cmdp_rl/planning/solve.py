"""The exact planner for a known CMDP: column generation over deterministic Markov policies
(finite-horizon) or deterministic stationary policies (discounted), with a certificate of
optimality (see the docs pages 'How it works' and 'Large models').

A finite-horizon CMDP's optimum mixes at most ``N + 1`` deterministic Markov policies. The
loop, its phases and its certificate are [`run_colgen`][cmdp_rl.planning.colgen.run_colgen]'s; this
module gives it the model's pool ([`ColumnPool`][cmdp_rl.planning.solve.ColumnPool]: every sweep is
a compiled CSR pass of [`cmdp_rl.kernels.csr`][cmdp_rl.kernels.csr], ``O(H * nnz)`` per pricing,
``O(H * S * b * (N + 1))`` per column evaluation), checks the inputs and builds the plan. The
helpers below (the unconstrained optimum, the minimum worst excess, the Slater gap, the Garnet
thresholds) run the same phases on the same pools.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Sequence
from contextlib import nullcontext

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from cmdp_rl.evaluation.evaluate import value_and_costs
from cmdp_rl.evaluation.stationary import small_solves
from cmdp_rl.kernels.csr import column_distribution, column_stats, dp_sweep, lex_sweep
from cmdp_rl.kernels.csr_reach import (
    column_distribution_reach,
    column_stats_reach,
    dp_sweep_reach,
    reach_steps,
    reached_entries,
)
from cmdp_rl.model.actions import Mask, check_action_table, masked
from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.model.units import unit_model
from cmdp_rl.planning.colgen import (
    GAP_TOL_PER_STEP as GAP_TOL_PER_STEP,  # default certified gap per step: gap_tol = it * H
)
from cmdp_rl.planning.colgen import (
    PHASE1_TOL,
    Callback,
    Outcome,
    check_gap_tol,
    plan_of,
    run_colgen,
    run_phase1,
    run_phase2,
)
from cmdp_rl.planning.discounted import StationaryPool, solve_discounted_lp
from cmdp_rl.planning.mixing import PlanTables, markov_mixer
from cmdp_rl.planning.pool import ColumnStat, PoolBase
from cmdp_rl.planning.result import REACH_TOL, PlanResult, plan_in_units
from cmdp_rl.planning.thresholds import on_scale, translated
from cmdp_rl.plumbing.names import METHODS
from cmdp_rl.plumbing.validation import CMDPInputError, CMDPTypeError, as_float, check_choice, check_positive_int

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]


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
        actions: ``(S, A)`` mask of the available actions (``None``: all); no column plays another.

    Sweeps and forward passes visit only the states reachable at each step when those are at most
    half of the ``H * S`` pairs ([`cmdp_rl.kernels.csr_reach`][cmdp_rl.kernels.csr_reach], found once per
    pool): the same values and actions there, bit for bit; at a pair ``(h, s)`` no policy reaches,
    a column plays the state's first available action.
    """

    def __init__(
        self, K: sp.csr_array, r: Array, c: Array, s0: int | Array, H: int, actions: Mask | None = None
    ) -> None:
        self.indptr = np.ascontiguousarray(K.indptr, dtype=np.int64)
        self.indices = np.ascontiguousarray(K.indices, dtype=np.int64)
        self.data = np.ascontiguousarray(K.data, dtype=np.float64)
        self._init_pool(r, c, s0, H, actions)
        self._steps: tuple[NDArray[np.int32], IntArray] | bool | None = False  # False: not looked for yet
        self._fill: NDArray[np.integer] | None = None

    def reachable(self) -> tuple[NDArray[np.int32], IntArray] | None:
        """The reachable sets ``(order, starts)`` of [`reach_steps`][cmdp_rl.kernels.csr_reach.reach_steps]
        (found on first use), ``None`` when the full sweeps are as cheap."""
        if self._steps is False:
            avail = np.ones(self.S * self.A, dtype=bool) if self.available is None else self.available.ravel()
            self._steps = reach_steps(self.indptr, self.indices, self.A, self.rho, np.ascontiguousarray(avail), self.H)
        assert self._steps is not True
        return self._steps

    def _sweep(self, reward: Array) -> tuple[Array, NDArray[np.integer]]:
        steps = self.reachable()
        if steps is None:
            return dp_sweep(self.indptr, self.indices, self.data, reward, self.H)
        if self._fill is None:  # the first available action everywhere, the table each sweep starts from
            first = np.zeros(self.S) if self.available is None else self.available.argmax(axis=1)
            self._fill = np.ascontiguousarray(np.broadcast_to(first.astype(self.dtype), (self.H, self.S)))
        actions = self._fill.copy()
        return dp_sweep_reach(self.indptr, self.indices, self.data, reward, *steps, actions), actions

    def price(self, weight_r: float, lam: Array) -> tuple[float, NDArray[np.integer]]:
        """One DP sweep on ``weight_r * r - lam . c``: its optimal value from ``rho`` and greedy actions."""
        V0, actions = self._sweep(self._reward(weight_r, lam))
        self.sweeps += 1
        best = float(V0[self.s0]) if self.s0 >= 0 else float(V0 @ self.rho)
        self._cut(weight_r, lam, best)
        return best, actions

    def add(self, actions: NDArray[np.integer]) -> tuple[int, bool]:
        """Add a column unless the pool holds it: ``(index, new)``; its value and costs come from
        one forward pass ([`column_stats`][cmdp_rl.kernels.csr.column_stats], counted in ``evaluations``)."""
        stored = np.ascontiguousarray(actions, dtype=self.dtype)
        steps = self.reachable()
        told = stored if steps is None else reached_entries(stored, *steps)  # what tells columns apart
        key = hashlib.blake2b(told.data, digest_size=16).digest()
        for idx in self._keys.get(key, ()):
            if np.array_equal(self.actions[idx], stored):
                return idx, False
        if steps is None:
            w0 = column_stats(self.indptr, self.indices, self.data, stored, self.tables, self.rho)
        else:
            w0 = column_stats_reach(self.indptr, self.indices, self.data, stored, self.tables, self.rho, *steps)
        self.evaluations += 1
        self._keys.setdefault(key, []).append(len(self.actions))
        self.actions.append(stored)
        self.stats.append(ColumnStat(float(w0[0]), w0[1:].copy()))
        return len(self.actions) - 1, True

    def distribution(self, index: int) -> Array:
        """``(H, S)`` state distribution of column ``index`` from ``rho``."""
        steps = self.reachable()
        acts = self.actions[index]
        if steps is None:
            out: Array = column_distribution(self.indptr, self.indices, self.data, acts, self.A, self.rho)
            return out
        out = column_distribution_reach(self.indptr, self.indices, self.data, acts, self.A, self.rho, *steps)
        return out

    def markov_tables(self, columns: NDArray[np.integer], weights: Array, index: NDArray[np.intp]) -> PlanTables:
        """The plan's Markov tables mixed on first use from ``columns (K, H, S)`` and ``weights``
        ([`markov_mixer`][cmdp_rl.planning.mixing.markov_mixer]); it holds the kernel's arrays, not
        the pool."""
        return markov_mixer(self.indptr, self.indices, self.data, self.rho, self.available, columns, weights, REACH_TOL)


def model_pool(cmdp: CMDP, r: Array) -> PoolBase:
    """The column pool of ``cmdp`` with objective ``r (S, A)``: deterministic Markov policies of a
    finite-horizon model ([`ColumnPool`][cmdp_rl.planning.solve.ColumnPool]), deterministic stationary policies of a
    discounted one ([`StationaryPool`][cmdp_rl.planning.discounted.StationaryPool])."""
    if cmdp.gamma is not None:
        return StationaryPool(cmdp.K, r, cmdp.c, cmdp.rho, cmdp.gamma, cmdp.actions)
    return ColumnPool(cmdp.K, r, cmdp.c, cmdp.s0, cmdp.horizon("the column pool"), cmdp.actions)


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
        check_action_table(f"warm_start[{j}]", a, cmdp.actions)
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
        gap_tol: ``"fast"`` stops once the certified gap ``V* - value`` is at most this, in the
            model's units (default ``1e-9 * T * w_r``: ``T`` the horizon or ``1 / (1 - gamma)``,
            ``w_r`` the width of the rewards' scale interval, 1 for rewards in ``[0, 1]``; see
            [`Units`][cmdp_rl.model.units.Units]).
        max_iter: ``"fast"``: cap on master iterations per phase.
        callback: ``"fast"``: ``callback(iteration, gap)`` after every master iteration
            (progress reports; raising from it interrupts the solve).

    Rewards and costs may be any finite numbers: the solve runs on the model's image on the unit
    scale ([`unit_model`][cmdp_rl.model.units.unit_model]) and every number of the result is in
    the model's units ([`plan_in_units`][cmdp_rl.planning.result.plan_in_units]); the feasibility
    tolerance of constraint ``i`` is ``1e-7 * w_i``.

    Returns:
        A [`PlanResult`][cmdp_rl.planning.result.PlanResult] with ``value``, ``costs``, ``policy (H, S, A)``,
        ``occupancy``, ``multipliers (N,)`` and ``gap``; ``"fast"`` also ``sweeps``, ``columns (K, H, S)`` and
        ``weights (K,)``. When the thresholds cannot be met (minimum worst excess above
        ``1e-7``), ``status`` is ``"infeasible"``, ``min_costs`` holds the smallest
        achievable cost of each constraint, the policy minimizes the worst excess (each
        constraint's excess over its width ``w_i``), ``gap`` is
        ``nan`` and ``multipliers`` certify infeasibility.

    Raises:
        SolverError: the solver stopped for another reason (named in the message).
    """
    if not isinstance(cmdp, CMDP):
        raise CMDPTypeError(f"cmdp: must be a cmdp_rl.CMDP, got {type(cmdp).__name__}")
    check_choice("method", method, METHODS)
    image, units = unit_model(cmdp)
    gtol = units.unit_gap(check_gap_tol(gap_tol, cmdp.max_return * units.r_width))
    if method == "lp":
        plan = solve_lp_certified(image, gap_tol=gtol)
    else:
        report = callback
        if callback is not None and not units.identity:

            def report(iteration: int, gap: float) -> None:  # the gap in the user's units
                callback(iteration, float(units.gap(gap)))

        plan = solve_fast(image, gap_tol=gtol, max_iter=max_iter, callback=report)
    return plan_in_units(plan, units, cmdp.c_bar)


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
    pool = ColumnPool(cmdp.K, cmdp.r, cmdp.c, cmdp.s0, H, cmdp.actions)
    second = -cmdp.c.sum(axis=0) if cmdp.N else np.zeros((cmdp.S, cmdp.A))
    tol = 1e-12 * max(1.0, float(H))
    first = np.ascontiguousarray(masked(pool.r, cmdp.actions))
    _, _, acts = lex_sweep(pool.indptr, pool.indices, pool.data, first, np.ascontiguousarray(second), H, tol)
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
    t, _, _, _ = run_phase1(pool, b, 1000, None, stop_when_feasible=False, rows=keep)
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
    t, _, lam, _ = run_phase1(pool, np.zeros(N), 1000, None, stop_when_feasible=False, tol=gap_tol)
    # the phase-1 mixture meets every row at t (to the master's tolerance): phase 2 starts feasible
    w, _, _, _, _ = run_phase2(pool, np.full(N, t + PHASE1_TOL), gap_tol, 1000, None, 0)
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
    out = Outcome("optimal", w, np.zeros(N), 0.0, math.nan, 0.0, 0)
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
    pool = ColumnPool(cmdp.K, -cmdp.c.sum(axis=0), cmdp.c, cmdp.s0, H, cmdp.actions)
    pool.add(acts_u)
    w, _, lam = _least_total_cost_at_min_worst(pool, gtol)
    wn = np.maximum(w, 0.0) / np.maximum(w, 0.0).sum()
    C_s = wn @ pool.costs()[: w.size]
    c_bar: Array = (1.0 - f) * C_s + f * C_u
    t, _, _, _ = run_phase1(pool, c_bar, 1000, None, stop_when_feasible=False, tol=gtol, center=lam)
    return c_bar, -t


__all__ = [
    "METHODS",
    "ColumnPool",
    "min_worst_cost",
    "min_worst_excess",
    "slater_gap",
    "slater_thresholds",
    "solve",
    "solve_fast",
    "unconstrained_least_cost",
    "unconstrained_value",
]
