"""``optpess``: OptPess-LP of Liu, Zhou, Kalathil, Kumar and Tian (2021, arXiv 2106.02684).

Optimistic in the reward, pessimistic in the cost, on the empirical kernel ``p_hat``, with a
known safe policy ``pi_0`` of cost ``C_0 < c_bar`` (gap ``gamma = min_i (c_bar_i - C_0,i)``)
(the DOPE authors' MediaControl form; ``docs/baselines.md``):

* ``beta(s, a) = sqrt(L / max(n(s, a), 1))``, ``L = log(32 S^2 H K / delta)``;
* ``r_tilde = r + (1 + S H + 4 H (1 + S H) / gamma) beta``, ``c_tilde_i = c_i + (1 + S H) beta``
  (both bonuses times ``bonus_scale``; ``optpess_bonuses``);
* safety test: if ``C_i(pi_0; p_hat, c_tilde_i) >= (C_0,i + c_bar_i) / 2`` for some ``i``,
  play ``pi_0`` (status ``"baseline"``); else solve the LP on ``p_hat`` with ``r_tilde`` and
  ``c_tilde`` and play it (``"optimistic"``), or ``pi_0`` if it is infeasible (``"infeasible"``).

With several constraints the test and the cost rows run per constraint. The paper's
guarantee is zero violation with high probability.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from cmdp_rl.certificates.certify import column_bounds
from cmdp_rl.confidence.box import Box
from cmdp_rl.confidence.counts import check_counts, pair_counts
from cmdp_rl.confidence.radii import empirical_kernel
from cmdp_rl.confidence.sets import AnyBox, empirical_box
from cmdp_rl.evaluation.evaluate import occupancy
from cmdp_rl.evaluation.mixture import MixturePolicy
from cmdp_rl.learners.bonuses import check_bonus_size, optpess_log
from cmdp_rl.learners.episodes import EpisodePlan, EpisodePlanner
from cmdp_rl.learners.replan import WarmELP
from cmdp_rl.learners.safe import SafeLearner
from cmdp_rl.model.cmdp import CMDP, KnownParts
from cmdp_rl.plumbing.errors import CMDPTypeError

Array = NDArray[np.float64]


class OptPess(SafeLearner):
    """OptPess-LP (module docstring).

    Args:
        cmdp: what is known (``KnownParts``), or a ``CMDP`` whose ``r, c, c_bar, s0, H`` are kept (never ``P``).
        delta: failure probability.
        episodes: the budget ``K`` (in the radius' logarithm).
        baseline: ``(H, S, A)`` the safe policy ``pi_0``.
        baseline_costs: ``(N,)`` its exact costs ``C_0`` (each below its threshold).
        bonus_scale: factor on both bonuses.
        safety_test: apply the pessimistic safety test (``False`` switches it off: then only
            an infeasible LP plays ``pi_0``).
    """

    name: ClassVar[str] = "optpess"
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
        safety_test: bool = True,
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
        if not isinstance(safety_test, (bool, np.bool_)):
            raise CMDPTypeError(f"safety_test: must be True or False, got {type(safety_test).__name__}")
        self.safety_test = bool(safety_test)

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "safety_test": self.safety_test}

    def planner(self) -> EpisodePlanner:
        """Each call: bonuses, the safety test, then the pessimistic LP (module docstring)."""
        solve = WarmELP()
        known, pi0 = self.known, self.baseline
        H, S = known.H, known.S
        L = optpess_log(S, H, self.episodes, self.delta)
        SH = float(S * H)
        reward_factor = self.bonus_scale * (1.0 + SH + 4.0 * H * (1.0 + SH) / self.gamma)
        cost_factor = self.bonus_scale * (1.0 + SH)
        # the largest radius is sqrt(L), at an unvisited pair
        check_bonus_size(self.bonus_scale, reward_factor * math.sqrt(L), H, "reward", gap=self.gamma)
        check_bonus_size(self.bonus_scale, cost_factor * math.sqrt(L), H, "cost")
        test_level = (self.baseline_costs + known.c_bar) / 2.0  # (N,)
        pi0_plan = EpisodePlan(pi0, "baseline", float("nan"), 0, baseline=True)

        def plan_next(counts: NDArray[np.int64]) -> EpisodePlan:
            known = self.known
            cnt, _, _ = check_counts(counts)
            sparse = sp.issparse(cnt)  # dense: p_hat once, the box only when the LP is solved
            box: AnyBox | None = empirical_box(cnt) if sparse else None
            p_hat, n = (None, pair_counts(cnt)) if sparse else empirical_kernel(cnt)
            beta = np.sqrt(L / np.maximum(n, 1))  # (S, A)
            c_tilde = known.c + cost_factor * beta[None]
            if self.safety_test:  # the baseline's expected costs on p_hat
                base_costs = baseline_costs_on(box, p_hat, pi0, c_tilde, known)
                if np.any(base_costs >= test_level):
                    return pi0_plan
            if box is None:
                assert p_hat is not None  # the dense layout's estimate
                box = Box.from_radius(p_hat, np.zeros_like(p_hat))
            pess = known.replace(r=known.r + reward_factor * beta, c=c_tilde)
            plan = solve(pess, box)
            if not plan.feasible:
                return EpisodePlan(pi0, "infeasible", plan.value, plan.iterations, baseline=True)
            return EpisodePlan(self.played(plan), "optimistic", plan.value, plan.iterations)

        return plan_next


def baseline_costs_on(
    box: AnyBox | None, p_hat: Array | None, policy: Array | MixturePolicy, c_tilde: Array, known: KnownParts
) -> Array:
    """``(N,)`` the expected costs ``c_tilde (N, S, A)`` of ``policy (H, S, A)`` from ``s0`` on the
    empirical kernel: by a backward sweep over ``box`` (sparse counts: ``empirical_box``, radius 0),
    else by the forward occupancy on ``p_hat (S, A, S)``, as in the recorded runs (a backward sweep
    differs by rounding). A compact baseline: the weighted sum of its columns' costs, each by a
    backward sweep over that box ([`column_bounds`][cmdp_rl.certificates.certify.column_bounds]; no
    ``(H, S, A)`` table)."""
    if isinstance(policy, MixturePolicy):
        if box is None:
            assert p_hat is not None  # the dense layout's estimate
            box = Box.from_radius(p_hat, np.zeros_like(p_hat))
        upper = np.ones(known.N, dtype=bool)  # radius 0: the upper and lower sweeps agree
        return np.asarray(policy.weights @ column_bounds(box, policy.columns, c_tilde, upper, known.s0))
    if box is not None:
        out: Array = box.robust_values(policy, c_tilde, np.ones(known.N, dtype=bool))[:, known.s0]
        return out
    assert p_hat is not None
    return np.asarray(np.einsum("hsa,isa->i", occupancy(p_hat, policy, known.s0), c_tilde))


__all__ = ["OptPess", "baseline_costs_on"]
