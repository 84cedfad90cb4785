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

from ..evaluate import optimal_values
from ..model import CMDP
from .result import PlanResult, SolverError, policy_from_occupancy

Array = NDArray[np.float64]


def flow_constraints(kernel: Array, H: int, s0: int) -> tuple[sp.csr_matrix, Array]:
    """Equality rows ``(H*S, H*S*A)`` of eq. "lp": initial mass and flow conservation.

    Row ``h*S + s``: ``sum_a mu[h,s,a] - sum_{x,b} P_{h-1}[x,b,s] mu[h-1,x,b] = 1{h=0, s=s0}``.

    Args:
        kernel: ``(S, A, S)`` or ``(H, S, A, S)``.
    """
    S, A = kernel.shape[-3], kernel.shape[-2]
    SA = S * A
    out_mass = sp.kron(sp.identity(H * S, format="csr"), np.ones((1, A)), format="csr")
    K = np.broadcast_to(kernel, (H, S, A, S))[: H - 1].reshape(H - 1, SA, S)
    h, xb, s2 = np.nonzero(K)
    inflow = sp.csr_matrix((-K[h, xb, s2], ((h + 1) * S + s2, h * SA + xb)), shape=(H * S, H * SA))
    b = np.zeros(H * S)
    b[s0] = 1.0
    return (out_mass + inflow).tocsr(), b


def min_costs(cmdp: CMDP) -> Array:
    """``(N,)`` smallest achievable expected cost of each constraint (DP on ``-c_i``)."""
    return np.array([-optimal_values(cmdp.P, -cmdp.c[i], cmdp.H)[0, cmdp.s0] for i in range(cmdp.N)])


def _highs(
    c: Array,
    A_ub: sp.csr_matrix | None,
    b_ub: Array | None,
    A_eq: sp.csr_matrix,
    b_eq: Array,
    bounds: Sequence[tuple[float | None, float | None]] | tuple[float, None],
) -> OptimizeResult:
    """``scipy.optimize.linprog`` with HiGHS; raises unless optimal (0) or infeasible (2)."""
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds, method="highs")
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
) -> tuple[Array, float]:
    """Minimize ``t`` subject to ``cost_rows @ x - t <= c_bar``, the flow rows and
    optional further rows ``A_other @ x <= b_other`` (the extended LP's box rows).

    Returns the minimizer ``x`` and the smallest achievable worst excess ``t``.
    Used when a CMDP (or extended LP) is infeasible.
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
    res = _highs(obj, A_ub, c_bar, A_eq2, b_eq, bounds)
    if res.status != 0:
        raise SolverError(f"HiGHS could not minimize the constraint excess: {res.message}")
    return res.x[:n], float(res.x[-1])


def solve(cmdp: CMDP) -> PlanResult:
    """Solve the CMDP exactly with the occupation-measure LP (paper eq. "lp").

    Returns:
        A :class:`PlanResult`. When the thresholds cannot be met, ``status`` is
        ``"infeasible"``, ``min_costs`` holds the smallest achievable cost of
        each constraint, and the policy minimizes the worst excess
        ``max_i (C_i - c_bar_i)``.

    Raises:
        SolverError: HiGHS stopped for another reason (status named in the message).
    """
    H, S, A, N = cmdp.H, cmdp.S, cmdp.A, cmdp.N
    A_eq, b_eq = flow_constraints(cmdp.P, H, cmdp.s0)
    cost_rows = sp.csr_matrix(np.tile(cmdp.c.reshape(N, S * A), (1, H)))
    obj = np.tile(cmdp.r.ravel(), H)
    res = _highs(-obj, cost_rows if N else None, cmdp.c_bar if N else None, A_eq, b_eq, (0.0, None))
    if res.status == 0:
        x, status, mins = res.x, "optimal", None
    else:
        x, _ = min_excess_lp(cost_rows, cmdp.c_bar, A_eq, b_eq)
        status, mins = "infeasible", min_costs(cmdp)
    mu = np.maximum(x, 0.0).reshape(H, S, A)
    costs = np.einsum("hsa,isa->i", mu, cmdp.c)
    return PlanResult(
        status=status,
        value=float(obj @ x),
        costs=costs,
        policy=policy_from_occupancy(mu),
        occupancy=mu,
        min_costs=mins,
        max_excess=float(np.max(costs - cmdp.c_bar, initial=-np.inf)) if N else 0.0,
        method="lp",
        iterations=int(getattr(res, "nit", 0)),
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
    H, S, A, N = cmdp.H, cmdp.S, cmdp.A, cmdp.N
    if N == 0:
        from ..validation import CMDPInputError

        raise CMDPInputError("cmdp: has no constraints (N = 0): no constraint excess to minimize")
    A_eq, b_eq = flow_constraints(cmdp.P, H, cmdp.s0)
    cost_rows = sp.csr_matrix(np.tile(cmdp.c.reshape(N, S * A), (1, H)))
    x, t = min_excess_lp(cost_rows, cmdp.c_bar, A_eq, b_eq)
    mu = np.maximum(x, 0.0).reshape(H, S, A)
    costs = np.einsum("hsa,isa->i", mu, cmdp.c)
    return PlanResult(
        status="optimal" if t <= 0 else "infeasible",
        value=float((mu * cmdp.r[None]).sum()),
        costs=costs,
        policy=policy_from_occupancy(mu),
        occupancy=mu,
        max_excess=float(t),
        method="lp",
    )
