"""The extended LP solved exactly by column generation over extended policies (see the docs page 'How it works').

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

The extended LP is one more pool of the shared loop,
[`run_colgen`][cmdp_rl.planning.colgen.run_colgen] (the loop of every LP the library solves by
columns), with [`DenseBoxPool`][cmdp_rl.planning.elp_dense.DenseBoxPool] as its pool:
``ELPWorkspace("shared")``. The learners re-plan every episode, so by default
(``ELPWorkspace("dense")``) the dense layout runs the same phases in one compiled call instead,
[`colgen_loop`][cmdp_rl.kernels.colgen_loop.colgen_loop] (pool, pricing sweeps, master LP by an
exact dense simplex, stopping rules), which Online-CRL's compiled batches also call; the shared
loop is its fallback when its master LP gives up. Both end in the shared
[`Outcome`][cmdp_rl.planning.colgen.Outcome] and certificate
([`certified`][cmdp_rl.planning.colgen.certified]) and reach the same optimum; where the optimum
is not unique (tied columns) they may return different optimal plans: the shared loop's
stabilized pricing takes other steps than the compiled loop's plain duals, whose plans the
recorded learning curves rest on.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import NamedTuple, Protocol

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.confidence.box import Box, Column, IntArray, column_of, evi, greedy_rows
from cmdp_rl.confidence.box import min_costs as optimistic_min_costs
from cmdp_rl.evaluation.mixture import action_dtype
from cmdp_rl.kernels.colgen_loop import LOOP_FALLBACK, LOOP_FULL, LOOP_INFEASIBLE, LOOP_MAX_ITER, colgen_loop, mix_plan
from cmdp_rl.kernels.evi import column_rows
from cmdp_rl.model.actions import Mask, check_actions, full_mask, restrict_policy
from cmdp_rl.planning.colgen import GAP_TOL_PER_STEP as GAP_TOL_PER_STEP
from cmdp_rl.planning.colgen import Outcome, certified, run_colgen
from cmdp_rl.planning.lp import FEAS_TOL as FEAS_TOL
from cmdp_rl.planning.pool import ColumnStat, PoolBase
from cmdp_rl.planning.result import REACH_TOL, PlanResult, SolverError
from cmdp_rl.planning.thresholds import on_scale, trivial_range
from cmdp_rl.plumbing.threads import apply_threads
from cmdp_rl.plumbing.validation import CMDPInputError, check_choice, plain

Array = NDArray[np.float64]

#: reduced value below which pricing stops (relative to 1 + |objective|)
PRICE_TOL = 1e-10
#: the master-LP solvers of ``ELPWorkspace``
MASTERS = ("dense", "shared")


class KnownArrays(Protocol):
    """What a re-plan needs of the problem ([`KnownParts`][cmdp_rl.model.cmdp.KnownParts] is one):
    ``r (S, A)``, ``c (N, S, A)``, ``c_bar (N,)`` contiguous float64, ``s0`` and ``H``."""

    @property
    def r(self) -> Array: ...
    @property
    def c(self) -> Array: ...
    @property
    def c_bar(self) -> Array: ...
    @property
    def s0(self) -> int: ...
    @property
    def H(self) -> int: ...
    @property
    def actions(self) -> Mask | None: ...


class ELPWorkspace:
    """The choice of loop for a learner's re-plans (a learner keeps one for all its re-plans).

    Args:
        master: ``"dense"`` (default): the whole column generation runs in one compiled
            call ([`colgen_loop`][cmdp_rl.kernels.colgen_loop.colgen_loop]) whose master LP is an exact dense
            simplex ([`master_lp`][cmdp_rl.kernels.master_lp.master_lp]), the shared loop only as its
            fallback; ``"shared"``: the shared loop ([`run_colgen`][cmdp_rl.planning.colgen.run_colgen])
            on a [`DenseBoxPool`][cmdp_rl.planning.elp_dense.DenseBoxPool]. Both give the optimum of the
            extended LP; where that optimum is not unique (tied columns) they may return different
            optimal plans. ``"highs"`` (the former Python reference loop with HiGHS as the master LP)
            is a deprecated alias of ``"shared"``.
    """

    def __init__(self, master: str = "dense") -> None:
        if master == "highs":
            warnings.warn(
                'ELPWorkspace: master="highs" is deprecated, use "shared" (the shared column-generation loop)',
                DeprecationWarning,
                stacklevel=2,
            )
            master = "shared"
        self.master = check_choice("master", master, MASTERS)

    def __repr__(self) -> str:
        return f"ELPWorkspace(master={self.master!r})"


class DenseBoxPool(PoolBase):
    """The extended LP's columns over a dense [`Box`][cmdp_rl.confidence.box.Box], for the shared loop
    ([`run_colgen`][cmdp_rl.planning.colgen.run_colgen]): a column is ``(actions, order)``, both
    ``(H, S)`` int64 (a deterministic policy and, per step, the preference order of the greedy-fill
    kernel), priced by EVI ([`evi`][cmdp_rl.confidence.box.evi]) and evaluated by one forward pass
    ([`column_of`][cmdp_rl.confidence.box.column_of]).

    Args:
        box: the confidence set.
        r: ``(S, A)`` rewards.
        c: ``(N, S, A)`` costs.
        s0: the start state.
        H: the horizon.
        actions: ``(S, A)`` mask of the available actions (``None``: all); no column plays another.
    """

    exact_max_costs = False

    def __init__(self, box: Box, r: Array, c: Array, s0: int, H: int, actions: Mask | None = None) -> None:
        self.box = box
        self._init_pool(r, c, s0, H, actions)
        self.columns: list[Column] = []

    def price(self, weight_r: float, lam: Array) -> tuple[float, tuple[IntArray, IntArray]]:
        """EVI on ``weight_r * r - lam . c``: ``D0`` and the column ``(actions, order)``."""
        V, actions, order = evi(self.box, self._reward(weight_r, lam), self.H)
        self.sweeps += 1
        best = float(V[0, self.s0])
        self._cut(weight_r, lam, best)
        return best, (actions, order)

    def add(self, column: tuple[IntArray, IntArray]) -> tuple[int, bool]:
        """Add the column ``(actions, order)`` (valid int64 arrays: checked warm columns or EVI's
        output) unless held: ``(index, new)``."""
        actions, order = column
        key = actions.tobytes() + order.tobytes()
        held = self._keys.get(key)
        if held is not None:
            return held[0], False
        col = column_of(self.box, actions, order, self.r, self.c, self.s0)
        self.evaluations += 1
        self._keys[key] = [len(self.columns)]
        self.columns.append(col)
        self.actions.append(col.actions)
        self.stats.append(ColumnStat(col.value, col.costs))
        return len(self.columns) - 1, True

    def distribution(self, index: int) -> Array:
        """``(H, S)`` state distribution of column ``index`` under its own kernel."""
        return self.columns[index].dist

    def stacked(self) -> _Columns:
        """The pool as stacked arrays."""
        cols = self.columns
        return _Columns(
            np.stack([col.actions for col in cols]),
            np.stack([col.order for col in cols]),
            np.stack([col.dist for col in cols]),
            self.values(),
            self.costs(),
        )


class _Columns(NamedTuple):
    """The pool of a finished solve: ``K`` columns as stacked arrays ``actions, orders, dist
    (K, H, S)``, ``values (K,)`` and ``costs (K, N)``."""

    actions: IntArray
    orders: IntArray
    dist: Array
    values: Array
    costs: Array


def _kernel(box: Box, cols: _Columns, w: Array, mu: Array, s0: int) -> Array:
    """Kernel ``(H, S, A, S)`` of the columns weighted by ``w`` with occupancy ``mu``.

    The kernel at ``(h, s, a)`` is ``q / sum_y q`` of the mixed extended occupancy
    ``q = sum_j w_j q_j``; where ``(h, s, a)`` is unreached it is the greedy-fill
    row of the heaviest column's order (any plausible row would do). The ``(H, S, S)``
    rows of the columns with positive weight are recomputed here (the pool never keeps them).
    """
    H, S, A = mu.shape
    q = np.zeros((H, S, A, S))
    hh, ss = np.arange(H)[:, None], np.arange(S)[None, :]
    for j in np.flatnonzero(w > 0.0):
        mass = w[j] * cols.dist[j]  # (H, S)
        rows, _ = column_rows(box.lower, box.room, box.spare, cols.actions[j], cols.orders[j], s0)
        q[hh, ss, cols.actions[j]] += mass[..., None] * rows
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
    actions: Mask | None = None,
) -> PlanResult:
    """Solve the extended LP over the plausible set ``box`` by column generation.

    Args:
        box: plausible-set bounds (see [`Box`][cmdp_rl.confidence.box.Box]).
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
            re-plans); ``None`` creates a fresh one for this solve. Its ``master``
            picks the loop: ``"dense"`` (default) runs the whole column generation in
            one compiled call ([`colgen_loop`][cmdp_rl.kernels.colgen_loop.colgen_loop]), ``"shared"`` the
            shared loop ([`run_colgen`][cmdp_rl.planning.colgen.run_colgen]). Both reach the same optimum.
        actions: a ragged model's ``(S, A)`` mask of the available actions (``None``: all).

    Returns:
        A [`PlanResult`][cmdp_rl.planning.result.PlanResult] with ``method="fast"``, the optimistic ``kernel``
        and ``info["columns"]`` (the columns with positive weight, for warm starts;
        ``info["warm"]`` holds them stacked for [`resolve_colgen`][cmdp_rl.planning.elp_dense.resolve_colgen]).
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
    mask = check_actions(actions, S, A)
    return solve_on_arrays(box, r, c, c_bar, s0, H, warm_a, warm_o, duals, max_iter, want_kernel, ws, mask)


