"""Exact scoring of a learned policy on the true model (the metrics of the docs page 'Baselines')."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.evaluation.evaluate import gap_and_violation, value_and_costs
from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.planning import solve
from cmdp_rl.plumbing.validation import CMDPInputError, CMDPTypeError, as_float


@dataclass(frozen=True)
class Scorer:
    """Computes ``V* - V^pi(s0)`` and ``max_i max(C_i^pi - c_bar_i, 0)`` exactly.

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

    def __call__(self, policy: NDArray[np.float64]) -> tuple[float, float]:
        """``(value_gap, violation)`` of an ``(H, S, A)`` policy (rows trusted to be distributions)."""
        self._check(policy)
        return gap_and_violation(self.cmdp, policy, self.v_star)

    def values(self, policy: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        """``(V^pi(s0), C^pi(s0) (N,))`` of an ``(H, S, A)`` policy on the true model (exact)."""
        self._check(policy)
        return value_and_costs(self.cmdp, policy)
