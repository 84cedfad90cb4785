"""A simulator's costs in the environment's units (``learn(cost_range=...)``, ``cmdp_rl.simulators.ranges``).

The reference is a unit environment: its costs are quarter multiples in ``[0, 1]``, so every map
below is exact in floating point (``(10 x + 2 - 2) / 10 == x`` for ``x`` a multiple of 0.25), and
a run on the scaled environment with the ranges and thresholds mapped by hand must play exactly
the unit run's actions, and report its costs as the affine images computed here.
"""

from __future__ import annotations

import json
import re
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from cmdp_rl import CMDP, CMDPInputError, learn, random_cmdp
from cmdp_rl.cli import main
from cmdp_rl.envs.gym_env import CMDPEnv
from cmdp_rl.simulators.blackbox import SimulatorError
from cmdp_rl.simulators.ranges import check_cost_range

H = 4


def twins() -> tuple[CMDP, CMDP]:
    """``(unit, big)``: the same kernel and rewards; ``big``'s costs ``10 c_0 + 2`` and ``4 c_1 - 1``,
    its thresholds mapped by hand (``10 c_bar_0 + 2 H``, ``4 c_bar_1 - H``)."""
    m = random_cmdp(6, 2, H, 2, seed=1, support=3)
    c = np.round(m.c * 4) / 4
    unit = CMDP(m.P, m.r, c, [1.5, 2.5], 0, H)
    big = CMDP(m.P, m.r, np.stack([10 * c[0] + 2, 4 * c[1] - 1]), [10 * 1.5 + 2 * H, 4 * 2.5 - H], 0, H)
    return unit, big


def scaled(x: np.ndarray, steps: float | np.ndarray = H) -> np.ndarray:
    """Sums of unit costs ``x (..., 2)`` over ``steps`` steps in ``big``'s units."""
    steps = np.asarray(steps, dtype=float)
    return np.stack([10 * x[..., 0] + 2 * steps, 4 * x[..., 1] - 1 * steps], axis=-1)


@pytest.mark.parametrize("algorithm", ["online-crl", "optcmdp"])
def test_scaled_costs_play_the_unit_run_and_report_its_images(algorithm: str) -> None:
    unit, big = twins()
    a = learn(CMDPEnv(unit), H=H, c_bar=unit.c_bar, episodes=12, algorithm=algorithm, seed=3)
    b = learn(
        CMDPEnv(big), H=H, c_bar=big.c_bar, episodes=12, algorithm=algorithm, seed=3, cost_range=[(2, 12), (-1, 3)]
    )
    # the same actions: the same counts, the same policies and status
    assert (a.counts != b.counts).nnz == 0 and np.array_equal(a.policy, b.policy)
    assert list(a.episode_status) == list(b.episode_status) and a.status == b.status
    # rewards untouched; costs, thresholds and violations in the environment's units
    assert np.array_equal(a.realized_return, b.realized_return) and np.array_equal(a.planned_value, b.planned_value)
    assert np.allclose(b.realized_costs, scaled(a.realized_costs), rtol=0, atol=1e-12)
    assert np.allclose(b.costs, scaled(a.costs), rtol=0, atol=1e-9) and np.allclose(a.value, b.value)
    assert np.array_equal(b.c_bar, big.c_bar) and np.array_equal(b.cost_scale, [10.0, 4.0])
    assert np.array_equal(a.cost_exceedances, b.cost_exceedances)
    excess = np.maximum(np.max((a.costs - unit.c_bar) * [10.0, 4.0], axis=1), 0.0)  # width x the unit excess
    assert np.allclose(b.violation, excess, rtol=0, atol=1e-9) and np.allclose(a.value_gap, b.value_gap)
    # the certificate: the same verdict, its cost bounds H lo + w x
    ca, cb = a.certificate, b.certificate
    assert ca is not None and cb is not None and ca.safe == cb.safe and b.certified == a.certified
    assert np.allclose(cb.cost_lo, scaled(ca.cost_lo)) and np.allclose(cb.cost_hi, scaled(ca.cost_hi))
    assert (cb.value_lo, cb.value_hi) == (ca.value_lo, ca.value_hi)
    assert b.settings["cost_range"] == [[2.0, 12.0], [-1.0, 3.0]] and a.settings["cost_range"] is None


def test_one_pair_for_every_cost_and_a_safe_learners_baseline_costs() -> None:
    unit, _ = twins()
    c = unit.c
    big = CMDP(unit.P, unit.r, 10 * c + 2, 10 * unit.c_bar + 2 * H, 0, H)
    policy = np.zeros((H, 6, 2))
    policy[:, :, 0] = 1.0
    base_costs = np.array([0.5, 1.25])  # given by the user as the baseline's costs (on the unit scale)
    a = learn(
        CMDPEnv(unit), H=H, c_bar=unit.c_bar, episodes=6, algorithm="optpess", seed=1, baseline=(policy, base_costs)
    )
    b = learn(
        CMDPEnv(big), H=H, c_bar=big.c_bar, episodes=6, algorithm="optpess", seed=1,
        baseline=(policy, 10 * base_costs + 2 * H), cost_range=(2, 12),
    )  # fmt: skip
    assert (a.counts != b.counts).nnz == 0 and np.array_equal(a.policy, b.policy)
    assert np.array_equal(a.baseline, b.baseline) and a.status == b.status
    assert np.allclose(b.realized_costs, 10 * a.realized_costs + 2 * H, rtol=0, atol=1e-12)


