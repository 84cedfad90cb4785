"""``cmdp-rl``'s entry point [`main`][cmdp_rl.cli.entry.main]: parse, run the command, and turn every outcome into
an exit code ([`cmdp_rl.cli.exit_codes`][cmdp_rl.cli.exit_codes]) with one line on stderr; SIGTERM runs the
commands' cleanup, warnings are one line each.

Nothing here loads NumPy: ``cmdp-rl --help`` and usage errors return before any command
module is imported.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import tempfile
import traceback
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from .. import __version__
from ..atomic import ignore_file_size_signal
from ..errors import CMDPInputError, SolverError, one_line
from ..interrupts import Terminated, interrupt_of, signals_as_exceptions
from .exit_codes import EXIT_BAD_INPUT, EXIT_BROKEN_PIPE, EXIT_INTERNAL, EXIT_SIGINT, EXIT_SIGTERM
from .parser import build_parser


def _traceback_file(exc: BaseException) -> Path:
    """Write the full traceback of ``exc`` to a file in the temporary folder; return its path."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    fd, name = tempfile.mkstemp(prefix=f"cmdp-rl-traceback-{stamp}-", suffix=".txt")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(f"cmdp-rl {__version__}, Python {sys.version.split()[0]}\n")
        fh.write("argv: " + " ".join(sys.argv) + "\n\n")
        fh.write("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
    return Path(name)


def say(line: str) -> None:
    """Print ``line`` on stderr as ONE printable line (``errors.one_line``): the single place the
    command line reports a refusal, an error, an interrupt or a warning, so that a message that
    embeds foreign text (an environment's exception with newlines, a control character in an
    argument) can never print more than one line or reach the terminal as a control sequence."""
    print(one_line(line), file=sys.stderr)


def _one_line_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    say(f"cmdp-rl: warning: {message}")


def _interrupted(name: str, exc: KeyboardInterrupt) -> int:
    """One line and the exit code of an interrupt: 143 for SIGTERM, 130 for SIGINT (Ctrl-C)."""
    if isinstance(exc, Terminated):
        say(f"{name}: terminated")
        return EXIT_SIGTERM
    say(f"{name}: interrupted")
    return EXIT_SIGINT


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``cmdp-rl`` console script; returns the exit code (see the module docstring)."""
    ignore_file_size_signal()  # a write beyond `ulimit -f` fails with EFBIG: exit 2 naming the file
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # usage errors (2), --help and --version (0)
        return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT
    func: Callable[[argparse.Namespace], int] = args.func
    name = f"cmdp-rl {args.command}"
    old_showwarning = warnings.showwarning
    warnings.showwarning = _one_line_warning
    try:
        with signals_as_exceptions():
            return func(args)
    except CMDPInputError as exc:
        say(f"{name}: error: {exc}")
        return EXIT_BAD_INPUT
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError, FileExistsError) as exc:
        # a path the user gave cannot be read or written (checked up front where possible)
        where = f" {exc.filename}" if exc.filename else ""
        say(f"{name}: error: cannot use{where}: {exc.strerror or exc}")
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # the reader went away (e.g. `| head`): silence the final flush of stdout
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt as exc:
        return _interrupted(name, exc)
    except Exception as exc:
        signal_exc = interrupt_of(exc)  # a signal that surfaced as another error (compiled code)
        if signal_exc is not None:
            return _interrupted(name, signal_exc)
        kind = "solver error" if isinstance(exc, SolverError) else f"internal error: {type(exc).__name__}"
        if args.debug:
            traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
            say(f"{name}: {kind}: {exc}")
            return EXIT_INTERNAL
        try:
            where = f"full traceback in {_traceback_file(exc)}"
        except OSError:
            where = "rerun with --debug for the traceback"
        say(f"{name}: {kind}: {exc} ({where}; please report it)")
        return EXIT_INTERNAL
    finally:
        warnings.showwarning = old_showwarning


def console() -> NoReturn:
    """The ``cmdp-rl`` console script (and ``python -m cmdp_rl``): [`main`][cmdp_rl.cli.entry.main], then exit.

    After an interrupt the process ends at once (``os._exit``, once the output streams are
    flushed): every file is already complete or removed and every worker stopped (the commands'
    ``finally`` blocks ran), and tearing down the loaded libraries took 1 to 1.6 s on a busy
    machine (0.2 s this way), beyond the second within which a signal is honoured. Not after
    worker processes (their semaphores are released at exit) or Ray (its shutdown stops the local
    cluster's processes): those exits run in full."""
    code = main()
    full_exit = ("ray", "multiprocessing.resource_tracker")
    if code in (EXIT_SIGINT, EXIT_SIGTERM) and not any(name in sys.modules for name in full_exit):
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)
    sys.exit(code)


__all__ = ["Terminated", "console", "main", "say"]
