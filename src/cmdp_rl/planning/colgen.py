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
from typing import Any, NamedTuple

import highspy
import numpy as np
from numpy.typing import NDArray

from ..validation import CMDPInputError, plain
from ._kernels import (
    LOOP_INFEASIBLE,
    LOOP_MASTER_FAILED,
    LOOP_MAX_ITER,
    MASTER_OK,
    colgen_loop,
    eval_columns,
    lagrangian_sweep,
    master_lp,
    mix_occupancy,
)
from .evi import Box, IntArray, greedy_rows
from .evi import min_costs as optimistic_min_costs
from .result import REACH_TOL, PlanResult, SolverError

Array = NDArray[np.float64]

#: reduced value below which pricing stops (relative to 1 + |objective|)
PRICE_TOL = 1e-10
#: worst excess at or below which the extended LP counts as feasible (HiGHS' primal tolerance)
FEAS_TOL = 1e-7
_INF = highspy.kHighsInf


class ELPWorkspace:
    """The solver state of column generation kept between re-plans.

    The restricted master LP is solved by a dense exact simplex
    (:func:`._kernels.master_lp`); the workspace holds the HiGHS object of the
    fallback used when that simplex cannot certify its answer (created on first use,
    so a workspace costs nothing until then). A learner that re-plans many times owns
    one; :func:`solve_colgen` makes a fresh one when none is given. It is not
    thread-safe: never share one between threads (each thread, each learner, each
    solve gets its own), which is why there is no process-wide instance.
    """

    def __init__(self) -> None:
        self._highs: highspy.Highs | None = None

    @property
    def highs(self) -> highspy.Highs:
        """The HiGHS object of the fallback master LP (created on first use)."""
        if self._highs is None:
            h = self._highs = highspy.Highs()  # type: ignore[no-untyped-call]
            h.setOptionValue("output_flag", False)
            # a few rows and columns: presolve and parallelism only add overhead
            h.setOptionValue("presolve", "off")
            h.setOptionValue("solver", "simplex")
            h.setOptionValue("threads", 1)
            h.setOptionValue("primal_feasibility_tolerance", 1e-10)
            h.setOptionValue("dual_feasibility_tolerance", 1e-10)
        return self._highs

    def __repr__(self) -> str:
        return "ELPWorkspace(dense master LP, HiGHS fallback)"


def _highs_master(
    workspace: ELPWorkspace, costs: Array, values: Array, b: Array, phase1: bool
) -> tuple[Array, float, Array, float]:
    """The restricted master LP in HiGHS, built in one pass: the fallback of :func:`._kernels.master_lp`.

    Rows: ``N`` cost rows ``sum_j w_j C_{i,j} (- t) <= b_i`` and the convexity row
    ``sum_j w_j = 1``. Column 0 is the phase-1 excess ``t`` (objective ``max -t``,
    fixed at 0 in phase 2, where ``b`` already holds the tolerated excess). With the
    maximization sense HiGHS' row duals are ``lambda >= 0`` and ``nu`` directly.
    Returns ``(w (K,), objective, lambda (N,), nu)``, the objective being
    ``max v.w`` (phase 2) or ``max -t`` (phase 1).
    """
    K, N = costs.shape
    h = workspace.highs
    h.clearModel()
    lp = highspy.HighsLp()
    lp.num_col_ = K + 1
    lp.num_row_ = N + 1
    lp.sense_ = highspy.ObjSense.kMaximize
    lp.col_cost_ = np.concatenate([[-1.0 if phase1 else 0.0], np.zeros(K) if phase1 else values])
    t_lo, t_up = (-_INF, _INF) if phase1 else (0.0, 0.0)
    lp.col_lower_ = np.concatenate([[t_lo], np.zeros(K)])
    lp.col_upper_ = np.concatenate([[t_up], np.full(K, _INF)])
    lp.row_lower_ = np.concatenate([np.full(N, -_INF), [1.0]])
    lp.row_upper_ = np.concatenate([b, [1.0]])
    # column-wise: t has -1 in the N cost rows, column j has (C_j, 1)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.concatenate([[0], N + np.arange(K + 1) * (N + 1)]).astype(np.int32)
    lp.a_matrix_.index_ = np.concatenate([np.arange(N), np.tile(np.arange(N + 1), K)]).astype(np.int32)
    lp.a_matrix_.value_ = np.concatenate([-np.ones(N), np.column_stack([costs, np.ones(K)]).ravel()])
    h.passModel(lp)
    h.run()
    status = h.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal:
        raise SolverError(f"restricted master LP: HiGHS model status {h.modelStatusToString(status)}")
    sol = h.getSolution()
    x = np.asarray(sol.col_value)
    duals = np.asarray(sol.row_dual)
    obj = float(h.getInfo().objective_function_value)
    return x[1:], obj, np.maximum(duals[:N], 0.0), float(duals[-1])


