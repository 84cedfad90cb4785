"""``optpess-pd``: OptPess-PrimalDual of Liu, Zhou, Kalathil, Kumar and Tian (2021, arXiv 2106.02684).

The primal-dual variant of [`optpess`][cmdp_rl.learners.optpess.OptPess]: "an optimistic primal estimate
and a pessimistic dual update" (the paper's abstract), for the case where no strictly safe policy is
known, only that one exists; its claim is a bounded (``O(1)`` in ``K``) cumulative constraint
violation. The paper's body could not be read here (``docs/baselines.md``, section ``optpess-pd``):
the steps below are cmdp-rl's reading of that sentence with OptPess-LP's radius and cost bonus.

* radius ``beta(s, a) = sqrt(L / max(n(s, a), 1))``, ``L = log(32 S^2 H K / delta)``
  (``optpess_log``, OptPess-LP's), bonus
  ``b = bonus_scale * (1 + S H) * beta`` (OptPess-LP's cost bonus, ``optpess_bonuses``);
* primal (optimistic): the greedy policy ``pi_k`` of backward induction on ``p_hat`` with the
  optimistic Lagrangian reward ``r - lambda_k . c + (1 + sum_i lambda_k,i) b`` (``b`` bounds the
  model's error per unit of reward range, and the Lagrangian reward spans ``1 + sum_i lambda_i``;
  ties: the lowest action index);
* dual (pessimistic, tightened): ``C_bar_k,i`` = the cost of ``pi_k`` on ``p_hat`` with the cost
  ``c_i + b``, truncated to ``[0, H - h]`` at every step, and
  ``lambda_{k+1,i} = max(0, lambda_k,i + t (C_bar_k,i + eps - c_bar_i))`` from ``lambda_1 = 0``,
  with ``t = 1 / (H sqrt(K))`` (``optdual_step``) and the
  tightening ``eps = min(gamma / 2, 2 H^2 / (gamma sqrt(K)))``
  ([`optpess_pd_epsilon`][cmdp_rl.learners.optpess_pd.optpess_pd_epsilon]), ``gamma`` the Slater gap.

``gamma`` comes from a baseline's costs (``SafeLearner``): the learner never plays that policy,
it reads only its gap. The update uses only the planner's own quantities, so it is applied right
after planning (as ``optdual``'s). Every episode's multipliers are recorded
(``record.info["multipliers"]``, ``(K, N)``, the ``lambda_k`` that planned episode ``k``).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.confidence.counts import Counts, check_counts, pair_counts
from cmdp_rl.learners.bonuses import optdual_step, optpess_log
from cmdp_rl.learners.episodes import EpisodePlan, EpisodePlanner
from cmdp_rl.learners.safe import SafeLearner
from cmdp_rl.model.actions import masked
from cmdp_rl.model.cmdp import CMDP, KnownParts
from cmdp_rl.plumbing.validation import CMDPInputError, as_float, check_positive_int, plain

Array = NDArray[np.float64]


def next_values(flat_counts: Counts, n: NDArray[np.int64], V: Array) -> Array:
    """``p_hat V``: the expected next value of every pair under the empirical kernel.

    Args:
        flat_counts: ``(S*A, S)`` counts, dense or CSR (row ``s*A + a`` holds ``n(s, a, .)``).
        n: ``(S, A)`` samples per pair.
        V: ``(S, J)`` values of the next step (``J`` columns at once).

    Returns:
        ``(S, A, J)``: ``sum_s2 n(s, a, s2) V(s2) / n(s, a)``, and the mean of ``V`` over the states
        at an unvisited pair (the uniform row of ``empirical_p``).
    """
    S, A = n.shape
    nn = n.reshape(S * A, 1)
    ev = np.asarray(flat_counts @ V, dtype=np.float64) / np.maximum(nn, 1)
    out: Array = np.where(nn > 0, ev, V.mean(axis=0)[None, :]).reshape(S, A, -1)
    return out


def flat_counts(counts: object) -> tuple[Counts, NDArray[np.int64], int, int]:
    """Validated counts of either layout as the ``(S*A, S)`` matrix of
    [`next_values`][cmdp_rl.learners.optpess_pd.next_values], with ``n (S, A)``, ``S`` and ``A``."""
    cnt, S, A = check_counts(counts)
    return cnt.reshape(S * A, S), pair_counts(cnt), S, A


def optpess_pd_epsilon(H: int, K: int, gamma: float) -> float:
    """The tightening ``eps = min(gamma / 2, 2 H^2 / (gamma sqrt(K)))`` of the dual update.

    cmdp-rl's choice (the paper's value could not be read, ``docs/baselines.md``): with the dual
    step ``t = 1 / (H sqrt(K))`` and multipliers of the tightened problem at most
    ``H / (gamma - eps) <= 2 H / gamma`` (Slater), the pessimistic dual update bounds the cumulative
    excess by ``lambda_{K+1} / t - K eps <= 2 H^2 sqrt(K) / gamma - K eps``, which this ``eps`` makes
    at most 0; ``gamma / 2`` keeps the tightened problem strictly feasible. ``gamma = 0`` gives 0.

    Args:
        H: horizon (>= 1).
        K: number of episodes (>= 1).
        gamma: the Slater gap ``min_i (c_bar_i - C_i)`` of some policy (>= 0).
    """
    H, K = check_positive_int("H", H), check_positive_int("K", K)
    g = as_float("gamma", gamma)
    if g < 0.0:
        raise CMDPInputError(f"gamma: the Slater gap must be >= 0, got {plain(gamma)}")
    if g == 0.0:
        return 0.0
    return min(g / 2.0, 2.0 * H * H / (g * math.sqrt(K)))


def lagrangian_greedy(
    flat: Counts, n: NDArray[np.int64], known: KnownParts, bonus: Array, lam: Array
) -> tuple[NDArray[np.int64], float, Array]:
    """One backward sweep on ``p_hat``: the greedy policy on the optimistic Lagrangian reward and
    its pessimistic, truncated costs (module docstring).

    Args:
        flat: [`flat_counts`][cmdp_rl.learners.optpess_pd.flat_counts]'s ``(S*A, S)`` matrix.
        n: ``(S, A)`` samples per pair.
        known: ``r (S, A)``, ``c (N, S, A)``, ``s0``, ``H``.
        bonus: ``(S, A)`` the bonus ``b``.
        lam: ``(N,)`` multipliers.

    Returns:
        ``(actions (H, S), optimistic reward value at s0, pessimistic costs (N,) at s0)``.
    """
    H, S, N = known.H, known.S, known.N
    lagr = known.r + bonus - np.einsum("i,isa->sa", lam, known.c)
    r_opt, c_pess = known.r + bonus, known.c + bonus[None]  # (S, A), (N, S, A)
    V = np.zeros((S, 2 + N))  # columns: Lagrangian, optimistic reward, pessimistic costs
    actions = np.zeros((H, S), dtype=np.int64)
    ss = np.arange(S)
    for h in range(H - 1, -1, -1):
        ev = next_values(flat, n, V)  # (S, A, 2 + N)
        a = np.argmax(masked(lagr + ev[:, :, 0], known.actions), axis=1)  # available actions only
        actions[h] = a
        V = np.empty((S, 2 + N))
        V[:, 0] = lagr[ss, a] + ev[ss, a, 0]
        V[:, 1] = np.minimum(r_opt[ss, a] + ev[ss, a, 1], H - h)
        V[:, 2:] = np.clip(c_pess[:, ss, a].T + ev[ss, a, 2:], 0.0, H - h)
    return actions, float(V[known.s0, 1]), V[known.s0, 2:].copy()


class OptPessPD(SafeLearner):
    """OptPess-PrimalDual (module docstring).

    Args:
        cmdp: what is known (``KnownParts``), or a ``CMDP`` whose ``r, c, c_bar, s0, H`` are kept (never ``P``).
        delta: failure probability (in the radius' logarithm).
        episodes: the budget ``K`` (in the logarithm, the dual step and the tightening).
        baseline: ``(H, S, A)`` a policy known to be strictly safe: only its gap is used, never the policy.
        baseline_costs: ``(N,)`` its exact costs: the Slater gap ``gamma = min_i (c_bar_i - C_i)``.
        bonus_scale: factor on the bonus ``b``.
    """

    name: ClassVar[str] = "optpess-pd"

    def __init__(
        self,
        cmdp: CMDP | KnownParts,
        delta: float = 0.1,
        *,
        episodes: int,
        baseline: Any,
        baseline_costs: Any,
        bonus_scale: float = 1.0,
        statistics: str = "dense",
    ) -> None:
        super().__init__(
            cmdp,
            delta,
            episodes=episodes,
            baseline=baseline,
            baseline_costs=baseline_costs,
            bonus_scale=bonus_scale,
            statistics=statistics,
        )
        H, K = self.known.H, self.episodes
        self.step = optdual_step(H, K)
        self.epsilon = optpess_pd_epsilon(H, K, self.gamma)
        self._multipliers: list[Array] = []

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "step": self.step, "epsilon": self.epsilon}

    def planner(self) -> EpisodePlanner:
        """Each call: the optimistic greedy policy, then the pessimistic dual step (module docstring)."""
        S, H = self.known.S, self.known.H
        L = optpess_log(S, H, self.episodes, self.delta)
        factor = self.bonus_scale * (1.0 + S * H)
        t, eps = self.step, self.epsilon
        lam = np.zeros(self.known.N)
        history = self._multipliers = []
        hh, ss = np.arange(H)[:, None], np.arange(S)[None, :]

        def plan_next(counts: NDArray[np.int64]) -> EpisodePlan:
            nonlocal lam
            known = self.known
            flat, n, _, A = flat_counts(counts)
            bonus = factor * np.sqrt(L / np.maximum(n, 1))
            actions, value, pess_costs = lagrangian_greedy(flat, n, known, bonus, lam)
            history.append(lam.copy())
            lam = np.maximum(0.0, lam + t * (pess_costs + eps - known.c_bar))
            policy = np.zeros((H, S, A))
            policy[hh, ss, actions] = 1.0
            return EpisodePlan(policy, "optimistic", value, 1)

        return plan_next

    def _info(self) -> dict[str, Any]:
        N = self.known.N
        return {"multipliers": np.array(self._multipliers).reshape(len(self._multipliers), N)}


__all__ = ["OptPessPD", "flat_counts", "lagrangian_greedy", "next_values", "optpess_pd_epsilon"]
