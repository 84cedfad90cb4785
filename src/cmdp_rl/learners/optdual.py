"""``optdual``: OptDual-CMDP of Efroni, Mannor and Pirotta (2020, arXiv 2003.02189).

Optimistic Lagrangian planning with projected dual ascent (see the docs page 'Baselines'):

* ``lambda_1 = 0`` (one multiplier per constraint);
* before episode ``k``, extended value iteration over the per-entry Bernstein set
  (``efroni_radius``) on the Lagrangian reward
  ``r - lambda_k . c`` gives a deterministic policy ``pi_k`` and an optimistic kernel ``P_k``
  ([`evi`][cmdp_rl.confidence.box.evi], the compiled sweep);
* ``lambda_{k+1,i} = max(0, lambda_{k,i} + t (C_i(pi_k; P_k) - c_bar_i))`` with the step
  ``t = 1 / (H sqrt(K))`` (``optdual_step``, marked [verify]).

The update uses only the planner's own quantities, so it is applied right after planning.
The multiplier of every episode is recorded (``record.info["multipliers"]``, ``(K, N)``).
Violations are allowed (sublinear in ``K``).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.confidence.sets import radius_box
from cmdp_rl.learners.base import OnlineLearner
from cmdp_rl.learners.bonuses import bernstein_entry, efroni_log, optdual_step
from cmdp_rl.learners.episodes import EpisodePlan, EpisodePlanner
from cmdp_rl.model.cmdp import CMDP, KnownParts
from cmdp_rl.planning.elp import optimistic_column

Array = NDArray[np.float64]


class OptDual(OnlineLearner):
    """OptDual-CMDP (module docstring).

    Args:
        cmdp: what is known (``KnownParts``), or a ``CMDP`` whose ``r, c, c_bar, s0, H`` are kept (never ``P``).
        delta: failure probability of the Bernstein set.
        episodes: the budget ``K`` (in the radius' logarithm and the step size).
        bonus_scale: recorded only (OptDual has no bonus; its optimism is the set).
    """

    name: ClassVar[str] = "optdual"

    def __init__(
        self,
        cmdp: CMDP | KnownParts,
        delta: float = 0.1,
        *,
        episodes: int,
        bonus_scale: float = 1.0,
        statistics: str = "dense",
    ) -> None:
        super().__init__(cmdp, delta, episodes=episodes, bonus_scale=bonus_scale, statistics=statistics)
        self.step = optdual_step(self.known.H, self.episodes)
        self._multipliers: list[Array] = []

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "step": self.step}

    def planner(self) -> EpisodePlanner:
        """Each call: EVI on ``r - lambda . c``, then the dual step (module docstring)."""
        known, K, delta, t = self.known, self.episodes, self.delta, self.step
        H, S, A = known.H, known.S, known.A
        lam = np.zeros(known.N)
        history = self._multipliers = []
        hh, ss = np.arange(H)[:, None], np.arange(S)[None, :]

        def plan_next(counts: NDArray[np.int64]) -> EpisodePlan:
            nonlocal lam
            known = self.known
            L = efroni_log(S, A, H, K, delta)  # efroni_radius, entry by entry
            box = radius_box(counts, lambda p, m: bernstein_entry(p, m, L))
            actions, value, costs = optimistic_column(known, box, lam)  # EVI on r - lam . c, its column
            history.append(lam.copy())
            lam = np.maximum(0.0, lam + t * (costs - known.c_bar))
            policy = np.zeros((H, S, A))
            policy[hh, ss, actions] = 1.0
            return EpisodePlan(policy, "optimistic", value, 1)

        return plan_next

    def _info(self) -> dict[str, Any]:
        N = self.known.N
        return {"multipliers": np.array(self._multipliers).reshape(len(self._multipliers), N)}


__all__ = ["OptDual"]
