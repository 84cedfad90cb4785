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

Modules: [`parser`][cmdp_rl.cli.parser] ([`build_parser`][cmdp_rl.cli.parser.build_parser] and
the list of commands), [`options`][cmdp_rl.cli.options] (the options several commands share, each
declared once, and the argument types), [`entry`][cmdp_rl.cli.entry] ([`main`][cmdp_rl.cli.entry.main]:
signals, exit codes, error reports), [`exit_codes`][cmdp_rl.cli.exit_codes], and one module per
command, which declares its options and runs it: [`solve`][cmdp_rl.cli.solve],
[`learn`][cmdp_rl.cli.learn] (``--from-log`` in [`learn_log`][cmdp_rl.cli.learn_log], ``--env`` in
[`simulator`][cmdp_rl.cli.simulator], what they share in [`learn_common`][cmdp_rl.cli.learn_common]),
[`bounds`][cmdp_rl.cli.bounds], [`scenarios`][cmdp_rl.cli.scenarios], [`certify`][cmdp_rl.cli.certify],
[`envs`][cmdp_rl.cli.envs], [`import_gym`][cmdp_rl.cli.import_gym], [`import_prism`][cmdp_rl.cli.import_prism],
[`import_jani`][cmdp_rl.cli.import_jani], [`import_drn`][cmdp_rl.cli.import_drn] (what they share in
[`checker_import`][cmdp_rl.cli.checker_import]), [`export`][cmdp_rl.cli.export],
[`frontier`][cmdp_rl.cli.frontier], [`pg`][cmdp_rl.cli.pg], [`report`][cmdp_rl.cli.report],
[`reproduce`][cmdp_rl.cli.reproduce], [`compare`][cmdp_rl.cli.compare], [`study`][cmdp_rl.cli.study];
[`common`][cmdp_rl.cli.common] holds what they share (a model checker's file as MODEL:
[`checker_model`][cmdp_rl.cli.checker_model]). A command's module imports its numerical
libraries when the command runs, so ``cmdp-rl --help`` loads neither NumPy nor SciPy. The
parser calls a command through this package (``_cmd_NAME``, e.g. ``_cmd_import_gym``), so a
function replaced here (as tests do) is the one called.
"""

from __future__ import annotations

from typing import Any

from cmdp_rl.cli.common import load_model, model_summary
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
from cmdp_rl.cli.parser import build_parser, command_function


def __getattr__(name: str) -> Any:
    """A command's function by its name here (``_cmd_solve``: [`cmdp_rl.cli.solve.run`][cmdp_rl.cli.solve.run])."""
    function = command_function(name)
    if function is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return function


def __dir__() -> list[str]:
    return sorted(globals())


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
