"""Discounted CMDPs (``cmdp.gamma`` set): stationary evaluation, Altman's LP and column generation.

A discounted CMDP's value is ``V = E[sum_t gamma^t r(s_t, a_t)]`` from ``s_0 ~ rho``, its costs
likewise, each bounded by ``c_bar_i``. Everything here rests on one linear system per
stationary policy ``pi``: ``(I - gamma P_pi) V = r_pi`` with ``P_pi (S, S)`` the kernel under
``pi`` and ``r_pi (S,)`` its expected reward.

* [`evaluate`][cmdp_rl.evaluation.evaluate.evaluate]: one solve of that system (its transpose for the occupancy).
* [`solve_discounted_lp`][cmdp_rl.planning.discounted.solve_discounted_lp]: Altman's occupation-measure LP
  (``method="lp"``), the reference: ``mu (S, A) >= 0`` with
  ``sum_a mu(s', a) - gamma sum_{s,a} P(s'|s,a) mu(s,a) = rho(s')``, objective ``r . mu``, costs
  ``c_i . mu <= c_bar_i``; the policy is ``mu / sum_a mu``.
* [`StationaryPool`][cmdp_rl.planning.discounted.StationaryPool]: the columns of ``method="fast"``, deterministic
  stationary policies, priced by policy iteration. [`run_colgen`][cmdp_rl.planning.colgen.run_colgen] drives it with the
  same master LP and Lagrangian certificate as the finite-horizon planner: for every
  ``lambda >= 0``, ``V* <= max_pi V_{r - lambda . c}(pi) + lambda . c_bar``.

The linear algebra of one policy lives in [`cmdp_rl.evaluation.stationary`][cmdp_rl.evaluation.stationary].
"""

from __future__ import annotations

import hashlib

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from cmdp_rl.evaluation.stationary import RESIDUAL_TOL, PolicySystem, policy_kernel
from cmdp_rl.model.actions import Mask
from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.planning.lp import min_excess_on_scale, occupancy_lp
from cmdp_rl.planning.mixing import PlanTables, stationary_mixer
from cmdp_rl.planning.pool import ColumnStat, PoolBase
from cmdp_rl.planning.result import REACH_TOL, PlanResult, SolverError, policy_from_occupancy
from cmdp_rl.planning.thresholds import Thresholds, on_scale, trivial_range
from cmdp_rl.plumbing.errors import CMDPTypeError

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: greedy improvements smaller than this (relative to ``1 + max |V|``) do not change an action
PI_TOL = 1e-12
#: policy-iteration rounds per pricing before giving up (it converges in far fewer)
PI_MAX_ROUNDS = 10_000
#: an inexact round of policy iteration stops at this fraction of the new policy's Bellman residual
INEXACT_TOL = 1e-3
#: after this many rounds of one pricing every evaluation is exact (plain policy iteration)
EXACT_AFTER = 50
#: columns whose values the pool keeps for warm starts (``(S, N + 1)`` floats each)
KEEP_VALUES = 4


def _check_discounted(cmdp: CMDP, what: str) -> float:
    if not isinstance(cmdp, CMDP):
        raise CMDPTypeError(f"cmdp: must be a cmdp_rl.CMDP, got {type(cmdp).__name__}")
    if cmdp.gamma is None:
        raise AssertionError(f"{what}: called on a finite-horizon model")
    return cmdp.gamma


