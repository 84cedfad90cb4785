"""Grid worlds, the paper's scenarios and the Gymnasium adapter, against known answers."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import warnings

import numpy as np
import pytest

from cmdp_rl import CMDP, CMDPInputError, evaluate, solve
from cmdp_rl.envs import (
    DOWN,
    LEFT,
    RIGHT,
    SCENARIOS,
    UP,
    GridConstraint,
    cell_field,
    cell_of,
    get_scenario,
    grid_world,
    neighbours,
    scenario_cmdp,
    scenario_table,
    slip_kernel,
    state_index,
)
from cmdp_rl.envs.scenarios import min_costs_among_optimal
from cmdp_rl.evaluation.evaluate import optimal_values

THIRD = 0.1 / 3.0

# DESIGN section 10: (V* constrained, V unconstrained), from an independent solver
DESIGN_VALUES = {"1a": (4.418, 4.908), "1b": (3.515, 4.820), "2": (4.303, 7.519)}


# --------------------------------------------------------------------------- grid layout


def test_state_index_and_cell_of_roundtrip() -> None:
    assert state_index(0, 0, 3) == 0
    assert state_index(2, 0, 3) == 2
    assert state_index(0, 1, 3) == 3
    assert state_index(2, 2, 3) == 8
    assert state_index(1, 1, 4, 2) == 5
    for s in range(12):
        x, y = cell_of(s, 4, 3)
        assert state_index(x, y, 4, 3) == s


def test_neighbours_walls_on_3x2() -> None:
    """3 wide, 2 tall: states 0 1 2 (bottom row), 3 4 5 (top row)."""
    nbr = neighbours(3, 2)
    assert nbr[UP].tolist() == [3, 4, 5, 3, 4, 5]  # top row hits the wall
    assert nbr[RIGHT].tolist() == [1, 2, 2, 4, 5, 5]
    assert nbr[DOWN].tolist() == [0, 1, 2, 0, 1, 2]
    assert nbr[LEFT].tolist() == [0, 0, 1, 3, 3, 4]


# --------------------------------------------------------------------------- hand-checked kernels


@pytest.fixture
def grid3() -> CMDP:
    """3x3, goal (2,2) = state 8, slip 0.8 / 0.1 / 0.1."""
    return grid_world(3, H=4, goal=(2, 2), p_int=0.8, p_stay=0.1, p_other=0.1)


def _row(P: np.ndarray, s: int, a: int) -> dict[int, float]:
    return {int(t): float(P[s, a, t]) for t in np.flatnonzero(P[s, a] > 0)}


def test_corner_cell_kernel(grid3: CMDP) -> None:
    P = grid3.P
    # (0,0) up: up to (0,1)=3 w.p. 0.8; stay 0.1; right to 1 w.p. 0.1/3; down and left hit walls
    assert _row(P, 0, UP) == pytest.approx({3: 0.8, 1: THIRD, 0: 0.1 + 2 * THIRD})
    assert _row(P, 0, RIGHT) == pytest.approx({1: 0.8, 3: THIRD, 0: 0.1 + 2 * THIRD})
    # down: the intended move hits the wall too
    assert _row(P, 0, DOWN) == pytest.approx({0: 0.8 + 0.1 + THIRD, 1: THIRD, 3: THIRD})
    assert _row(P, 0, LEFT) == pytest.approx({0: 0.8 + 0.1 + THIRD, 1: THIRD, 3: THIRD})


def test_edge_and_centre_kernel(grid3: CMDP) -> None:
    P = grid3.P
    # (1,0) left: to 0 w.p. 0.8; up to 4, right to 2 w.p. 0.1/3 each; down wall -> stay
    assert _row(P, 1, LEFT) == pytest.approx({0: 0.8, 4: THIRD, 2: THIRD, 1: 0.1 + THIRD})
    # (1,1) up: p_other split evenly over right, down, left
    assert _row(P, 4, UP) == pytest.approx({7: 0.8, 4: 0.1, 5: THIRD, 1: THIRD, 3: THIRD})
    # (2,1) right: wall; intended mass stays
    assert _row(P, 5, RIGHT) == pytest.approx({5: 0.9, 8: THIRD, 2: THIRD, 4: THIRD})


def test_goal_absorbing_and_reward(grid3: CMDP) -> None:
    assert np.array_equal(grid3.P[8], np.tile(np.eye(9)[8], (4, 1)))
    expected_r = np.zeros((9, 4))
    expected_r[8] = 1.0
    assert np.array_equal(grid3.r, expected_r)
    assert grid3.s0 == 0 and grid3.N == 0 and grid3.A == 4


def _reference_kernel(
    w: int, h: int, goal: tuple[int, int], pi: np.ndarray, ps: np.ndarray, po: np.ndarray
) -> np.ndarray:
    """Independent triple-loop implementation of DESIGN section 10's slip model."""
    moves = [(0, 1), (1, 0), (0, -1), (-1, 0)]
    S = w * h
    P = np.zeros((S, 4, S))
    for s in range(S):
        x, y = s % w, s // w
        for a in range(4):
            if (x, y) == goal:
                P[s, a, s] = 1.0
                continue
            P[s, a, s] += ps[s]
            for d, (dx, dy) in enumerate(moves):
                nx, ny = x + dx, y + dy
                t = ny * w + nx if (0 <= nx < w and 0 <= ny < h) else s
                P[s, a, t] += pi[s] if d == a else po[s] / 3.0
    return P


