"""The extended LP (paper appendix, "ELP"): optimistic planning over a confidence set.

Two exact methods with one result type:

* ``method="lp"``: the paper's ELP written as one sparse HiGHS LP over the
  extended occupancy ``q[h, s, a, s2] >= 0`` (``|S|^2 |A| H`` variables), the
  reference and test oracle;
* ``method="fast"`` (default): column generation with EVI pricing
  ([`colgen`][cmdp_rl.planning.elp_dense]), same optimum, orders of magnitude faster.

The optimistic policy is ``sum_s2 q / sum_{b, s2} q`` and the optimistic kernel
``q / sum_y q`` (it may differ by step ``h``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from cmdp_rl.confidence.box import Box, IntArray, evi, greedy_rows, make_column
from cmdp_rl.confidence.box import min_costs as optimistic_min_costs
from cmdp_rl.confidence.sets import AnyBox
from cmdp_rl.confidence.sparse_box import SparseBox
from cmdp_rl.evaluation.evaluate import validate_kernel
from cmdp_rl.model.actions import masked
from cmdp_rl.model.cmdp import CMDP, KnownParts
from cmdp_rl.model.units import unit_known
from cmdp_rl.planning.colgen import GAP_TOL_PER_STEP
from cmdp_rl.planning.elp_dense import FEAS_TOL, ELPWorkspace, resolve_colgen, solve_colgen
from cmdp_rl.planning.elp_sparse import BoxPool, solve_sparse_elp
from cmdp_rl.planning.lp import highs_lp, min_excess_lp
from cmdp_rl.planning.result import REACH_TOL, PlanResult, plan_in_units, policy_from_occupancy
from cmdp_rl.planning.thresholds import on_scale, trivial_range
from cmdp_rl.plumbing.names import METHODS as METHODS  # the methods' names, defined without imports
from cmdp_rl.plumbing.validation import CMDPInputError, CMDPTypeError, as_float_array, check_choice, check_shape, plain

Array = NDArray[np.float64]


def validate_box_inputs(cmdp: KnownParts, p_hat: Any, beta: Any) -> tuple[Array, Array]:
    """Validated copies of ``p_hat (S, A, S)`` (rows are distributions) and ``beta (S, A, S) >= 0``;
    for a ragged action set the rows of unavailable pairs are ignored (any values; uniform in the copy,
    which no policy reaches)."""
    if not isinstance(cmdp, (CMDP, KnownParts)):
        raise CMDPTypeError(f"cmdp: must be a cmdp_rl.CMDP, got {type(cmdp).__name__}")
    S, A = cmdp.S, cmdp.A
    if np.ndim(p_hat) != 3:
        raise CMDPInputError(f"p_hat: expected shape {(S, A, S)}, got shape {np.shape(p_hat)}")
    if cmdp.actions is not None and np.shape(p_hat) == (S, A, S):
        p_hat = np.where(cmdp.actions[..., None], as_float_array("p_hat", p_hat, 3), 1.0 / S)
    ph = validate_kernel(p_hat, cmdp.H, S, A, name="p_hat")
    if ph.ndim != 3:
        raise CMDPInputError(f"p_hat: expected shape {(S, A, S)}, got {ph.shape}")
    b = as_float_array("beta", beta, 3)
    check_shape("beta", b, ph.shape)
    if (b < 0).any():
        idx = tuple(int(i) for i in np.argwhere(b < 0)[0])
        raise CMDPInputError(f"beta{list(idx)}: radii must be non-negative, got {plain(b[idx])}")
    return ph, b


def _literal_matrices(box: Box, H: int, s0: int) -> tuple[sp.csr_matrix, Array, sp.csr_matrix, Array]:
    """Flow equalities and box inequalities of the literal ELP over ``q (H, S, A, S)``.

    Variable ``((h*S + s)*A + a)*S + s2``. Box rows whose bound cannot bind
    (``lower = 0`` or ``upper = 1``, given ``q >= 0`` and the row sum) are left out.
    """
    S, A = box.lower.shape[:2]
    SAS = S * A * S
    n = H * SAS
    # flow: sum_{a,s2} q[h,s,a,s2] - sum_{x,b} q[h-1,x,b,s] = 1{h=0, s=s0}
    out = sp.kron(sp.identity(H * S, format="csr"), np.ones((1, A * S)), format="csr")
    h, xb, s = np.indices((H - 1, S * A, S)).reshape(3, -1)
    inflow = sp.csr_matrix((-np.ones(h.size), ((h + 1) * S + s, h * SAS + xb * S + s)), shape=(H * S, n))
    b_eq = np.zeros(H * S)
    b_eq[s0] = 1.0
    # box: q[hsa, s2] - upper[sa, s2] * sum_y q[hsa, y] <= 0 and lower * sum_y q - q <= 0
    blocks = []
    for bound, sign, keep in ((box.upper, 1.0, box.upper < 1.0), (box.lower, -1.0, box.lower > 0.0)):
        hh, ss, aa, s2 = np.nonzero(np.broadcast_to(keep, (H, S, A, S)))
        row = np.arange(hh.size)
        base = ((hh * S + ss) * A + aa) * S
        rows = np.concatenate([row, np.repeat(row, S)])
        cols = np.concatenate([base + s2, (base[:, None] + np.arange(S)).ravel()])
        vals = np.concatenate([np.full(row.size, sign), np.repeat(-sign * bound[ss, aa, s2], S)])
        blocks.append(sp.csr_matrix((vals, (rows, cols)), shape=(row.size, n)))
    A_box = sp.vstack(blocks, format="csr")
    return (out + inflow).tocsr(), b_eq, A_box, np.zeros(A_box.shape[0])


def _solve_literal(cmdp: KnownParts, box: Box) -> PlanResult:
    H, S, A, N = cmdp.H, cmdp.S, cmdp.A, cmdp.N
    A_eq, b_eq, A_box, b_box = _literal_matrices(box, H, cmdp.s0)

    def per_q(table: Array) -> Array:
        """An ``(S, A)`` table laid out over ``q``'s variables."""
        out: Array = np.repeat(np.tile(table.ravel(), H), S)
        return out

    if cmdp.actions is not None:  # a ragged action set: no mass on an unavailable pair (q >= 0)
        A_eq = sp.vstack([A_eq, sp.csr_matrix(per_q((~cmdp.actions).astype(np.float64)))], format="csr")
        b_eq = np.append(b_eq, 0.0)
    cost_rows = sp.csr_matrix(np.stack([per_q(cmdp.c[i]) for i in range(N)])) if N else None
    A_ub = sp.vstack([cost_rows, A_box], format="csr") if N else A_box
    # thresholds on the costs' scale (the same problem; HiGHS reads |b| >= 1e20 as infinite)
    c_bar = on_scale(cmdp.c_bar, *trivial_range(cmdp.c, H)).b if N else cmdp.c_bar
    b_ub = np.concatenate([c_bar, b_box])
    obj = per_q(cmdp.r)
    res = highs_lp(-obj, A_ub, b_ub, A_eq, b_eq, (0.0, None))
    status, used = "optimal", res
    if res.status == 0:
        x = res.x
    else:
        x, excess, _ = min_excess_lp(cost_rows, c_bar, A_eq, b_eq, A_box, b_box)
        status = "infeasible"
        if excess <= FEAS_TOL:  # the fast method's rule: feasible within FEAS_TOL
            b_relaxed = np.concatenate([c_bar + max(excess, 0.0), b_box])
            relaxed = highs_lp(-obj, A_ub, b_relaxed, A_eq, b_eq, (0.0, None))
            if relaxed.status == 0:
                x, status, used = relaxed.x, "optimal", relaxed
                c_bar = c_bar + max(excess, 0.0)
    q = np.maximum(x, 0.0).reshape(H, S, A, S)
    mu = q.sum(axis=-1)
    fallback = greedy_rows(box, np.tile(np.arange(S), (H, 1)))
    reached = mu > REACH_TOL
    kernel = np.where(reached[..., None], q / np.where(reached, mu, 1.0)[..., None], fallback)
    # On rows with almost no mass, q / mu magnifies the solver's feasibility error
    # (1e-7 absolute) into rows outside the box; any plausible row serves there.
    off = np.any((kernel < box.lower - 1e-9) | (kernel > box.upper + 1e-9), axis=-1)
    kernel = np.where(off[..., None], fallback, kernel)
    costs = np.einsum("hsa,isa->i", mu, cmdp.c)
    min_costs = None
    gap, lam = math.nan, None
    value = float(obj @ x)
    if status == "infeasible":
        min_costs = optimistic_min_costs(box, cmdp.c, cmdp.s0, H, cmdp.actions)
    else:  # checked, not trusted: the duals' bound D(lambda) = EVI(r - lambda . c) + lambda . b >= V*
        lam = np.maximum(-np.asarray(used.ineqlin.marginals[:N], dtype=np.float64), 0.0)
        reward = cmdp.r - np.tensordot(lam, cmdp.c, axes=1) if N else cmdp.r
        bound = float(evi(box, masked(reward, cmdp.actions), H)[0][0, cmdp.s0])
        gap = max(bound + float(lam @ c_bar) - value, 0.0)
        if not gap <= GAP_TOL_PER_STEP * H:
            status = "uncertified"
    return PlanResult(
        status=status,
        value=value,
        costs=costs,
        policy=policy_from_occupancy(mu, cmdp.actions),
        occupancy=mu,
        kernel=kernel,
        min_costs=min_costs,
        max_excess=float(np.max(costs - cmdp.c_bar, initial=-np.inf)) if N else 0.0,
        method="lp",
        iterations=int(getattr(res, "nit", 0)),
        multipliers=lam,
        gap=gap,
    )


