"""Exact planning: the occupation-measure LP of the paper's appendix (eq. "lp"), solved by HiGHS.

Variables ``mu[h, s, a] >= 0`` flattened as ``h * S * A + s * A + a``. The
constraint matrices are assembled from the kernel's non-zeros in one vectorized
step (no loop over variables).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.optimize import OptimizeResult, linprog

from cmdp_rl.evaluation.evaluate import optimal_values
from cmdp_rl.kernels.csr import kernel_entries
from cmdp_rl.model.actions import masked
from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.planning.result import PlanResult, SolverError, policy_from_occupancy
from cmdp_rl.planning.thresholds import FEAS_TOL as FEAS_TOL
from cmdp_rl.planning.thresholds import Thresholds, on_scale, translated, trivial_range
from cmdp_rl.plumbing.validation import CMDPInputError

Array = NDArray[np.float64]

#: the HiGHS methods of ``linprog`` tried in turn when ``"highs"`` stops without an optimum or a
#: proof of infeasibility
_LINPROG_RETRIES = ("highs-ipm", "highs-ds")


def flow_constraints(kernel: Array | sp.csr_array, H: int, s0: int | Array) -> tuple[sp.csr_matrix, Array]:
    """Equality rows ``(H*S, H*S*A)`` of eq. "lp": initial mass and flow conservation.

    Row ``h*S + s``: ``sum_a mu[h,s,a] - sum_{x,b} P_{h-1}[x,b,s] mu[h-1,x,b] = 1{h=0, s=s0}``
    (``rho(s)`` at ``h = 0`` when ``s0`` is an ``(S,)`` initial distribution ``rho``).

    Args:
        kernel: dense ``(S, A, S)`` or ``(H, S, A, S)``, or the sparse ``(S*A, S)`` CSR kernel
            (built from its non-zeros, never densified).
    """
    S, SA, hh, xb, s2, vals = kernel_entries(kernel, H - 1)
    A = SA // S
    out_mass = sp.kron(sp.identity(H * S, format="csr"), np.ones((1, A)), format="csr")
    inflow = sp.csr_matrix((-vals, ((hh + 1) * S + s2, hh * SA + xb)), shape=(H * S, H * SA))
    b = np.zeros(H * S)
    if isinstance(s0, (int, np.integer)):
        b[s0] = 1.0
    else:
        b[:S] = s0
    return (out_mass + inflow).tocsr(), b


def min_costs(cmdp: CMDP) -> Array:
    """``(N,)`` smallest achievable expected cost of each constraint (one DP sweep on ``-c_i`` each)."""
    H = cmdp.horizon("min_costs")
    return np.array(
        [0.0 - optimal_values(cmdp.kernel, masked(-cmdp.c[i], cmdp.actions), H)[0] @ cmdp.rho for i in range(cmdp.N)]
    )


def highs_lp(
    c: Array,
    A_ub: sp.csr_matrix | None,
    b_ub: Array | None,
    A_eq: sp.csr_matrix,
    b_eq: Array,
    bounds: Sequence[tuple[float | None, float | None]] | tuple[float, None],
) -> OptimizeResult:
    """``scipy.optimize.linprog`` with HiGHS; raises unless optimal (0) or infeasible (2).

    Another status (1 iteration limit, 3 unbounded, 4 numerical difficulties) is retried with
    HiGHS' interior point method, then its dual simplex (``_LINPROG_RETRIES``) before it raises."""
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds, method="highs")
    for retry in _LINPROG_RETRIES:
        if res.status in (0, 2):
            break
        res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds, method=retry)
    if res.status not in (0, 2):
        raise SolverError(f"HiGHS stopped with status {res.status}: {res.message}")
    return res


