"""``dope``: DOPE of Bura, HasanzadeZonuzy, Kalathil, Shakkottai and Chamberland (2022,
arXiv 2112.00885): doubly optimistic (kernel and reward bonus) and pessimistic (cost bonus)
exploration with a known safe policy ``pi_b`` of cost ``C_b < c_bar``
(gap ``gamma = min_i (c_bar_i - C_b,i)``; ``docs/baselines.md``):

* play ``pi_b`` in the first ``K0`` episodes (status ``"baseline"``),
  ``K0 = ceil(S^2 A H^3 / gamma^2)`` (``dope_k0``, the
  authors' code; the paper's Theorem 1 value is marked [verify]);
* afterwards solve the extended LP over the per-entry Bernstein set
  (``dope_radius``) maximizing ``r + (H^2 / gamma) beta_bar``
  subject to ``c_i + H beta_bar <= c_bar_i`` (both bonuses times ``bonus_scale``;
  ``dope_bonuses``), and play its policy (``"optimistic"``),
  or ``pi_b`` when it is infeasible (``"infeasible"``).

The guarantee is zero violation with high probability and ``O~(sqrt(K))`` regret.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.confidence.sets import radius_box, radius_sums
from cmdp_rl.learners.bonuses import DOPE_LOG_TERMS, bernstein_entry, check_bonus_size, check_k0, dope_k0, dope_log
from cmdp_rl.learners.episodes import EpisodePlan, EpisodePlanner
from cmdp_rl.learners.replan import WarmELP
from cmdp_rl.learners.safe import SafeLearner
from cmdp_rl.model.cmdp import CMDP, KnownParts
from cmdp_rl.plumbing.validation import check_choice


class DOPE(SafeLearner):
    """DOPE (module docstring).

    Args:
        cmdp: what is known (``KnownParts``), or a ``CMDP`` whose ``r, c, c_bar, s0, H`` are kept (never ``P``).
        delta: failure probability of the Bernstein set.
        episodes: the budget ``K`` (in the radius' logarithm).
        baseline: ``(H, S, A)`` the safe policy ``pi_b``.
        baseline_costs: ``(N,)`` its exact costs ``C_b`` (each below its threshold).
        bonus_scale: factor on both bonuses.
        k0: episodes of the baseline phase (``None``: ``dope_k0``;
            0: none).
        log_term: the radius' logarithm, ``"paper"`` (``log(2 S A H K / delta)``, OptCMDP's set)
            or ``"code"`` (``log(6 S^2 H K / delta)``, the authors' scripts).
    """

    name: ClassVar[str] = "dope"
    column_plans: ClassVar[bool] = True

    def __init__(
        self,
        cmdp: CMDP | KnownParts,
        delta: float = 0.1,
        *,
        episodes: int,
        baseline: Any,
        baseline_costs: Any,
        bonus_scale: float = 1.0,
        k0: int | None = None,
        log_term: str = "paper",
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
        self.log_term = check_choice("log_term", log_term, DOPE_LOG_TERMS)
        k = self.known
        self.k0 = check_k0(k0, dope_k0(k.S, k.A, k.H, self.gamma) if k0 is None else 0)

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "k0": self.k0, "log_term": self.log_term}

    def planner(self) -> EpisodePlanner:
        """Each call: the baseline while ``k <= K0``, then the doubly optimistic-pessimistic ELP."""
        solve = WarmELP()
        known, K, delta, gamma, k0 = self.known, self.episodes, self.delta, self.gamma, self.k0
        H, log_term = known.H, self.log_term
        reward_factor, cost_factor = self.bonus_scale * H * H / gamma, self.bonus_scale * H
        # beta_bar, a sum of S radii of at most 1, is largest (S) at an unvisited pair
        check_bonus_size(self.bonus_scale, reward_factor * known.S, H, "reward", gap=gamma)
        check_bonus_size(self.bonus_scale, cost_factor * known.S, H, "cost")
        pi_b = EpisodePlan(self.baseline, "baseline", float("nan"), 0, baseline=True)
        episode = 0

        def plan_next(counts: NDArray[np.int64]) -> EpisodePlan:
            nonlocal episode
            known = self.known
            episode += 1
            if episode <= k0:
                return pi_b
            L = dope_log(known.S, known.A, H, K, delta, log_term)  # dope_radius, entry by entry
            box = radius_box(counts, lambda p, m: bernstein_entry(p, m, L))
            beta_bar = radius_sums(counts, lambda p, m: bernstein_entry(p, m, L))  # (S, A)
            augmented = known.replace(r=known.r + reward_factor * beta_bar, c=known.c + cost_factor * beta_bar[None])
            plan = solve(augmented, box)
            if not plan.feasible:
                return EpisodePlan(self.baseline, "infeasible", plan.value, plan.iterations, baseline=True)
            return EpisodePlan(self.played(plan), "optimistic", plan.value, plan.iterations)

        return plan_next


__all__ = ["DOPE"]