class StationaryPool(PoolBase):
    """The deterministic stationary policies (columns ``(S,)`` of actions) of a discounted model.

    ``price`` runs policy iteration on ``weight_r * r - lam . c`` from the last priced policy
    (each round one policy evaluation, counted in ``sweeps``) and returns an upper bound on
    the optimal value from ``rho``: the value of the final policy plus ``e / (1 - gamma)``, ``e``
    its Bellman residual, so every cut is a valid bound whatever the accuracy of the evaluations.
    ``add`` evaluates a column with one solve for the reward and every cost (``info["evaluations"]``);
    ``distribution`` gives its normalized discounted state distribution.

    Warm starts (above ``DENSE_SOLVE_MAX`` states, where the solves are iterative): a new column
    differs from the last in a few states, so its solves start from the last column's values
    (``add``) and distribution (``distribution``); pricing starts from the warm policy's exact
    Lagrangian values when that policy is a column (``X @ (weight_r, -lam)``), its inexact rounds
    (``INEXACT_TOL``) from the previous round's values, and it ends with a full-accuracy solve.
    ``error`` is the largest bound ``||r||_inf / (1 - gamma)`` on a column's value or cost error so
    far ([`cmdp_rl.evaluation.stationary`][cmdp_rl.evaluation.stationary]).

    Args:
        K: ``(S*A, S)`` CSR kernel.
        r: ``(S, A)`` objective.
        c: ``(N, S, A)`` costs.
        rho: ``(S,)`` initial distribution.
        gamma: discount factor.
        actions: ``(S, A)`` mask of the available actions (``None``: all); no column plays another.
    """

    def __init__(
        self, K: sp.csr_array, r: Array, c: Array, rho: Array, gamma: float, actions: Mask | None = None
    ) -> None:
        self.K = K
        self.gamma = float(gamma)
        self._init_pool(r, c, np.asarray(rho, dtype=np.float64), 1, actions)
        self._warm: NDArray[np.int64] | None = None
        self._last: tuple[bytes, PolicySystem] | None = None
        # the values (S, N + 1) of the last few evaluated columns, by digest; the last distribution
        self._values: dict[bytes, Array] = {}
        self._recent: Array | None = None
        self._dist: Array | None = None
        self.error = 0.0

    @staticmethod
    def _digest(actions: NDArray[np.integer]) -> bytes:
        return hashlib.blake2b(np.ascontiguousarray(actions, dtype=np.int64).data, digest_size=16).digest()

    def _system(self, actions: NDArray[np.integer]) -> PolicySystem:
        key = self._digest(actions)
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        system = PolicySystem(policy_kernel(self.K, np.asarray(actions, dtype=np.int64)), self.gamma)
        self._last = (key, system)
        return system

    def _start(self, acts: NDArray[np.int64], weight_r: float, lam: Array) -> Array | None:
        """The exact Lagrangian values of ``acts`` when it is a column evaluated lately, else the
        values of the last evaluated column (a first guess)."""
        X = self._values.get(self._digest(acts))
        if X is None:
            X = self._recent
            if X is None:
                return None
        out: Array = X @ np.concatenate([[weight_r], -np.asarray(lam, dtype=np.float64)])
        return out

    def price(self, weight_r: float, lam: Array) -> tuple[float, NDArray[np.int64]]:
        """Policy iteration on ``weight_r * r - lam . c``: ``(upper bound on its optimal value from
        rho, the greedy deterministic policy (S,))``. Rounds after a change of policy evaluate
        inexactly (residual at most ``INEXACT_TOL`` times the change's); the last round, which
        finds no improving action, is a full-accuracy evaluation (after ``EXACT_AFTER`` rounds every
        round is: plain policy iteration, which terminates)."""
        R = self._reward(weight_r, lam)
        S, A = self.S, self.A
        rows = np.arange(S)
        acts = np.argmax(R, axis=1) if self._warm is None else self._warm.copy()
        V = self._start(acts, weight_r, lam)
        tol = RESIDUAL_TOL
        for rounds in range(1, PI_MAX_ROUNDS + 1):
            system = self._system(acts)
            V = system.solve(R[rows, acts], x0=V, tol=tol)
            self.sweeps += 1
            Q = R + self.gamma * (self.K @ V).reshape(S, A)
            best = Q.max(axis=1)
            now = Q[rows, acts]
            better = best > now + PI_TOL * (1.0 + float(np.abs(V).max()))
            if not better.any():
                if tol <= RESIDUAL_TOL or system.dense:
                    break
                tol = RESIDUAL_TOL  # the same policy again, exactly, before it counts as optimal
                continue
            acts = np.where(better, np.argmax(Q, axis=1), acts)
            scale = max(float(np.abs(R[rows, acts]).max()), 1e-300)
            change = float(np.max(best - now))  # the new policy's Bellman residual at V
            tol = RESIDUAL_TOL if rounds >= EXACT_AFTER else max(INEXACT_TOL * change / scale, RESIDUAL_TOL)
        else:  # pragma: no cover - policy iteration terminates in finitely many rounds
            raise SolverError(f"policy iteration did not converge in {PI_MAX_ROUNDS} rounds")
        assert V is not None
        residual = max(float(np.max(best - V)), 0.0)
        bound = float(self.rho @ V) + residual / (1.0 - self.gamma)
        self._warm = acts
        self._cut(weight_r, lam, bound)
        return bound, acts

    def add(self, actions: NDArray[np.integer]) -> tuple[int, bool]:
        """Add a column unless the pool holds it: ``(index, new)``; its value and costs from one
        solve with the reward and every cost as right-hand sides (from the last column's values)."""
        stored = np.ascontiguousarray(actions, dtype=self.dtype)
        key = hashlib.blake2b(stored.data, digest_size=16).digest()
        for idx in self._keys.get(key, ()):
            if np.array_equal(self.actions[idx], stored):
                return idx, False
        rows = np.arange(self.S)
        system = self._system(stored)
        X = system.solve(np.ascontiguousarray(self.tables[rows, stored]), x0=self._recent)
        self.error = max(self.error, system.error)
        self._remember(self._digest(stored), X)
        w0 = self.rho @ X
        self.evaluations += 1
        self._keys.setdefault(key, []).append(len(self.actions))
        self.actions.append(stored)
        self.stats.append(ColumnStat(float(w0[0]), np.array(w0[1:], dtype=np.float64)))
        return len(self.actions) - 1, True

    def _remember(self, key: bytes, X: Array) -> None:
        self._values[key] = X
        while len(self._values) > KEEP_VALUES:
            del self._values[next(iter(self._values))]
        self._recent = X

    def distribution(self, index: int) -> Array:
        """``(S,)`` normalized discounted state distribution of column ``index`` from ``rho`` (from
        the last distribution computed)."""
        system = self._system(self.actions[index])
        x0 = None if self._dist is None else self._dist / (1.0 - self.gamma)
        d = system.solve(self.rho, transpose=True, x0=x0)
        out: Array = np.maximum((1.0 - self.gamma) * d, 0.0)
        self._dist = out.copy()
        return out

    def markov_tables(self, columns: NDArray[np.integer], weights: Array, index: NDArray[np.intp]) -> PlanTables:
        """The plan's ``(S, A)`` tables mixed on first use from ``columns (K, S)`` and ``weights``
        ([`stationary_mixer`][cmdp_rl.planning.mixing.stationary_mixer])."""
        return stationary_mixer(self.K, self.gamma, self.rho, self.available, columns, weights, REACH_TOL)


