"""Environments: grid-world CMDPs, the paper's scenarios, the N-constraints family
([`copies`][cmdp_rl.envs.n_constraints.copies], [`distinct`][cmdp_rl.envs.n_constraints.distinct]), and (optionally) a
Gymnasium adapter.

The Gymnasium adapter lives in [`cmdp_rl.envs.gym_env`][cmdp_rl.envs.gym_env] and is not imported
here, so ``gymnasium`` stays an optional dependency (extra ``gym``).
"""

from cmdp_rl.envs.grid import (
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
from cmdp_rl.envs.n_constraints import copies, distinct
from cmdp_rl.envs.scenarios import SCENARIOS, Scenario, get_scenario, scenario_cmdp, scenario_table

__all__ = [
    "ACTION_NAMES",
    "DOWN",
    "LEFT",
    "MOVES",
    "N_ACTIONS",
    "RIGHT",
    "SCENARIOS",
    "UP",
    "GridConstraint",
    "Scenario",
    "cell_field",
    "cell_of",
    "constraint_costs",
    "copies",
    "distinct",
    "get_scenario",
    "grid_world",
    "neighbours",
    "scenario_cmdp",
    "scenario_table",
    "slip_kernel",
    "state_index",
]
