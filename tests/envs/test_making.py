"""``module:NAME`` environments (``cmdp_rl.envs.making``): the module imported from the working
directory as ``python -m`` does, ``NAME`` a class, a callable or a Gymnasium id the module
registers, and a one-line refusal for a module that cannot be imported (issue 'real models',
item 6)."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import cmdp_rl
from cmdp_rl.envs.making import gym_make, import_env_module
from cmdp_rl.plumbing.errors import CMDPInputError

_names = itertools.count()

#: a two-state environment: action 1 moves to state 1 (reward 1 there) and costs 1, action 0 stays
ENV_SOURCE = """
import gymnasium as gym


class Flip(gym.Env):
    observation_space = gym.spaces.Discrete(2)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, start=0):
        self.start = start

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.s = self.start
        return self.s, {}

    def step(self, a):
        if a == 1:
            self.s = 1
        return self.s, float(self.s == 1), False, False, {"cost": float(a)}


def make_flip(start=0):
    return Flip(start)


NOT_CALLABLE = 3


def not_an_env():
    return 42


gym.register(id="{env_id}", entry_point="{module}:Flip")
"""


@pytest.fixture()
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh working directory, off ``sys.path``; ``sys.path`` restored and the test's modules
    forgotten after."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".", str(tmp_path))])
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("cli36_")]:
        del sys.modules[name]


def _write_env(folder: Path) -> tuple[str, str]:
    """A module with ``Flip`` and a registered id, under fresh names; ``(module, env id)``."""
    n = next(_names)
    module, env_id = f"cli36_flip_{os.getpid()}_{n}", f"Cli36Flip{os.getpid()}x{n}-v0"
    (folder / f"{module}.py").write_text(ENV_SOURCE.replace("{env_id}", env_id).replace("{module}", module))
    return module, env_id


def test_a_class_a_callable_and_a_registered_id_from_the_working_directory(workdir: Path) -> None:
    module, env_id = _write_env(workdir)
    cls = gym_make(f"{module}:Flip", {"start": 1})
    assert type(cls).__name__ == "Flip" and cls.start == 1
    assert str(workdir) == sys.path[0]  # the working directory first, as python -m puts it
    made = gym_make(f"{module}:make_flip", None)
    assert type(made).__name__ == "Flip" and made.start == 0
    registered = gym_make(f"{module}:{env_id}", None)  # gymnasium's own module:Id
    assert registered.spec.id == env_id and type(registered.unwrapped).__name__ == "Flip"


def test_a_module_that_cannot_be_found_says_how_to_fix_it(workdir: Path) -> None:
    with pytest.raises(CMDPInputError) as err:
        gym_make("cli36_no_such_module:Env-v0", None)
    text = str(err.value)
    assert "\n" not in text and text.startswith("env: cannot import the module 'cli36_no_such_module'")
    assert "cli36_no_such_module.py" in text and str(workdir) in text and "PYTHONPATH" in text


@pytest.mark.parametrize(
    ("body", "shown"),
    [
        ("import cli36_missing_dependency\n", "ModuleNotFoundError: No module named 'cli36_missing_dependency'"),
        ("raise RuntimeError('bad\\nstate')\n", "RuntimeError: bad state"),
        ("def broken(:\n", "SyntaxError"),
        ("raise SystemExit(4)\n", "SystemExit: 4"),
    ],
)
def test_a_module_that_fails_to_import_is_named_with_its_error(workdir: Path, body: str, shown: str) -> None:
    module = f"cli36_broken_{next(_names)}"
    (workdir / f"{module}.py").write_text(body)
    with pytest.raises(CMDPInputError) as err:
        import_env_module(module, "env_or_id")
    text = str(err.value)
    assert "\n" not in text and text.startswith(f"env_or_id: importing the module '{module}' failed (")
    assert shown in text


@pytest.mark.parametrize(
    ("name", "kwargs", "start"),
    [
        ("NOT_CALLABLE", None, "env: m.NOT_CALLABLE is a int, not an environment class"),
        ("not_an_env", None, "env: m.not_an_env() returned a int, not an environment"),
        ("Flip", {"colour": 1}, "env_kwargs: m.Flip refused them (TypeError"),
        ("NoSuchId-v0", None, "env: gymnasium.make('m:NoSuchId-v0') failed"),
    ],
)
def test_names_that_are_no_environment_are_refused(workdir: Path, name: str, kwargs: dict | None, start: str) -> None:
    module, _ = _write_env(workdir)
    with pytest.raises(CMDPInputError) as err:
        gym_make(f"{module}:{name}", kwargs)
    assert str(err.value).replace(f"{module}", "m").startswith(start)


def test_learn_takes_module_name_as_it_takes_the_instance(workdir: Path) -> None:
    """The same run from ``"module:Flip"`` and from ``Flip()`` itself (also through the child process
    of ``step_timeout``, which makes the environment again from the id)."""
    module, _ = _write_env(workdir)
    kw = {"H": 3, "c_bar": 1.0, "episodes": 12, "seed": 3, "deploy": "last"}
    by_id = cmdp_rl.learn(f"{module}:Flip", **kw)
    timed = cmdp_rl.learn(f"{module}:make_flip", step_timeout=30.0, **kw)
    instance = cmdp_rl.learn(sys.modules[module].Flip(), **kw)
    for rec in (by_id, timed):
        np.testing.assert_array_equal(rec.realized_return, instance.realized_return)
        np.testing.assert_array_equal(rec.realized_costs, instance.realized_costs)
        np.testing.assert_array_equal(rec.policy, instance.policy)


def test_the_console_script_finds_a_module_in_the_working_directory(tmp_path: Path) -> None:
    """``cmdp-rl learn --env module:Id`` in a fresh process (not ``python -m``, which puts the working
    directory on the path itself): the issue's case, once exit 3 'internal error'."""
    script = Path(sys.executable).with_name("cmdp-rl")
    if not script.exists():  # pragma: no cover - the package is installed in the test environment
        pytest.skip("no cmdp-rl console script beside this interpreter")
    module, env_id = _write_env(tmp_path)
    argv = [str(script), "learn", "--horizon", "2", "--c-bar", "2", "--episodes", "3", "--deploy", "last"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([*argv, "--env", f"{module}:{env_id}"], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"env         {module}:{env_id}: online-crl, 3 episodes")
    gone = subprocess.run([*argv, "--env", "cli36_absent:X-v0"], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert gone.returncode == 2 and gone.stdout == ""
    assert gone.stderr.count("\n") == 1 and "cannot import the module 'cli36_absent'" in gone.stderr
