"""Class 4 of the hardening issue: refused commands write nothing, speak the user's terms, and every
numeric edge case of every numeric option of every command is exit 2 with one line.

The numeric options are found by walking ``build_parser()`` (every option whose type reads a
number), so a new numeric option without a row in ``EDGE_BASE`` fails
``test_every_option_is_classified``; options without a type are listed in ``UNTYPED`` for the
same reason (a new one must say whether it holds numbers that the command reads later).

Cases: the argument types in-process (``main([...])``, exit code and stderr), a sample of them
through the real command line, every numeric option at its largest (or smallest) accepted value
through the real command line (exit 0, 1 or 2 with one line, never 3, never a hang), the numbers
that commands read later (``--c-bar X/Y``, ``--baseline-costs``, ``NAME:key=value`` overrides,
``--env-kwargs`` JSON, ``--config`` TOML), ``--out ''`` and the other output names, and refused
jobs with the working folder (and the temporary folder, where a traceback would go) unchanged.
"""

from __future__ import annotations

import argparse
import math
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from faultkit import (
    EXIT_BAD_INPUT,
    EXIT_INFEASIBLE,
    EXIT_OK,
    assert_one_line_refusal,
    cases,
    cli,
    cli_batch,
    run_main,
    tree,
)

from cmdp_rl.cli import build_parser, main

CLASS = "4. Refused commands"

MAX_INT = 2**63 - 1
BIG_REAL = "1.7976931348623157e+308"  # the largest float
MIN_NORMAL = "2.2250738585072014e-308"  # the smallest normal float

#: numbers every numeric option refuses (exit 2, one line naming the option)
BAD_NUMBERS = (
    "nan",
    "NaN",
    "-nan",
    "inf",
    "-inf",
    "Infinity",
    "",
    " ",
    "abc",
    "1,5",
    "5e-324",
    "1e-320",
    "-5e-324",
    "1e400",
    "-1e400",
    "9" * 5000,
)
#: more for integer options: integers are typed as integers, within 64 bits
BAD_INTEGERS = ("3.0", "1e3", "2.5", "0.0", "-0.5", "0x10", str(2**63), str(10**30))
#: more for the resource limits (--max-memory SIZE, --max-time DURATION): within 64 bits, positive
BAD_LIMITS = (str(2**63), str(10**30), "0", "-1", "1e-400", "0." + "0" * 400 + "1")
#: the only numeric options that take a negative value
NEGATIVE_OK = {("learn", "reward_range"), ("learn", "cost_range")}

#: options without a type: what each holds (a new one must be classified here)
UNTYPED: dict[tuple[str, str], str] = {
    ("solve", "model"): "spec",
    ("learn", "model"): "spec",
    ("learn", "env"): "text",
    ("learn", "env_kwargs"): "json",
    ("learn", "c_bar"): "thresholds",
    ("learn", "cost_key"): "text",
    ("learn", "baseline"): "file",
    ("learn", "baseline_costs"): "thresholds",
    ("learn", "from_log"): "file",
    ("certify", "model"): "spec",
    ("certify", "policy"): "file",
    ("certify", "counts"): "file",
    ("certify", "log"): "file",
    ("import-gym", "env_id"): "text",
    ("import-gym", "cost"): "text",
    ("import-gym", "env_kwargs"): "json",
    ("import-prism", "file"): "file",
    ("import-prism", "constants"): "text",
    ("import-prism", "reward"): "text",
    ("import-prism", "cost"): "text",
    ("import-prism", "c_bar"): "thresholds",
    ("import-jani", "file"): "file",
    ("import-jani", "constants"): "text",
    ("import-jani", "reward"): "text",
    ("import-jani", "cost"): "text",
    ("import-jani", "c_bar"): "thresholds",
    ("import-drn", "file"): "file",
    ("import-drn", "reward"): "text",
    ("import-drn", "cost"): "text",
    ("import-drn", "c_bar"): "thresholds",
    ("export", "scenario"): "spec",
    ("frontier", "model"): "spec",
    ("pg", "model"): "spec",
    ("pg", "algorithms"): "text",
    ("report", "dir"): "file",
    ("reproduce", "config"): "toml",
    ("reproduce", "address"): "text",
    ("compare", "problem"): "spec",
    ("compare", "address"): "text",
    ("study", "address"): "text",
    # what a transition table (MODEL table.csv) does not carry: thresholds X[/Y...] read by load_model
    ("solve", "c_bar"): "thresholds",
    ("export", "c_bar"): "thresholds",
    ("certify", "c_bar"): "thresholds",
    ("frontier", "c_bar"): "thresholds",
    ("pg", "c_bar"): "thresholds",
    # reach-avoid products of MODEL (cmdp_rl.cli.reach): SET:P read by load_model, SET a label or state indices
    **{(command, "avoid"): "set:probability" for command in ("solve", "export", "certify", "frontier", "pg", "learn")},
    **{(command, "reach"): "set" for command in ("solve", "export", "certify", "frontier", "pg", "learn")},
    # what to take from a model checker's file (MODEL relay.nm; cmdp_rl.cli.checker_model): names read by stormpy
    **{
        (command, option): "text"
        for command in ("solve", "export", "certify", "frontier", "pg", "learn")
        for option in ("constants", "reward", "cost")
    },
}

