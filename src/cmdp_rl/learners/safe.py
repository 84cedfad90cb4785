"""The base of the safe learners (OptPess-LP, DOPE): a known safe baseline policy and its costs.

A safe learner is an [`OnlineLearner`][cmdp_rl.learners.base.OnlineLearner] given a policy ``pi_b``
known to be strictly safe and its exact costs ``C_b``; its Slater gap
``gamma = min_i (c_bar_i - C_b,i)`` enters the learners' bonuses and baseline phases.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.certificates.safe import one_hot
from cmdp_rl.evaluation.mixture import MixturePolicy, check_columns
from cmdp_rl.learners.base import OnlineLearner
from cmdp_rl.model.cmdp import CMDP, KnownParts
from cmdp_rl.plumbing.validation import CMDPInputError, as_float_array, distribution_rows, plain

Array = NDArray[np.float64]


def check_baseline(baseline: Any, known: KnownParts) -> Array | MixturePolicy:
    """A safe learner's ``baseline``: an ``(H, S, A)`` table of distributions (a copy) or a
    [`MixturePolicy`][cmdp_rl.evaluation.mixture.MixturePolicy] of ``(K, H, S)`` columns playing
    actions the problem has (available ones on a ragged model); one-line refusals naming it."""
    H, S, A = known.H, known.S, known.A
    if isinstance(baseline, MixturePolicy):
        check_columns("baseline", baseline, (H, S), A, known.actions)
        return MixturePolicy(baseline.columns.copy(), baseline.weights.copy())
    pol = as_float_array("baseline", baseline, 3)
    if pol.shape != (H, S, A):
        raise CMDPInputError(f"baseline: expected an (H, S, A) = {(H, S, A)} policy, got {pol.shape}")
    distribution_rows("baseline", baseline, pol, "each action distribution baseline[h, s, :]")
    return pol


class SafeLearner(OnlineLearner):
    """A learner that is given a safe baseline policy and its exact costs (OptPess-LP, DOPE).

    Args:
        cmdp: what is known of the problem (``KnownParts``), or a ``CMDP`` whose known parts are
            kept (``P`` is never read).
        delta: failure probability in (0, 1).
        episodes: the budget ``K``.
        baseline: ``(H, S, A)`` the safe policy ``pi_b``, or a compact one: a
            [`MixturePolicy`][cmdp_rl.evaluation.mixture.MixturePolicy] of deterministic columns
            ``(K, H, S)``, played as a mixture (one column drawn per baseline episode).
        baseline_costs: ``(N,)`` its costs ``C_b`` on the true model (in the model's units),
            each strictly below its threshold: the Slater gap ``gamma = min_i (c_bar_i - C_b,i)``
            must be > 0. The learner keeps them (``baseline_costs``) and ``gamma`` on its unit
            scale ([`unit_known`][cmdp_rl.model.units.unit_known]; the same numbers for a model in
            ``[0, 1]``); ``settings()`` reports the costs as given.
        bonus_scale: factor (>= 0) on the reward and cost bonuses.
    """

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
        super().__init__(cmdp, delta, episodes=episodes, bonus_scale=bonus_scale, statistics=statistics)
        k = self.known
        if k.N == 0:
            raise CMDPInputError("cmdp: has no constraints (N = 0): a safe learner needs a constraint")
        pol = check_baseline(baseline, k)
        costs = as_float_array("baseline_costs", np.atleast_1d(np.asarray(baseline_costs)), 1)
        if costs.shape != (k.N,):
            raise CMDPInputError(f"baseline_costs: expected shape ({k.N},), got {costs.shape}")
        gap = float(np.min(self.problem.c_bar - costs))
        if not gap > 0.0:
            raise CMDPInputError(
                f"baseline_costs: the safe baseline has no Slater gap: min_i (c_bar_i - C_b,i) = {plain(gap)} "
                "must be > 0 (a safe learner needs a strictly safe policy; a problem whose thresholds "
                "cannot be met strictly, e.g. a threshold of 0, has none)"
            )
        unit_costs = self.units.unit_thresholds(costs) if not self.units.identity else costs
        for arr in (pol.columns if isinstance(pol, MixturePolicy) else pol, costs, unit_costs):
            arr.setflags(write=False)
        self.baseline, self.baseline_costs, self.gamma = pol, unit_costs, float(np.min(k.c_bar - unit_costs))
        self.given_baseline_costs = costs

    def baseline_components(self) -> tuple[Array, Array]:
        """The baseline as ``(tables (J, H, S, A), weights (J,))``: the table with weight 1, or each
        column of a mixture as its one-hot table with its weight (the mixture's value and costs on
        any kernel are the weighted sums of these tables', its occupancy being the weighted sum)."""
        pol = self.baseline
        if isinstance(pol, MixturePolicy):
            return one_hot(pol.columns.astype(np.intp), self.known.A), pol.weights
        return pol[None], np.ones(1)

    def settings(self) -> dict[str, Any]:
        return {
            **super().settings(),
            "gamma": self.gamma,
            "baseline_costs": [float(v) for v in self.given_baseline_costs],
        }


__all__ = ["SafeLearner", "check_baseline"]