def _warm_columns(warm_start: object, S: int, A: int, H: int) -> tuple[list[tuple[IntArray, IntArray]], Array | None]:
    """The ``(actions, order)`` pairs and cost multipliers of a ``warm_start`` argument, checked."""
    if warm_start is None:
        return [], None
    if isinstance(warm_start, PlanResult):
        cols, duals = warm_start.info.get("columns", ()), warm_start.info.get("duals")
    elif isinstance(warm_start, (list, tuple)):
        cols, duals = warm_start, None
    else:
        raise CMDPTypeError(
            f"warm_start: must be a PlanResult or a sequence of (actions, order) pairs, got {type(warm_start).__name__}"
        )
    out: list[tuple[IntArray, IntArray]] = []
    for j, pair in enumerate(cols):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise CMDPInputError(f"warm_start[{j}]: must be an (actions, order) pair of (H, S) integer arrays")
        acts, order = (np.asarray(x) for x in pair)
        for name, arr, hi in (("actions", acts, A), ("order", order, S)):
            if arr.shape != (H, S) or not np.issubdtype(arr.dtype, np.integer):
                raise CMDPInputError(
                    f"warm_start[{j}] {name}: expected an integer array of shape {(H, S)}, got {arr.dtype} {arr.shape}"
                )
            if arr.min() < 0 or arr.max() >= hi:
                raise CMDPInputError(f"warm_start[{j}] {name}: entries must lie in [0, {hi - 1}]")
        out.append((acts.astype(np.int64), order.astype(np.int64)))
    return out, (None if duals is None else np.asarray(duals, dtype=np.float64))


