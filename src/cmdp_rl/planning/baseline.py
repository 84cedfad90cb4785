"""The safe baseline policy of a problem and its Slater gap (see the docs page 'Baselines').

The safe baseline is the optimal policy of the true CMDP with every threshold divided
by 5 (the DOPE experiments' convention), or, where that is infeasible, the policy
minimizing the worst excess ``max_i (C_i - c_bar_i)``; both on the model's unit image
([`unit_model`][cmdp_rl.model.units.unit_model]: the same model for rewards and costs in ``[0, 1]``),
so the baseline does not depend on the units. Its value, costs and Slater gap are in the model's
units. It is computed from the true model, as in the papers' experiments: the safe learners of
this research line take it as a given input. Its exact costs and the Slater gap ``min_i (c_bar_i - C_i)`` are what a
safe learner needs to know.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.evaluation.evaluate import evaluate
from cmdp_rl.evaluation.mixture import MixturePolicy
from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.model.units import unit_model
from cmdp_rl.planning import solve
from cmdp_rl.planning.discounted import min_worst_excess_discounted
from cmdp_rl.planning.lp import min_worst_excess
from cmdp_rl.planning.solve import slater_gap
from cmdp_rl.plumbing.validation import CMDPInputError, CMDPTypeError

Array = NDArray[np.float64]

#: the DOPE experiments' convention: the baseline solves the problem with thresholds / 5
BASELINE_DIVISOR = 5.0


@dataclass(frozen=True)
class SafeBaseline:
    """A safe baseline policy with its exact value and costs on the true model.

    Attributes:
        policy: ``(H, S, A)``.
        value: ``V^pi(s0)``.
        costs: ``(N,)`` ``C_i^pi(s0)``.
        slater_gap: ``min_i (c_bar_i - C_i^pi(s0))``; positive means strictly safe.
        rule: ``"thresholds/5"`` or ``"min-worst-excess"``.
        mixture: the same policy as its plan's deterministic columns and weights (a
            [`MixturePolicy`][cmdp_rl.evaluation.mixture.MixturePolicy], what a learner playing mixtures
            plays), or ``None`` for a plan without columns (the LP's).
    """

    policy: Array
    value: float
    costs: Array
    slater_gap: float
    rule: str
    mixture: MixturePolicy | None = None


def safe_baseline(cmdp: CMDP) -> SafeBaseline:
    """The safe baseline of ``cmdp`` (module docstring); ``N = 0`` is refused (nothing to be safe about)."""
    if not isinstance(cmdp, CMDP):
        raise CMDPTypeError(f"cmdp: must be a cmdp_rl.CMDP, got {type(cmdp).__name__}")
    if cmdp.N == 0:
        raise CMDPInputError("cmdp: has no constraints (N = 0), so it has no safe baseline")
    image, _ = unit_model(cmdp)  # thresholds / 5 and the worst excess on the unit scale: the same in any units
    res = solve(image.replace(c_bar=image.c_bar / BASELINE_DIVISOR))
    rule = "thresholds/5"
    if not res.feasible:
        res = min_worst_excess_discounted(image) if image.is_discounted else min_worst_excess(image)
        rule = "min-worst-excess"
    ev = evaluate(cmdp, res.policy)
    mixture = None if res.columns is None else MixturePolicy.of_plan(res)
    return SafeBaseline(res.policy, ev.value, ev.costs, float(np.min(cmdp.c_bar - ev.costs)), rule, mixture)


__all__ = ["BASELINE_DIVISOR", "SafeBaseline", "safe_baseline", "slater_gap"]
