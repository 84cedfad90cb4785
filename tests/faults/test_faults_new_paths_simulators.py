"""New paths: simulators (``learn --env`` and ``cmdp_rl.learn`` on a Gymnasium environment).

A misbehaving environment (``fault_envs.py``, registered as ``cmdp_rl_faults/<Name>-v0``) is
refused with exit 2 and one line naming the episode, the step and the rule, keeping the run log
of the episodes before: an observation out of range or not an integer (from ``step`` or
``reset``), a cost vector of the wrong length, a missing cost key or an info that is not a
dict, an exception inside ``reset`` or ``step``, a call slower than ``--step-timeout`` (a
``time.sleep``, and a C loop holding the GIL that no ``SIGALRM`` handler could stop: the
environment runs in a child process that is killed; one that dies is reported too), and spaces
that change between episodes. Before this class was fixed, a C-level hang ran on for hours past
``--step-timeout`` and changed spaces went unnoticed; the other rules held and are kept.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from fault_envs import Faulty, env_id
from faultkit import EXIT_BAD_INPUT, EXIT_OK, assert_one_line_refusal, cases, cli, run_main, tree
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cmdp_rl import learn
from cmdp_rl.simulators.blackbox import SimulatorError

CLASS = "New paths: simulators"

HERE = Path(__file__).resolve().parent
#: the subprocess finds fault_envs on its path
ENV = {"PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
#: how long a run whose environment hangs may go on before the test calls it stuck (a guard
#: against a hang, not a bound: the run ends as soon as its interpreter has started and 0.5 s passed)
HANG = 180


def _argv(name: str, kwargs: dict[str, Any] | None = None, *extra: str, c_bar: str = "1") -> list[str]:
    argv = [
        "learn",
        "--env",
        env_id(name),
        "--horizon",
        "4",
        "--c-bar",
        c_bar,
        "--episodes",
        "3",
        "--json",
        "--deploy",
        "last",
    ]
    if kwargs:
        argv += ["--env-kwargs", json.dumps(kwargs)]
    return [*argv, *extra]


#: (environment, its --env-kwargs, extra arguments, what the line must say); every rule of a step's result
RESULTS: list[tuple[str, dict[str, Any], list[str], str]] = [
    ("BadObservation", {"obs": 7, "at": 2}, [],
     "episode 0, step 2: step() returned the state 7, outside Discrete(3)"),
    ("BadObservation", {"obs": -1, "at": 1, "episode": 1}, [], "episode 1, step 1: step() returned the state -1"),
    ("BadObservation", {"obs": 3, "at": 0}, [], "episode 0, step 0: step() returned the state 3, outside"),
    ("BadObservation", {"obs": 1.0, "at": 1}, [],
     "episode 0, step 1: step() returned the observation 1.0, not a state"),
    ("BadObservation", {"obs": 1.5, "at": 0}, [], "returned the observation 1.5, not a state index of Discrete(3)"),
    ("BadObservation", {"obs": "1", "at": 0}, [], "returned the observation '1', not a state index"),
    ("BadObservation", {"obs": True, "at": 0}, [], "returned the observation True, not a state index"),
    ("BadObservation", {"obs": [1], "at": 3}, [], "episode 0, step 3: step() returned the observation [1]"),
    ("BadObservation", {"obs": None, "at": 0}, [], "returned the observation None, not a state index"),
    ("BadResetObservation", {"obs": 5}, [], "episode 0, step 0: reset() returned the state 5, outside Discrete(3)"),
    ("BadResetObservation", {"obs": 0.5, "episode": 2}, [],
     "episode 2, step 0: reset() returned the observation 0.5"),
    ("BadInfo", {"info": {"cost": [0.1, 0.2, 0.3]}, "at": 1}, [],
     "episode 0, step 1: the step reported 3 cost(s) but c_bar has N = 1"),
    ("BadInfo", {"info": {"costs": []}, "at": 0}, [], "the step reported 0 cost(s) but c_bar has N = 1"),
    ("Good", {}, [], "the step reported 1 cost(s) but c_bar has N = 2"),
    ("SixTuple", {"cost": [0.1, 0.1], "at": 2}, [],
     "episode 0, step 2: the step reported 2 cost(s) but c_bar has N = 1"),
    ("BadInfo", {"info": {}, "at": 1}, [], "episode 0, step 1: info has neither 'cost' nor 'costs'"),
    ("BadInfo", {"info": {"other": 1}, "at": 0}, [],
     "info has neither 'cost' nor 'costs' (give cost_key=...); its keys are ['other']"),
    ("Good", {}, ["--cost-key", "risk"],
     "episode 0, step 0: info has no key 'risk' (cost_key); its keys are ['cost']"),
    ("BadInfo", {"info": [0.1], "at": 0}, [], "episode 0, step 0: step() info must be a dict, got list"),
    ("BadInfo", {"info": {"cost": "high"}, "at": 0}, [], "episode 0, step 0: cost 'high' is not a number or numbers"),
    ("BadInfo", {"info": {"cost": 1.5}, "at": 0}, [], "episode 0, step 0: cost 0 = 1.5 outside [0, 1]"),
    ("Raises", {"at": 2, "episode": 1}, [],
     "episode 1, step 2: the environment raised RuntimeError in step(): sensor failure"),
    ("ResetRaises", {"episode": 1}, [],
     "episode 1, step 0: the environment raised RuntimeError in reset(): reset failed"),
]  # fmt: skip


def test_bad_step_results_are_one_line_refusals_naming_episode_step_and_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tally
) -> None:
    """Out-of-range and non-integer observations (step and reset), wrong-length costs (info and
    the six-tuple), missing cost keys, a non-dict info, bad cost values and exceptions in the
    environment: exit 2, one line with the episode and step and the rule; a sample of them (every
    one with ``CMDP_RL_FAULTS=full``) also with ``--step-timeout`` (the child process)."""
    monkeypatch.chdir(tmp_path)
    for i, (name, kwargs, extra, needle) in enumerate(RESULTS):
        c_bar = "1/1" if "N = 2" in needle else "1"
        for timeout in ([], ["--step-timeout", "5"]) if (cases(i % 4 == 0, 1)) else ([],):
            proc = run_main(*_argv(name, kwargs, *extra, *timeout, c_bar=c_bar))
            line = assert_one_line_refusal(proc)
            assert needle in line, (needle, line)
    sub = RESULTS[0]  # and the real command line, in a fresh interpreter
    line = assert_one_line_refusal(cli(*_argv(sub[0], sub[1]), cwd=tmp_path, env=ENV))
    assert sub[3] in line
    assert list(tmp_path.iterdir()) == []
    tally(len(RESULTS) + 1)


def test_a_step_stuck_in_c_code_is_stopped_by_step_timeout(tmp_path: Path, tally) -> None:
    """``--step-timeout`` stops a ``step`` or ``reset`` stuck in a C loop that holds the GIL (no
    signal handler can run there) and one sleeping; the stuck process is gone afterwards, the run
    log keeps the episodes before. The timeout (2 s) leaves the steps that do not hang room on a
    loaded machine (0.5 s failed once under the full suite on 2 cores: a plain step of episode 0)."""
    hangs = [
        ("CLoop", {"at": 1, "episode": 1}, "episode 1, step 1: step() took longer than step_timeout = 2.0 s"),
        ("ResetCLoop", {"episode": 2}, "episode 2, step 0: reset() took longer than step_timeout = 2.0 s"),
        ("Sleeps", {"at": 3}, "episode 0, step 3: step() took longer than step_timeout = 2.0 s"),
        ("CLoop", {"at": 0}, "episode 0, step 0: step() took longer than step_timeout = 2.0 s"),
    ]
    chosen = hangs if cases(0, 1) else hangs[:2]
    for i, (name, kwargs, needle) in enumerate(chosen):
        pid_file, log = tmp_path / f"pid{i}", tmp_path / f"run{i}.jsonl"
        argv = _argv(name, {**kwargs, "pid_file": str(pid_file)}, "--step-timeout", "2", "--run-log", str(log))
        try:
            proc = cli(*argv, cwd=tmp_path, env=ENV, timeout=HANG)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{name}: still running {HANG} s after a step past --step-timeout 2")
        line = assert_one_line_refusal(proc)
        assert needle in line and "its process was killed" in line, line
        child = int(pid_file.read_text())
        assert child != proc.args and not Path(f"/proc/{child}").exists(), "the stuck environment process lives on"
        episodes = [json.loads(x) for x in log.read_text().splitlines()[1:]]
        assert [e["episode"] for e in episodes] == list(range(kwargs.get("episode", 0)))
    tally(len(chosen))


def test_an_environment_process_that_dies_is_reported(tmp_path: Path, tally) -> None:
    """A crash inside the environment (its process exits, as a fault in C code would) with
    ``--step-timeout``: exit 2, one line naming the episode, step and exit code (in a fresh
    interpreter: before the fix the environment's exit was the learner's)."""
    proc = cli(*_argv("Dies", {"at": 2, "episode": 1}, "--step-timeout", "5"), cwd=tmp_path, env=ENV, timeout=HANG)
    line = assert_one_line_refusal(proc)
    assert "episode 1, step 2: the environment's process died in step() (exit code 77)" in line, line
    tally(1)


def test_spaces_that_change_between_episodes_are_refused(tmp_path: Path, monkeypatch, tally) -> None:
    """An observation space that grows, shrinks or becomes a Box, an action space that grows:
    refused at the reset of the episode where it changed, with and without ``--step-timeout``."""
    monkeypatch.chdir(tmp_path)
    changes = [
        ("GrowingSpace", 1, "the observation space changed from Discrete(3) to Discrete(5)"),
        ("ShrinkingSpace", 2, "the observation space changed from Discrete(3) to Discrete(2)"),
        ("ChangingActions", 1, "the action space changed from Discrete(2) to Discrete(4)"),
        ("BoxSpace", 2, "the observation space changed from Discrete(3) to Box"),
    ]
    n = 0
    for name, episode, needle in changes:
        for timeout in ([], ["--step-timeout", "5"]):
            proc = run_main(*_argv(name, {"episode": episode}, *timeout))
            line = assert_one_line_refusal(proc)
            assert f"episode {episode}, step 0: {needle}" in line and "must stay the same" in line, line
            n += 1
    assert list(tmp_path.iterdir()) == []
    tally(n)


def test_the_environment_runs_in_a_child_only_with_a_timeout(tmp_path: Path, monkeypatch, tally) -> None:
    """Without ``--step-timeout`` the environment is stepped in the learner's process (no
    overhead); with it, in a child process, with the same results."""
    monkeypatch.chdir(tmp_path)
    runs = {}
    for label, extra in (("direct", []), ("child", ["--step-timeout", "5"])):
        pid_file = tmp_path / f"{label}.pid"
        proc = run_main(*_argv("Good", {"pid_file": str(pid_file)}, *extra))
        assert proc.returncode == EXIT_OK, proc.stderr
        runs[label] = json.loads(proc.stdout)
        where = int(pid_file.read_text())
        assert (where == os.getpid()) == (label == "direct"), (label, where)
        if label == "child":
            assert not Path(f"/proc/{where}").exists(), "the environment's process outlived the run"
    assert runs["direct"]["mean_realized_return"] == runs["child"]["mean_realized_return"]
    before = tree(tmp_path)
    assert before  # the pid files only
    tally(2)


#: observations a ``Discrete(3)`` environment must not return (Hypothesis)
BAD_OBS = st.one_of(
    st.integers(min_value=3, max_value=2**70),
    st.integers(max_value=-1, min_value=-(2**70)),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=3),
    st.booleans(),
    st.lists(st.integers(0, 2), max_size=3),
    st.none(),
)


class _Scripted(Faulty):
    """``Faulty`` with its fault given as objects (in process: no JSON)."""


@settings(max_examples=cases(30, 300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(obs=BAD_OBS, at=st.integers(0, 3), episode=st.integers(0, 2))
def test_hypothesis_any_bad_observation_names_episode_and_step(obs: Any, at: int, episode: int, tally) -> None:
    """Hypothesis: whatever invalid observation an environment returns at any step of any
    episode, ``learn`` raises a ``SimulatorError`` naming that episode and step, before using it."""
    env = _Scripted("obs", at=at, episode=episode, obs=obs)
    with pytest.raises(SimulatorError) as info:
        learn(env, H=4, c_bar=1.0, episodes=3)
    assert str(info.value).startswith(f"episode {episode}, step {at}: step() returned the "), str(info.value)
    tally(1)


@settings(max_examples=cases(30, 300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    costs=st.lists(st.floats(0.0, 1.0), min_size=0, max_size=5),
    N=st.integers(1, 3),
    key=st.sampled_from(["cost", "costs"]),
    at=st.integers(0, 3),
)
def test_hypothesis_cost_vectors_of_the_wrong_length(costs: list[float], N: int, key: str, at: int, tally) -> None:
    """Hypothesis: a cost vector whose length is not ``N`` (under ``cost`` or ``costs``) is
    refused naming the episode, the step and both lengths; one of length ``N`` is accepted."""
    env = _Scripted("info", at=at, info={key: costs}, good_cost=[0.1] * N)
    kw: dict[str, Any] = {"H": 4, "c_bar": [4.0] * N, "episodes": 2}
    if len(costs) == N:
        rec = learn(env, **kw)
        assert rec.realized_costs.shape == (2, N)
    else:
        with pytest.raises(SimulatorError) as info:
            learn(env, **kw)
        want = f"episode 0, step {at}: the step reported {len(costs)} cost(s) but c_bar has N = {N}"
        assert str(info.value) == want, str(info.value)
    tally(1)


def test_api_step_timeout_stops_c_code_too(tally) -> None:
    """The API's ``step_timeout=``: a step in a C loop is stopped after the timeout (in a fresh
    interpreter, so an unstoppable one fails the test instead of hanging it)."""
    code = f"""
import sys
sys.path.insert(0, {str(HERE)!r})
from fault_envs import Faulty
from cmdp_rl import learn
try:
    learn(Faulty("cloop", at=2), H=4, c_bar=1.0, episodes=2, step_timeout=0.3)
except Exception as exc:
    print(type(exc).__name__, exc)
"""
    import sys

    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=HANG)
    except subprocess.TimeoutExpired:
        pytest.fail(f"learn(step_timeout=0.3) still running after {HANG} s in a C loop")
    out = proc.stdout.strip()
    assert out.startswith("SimulatorError episode 0, step 2: step() took longer than step_timeout = 0.3 s"), (
        out,
        proc.stderr[-1500:],
    )
    assert proc.returncode == 0
    tally(1)


def test_refusals_keep_the_exit_code_of_bad_input(tmp_path: Path, tally) -> None:
    """The documented code: a simulator that broke a rule is bad input (2), never an internal error."""
    proc = cli(*_argv("Raises", {"at": 0}), cwd=tmp_path, env=ENV)
    assert proc.returncode == EXIT_BAD_INPUT and "Traceback" not in proc.stderr
    tally(1)
