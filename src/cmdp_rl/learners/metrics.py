"""Exact scoring of a learned policy on the true model (the metrics of the docs page 'Baselines')."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.evaluation.evaluate import gap_and_violation, value_and_costs
from cmdp_rl.evaluation.mixture import MixturePolicy, evaluate_mixture, is_plan, mixture_policy
from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.planning import solve
from cmdp_rl.plumbing.validation import CMDPInputError, CMDPTypeError, as_float


@dataclass(frozen=True)
class Scorer:
    """Computes ``V* - V^pi(s0)`` and ``max_i max(C_i^pi - c_bar_i, 0)`` exactly.

    ``V*`` is the optimal plan's value (no policy table built). The policy scored is a learner's
    ``(H, S, A)`` table (its numbers as ever) or a compact one, a
    [`MixturePolicy`][cmdp_rl.evaluation.mixture.MixturePolicy] or a plan with columns, scored by
    the weighted sum of its columns' exact evaluations
    ([`evaluate_mixture`][cmdp_rl.evaluation.mixture.evaluate_mixture]), no ``(H, S, A)`` table.

    Attributes:
        cmdp: the true model.
        v_star: its constrained optimum ``V*(s0)`` (exact LP).
    """

    cmdp: CMDP
    v_star: float

    def __post_init__(self) -> None:
        if not isinstance(self.cmdp, CMDP):
            raise CMDPTypeError(f"cmdp: must be a cmdp_rl.CMDP, got {type(self.cmdp).__name__}")
        object.__setattr__(self, "v_star", as_float("v_star", self.v_star))

    @classmethod
    def for_model(cls, cmdp: CMDP) -> Scorer:
        """Solve the true model once; an infeasible true CMDP has no ``V*`` (Assumption 2)."""
        if not isinstance(cmdp, CMDP):
            raise CMDPTypeError(f"cmdp: must be a cmdp_rl.CMDP, got {type(cmdp).__name__}")
        cmdp.episodic("Scorer")
        res = solve(cmdp)
        if not res.feasible and res.min_costs is not None:
            raise CMDPInputError(
                "model: the true CMDP is infeasible (the paper's Assumption 2 "
                f"fails); smallest achievable costs {res.min_costs.tolist()}"
            )
        return cls(cmdp, res.value)

    def _check(self, policy: NDArray[np.float64]) -> None:
        m = self.cmdp
        if np.shape(policy) != (m.H, m.S, m.A):
            raise CMDPInputError(
                f"policy: expected shape {(m.H, m.S, m.A)} for the scorer's model, got {np.shape(policy)}"
            )

    def _compact(self, policy: object) -> MixturePolicy | None:
        """The mixture of a compact policy (a plan's columns and weights), else ``None``."""
        if isinstance(policy, MixturePolicy):
            return policy
        if is_plan(policy) and getattr(policy, "columns", None) is not None:
            return mixture_policy(getattr(policy, "columns"), getattr(policy, "weights"), self.cmdp.A)  # noqa: B009
        return None

    def __call__(self, policy: NDArray[np.float64] | MixturePolicy) -> tuple[float, float]:
        """``(value_gap, violation)`` of an ``(H, S, A)`` policy (rows trusted to be distributions) or
        of a compact one (class docstring)."""
        mix = self._compact(policy)
        if mix is None:
            self._check(policy)  # type: ignore[arg-type]
            return gap_and_violation(self.cmdp, policy, self.v_star)  # type: ignore[arg-type]
        value, costs = self.values(mix)
        return self.v_star - value, max(float(np.max(costs - self.cmdp.c_bar, initial=0.0)), 0.0)

    def values(self, policy: NDArray[np.float64] | MixturePolicy) -> tuple[float, NDArray[np.float64]]:
        """``(V^pi(s0), C^pi(s0) (N,))`` of an ``(H, S, A)`` policy or a compact one on the true
        model (exact)."""
        mix = self._compact(policy)
        if mix is not None:
            ev = evaluate_mixture(self.cmdp, mix)
            return ev.value, ev.costs
        self._check(policy)  # type: ignore[arg-type]
        return value_and_costs(self.cmdp, policy)  # type: ignore[arg-type]