class _Pool:
    """The columns of one solve, de-duplicated, stored as stacked arrays.

    Column ``j`` is the vertex ``(actions[j], orders[j])`` (each ``(H, S)``) with its state
    distribution ``dist[j]``, kernel rows ``rows[j]`` (only when the kernel is wanted),
    value ``values[j]`` and costs ``costs[j] (N,)``.
    """

    def __init__(self, box: Box, r: Array, c: Array, s0: int, H: int, want_rows: bool) -> None:
        self.box, self.r, self.c, self.s0, self.H = box, r, c, s0, H
        self.want_rows = want_rows
        S, N = box.S, c.shape[0]
        cap = 16
        self.K = 0
        self.actions = np.empty((cap, H, S), dtype=np.int64)
        self.orders = np.empty((cap, H, S), dtype=np.int64)
        self.dist = np.empty((cap, H, S))
        self.rows = np.empty((cap, H, S, S)) if want_rows else np.empty((0, 0, 0, 0))
        self._values = np.empty(cap)
        self._costs = np.empty((cap, N))
        self._keys: set[bytes] = set()

    def _grow(self, need: int) -> None:
        cap = self._values.size
        if need <= cap:
            return
        cap = max(need, 2 * cap)

        def grown(a: NDArray[Any]) -> NDArray[Any]:
            out = np.empty((cap, *a.shape[1:]), dtype=a.dtype)
            out[: self.K] = a[: self.K]
            return out

        self.actions, self.orders, self.dist = grown(self.actions), grown(self.orders), grown(self.dist)
        if self.want_rows:
            self.rows = grown(self.rows)
        self._values, self._costs = grown(self._values), grown(self._costs)

    def add(self, actions: IntArray, orders: IntArray) -> int:
        """Evaluate the new vertices among ``actions``/``orders`` (``(k, H, S)``, checked)
        under the box in one compiled pass and append them; returns how many were new."""
        keep = []
        for j in range(actions.shape[0]):
            key = actions[j].tobytes() + orders[j].tobytes()
            if key not in self._keys:
                self._keys.add(key)
                keep.append(j)
        if not keep:
            return 0
        if len(keep) < actions.shape[0]:
            actions, orders = actions[keep], orders[keep]
        box = self.box
        dist, rows, values, costs = eval_columns(
            box.lower, box.room, box.spare, actions, orders, self.r, self.c, self.s0, self.want_rows
        )
        k0, k1 = self.K, self.K + len(keep)
        self._grow(k1)
        self.actions[k0:k1], self.orders[k0:k1], self.dist[k0:k1] = actions, orders, dist
        if self.want_rows:
            self.rows[k0:k1] = rows
        self._values[k0:k1], self._costs[k0:k1] = values, costs
        self.K = k1
        return len(keep)

    def values(self) -> Array:
        """``(K,)`` the columns' values."""
        return self._values[: self.K]

    def costs(self) -> Array:
        """``(K, N)`` the columns' costs (one row per column)."""
        return self._costs[: self.K]