def min_excess_lp(
    cost_rows: sp.csr_matrix,
    c_bar: Array,
    A_eq: sp.csr_matrix,
    b_eq: Array,
    A_other: sp.csr_matrix | None = None,
    b_other: Array | None = None,
) -> tuple[Array, float, Array]:
    """Minimize ``t`` subject to ``cost_rows @ x - t <= c_bar``, the flow rows and
    optional further rows ``A_other @ x <= b_other`` (the extended LP's box rows).

    Returns the minimizer ``x``, the smallest achievable worst excess ``t`` and the duals
    ``lambda (N,)`` of the cost rows, normalized to ``sum lambda = 1`` (a certificate of
    infeasibility when ``t > 0``). Used when a CMDP (or extended LP) is infeasible.
    """
    n = A_eq.shape[1]
    N = cost_rows.shape[0]
    A_ub = sp.hstack([cost_rows, -np.ones((N, 1))], format="csr")
    if A_other is not None and b_other is not None:
        A_ub = sp.vstack([A_ub, sp.hstack([A_other, sp.csr_matrix((A_other.shape[0], 1))])], format="csr")
        c_bar = np.concatenate([c_bar, b_other])
    A_eq2 = sp.hstack([A_eq, sp.csr_matrix((A_eq.shape[0], 1))], format="csr")
    obj = np.zeros(n + 1)
    obj[-1] = 1.0
    bounds: list[tuple[float | None, float | None]] = [(0.0, None)] * n + [(None, None)]
    res = highs_lp(obj, A_ub, c_bar, A_eq2, b_eq, bounds)
    if res.status != 0:
        raise SolverError(f"HiGHS could not minimize the constraint excess: {res.message}")
    lam = np.maximum(-res.ineqlin.marginals[:N], 0.0)
    return res.x[:n], float(res.x[-1]), lam / max(float(lam.sum()), 1e-300)


def _cost_rows(cmdp: CMDP) -> sp.csr_matrix:
    """``(N, H*S*A)``: constraint ``i``'s cost of every occupancy variable."""
    H, S, A, N = cmdp.horizon("the occupancy LP"), cmdp.S, cmdp.A, cmdp.N
    return sp.csr_matrix(np.tile(cmdp.c.reshape(N, S * A), (1, H)))


def occupancy_lp(
    obj: Array,
    cost_rows: sp.csr_matrix | None,
    th: Thresholds,
    A_eq: sp.csr_matrix,
    b_eq: Array,
    keep: NDArray[np.bool_] | None = None,
) -> tuple[Array, bool, Array, int, float]:
    """``max obj . x`` over ``x >= 0`` with the flow rows ``A_eq x = b_eq`` and the cost rows
    ``cost_rows x <= c_bar`` (``None``: no constraint), by HiGHS; the one solve behind the
    finite-horizon and the discounted occupation-measure LPs.

    The thresholds come on the costs' scale (``th``, [`on_scale`][cmdp_rl.planning.thresholds.on_scale]):
    only the rows that some policy can violate enter the LP (the others get multiplier 0), with
    ``th.b``; a problem infeasible by range goes straight to the worst-excess minimization on the
    translated thresholds, its certificate the unit multiplier of the constraint no policy meets.
    A problem counts as infeasible exactly when its minimum worst excess exceeds ``FEAS_TOL``:
    when HiGHS reports infeasibility but that excess is within the tolerance, the LP is solved
    again with the thresholds relaxed by it. Returns ``(x, feasible, lambda, iterations, t)``:
    ``t`` the excess the thresholds were relaxed by (``0`` usually; when infeasible, the minimum
    worst excess, which ``x`` attains, and ``lambda`` (summing to 1) certifies it).

    ``keep`` (optional, one bool per variable): the variables of available state-action pairs; the
    others (a ragged model's unavailable pairs) are dropped from the LP, ``x`` is 0 there.
    """
    if keep is not None:
        cols = np.flatnonzero(keep)
        x, feasible, lam, nit, t = occupancy_lp(
            obj[cols], None if cost_rows is None else cost_rows[:, cols], th, A_eq[:, cols], b_eq
        )
        return _lifted(x, keep), feasible, lam, nit, t
    N = th.b.size
    lam = np.zeros(N)
    rows = th.active
    if cost_rows is None or not rows.any():
        res = highs_lp(-obj, None, None, A_eq, b_eq, (0.0, None))
        return res.x, True, lam, int(getattr(res, "nit", 0)), 0.0
    sub, b = cost_rows[np.flatnonzero(rows)], th.b[rows]
    if th.infeasible:
        x, t, _ = min_excess_lp(sub, b, A_eq, b_eq)
        lam[th.worst] = 1.0  # max_pi (c_bar_j - C_j(pi)) = c_bar_j - min cost < -FEAS_TOL
        return x, False, lam, 0, t + th.shift
    res = highs_lp(-obj, sub, b, A_eq, b_eq, (0.0, None))
    t = 0.0
    if res.status != 0:
        x, t, lam_rows = min_excess_lp(sub, b, A_eq, b_eq)
        if t > FEAS_TOL:
            lam[rows] = lam_rows
            return x, False, lam, int(getattr(res, "nit", 0)), t
        t = max(t, 0.0)
        res = highs_lp(-obj, sub, b + t, A_eq, b_eq, (0.0, None))
        if res.status != 0:
            raise SolverError(f"HiGHS could not solve the LP with thresholds relaxed by {t:.3g}: {res.message}")
    lam[rows] = np.maximum(-res.ineqlin.marginals, 0.0)
    return res.x, True, lam, int(getattr(res, "nit", 0)), t