@pytest.mark.parametrize("w,h,seed", [(1, 1, 0), (2, 2, 1), (4, 3, 2), (2, 5, 3)])
def test_kernel_matches_loop_reference_per_cell(w: int, h: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(3), size=w * h)
    pi, ps, po = probs.T.copy()
    before = probs.copy()
    goal = (w - 1, h - 1)
    P = slip_kernel(w, h, goal, pi, ps, po)
    assert P.shape == (w * h, 4, w * h)
    np.testing.assert_allclose(P, _reference_kernel(w, h, goal, pi, ps, po), atol=1e-14)
    np.testing.assert_allclose(P.sum(-1), 1.0, atol=1e-12)
    assert np.array_equal(np.stack([pi, ps, po], axis=1), before)  # inputs untouched


def test_two_by_two_with_no_other_slip() -> None:
    m = grid_world(2, H=3, goal=(1, 1), start=(1, 0), p_int=0.7, p_stay=0.3, p_other=0.0)
    assert m.s0 == 1
    assert _row(m.P, 0, UP) == pytest.approx({2: 0.7, 0: 0.3})
    assert _row(m.P, 0, LEFT) == pytest.approx({0: 1.0})
    assert _row(m.P, 1, UP) == pytest.approx({3: 0.7, 1: 0.3})


# --------------------------------------------------------------------------- costs


def test_action_and_cell_costs() -> None:
    m = grid_world(
        3,
        H=5,
        goal=(2, 2),
        constraints=[
            GridConstraint(2.0, action_costs={RIGHT: 1.0}),
            GridConstraint(0.5, cell_costs={(1, 0): 1.0, (0, 2): 0.25}),
            GridConstraint(1.0, action_costs={UP: 0.5, LEFT: 0.25}, cell_costs={(0, 0): 0.5}),
        ],
    )
    assert m.c.shape == (3, 9, 4)
    assert m.c_bar.tolist() == [2.0, 0.5, 1.0]
    expect0 = np.zeros((9, 4))
    expect0[:, RIGHT] = 1.0  # anywhere, the goal included
    assert np.array_equal(m.c[0], expect0)
    expect1 = np.zeros((9, 4))
    expect1[1, :] = 1.0
    expect1[6, :] = 0.25
    assert np.array_equal(m.c[1], expect1)
    assert m.c[2, 0].tolist() == [1.0, 0.5, 0.5, 0.75]
    assert m.c[2, 4].tolist() == [0.5, 0.0, 0.0, 0.25]


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "kwargs,needle",
    [
        (dict(p_int=0.8, p_stay=0.1, p_other=0.2), "sum to 1"),
        (dict(p_int=1.1, p_stay=-0.1, p_other=0.0), "p_stay"),
        (dict(p_int=np.full(4, 0.8)), "p_int"),
        (dict(p_int=np.full((3, 3), 0.8)), "p_int"),
        (dict(p_other=float("nan")), "p_other"),
        (dict(goal=(3, 0)), "goal"),
        (dict(start=(0, -1)), "start"),
        (dict(start="corner"), "start"),
        (dict(H=0), "H"),
        (dict(constraints=[GridConstraint(1.0, action_costs={4: 1.0})]), "action_costs"),
        (dict(constraints=[GridConstraint(1.0, action_costs={RIGHT: 2.0})]), "action_costs[1]"),
        (dict(constraints=[GridConstraint(1.0, cell_costs={(5, 5): 1.0})]), "cell_costs"),
        (
            dict(constraints=[GridConstraint(1.0, action_costs={RIGHT: 0.6}, cell_costs={(0, 0): 0.6})]),
            "rescale",
        ),
        (dict(constraints=[GridConstraint(float("inf"))]), "c_bar"),
        (dict(constraints=GridConstraint(1.0)), "constraints"),
    ],
)
def test_validation_names_the_argument(kwargs: dict[str, object], needle: str) -> None:
    args: dict[str, object] = dict(H=5, goal=(2, 2))
    args.update(kwargs)
    with pytest.raises(CMDPInputError) as err:
        grid_world(3, **args)  # type: ignore[arg-type]
    assert needle in str(err.value)


