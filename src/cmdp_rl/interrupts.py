"""SIGINT and SIGTERM as exceptions that never land inside compiled code.

Python runs a signal handler between bytecodes of the main thread. When that moment falls inside
a call into a numba-compiled kernel (while its arguments are typed, or in a callback), the
exception the handler raises is left set while the kernel returns a result, and CPython reports
a ``SystemError`` ("returned a result with an exception set") instead of the interrupt: the CLI
then ended with exit 3 and a traceback. Here the handler only records a signal that arrives inside
a [`compiled_section`][cmdp_rl.interrupts.compiled_section] and raises it as soon as the section
ends; elsewhere it raises at once. Long compiled work is cut into calls of a fraction of a second
(the learners' batches, the planners' iterations), so an interrupt is honoured within about a
second.

SIGINT raises ``KeyboardInterrupt``; SIGTERM raises [`Terminated`][cmdp_rl.interrupts.Terminated]
(a ``KeyboardInterrupt``, so every ``finally`` and every worker shutdown runs for both).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class Terminated(KeyboardInterrupt):
    """Raised in the main thread on SIGTERM, so every ``finally`` (worker shutdown) runs."""


#: the main thread's depth of compiled sections and the first signal that arrived in one
_depth = 0
_pending: int | None = None


def _interrupt(signum: int) -> KeyboardInterrupt:
    return Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def _on_signal(signum: int, frame: FrameType | None) -> None:
    global _pending
    if _depth > 0:
        if _pending is None:
            _pending = signum
        return
    raise _interrupt(signum)


def pending() -> int | None:
    """The signal recorded inside a compiled section and not raised yet (``None`` if none)."""
    return _pending


def check_interrupt() -> None:
    """Raise a recorded signal now (outside compiled sections); a no-op when there is none."""
    global _pending
    if _pending is not None and _depth == 0:
        signum, _pending = _pending, None
        raise _interrupt(signum)


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
    """Install the handlers of SIGINT and SIGTERM for the block; the previous ones are restored.

    A signal the process was started with ignored stays ignored (a shell starts background jobs
    with SIGINT ignored, so that Ctrl-C reaches only the foreground). Outside the main thread
    (e.g. a test's worker thread) this does nothing."""
    global _pending
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    watched = [s for s in (signal.SIGINT, signal.SIGTERM) if signal.getsignal(s) is not signal.SIG_IGN]
    previous = {s: signal.signal(s, _on_signal) for s in watched}
    _pending = None
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


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


__all__ = ["Terminated", "check_interrupt", "compiled_section", "interrupt_of", "pending", "signals_as_exceptions"]
