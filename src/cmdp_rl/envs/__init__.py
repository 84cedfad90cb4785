"""Environments: grid-world CMDPs, the paper's scenarios, and (optionally) a Gymnasium adapter.

The Gymnasium adapter lives in :mod:`cmdp_rl.envs.gym_env` and is not imported
here, so ``gymnasium`` stays an optional dependency (extra ``gym``).
"""

from .grid import (
    ACTION_NAMES,
    DOWN,
    LEFT,
    MOVES,
    N_ACTIONS,
    RIGHT,
    UP,
    GridConstraint,
    cell_field,
    cell_of,
    constraint_costs,
    grid_world,
    neighbours,
    slip_kernel,
    state_index,
)
from .scenarios import SCENARIOS, Scenario, get_scenario, scenario_cmdp, scenario_table

__all__ = ["UP", "RIGHT", "DOWN", "LEFT", "N_ACTIONS", "ACTION_NAMES", "MOVES",
           "GridConstraint", "grid_world", "slip_kernel", "constraint_costs", "neighbours",
           "cell_field", "state_index", "cell_of",
           "Scenario", "SCENARIOS", "get_scenario", "scenario_cmdp", "scenario_table"]