def test_validation_of_grid_size_and_states() -> None:
    with pytest.raises(CMDPInputError, match="width"):
        grid_world(0, H=2, goal=(0, 0))
    with pytest.raises(CMDPInputError, match="height"):
        grid_world(2, 0, H=2, goal=(0, 0))
    with pytest.raises(CMDPInputError, match="s: must be a state index"):
        cell_of(9, 3)
    with pytest.raises(CMDPInputError, match="cell"):
        state_index(3, 0, 3)


def test_per_cell_arrays_not_modified() -> None:
    p_int = cell_field(3, 3, 0.7, {(1, 0): 0.95})
    p_stay = cell_field(3, 3, 0.3, {(1, 0): 0.05})
    saved = (p_int.copy(), p_stay.copy())
    grid_world(3, H=3, goal=(2, 0), p_int=p_int, p_stay=p_stay, p_other=0.0)
    assert np.array_equal(p_int, saved[0]) and np.array_equal(p_stay, saved[1])


# --------------------------------------------------------------------------- scenarios


def test_scenario_registry_and_errors() -> None:
    assert list(SCENARIOS) == ["1a", "1b", "2"]
    for name in SCENARIOS:
        m = scenario_cmdp(name)
        assert m.names == name
        assert get_scenario(name).name == name
        np.testing.assert_allclose(m.P.sum(-1), 1.0, atol=1e-12)
    with pytest.raises(CMDPInputError) as err:
        get_scenario("3")
    assert "1a" in str(err.value) and "1b" in str(err.value) and "2" in str(err.value)


def test_scenario_shapes() -> None:
    a, b, two = (scenario_cmdp(n) for n in ("1a", "1b", "2"))
    assert (a.S, a.A, a.H, a.N, a.s0, a.c_bar.tolist()) == (9, 4, 10, 1, 0, [2.0])
    assert (b.S, b.A, b.H, b.N, b.s0, b.c_bar.tolist()) == (25, 4, 15, 1, 0, [3.0])
    assert (two.S, two.A, two.H, two.N, two.s0, two.c_bar.tolist()) == (9, 4, 10, 1, 0, [0.0])
    assert a.r[8].tolist() == [1.0] * 4 and a.r.sum() == 4.0
    assert b.r[24].tolist() == [1.0] * 4 and b.r.sum() == 4.0
    assert two.r[2].tolist() == [1.0] * 4 and two.r.sum() == 4.0
    assert np.array_equal(a.c[0], np.tile([0.0, 1.0, 0.0, 0.0], (9, 1)))
    bad = np.zeros((9, 4))
    bad[1] = 1.0
    assert np.array_equal(two.c[0], bad)


def test_scenario_2_kernel_by_hand() -> None:
    P = scenario_cmdp("2").P
    assert _row(P, 0, RIGHT) == pytest.approx({1: 0.7, 0: 0.3})
    assert _row(P, 1, RIGHT) == pytest.approx({2: 0.95, 1: 0.05})  # the fast bad cell
    assert _row(P, 1, UP) == pytest.approx({4: 0.95, 1: 0.05})
    assert _row(P, 5, DOWN) == pytest.approx({2: 0.7, 5: 0.3})
    assert _row(P, 0, DOWN) == pytest.approx({0: 1.0})
    assert _row(P, 2, LEFT) == pytest.approx({2: 1.0})  # goal absorbing