#: every numeric option's command line for its edge run (the option and its value are appended);
#: the files named here are written by the ``workdir`` fixture
EDGE_BASE: dict[tuple[str, str], list[str]] = {
    ("solve", "gap_tol"): ["solve", "1a"],
    ("solve", "max_memory"): ["solve", "1a"],
    ("solve", "max_time"): ["solve", "1a"],
    ("certify", "max_memory"): ["certify", "1a", "--policy", "policy.npy", "--counts", "counts.npy"],
    ("certify", "max_time"): ["certify", "1a", "--policy", "policy.npy", "--counts", "counts.npy"],
    ("export", "max_memory"): ["export", "1a", "exported.npz"],
    ("export", "max_time"): ["export", "1a", "exported.npz"],
    ("import-gym", "max_memory"): ["import-gym", "FrozenLake-v1", "--horizon", "5", "--out", "lake.npz"],
    ("import-gym", "max_time"): ["import-gym", "FrozenLake-v1", "--horizon", "5", "--out", "lake.npz"],
    ("learn", "horizon"): ["learn", "--env", "cmdp_rl/1a-v0", "--c-bar", "2", "--episodes", "2"],
    ("learn", "reward_range"): ["learn", "--env", "cmdp_rl/1a-v0", "--horizon", "3", "--c-bar", "2", "--episodes", "2"],
    ("learn", "cost_range"): ["learn", "--env", "cmdp_rl/1a-v0", "--horizon", "3", "--c-bar", "2", "--episodes", "2"],
    ("learn", "step_timeout"): ["learn", "--env", "cmdp_rl/1a-v0", "--horizon", "3", "--c-bar", "2", "--episodes", "2"],
    ("learn", "samples_per_pair"): ["learn", "1a", "--algo", "gmbl"],
    ("learn", "episodes"): ["learn", "1a"],
    ("learn", "bonus_scale"): ["learn", "1a", "--algo", "optcmdp", "--episodes", "2"],
    ("learn", "k0"): ["learn", "1a", "--algo", "dope", "--episodes", "2"],
    ("learn", "eps"): ["learn", "1a"],
    ("learn", "max_episodes"): ["learn", "1a", "--eps", "0.5"],
    ("learn", "delta"): ["learn", "1a", "--episodes", "2"],
    ("learn", "deploy_delta"): ["learn", "1a", "--episodes", "2"],
    ("learn", "seed"): ["learn", "1a", "--episodes", "2"],
    ("learn", "max_memory"): ["learn", "1a", "--episodes", "2"],
    ("learn", "max_time"): ["learn", "1a", "--episodes", "2"],
    ("bounds", "states"): ["bounds", "--actions", "2", "--horizon", "3", "--eps", "0.1", "--delta", "0.1"],
    ("bounds", "actions"): ["bounds", "--states", "2", "--horizon", "3", "--eps", "0.1", "--delta", "0.1"],
    ("bounds", "horizon"): ["bounds", "--states", "2", "--actions", "2", "--eps", "0.1", "--delta", "0.1"],
    ("bounds", "constraints"): [
        *("bounds", "--states", "2", "--actions", "2", "--horizon", "3", "--eps", "0.1", "--delta", "0.1")
    ],
    ("bounds", "eps"): ["bounds", "--states", "2", "--actions", "2", "--horizon", "3", "--delta", "0.1"],
    ("bounds", "delta"): ["bounds", "--states", "2", "--actions", "2", "--horizon", "3", "--eps", "0.1"],
    ("certify", "delta"): ["certify", "1a", "--policy", "policy.npy", "--counts", "counts.npy"],
    ("import-gym", "horizon"): ["import-gym", "FrozenLake-v1", "--out", "lake.npz"],
    # a model checker's file (relay.nm: examples/storm/relay.nm; without stormpy a one-line refusal)
    ("import-prism", "horizon"): ["import-prism", "relay.nm", "--reward", "delivered", "--out", "relay.npz"],
    ("import-prism", "gamma"): ["import-prism", "relay.nm", "--reward", "delivered", "--out", "relay.npz"],
    ("import-jani", "horizon"): ["import-jani", "relay.jani", "--out", "relay.npz"],
    ("import-jani", "gamma"): ["import-jani", "relay.jani", "--out", "relay.npz"],
    ("import-drn", "horizon"): ["import-drn", "relay.drn", "--out", "relay.npz"],
    ("import-drn", "gamma"): ["import-drn", "relay.drn", "--out", "relay.npz"],
    ("import-gym", "c_bar"): ["import-gym", "FrozenLake-v1", "--horizon", "5", "--cost", "hole", "--out", "lake.npz"],
    ("frontier", "constraint"): ["frontier", "1a", "--out", "front"],
    ("frontier", "points"): ["frontier", "1a", "--out", "front"],
    ("frontier", "max_memory"): ["frontier", "1a", "--points", "3", "--out", "front"],
    ("frontier", "max_time"): ["frontier", "1a", "--points", "3", "--out", "front"],
    ("pg", "iterations"): ["pg", "ding-random:S=4,A=2,b=0.5", "--out", "pg"],
    ("pg", "samples"): ["pg", "ding-random:S=4,A=2,b=0.5", "--iterations", "2", "--out", "pg"],
    ("pg", "seed"): ["pg", "ding-random:S=4,A=2,b=0.5", "--iterations", "2", "--samples", "1", "--out", "pg"],
    ("pg", "eta1"): ["pg", "ding-random:S=4,A=2,b=0.5", "--iterations", "2", "--out", "pg"],
    ("pg", "eta2"): ["pg", "ding-random:S=4,A=2,b=0.5", "--iterations", "2", "--out", "pg"],
    ("pg", "kappa"): ["pg", "ding-random:S=4,A=2,b=0.5", "--iterations", "2", "--out", "pg"],
    ("pg", "lambda_max"): ["pg", "ding-random:S=4,A=2,b=0.5", "--iterations", "2", "--out", "pg"],
    ("pg", "eta"): ["pg", "ding-random:S=4,A=2,b=0.5", "--algos", "crpo", "--iterations", "2", "--out", "pg"],
    ("pg", "tol"): ["pg", "ding-random:S=4,A=2,b=0.5", "--algos", "crpo", "--iterations", "2", "--out", "pg"],
    ("pg", "max_memory"): ["pg", "ding-random:S=4,A=2,b=0.5", "--iterations", "2", "--out", "pg"],
    ("pg", "max_time"): ["pg", "ding-random:S=4,A=2,b=0.5", "--iterations", "2", "--out", "pg"],
    ("reproduce", "runs"): ["reproduce", "--config", "tiny.toml", "--out", "rep"],
    ("reproduce", "jobs"): ["reproduce", "--config", "tiny.toml", "--out", "rep", "--no-progress"],
    ("reproduce", "seed"): ["reproduce", "--config", "tiny.toml", "--out", "rep", "--no-progress"],
    ("reproduce", "max_memory"): ["reproduce", "--config", "tiny.toml", "--out", "rep", "--no-progress"],
    ("reproduce", "max_time"): ["reproduce", "--config", "tiny.toml", "--out", "rep", "--no-progress"],
    ("compare", "episodes"): ["compare", "1a", "--algos", "plugin", "--runs", "1", "--out", "cmp"],
    ("compare", "runs"): ["compare", "1a", "--algos", "plugin", "--episodes", "2", "--out", "cmp"],
    ("compare", "jobs"): ["compare", "1a", "--algos", "plugin", "--episodes", "2", "--runs", "1", "--out", "cmp"],
    ("compare", "seed"): ["compare", "1a", "--algos", "plugin", "--episodes", "2", "--runs", "1", "--out", "cmp"],
    ("compare", "delta"): ["compare", "1a", "--algos", "plugin", "--episodes", "2", "--runs", "1", "--out", "cmp"],
    ("compare", "bonus_scale"): [
        *("compare", "1a", "--algos", "optcmdp", "--episodes", "2", "--runs", "1", "--out", "cmp", "--no-progress")
    ],
    ("compare", "checkpoints"): [
        *("compare", "1a", "--algos", "plugin", "--episodes", "2", "--runs", "1", "--out", "cmp", "--no-progress")
    ],
    ("compare", "max_memory"): [
        *("compare", "1a", "--algos", "plugin", "--episodes", "2", "--runs", "1", "--out", "cmp", "--no-progress")
    ],
    ("compare", "max_time"): [
        *("compare", "1a", "--algos", "plugin", "--episodes", "2", "--runs", "1", "--out", "cmp", "--no-progress")
    ],
    # the quick study takes minutes: an --out that is a file refuses it once the options are read
    ("study", "runs"): ["study", "n-constraints", "--quick", "--out", "st"],
    ("study", "jobs"): ["study", "n-constraints", "--quick", "--out", "tiny.toml"],
    ("study", "seed"): ["study", "n-constraints", "--quick", "--out", "tiny.toml"],
    ("study", "max_memory"): ["study", "n-constraints", "--quick", "--out", "tiny.toml"],
    ("study", "max_time"): ["study", "n-constraints", "--quick", "--out", "tiny.toml"],
    # a transition table's horizon, discount and start (table.csv: scenario 1a's table, one cost column)
    ("solve", "horizon"): ["solve", "table.csv", "--c-bar", "2", "--s0", "0"],
    ("solve", "gamma"): ["solve", "table.csv", "--c-bar", "2", "--s0", "0"],
    ("solve", "s0"): ["solve", "table.csv", "--horizon", "3", "--c-bar", "2"],
    ("export", "horizon"): ["export", "table.csv", "t.npz", "--c-bar", "2", "--s0", "0"],
    ("export", "gamma"): ["export", "table.csv", "t.npz", "--c-bar", "2", "--s0", "0"],
    ("export", "s0"): ["export", "table.csv", "t.npz", "--horizon", "3", "--c-bar", "2"],
    ("certify", "horizon"): [
        *("certify", "table.csv", "--c-bar", "2", "--s0", "0", "--policy", "policy.npy", "--counts", "counts.npy")
    ],
    ("certify", "s0"): [
        *("certify", "table.csv", "--horizon", "10", "--c-bar", "2", "--policy", "policy.npy", "--counts", "counts.npy")
    ],
    ("frontier", "horizon"): ["frontier", "table.csv", "--c-bar", "2", "--s0", "0", "--points", "3", "--out", "front"],
    ("frontier", "s0"): ["frontier", "table.csv", "--horizon", "3", "--c-bar", "2", "--points", "3", "--out", "front"],
    ("pg", "gamma"): ["pg", "table.csv", "--c-bar", "2", "--s0", "0", "--iterations", "2", "--out", "pg"],
    ("pg", "s0"): ["pg", "table.csv", "--gamma", "0.9", "--c-bar", "2", "--iterations", "2", "--out", "pg"],
    ("learn", "s0"): ["learn", "table.csv", "--horizon", "3", "--c-bar", "2", "--episodes", "2"],
}
#: --threads, on every command with the resource limits (its largest value: past the cores, a
#: one-line refusal before any work), with the command line of that command's --max-time
EDGE_BASE.update(
    {(command, "threads"): base for (command, dest), base in list(EDGE_BASE.items()) if dest == "max_time"}
)