def resolve_colgen(
    box: Box,
    known: KnownArrays,
    previous: PlanResult | None,
    workspace: ELPWorkspace,
    want_kernel: bool = False,
) -> PlanResult:
    """[`solve_colgen`][cmdp_rl.planning.elp_dense.solve_colgen] without input checks, warm-started from ``previous``
    (an
    earlier result of this module: its stacked columns ``info["warm"]`` and duals ``info["duals"]``).

    The learners' per-episode re-plan: ``known`` are their validated ``r (S, A)``, ``c (N, S,
    A)``, ``c_bar (N,)`` (contiguous float64), ``s0`` and ``H``; ``box`` comes from their own
    counts. Same result as ``solve_colgen(box, ..., warm_start=previous.info["columns"],
    warm_duals=previous.info["duals"])``.
    """
    H, S = known.H, box.S
    warm = None if previous is None else previous.info.get("warm")
    if warm is None:  # no previous plan, or one of another planner
        warm_a = warm_o = np.zeros((0, H, S), dtype=np.int64)
        duals = np.zeros(0)
    else:
        warm_a, warm_o = warm
        d = previous.info.get("duals")  # type: ignore[union-attr]
        duals = np.zeros(0) if d is None else d
    return solve_on_arrays(
        box, known.r, known.c, known.c_bar, known.s0, H, warm_a, warm_o, duals, 1000, want_kernel, workspace,
        known.actions,
    )  # fmt: skip


