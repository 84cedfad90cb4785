"""The ``cmdp-rl`` argument parser: the top-level options, then every command's subparser, which
the command's own module fills (``COMMANDS``: its ``NAME``, ``HELP``,
``DESCRIPTION``, ``add_options`` and ``run``).

Building the parser (and ``cmdp-rl --help``) loads neither NumPy nor a command's work: the
command modules import their numerical libraries inside their ``run`` functions, the choices
come from [`cmdp_rl.plumbing.names`][cmdp_rl.plumbing.names], the limits from
[`cmdp_rl.plumbing.limits`][cmdp_rl.plumbing.limits], and the shared options from
[`cmdp_rl.cli.options`][cmdp_rl.cli.options].
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from importlib import import_module
from types import ModuleType
from typing import Any, NoReturn

from cmdp_rl.cli import (
    bounds,
    certify,
    compare,
    envs,
    export,
    frontier,
    import_drn,
    import_gym,
    import_jani,
    import_prism,
    learn,
    pg,
    report,
    reproduce,
    scenarios,
    solve,
    study,
)
from cmdp_rl.cli.exit_codes import EXIT_BAD_INPUT
from cmdp_rl.cli.options import MAX_MEMORY_TEXT, MAX_TIME_TEXT
from cmdp_rl.plumbing.errors import one_line
from cmdp_rl.plumbing.version import VERSION as __version__

#: the commands' modules, in the order ``cmdp-rl --help`` lists them; each holds its ``NAME``
COMMANDS: tuple[ModuleType, ...] = (
    solve,
    learn,
    bounds,
    scenarios,
    certify,
    envs,
    import_gym,
    import_prism,
    import_jani,
    import_drn,
    export,
    frontier,
    pg,
    report,
    reproduce,
    compare,
    study,
)

#: the package whose attributes are the commands' functions (``cmdp_rl.cli``)
_PACKAGE = __name__.rpartition(".")[0]


class _Help(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Show real defaults in --help and keep the descriptions' line breaks.

    An option without a default (``None``: the help says what happens then) and an on/off flag
    show no ``(default: ...)``, never ``(default: None)`` or ``(default: False)``."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.nargs == 0 or isinstance(action.default, bool):
            return action.help
        return super()._get_help_string(action)


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line and exit code 2, shows real defaults
    (``_Help``), and records which of a subcommand's options were given (``args.given``, for the
    options that a mode ignores)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Help)
        super().__init__(**kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, one_line(f"{self.prog}: error: {message} (see --help)") + "\n")

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if self._subparsers is None and args is not None:  # a subcommand's own options
            parsed.given = _given_options(self, list(args))
        return parsed, extras


class _Unset(list):  # type: ignore[type-arg]
    """The sentinel's type: a list, so that an ``action="append"`` option (which copies the current
    value and appends to the copy) works on it; a given option's value is never the sentinel itself."""


#: the default every option gets while ``_given_options`` re-parses
_UNSET = _Unset()


def _given_options(parser: argparse.ArgumentParser, argv: list[str]) -> frozenset[str]:
    """The destinations of the options that ``argv`` gives (typed, not defaults, whatever their
    value): ``argv`` parsed again with every default replaced by a sentinel."""
    saved = [(action, action.default) for action in parser._actions if action.default is not argparse.SUPPRESS]
    try:
        for action, _ in saved:
            action.default = _UNSET
        parser._given_pass = True  # type: ignore[attr-defined]  # a deprecated spelling warns once
        namespace, _ = argparse.ArgumentParser.parse_known_args(parser, argv, argparse.Namespace())
    finally:
        parser._given_pass = False  # type: ignore[attr-defined]
        for action, default in saved:
            action.default = default
    fixed = set(parser._defaults)  # set_defaults (the command's function)
    return frozenset(k for k, v in vars(namespace).items() if v is not _UNSET and k not in fixed)


def function_name(command: str) -> str:
    """The attribute of [`cmdp_rl.cli`][cmdp_rl.cli] that runs ``command``: ``_cmd_`` and its name
    (``import-gym``: ``_cmd_import_gym``)."""
    return "_cmd_" + command.replace("-", "_")


def command_function(attribute: str) -> Callable[[argparse.Namespace], int] | None:
    """The ``run`` function of the command whose [`function_name`][cmdp_rl.cli.parser.function_name]
    is ``attribute``, or ``None``."""
    for module in COMMANDS:
        if function_name(module.NAME) == attribute:
            run: Callable[[argparse.Namespace], int] = module.run
            return run
    return None


class _Command:
    """A command's function, looked up in [`cmdp_rl.cli`][cmdp_rl.cli] by its
    [`function_name`][cmdp_rl.cli.parser.function_name] when the command runs: a function replaced
    there (as tests do) is the one called."""

    def __init__(self, name: str) -> None:
        self.name = function_name(name)

    def __call__(self, args: argparse.Namespace) -> int:
        function: Callable[[argparse.Namespace], int] = getattr(import_module(_PACKAGE), self.name)
        return function(args)

    def __repr__(self) -> str:
        return f"_Command({self.name!r})"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with all subcommands: the top level here, each command from its module."""
    parser = _Parser(
        prog="cmdp-rl",
        description=(
            "Solve and learn constrained MDPs (tabular), finite-horizon (H) and discounted (gamma): solve, "
            "export and envs take both, learn, certify and frontier finite-horizon models, pg discounted ones. "
            "A MODEL is a registered problem with optional overrides (1a, garnet:S=50,seed=1; cmdp-rl envs lists "
            "them), a .npz file with keys P (S,A,S) (or a sparse P_data, P_indices, P_indptr, P_shape), r (S,A), "
            "c (N,S,A), c_bar (N,), s0, H or gamma[, names, meta], or a CSV/Parquet transition table (state, "
            "action, next_state, prob[, reward, cost_0, ...]) with --horizon or --gamma, --c-bar and --s0, or a "
            "model checker's file (.prism/.nm/.pm, .jani, .drn; through stormpy) with --reward, --cost, --constants "
            "and the same options; an existing file of that name wins."
        ),
        epilog="Exit codes: 0 ok, 1 infeasible, 2 bad input (one line, nothing written), 3 internal or "
        "solver error, 4 uncertified (solve: feasible, gap above --gap-tol), 130/143 interrupted/terminated "
        "(rerun resumes), 141 broken pipe.",
    )
    parser.add_argument("--version", action="version", version=f"cmdp-rl {__version__}")
    parser.add_argument("--debug", action="store_true", help="print the full traceback of an internal error")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for command in COMMANDS:
        p = sub.add_parser(command.NAME, help=command.HELP, description=command.DESCRIPTION)
        command.add_options(p)
        p.set_defaults(func=_Command(command.NAME))
    return parser


__all__ = ["COMMANDS", "MAX_MEMORY_TEXT", "MAX_TIME_TEXT", "build_parser", "command_function", "function_name"]
