"""Every registered problem is a Gymnasium environment that passes Gymnasium's own checker."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from cmdp_rl.envs.gym_env import CMDPEnv, register_problems
from cmdp_rl.envs.registry import episodic_problems, make

SMALL = {"garnet": "garnet:S=6,A=2,H=4"}  # registry defaults are fine elsewhere; keep the checker quick


@pytest.mark.parametrize("name", episodic_problems())
def test_check_env_on_every_registered_problem(name: str) -> None:
    env = CMDPEnv(make(SMALL.get(name, name)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a checker warning is a failure
        check_env(env, skip_render_check=True)
    obs, _ = env.reset(seed=3)
    _, reward, terminated, _truncated, info = env.step(env.action_space.sample())
    assert env.observation_space.contains(obs) and not terminated
    assert info["cost"].shape == (env.cmdp.N,) and 0.0 <= float(reward) <= 1.0


def test_registered_ids_make_the_same_model() -> None:
    ids = register_problems()
    assert "cmdp_rl/garnet-v0" in ids and "cmdp_rl/1a-v0" in ids
    env = gym.make("cmdp_rl/garnet-v0", spec="garnet:S=5,seed=2")
    assert np.array_equal(env.unwrapped.cmdp.P, make("garnet:S=5,seed=2").P)
