"""``optcmdp-bonus``: OptCMDP-bonus of Efroni, Mannor and Pirotta (2020, arXiv 2003.02189).

Before every episode, solve the occupancy LP on ``p_hat`` with the bonus-augmented reward
``r + b`` and costs ``c_i - b`` (optimism in both), where
``b(s, a) = bonus_scale * H * sum_s2 beta_p(s, a, s2)``
(``efroni_bonus``, a form not checked against the paper: see the docs page 'Baselines'). The arrays leave ``[0, 1]``;
the LP is solved through the planners' internal entry point ([`solve_elp_known`][cmdp_rl.planning.elp.solve_elp_known]
with zero radius).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.confidence.sets import empirical_box_and_sums
from cmdp_rl.learners.base import OnlineLearner
from cmdp_rl.learners.bonuses import bernstein_entry, check_bonus_size, efroni_log
from cmdp_rl.learners.episodes import EpisodePlan, EpisodePlanner
from cmdp_rl.learners.replan import WarmELP, plan_status


class OptCMDPBonus(OnlineLearner):
    """OptCMDP-bonus (module docstring).

    Args:
        cmdp: what is known (``KnownParts``), or a ``CMDP`` whose ``r, c, c_bar, s0, H`` are kept (never ``P``).
        delta: failure probability of the bonus' radius.
        episodes: the budget ``K`` (in the radius' logarithm).
        bonus_scale: factor on ``b`` (0: the plug-in LP).
    """

    name: ClassVar[str] = "optcmdp-bonus"
    column_plans: ClassVar[bool] = True

    def planner(self) -> EpisodePlanner:
        """Each call: LP on ``p_hat`` with ``r + b`` and ``c - b``."""
        solve = WarmELP()
        known, K, delta, scale = self.known, self.episodes, self.delta, self.bonus_scale
        H = known.H
        check_bonus_size(scale, scale * H * known.S, H, "reward and cost")  # b <= scale H S (S radii <= 1)

        def plan_next(counts: NDArray[np.int64]) -> EpisodePlan:
            known = self.known
            L = efroni_log(known.S, known.A, H, K, delta)  # efroni_radius, entry by entry
            box, sums = empirical_box_and_sums(counts, lambda p, m: bernstein_entry(p, m, L))
            b = scale * H * sums  # (S, A)
            plan = solve(known.replace(r=known.r + b, c=known.c - b[None]), box)
            return EpisodePlan(self.played(plan), plan_status(plan), plan.value, plan.iterations)

        return plan_next


__all__ = ["OptCMDPBonus"]