def flow_rows(cmdp: CMDP) -> sp.csr_array:
    """``(S, S*A)`` equality rows of Altman's LP: ``sum_a mu(s', a) - gamma sum_{s,a} P(s'|s,a)
    mu(s,a)`` (built from the kernel's non-zeros)."""
    gamma = _check_discounted(cmdp, "flow_rows")
    S, A = cmdp.S, cmdp.A
    out_mass = sp.csr_array((np.ones(S * A), np.arange(S * A), np.arange(0, S * A + 1, A)), shape=(S, S * A))
    return sp.csr_array(out_mass - gamma * cmdp.K.T)


def solve_discounted_lp(cmdp: CMDP, thresholds: Thresholds | None = None) -> PlanResult:
    """Altman's occupation-measure LP of a discounted CMDP, solved by HiGHS (``solve(cmdp,
    method="lp")``; module docstring). ``occupancy`` is the normalized ``mu (S, A)`` (sums to 1),
    ``policy`` the stationary ``(S, A)`` policy ``mu / sum_a mu`` (uniform where ``mu`` is ~0),
    ``multipliers`` the cost duals; ``gap`` is ``nan`` (``solve`` certifies the result). Infeasible
    exactly when the minimum worst excess exceeds ``1e-7``, as for the finite-horizon LP (then
    ``min_costs`` is set and the policy minimizes the worst excess). ``thresholds``: as for
    [`solve_lp`][cmdp_rl.planning.lp.solve_lp] (``None``: the trivial range ``c / (1 - gamma)``)."""
    gamma = _check_discounted(cmdp, "solve_discounted_lp")
    N = cmdp.N
    th = thresholds if thresholds is not None else on_scale(cmdp.c_bar, *trivial_range(cmdp.c, cmdp.max_return))
    A_eq = sp.csr_matrix(flow_rows(cmdp))
    b_eq = np.array(cmdp.rho, dtype=np.float64)
    cost_rows = sp.csr_matrix(cmdp.c.reshape(N, cmdp.S * cmdp.A))
    obj = cmdp.r.ravel()
    keep = None if cmdp.actions is None else cmdp.actions.reshape(-1)
    x, feasible, lam, nit, t = occupancy_lp(obj, cost_rows if N else None, th, A_eq, b_eq, keep)
    status, mins = "optimal", None
    if not feasible:
        pool = StationaryPool(cmdp.K, cmdp.r, cmdp.c, cmdp.rho, gamma, cmdp.actions)
        pool.seed()
        status, mins = "infeasible", pool.min_costs
    mu = np.maximum(x, 0.0).reshape(cmdp.S, cmdp.A)
    costs = np.einsum("sa,isa->i", mu, cmdp.c)
    return PlanResult(
        status=status,
        value=float(obj @ x),
        costs=costs,
        policy=policy_from_occupancy(mu[None], cmdp.actions)[0],
        occupancy=(1.0 - gamma) * mu,
        min_costs=mins,
        max_excess=float(np.max(costs - cmdp.c_bar, initial=-np.inf)) if N else 0.0,
        method="lp",
        iterations=nit,
        info={"t": t},
        multipliers=lam,
    )


