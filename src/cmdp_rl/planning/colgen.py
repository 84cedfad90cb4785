"""The column-generation loop of every LP the library solves by columns: the exact planner
([`solve`][cmdp_rl.planning.solve.solve], finite-horizon and discounted), the frontier and the
dense and sparse extended LPs, each over its own [`PoolBase`][cmdp_rl.planning.pool.PoolBase] (see the docs
pages 'How it works' and 'Large models').

The restricted master LP over the columns found so far,

    max  sum_j w_j V_j   s.t.  sum_j w_j C_{i,j} <= c_bar_i + t,  sum_j w_j = 1,  w >= 0,

has ``N + 1`` rows (compiled dense simplex, HiGHS as its fallback:
[`solve_master`][cmdp_rl.planning.master.solve_master]); its duals ``lambda >= 0`` price a new
column by one sweep of the pool on the reward ``r - lambda . c`` (value ``D0`` at ``s0``). Weak
duality gives for every ``lambda >= 0`` the bound ``D(lambda) = D0 + lambda . (c_bar + t) >= V*``,
so ``gap = min over iterations D(lambda) - value`` certifies the result; the loop stops when
``gap <= gap_tol``. ``t`` is the minimum worst excess when it lies in ``(0, FEAS_TOL]`` (a threshold
met only within the solver tolerance), else 0.

Infeasibility is settled by a phase 1 that minimizes the worst excess ``t`` over mixtures; its
duals ``lambda`` (``sum lambda = 1``) give the lower bound ``t* >= min_pi lambda . (C(pi) - c_bar)``,
so a ``lambda`` with that bound above ``FEAS_TOL`` proves infeasibility. The problem counts as
infeasible exactly when its minimum worst excess exceeds ``FEAS_TOL`` (``1e-7``, HiGHS' primal
tolerance), as for the LP. Control returns to Python between master iterations, so a long solve
can be interrupted and report progress.

The dense extended LP is one more pool of this loop
([`DenseBoxPool`][cmdp_rl.planning.elp_dense.DenseBoxPool]); for the learners' per-episode re-plans its
dense layout runs the same phases, without stabilization, in one compiled call by default
([`colgen_loop`][cmdp_rl.kernels.colgen_loop.colgen_loop], see [`elp_dense`][cmdp_rl.planning.elp_dense]),
with this loop as its fallback.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.evaluation.mixture import action_dtype
from cmdp_rl.kernels.colgen_loop import mix_returns
from cmdp_rl.planning.lp import FEAS_TOL
from cmdp_rl.planning.master import solve_master
from cmdp_rl.planning.pool import PoolBase
from cmdp_rl.planning.result import PlanResult, SolverError
from cmdp_rl.planning.thresholds import on_scale, top_unneeded
from cmdp_rl.plumbing.validation import CMDPInputError, as_float, plain

Array = NDArray[np.float64]
Mask = NDArray[np.bool_]

#: default certified gap per step of horizon: a plan is ``"optimal"`` when ``gap <= GAP_TOL_PER_STEP * H``
#: (the exact planner's default ``gap_tol``; the extended LP's own stopping rule is tighter)
GAP_TOL_PER_STEP = 1e-9

#: phase 1 stops once the worst excess is known to within this (absolute, cost units)
PHASE1_TOL = 1e-10
#: weight of the best bound's multipliers in the stabilized pricing point of phase 2
SMOOTHING = 0.5
#: a column improves the master when its reduced cost exceeds this (relative to 1 + |objective|)
PRICE_TOL = 1e-12

#: ``callback(iteration, gap)`` after every master iteration (``gap`` is ``inf`` in phase 1)
Callback = Callable[[int, float], None]


@dataclass
class Outcome:
    """What a column-generation loop found ([`run_colgen`][cmdp_rl.planning.colgen.run_colgen], or the
    dense extended LP's compiled loop): ``status`` (``"optimal"``, ``"infeasible"``;
    [`certified`][cmdp_rl.planning.colgen.certified] says ``"uncertified"`` when the plan's gap exceeds
    ``gap_tol``), the master weights ``w`` over the pool, the multipliers ``lam`` of the best bound,
    the loop's ``gap`` and ``bound`` (``bound >= V*``), the worst excess ``t`` (``nan`` where the loop
    does not report it) and the iterations."""

    status: str
    w: Array
    lam: Array
    gap: float
    bound: float
    t: float
    iterations: int
    gap_tol: float = math.inf


def run_phase1(
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
    is stabilized as in ``run_phase2`` (the smoothed multipliers stay on the simplex), around
    ``center`` (multipliers on the simplex expected near the optimum, e.g. those of a related
    solve) until a first bound is found. Only the constraints ``rows`` (all when ``None``) enter the
    master (the others must have an excess that never exceeds the minimum, e.g. slack ones)."""
    lower, cert = -np.inf, np.full(pool.N, 1.0 / pool.N) if center is None else center
    known = pool.best_cut(0, c_bar)  # the sweeps of earlier solves on this pool bound t* too
    if known is not None and center is None:
        lower, cert = known
    for it in range(1, max_iter + 1):
        w, t, lam, nu = solve_master(pool.costs(), pool.values(), c_bar, True, rows)
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


