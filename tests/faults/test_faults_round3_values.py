"""Round three, class 10: values refused or accepted wrongly.

A float32 policy whose rows are off by 4e-8 was refused by ``evaluate`` and ``certify`` ("must sum
to 1 (tolerance 1e-08)") though float32 kernels get a widened tolerance; ``reset()`` returning
``np.array(0)`` was refused though ``Discrete(n).contains(np.array(0))``; a simulator reward
``"0.5"`` and a cost ``True`` were accepted and a cost ``None`` reported as ``nan``;
``solve_safe(c=None)`` said "holds ... None". Now one row rule by dtype
(``validation.distribution_rows``) serves kernels, policies, baselines and initial
distributions, the simulator reads rewards and costs under ``CMDP()``'s rules, and
``solve_safe`` says that a constraint is needed.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from faultkit import EXIT_BAD_INPUT, assert_one_line_refusal, cases, cli

import cmdp_rl
from cmdp_rl import CMDPInputError, certify, evaluate, make, solve_safe
from cmdp_rl.simulators.blackbox import SimulatorError

CLASS = "Round 3: 10. Values refused or accepted wrongly"

HERE = Path(__file__).resolve().parent
ENV = {"PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}


def _float32_policy(H: int, S: int, A: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    p = rng.random((H, S, A)).astype(np.float32)
    p /= p.sum(axis=-1, keepdims=True)
    return p


def test_float32_policy_evaluate_and_certify(tmp_path: Path, tally: Callable[[int], None]) -> None:
    model = make("1a")
    H, S, A = model.H, model.S, model.A
    counts = np.round(model.P * 100).astype(np.int64)
    n = 0
    for seed in range(cases(2, 10)):
        pol = _float32_policy(H, S, A, seed)
        off = float(np.abs(pol.astype(np.float64).sum(-1) - 1.0).max())
        assert off <= 4 * A * float(np.finfo(np.float32).eps)  # what float32 rows can do
        ev = evaluate(model, pol)
        # the same policy renormalized in float64 has the same value, up to float32 rounding
        exact = pol.astype(np.float64) / pol.astype(np.float64).sum(-1, keepdims=True)
        assert ev.value == pytest.approx(evaluate(model, exact).value, rel=1e-12)
        certify(pol, counts, model.r, model.c, model.c_bar, model.s0, H)
        n += 2
        # a float64 policy off by as much is still refused: the widening is for float32 only
        if off > 1e-8:
            with pytest.raises(CMDPInputError, match=r"^policy\[.*must sum to 1 \(tolerance 1e-08\)"):
                evaluate(model, pol.astype(np.float64))
            n += 1
    np.save(tmp_path / "p32.npy", _float32_policy(H, S, A, 0))
    np.save(tmp_path / "counts.npy", counts)
    proc = cli(
        "certify", "1a", "--policy", str(tmp_path / "p32.npy"), "--counts", str(tmp_path / "counts.npy"), "--json"
    )
    assert proc.returncode in (0, 1), proc.stderr
    assert "value" in json.loads(proc.stdout)
    tally(n + 1)


def _env(first: Any, reward: Any, cost: Any) -> Any:
    class Env:
        observation_space = gym.spaces.Discrete(3)
        action_space = gym.spaces.Discrete(2)

        def reset(self, seed: Any = None) -> Any:
            return first, {}

        def step(self, action: int) -> Any:
            return 0, reward, False, False, {"cost": cost}

    return Env()


def test_reset_zero_d_array_accepted(tally: Callable[[int], None]) -> None:
    space = gym.spaces.Discrete(3)
    for first in (np.array(0), np.array(2, dtype=np.int32), np.int64(1)):
        assert space.contains(first)
        rec = cmdp_rl.learn(_env(first, 0.5, 0.1), H=3, c_bar=[1.0], episodes=2)
        assert rec.realized_return.shape == (2,)
    for first in (np.array([0]), np.array(0.0), "0", True):
        with pytest.raises(SimulatorError, match="reset"):
            cmdp_rl.learn(_env(first, 0.5, 0.1), H=3, c_bar=[1.0], episodes=2)
    tally(7)


@pytest.mark.parametrize(
    ("reward", "cost", "shown"),
    [("0.5", 0.1, "reward '0.5'"), (True, 0.1, "reward True"), (None, 0.1, "reward None"),
     (0.5, True, "cost True"), (0.5, None, "cost None"), (0.5, "0.1", "cost '0.1'"),
     (0.5, [0.1, "a"], "cost [0.1, 'a']"), (1 + 0j, 0.1, "reward (1+0j)")],
)  # fmt: skip
def test_simulator_values_as_cmdp(reward: Any, cost: Any, shown: str, tally: Callable[[int], None]) -> None:
    with pytest.raises(SimulatorError, match=rf"^episode 0, step 0: {re.escape(shown)} is not"):
        cmdp_rl.learn(_env(0, reward, cost), H=3, c_bar=[1.0], episodes=2)
    tally(1)


def test_simulator_cost_none_cli(tally: Callable[[int], None]) -> None:
    kwargs = json.dumps({"info": {"cost": None}})
    argv = ["learn", "--env", "fault_envs:cmdp_rl_faults/BadInfo-v0", "--env-kwargs", kwargs]
    proc = cli(*argv, "--horizon", "3", "--c-bar", "1", "--episodes", "2", "--json", env=ENV)
    line = assert_one_line_refusal(proc, EXIT_BAD_INPUT)
    assert "cost None" in line and "nan" not in line, line
    tally(1)


def test_solve_safe_needs_a_constraint(tally: Callable[[int], None]) -> None:
    model = make("1a")
    counts = np.round(model.P * 100)
    for c, c_bar in (
        (None, model.c_bar),
        (model.c, None),
        (None, None),
        (np.zeros((0, model.S, model.A)), np.zeros(0)),
    ):
        with pytest.raises(CMDPInputError, match=r"N >= 1"):
            solve_safe(counts, model.r, c, c_bar, model.s0, model.H)
    tally(4)