#: a small reproduce configuration (the edge runs of reproduce's options)
TINY_TOML = """scenarios = ["1a"]
algorithms = ["online-crl"]
runs = 1
episodes = 3
checkpoints = 2
eps = [0.1]
"""

#: words of the library's insides that a refusal must not show (the user's terms are options,
#: files and the rules; a call with parentheses such as foo() is code)
INTERNAL = re.compile(
    r"CMDP\w*Error|\bndarray\b|\bnp\.|\bnumpy\b|cmdp_rl\.|Traceback|\b[A-Z]\w*(?:Error|Exception)\b"
    r"|\b_[a-z]\w*|\b[a-z_][a-z0-9_]*\(\)|<class |object at 0x|\bself\b"
)


def user_terms(line: str, where: str, dests: tuple[str, ...] = ()) -> str:
    """Every refusal line a test here produces passes this scan: no internal name (``INTERNAL``), no
    option named by its Python ``dest`` (``step_timeout`` for ``--step-timeout``)."""
    assert not INTERNAL.search(line), (where, line)
    for dest in dests:
        if "_" in dest:
            assert not re.search(rf"\b{dest}\b", line), (where, dest, line)
    return line


# -- the parser walked ---------------------------------------------------------------------------


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _reads_number(kind: Any) -> bool:
    """Whether an argument type reads numbers: ``int``/``float``, or a type that returns a number
    for a numeric text."""
    if kind in (int, float):
        return True
    if not callable(kind):
        return False
    for text in ("1", "2", "0.5", "3"):
        try:
            value = kind(text)
        except (argparse.ArgumentTypeError, ValueError, TypeError):
            continue
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return True
    return False


