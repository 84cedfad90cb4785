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

import highspy
import numpy as np
from numpy.typing import NDArray

from ._kernels import one_row_master
from .evi import Box, Column, IntArray, column_of, evi, greedy_rows, make_column
from .evi import min_costs as optimistic_min_costs
from .result import REACH_TOL, PlanResult, SolverError, policy_from_occupancy

Array = NDArray[np.float64]

#: reduced value below which pricing stops (relative to 1 + |objective|)
PRICE_TOL = 1e-10
#: worst excess at or below which the extended LP counts as feasible (HiGHS' primal tolerance)
FEAS_TOL = 1e-7
_INF = highspy.kHighsInf


class ELPWorkspace:
    """The solver state of column generation: one HiGHS object for the restricted master LP.

    A solve, or a learner that re-plans many times, owns one (creating it costs about
    0.1 ms, a tenth of a warm re-plan); :func:`solve_colgen` makes a fresh one when none
    is given. It is not thread-safe: never share one between threads (each thread, each
    learner, each solve gets its own), which is why there is no process-wide instance.
    """

    def __init__(self) -> None:
        h = self.highs = highspy.Highs()  # type: ignore[no-untyped-call]
        h.setOptionValue("output_flag", False)
        # a few rows and columns: presolve and parallelism only add overhead
        h.setOptionValue("presolve", "off")
        h.setOptionValue("solver", "simplex")
        h.setOptionValue("threads", 1)
        h.setOptionValue("primal_feasibility_tolerance", 1e-10)
        h.setOptionValue("dual_feasibility_tolerance", 1e-10)

    def __repr__(self) -> str:
        return "ELPWorkspace(HiGHS master LP)"


class _Master:
    """The restricted master LP in HiGHS, kept in memory so added columns re-solve warm.

    Rows: ``N`` cost rows ``sum_j w_j C_{i,j} (- t) <= c_bar_i`` and the convexity
    row ``sum_j w_j = 1``. Column 0 is the phase-1 excess ``t`` (objective
    ``max -t``); phase 2 fixes ``t`` (at 0, or at a worst excess within
    :data:`FEAS_TOL`) and maximizes ``sum_j w_j V_j``. With the maximization sense
    HiGHS' row duals are ``lambda >= 0`` and ``nu`` directly.
    """

    def __init__(self, workspace: ELPWorkspace, c_bar: Array, phase1: bool, t_fixed: float = 0.0) -> None:
        h = self.h = workspace.highs
        h.clearModel()
        h.changeObjectiveSense(highspy.ObjSense.kMaximize)
        self.N = N = c_bar.size
        self.c_bar = c_bar
        h.addRows(
            N + 1,
            np.concatenate([np.full(N, -_INF), [1.0]]),
            np.concatenate([c_bar, [1.0]]),
            0,
            np.zeros(0, np.int32),
            np.zeros(0, np.int32),
            np.zeros(0),
        )
        self.phase1 = phase1
        self.K = 0
        self.values: list[float] = []
        t_lo, t_up = (-_INF, _INF) if phase1 else (t_fixed, t_fixed)
        h.addCol(-1.0 if phase1 else 0.0, t_lo, t_up, N, np.arange(N, dtype=np.int32), -np.ones(N))
        self._rows = np.arange(N + 1, dtype=np.int32)

    def add(self, col: Column) -> None:
        """Append a column ``(V_j, C_j)``."""
        self.values.append(col.value)
        self.h.addCol(
            0.0 if self.phase1 else col.value,
            0.0,
            _INF,
            self.N + 1,
            self._rows,
            np.concatenate([col.costs, [1.0]]),
        )
        self.K += 1

    def to_phase2(self, t: float) -> None:
        """Fix ``t = max(t, 0)`` (0, or a feasibility-tolerance excess) and switch the
        objective to the columns' values (basis kept)."""
        self.phase1 = False
        self.h.changeColBounds(0, max(t, 0.0), max(t, 0.0))
        self.h.changeColCost(0, 0.0)
        idx = np.arange(1, self.K + 1, dtype=np.int32)
        self.h.changeColsCost(self.K, idx, np.asarray(self.values))

    def solve(self) -> tuple[Array, float, Array, float]:
        """``(w (K,), objective, lambda (N,), nu)``; phase 1's objective is the excess ``t``."""
        h = self.h
        h.run()
        status = h.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            h.clearSolver()  # a warm basis can stall on near-parallel columns: retry cold
            h.run()
            status = h.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            raise SolverError(f"restricted master LP: HiGHS model status {h.modelStatusToString(status)}")
        sol = h.getSolution()
        x = np.asarray(sol.col_value)
        duals = np.asarray(sol.row_dual)
        obj = float(h.getInfo().objective_function_value)
        return x[1:], (-obj if self.phase1 else obj), np.maximum(duals[: self.N], 0.0), float(duals[-1])