def solve_elp(
    cmdp: CMDP,
    p_hat: object,
    beta: object,
    method: str = "fast",
    warm_start: PlanResult | Sequence[tuple[IntArray, IntArray]] | None = None,
    *,
    want_kernel: bool = True,
    workspace: ELPWorkspace | None = None,
) -> PlanResult:
    """Optimistic planning: ``max V'`` over policies and plausible kernels s.t. ``C'_i <= c_bar_i``.

    The library's one entry point to the extended LP (paper appendix, eq. "ELP"): the
    learners call it for every plan.

    Args:
        cmdp: rewards, costs, thresholds, ``s0`` and ``H`` (its kernel ``P`` is not used).
        p_hat: ``(S, A, S)`` empirical kernel.
        beta: ``(S, A, S)`` radii; plausible kernels satisfy ``|P' - p_hat| <= beta``.
        method: ``"fast"`` (column generation, default) or ``"lp"`` (the literal ELP).
        warm_start: for ``"fast"``, a previous result (or its ``info["columns"]``)
            whose columns and cost multipliers seed the master LP.
        want_kernel: build the ``(H, S, A, S)`` optimistic kernel (``"fast"`` only;
            ``False`` leaves ``kernel=None`` and saves the learners that work).
        workspace: for ``"fast"``, the master LP's solver state to reuse
            ([`ELPWorkspace`][cmdp_rl.planning.elp_dense.ELPWorkspace]); ``None`` makes a fresh
            one, so concurrent calls from several threads are safe.

    Returns:
        A [`PlanResult`][cmdp_rl.planning.result.PlanResult] whose ``kernel (H, S, A, S)`` is the optimistic kernel;
        ``value``/``costs`` are the optimistic value and costs. If no plausible
        policy meets the thresholds (worst excess above
        ``FEAS_TOL``, for both methods):
        ``status="infeasible"``, ``min_costs`` (the smallest optimistic cost of each
        constraint) and the plausible policy minimizing the worst excess.
        Infeasibility is a status, never an exception.

    Rewards and costs may be any finite numbers: the plan is computed on the problem's image on the
    unit scale and reported in the model's units, as [`solve`][cmdp_rl.planning.solve.solve]'s.
    """
    check_choice("method", method, METHODS)
    if not isinstance(cmdp, CMDP):
        raise CMDPTypeError(f"cmdp: must be a cmdp_rl.CMDP, got {type(cmdp).__name__}")
    image, units = unit_known(KnownParts.of(cmdp, "solve_elp"))
    plan = solve_elp_known(image, p_hat, beta, method, warm_start, want_kernel=want_kernel, workspace=workspace)
    return plan_in_units(plan, units, cmdp.c_bar)