class _Master:
    """The restricted master LP over the pool's columns.

    Phase 1 (``phase1=True``) minimizes the worst excess ``t``
    (``sum_j w_j C_{i,j} - t <= c_bar_i``); phase 2 fixes ``t`` (at 0, or at a worst
    excess within :data:`FEAS_TOL`) and maximizes ``sum_j w_j V_j``. Every solve is
    exact and from scratch (a few microseconds for these sizes) by
    :func:`._kernels.master_lp`; when it cannot certify its basis, HiGHS solves it.
    """

    def __init__(self, pool: _Pool, workspace: ELPWorkspace, c_bar: Array, phase1: bool, t_fixed: float = 0.0) -> None:
        self.pool, self.workspace = pool, workspace
        self.N = c_bar.size
        self.c_bar = c_bar
        self.phase1 = phase1
        self.t = t_fixed

    @property
    def b(self) -> Array:
        """The thresholds of the cost rows: ``c_bar`` (phase 1, with ``- t``) or ``c_bar + t`` (phase 2)."""
        return self.c_bar if self.phase1 else self.c_bar + self.t

    def to_phase2(self, t: float) -> None:
        """Fix ``t = max(t, 0)`` (0, or a feasibility-tolerance excess) and switch the
        objective to the columns' values."""
        self.phase1 = False
        self.t = max(t, 0.0)

    def solve(self) -> tuple[Array, float, Array, float]:
        """``(w (K,), objective, lambda (N,), nu)``; phase 1's objective is the excess ``t``."""
        pool, N = self.pool, self.N
        b = self.b
        w, obj, y, status = master_lp(pool.costs(), pool.values(), b, self.phase1)
        if status == MASTER_OK:
            lam, nu = np.maximum(y[:N], 0.0), float(y[N])
        else:
            w, obj, lam, nu = _highs_master(self.workspace, pool.costs(), pool.values(), b, self.phase1)
        return w, (-obj if self.phase1 else obj), lam, nu


def _price(pool: _Pool, weight_r: float, lam: Array) -> tuple[float, IntArray, IntArray]:
    """EVI on ``weight_r * r - sum_i lam_i c_i``: best value, actions, order."""
    box = pool.box
    V, actions, order = lagrangian_sweep(box.lower, box.room, box.spare, pool.r, pool.c, lam, weight_r, pool.H)
    return float(V[0, pool.s0]), actions, order