def solve_on_arrays(
    box: Box,
    r: Array,
    c: Array,
    c_bar: Array,
    s0: int,
    H: int,
    warm_a: IntArray,
    warm_o: IntArray,
    duals: Array,
    max_iter: int,
    want_kernel: bool,
    ws: ELPWorkspace,
    actions: Mask | None = None,
) -> PlanResult:
    """Column generation on checked, contiguous inputs (warm columns stacked ``(k, H, S)`` int64,
    ``duals`` ``(N,)`` or empty): the compiled loop, or the shared loop for
    ``ELPWorkspace("shared")`` and when the compiled master gives up (a full pool is solved
    again with more room). Both see the thresholds on the costs' scale
    ([`on_scale`][cmdp_rl.planning.thresholds.on_scale] over ``[H min c_i, H max c_i]``): the same
    problem, with no right-hand side that dwarfs the master LP's coefficients. ``actions``: the
    ``(S, A)`` mask of the available actions (``None``: all); no column plays another."""
    # thresholds on the costs' scale: every extended policy's cost lies in [H min c_i, H max c_i]
    b = on_scale(c_bar, *trivial_range(c, H)).b if c_bar.size else c_bar
    if ws.master == "dense":
        cap = warm_a.shape[0] + 16
        apply_threads(launch=True)  # the EVI sweeps' threads (kernels/evi.py: big kernels only)
        while True:
            code, iters, K, w, lam, pa, po, pd, pv, pc, bound = colgen_loop(
                box.lower, box.room, box.spare, r, c, b, s0, H, warm_a, warm_o, duals, max_iter,
                FEAS_TOL, PRICE_TOL, cap, full_mask(actions, box.S, box.A),
            )  # fmt: skip
            if code != LOOP_FULL:
                break
            cap *= 4  # the pool outgrew its room: solve again (same steps) with more
        if code == LOOP_MAX_ITER:
            raise SolverError(f"column generation did not converge in {max_iter} iterations ({K} columns)")
        if code != LOOP_FALLBACK:
            cols = _Columns(pa[:K], po[:K], pd[:K], pv[:K], pc[:K])
            status = "infeasible" if code == LOOP_INFEASIBLE else "optimal"
            out = Outcome(status, w, lam, math.nan, bound, math.nan, int(iters), GAP_TOL_PER_STEP * H)
            return _result(box, c, c_bar, s0, H, out, cols, want_kernel, actions)
    out, cols = _solve_shared(box, r, c, b, s0, H, warm_a, warm_o, duals, max_iter, actions)
    return _result(box, c, c_bar, s0, H, out, cols, want_kernel, actions)