class _OneRowMaster:
    """The restricted master LP with one cost row, solved exactly in closed form (no LP solver).

    ``max v.w  s.t.  c.w <= b, sum w = 1, w >= 0`` (``b = c_bar + t`` with ``t`` fixed, phase 2
    only) has a basic optimum with at most two positive weights: the best feasible column, or
    the best mix of a column below ``b`` with one above it, on the line ``c.w = b``. Its duals
    are the slope ``lambda >= 0`` of the upper concave envelope of the points ``(c_j, v_j)`` at
    ``b`` and ``nu = v - lambda c`` on that line (every column lies on or below it). Same
    interface as :class:`_Master`; tested against HiGHS on thousands of random masters.
    """

    phase1 = False

    def __init__(self, c_bar: Array, t_fixed: float = 0.0) -> None:
        self.c_bar = c_bar
        self.b = float(c_bar[0]) + max(t_fixed, 0.0)
        self.values: list[float] = []
        self.costs: list[float] = []

    def add(self, col: Column) -> None:
        """Append a column ``(V_j, C_j)``."""
        self.values.append(col.value)
        self.costs.append(float(col.costs[0]))

    def solve(self) -> tuple[Array, float, Array, float]:
        """``(w (K,), objective, lambda (1,), nu)``."""
        w, obj, lam, nu = solve_one_row_master(np.asarray(self.values), np.asarray(self.costs), self.b)
        return w, obj, np.array([lam]), nu


def solve_one_row_master(
    v: Array, c: Array, b: float, tol: float = FEAS_TOL * 1e-3
) -> tuple[Array, float, float, float]:
    """Exact optimum of ``max v.w s.t. c.w <= b, sum w = 1, w >= 0`` and its duals.

    Args:
        v: ``(K,)`` column values.
        c: ``(K,)`` column costs.
        b: the threshold.
        tol: a column with ``c_j <= b + tol`` counts as feasible (HiGHS' primal tolerance
            for the master, ``1e-10``).

    Returns:
        ``(w (K,), objective, lambda >= 0, nu)`` with ``v_k - lambda c_k <= nu`` for every
        column and ``nu + lambda b`` equal to the objective up to ``tol``.

    Raises:
        SolverError: no column is feasible (the caller runs phase 1 first).
    """
    w, obj, lam, nu, feasible = one_row_master(
        np.ascontiguousarray(v, dtype=np.float64), np.ascontiguousarray(c, dtype=np.float64), float(b), float(tol)
    )
    if not feasible:
        raise SolverError("restricted master LP: no column meets the threshold (phase 1 should have run)")
    return w, float(obj), float(lam), float(nu)


class _Pool:
    """The columns of one solve, de-duplicated, mirrored into the master LP."""

    def __init__(self, box: Box, r: Array, c: Array, s0: int, workspace: ELPWorkspace | None) -> None:
        self.box, self.r, self.c, self.s0 = box, r, c, s0
        self._workspace = workspace
        self.columns: list[Column] = []
        self._keys: set[bytes] = set()
        self.master: _Master | _OneRowMaster | None = None

    def add(self, actions: IntArray, order: IntArray, trusted: bool = True) -> bool:
        """Add the column ``(actions, order)`` unless the pool has it; ``trusted=False`` checks
        the arrays first (warm-start columns from outside)."""
        make = column_of if trusted else make_column
        col = make(self.box, actions, order, self.r, self.c, self.s0)
        if col.key() in self._keys:
            return False
        self._keys.add(col.key())
        self.columns.append(col)
        if self.master is not None:
            self.master.add(col)
        return True

    def workspace(self) -> ELPWorkspace:
        """The HiGHS solver state (created on first use: a one-constraint solve never needs it)."""
        if self._workspace is None:
            self._workspace = ELPWorkspace()
        return self._workspace

    def start_master(self, c_bar: Array, phase1: bool, t_fixed: float = 0.0) -> _Master | _OneRowMaster:
        """The restricted master over the pool: in closed form for one constraint in phase 2,
        else in HiGHS (the workspace's solver)."""
        master: _Master | _OneRowMaster
        if c_bar.size == 1 and not phase1:
            master = _OneRowMaster(c_bar, t_fixed)
        else:
            master = _Master(self.workspace(), c_bar, phase1, t_fixed)
        self.master = master
        for col in self.columns:
            master.add(col)
        return master

    def values(self) -> Array:
        return np.array([col.value for col in self.columns])

    def costs(self) -> Array:
        N = self.c.shape[0]
        out: Array = np.array([col.costs for col in self.columns]).reshape(len(self.columns), N).T
        return out