def _greedy(m: CMDP) -> np.ndarray:
    V = optimal_values(m.P, m.r, m.H)
    pol = np.zeros((m.H, m.S, m.A))
    for h in range(m.H):
        pol[h, np.arange(m.S), (m.r + m.P @ V[h + 1]).argmax(axis=1)] = 1.0
    return pol


@pytest.mark.parametrize("name", ["1a", "1b", "2"])
def test_scenario_optima_match_design(name: str) -> None:
    m = scenario_cmdp(name)
    v_star, v_free = DESIGN_VALUES[name]
    res = solve(m)
    assert res.status == "optimal"
    assert res.value == pytest.approx(v_star, abs=1e-3)
    assert evaluate(m, res.policy).value == pytest.approx(v_star, abs=1e-3)
    # the constraint binds
    assert res.costs[0] == pytest.approx(m.c_bar[0], abs=1e-6)
    free = optimal_values(m.P, m.r, m.H)[0, m.s0]
    assert free == pytest.approx(v_free, abs=1e-3)
    greedy = evaluate(m, _greedy(m))
    assert greedy.value == pytest.approx(free, abs=1e-12)
    assert greedy.costs[0] > m.c_bar[0] + 0.4
    # every unconstrained optimum is infeasible: V* is strictly below the free optimum
    assert res.value < free - 0.1


def test_scenario_2_avoids_the_bad_cell() -> None:
    res = solve(scenario_cmdp("2"))
    assert res.occupancy[:, 1, :].sum() < 1e-9


def _right_range_lp(m: CMDP) -> tuple[float, float]:
    """Fewest and most expected rights among unconstrained optima, by a lexicographic LP."""
    V = optimal_values(m.P, m.r, m.H)[0, m.s0]
    keep_opt = (1.0 - m.r)[None]  # sum mu (1 - r) <= H - V  <=>  value >= V
    cb = np.array([m.H - V + 1e-9])
    fewest = m.H - solve(CMDP(m.P, 1.0 - m.c[0], keep_opt, cb, m.s0, m.H)).value
    most = solve(CMDP(m.P, m.c[0], keep_opt, cb, m.s0, m.H)).value
    return fewest, most


@pytest.mark.parametrize("name,design_rights", [("1a", 3.63), ("1b", 6.04)])
def test_unconstrained_rights(name: str, design_rights: float) -> None:
    """DESIGN quotes one unconstrained optimum's rights; ties (e.g. up vs right on the
    diagonal, any action at the goal) make that number policy-dependent, so check it lies
    in the range over all unconstrained optima, and that even the fewest violate c_bar."""
    m = scenario_cmdp(name)
    fewest, most = _right_range_lp(m)
    assert fewest - 1e-6 <= design_rights <= most + 1e-6
    assert min_costs_among_optimal(m)[0] == pytest.approx(fewest, abs=1e-4)
    assert fewest > m.c_bar[0] + 0.4


def test_scenario_table() -> None:
    rows = scenario_table()
    assert [r["name"] for r in rows] == ["1a", "1b", "2"]
    for row in rows:
        v_star, v_free = DESIGN_VALUES[row["name"]]
        assert row["v_star"] == pytest.approx(v_star, abs=1e-3)
        assert row["v_unconstrained"] == pytest.approx(v_free, abs=1e-3)
        assert row["A"] == 4 and row["N"] == 1 and row["status"] == "optimal"
        assert row["unconstrained_min_costs"][0] > row["c_bar"][0]
    assert (rows[0]["grid"], rows[0]["S"], rows[0]["H"], rows[0]["c_bar"]) == ("3x3", 9, 10, (2.0,))
    assert (rows[1]["grid"], rows[1]["S"], rows[1]["H"], rows[1]["c_bar"]) == ("5x5", 25, 15, (3.0,))
    rows[0]["v_star"] = -1.0
    assert scenario_table()[0]["v_star"] == pytest.approx(4.418, abs=1e-3)  # fresh dicts


# --------------------------------------------------------------------------- gymnasium