def numeric_options() -> list[tuple[str, argparse.Action]]:
    """``(command, action)`` for every option or argument whose type reads a number."""
    return [
        (name, action)
        for name, p in _commands().items()
        for action in p._actions
        if action.nargs != 0 and _reads_number(action.type)
    ]


def untyped_options() -> list[tuple[str, argparse.Action]]:
    """``(command, action)`` for every option or argument that takes text without a type or choices."""
    return [
        (name, action)
        for name, p in _commands().items()
        for action in p._actions
        if action.nargs != 0 and action.type is None and action.choices is None and action.dest != "help"
    ]


def output_options() -> list[tuple[str, argparse.Action]]:
    """``(command, action)`` for every output file or folder name (the names checked before writing)."""
    return [
        (name, action)
        for name, p in _commands().items()
        for action in p._actions
        if getattr(action.type, "__name__", "") == "file or folder name"
    ]


def _flag(action: argparse.Action) -> str:
    return action.option_strings[-1] if action.option_strings else action.dest


def _dests(command: str) -> tuple[str, ...]:
    return tuple(a.dest for a in _commands()[command]._actions)


def _kind(action: argparse.Action) -> str:
    """``"int"`` (an integer option), ``"limit"`` (--max-memory, --max-time) or ``"real"``, from the
    type's name (a bare ``int`` or ``float`` is what it says, and fails the edge cases)."""
    name = getattr(action.type, "__name__", "")
    if name.startswith("integer") or name == "int":
        return "int"
    return "limit" if name in ("size", "duration") else "real"


def _is_integer(action: argparse.Action) -> bool:
    return _kind(action) == "int"


def _bad_values(command: str, action: argparse.Action) -> tuple[str, ...]:
    extra = {"int": BAD_INTEGERS, "limit": BAD_LIMITS, "real": ()}[_kind(action)]
    negative = () if (command, action.dest) in NEGATIVE_OK else ("-1",)
    return BAD_NUMBERS + extra + negative


def _accepts(action: argparse.Action, text: str) -> bool:
    try:
        action.type(text)  # type: ignore[misc]
    except (argparse.ArgumentTypeError, ValueError):
        return False
    return True