def run_phase2(
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
        w, obj, lam, nu = solve_master(pool.costs(), pool.values(), b, False, rows)
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
) -> Outcome:
    """Column generation on ``pool`` for the thresholds ``c_bar (N,)`` (the pool keeps its columns,
    so later calls with other thresholds start warm).

    The thresholds are first brought onto the range of the achievable costs
    ([`on_scale`][cmdp_rl.planning.thresholds.on_scale]): a constraint no policy can violate is
    slack (out of the master, multiplier 0), one no policy can meet makes the problem infeasible
    with the worst excess minimized on numbers of the costs' scale. The outcome is ``"optimal"``
    when the certified gap is at most ``gap_tol``, ``"uncertified"`` when the loop ended without
    closing it (rounding, or ``max_iter`` rounds), ``"infeasible"`` when the minimum worst excess
    exceeds ``FEAS_TOL``."""
    pool.seed(max_costs=False)
    N = pool.N
    assert pool.min_costs is not None
    hi = pool.max_costs
    if hi is None:  # the columns' own costs do when every threshold lies below them (one sweep each less)
        hi = pool.costs().max(axis=0)
        if not top_unneeded(c_bar, pool.min_costs, hi):
            pool.seed()
            hi = pool.max_costs
    assert hi is not None
    th = on_scale(c_bar, pool.min_costs, hi)
    if not th.active.any():  # no constraint binds: the unconstrained optimum (a seed column)
        w = np.zeros(len(pool.stats))
        w[int(np.argmax(pool.values()))] = 1.0
        bound = float(pool.unconstrained or 0.0)
        return Outcome("optimal", w, np.zeros(N), 0.0, bound, 0.0, 0, gap_tol)
    b, rows = th.b, th.active
    excess0 = float(np.min(np.max((pool.costs() - b)[:, rows], axis=1)))
    t, it1 = 0.0, 0
    if excess0 > 0.0:
        t, w, lam, it1 = run_phase1(pool, b, max_iter, callback, rows=rows)
        if th.infeasible:  # constraint `worst` alone: max_pi (c_bar_j - C_j(pi)) = c_bar_j - lo_j < -FEAS_TOL
            lam = np.zeros(N)
            lam[th.worst] = 1.0
        if th.infeasible or t > FEAS_TOL:
            return Outcome("infeasible", w, lam, math.nan, math.nan, t + th.shift, it1)
        t = max(t, 0.0)
    w, lam, gap, bound, it2 = run_phase2(pool, b + t, gap_tol, max_iter, callback, it1, rows)
    return Outcome("optimal", w, lam, gap, bound, t, it1 + it2, gap_tol)


def certified(out: Outcome, value: float) -> tuple[str, float]:
    """The certificate of a plan of value ``value`` mixed from ``out``'s weights, the one rule of
    every column-generation loop: ``(status, gap)`` with ``gap = max(bound - value, 0)`` (weak duality:
    ``bound >= V*``) and ``status`` ``"optimal"`` when ``gap <= gap_tol``, ``"uncertified"`` above;
    an infeasible outcome keeps its status, with ``gap`` ``nan``."""
    if out.status != "optimal":
        return out.status, math.nan
    gap = max(out.bound - value, 0.0)
    return ("uncertified" if gap > out.gap_tol else "optimal"), gap


def plan_of(pool: PoolBase, out: Outcome, c_bar: Array) -> PlanResult:
    """The plan of an outcome: the columns with positive weight (``(K, H, S)`` in the smallest
    unsigned type, [`action_dtype`][cmdp_rl.evaluation.mixture.action_dtype]; a stationary pool's
    ``(K, S)``), their normalized weights and the mixed value and costs
    ([`mix_returns`][cmdp_rl.kernels.colgen_loop.mix_returns]). The Markov tables are the pool's
    ([`PoolBase.markov_tables`][cmdp_rl.planning.pool.PoolBase.markov_tables]): the model's pools mix
    them on first use, so nothing of size ``H S A`` is built here, nor the columns' distributions."""
    w = np.maximum(out.w, 0.0)
    idx = np.flatnonzero(w > 0.0)
    acts = np.stack([pool.actions[j] for j in idx]).astype(action_dtype(pool.A))
    values, costs = pool.values()[idx], pool.costs()[idx]
    wn, value, mixed = mix_returns(w[idx], values, costs)
    status, gap = certified(out, value)
    return PlanResult(
        status=status,
        value=float(value),
        costs=mixed,
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
        tables=pool.markov_tables(acts, wn, idx),
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


__all__ = [
    "GAP_TOL_PER_STEP",
    "Outcome",
    "certified",
    "check_gap_tol",
    "plan_of",
    "run_colgen",
    "run_phase1",
    "run_phase2",
]
