"""Planners: the exact LP, extended value iteration, and the extended LP (literal and fast)."""

from .lp import solve
from .result import PlanResult, SolverError, policy_from_occupancy

__all__ = ["PlanResult", "SolverError", "policy_from_occupancy", "solve"]
