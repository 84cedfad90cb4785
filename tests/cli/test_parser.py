"""The parser: one subparser per command module, named by the module's ``NAME`` alone, and the
command called through the package (a function replaced there is the one called)."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import pytest

import cmdp_rl.cli as cli
from cmdp_rl.cli import build_parser, main
from cmdp_rl.cli.parser import COMMANDS, function_name

CLI = Path(__file__).resolve().parents[2] / "src" / "cmdp_rl" / "cli"

#: the commands as the documentation lists them (docs/cli-reference.md), in --help's order
DOCUMENTED = [
    "solve",
    "learn",
    "bounds",
    "scenarios",
    "certify",
    "envs",
    "import-gym",
    "import-prism",
    "import-jani",
    "import-drn",
    "export",
    "frontier",
    "pg",
    "report",
    "reproduce",
    "compare",
    "study",
]


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_one_subparser_per_command_module_in_the_documented_order() -> None:
    assert list(_subparsers()) == DOCUMENTED
    assert [m.NAME for m in COMMANDS] == DOCUMENTED
    for module in COMMANDS:
        assert callable(module.run) and callable(module.add_options), module.__name__


def test_a_command_name_is_written_once_in_the_package() -> None:
    """Each command's name is a string literal in exactly one place of ``src/cmdp_rl/cli``: its
    module's ``NAME`` (the parser, the dispatch and the command's own messages use that; a
    second table of names would be a second literal)."""
    literals: dict[str, list[str]] = {name: [] for name in DOCUMENTED}
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in literals:
                literals[node.value].append(f"{path.name}:{node.lineno}")
    for module in COMMANDS:
        (where,) = literals[module.NAME]
        assert where.startswith(Path(module.__file__ or "").name + ":"), (module.NAME, where)


def test_the_package_runs_each_command_by_its_function_name() -> None:
    from cmdp_rl.cli import import_gym, pg, solve

    assert function_name("import-gym") == "_cmd_import_gym"
    assert cli._cmd_import_gym is import_gym.run  # type: ignore[attr-defined]
    assert cli._cmd_solve is solve.run  # type: ignore[attr-defined]
    assert cli._cmd_pg is pg.run  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="no attribute '_cmd_frobnicate'"):
        _ = cli._cmd_frobnicate  # type: ignore[attr-defined]


def test_a_replaced_command_function_is_the_one_called(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[argparse.Namespace] = []

    def fake(args: argparse.Namespace) -> int:
        seen.append(args)
        return 7

    monkeypatch.setattr(cli, "_cmd_bounds", fake, raising=False)
    argv = ["bounds", "--states", "3", "--actions", "2", "-H", "4", "--eps", "0.5", "--delta", "0.25"]
    assert main(argv) == 7
    (args,) = seen
    assert (args.command, args.states, args.actions, args.horizon, args.eps, args.delta) == (
        "bounds",
        3,
        2,
        4,
        0.5,
        0.25,
    )
    assert args.constraints == 1 and args.json is False
    assert args.given == frozenset({"states", "actions", "horizon", "eps", "delta"})


def test_usage_errors_are_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bounds", "--states", "0", "--actions", "2", "-H", "4", "--eps", "0.5", "--delta", "0.5"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("cmdp-rl bounds: error: argument --states: ") and err.rstrip().endswith("(see --help)")
