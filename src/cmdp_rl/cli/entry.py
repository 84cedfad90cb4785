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
import signal
import sys
import tempfile
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from .. import __version__
from ..atomic import ignore_file_size_signal
from ..errors import CMDPInputError, SolverError
from .exit_codes import EXIT_BAD_INPUT, EXIT_BROKEN_PIPE, EXIT_INTERNAL, EXIT_SIGINT, EXIT_SIGTERM
from .parser import build_parser


class Terminated(KeyboardInterrupt):
    """Raised in the main thread on SIGTERM, so every ``finally`` (worker shutdown) runs."""


def _traceback_file(exc: BaseException) -> Path:
    """Write the full traceback of ``exc`` to a file in the temporary folder; return its path."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    fd, name = tempfile.mkstemp(prefix=f"cmdp-rl-traceback-{stamp}-", suffix=".txt")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(f"cmdp-rl {__version__}, Python {sys.version.split()[0]}\n")
        fh.write("argv: " + " ".join(sys.argv) + "\n\n")
        fh.write("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
    return Path(name)


@contextmanager
def _signals_as_exceptions() -> Iterator[None]:
    """SIGTERM raises [`Terminated`][cmdp_rl.cli.entry.Terminated] in the main thread (so cleanup runs); restored
    afterwards."""

    def on_term(signum: int, frame: FrameType | None) -> None:
        raise Terminated()

    try:
        previous = signal.signal(signal.SIGTERM, on_term)
    except ValueError:  # not the main thread (e.g. called from a test's worker thread)
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _one_line_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    print(f"cmdp-rl: warning: {message}", file=sys.stderr)


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
        with _signals_as_exceptions():
            return func(args)
    except CMDPInputError as exc:
        print(f"{name}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError, FileExistsError) as exc:
        # a path the user gave cannot be read or written (checked up front where possible)
        where = f" {exc.filename}" if exc.filename else ""
        print(f"{name}: error: cannot use{where}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # the reader went away (e.g. `| head`): silence the final flush of stdout
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_BROKEN_PIPE
    except Terminated:
        print(f"{name}: terminated", file=sys.stderr)
        return EXIT_SIGTERM
    except KeyboardInterrupt:
        print(f"{name}: interrupted", file=sys.stderr)
        return EXIT_SIGINT
    except Exception as exc:
        kind = "solver error" if isinstance(exc, SolverError) else f"internal error: {type(exc).__name__}"
        if args.debug:
            traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
            print(f"{name}: {kind}: {exc}", file=sys.stderr)
            return EXIT_INTERNAL
        try:
            where = f"full traceback in {_traceback_file(exc)}"
        except OSError:
            where = "rerun with --debug for the traceback"
        msg = " ".join(str(exc).split())
        print(f"{name}: {kind}: {msg} ({where}; please report it)", file=sys.stderr)
        return EXIT_INTERNAL
    finally:
        warnings.showwarning = old_showwarning


__all__ = ["Terminated", "main"]
