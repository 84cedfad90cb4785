"""The baselines' re-plan: the extended LP over a confidence set, warm-started from the previous plan.

[`WarmELP`][cmdp_rl.learners.replan.WarmELP] is what the baselines' planners call before every episode
(a confidence set of either layout: dense ``(S, A, S)`` bounds, or the sparse set of the visited
transitions), and
[`plan_status`][cmdp_rl.learners.replan.plan_status] the episode status of its plan.
"""

from __future__ import annotations

from cmdp_rl.confidence.sets import AnyBox
from cmdp_rl.model.cmdp import KnownParts
from cmdp_rl.planning.elp import plan_on_box
from cmdp_rl.planning.elp_dense import ELPWorkspace
from cmdp_rl.planning.result import PlanResult


def plan_status(plan: PlanResult) -> str:
    """The episode status of a solved plan: ``"optimistic"`` when feasible, else ``"infeasible"``."""
    return "optimistic" if plan.feasible else "infeasible"


class WarmELP:
    """One run's extended-LP planner: [`plan_on_box`][cmdp_rl.planning.elp.plan_on_box] (column
    generation over a confidence set of either layout) with its own master-LP workspace,
    warm-started from its previous plan.

    With a box of radius 0 (``empirical_box``) the plausible set is ``{p_hat}``: the plain
    occupancy LP on ``p_hat``.
    """

    def __init__(self) -> None:
        self.workspace = ELPWorkspace()
        self.previous: PlanResult | None = None

    def __call__(self, known: KnownParts, box: AnyBox) -> PlanResult:
        plan = plan_on_box(known, box, self.previous, workspace=self.workspace)
        self.previous = plan
        return plan


__all__ = ["WarmELP", "plan_status"]
