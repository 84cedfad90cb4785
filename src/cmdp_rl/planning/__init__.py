"""Planners: the exact planner (column generation with a certificate, or the LP), extended value
iteration, and the extended LP (literal and fast)."""

from .exact import METHODS, solve
from .result import PlanResult, SolverError, policy_from_occupancy

__all__ = ["METHODS", "PlanResult", "SolverError", "policy_from_occupancy", "solve"]
