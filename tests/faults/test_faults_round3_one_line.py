"""Round three, class 11: every refusal is one printable line.

An environment exception whose text has newlines was copied verbatim: three lines on stderr.
Now the command line prints every refusal, error, interrupt and warning through one function
(``cmdp_rl.cli.entry.say``) that flattens it with ``cmdp_rl.plumbing.errors.one_line`` (whitespace runs
to one space, other control characters escaped), argparse's errors included, and the API
messages that embed foreign text (an environment's exception, Gymnasium's) flatten it too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from faultkit import EXIT_BAD_INPUT, assert_one_line_refusal, cases, cli_batch

import cmdp_rl
from cmdp_rl.plumbing.errors import one_line
from cmdp_rl.simulators.blackbox import SimulatorError

CLASS = "Round 3: 11. One line"

#: foreign text with every kind of line break and control character
NASTY = "first line\nsecond\r\nthird\x0bfourth\x1b[31m red\x00 nul\u2028sep\u202e rtl\x7f del\tend"


def _printable_line(text: str) -> None:
    assert "\n" not in text.strip() and text.strip().isprintable(), repr(text)


def test_one_line_helper(tally: Callable[[int], None]) -> None:
    out = one_line(NASTY)
    _printable_line(out)
    assert out.startswith("first line second third fourth\\x1b[31m red\\x00 nul sep\\u202e rtl\\x7f del end"), out
    assert one_line("already one line: é ü") == "already one line: é ü"
    tally(2)


def test_cli_environment_exception_with_newlines(tmp_path: Path, tally: Callable[[int], None]) -> None:
    (tmp_path / "r3_nasty_env.py").write_text(
        "import gymnasium as gym\n"
        "class Nasty(gym.Env):\n"
        "    def __init__(self, where='step'):\n"
        "        self.where = where\n"
        "        if where == 'init':\n"
        f"            raise ValueError({NASTY!r})\n"
        "        self.observation_space = gym.spaces.Discrete(3)\n"
        "        self.action_space = gym.spaces.Discrete(2)\n"
        "    def reset(self, *, seed=None, options=None):\n"
        f"        if self.where == 'reset': raise RuntimeError({NASTY!r})\n"
        "        return 0, {}\n"
        "    def step(self, a):\n"
        f"        raise RuntimeError({NASTY!r})\n"
        "gym.register('R3Nasty-v0', entry_point=Nasty, disable_env_checker=True)\n"
    )
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    wheres = ["step", "init", "reset"][: cases(2, 3)]
    rest = ["--horizon", "3", "--c-bar", "1", "--episodes", "2", "--json"]
    argvs = [
        ["learn", "--env", "r3_nasty_env:R3Nasty-v0", "--env-kwargs", json.dumps({"where": w}), *rest] for w in wheres
    ]
    for proc in cli_batch(argvs, env=env):  # one fresh interpreter for the cases
        line = assert_one_line_refusal(proc, EXIT_BAD_INPUT)
        _printable_line(line)
        assert "first line second third" in line, line
    tally(len(wheres))


def test_cli_arguments_with_control_characters(tmp_path: Path, tally: Callable[[int], None]) -> None:
    runs = [
        ["solve", "1a\nfoo\x1b[2J"],
        ["solve", "1a", "--no-such-option\nline"],
        ["learn", "--env", "Foo\x1b[31m-v0", "--horizon", "3", "--c-bar", "1", "--episodes", "2"],
        ["certify", "1a", "--policy", "x\ny.npy", "--counts", "c.npy"],
    ][: cases(2, 4)]
    for proc in cli_batch(runs, cwd=tmp_path):
        line = assert_one_line_refusal(proc, EXIT_BAD_INPUT)
        _printable_line(line)
    tally(len(runs))


def test_api_messages_embed_foreign_text_on_one_line(tally: Callable[[int], None]) -> None:
    class Env:
        observation_space = gym.spaces.Discrete(3)
        action_space = gym.spaces.Discrete(2)

        def reset(self, seed: Any = None) -> Any:
            return 0, {}

        def step(self, action: int) -> Any:
            raise RuntimeError(NASTY)

    with pytest.raises(SimulatorError) as info:
        cmdp_rl.learn(Env(), H=3, c_bar=[1.0], episodes=2)
    _printable_line(str(info.value))
    assert "the environment raised RuntimeError in step(): first line second" in str(info.value)
    with pytest.raises(cmdp_rl.CMDPInputError) as info2:
        cmdp_rl.learn("Foo\n\x1b-v0", H=3, c_bar=[1.0], episodes=2)
    _printable_line(str(info2.value))
    tally(2)