def _documented_maximum(action: argparse.Action) -> int | None:
    """``at most 2^k`` in the option's help, as an integer."""
    m = re.search(r"at most 2\^(\d+)", action.help or "")
    return 2 ** int(m.group(1)) if m else None


def _edge(action: argparse.Action) -> str:
    """The option's extreme accepted value: the largest integer (64 bits or the documented maximum),
    the largest float, or the smallest normal float for a probability."""
    if _is_integer(action):
        return str(_documented_maximum(action) or MAX_INT)
    for text in (BIG_REAL, str(MAX_INT), repr(threading.TIMEOUT_MAX), MIN_NORMAL):
        if _accepts(action, text):
            return text
    raise AssertionError(f"{_flag(action)} accepts no extreme value")


def _argv(command: str, action: argparse.Action, value: str, edge: bool = False) -> list[str]:
    """The option with ``value`` (``--opt=value`` keeps a leading '-' a value; ``nargs=2`` gives
    ``value`` first, or last for an ``edge`` run: ``LO HI`` with the extreme ``HI``)."""
    if action.nargs == 2:
        return [command, _flag(action), *(("0", value) if edge else (value, "1"))]
    if not action.option_strings:
        return [command, value]
    return [command, f"{_flag(action)}={value}"]


def _in_process(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(argv)
    err = capsys.readouterr().err
    return code, err


@pytest.fixture
def workdir(tmp_path: Path) -> Iterator[Path]:
    """A folder with the files the edge runs name (a policy and counts of scenario 1a, a tiny
    reproduce configuration) and a temporary folder of its own (``TMPDIR``), so that a traceback
    file would show in ``tree``."""
    from cmdp_rl import make

    m = make("1a")
    np.save(tmp_path / "policy.npy", np.full((m.H, m.S, m.A), 1.0 / m.A))
    np.save(tmp_path / "counts.npy", np.ones((m.S, m.A, m.S), dtype=np.int64))
    m.to_table(tmp_path / "table.csv")
    (tmp_path / "tiny.toml").write_text(TINY_TOML)
    relay = Path(__file__).resolve().parents[2] / "examples" / "storm" / "relay.nm"
    (tmp_path / "relay.nm").write_text(relay.read_text())
    (tmp_path / "relay.jani").write_text("not JANI")  # refused in one line (or stormpy's absence is)
    (tmp_path / "relay.drn").write_text("not DRN")
    (tmp_path / "tmp").mkdir()
    yield tmp_path


def _env(folder: Path) -> dict[str, str]:
    return {"TMPDIR": str(folder / "tmp")}


# -- the options, walked -------------------------------------------------------------------------


def test_every_option_is_classified(tally: Callable[[int], None]) -> None:
    """Every numeric option has an edge run and every untyped one says what it holds: a new option
    fails here until it is covered."""
    numeric = {(c, a.dest) for c, a in numeric_options()}
    untyped = {(c, a.dest) for c, a in untyped_options()}
    assert len(numeric) >= 50, sorted(numeric)
    assert numeric == set(EDGE_BASE), (sorted(numeric - set(EDGE_BASE)), sorted(set(EDGE_BASE) - numeric))
    assert untyped == set(UNTYPED), (sorted(untyped - set(UNTYPED)), sorted(set(UNTYPED) - untyped))
    tally(len(numeric) + len(untyped))


def test_every_numeric_option_refuses_every_edge_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tally: Callable[[int], None]
) -> None:
    """nan, inf, denormals, overflow, empty text, integers beyond 64 bits (and, for an integer option,
    numbers written as floats): exit 2, one line naming the option, nothing written."""
    monkeypatch.chdir(tmp_path)
    before = tree(tmp_path)
    n = 0
    stride = cases(3, 1)  # the sample: every third value, shifted per option so that each value is tried
    for k, (command, action) in enumerate(numeric_options()):
        values = _bad_values(command, action)
        for value in values[k % stride :: stride]:
            argv = _argv(command, action, value)
            code, err = _in_process(argv, capsys)
            lines = err.strip().splitlines()
            assert code == EXIT_BAD_INPUT and len(lines) == 1, (argv, code, err)
            assert _flag(action) in lines[0], (argv, lines[0])
            user_terms(lines[0], " ".join(argv)[:80], _dests(command))
            n += 1
    assert tree(tmp_path) == before
    tally(n)


def test_every_numeric_option_accepts_its_range_and_minus_zero(tally: Callable[[int], None]) -> None:
    """The types read their whole documented range: the extreme value, 2**63 - 1 for an integer
    (or the documented maximum, one above it refused), and -0 as 0 wherever 0 is valid."""
    n = 0
    for command, action in numeric_options():
        kind = action.type
        assert kind is not None
        edge = _edge(action)
        assert _accepts(action, edge), (command, _flag(action), edge)
        top = _documented_maximum(action)
        if top is not None:
            assert not _accepts(action, str(top + 1)), (command, _flag(action))
        if _accepts(action, "0"):
            value = kind("-0")
            assert value == 0 and math.copysign(1.0, value) == 1.0, (command, _flag(action), value)
            n += 1
        else:
            assert not _accepts(action, "-0"), (command, _flag(action))
        n += 2
    tally(n)


