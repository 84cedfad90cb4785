"""``cmdp-rl``'s entry point [`main`][cmdp_rl.cli.entry.main]: parse, run the command, and turn every outcome into
an exit code ([`cmdp_rl.cli.exit_codes`][cmdp_rl.cli.exit_codes]) with one line on stderr; SIGTERM runs the
commands' cleanup, warnings are one line each.

Nothing here loads NumPy: ``cmdp-rl --help`` and usage errors return before any command
module is imported.
"""

from __future__ import annotations

import argparse
import atexit
import datetime
import os
import signal
import sys
import tempfile
import threading
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

from cmdp_rl.cli.exit_codes import EXIT_BAD_INPUT, EXIT_BROKEN_PIPE, EXIT_INTERNAL, EXIT_SIGINT, EXIT_SIGTERM
from cmdp_rl.cli.parser import build_parser
from cmdp_rl.plumbing.atomic import ignore_file_size_signal
from cmdp_rl.plumbing.errors import CMDPInputError, SolverError, one_line
from cmdp_rl.plumbing.interrupts import (
    Terminated,
    interrupt_of,
    pending,
    record_signal,
    record_signals,
    signals_as_exceptions,
    take_signal,
)
from cmdp_rl.plumbing.version import VERSION as __version__


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
    take_signal()  # reported now: the record is cleared
    if isinstance(exc, Terminated):
        say(f"{name}: terminated")
        return EXIT_SIGTERM
    say(f"{name}: interrupted")
    return EXIT_SIGINT


def _signalled(name: str, signum: int) -> int:
    """The exit of a signal recorded and never raised (its exception swallowed, or it arrived
    outside the command): as [`_interrupted`][cmdp_rl.cli.entry._interrupted]."""
    return _interrupted(name, Terminated() if signum == signal.SIGTERM else KeyboardInterrupt())


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``cmdp-rl`` console script; returns the exit code (see the module docstring)."""
    return _main(argv)[0]


def _main(argv: Sequence[str] | None = None) -> tuple[int, str]:
    """[`main`][cmdp_rl.cli.entry.main]: the exit code and the command's name for its messages."""
    ignore_file_size_signal()  # a write beyond `ulimit -f` fails with EFBIG: exit 2 naming the file
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # usage errors (2), --help and --version (0)
        return (exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT), "cmdp-rl"
    func: Callable[[argparse.Namespace], int] = args.func
    name = f"cmdp-rl {args.command}"
    notes: list[str] = list(getattr(args, "deprecations", ()))  # deprecated option spellings (the parser's)
    code = _run(func, args, name, notes)
    if code != EXIT_BAD_INPUT:  # a refusal stays one line: the deprecation notes only come with a result
        for note in dict.fromkeys(notes):
            say(note)
    return code, name


@contextmanager
def _threads(args: argparse.Namespace) -> Iterator[None]:
    """The command's ``--threads`` in effect while it runs (checked first: one line, exit 2), the
    previous count restored after it; nothing to do (and nothing loaded) when it is not given."""
    if getattr(args, "threads", None) is None:
        yield
        return
    from cmdp_rl.plumbing.threads import threads_for

    with threads_for("--threads", args.threads):
        yield


def _run(func: Callable[[argparse.Namespace], int], args: argparse.Namespace, name: str, notes: list[str]) -> int:
    old_showwarning = warnings.showwarning

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: Any = None,
        line: str | None = None,
    ) -> None:
        if issubclass(category, DeprecationWarning):  # kept for after the command (``_main``)
            notes.append(f"cmdp-rl: warning: {message}")
        else:
            _one_line_warning(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    # a deprecated name the user gave (e.g. a problem spec's threshold=): said once, as one line
    warnings.filterwarnings(
        "default", message=r".* is deprecated, use ", category=DeprecationWarning, module=r"cmdp_rl(\.|$)"
    )
    # numba's thread pool takes a process lock (a semaphore in /dev/shm) to guard its start against a
    # fork; the command line runs one process (its workers are spawned), so a lock it cannot create
    # (no /dev/shm, a file-size limit) is no reason to print numba's five-line warning
    warnings.filterwarnings("ignore", message=r"Could not obtain multiprocessing lock")
    try:
        with signals_as_exceptions(), _threads(args):
            code = func(args)
        signum = take_signal()  # its exception was swallowed on the way: the work ended anyway
        return code if signum is None else _signalled(name, signum)
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


def _flush() -> bool:
    """Flush stdout and stderr; ``False`` if the reader of stdout went away (broken pipe)."""
    ok = True
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:
            ok = False
            try:  # nothing more can reach that reader: the interpreter's own flush stays silent
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, stream.fileno())
            except (OSError, ValueError):
                pass
        except (OSError, ValueError):
            pass
    return ok


def _exit_now(code: int, name: str) -> NoReturn:
    """The end of the process, where no signal can be lost or kill it by its default action.

    What the interpreter's exit would do that matters, in its order: the other non-daemon threads
    are joined and the ``atexit`` functions run (workers' and Ray's shutdown, temporary folders),
    then the output streams are flushed, SIGINT and SIGTERM are blocked, and the process ends
    (``os._exit``) with 130 / 143 and the one line if a signal arrived at any time since the
    start (it is recorded: [`record_signals`][cmdp_rl.plumbing.interrupts.record_signals]). The teardown of
    the loaded libraries that ``sys.exit`` would do next took 1 to 1.6 s on a busy machine, and
    the interpreter restores the signals' default actions before it, so that a signal there
    killed the process or printed a traceback after the result."""
    shutdown = getattr(threading, "_shutdown", None)  # what the interpreter calls at exit
    try:
        if callable(shutdown):
            shutdown()
        atexit._run_exitfuncs()
    except KeyboardInterrupt:  # pragma: no cover - signals are only recorded here
        pass
    if not _flush() and code == 0:
        code = EXIT_BROKEN_PIPE
    block = getattr(signal, "pthread_sigmask", None)
    if block is not None:
        block(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        arrived = signal.sigpending() & {signal.SIGINT, signal.SIGTERM}
        if arrived and pending() is None:  # arrived after the block: recorded here
            record_signal(min(arrived))
    signum = take_signal()
    if signum is not None and code not in (EXIT_SIGINT, EXIT_SIGTERM):
        code = _signalled(name, signum)
        _flush()
    os._exit(code)


def console() -> NoReturn:
    """The ``cmdp-rl`` console script (and ``python -m cmdp_rl``): [`main`][cmdp_rl.cli.entry.main], then exit.

    From the first line of the package's code (``cmdp_rl/__init__.py``) to the exit, SIGINT and
    SIGTERM are recorded ([`record_signals`][cmdp_rl.plumbing.interrupts.record_signals]); the command raises them,
    and one that arrives before it (the imports) or after it (the result printed, the workers'
    shutdown) ends the process with 130 / 143 and the command's one line
    (``_exit_now``)."""
    record_signals()  # already done by the package's import when it is the console script
    code, name = _main()
    _exit_now(code, name)


__all__ = ["Terminated", "console", "main", "say"]