def _lifted(x: Array, keep: NDArray[np.bool_]) -> Array:
    """The full variable vector of a solution ``x`` over the kept variables (0 on the dropped ones)."""
    out = np.zeros(keep.size)
    out[keep] = x
    return out


def occupancy_keep(cmdp: CMDP, steps: int) -> NDArray[np.bool_] | None:
    """The LP variables ``h*S*A + s*A + a`` (``steps`` steps) of the available pairs, ``None`` when all are."""
    return None if cmdp.actions is None else np.tile(cmdp.actions.reshape(-1), steps)


def solve_lp(cmdp: CMDP, thresholds: Thresholds | None = None) -> PlanResult:
    """Solve the CMDP exactly with the occupation-measure LP (paper eq. "lp").

    Dense or sparse kernels (the flow rows come from the kernel's non-zeros). ``multipliers``
    are the LP's cost duals. The problem counts as infeasible exactly when its minimum worst
    excess exceeds ``FEAS_TOL = 1e-7`` (as for ``method="fast"``): when HiGHS reports
    infeasibility but that excess is within the tolerance, the LP is solved again with the
    thresholds ``c_bar + t`` (``info["t"]``). ``gap`` is ``nan`` here: ``solve(cmdp, method="lp")``
    certifies the result (an exact evaluation of its policy against the duals' bound).

    Args:
        cmdp: a finite-horizon model.
        thresholds: ``cmdp.c_bar`` on the costs' scale (``solve`` passes the exact range); ``None``:
            from the trivial range ``H * min c_i``, ``H * max c_i``.

    Returns:
        A [`PlanResult`][cmdp_rl.planning.result.PlanResult]. When the thresholds cannot be met, ``status`` is
        ``"infeasible"``, ``min_costs`` holds the smallest achievable cost of
        each constraint, the policy minimizes the worst excess
        ``max_i (C_i - c_bar_i)``, ``gap`` is ``nan`` and ``multipliers`` (summing to 1)
        certify infeasibility.

    Raises:
        SolverError: HiGHS stopped for another reason (status named in the message).
    """
    H, S, A, N = cmdp.horizon("solve_lp"), cmdp.S, cmdp.A, cmdp.N
    th = thresholds if thresholds is not None else on_scale(cmdp.c_bar, *trivial_range(cmdp.c, H))
    A_eq, b_eq = flow_constraints(cmdp.kernel, H, cmdp.s0)
    cost_rows = _cost_rows(cmdp)
    obj = np.tile(cmdp.r.ravel(), H)
    keep = occupancy_keep(cmdp, H)
    x, feasible, lam, nit, t = occupancy_lp(obj, cost_rows if N else None, th, A_eq, b_eq, keep)
    status, mins = ("optimal", None) if feasible else ("infeasible", min_costs(cmdp))
    mu = np.maximum(x, 0.0).reshape(H, S, A)
    costs = np.einsum("hsa,isa->i", mu, cmdp.c)
    return PlanResult(
        status=status,
        value=float(obj @ x),
        costs=costs,
        policy=policy_from_occupancy(mu, cmdp.actions),
        occupancy=mu,
        min_costs=mins,
        max_excess=float(np.max(costs - cmdp.c_bar, initial=-np.inf)) if N else 0.0,
        method="lp",
        iterations=nit,
        info={"t": t},
        multipliers=lam,
    )