def solve_elp_known(
    known: KnownParts,
    p_hat: object,
    beta: object,
    method: str = "fast",
    warm_start: PlanResult | Sequence[tuple[IntArray, IntArray]] | None = None,
    *,
    want_kernel: bool = True,
    workspace: ELPWorkspace | None = None,
) -> PlanResult:
    """[`solve_elp`][cmdp_rl.planning.elp.solve_elp] on the known parts of a problem: the planners' internal entry
    point.

    Same arguments and result as [`solve_elp`][cmdp_rl.planning.elp.solve_elp], but ``known`` (a
    [`KnownParts`][cmdp_rl.model.cmdp.KnownParts], validated for shapes and finiteness) may carry
    rewards and costs outside ``[0, 1]``, as the baselines' bonus-augmented problems do
    (``r + bonus``, ``c - bonus``). With ``beta = 0`` the plausible set is ``{p_hat}`` and
    this is the plain occupancy LP on ``p_hat`` (eq. "lp"), solved by the same column
    generation (exact, warm-started).
    """
    if not isinstance(known, KnownParts):
        raise CMDPTypeError(f"known: must be a cmdp_rl.model.cmdp.KnownParts, got {type(known).__name__}")
    cmdp = known
    check_choice("method", method, METHODS)
    ph, b = validate_box_inputs(cmdp, p_hat, beta)
    cols, duals = _warm_columns(warm_start, cmdp.S, cmdp.A, cmdp.H)
    if workspace is not None and not isinstance(workspace, ELPWorkspace):
        raise CMDPTypeError(f"workspace: must be an ELPWorkspace or None, got {type(workspace).__name__}")
    box = Box.from_radius(ph, b)
    if method == "lp":
        return _solve_literal(cmdp, box)
    return solve_colgen(
        box,
        cmdp.r,
        cmdp.c,
        cmdp.c_bar,
        cmdp.s0,
        cmdp.H,
        warm_start=cols,
        warm_duals=duals,
        want_kernel=bool(want_kernel),
        workspace=workspace,
        actions=cmdp.actions,
    )


