"""``dope-plus``: DOPE+ of Yu, Lee, Overman and Lee ("Improved regret bound for safe reinforcement
learning via tighter cost pessimism and reward optimism", RLC 2025, arXiv 2410.10158): DOPE's doubly
optimistic and pessimistic exploration with a known safe policy ``pi_b`` of cost ``C_b < c_bar``
(gap ``gamma = min_i (c_bar_i - C_b,i)``), whose cost pessimism and reward optimism come from a
law-of-total-variance bound on the episode's kernel error, a function of the kernel the planner picks
(``variance_bonuses``; ``docs/baselines.md``, section dope-plus, says what was read of the paper):

* play ``pi_b`` in the first ``K0`` episodes (status ``"baseline"``), ``K0 = ceil(S^2 A H^2 / gamma^2)``
  (``dope_plus_k0``: DOPE's ``K0`` with one ``H`` less, cmdp-rl's choice by analogy);
* afterwards solve the extended LP over DOPE's Bernstein set (``dope_radius``) maximizing
  ``r + (H / gamma) b`` subject to ``c_i + b <= c_bar_i``, with ``b`` the per-step cost bonus
  ``dope_plus_cost_bonus`` at the tangent point ``mu`` of the previous plan's occupancy
  (``dope_plus_scale``), and play its policy (``"optimistic"``), or ``pi_b`` when it is infeasible
  (``"infeasible"``).

The paper's guarantee: no constraint violation in any episode with high probability, and regret
``O~(H^2.5 S sqrt(A K) / gamma)`` (DOPE's is ``H^3``).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.confidence.sets import radius_box
from cmdp_rl.learners.bonuses import bernstein_entry, check_bonus_size, check_k0, dope_k0, dope_log
from cmdp_rl.learners.episodes import EpisodePlan, EpisodePlanner
from cmdp_rl.learners.replan import WarmELP
from cmdp_rl.learners.safe import SafeLearner
from cmdp_rl.learners.variance_bonuses import (
    VARIANCE_BOUNDS,
    dope_plus_cost_bonus,
    dope_plus_scale,
    dope_plus_terms,
    variance_budget,
)
from cmdp_rl.model.cmdp import CMDP, KnownParts
from cmdp_rl.plumbing.validation import check_choice


def dope_plus_k0(S: int, A: int, H: int, gamma: float) -> int:
    """DOPE+'s baseline phase: ``ceil(S^2 A H^2 / gamma^2)`` episodes of the safe policy.

    Not read in the paper: DOPE's ``S^2 A H^3 / gamma^2`` (``dope_k0``, the DOPE authors' code) with
    the ``H`` that DOPE+'s tighter cost pessimism saves (its bonuses are ``sqrt(H)`` smaller, the
    phase scales as their square); ``dope_k0``'s checks and rounding.

    Args:
        S: number of states (>= 1).
        A: number of actions (>= 1).
        H: horizon (>= 1).
        gamma: safety gap ``c_bar - C_b > 0`` of the safe policy.

    Returns:
        ``K0 >= 1``.
    """
    return dope_k0(S, A, H, gamma, horizon_power=2)


class DOPEPlus(SafeLearner):
    """DOPE+ (module docstring).

    Args:
        cmdp: what is known (``KnownParts``), or a ``CMDP`` whose ``r, c, c_bar, s0, H`` are kept (never ``P``).
        delta: failure probability of the Bernstein set.
        episodes: the budget ``K`` (in the radius' logarithm ``log(2 S A H K / delta)``).
        baseline: ``(H, S, A)`` the safe policy ``pi_b``.
        baseline_costs: ``(N,)`` its exact costs ``C_b`` (each below its threshold).
        bonus_scale: factor on both bonuses.
        k0: episodes of the baseline phase (``None``: ``dope_plus_k0``; 0: none).
        variance: the bound on the expected sum of variances, ``"ltv"`` (``H^2 / 4``, the paper's law of
            total variance) or ``"span"`` (``sum_h (H - h - 1)^2 / 4``, valid step by step);
            ``variance_budget``.
        statistics: ``"dense"`` or ``"sparse"`` counts.
    """

    name: ClassVar[str] = "dope-plus"
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
        variance: str = "ltv",
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
        self.variance = check_choice("variance", variance, VARIANCE_BOUNDS)
        k = self.known
        self.k0 = check_k0(k0, dope_plus_k0(k.S, k.A, k.H, self.gamma) if k0 is None else 0)

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "k0": self.k0, "variance": self.variance}

    def planner(self) -> EpisodePlanner:
        """Each call: the baseline while ``k <= K0``, then the extended LP with DOPE+'s bonuses."""
        solve = WarmELP()
        K, delta, gamma, k0, scale = self.episodes, self.delta, self.gamma, self.k0, self.bonus_scale
        H = self.known.H
        W = variance_budget(H, self.variance)
        # a per-step cost bonus is at most H (the span) plus mu / (2 H), mu <= sqrt(W H psi_max)
        check_bonus_size(scale, scale * (H / gamma) * 2.0 * H, H, "reward", gap=gamma)
        pi_b = EpisodePlan(self.baseline, "baseline", float("nan"), 0, baseline=True)
        episode = 0
        occupancy: NDArray[np.float64] | None = None
        L = dope_log(self.known.S, self.known.A, H, K, delta)  # DOPE's set, the same every episode

        def plan_next(counts: NDArray[np.int64]) -> EpisodePlan:
            nonlocal episode, occupancy
            known = self.known
            episode += 1
            if episode <= k0:
                return pi_b
            psi, xi, fallback = dope_plus_terms(counts, H, K, delta)
            mu = _tangent(occupancy, psi, W, H)
            cost = scale * dope_plus_cost_bonus(psi, xi, fallback, H, W, mu)
            box = radius_box(counts, lambda p, m: bernstein_entry(p, m, L))
            augmented = known.replace(r=known.r + (H / gamma) * cost, c=known.c + cost[None])
            plan = solve(augmented, box)
            occupancy = plan.occupancy
            if not plan.feasible:
                return EpisodePlan(self.baseline, "infeasible", plan.value, plan.iterations, baseline=True)
            return EpisodePlan(self.played(plan), "optimistic", plan.value, plan.iterations)

        return plan_next


def _tangent(occupancy: NDArray[np.float64] | None, psi: NDArray[np.float64], W: float, H: int) -> float:
    """The tangent point: the previous plan's ``dope_plus_scale``; before any plan (or with a plan that
    puts no weight on a pair with ``psi > 0``), the one of an occupancy spread evenly over the visited
    pairs with ``psi > 0``."""
    if occupancy is not None:
        mu = dope_plus_scale(occupancy, psi, W)
        if mu > 0.0:
            return mu
    positive = psi[psi > 0]
    return math.sqrt(W * H * float(positive.mean())) if positive.size else 0.0


__all__ = ["DOPEPlus", "dope_plus_k0"]
