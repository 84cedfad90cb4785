"""The paper's grid-world scenarios ``1a``, ``1b`` and ``2`` (see the docs page 'Scenarios').

| scenario | grid, H | start -> goal | slip | constraint |
|---|---|---|---|---|
| ``1a`` | 3x3, H = 10 | (0,0) -> (2,2) | p_int 0.8, p_stay 0.1, p_other 0.1 | cost 1 per ``right``; c_bar = 2 |
| ``1b`` | 5x5, H = 15 | (0,0) -> (4,4) | same | cost 1 per ``right``; c_bar = 3 |
| ``2``  | 3x3, H = 10 | (0,0) -> (2,0) | p_int 0.7, p_stay 0.3, p_other 0; bad cell (1,0): p_int 0.95, p_stay 0.05 | cost 1 per step in (1,0); c_bar = 0 |

Use [`scenario_cmdp`][cmdp_rl.envs.scenarios.scenario_cmdp] for the model,
[`get_scenario`][cmdp_rl.envs.scenarios.get_scenario] for the record, and
[`scenario_table`][cmdp_rl.envs.scenarios.scenario_table] for a summary with the exact optima (solved once, cached).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial
from typing import Any

import numpy as np

from cmdp_rl.envs.grid import RIGHT, Cell, GridConstraint, cell_field, grid_world
from cmdp_rl.evaluation.evaluate import expected_next, optimal_values, q_values
from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.planning import solve
from cmdp_rl.plumbing.validation import CMDPInputError, plain


@dataclass(frozen=True)
class Scenario:
    """One registered scenario.

    Attributes:
        name: registry key (``"1a"``, ``"1b"``, ``"2"``).
        description: one-line description of the task and its constraint.
        width, height: grid size (``S = width * height``).
        start, goal: start and goal cells ``(x, y)``.
        factory: builds the CMDP (without the ``names`` metadata; use [`build`][cmdp_rl.envs.scenarios.Scenario.build]).
        gym_id: the Gymnasium id registered by ``cmdp_rl.envs.gym_env.register_scenarios``.
    """

    name: str
    description: str
    width: int
    height: int
    start: Cell
    goal: Cell
    factory: Callable[[], CMDP]
    gym_id: str

    def build(self) -> CMDP:
        """A fresh [`CMDP`][cmdp_rl.model.cmdp.CMDP] of this scenario, ``names`` set to ``name``."""
        return self.factory().replace(names=self.name)


def scenario_1_grid(size: int, H: int, c_bar: float) -> CMDP:
    """A ``size x size`` grid of scenario 1's kind: start (0, 0), goal (size-1, size-1), slip
    0.8/0.1/0.1, cost 1 per move right with threshold ``c_bar`` (scenarios 1a and 1b are
    ``(3, 10, 2)`` and ``(5, 15, 3)``; the ``large`` benchmark uses ``(20, 40, .)``). Arguments
    are checked by [`grid_world`][cmdp_rl.envs.grid.grid_world]."""
    return grid_world(
        size,
        size,
        H=H,
        start=(0, 0),
        goal=(size - 1, size - 1),
        p_int=0.8,
        p_stay=0.1,
        p_other=0.1,
        constraints=[GridConstraint(c_bar, action_costs={RIGHT: 1.0})],
    )


BAD_CELL_2: Cell = (1, 0)
"""The forbidden shortcut of scenario 2."""


def _scenario_2() -> CMDP:
    p_int = cell_field(3, 3, 0.7, {BAD_CELL_2: 0.95})
    p_stay = cell_field(3, 3, 0.3, {BAD_CELL_2: 0.05})
    return grid_world(
        3,
        3,
        H=10,
        start=(0, 0),
        goal=(2, 0),
        p_int=p_int,
        p_stay=p_stay,
        p_other=0.0,
        constraints=[GridConstraint(0.0, cell_costs={BAD_CELL_2: 1.0})],
    )


SCENARIOS: dict[str, Scenario] = {
    "1a": Scenario(
        name="1a",
        description="3x3 grid, H=10, (0,0)->(2,2), slip 0.8/0.1/0.1; cost 1 per 'right', c_bar=2",
        width=3,
        height=3,
        start=(0, 0),
        goal=(2, 2),
        factory=partial(scenario_1_grid, 3, 10, 2.0),
        gym_id="cmdp_rl/Scenario1a-v0",
    ),
    "1b": Scenario(
        name="1b",
        description="5x5 grid, H=15, (0,0)->(4,4), slip 0.8/0.1/0.1; cost 1 per 'right', c_bar=3",
        width=5,
        height=5,
        start=(0, 0),
        goal=(4, 4),
        factory=partial(scenario_1_grid, 5, 15, 3.0),
        gym_id="cmdp_rl/Scenario1b-v0",
    ),
    "2": Scenario(
        name="2",
        description=(
            "3x3 grid, H=10, (0,0)->(2,0), slip 0.7/0.3/0 (bad cell (1,0): 0.95/0.05); "
            "cost 1 per step in (1,0), c_bar=0"
        ),
        width=3,
        height=3,
        start=(0, 0),
        goal=(2, 0),
        factory=_scenario_2,
        gym_id="cmdp_rl/Scenario2-v0",
    ),
}
"""Registry of the paper's scenarios, keyed by name."""