def _price(pool: _Pool, weight_r: float, lam: Array, H: int) -> tuple[float, IntArray, IntArray]:
    """EVI on ``weight_r * r - sum_i lam_i c_i``: best value, actions, order."""
    reward = weight_r * pool.r
    if lam.size:
        reward = reward - (lam @ pool.c.reshape(lam.size, -1)).reshape(pool.r.shape)
    V, actions, order = evi(pool.box, reward, H)
    return float(V[0, pool.s0]), actions, order


def _generate(pool: _Pool, master: _Master | _OneRowMaster, H: int, max_iter: int) -> tuple[Array, float, int, Array]:
    """Alternate master and pricing until the optimum is certified.

    Returns ``(w, objective, iterations, lambda)``.

    Pricing is EVI on a Lagrangian reward: ``r - lambda @ c`` in phase 2,
    ``-lambda @ c`` in phase 1. Every pricing value is also a Lagrangian bound on
    the full extended LP (phase 2: ``z* <= best + lambda @ c_bar``; phase 1:
    ``t* >= -best - lambda @ c_bar``), so the loop stops as soon as the best bound
    so far meets the master's objective, not only when no column prices out:
    this cuts the degenerate tail of column generation without losing exactness.
    Phase 1 also stops once the master is feasible (``t <= 0``).
    """
    bound = np.inf if not master.phase1 else -np.inf
    priced: Array | None = None
    for it in range(1, max_iter + 1):
        w, obj, lam, nu = master.solve()
        tol = PRICE_TOL * (1.0 + abs(obj))
        if (master.phase1 and obj <= 0.0) or (priced is not None and np.array_equal(lam, priced)):
            # same duals as the last pricing: EVI would return the column just added,
            # whose reduced value is now <= 0, so the master is optimal
            return w, obj, it, lam
        priced = lam
        best, actions, order = _price(pool, 0.0 if master.phase1 else 1.0, lam, H)
        lag = float(lam @ master.c_bar)
        if master.phase1:
            bound = max(bound, -best - lag)
            done = obj - bound <= tol
        else:
            bound = min(bound, best + lag)
            done = bound - obj <= tol
        if done or best <= nu + tol or not pool.add(actions, order):
            return w, obj, it, lam
    raise SolverError(f"column generation did not converge in {max_iter} iterations ({len(pool.columns)} columns)")


def _assemble(pool: _Pool, w: Array, H: int, A: int, want_kernel: bool) -> tuple[Array, Array | None]:
    """Mixed occupancy ``mu (H, S, A)`` and kernel ``(H, S, A, S)`` of the columns weighted by ``w``.

    The kernel at ``(h, s, a)`` is ``q / sum_y q`` of the mixed extended occupancy
    ``q = sum_j w_j q_j``; where ``(h, s, a)`` is unreached it is the greedy-fill
    row of the heaviest column's order (any plausible row would do).
    """
    box = pool.box
    S = box.S
    mu = np.zeros((H, S, A))
    q = np.zeros((H, S, A, S)) if want_kernel else None
    hh, ss = np.arange(H)[:, None], np.arange(S)[None, :]
    for wj, col in zip(w, pool.columns, strict=True):
        if wj <= 0.0:
            continue
        mass = wj * col.dist  # (H, S)
        mu[hh, ss, col.actions] += mass
        if q is not None:
            q[hh, ss, col.actions] += mass[..., None] * col.rows(box)
    if q is None:
        return mu, None
    kernel = greedy_rows(box, pool.columns[int(np.argmax(w))].order)  # fallback rows
    reached = mu > REACH_TOL
    kernel[reached] = q[reached] / mu[reached][:, None]
    return mu, kernel


