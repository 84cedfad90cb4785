"""Planners: the exact planner (column generation with a certificate, or the LP), extended value
iteration, and the extended LP (literal and fast)."""

from cmdp_rl.planning.result import PlanResult, SolverError, policy_from_occupancy
from cmdp_rl.planning.solve import METHODS, solve

__all__ = ["METHODS", "PlanResult", "SolverError", "policy_from_occupancy", "solve"]