def get_scenario(name: str) -> Scenario:
    """The registered [`Scenario`][cmdp_rl.envs.scenarios.Scenario] called ``name``.

    Raises:
        CMDPInputError: unknown name (the message lists the valid names).
    """
    key = str(name)
    if key not in SCENARIOS:
        raise CMDPInputError(f"scenario: unknown name {plain(name)}; valid names are {', '.join(SCENARIOS)}")
    return SCENARIOS[key]


def scenario_cmdp(name: str) -> CMDP:
    """The CMDP of scenario ``name`` (``names`` set to the scenario name)."""
    return get_scenario(name).build()


@cache
def _summary(name: str) -> tuple[tuple[str, Any], ...]:
    sc = get_scenario(name)
    m = sc.build()
    constrained = solve(m)
    free = solve(m.replace(c=np.zeros((0, m.S, m.A)), c_bar=np.zeros(0)))
    free_costs = min_costs_among_optimal(m)
    return (
        ("name", sc.name),
        ("description", sc.description),
        ("grid", f"{sc.width}x{sc.height}"),
        ("S", m.S),
        ("A", m.A),
        ("H", m.H),
        ("N", m.N),
        ("c_bar", tuple(float(v) for v in m.c_bar)),
        ("status", constrained.status),
        ("v_star", float(constrained.value)),
        ("costs", tuple(float(v) for v in constrained.costs)),
        ("v_unconstrained", float(free.value)),
        ("unconstrained_min_costs", tuple(float(v) for v in free_costs)),
    )


#: tolerance on ``Q`` values for an action to count as unconstrained-optimal
Q_TIE_TOL = 1e-9


def min_costs_among_optimal(cmdp: CMDP, tol: float = Q_TIE_TOL) -> np.ndarray:
    """``(N,)`` smallest cost of each constraint among the unconstrained-optimal policies.

    An optimal policy for the reward alone uses, at every reachable ``(h, s)``,
    only actions whose ``Q_h(s, a)`` is within ``tol`` of the maximum; the
    cheapest such policy for cost ``i`` is found by dynamic programming on
    ``-c_i`` restricted to those actions. When entry ``i`` exceeds ``c_bar[i]``,
    every unconstrained optimum violates constraint ``i``.
    """
    s0, H = cmdp.episodic("the unconstrained optima's costs")
    S = cmdp.S
    V = optimal_values(cmdp.kernel, cmdp.r, H)
    Q = q_values(cmdp.kernel, cmdp.r, V)  # (H, S, A)
    allowed = Q >= Q.max(axis=-1, keepdims=True) - tol
    out = np.zeros(cmdp.N)
    for i in range(cmdp.N):
        C = np.zeros(S)
        for h in range(H - 1, -1, -1):
            C = np.where(allowed[h], cmdp.c[i] + expected_next(cmdp.kernel, h, C), np.inf).min(axis=1)
        out[i] = C[s0]
    return out


def scenario_table() -> list[dict[str, Any]]:
    """One summary row per scenario, for ``cmdp-rl scenarios``.

    Keys: ``name``, ``description``, ``grid`` (e.g. ``"3x3"``), ``S``, ``A``, ``H``,
    ``N``, ``c_bar`` (tuple, ``(N,)``), ``status`` and ``v_star`` (exact
    constrained optimum from [`solve`][cmdp_rl.planning.solve.solve]), ``costs`` (its
    ``(N,)`` costs), ``v_unconstrained`` (optimum without constraints, also
    from [`solve`][cmdp_rl.planning.solve.solve]) and ``unconstrained_min_costs``
    (``(N,)``, [`min_costs_among_optimal`][cmdp_rl.envs.scenarios.min_costs_among_optimal]: the cost of the cheapest
    unconstrained optimum; above ``c_bar`` means the constraint binds). Solved
    once per process (cached); each call returns fresh dicts.
    """
    return [dict(_summary(name)) for name in SCENARIOS]


__all__ = [
    "BAD_CELL_2",
    "SCENARIOS",
    "Scenario",
    "get_scenario",
    "min_costs_among_optimal",
    "scenario_1_grid",
    "scenario_cmdp",
    "scenario_table",
]