@pytest.mark.slow
def test_envs_package_does_not_import_gymnasium() -> None:
    code = "import sys, cmdp_rl.envs; print('gymnasium' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.slow
def test_gym_env_clear_import_error_without_gymnasium() -> None:
    """Blocking the import of gymnasium makes the adapter fail with an actionable message."""
    code = (
        "import sys; sys.modules['gymnasium'] = None\n"
        "try:\n    import cmdp_rl.envs.gym_env\nexcept ImportError as e:\n    print(e)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "gymnasium" in out.stdout and "cmdp-rl[gym]" in out.stdout


needs_gym = pytest.mark.skipif(
    importlib.util.find_spec("gymnasium") is None, reason="gymnasium (extra 'gym') not installed"
)


@pytest.fixture(scope="module")
def env_ids() -> list[str]:
    pytest.importorskip("gymnasium")
    from cmdp_rl.envs.gym_env import register_scenarios

    ids = register_scenarios()
    assert register_scenarios() == ids  # idempotent
    return ids


def test_registered_ids(env_ids: list[str]) -> None:
    assert env_ids == ["cmdp_rl/Scenario1a-v0", "cmdp_rl/Scenario1b-v0", "cmdp_rl/Scenario2-v0"]


@pytest.mark.parametrize("idx", range(3))
def test_check_env_passes(env_ids: list[str], idx: int) -> None:
    import gymnasium as gym
    from gymnasium.utils.env_checker import check_env

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(gym.make(env_ids[idx]).unwrapped, skip_render_check=False)
        check_env(gym.make(env_ids[idx], render_mode="ansi").unwrapped, skip_render_check=False)


def _trajectory(env: object, seed: int, episodes: int = 3) -> list[tuple]:
    out = []
    for ep in range(episodes):
        obs, _ = env.reset(seed=seed if ep == 0 else None)  # type: ignore[attr-defined]
        actions = np.random.default_rng(seed + ep).integers(4, size=100)
        done = False
        t = 0
        while not done:
            nxt, rew, term, trunc, info = env.step(int(actions[t]))  # type: ignore[attr-defined]
            out.append((obs, int(actions[t]), nxt, rew, tuple(info["cost"]), term, trunc))
            obs, done, t = nxt, term or trunc, t + 1
    return out


@pytest.mark.parametrize("idx", range(3))
def test_same_seed_same_trajectory(env_ids: list[str], idx: int) -> None:
    import gymnasium as gym

    t1 = _trajectory(gym.make(env_ids[idx]), seed=7)
    t2 = _trajectory(gym.make(env_ids[idx]), seed=7)
    assert t1 == t2
    t3 = _trajectory(gym.make(env_ids[idx]), seed=8)
    assert t1 != t3


@needs_gym
def test_episode_length_reward_and_cost() -> None:
    from cmdp_rl.envs.gym_env import CMDPEnv

    m = scenario_cmdp("2")
    env = CMDPEnv(m)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    obs, info = env.reset(seed=0)
    assert obs == m.s0 and info["h"] == 0
    for h in range(1, m.H + 1):
        s = env.state
        a = RIGHT
        nxt, rew, term, trunc, info = env.step(a)
        assert rew == m.r[s, a]
        assert isinstance(info["cost"], np.ndarray) and info["cost"].shape == (1,)
        assert info["cost"][0] == m.c[0, s, a]
        assert not term and trunc == (h == m.H) and info["h"] == h
        assert m.P[s, a, nxt] > 0
    with pytest.raises(RuntimeError):
        env.step(0)
    env.reset()
    with pytest.raises(CMDPInputError, match="action"):
        env.step(4)


@needs_gym
def test_env_samples_the_kernel() -> None:
    from cmdp_rl.envs.gym_env import CMDPEnv

    env = CMDPEnv(scenario_cmdp("1a"))
    env.reset(seed=123)
    counts = np.zeros(9)
    for _ in range(20000):
        env.reset()
        nxt, *_ = env.step(UP)
        counts[nxt] += 1
    freq = counts / counts.sum()
    np.testing.assert_allclose(freq, env.cmdp.P[0, UP], atol=0.015)
    assert counts[[2, 4, 5, 6, 7, 8]].sum() == 0
