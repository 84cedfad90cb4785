"""``plugin``: certainty equivalence, the naive baseline every comparison table needs.

Before every episode, solve the occupancy LP (paper eq. "lp") on the empirical kernel
``p_hat = n(s, a, s2) / n(s, a)`` (``1/S`` rows for unvisited pairs)
with the known ``r, c, c_bar``, no bonus and no confidence set, and play its optimal
policy. No exploration and no safety guarantee: violations are allowed (and reported).
The LP is solved as the extended LP with zero radius (column generation, warm-started
from the previous episode's columns), the library's fast exact path.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.confidence.sets import empirical_box
from cmdp_rl.learners.base import OnlineLearner
from cmdp_rl.learners.episodes import EpisodePlan, EpisodePlanner
from cmdp_rl.learners.replan import WarmELP, plan_status


class Plugin(OnlineLearner):
    """Certainty-equivalence learner (module docstring).

    Args:
        cmdp: what is known (``KnownParts``), or a ``CMDP`` whose ``r, c, c_bar, s0, H`` are kept (never ``P``).
        delta: recorded only (the plug-in plan has no confidence set).
        episodes: the budget ``K``.
        bonus_scale: recorded only (there is no bonus).
    """

    name: ClassVar[str] = "plugin"
    column_plans: ClassVar[bool] = True

    def planner(self) -> EpisodePlanner:
        """Each call: LP on ``p_hat`` of the counts; status ``"optimistic"`` or ``"infeasible"``
        (then the policy of least worst excess on ``p_hat`` is played)."""
        solve = WarmELP()

        def plan_next(counts: NDArray[np.int64]) -> EpisodePlan:
            plan = solve(self.known, empirical_box(counts))  # p_hat, radius 0 (either layout)
            return EpisodePlan(self.played(plan), plan_status(plan), plan.value, plan.iterations)

        return plan_next


__all__ = ["Plugin"]