def test_a_sample_of_the_refusals_through_the_command_line(workdir: Path, tally: Callable[[int], None]) -> None:
    """The same refusals in a fresh interpreter (one for the sample: ``faultkit.cli_batch``): exit 2,
    one line, nothing written."""
    every = [(c, a, v) for c, a in numeric_options() for v in _bad_values(c, a)[::4]]
    k = cases(8, len(every))
    picked = every[:: max(1, len(every) // k)][:k]
    before = tree(workdir)
    argvs = [_argv(command, action, value) for command, action, value in picked]
    for (command, action, value), proc in zip(picked, cli_batch(argvs, cwd=workdir, env=_env(workdir)), strict=True):
        line = assert_one_line_refusal(proc)
        assert _flag(action) in line, line
        user_terms(line, f"{command} {_flag(action)}={value!r}", _dests(command))
    assert tree(workdir) == before
    tally(len(picked))


def _edge_cases() -> list[tuple[str, str]]:
    return sorted(EDGE_BASE)


@pytest.mark.parametrize("index", range(cases(6, len(EDGE_BASE))))
def test_every_numeric_option_at_its_extreme_value(index: int, workdir: Path, tally: Callable[[int], None]) -> None:
    """The largest accepted value (the smallest for a probability) through the real command: a
    result (exit 0 or 1) or a one-line refusal that wrote nothing (exit 2); never an internal
    error, never a hang. The sample spreads over the commands."""
    keys = _edge_cases()
    step = max(1, len(keys) // cases(6, len(keys)))
    command, dest = keys[(index * step) % len(keys)]
    action = next(a for c, a in numeric_options() if c == command and a.dest == dest)
    base = EDGE_BASE[(command, dest)]
    value = _edge(action)
    argv = [*base, *_argv(command, action, value, edge=True)[1:]]
    before = tree(workdir)
    proc = cli(*argv, cwd=workdir, env=_env(workdir), timeout=240)
    assert proc.returncode in (EXIT_OK, EXIT_INFEASIBLE, EXIT_BAD_INPUT), (argv, proc.returncode, proc.stderr[-2000:])
    if proc.returncode == EXIT_BAD_INPUT:
        line = assert_one_line_refusal(proc)
        user_terms(line, " ".join(argv)[:80], _dests(command))
        assert tree(workdir) == before, argv
    assert not list((workdir / "tmp").iterdir()), "a traceback file was written"
    tally(1)


# -- numbers that commands read later ------------------------------------------------------------


LATER: list[tuple[list[str], str]] = [
    *(
        (["learn", "--env", "cmdp_rl/1a-v0", "--horizon", "3", "--episodes", "2", f"--c-bar={v}"], "c-bar")
        for v in ("nan", "inf", "-inf", "", "5e-324", "1e-320", "1e400", "-1", "abc", "0.5/nan", "0.5//0.5", "0.5/")
    ),
    *(
        (
            [
                *("learn", "--env", "cmdp_rl/1a-v0", "--horizon", "3", "--episodes", "2", "--c-bar", "0.5"),
                *("--algo", "optpess", "--baseline", "none.npy", f"--baseline-costs={v}"),
            ],
            "baseline-costs",
        )
        for v in ("nan", "inf", "5e-324", "1e400", "-1", "", "x")
    ),
    *(
        (["solve", spec], spec.partition(":")[2].partition("=")[0])
        for spec in (
            "garnet:S=1e3",
            "garnet:S=3.0",
            f"garnet:S={2**63}",
            f"garnet:seed={10**30}",
            "garnet:f=nan",
            "garnet:f=inf",
            "garnet:f=5e-324",
            "garnet:f=1e400",
            "garnet:H=0",
            "garnet:S=-1",
            "1a:c_bar=nan",
            "1a:c_bar=inf",
            "1a:c_bar=5e-324",
            "1a:c_bar=1e400",
            "1a:H=3.0",
            f"1a:H={2**63}",
            "ding-random:gamma=1",
            "ding-random:gamma=0",
            "ding-random:gamma=nan",
            "ding-random:gamma=1.5",
            "ding-random:b=inf",
        )
    ),
    *(
        (
            ["learn", "--env", "cmdp_rl/1a-v0", "--horizon", "3", "--episodes", "2", "--c-bar", "1", "--env-kwargs", v],
            "env-kwargs",
        )
        for v in (
            '{"x": NaN}',
            '{"x": Infinity}',
            '{"x": -Infinity}',
            '{"x": 1e400}',
            '{"x": 5e-324}',
            f'{{"x": {2**63}}}',
            "[1]",
            "nan",
            "",
        )
    ),
    *(
        ([command, "table.csv", *more, "--s0", "0", f"--c-bar={v}"], "c-bar")
        for command, more in (("solve", ["--horizon", "3"]), ("pg", ["--gamma", "0.9", "--out", "pg"]))
        for v in ("nan", "inf", "", "5e-324", "1e400", "-1", "abc", "0.5/nan", "2/2")
    ),
    *(
        (["solve", "1a", f"--avoid=4:{v}"], "avoid")
        for v in ("nan", "inf", "", "5e-324", "1e400", "-1", "abc", "1.5", "-inf")
    ),
    *(
        (["import-gym", "FrozenLake-v1", "--horizon", "3", "--out", "lake.npz", "--env-kwargs", v], "env-kwargs")
        for v in ('{"map_name": NaN}', '{"x": Infinity}', '{"x": 1e400}', '{"x": 1e-320}', f'{{"x": {-(2**64)}}}', "3")
    ),
]

#: --config TOML values refused (a line of the tiny configuration replaced)
BAD_TOML = (
    "runs = inf",
    "runs = nan",
    "runs = 1e30",
    "runs = 3.5",
    f"runs = {2**63}",
    "runs = 0",
    "runs = true",
    'runs = "3"',
    "episodes = -1",
    f"episodes = {2**63}",
    "delta = 5e-324",
    "delta = nan",
    "delta = 1.0",
    "eps = [inf]",
    "eps = [1e-320]",
    f"seed = {2**64}",
    f"jobs = {2**63}",
)


def test_numbers_read_later_by_the_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tally: Callable[[int], None]
) -> None:
    """Thresholds X/Y, NAME:key=value overrides, --env-kwargs JSON and --config TOML: the same rules,
    exit 2 with one line naming the option (or the problem), nothing written."""
    from cmdp_rl import make

    monkeypatch.chdir(tmp_path)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    toml = [line for line in TINY_TOML.splitlines()]
    n = 0
    for i, bad in enumerate(BAD_TOML):
        key = bad.split(" = ")[0]
        lines = [line for line in toml if not line.startswith(f"{key} =")] + [bad]
        (tmp_path / f"bad{i}.toml").write_text("\n".join(lines) + "\n")
    make("1a").to_table(tmp_path / "table.csv")  # a transition table: its --c-bar is read by the command
    before = tree(tmp_path)
    later = LATER + [(["reproduce", "--config", f"bad{i}.toml", "--out", "rep"], "") for i in range(len(BAD_TOML))]
    for argv, name in later:
        code, err = _in_process(argv, capsys)
        lines = err.strip().splitlines()
        assert code == EXIT_BAD_INPUT and len(lines) == 1, (argv, code, err)
        assert name in lines[0], (argv, lines[0])
        typed = " ".join(argv)  # a key typed as NAME:c_bar=X is the user's own term, though also --c-bar's dest
        user_terms(lines[0], typed[:80], tuple(d for d in _dests(argv[0]) if f"{d}=" not in typed))
        n += 1
    assert tree(tmp_path) == before
    tally(n)


def test_minus_zero_and_the_edges_of_numbers_read_later(tally: Callable[[int], None]) -> None:
    """-0 reads as 0 in thresholds and overrides; the largest and smallest normal values are read."""
    from cmdp_rl import make
    from cmdp_rl.cli.simulator import parse_thresholds

    assert [math.copysign(1.0, v) for v in parse_thresholds("-0/0.5", "c-bar")] == [1.0, 1.0]
    assert parse_thresholds(f"{BIG_REAL}/{MIN_NORMAL}", "c-bar") == [float(BIG_REAL), float(MIN_NORMAL)]
    m = make("1a:c_bar=-0")
    assert m.c_bar[0] == 0 and math.copysign(1.0, m.c_bar[0]) == 1.0
    assert make(f"garnet:S=3,A=2,seed={MAX_INT}").meta["parameters"]["seed"] == MAX_INT
    assert make("garnet:S=3,A=2,f=-0").meta["parameters"]["f"] == 0.0
    tally(5)


# -- output names and refused jobs ---------------------------------------------------------------


def test_an_empty_output_name_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tally: Callable[[int], None]
) -> None:
    """--out '' (and every other output file or folder name, empty or blank) is exit 2 with one
    line naming the option: it never writes into the current folder."""
    monkeypatch.chdir(tmp_path)
    before = tree(tmp_path)
    outputs = output_options()
    assert {f"{c} {_flag(a)}" for c, a in outputs} >= {
        f"{c} --out" for c in ("pg", "frontier", "compare", "reproduce", "study", "import-gym")
    }
    n = 0
    for command, action in outputs:
        for value in ("", " ", "\t"):
            argv = _argv(command, action, value)
            code, err = _in_process(argv, capsys)
            lines = err.strip().splitlines()
            assert code == EXIT_BAD_INPUT and len(lines) == 1, (argv, err)
            assert _flag(action) in lines[0], lines[0]
            user_terms(lines[0], " ".join(argv), _dests(command))
            n += 1
    assert tree(tmp_path) == before
    tally(n)


#: jobs refused after their arguments parse (a resource estimate, a bad file, a refused overwrite):
#: none may leave a folder, a partial file or a traceback behind
REFUSED_JOBS: list[list[str]] = [
    ["pg", "ding-random:S=4,A=2,b=0.5", "--out", "", "--iterations", "2"],
    ["pg", "ding-random:S=4,A=2,b=0.5", "--iterations", str(MAX_INT), "--out", "pg"],
    ["pg", "ding-random:S=4,A=2,b=0.5", "--iterations", "2", "--eta1", "1e308", "--out", "pg"],
    ["frontier", "1a", "--out", ""],
    ["frontier", "1a", "--points", str(MAX_INT), "--out", "front"],
    ["compare", "1a", "--out", "", "--quick"],
    ["compare", "1a", "--runs", str(MAX_INT), "--episodes", "2", "--out", "cmp"],
    ["reproduce", "--quick", "--out", ""],
    ["reproduce", "--config", "tiny.toml", "--runs", str(MAX_INT), "--out", "rep"],
    ["study", "n-constraints", "--quick", "--runs", str(MAX_INT), "--out", "st"],
    ["learn", "1a", "--episodes", str(MAX_INT), "--policy-out", "p.npy", "--counts-out", "c.npy"],
    [
        "learn",
        "--env",
        "cmdp_rl/1a-v0",
        "--horizon",
        str(MAX_INT),
        "--c-bar",
        "1",
        "--episodes",
        "2",
        "--figure",
        "f.png",
    ],
    [
        "learn",
        "--env",
        "cmdp_rl/1a-v0",
        "--horizon",
        "3",
        "--c-bar",
        "1",
        "--episodes",
        str(MAX_INT),
        "--run-log",
        "l.jsonl",
    ],
    ["import-gym", "FrozenLake-v1", "--horizon", str(MAX_INT), "--out", "lake.npz"],
    ["export", f"garnet:S={10**9},A=9", "big.npz"],
    ["export", "1a", ""],
    ["certify", "1a", "--policy", "policy.npy", "--counts", "huge.npy"],
    ["solve", "1a:H=" + str(MAX_INT)],
    ["learn", "garnet:S=6000,A=8", "--episodes", "2", "--policy-out", "p.npy"],
]


@pytest.mark.parametrize("index", range(cases(4, len(REFUSED_JOBS))))
def test_a_refused_job_writes_nothing(index: int, workdir: Path, tally: Callable[[int], None]) -> None:
    """Exit 2, one line in the user's terms; the working folder and the temporary folder unchanged
    (no output folder, no partial file, no traceback)."""
    step = max(1, len(REFUSED_JOBS) // cases(4, len(REFUSED_JOBS)))
    argv = REFUSED_JOBS[(index * step) % len(REFUSED_JOBS)]
    np.save(workdir / "huge.npy", np.full((9, 4, 9), 2**60, dtype=np.int64))  # counts above 2**53 per pair
    before = tree(workdir)
    proc = cli(*argv, cwd=workdir, env=_env(workdir), timeout=240)
    line = assert_one_line_refusal(proc)
    user_terms(line, " ".join(argv)[:80], _dests(argv[0]))
    assert tree(workdir) == before, (argv, sorted(set(tree(workdir)) - set(before)))
    tally(1)


#: a job that succeeds, then a rerun refused because of what the first left (no --force)
RERUNS: list[tuple[list[str], list[str]]] = [
    (
        ["pg", "ding-random:S=4,A=2,b=0.5", "--iterations", "2", "--out", "pg", "--json"],
        ["pg", "ding-random:S=4,A=2,b=0.5", "--iterations", "3", "--out", "pg"],
    ),
    (["export", "1a", "m.npz"], ["export", "1b", "m.npz"]),
    (["solve", "1a", "--policy-out", "p.npy"], ["solve", "1b", "--policy-out", "p.npy"]),
    (
        ["reproduce", "--config", "tiny.toml", "--out", "rep", "--no-progress"],
        ["reproduce", "--config", "tiny.toml", "--seed", "5", "--out", "rep", "--no-progress"],
    ),
]


@pytest.mark.parametrize("index", range(cases(2, len(RERUNS))))
def test_a_refused_rerun_changes_nothing(index: int, workdir: Path, tally: Callable[[int], None]) -> None:
    """Results already in --out (or an existing file) without --force: exit 2, one line, and every file
    byte for byte as the first run left it."""
    first, rerun = RERUNS[index]
    assert run_main(*first, cwd=workdir).returncode == EXIT_OK  # the first run: in this process
    before = tree(workdir)
    proc = cli(*rerun, cwd=workdir, env=_env(workdir), timeout=240)
    line = assert_one_line_refusal(proc)
    user_terms(line, " ".join(rerun), _dests(rerun[0]))
    assert tree(workdir) == before
    tally(1)


def test_internal_name_patterns_catch_what_they_should(tally: Callable[[int], None]) -> None:
    """The scan itself: internal names are caught, the user's terms pass."""
    caught = [
        "error: CMDPInputError: x",
        "must be an ndarray",
        "np.float64(0.5)",
        "see cmdp_rl.plumbing.limits",
        "_int_at_least failed",
        "TypeError: unsupported",
        "call solve() first",
        "<class 'int'>",
    ]
    passed = [
        "cmdp-rl learn: error: argument --delta: must be a number in the open interval (0, 1), got 'nan' (see --help)",
        "cmdp-rl pg: error: out: cannot create o: x is a file, not a folder",
        "cmdp-rl solve: error: model file m.npz: missing key(s) ['gamma']",
    ]
    for text in caught:
        assert INTERNAL.search(text), text
    for text in passed:
        assert not INTERNAL.search(text), text
    tally(len(caught) + len(passed))
