"""SIGINT and SIGTERM: recorded when they arrive, acted on at safe points, workers included.

**Recorded, then raised.** The handler records the signal first. Then, inside a command
([`signals_as_exceptions`][cmdp_rl.plumbing.interrupts.signals_as_exceptions]), it raises it: SIGINT as
``KeyboardInterrupt``, SIGTERM as [`Terminated`][cmdp_rl.plumbing.interrupts.Terminated] (a
``KeyboardInterrupt``, so every ``finally`` and every worker shutdown runs for both). Not
everywhere:

* inside a [`compiled_section`][cmdp_rl.plumbing.interrupts.compiled_section] (a call into a
  numba-compiled kernel) it only records: an exception raised while the kernel's arguments are
  typed or in a callback is left set while the kernel returns a result, and CPython reports a
  ``SystemError`` instead of the interrupt. The signal is raised as soon as the call returns;
  long compiled work is cut into calls of a fraction of a second (the learners' batches, the
  planners' iterations), so an interrupt is honoured within about a second;
* before and after the command (start-up, the imports of the console script, and the exit
  after the result is printed: [`record_signals`][cmdp_rl.plumbing.interrupts.record_signals]) it only
  records, and the command line ends with 130 / 143 and its one line;
* a second signal while the first one's exception is on its way (through the ``finally``
  blocks that stop the workers) is recorded only, so the cleanup runs in full.

An exception raised inside a callback whose exceptions CPython ignores (a weakref callback such
as the import system's ``_get_module_lock.<locals>.cb``, a ``__del__``, a garbage-collector
callback) would be lost ("Exception ignored in ...", and the command ran on to exit 0): the
``sys.unraisablehook`` installed here recognises it, prints nothing, and has the recorded signal
raised again as soon as that callback has returned. The recorded signal stays recorded until
the command's error boundary takes it ([`take_signal`][cmdp_rl.plumbing.interrupts.take_signal]), so a
command whose interrupt was swallowed anyway still ends with 130 / 143.

**Worker processes** (the sweeps' pool, the figures, the environment's process of
``step_timeout``) leave interrupts to the driver, which stops them:
[`starting_workers`][cmdp_rl.plumbing.interrupts.starting_workers] blocks SIGINT in the thread that starts
them, so they inherit it blocked from their first instruction (a Ctrl-C reaches the whole
process group, and a worker still importing printed a ``spawn_main`` traceback), and
[`init_worker`][cmdp_rl.plumbing.interrupts.init_worker] ignores SIGINT, restores SIGTERM's default
action (the driver's ``Pool.terminate``) and ends the worker with its driver
([`die_with_parent`][cmdp_rl.plumbing.interrupts.die_with_parent]: ``PR_SET_PDEATHSIG`` on Linux, and a
watchdog thread that compares the parent's process id everywhere), so a driver killed with
``SIGKILL`` leaves no orphan computing.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any


class Terminated(KeyboardInterrupt):
    """Raised in the main thread on SIGTERM, so every ``finally`` (worker shutdown) runs."""


#: the signals handled here
_SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: the main thread's depth of compiled sections
_depth = 0
#: the first signal recorded and not taken yet by the command's error boundary
_pending: int | None = None
#: an exception for ``_pending`` is on its way (raised, and not reported lost)
_raised = False
#: inside ``signals_as_exceptions``: the handler raises (else it only records)
_raising = False
#: the unraisable hook that was installed before ours (``None``: ours is not installed)
_previous_unraisablehook: Callable[[Any], Any] | None = None


def _interrupt(signum: int) -> KeyboardInterrupt:
    return Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def _raise_pending() -> None:
    global _raised
    if _pending is not None and _raising and not _raised and _depth == 0:
        _raised = True
        raise _interrupt(_pending)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    global _pending
    if _pending is None:
        _pending = signum
    _raise_pending()


#: seconds after which an interrupt swallowed by a callback is raised again (the callback has returned)
RETRY_DELAY = 0.02


def _retrigger(signum: int) -> None:
    """From a helper thread: have the main thread's handler run again for ``signum`` (as if it
    arrived again), unless the signal was taken or raised meanwhile."""
    if _pending == signum and not _raised:
        import _thread

        _thread.interrupt_main(signal.Signals(signum))


def _on_unraisable(unraisable: Any) -> None:
    """``sys.unraisablehook``: our interrupt swallowed by a callback is raised again, silently."""
    global _raised
    exc = getattr(unraisable, "exc_value", None)
    if (
        isinstance(exc, KeyboardInterrupt)
        and _pending is not None
        and threading.current_thread() is threading.main_thread()
    ):
        _raised = False
        if _raising:  # the handler runs again shortly, once the callback has returned (else at a safe point)
            retry = threading.Timer(RETRY_DELAY, _retrigger, (_pending,))
            retry.daemon = True
            retry.start()
        return
    if _previous_unraisablehook is not None:
        _previous_unraisablehook(unraisable)


def _install_unraisablehook() -> None:
    global _previous_unraisablehook
    if _previous_unraisablehook is None:
        _previous_unraisablehook = sys.unraisablehook
        sys.unraisablehook = _on_unraisable


def _uninstall_unraisablehook() -> None:
    global _previous_unraisablehook
    if _previous_unraisablehook is not None and sys.unraisablehook is _on_unraisable:
        sys.unraisablehook = _previous_unraisablehook
        _previous_unraisablehook = None


def _install_handlers() -> dict[int, Any]:
    """Install ``_on_signal`` for SIGINT and SIGTERM, except a signal the process was started
    with ignored (a shell starts background jobs with SIGINT ignored, so that Ctrl-C reaches
    only the foreground; ``nohup``); the previous handlers."""
    watched = [s for s in _SIGNALS if signal.getsignal(s) is not signal.SIG_IGN]
    return {s: signal.signal(s, _on_signal) for s in watched}


def record_signals(mask: Iterable[int] | None = None) -> None:
    """The command line's start: from now to the exit, SIGINT and SIGTERM are recorded (never the
    default action: death by the signal, or a ``KeyboardInterrupt`` traceback from an import).
    Only in the main thread; for the whole process (not undone). A command then raises them
    ([`signals_as_exceptions`][cmdp_rl.plumbing.interrupts.signals_as_exceptions]), and the console script
    ends with 130 / 143 ([`cmdp_rl.cli.entry.console`][cmdp_rl.cli.entry.console]).

    ``mask``: the signal mask to restore once the handlers are installed (the package's first
    lines block SIGINT and SIGTERM until then: a signal that arrives meanwhile waits, and is
    delivered to the handler now)."""
    if threading.current_thread() is not threading.main_thread():
        return
    _install_handlers()
    _install_unraisablehook()
    if mask is not None and hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def record_signal(signum: int) -> None:
    """Record ``signum`` as its handler does when it arrives (and inside a command, raise it)."""
    _on_signal(signum, None)


def pending() -> int | None:
    """The signal recorded and not taken yet (``None`` if none)."""
    return _pending


def take_signal() -> int | None:
    """The recorded signal, now handled (the command's error boundary reports it): the record is
    cleared; ``None`` if there is none."""
    global _pending, _raised
    signum, _pending, _raised = _pending, None, False
    return signum


def check_interrupt() -> None:
    """At a safe point of the work: raise the recorded signal now if it has not been raised yet
    (it arrived in a compiled section, or its exception was swallowed); a no-op otherwise."""
    _raise_pending()


@contextmanager
def compiled_section(kernel: object = None) -> Iterator[None]:
    """Around a call into compiled code: a signal that arrives meanwhile is raised when it returns.

    ``kernel``: the numba dispatcher about to be called. Its first call (no signature yet) loads it
    from the cache or compiles it, in Python and for up to a minute: that call is not deferred.
    Only the main thread defers (signal handlers run there); elsewhere this does nothing."""
    global _depth
    if threading.current_thread() is not threading.main_thread() or not getattr(kernel, "signatures", True):
        yield
        return
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
    check_interrupt()  # not reached when the block raised: that exception goes first


@contextmanager
def signals_as_exceptions() -> Iterator[None]:
    """Raise SIGINT and SIGTERM as exceptions in the block (module docstring); the previous
    handlers are restored after it. A signal recorded before the block (at start-up) is raised
    as it starts.

    A signal the process was started with ignored stays ignored. Outside the main thread (e.g. a
    test's worker thread) this does nothing."""
    global _raising
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = _install_handlers()
    had_hook = _previous_unraisablehook is not None
    _install_unraisablehook()
    was_raising, _raising = _raising, True
    try:
        check_interrupt()
        yield
    finally:
        _raising = was_raising
        for s, handler in previous.items():
            signal.signal(s, handler)
        if not had_hook:
            _uninstall_unraisablehook()


# ------------------------------------------------------------------------------- workers


@contextmanager
def starting_workers(tracker: bool = False) -> Iterator[None]:
    """Around the start of worker processes: SIGINT is blocked in this thread, so they inherit it
    blocked (through ``exec`` too) and a Ctrl-C sent to the whole process group cannot interrupt
    their start-up; the driver handles it (a signal that arrives meanwhile is delivered here when
    the block ends). Where signals cannot be blocked (Windows) this does nothing.

    Blocking is not enough for the driver itself: a signal sent to the process may be delivered
    to another of its threads (a native library's), and CPython then runs the handler in the main
    thread all the same, in the middle of a worker's launch, whose preparation data was left
    half-written (the worker printed ``EOFError`` from ``spawn_main``). So the main thread also
    defers raising, as in a compiled section: the signal is raised when the block ends, with
    every worker fully started (the caller's cleanup then stops them).

    ``tracker``: the workers are spawned by ``multiprocessing`` (its ``spawn`` or ``forkserver``
    methods), whose resource tracker is started first, outside the block: starting it unblocks
    SIGINT and SIGTERM in the calling thread, and the workers started after it in the block
    inherited SIGINT unblocked."""
    global _depth
    block = getattr(signal, "pthread_sigmask", None)
    if block is None:  # pragma: no cover - not POSIX
        yield
        return
    if tracker:
        from multiprocessing import resource_tracker

        resource_tracker.ensure_running()
    main = threading.current_thread() is threading.main_thread()
    old = block(signal.SIG_BLOCK, {signal.SIGINT})
    if main:
        _depth += 1
    try:
        yield
    finally:
        if main:
            _depth -= 1
        block(signal.SIG_SETMASK, old)
    if main:
        check_interrupt()  # not reached when the block raised: that exception goes first


#: seconds between two looks of the watchdog at the parent's process id
WATCHDOG_PERIOD = 0.5


def die_with_parent() -> None:
    """In a worker process: end it when its parent dies (even by ``SIGKILL``). On Linux the kernel
    kills it (``PR_SET_PDEATHSIG``); everywhere a daemon thread checks every
    ``WATCHDOG_PERIOD`` seconds that the parent is still the same
    process; a worker whose parent is already gone ends at once."""
    parent = os.getppid()
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass
    if parent == 1 or os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(WATCHDOG_PERIOD)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="cmdp-rl parent watchdog", daemon=True).start()


def init_worker() -> None:
    """Initializer of every worker process: SIGINT ignored (the driver handles it and stops the
    workers), SIGTERM's default action (``Pool.terminate``; a forked worker inherited the driver's
    handler), and the worker ends with its driver ([`die_with_parent`][cmdp_rl.plumbing.interrupts.die_with_parent])."""
    global _raising, _pending, _raised
    _raising, _pending, _raised = False, None, False  # a forked worker's copy of the driver's state
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _uninstall_unraisablehook()
    die_with_parent()


def interrupt_of(exc: BaseException) -> KeyboardInterrupt | None:
    """The interrupt behind ``exc``: ``exc`` itself; or one in its chain of causes (a ``SystemError``
    from a kernel called as the signal arrived, numba's ``RuntimeError`` when a compilation was
    interrupted: errors that only report the interrupt); or the signal still recorded when another
    exception ended the work."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        if isinstance(link, KeyboardInterrupt):
            return link
        seen.add(id(link))
        link = link.__cause__ or link.__context__
    if _pending is not None:
        return _interrupt(_pending)
    return None


__all__ = [
    "RETRY_DELAY",
    "WATCHDOG_PERIOD",
    "Terminated",
    "check_interrupt",
    "compiled_section",
    "die_with_parent",
    "init_worker",
    "interrupt_of",
    "pending",
    "record_signal",
    "record_signals",
    "signals_as_exceptions",
    "starting_workers",
    "take_signal",
]