def _solve_shared(
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
    actions: Mask | None = None,
) -> tuple[Outcome, _Columns]:
    """The extended LP by the shared loop ([`run_colgen`][cmdp_rl.planning.colgen.run_colgen]) on a
    [`DenseBoxPool`][cmdp_rl.planning.elp_dense.DenseBoxPool] started from the warm columns and the
    column the warm duals price (``ELPWorkspace("shared")``, and the fallback of ``colgen_loop``).

    Returns the outcome (its ``bound >= V*`` of the extended LP) and the pool's columns.
    """
    pool = DenseBoxPool(box, r, c, s0, H, actions)
    for acts, order in zip(warm_a, warm_o, strict=True):
        pool.add((acts, order))
    if c.shape[0] and warm_duals.size and np.any(warm_duals > 0):
        pool.add(pool.price(1.0, warm_duals)[1])
    out = run_colgen(pool, c_bar, GAP_TOL_PER_STEP * H, max_iter)
    # the master's weights cover the columns it saw: the ones priced after its last solve weigh 0
    out.w = np.concatenate([out.w, np.zeros(len(pool.columns) - out.w.size)])
    return out, pool.stacked()


def _result(
    box: Box,
    c: Array,
    c_bar: Array,
    s0: int,
    H: int,
    out: Outcome,
    cols: _Columns,
    want_kernel: bool,
    actions: Mask | None = None,
) -> PlanResult:
    """The plan of the outcome's master weights over ``cols``: mixed occupancy, policy, kernel; its
    certificate ([`certified`][cmdp_rl.planning.colgen.certified]: ``"uncertified"`` above
    ``GAP_TOL_PER_STEP * H``)."""
    w, mu, policy, value, costs = mix_plan(out.w, cols.actions, cols.dist, cols.values, cols.costs, box.A, REACH_TOL)
    policy = restrict_policy(policy, actions)
    status, gap = certified(out, float(value))
    lam = out.lam
    kernel = _kernel(box, cols, w, mu, s0) if want_kernel else None
    min_costs = None
    if status == "infeasible":
        min_costs = optimistic_min_costs(box, c, s0, H, actions)
    idx = (w > 0.0).nonzero()[0]
    warm_a, warm_o = cols.actions[idx], cols.orders[idx]  # copies (fancy indexing)
    return PlanResult(
        columns=warm_a.astype(action_dtype(box.A)),  # the deterministic policies mixed, each defined everywhere
        weights=w[idx] / w[idx].sum(),
        status=status,
        value=value,
        costs=costs,
        policy=policy,
        occupancy=mu,
        kernel=kernel,
        min_costs=min_costs,
        max_excess=float((costs - c_bar).max()) if c_bar.size else 0.0,
        method="fast",
        iterations=out.iterations,
        gap=gap,
        info={
            "columns": list(zip(warm_a, warm_o, strict=True)),
            "warm": (warm_a, warm_o),
            "duals": lam if status != "infeasible" else None,
            "n_columns": w.size,
        },
    )
