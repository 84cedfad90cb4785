"""Round three, class 8: environment set-up errors escaped as internal errors.

``learn --env FrozenLake-v1 --env-kwargs '{"map_name": "9x9"}'`` was exit 3 "internal error:
KeyError" (``import-gym`` refused the same options with exit 2), ``--env nosuchmod:Foo-v0`` was
exit 3, ``cmdp_rl.learn(obj)`` with an object without spaces raised ``AttributeError``. Now every
failure to make or inspect an environment (``cmdp_rl.envs.making``) is a one-line
``CMDPInputError`` naming ``env`` (``env_or_id`` for ``from_gymnasium``) or ``env_kwargs``, exit 2.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym
import pytest
from faultkit import EXIT_BAD_INPUT, assert_one_line_refusal, cases, cli

import cmdp_rl
from cmdp_rl import CMDPInputError
from cmdp_rl.envs.gymnasium_import import from_gymnasium

CLASS = "Round 3: 8. Environment set-up errors"

#: a module that registers an environment whose constructor fails (gymnasium imports it for
#: "r3_broken_env:R3Broken-v0")
BROKEN_MODULE = """
import gymnasium as gym

class Broken(gym.Env):
    def __init__(self, **kwargs):
        raise RuntimeError("cannot open the device\\nsecond line")

gym.register("R3Broken-v0", entry_point=Broken)
"""

#: (argv after the command, the name the refusal must start with)
CLI_CASES: list[tuple[list[str], str]] = [
    (["--env", "FrozenLake-v1", "--env-kwargs", '{"map_name": "9x9"}'], "env_kwargs"),
    (["--env", "nosuchmod:Foo-v0"], "env"),
    (["--env", "FrozenLake-v1", "--env-kwargs", '{"no_such_option": 1}'], "env_kwargs"),
    (["--env", "r3_broken_env:R3Broken-v0"], "env"),
    (["--env", "CartPole-v1"], "env"),
]


def _env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "r3_broken_env.py").write_text(BROKEN_MODULE)
    return {"PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}


def test_learn_env_cli(tmp_path: Path, tally: Callable[[int], None]) -> None:
    env = _env(tmp_path)
    chosen = CLI_CASES[: cases(2, len(CLI_CASES))]
    for argv, name in chosen:
        proc = cli("learn", *argv, "--horizon", "5", "--c-bar", "1", "--episodes", "2", cwd=tmp_path, env=env)
        line = assert_one_line_refusal(proc, EXIT_BAD_INPUT)
        assert line.startswith(f"cmdp-rl learn: error: {name}:"), line
    tally(len(chosen))


def test_import_gym_cli(tmp_path: Path, tally: Callable[[int], None]) -> None:
    env = _env(tmp_path)
    chosen = CLI_CASES[: cases(1, 4)]
    for argv, name in chosen:
        proc = cli("import-gym", argv[1], *argv[2:], "--horizon", "5", "--out", "x.npz", cwd=tmp_path, env=env)
        line = assert_one_line_refusal(proc, EXIT_BAD_INPUT)
        want = "env_or_id" if name == "env" else name
        assert line.startswith(f"cmdp-rl import-gym: error: {want}:"), line
        assert not (tmp_path / "x.npz").exists()
    tally(len(chosen))


class _NoSpaces:
    def reset(self, seed: Any = None) -> Any:
        return 0, {}

    def step(self, action: int) -> Any:
        return 0, 0.5, False, False, {"cost": 0.1}


class _FailingSpace(_NoSpaces):
    action_space = gym.spaces.Discrete(2)

    @property
    def observation_space(self) -> Any:
        raise RuntimeError("not connected")


class _OddSpace(_NoSpaces):
    observation_space = gym.spaces.Discrete(3)

    class action_space:  # an object that pretends to be a space
        n = "two"


class _BadTable(_NoSpaces):
    observation_space = gym.spaces.Discrete(2)
    action_space = gym.spaces.Discrete(1)
    P: ClassVar[dict[int, Any]] = {0: {0: [(1.0, 0)]}, 1: {0: [(1.0, 1)]}}  # outcomes of two items, not four


@pytest.mark.parametrize("obj", [object(), _NoSpaces(), _FailingSpace(), _OddSpace(), 5, None, "nosuchmod:Foo-v0"])
def test_api_learn(obj: Any, tally: Callable[[int], None]) -> None:
    with pytest.raises(CMDPInputError, match=r"^env: "):
        cmdp_rl.learn(obj, H=3, c_bar=[1.0], episodes=2)
    tally(1)


@pytest.mark.parametrize("obj", [_NoSpaces(), _FailingSpace(), _BadTable(), "nosuchmod:Foo-v0"])
def test_api_from_gymnasium(obj: Any, tally: Callable[[int], None]) -> None:
    with pytest.raises(CMDPInputError, match=r"^env_or_id: "):
        from_gymnasium(obj, 3)
    tally(1)


def test_api_env_kwargs(tally: Callable[[int], None]) -> None:
    with pytest.raises(CMDPInputError, match=r"^env_kwargs: 'FrozenLake-v1' refused them \(KeyError"):
        cmdp_rl.learn("FrozenLake-v1", H=3, c_bar=[1.0], episodes=2, env_kwargs={"map_name": "9x9"})
    with pytest.raises(CMDPInputError, match=r"^cost: computing the cost"):
        from_gymnasium("FrozenLake-v1", 3, cost=lambda s, a, s2: 1 / 0, c_bar=0.1)
    tally(2)
