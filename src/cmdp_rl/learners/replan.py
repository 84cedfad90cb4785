"""The baselines' re-plan: the extended LP over a confidence set, warm-started from the previous plan.

[`WarmELP`][cmdp_rl.learners.replan.WarmELP] is what the baselines' planners call before every episode
(dense ``(S, A, S)`` estimates with radii, or a sparse confidence set of the visited transitions), and
[`plan_status`][cmdp_rl.learners.replan.plan_status] the episode status of its plan.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.confidence.box import Box
from cmdp_rl.confidence.sparse_box import SparseBox
from cmdp_rl.model.cmdp import KnownParts
from cmdp_rl.planning.elp import plan_on_box
from cmdp_rl.planning.elp_dense import ELPWorkspace
from cmdp_rl.planning.elp_sparse import solve_sparse_elp
from cmdp_rl.planning.result import PlanResult

Array = NDArray[np.float64]


def plan_status(plan: PlanResult) -> str:
    """The episode status of a solved plan: ``"optimistic"`` when feasible, else ``"infeasible"``."""
    return "optimistic" if plan.feasible else "infeasible"


class WarmELP:
    """One run's extended-LP planner: [`solve_elp_known`][cmdp_rl.planning.elp.solve_elp_known] (column
    generation) with its own master-LP workspace, warm-started from its previous plan.

    With ``beta = 0`` the plausible set is ``{p_hat}``: the plain occupancy LP on ``p_hat``.
    """

    def __init__(self) -> None:
        self.workspace = ELPWorkspace()
        self.previous: PlanResult | None = None

    def __call__(self, known: KnownParts, p_hat: Array, beta: Array) -> PlanResult:
        plan = plan_on_box(known, Box.from_radius(p_hat, beta), self.previous, workspace=self.workspace)
        self.previous = plan
        return plan

    def sparse(self, known: KnownParts, box: SparseBox) -> PlanResult:
        """The same re-plan over a sparse confidence set (the sparse statistics' path,
        [`solve_sparse_elp`][cmdp_rl.planning.elp_sparse.solve_sparse_elp]), warm-started from its previous plan."""
        previous = self.previous
        warm = previous.info.get("warm_columns", ()) if previous is not None else ()
        plan = solve_sparse_elp(known.r, known.c, known.c_bar, known.s0, known.H, box, warm_start=warm)
        self.previous = plan
        return plan


__all__ = ["WarmELP", "plan_status"]