def min_worst_excess(cmdp: CMDP) -> PlanResult:
    """The policy minimizing the worst constraint excess ``max_i (C_i - c_bar_i)`` (an LP).

    Its ``max_excess`` is the smallest achievable worst excess; ``-max_excess`` is the
    problem's joint Slater gap ``max_pi min_i (c_bar_i - C_i(pi))`` (positive when some
    policy meets every threshold strictly). ``status`` is ``"optimal"`` when that excess is
    ``<= 0`` (the thresholds are jointly feasible), else ``"infeasible"``.

    Raises:
        CMDPInputError: ``cmdp`` has no constraints (``N = 0``).
    """
    if cmdp.N == 0:
        raise CMDPInputError("cmdp: has no constraints (N = 0): no constraint excess to minimize")
    H, S, A = cmdp.horizon("min_worst_excess"), cmdp.S, cmdp.A
    A_eq, b_eq = flow_constraints(cmdp.kernel, H, cmdp.s0)
    keep = occupancy_keep(cmdp, H)
    x, t, lam = min_excess_on_scale(_cost_rows(cmdp), cmdp.c_bar, trivial_range(cmdp.c, H), A_eq, b_eq, keep)
    mu = np.maximum(x, 0.0).reshape(H, S, A)
    costs = np.einsum("hsa,isa->i", mu, cmdp.c)
    return PlanResult(
        status="optimal" if t <= 0 else "infeasible",
        value=float((mu * cmdp.r[None]).sum()),
        costs=costs,
        policy=policy_from_occupancy(mu, cmdp.actions),
        occupancy=mu,
        max_excess=float(t),
        method="lp",
        multipliers=lam,
    )


def min_excess_on_scale(
    cost_rows: sp.csr_matrix,
    c_bar: Array,
    bounds: tuple[Array, Array],
    A_eq: sp.csr_matrix,
    b_eq: Array,
    variables: NDArray[np.bool_] | None = None,
) -> tuple[Array, float, Array]:
    """[`min_excess_lp`][cmdp_rl.planning.lp.min_excess_lp] for thresholds of any size: on the
    thresholds translated onto the costs' range ``bounds = (lo, hi)`` (the minimizer does not
    change; rows no policy can push above the minimum are left out). ``variables``: the kept LP
    variables (``None``: all; a ragged model's unavailable pairs are dropped, 0 in ``x``).
    Returns ``(x, t, lambda)``."""
    b, shift, keep, _ = translated(c_bar, *bounds)
    rows = cost_rows[np.flatnonzero(keep)]
    if variables is not None:
        cols = np.flatnonzero(variables)
        rows, A_eq = rows[:, cols], A_eq[:, cols]
    x, t, lam_rows = min_excess_lp(rows, b[keep], A_eq, b_eq)
    lam = np.zeros(c_bar.size)
    lam[keep] = lam_rows
    return (x if variables is None else _lifted(x, variables)), t + shift, lam