class Ends(gym.Env[int, int]):
    """Two states; a step costs ``cost`` and the episode terminates after ``end`` steps."""

    def __init__(self, cost: Any, end: int = 99) -> None:
        self.observation_space, self.action_space = gym.spaces.Discrete(2), gym.spaces.Discrete(2)
        self.cost, self.end, self.t, self.steps = cost, end, 0, 0

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[int, dict[str, Any]]:
        self.t = 0
        return 0, {}

    def step(self, a: int) -> Any:
        self.t += 1
        self.steps += 1
        return 1, 0.5, self.t == self.end, False, {"cost": self.cost}


def test_realized_costs_count_the_steps_the_environment_took() -> None:
    # 2 steps of cost 7 before the environment ends the episode: 14 whatever the range (the
    # learner saw 0.5 per step on [2, 12] and nothing in the absorbing state)
    rec = learn(Ends(7.0, end=2), H=4, c_bar=40.0, episodes=3, cost_range=(2.0, 12.0))
    assert np.allclose(rec.realized_costs, 14.0)
    assert np.allclose(rec.mean_realized_costs, 14.0) and rec.cost_exceedances.sum() == 0
    rec = learn(Ends(-0.5), H=4, c_bar=-1.0, episodes=2, cost_range=(-1.0, 1.0))  # negative costs, threshold
    assert np.allclose(rec.realized_costs, -2.0) and rec.cost_exceedances.sum() == 0


def test_a_cost_outside_its_range_and_bad_ranges_are_refused() -> None:
    with pytest.raises(SimulatorError, match=r"^episode 0, step 0: cost 0 = 13.0 outside cost_range \[2.0, 12.0\]$"):
        learn(Ends(13.0), H=4, c_bar=20.0, episodes=2, cost_range=(2, 12))
    with pytest.raises(SimulatorError, match=r"^episode 0, step 0: cost 0 = 7.0 outside \[0, 1\] \(give cost_range"):
        learn(Ends(7.0), H=4, c_bar=1.0, episodes=2)
    env = Ends(7.0)
    for kwargs, pattern in [
        ({"cost_range": (1.0, 1.0)}, r"^cost_range: needs lo < hi"),
        ({"cost_range": "0 1"}, r"^cost_range: must be a pair"),
        ({"cost_range": [(0, 1), (0, 2), (0, 3)], "c_bar": [9.0, 9.0]}, r"^cost_range: give one pair .* got 3 pairs"),
        ({"cost_range": [(0, 1), (2, 1)], "c_bar": [9.0, 9.0]}, r"^cost_range\[1\]: needs lo < hi"),
        ({"cost_range": (2, 12), "c_bar": 7.0}, r"^c_bar\[0\]: must be >= H lo = 8"),
        ({"cost_range": (0, 1e308)}, r"^cost_range: returns of H = 4 steps .* overflow"),
        ({"c_bar": -1.0}, r"^c_bar: thresholds must be >= 0 .*give cost_range"),
        ({"cost_range": (2, 12), "c": np.full((1, 2, 2), 1.0)}, r"^c: entries must lie in its cost_range"),
    ]:
        args: dict[str, Any] = {"H": 4, "c_bar": 40.0, "episodes": 2, **kwargs}
        with pytest.raises(CMDPInputError, match=pattern):
            learn(env, **args)
    assert env.steps == 0  # refused before any step


def test_check_cost_range_reads_one_pair_or_one_per_constraint() -> None:
    assert check_cost_range(None, 2) is None
    assert check_cost_range((2, 12), 2).tolist() == [[2.0, 12.0], [2.0, 12.0]]
    assert check_cost_range([[2, 12]], 2).tolist() == [[2.0, 12.0], [2.0, 12.0]]
    assert check_cost_range([(2, 12), (-1, 3)], 2).tolist() == [[2.0, 12.0], [-1.0, 3.0]]
    with pytest.raises(CMDPInputError, match=r"^cost_range\[0\]: must be a pair"):
        check_cost_range([(0, 1, 2), (0, 1)], 2)


def test_cli_cost_range_end_to_end(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["learn", "--env", "cmdp_rl/1a-v0", "--horizon", "5", "--episodes", "4", "--json", "--deploy", "last"]
    assert main([*base, "--c-bar", "1"]) in (0, 1)
    unit = json.loads(capsys.readouterr().out)
    # 1a's costs lie in [0, 1], a subset of [0, 2]: the learner sees them halved, the record does not
    assert main([*base, "--c-bar", "1", "--cost-range", "0", "2"]) in (0, 1)
    out = json.loads(capsys.readouterr().out)
    rec = learn("cmdp_rl/1a-v0", H=5, c_bar=1.0, episodes=4, cost_range=(0, 2), deploy="last")
    assert out["mean_realized_costs"] == [float(rec.mean_realized_costs[-1, 0])] and out["c_bar"] == [1.0]
    assert out["certificate"]["costs"] == [[float(rec.certificate.cost_lo[0]), float(rec.certificate.cost_hi[0])]]
    assert unit["c_bar"] == [1.0]
    for extra, pattern in [
        (["--c-bar", "1", "--cost-range", "1", "1"], "--cost-range: needs lo < hi"),
        (["--c-bar", "1", "--cost-range", "0", "2", "--cost-range", "0", "1"], "--cost-range: give one pair"),
        (["--c-bar", "1", "--cost-range", "0.5", "2"], r"--c-bar\[0\]: must be >= H lo = 2.5 \(--cost-range"),
        (["--c-bar=-1"], "c-bar: each threshold must be a finite number >= 0"),
    ]:
        assert main([*base, *extra]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and re.search(pattern, err[0]), err
