"""Generic-solver competitors of the fast extended LP, used by the ``elp`` benchmark.

Both solve the literal ELP of the paper's appendix (``q[h, s, a, s2] >= 0``,
cost rows, initial mass, flow, two box rows per entry) and return its optimal
value, which the benchmark checks against ``solve_elp(method="lp")``.

* :func:`solve_clarabel_aux`: the *auxiliary form* with ``z[h, s, a] = sum_y q[h, s, a, y]``,
  so each box row has two nonzeros (``q - upper z <= 0``, ``lower z - q <= 0``),
  assembled vectorized as one sparse CSC matrix and solved by the interior-point
  solver Clarabel (cones ``ZeroConeT`` for equalities, ``NonnegativeConeT`` for
  inequalities). As in the library's literal ELP, bounds are clipped to [0, 1]
  and box rows that cannot bind (``lower = 0`` or ``upper = 1``) are left out.
* :func:`solve_pulp_naive`: the way this research line's published code writes
  the ELP: PuLP with CBC, one ``LpVariable`` per ``q`` entry
  (``LpVariable.dicts`` over ``itertools.product``), every constraint added one
  by one in Python loops with ``lpSum`` (the row sum ``sum_y q`` rebuilt for each
  box row), every box row of the paper kept (``phat -+ beta`` unclipped), the
  whole model rebuilt from scratch on every solve and the solution read back
  variable by variable.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from cmdp_rl.model.cmdp import CMDP

Array = NDArray[np.float64]


@dataclass(frozen=True)
class BaselineResult:
    """Outcome of a competitor solve.

    Attributes:
        status: the solver's own status string (``"Solved"``, ``"Optimal"``, ...).
        optimal: whether the solver reports an optimum.
        value: optimal objective ``sum_{h,s,a} r[s, a] sum_y q[h, s, a, y]``.
        solver_time: time spent inside the solver proper, as it reports it
            (``None`` when it does not).
    """

    status: str
    optimal: bool
    value: float
    solver_time: float | None = None


def clarabel_aux_problem(
    cmdp: CMDP, p_hat: Array, beta: Array
) -> tuple[sp.csc_matrix, Array, sp.csc_matrix, Array, int, int]:
    """Data ``(P, q, A, b, n_eq, n_ineq)`` of the auxiliary-form ELP for Clarabel.

    Variables ``x = [q (H*S*A*S), z (H*S*A)]`` with ``q`` at ``((h*S + s)*A + a)*S + s2``
    and ``z`` at ``n_q + (h*S + s)*A + a``. Clarabel minimizes ``q_obj @ x`` subject
    to ``A x + slack = b`` with ``slack`` in the zero cone (first ``n_eq`` rows) and
    the non-negative cone (the other ``n_ineq`` rows).
    """
    H, S, A, N, s0 = cmdp.H, cmdp.S, cmdp.A, cmdp.N, cmdp.s0
    HSA = H * S * A
    n_q = HSA * S
    n = n_q + HSA
    lower = np.clip(p_hat - beta, 0.0, 1.0)
    upper = np.clip(p_hat + beta, 0.0, 1.0)

    def rows(r: NDArray[np.intp], c: NDArray[np.intp], v: Array, m: int) -> sp.csr_matrix:
        return sp.csr_matrix((v, (r, c)), shape=(m, n))

    # z[hsa] - sum_y q[hsa, y] = 0
    hsa = np.arange(HSA)
    link = rows(
        np.concatenate([hsa, np.repeat(hsa, S)]),
        np.concatenate([n_q + hsa, np.arange(n_q)]),
        np.concatenate([np.ones(HSA), -np.ones(n_q)]),
        HSA,
    )
    # flow: sum_a z[h, s, a] - sum_{x, b} q[h-1, x, b, s] = 1{h = 0, s = s0}
    hs = np.repeat(np.arange(H * S), A)
    h, xb, s = np.indices((H - 1, S * A, S)).reshape(3, -1)
    flow = rows(
        np.concatenate([hs, (h + 1) * S + s]),
        np.concatenate([n_q + hsa, (h * S * A + xb) * S + s]),
        np.concatenate([np.ones(HSA), -np.ones(h.size)]),
        H * S,
    )
    b_flow = np.zeros(H * S)
    b_flow[s0] = 1.0
    # costs: sum c_i[s, a] z[h, s, a] <= c_bar_i
    cost = sp.csr_matrix(np.hstack([np.zeros((N, n_q)), np.tile(cmdp.c.reshape(N, S * A), (1, H))]))
    # box rows, two nonzeros each: q - upper z <= 0 and lower z - q <= 0
    blocks, rhs = [], []
    for bound, sign, keep in ((upper, 1.0, upper < 1.0), (lower, -1.0, lower > 0.0)):
        hh, ss, aa, s2 = np.nonzero(np.broadcast_to(keep, (H, S, A, S)))
        zi = (hh * S + ss) * A + aa
        r = np.arange(hh.size)
        blocks.append(
            rows(
                np.concatenate([r, r]),
                np.concatenate([zi * S + s2, n_q + zi]),
                np.concatenate([np.full(r.size, sign), -sign * bound[ss, aa, s2]]),
                r.size,
            )
        )
        rhs.append(np.zeros(r.size))
    # q >= 0 (z >= 0 follows from the link rows)
    nonneg = rows(np.arange(n_q), np.arange(n_q), -np.ones(n_q), n_q)
    A_mat = sp.vstack([link, flow, cost, *blocks, nonneg], format="csc")
    b = np.concatenate([np.zeros(HSA), b_flow, cmdp.c_bar, *rhs, np.zeros(n_q)])
    q_obj = np.concatenate([np.zeros(n_q), -np.tile(cmdp.r.ravel(), H)])
    n_eq = HSA + H * S
    return sp.csc_matrix((n, n)), q_obj, A_mat, b, n_eq, A_mat.shape[0] - n_eq


def solve_clarabel_aux(cmdp: CMDP, p_hat: Array, beta: Array) -> BaselineResult:
    """Build the auxiliary-form ELP and solve it with Clarabel (default settings, quiet)."""
    import clarabel

    P, q_obj, A_mat, b, n_eq, n_ineq = clarabel_aux_problem(cmdp, p_hat, beta)
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    cones = [clarabel.ZeroConeT(n_eq), clarabel.NonnegativeConeT(n_ineq)]
    sol = clarabel.DefaultSolver(P, q_obj, A_mat, b, cones, settings).solve()
    return BaselineResult(
        str(sol.status),
        sol.status == clarabel.SolverStatus.Solved,
        -float(sol.obj_val),
        float(sol.solve_time),
    )


def solve_pulp_naive(cmdp: CMDP, p_hat: Array, beta: Array) -> BaselineResult:
    """The ELP written reference-style with PuLP and solved by CBC (see the module docstring)."""
    import pulp

    H, S, A, N = cmdp.H, cmdp.S, cmdp.A, cmdp.N
    R, C, c_bar, s0 = cmdp.r, cmdp.c, cmdp.c_bar, cmdp.s0
    Steps, States, Actions = range(H), range(S), range(A)

    prob = pulp.LpProblem("ELP", pulp.LpMaximize)
    # extended occupancy measure q(h, s, a, s')
    q = pulp.LpVariable.dicts("q", itertools.product(Steps, States, Actions, States), lowBound=0)

    # objective: sum_{h,s,a} r(s,a) sum_{s'} q(h,s,a,s')
    prob += pulp.lpSum(
        [
            pulp.lpSum(
                [R[s, a] * pulp.lpSum([q[h, s, a, ss] for ss in States]) for s, a in itertools.product(States, Actions)]
            )
            for h in Steps
        ]
    )

    # cost constraints
    for i in range(N):
        prob += (
            pulp.lpSum(
                [
                    pulp.lpSum(
                        [
                            C[i, s, a] * pulp.lpSum([q[h, s, a, ss] for ss in States])
                            for s, a in itertools.product(States, Actions)
                        ]
                    )
                    for h in Steps
                ]
            )
            <= c_bar[i]
        )

    # initial state distribution
    for s in States:
        prob += pulp.lpSum([q[0, s, a, ss] for a, ss in itertools.product(Actions, States)]) == (
            1.0 if s == s0 else 0.0
        )

    # flow conservation
    for h in Steps[1:]:
        for s in States:
            prob += pulp.lpSum([q[h, s, a, ss] for a, ss in itertools.product(Actions, States)]) == pulp.lpSum(
                [q[h - 1, x, b, s] for x, b in itertools.product(States, Actions)]
            )

    # confidence set: both box rows of every entry
    for h in Steps:
        for s in States:
            for a in Actions:
                for s_next in States:
                    up = p_hat[s, a, s_next] + beta[s, a, s_next]
                    lo = p_hat[s, a, s_next] - beta[s, a, s_next]
                    prob += q[h, s, a, s_next] - pulp.lpSum([q[h, s, a, y] for y in States]) * up <= 0
                    prob += -q[h, s, a, s_next] + pulp.lpSum([q[h, s, a, y] for y in States]) * lo <= 0

    prob.solve(pulp.PULP_CBC_CMD(msg=False))
    status = pulp.LpStatus[prob.status]

    # read the solution back entry by entry, as the reference code does
    q_val = np.zeros((H, S, A, S))
    for h, s, a, ss in itertools.product(Steps, States, Actions, States):
        q_val[h, s, a, ss] = q[h, s, a, ss].varValue or 0.0
    value = float(np.einsum("hsat,sa->", q_val, R))
    return BaselineResult(status, status == "Optimal", value, getattr(prob, "solutionTime", None))
