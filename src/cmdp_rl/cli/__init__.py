"""The ``cmdp-rl`` command line: [`main`][cmdp_rl.cli.entry.main] (the console script) and
[`build_parser`][cmdp_rl.cli.parser.build_parser].

Exit codes (one error boundary for every command, [`main`][cmdp_rl.cli.entry.main]):

* 0 success (``solve``: optimal); 1 the problem is infeasible;
* 2 bad input: a bad argument, file, path, number, a refused overwrite or a job beyond
  a resource limit; one line on stderr, nothing written;
* 3 an internal error or a solver failure: one line on stderr naming the file that holds
  the full traceback (``--debug`` prints it instead);
* 130 interrupted (SIGINT, Ctrl-C), 143 terminated (SIGTERM): workers are stopped,
  finished runs are kept, rerunning resumes; 141 the reader of the output went away
  (broken pipe).

Modules: [`parser`][cmdp_rl.cli.parser] (every subcommand's options), [`entry`][cmdp_rl.cli.entry]
([`main`][cmdp_rl.cli.entry.main]: signals, exit codes, error reports), [`exit_codes`][cmdp_rl.cli.exit_codes], and the
commands: [`models`][cmdp_rl.cli.models] (``solve``, ``export``, ``envs``, ``scenarios``,
``bounds``, ``frontier``, ``certify``, ``import-gym``), [`learn`][cmdp_rl.cli.learn] (``learn``;
``--env`` in [`simulator`][cmdp_rl.cli.simulator]), [`experiments`][cmdp_rl.cli.experiments] (``reproduce``,
``compare``, ``study``), [`pg`][cmdp_rl.cli.pg] (``pg``); [`common`][cmdp_rl.cli.common] holds
what they share. A command's module is imported when the command runs (the parser looks its
function up here by name), so ``cmdp-rl --help`` loads neither NumPy nor SciPy.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from cmdp_rl.cli.entry import Terminated, console, main
from cmdp_rl.cli.exit_codes import (
    EXIT_BAD_INPUT,
    EXIT_BROKEN_PIPE,
    EXIT_INFEASIBLE,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_SIGINT,
    EXIT_SIGTERM,
    EXIT_UNCERTIFIED,
)
from cmdp_rl.cli.parser import build_parser

if TYPE_CHECKING:
    from cmdp_rl.cli.common import load_model, model_summary

#: the names loaded on first use -> (module, name there): the subcommands' functions (which the
#: parser calls through this package) and the shared model helpers
_LAZY: dict[str, tuple[str, str]] = {
    "_cmd_solve": ("models", "_cmd_solve"),
    "_cmd_export": ("models", "_cmd_export"),
    "_cmd_envs": ("models", "_cmd_envs"),
    "_cmd_scenarios": ("models", "_cmd_scenarios"),
    "_cmd_bounds": ("models", "_cmd_bounds"),
    "_cmd_frontier": ("models", "_cmd_frontier"),
    "_cmd_certify": ("models", "_cmd_certify"),
    "_cmd_import_gym": ("models", "_cmd_import_gym"),
    "_cmd_learn": ("learn", "_cmd_learn"),
    "_cmd_reproduce": ("experiments", "_cmd_reproduce"),
    "_cmd_compare": ("experiments", "_cmd_compare"),
    "_cmd_study": ("experiments", "_cmd_study"),
    "_cmd_pg": ("pg", "cmd_pg"),
    "_cmd_report": ("report", "cmd_report"),
    "load_model": ("common", "load_model"),
    "model_summary": ("common", "model_summary"),
}


def __getattr__(name: str) -> Any:
    """Load a command's function (or a model helper) on first use."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = _LAZY[name]
    return getattr(import_module(f"{__name__}.{module}"), attribute)


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_BROKEN_PIPE",
    "EXIT_INFEASIBLE",
    "EXIT_INTERNAL",
    "EXIT_OK",
    "EXIT_SIGINT",
    "EXIT_SIGTERM",
    "EXIT_UNCERTIFIED",
    "Terminated",
    "build_parser",
    "console",
    "load_model",
    "main",
    "model_summary",
]
