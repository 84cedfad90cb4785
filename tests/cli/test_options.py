"""The shared options: each option of the command line is declared once (``cli/options.py`` for
those several commands share), and the argument types check the rules they name."""

from __future__ import annotations

import argparse
import ast
from collections import Counter
from pathlib import Path

import pytest

from cmdp_rl.cli import build_parser, main
from cmdp_rl.cli.options import default_first, deprecated_option, int_at_least, learner_list, open_unit, output_name

CLI = Path(__file__).resolve().parents[2] / "src" / "cmdp_rl" / "cli"


def _declarations() -> Counter[str]:
    """How many ``add_argument`` calls of ``src/cmdp_rl/cli`` declare each option (its first flag)."""
    found: Counter[str] = Counter()
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
                flags = [a.value for a in node.args if isinstance(a, ast.Constant) and str(a.value).startswith("-")]
                if flags:
                    found[flags[0]] += 1
    return found


def test_every_option_is_declared_once() -> None:
    found = _declarations()
    assert {flag: n for flag, n in found.items() if n > 1} == {}
    # the shared ones are among them, and several commands have them
    commands = {
        name: {s for a in p._actions for s in a.option_strings}
        for a in build_parser()._actions
        if isinstance(a, argparse._SubParsersAction)
        for name, p in a.choices.items()
    }
    for flag in ("--seed", "--jobs", "--out", "--force", "--delta", "--horizon", "--json", "--max-memory"):
        assert found[flag] == 1
        assert sum(flag in options for options in commands.values()) >= 3, flag


@pytest.mark.parametrize(
    "text, expected",
    [("1", 1), ("9223372036854775807", 2**63 - 1), ("-0", None), ("0", None), ("1.0", None), ("2**3", None)],
)
def test_int_at_least(text: str, expected: int | None) -> None:
    parse = int_at_least(1)
    assert parse.__name__ == "integer >= 1"
    if expected is None:
        with pytest.raises(argparse.ArgumentTypeError):
            parse(text)
    else:
        assert parse(text) == expected


@pytest.mark.parametrize("text, ok", [("0.5", True), ("1e-300", True), ("0", False), ("1", False), ("nan", False)])
def test_open_unit(text: str, ok: bool) -> None:
    if ok:
        assert open_unit(text) == float(text)
    else:
        with pytest.raises(argparse.ArgumentTypeError):
            open_unit(text)


def test_learner_list_and_output_name() -> None:
    assert learner_list(" dope, optpess ,") == ("dope", "optpess")
    with pytest.raises(argparse.ArgumentTypeError, match="unknown learner 'gmbl'"):
        learner_list("dope,gmbl")
    with pytest.raises(argparse.ArgumentTypeError, match="at least one learner"):
        learner_list(" , ")
    assert output_name("out") == "out"
    with pytest.raises(argparse.ArgumentTypeError, match="must name a file or folder"):
        output_name("  ")
    assert default_first(("a", "b", "c"), "b") == ("b", "a", "c")


def test_a_deprecated_spelling_works_hidden_and_says_so_once() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--algorithms", choices=("x", "y"), default="x")
    deprecated_option(p, "--algo", "--algorithms")
    args = p.parse_args(["--algo", "y"])
    assert args.algorithms == "y"
    assert args.deprecations == ["cmdp-rl: warning: --algo is deprecated, use --algorithms"]
    assert "--algo " not in p.format_help()
    with pytest.raises(SystemExit):
        p.parse_args(["--algo", "z"])  # the new option's choices


def test_the_cli_prints_the_deprecation_after_a_refusal_never(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # pg --algo: the old spelling of --algorithms; a refusal (finite-horizon model) stays one line
    code = main(["pg", "1a", "--algo", "crpo", "--iterations", "1", "--out", str(tmp_path / "pg")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "is finite-horizon" in err and "deprecated" not in err