def min_worst_excess_discounted(cmdp: CMDP) -> PlanResult:
    """The stationary policy minimizing the worst excess ``max_i (C_i - c_bar_i)`` (Altman's LP with
    a worst-excess variable; [`min_worst_excess`][cmdp_rl.planning.lp.min_worst_excess] for a discounted model)."""
    gamma = _check_discounted(cmdp, "min_worst_excess_discounted")
    A_eq = sp.csr_matrix(flow_rows(cmdp))
    cost_rows = sp.csr_matrix(cmdp.c.reshape(cmdp.N, cmdp.S * cmdp.A))
    bounds = trivial_range(cmdp.c, cmdp.max_return)
    keep = None if cmdp.actions is None else cmdp.actions.reshape(-1)
    x, t, lam = min_excess_on_scale(cost_rows, cmdp.c_bar, bounds, A_eq, np.array(cmdp.rho, dtype=np.float64), keep)
    mu = np.maximum(x, 0.0).reshape(cmdp.S, cmdp.A)
    return PlanResult(
        status="optimal" if t <= 0 else "infeasible",
        value=float((mu * cmdp.r).sum()),
        costs=np.einsum("sa,isa->i", mu, cmdp.c),
        policy=policy_from_occupancy(mu[None], cmdp.actions)[0],
        occupancy=(1.0 - gamma) * mu,
        max_excess=float(t),
        method="lp",
        multipliers=lam,
    )


__all__ = ["StationaryPool", "flow_rows", "min_worst_excess_discounted", "solve_discounted_lp"]
