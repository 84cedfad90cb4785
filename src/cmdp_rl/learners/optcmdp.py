"""``optcmdp``: OptCMDP of Efroni, Mannor and Pirotta (2020, arXiv 2003.02189).

Before every episode, solve the extended LP (the paper's eq. "ELP" form) over the per-entry
Bernstein set
``{P' : |P'(s2 | s, a) - p_hat(s2 | s, a)| <= beta_p(s, a, s2)}`` with the known ``r, c``:
``max V(P', pi)`` subject to ``C_i(P', pi) <= c_bar_i``. The constraints are optimistic
too (``P'`` is chosen jointly), so violations are allowed (sublinear in ``K``).
``beta_p`` is ``efroni_radius``
(``sqrt(4 p_hat (1 - p_hat) L / n) + 14 L / (3 n)``, ``L = log(2 S A H K / delta)``,
capped at 1, every next state kept: never the true support). Only the radii differ from
Online-CRL: the same fast exact extended-LP solver plans.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.confidence.sets import radius_box
from cmdp_rl.learners.base import OnlineLearner
from cmdp_rl.learners.bonuses import bernstein_entry, efroni_log
from cmdp_rl.learners.episodes import EpisodePlan, EpisodePlanner
from cmdp_rl.learners.replan import WarmELP, plan_status


class OptCMDP(OnlineLearner):
    """OptCMDP (module docstring).

    Args:
        cmdp: what is known (``KnownParts``), or a ``CMDP`` whose ``r, c, c_bar, s0, H`` are kept (never ``P``).
        delta: failure probability of the Bernstein set.
        episodes: the budget ``K`` (in the radius' logarithm).
        bonus_scale: recorded only (OptCMDP has no bonus; its optimism is the set).
    """

    name: ClassVar[str] = "optcmdp"
    column_plans: ClassVar[bool] = True

    def planner(self) -> EpisodePlanner:
        """Each call: extended LP over the Bernstein set of the counts."""
        solve = WarmELP()
        K, delta = self.episodes, self.delta

        def plan_next(counts: NDArray[np.int64]) -> EpisodePlan:
            known = self.known
            L = efroni_log(known.S, known.A, known.H, K, delta)  # efroni_radius, entry by entry
            plan = solve(known, radius_box(counts, lambda p, m: bernstein_entry(p, m, L)))
            return EpisodePlan(self.played(plan), plan_status(plan), plan.value, plan.iterations)

        return plan_next


__all__ = ["OptCMDP"]
