"""cmdp_rl.plumbing.interrupts: a signal is recorded, raised at safe points, and never lost in a callback."""

from __future__ import annotations

import gc
import signal
from collections.abc import Iterator

import pytest

from cmdp_rl.plumbing import interrupts


@pytest.fixture(autouse=True)
def _clean_signal_state() -> Iterator[None]:
    """Each test starts from the interpreter's own handlers and no recorded signal, whatever an
    earlier test in this worker process left (a failed CI run on a full suite: the second test's
    SIGINT did not raise after some other file ran in the same xdist worker), and gets them back."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    gc.collect()  # closes generators abandoned inside a compiled section (they hold its depth)
    setattr(interrupts, "_depth", 0)  # noqa: B010 (the module's state, not an API)
    interrupts.take_signal()
    try:
        yield
    finally:
        interrupts.take_signal()
        for s, handler in saved.items():
            signal.signal(s, handler)


def _signal_inside_gc_callback(signum: int) -> None:
    """Send ``signum`` to this process from a garbage-collector callback, whose exceptions CPython
    ignores ("Exception ignored in ..."), and spin there until the handler has run."""
    fired = []

    def callback(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and not fired:
            fired.append(True)
            signal.raise_signal(signum)
            for _ in range(100_000):
                pass

    gc.callbacks.append(callback)
    try:
        gc.collect()
    finally:
        gc.callbacks.remove(callback)
    assert fired


def test_a_signal_swallowed_by_a_callback_is_raised_at_the_next_safe_point(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(interrupts.Terminated), interrupts.signals_as_exceptions():
        _signal_inside_gc_callback(signal.SIGTERM)  # raised in the callback, and swallowed there
        assert interrupts.pending() == signal.SIGTERM  # still recorded (unless the retry came first)
        interrupts.check_interrupt()  # a safe point: raised again
        pytest.fail("the interrupt was lost")
    assert "Exception ignored" not in capsys.readouterr().err
    assert interrupts.take_signal() == signal.SIGTERM  # recorded until the error boundary takes it
    assert interrupts.pending() is None


def test_a_second_signal_does_not_interrupt_the_cleanup_of_the_first() -> None:
    cleaned = []
    with pytest.raises(KeyboardInterrupt), interrupts.signals_as_exceptions():
        try:
            signal.raise_signal(signal.SIGINT)
        finally:
            signal.raise_signal(signal.SIGINT)  # recorded only: this cleanup goes on
            cleaned.append(True)
    assert cleaned == [True]
    assert interrupts.take_signal() == signal.SIGINT