def solve_colgen(
    box: Box,
    r: Array,
    c: Array,
    c_bar: Array,
    s0: int,
    H: int,
    warm_start: Sequence[tuple[IntArray, IntArray]] = (),
    warm_duals: Array | None = None,
    max_iter: int = 1000,
    want_kernel: bool = True,
    workspace: ELPWorkspace | None = None,
    trusted_warm: bool = False,
) -> PlanResult:
    """Solve the extended LP over the plausible set ``box`` by column generation.

    Args:
        box: plausible-set bounds (see :class:`.evi.Box`).
        r: ``(S, A)`` rewards.
        c: ``(N, S, A)`` costs.
        c_bar: ``(N,)`` thresholds.
        s0: initial state.
        H: horizon.
        warm_start: ``(actions, order)`` pairs of earlier columns (e.g. the previous
            episode's ``result.info["columns"]``); they are re-evaluated under ``box``.
        warm_duals: ``(N,)`` cost multipliers of an earlier solve (``info["duals"]``):
            the column they price is added up front, so the master starts near the
            previous optimal face instead of rediscovering the multipliers.
        max_iter: cap on master/pricing rounds per phase.
        want_kernel: build the ``(H, S, A, S)`` optimistic kernel (learners that only
            need the policy pass ``False``; ``kernel`` is then ``None``).
        workspace: the master LP's solver state to reuse (a learner keeps one for all
            its re-plans); ``None`` creates a fresh one for this solve.
        trusted_warm: the ``warm_start`` columns come from an earlier result of this function
            (contiguous int64, in range): skip their checks.

    Returns:
        A :class:`PlanResult` with ``method="fast"``, the optimistic ``kernel``
        and ``info["columns"]`` (the columns with positive weight, for warm starts).
    """
    _S, A = r.shape
    N = c.shape[0]
    r, c = np.ascontiguousarray(r, dtype=np.float64), np.ascontiguousarray(c, dtype=np.float64)
    pool = _Pool(box, r, c, s0, workspace)
    for actions, order in warm_start:
        pool.add(np.asarray(actions), np.asarray(order), trusted=trusted_warm)
    if N == 0 or not pool.columns:  # otherwise the first pricing round finds it if it helps
        _, actions, order = _price(pool, 1.0, np.zeros(N), H)
        pool.add(actions, order)
    if N and warm_duals is not None and np.any(warm_duals > 0):
        _, actions, order = _price(pool, 1.0, np.asarray(warm_duals, dtype=float), H)
        pool.add(actions, order)
    iters, status, lam = 0, "optimal", np.zeros(N)
    if N == 0:  # the unconstrained optimistic optimum is the EVI column itself
        w = np.zeros(len(pool.columns))
        w[int(np.argmax(pool.values()))] = 1.0
    else:
        # the smallest worst excess of a single column: within FEAS_TOL the problem counts
        # as feasible, and the master then fixes t at that excess (not at 0, which the
        # master's tighter tolerance would declare infeasible a hair below the threshold)
        excess0 = float(np.min(np.max(pool.costs() - c_bar[:, None], axis=0)))
        feasible_now = excess0 <= FEAS_TOL
        if not feasible_now:  # phase 1, seeded with the column of least total cost
            _, actions, order = _price(pool, 0.0, np.ones(N), H)
            pool.add(actions, order)
        master = pool.start_master(c_bar, phase1=not feasible_now, t_fixed=max(excess0, 0.0))
        if not feasible_now:
            w, excess, iters, lam = _generate(pool, master, H, max_iter)
            if excess > FEAS_TOL:
                status = "infeasible"
            else:
                assert isinstance(master, _Master)  # phase 1 always runs in HiGHS
                master.to_phase2(excess)
        if status == "optimal":
            w, _, it2, lam = _generate(pool, master, H, max_iter)
            iters += it2
    w = np.maximum(w, 0.0)
    w /= w.sum()
    mu, kernel = _assemble(pool, w, H, A, want_kernel)
    value = float(w @ pool.values())
    costs = pool.costs() @ w
    min_costs = None
    if status == "infeasible":
        min_costs = optimistic_min_costs(box, c, s0, H)
    active = [(col.actions, col.order) for wj, col in zip(w, pool.columns, strict=True) if wj > 0]
    return PlanResult(
        status=status,
        value=value,
        costs=costs,
        policy=policy_from_occupancy(mu),
        occupancy=mu,
        kernel=kernel,
        min_costs=min_costs,
        max_excess=float(np.max(costs - c_bar, initial=-np.inf)) if N else 0.0,
        method="fast",
        iterations=iters,
        info={
            "columns": active,
            "duals": lam if status == "optimal" else None,
            "n_columns": len(pool.columns),
        },
    )