def _generate(pool: _Pool, master: _Master, max_iter: int) -> tuple[Array, float, int, Array]:
    """Alternate master and pricing until the optimum is certified.

    Returns ``(w, objective, iterations, lambda)``.

    Pricing is EVI on a Lagrangian reward: ``r - lambda @ c`` in phase 2,
    ``-lambda @ c`` in phase 1. Every pricing value is also a Lagrangian bound on
    the full extended LP (phase 2: ``z* <= best + lambda @ b`` with the master's
    thresholds ``b = c_bar + t``; phase 1: ``t* >= -best - lambda @ c_bar``), so
    the loop stops as soon as the best bound so far meets the master's objective, not only when no column prices out:
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
        best, actions, order = _price(pool, 0.0 if master.phase1 else 1.0, lam)
        lag = float(lam @ master.b)
        if master.phase1:
            bound = max(bound, -best - lag)
            done = obj - bound <= tol
        else:
            bound = min(bound, best + lag)
            done = bound - obj <= tol
        if done or best <= nu + tol or not pool.add(actions[None], order[None]):
            return w, obj, it, lam
    raise SolverError(f"column generation did not converge in {max_iter} iterations ({pool.K} columns)")


def _kernel(box: Box, cols: _Columns, w: Array, mu: Array) -> Array:
    """Kernel ``(H, S, A, S)`` of the columns weighted by ``w`` with occupancy ``mu``.

    The kernel at ``(h, s, a)`` is ``q / sum_y q`` of the mixed extended occupancy
    ``q = sum_j w_j q_j``; where ``(h, s, a)`` is unreached it is the greedy-fill
    row of the heaviest column's order (any plausible row would do).
    """
    H, S, A = mu.shape
    q = np.zeros((H, S, A, S))
    hh, ss = np.arange(H)[:, None], np.arange(S)[None, :]
    for j in np.flatnonzero(w > 0.0):
        mass = w[j] * cols.dist[j]  # (H, S)
        q[hh, ss, cols.actions[j]] += mass[..., None] * cols.rows[j]
    kernel = greedy_rows(box, cols.orders[int(np.argmax(w))])  # fallback rows
    reached = mu > REACH_TOL
    kernel[reached] = q[reached] / mu[reached][:, None]
    return kernel


def _steps(name: str, arrays: list[IntArray], H: int, S: int, hi: int) -> IntArray:
    """The ``(k, H, S)`` int64 stack of ``arrays``, each checked to be ``(H, S)`` with entries in ``[0, hi)``
    (one vectorized check for all warm columns before the compiled evaluation)."""
    for j, arr in enumerate(arrays):
        if arr.shape != (H, S):
            raise CMDPInputError(f"warm_start[{j}] {name}: expected shape {(H, S)}, got {arr.shape}")
    out = np.ascontiguousarray(arrays, dtype=np.int64).reshape(len(arrays), H, S)
    if out.size and (out.min() < 0 or out.max() >= hi):
        raise CMDPInputError(
            f"warm_start {name}: entries must lie in [0, {hi - 1}], got values in [{int(out.min())}, {int(out.max())}]"
        )
    return out


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
    compiled: bool = True,
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
            episode's ``result.info["columns"]``); they are re-evaluated under ``box``
            (all in one compiled pass).
        warm_duals: ``(N,)`` cost multipliers of an earlier solve (``info["duals"]``):
            the column they price is added up front, so the master starts near the
            previous optimal face instead of rediscovering the multipliers.
        max_iter: cap on master/pricing rounds per phase.
        want_kernel: build the ``(H, S, A, S)`` optimistic kernel (learners that only
            need the policy pass ``False``; ``kernel`` is then ``None``).
        workspace: the solver state to reuse (a learner keeps one for all its
            re-plans); ``None`` creates a fresh one for this solve.
        compiled: run the whole column generation in one compiled call
            (:func:`._kernels.colgen_loop`, the default); ``False`` runs the Python
            reference loop, which is also the fallback when a master LP needs HiGHS.
            Both take the same steps and give the same plan.

    Returns:
        A :class:`PlanResult` with ``method="fast"``, the optimistic ``kernel``
        and ``info["columns"]`` (the columns with positive weight, for warm starts).
    """
    if isinstance(H, bool) or not isinstance(H, (int, np.integer)) or H < 1:
        raise CMDPInputError(f"H: horizon must be an integer >= 1, got {plain(H)}")
    H = int(H)
    S, A = box.S, box.A
    r = np.ascontiguousarray(r, dtype=np.float64)
    c = np.ascontiguousarray(c, dtype=np.float64)
    if r.shape != (S, A) or c.ndim != 3 or c.shape[1:] != (S, A):
        raise CMDPInputError(f"r, c: expected shapes {(S, A)} and (N, {S}, {A}), got {r.shape} and {c.shape}")
    if not 0 <= s0 < S:
        raise CMDPInputError(f"s0: must be a state index in [0, {S - 1}], got {s0}")
    s0 = int(s0)
    N = c.shape[0]
    c_bar = np.ascontiguousarray(c_bar, dtype=np.float64)
    if c_bar.shape != (N,):
        raise CMDPInputError(f"c_bar: expected shape {(N,)}, got {c_bar.shape}")
    if warm_start:
        warm_a = _steps("actions", [np.asarray(a) for a, _ in warm_start], H, S, A)
        warm_o = _steps("order", [np.asarray(o) for _, o in warm_start], H, S, S)
    else:
        warm_a = warm_o = np.zeros((0, H, S), dtype=np.int64)
    duals = np.zeros(0) if warm_duals is None else np.ascontiguousarray(warm_duals, dtype=np.float64).reshape(-1)
    if duals.size not in (0, N):
        raise CMDPInputError(f"warm_duals: expected shape {(N,)}, got {duals.shape}")
    ws = workspace if workspace is not None else ELPWorkspace()
    if compiled:
        code, iters, w, lam, pa, po, pd, pr, pv, pc, k = colgen_loop(
            box.lower, box.room, box.spare, r, c, c_bar, s0, H, warm_a, warm_o, duals, max_iter, want_kernel,
            FEAS_TOL, PRICE_TOL,
        )  # fmt: skip
        K = int(k[0])
        if code == LOOP_MAX_ITER:
            raise SolverError(f"column generation did not converge in {max_iter} iterations ({K} columns)")
        if code != LOOP_MASTER_FAILED:
            cols = _Columns(pa[:K], po[:K], pd[:K], pr[:K], pv[:K], pc[:K])
            status = "infeasible" if code == LOOP_INFEASIBLE else "optimal"
            return _result(box, c, c_bar, s0, H, status, w, int(iters), lam, cols, want_kernel)
    status, w, iters, lam, cols = _solve_reference(
        box, r, c, c_bar, s0, H, warm_a, warm_o, duals, max_iter, want_kernel, ws
    )
    return _result(box, c, c_bar, s0, H, status, w, iters, lam, cols, want_kernel)