def plan_on_box(
    known: KnownParts,
    box: AnyBox,
    previous: PlanResult | None = None,
    *,
    method: str = "fast",
    workspace: ELPWorkspace | None = None,
    want_kernel: bool = False,
) -> PlanResult:
    """The learners' re-plan over a confidence set of either layout, warm-started from ``previous``.

    A dense [`Box`][cmdp_rl.confidence.box.Box]: column generation
    ([`resolve_colgen`][cmdp_rl.planning.elp_dense.resolve_colgen]; ``method="lp"``: the literal
    ELP, not warm-started); a [`SparseBox`][cmdp_rl.confidence.sparse_box.SparseBox]: the sparse
    column generation ([`solve_sparse_elp`][cmdp_rl.planning.elp_sparse.solve_sparse_elp], from
    ``previous.info["warm_columns"]``; every ``method``, ``workspace`` and ``want_kernel`` are the
    dense planner's). The layout is chosen here, so the learners need not branch on it.

    No input checks: the learners build ``known`` (validated once), ``box`` (from their own
    counts) and ``previous`` (this function's last result) themselves, and re-plan every
    episode, where the checks of [`solve_elp_known`][cmdp_rl.planning.elp.solve_elp_known] cost as much as a pricing
    sweep. Same result as ``solve_elp_known(known, p_hat, beta, method, warm_start=previous, ...)`` for
    ``box = Box.from_radius(p_hat, beta)``.
    """
    if isinstance(box, SparseBox):
        warm = previous.info.get("warm_columns", ()) if previous is not None else ()
        return solve_sparse_elp(
            known.r, known.c, known.c_bar, known.s0, known.H, box, warm_start=warm, actions=known.actions
        )
    if method == "lp":
        return _solve_literal(known, box)
    return resolve_colgen(box, known, previous, workspace if workspace is not None else ELPWorkspace(), want_kernel)


def optimistic_column(known: KnownParts, box: AnyBox, lam: Array) -> tuple[IntArray, float, Array]:
    """One pricing step of the extended LP over a confidence set of either layout: extended value
    iteration on the Lagrangian reward ``r - lam . c`` (``lam (N,)``) gives the deterministic
    policy ``actions (H, S)`` and its optimistic kernel, under which one forward pass gives the
    ``value`` and ``costs (N,)`` of ``known.r``, ``known.c`` from ``known.s0``. A dense
    [`Box`][cmdp_rl.confidence.box.Box]: [`evi`][cmdp_rl.confidence.box.evi] and
    [`make_column`][cmdp_rl.confidence.box.make_column]; a [`SparseBox`][cmdp_rl.confidence.sparse_box.SparseBox]:
    the sparse pool's pricing and column ([`BoxPool`][cmdp_rl.planning.elp_sparse.BoxPool]). OptDual's
    per-episode plan."""
    if isinstance(box, SparseBox):
        pool = BoxPool(box, known.r, known.c, known.s0, known.H, known.actions)
        _, column = pool.price(1.0, lam)
        stat = pool.stats[pool.add(column)[0]]
        return column[0], stat.value, stat.costs
    reward = known.r - np.tensordot(lam, known.c, axes=1) if known.N else known.r
    _, actions, order = evi(box, masked(reward, known.actions), known.H)  # never an unavailable action
    col = make_column(box, actions, order, known.r, known.c, known.s0)
    return actions, col.value, col.costs