class _Columns(NamedTuple):
    """The pool of a finished solve: ``K`` columns as stacked arrays (see :class:`_Pool`)."""

    actions: IntArray
    orders: IntArray
    dist: Array
    rows: Array
    values: Array
    costs: Array


def _solve_reference(
    box: Box,
    r: Array,
    c: Array,
    c_bar: Array,
    s0: int,
    H: int,
    warm_a: IntArray,
    warm_o: IntArray,
    warm_duals: Array,
    max_iter: int,
    want_rows: bool,
    workspace: ELPWorkspace,
) -> tuple[str, Array, int, Array, _Columns]:
    """Column generation step by step in Python (the reference of :func:`._kernels.colgen_loop`;
    every master LP that :func:`._kernels.master_lp` cannot certify goes to HiGHS).

    Returns ``(status, w, iterations, lambda, columns)``.
    """
    N = c.shape[0]
    pool = _Pool(box, r, c, s0, H, want_rows)
    if warm_a.shape[0]:
        pool.add(warm_a, warm_o)
    if N == 0 or not pool.K:  # otherwise the first pricing round finds it if it helps
        _, actions, order = _price(pool, 1.0, np.zeros(N))
        pool.add(actions[None], order[None])
    if N and warm_duals.size and np.any(warm_duals > 0):
        _, actions, order = _price(pool, 1.0, warm_duals)
        pool.add(actions[None], order[None])
    iters, status, lam = 0, "optimal", np.zeros(N)
    if N == 0:  # the unconstrained optimistic optimum is the EVI column itself
        w = np.zeros(pool.K)
        w[int(np.argmax(pool.values()))] = 1.0
    else:
        # the smallest worst excess of a single column: within FEAS_TOL the problem counts
        # as feasible, and the master then fixes t at that excess (not at 0, which the
        # master's tighter tolerance would declare infeasible a hair below the threshold)
        excess0 = float(np.min(np.max(pool.costs() - c_bar, axis=1)))
        feasible_now = excess0 <= FEAS_TOL
        if not feasible_now:  # phase 1, seeded with the column of least total cost
            _, actions, order = _price(pool, 0.0, np.ones(N))
            pool.add(actions[None], order[None])
        master = _Master(pool, workspace, c_bar, phase1=not feasible_now, t_fixed=max(excess0, 0.0))
        if not feasible_now:
            w, excess, iters, lam = _generate(pool, master, max_iter)
            if excess > FEAS_TOL:
                status = "infeasible"
            else:
                master.to_phase2(excess)
        if status == "optimal":
            w, _, it2, lam = _generate(pool, master, max_iter)
            iters += it2
    K = pool.K
    cols = _Columns(pool.actions[:K], pool.orders[:K], pool.dist[:K], pool.rows[:K], pool.values(), pool.costs())
    return status, w, iters, lam, cols


def _result(
    box: Box,
    c: Array,
    c_bar: Array,
    s0: int,
    H: int,
    status: str,
    w: Array,
    iters: int,
    lam: Array,
    cols: _Columns,
    want_kernel: bool,
) -> PlanResult:
    """The plan of the master weights ``w`` over ``cols``: mixed occupancy, policy, kernel."""
    N = c.shape[0]
    w = np.maximum(w, 0.0)
    w /= w.sum()
    mu, policy = mix_occupancy(w, cols.actions, cols.dist, box.A, REACH_TOL)
    kernel = _kernel(box, cols, w, mu) if want_kernel else None
    value = float(w @ cols.values)
    costs = w @ cols.costs
    min_costs = None
    if status == "infeasible":
        min_costs = optimistic_min_costs(box, c, s0, H)
    active = [(cols.actions[j].copy(), cols.orders[j].copy()) for j in np.flatnonzero(w > 0.0)]
    return PlanResult(
        status=status,
        value=value,
        costs=costs,
        policy=policy,
        occupancy=mu,
        kernel=kernel,
        min_costs=min_costs,
        max_excess=float(np.max(costs - c_bar, initial=-np.inf)) if N else 0.0,
        method="fast",
        iterations=iters,
        info={
            "columns": active,
            "duals": lam if status == "optimal" else None,
            "n_columns": w.size,
        },
    )
