"""The thread count: ``set_threads`` / ``CMDP_RL_THREADS`` / the default (all of numba's threads),
their order, the refusals (one line naming the argument and the range) and numba's setting
applied by ``apply_threads``."""

from __future__ import annotations

import os
from collections.abc import Iterator

import numba
import pytest

import cmdp_rl
from cmdp_rl.plumbing.errors import CMDPInputError
from cmdp_rl.plumbing.threads import (
    ENV_VAR,
    apply_threads,
    get_threads,
    init_worker_threads,
    max_threads,
    set_threads,
    threads_for,
    worker_threads,
)


@pytest.fixture(autouse=True)
def _default(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(ENV_VAR, raising=False)
    set_threads(None)
    yield
    monkeypatch.delenv(ENV_VAR, raising=False)
    set_threads(None)
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)


def test_default_is_every_numba_thread_and_top_level_names() -> None:
    assert max_threads() == numba.config.NUMBA_NUM_THREADS
    assert get_threads() == max_threads()
    assert cmdp_rl.set_threads is set_threads and cmdp_rl.get_threads is get_threads


def test_set_threads_then_environment_then_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, "1")
    assert get_threads() == 1
    assert set_threads(max_threads()) == max_threads()  # the call wins over the variable
    assert get_threads() == max_threads()
    assert set_threads(None) == 1  # back to the variable
    monkeypatch.delenv(ENV_VAR)
    assert get_threads() == max_threads()


def test_apply_threads_sets_numba_for_the_calling_thread() -> None:
    set_threads(1)
    assert apply_threads() == 1 and numba.get_num_threads() == 1
    set_threads(None)
    assert apply_threads() == max_threads() and numba.get_num_threads() == max_threads()


@pytest.mark.parametrize("n", [0, -1, "many", 2.5, True])
def test_set_threads_refuses_non_counts(n: object) -> None:
    top = max_threads()
    with pytest.raises(CMDPInputError) as info:
        set_threads(n)  # type: ignore[arg-type]
    text = str(info.value)
    assert text.startswith("n: must be") and f"[1, {top}]" in text and "\n" not in text
    assert get_threads() == top  # nothing changed


def test_set_threads_refuses_more_than_numba_has() -> None:
    top = max_threads()
    with pytest.raises(CMDPInputError, match=rf"^n: .*\[1, {top}\].*NUMBA_NUM_THREADS.*got {top + 1}$"):
        set_threads(top + 1)


@pytest.mark.parametrize("raw", ["0", "x", "1.5", "999999"])
def test_bad_environment_variable_is_named(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv(ENV_VAR, raw)
    with pytest.raises(CMDPInputError, match=rf"^{ENV_VAR}: must be .*\[1, {max_threads()}\]"):
        get_threads()


def test_worker_threads_one_unless_set(monkeypatch: pytest.MonkeyPatch) -> None:
    assert worker_threads() == 1  # neither set_threads nor the variable: the workers share the cores
    monkeypatch.setenv(ENV_VAR, str(max_threads()))
    assert worker_threads() == max_threads()
    monkeypatch.delenv(ENV_VAR)
    set_threads(1)
    assert worker_threads() == 1
    set_threads(max_threads())
    assert worker_threads() == max_threads()


def test_init_worker_threads_sets_the_count_and_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    init_worker_threads(1)
    assert get_threads() == 1 and os.environ[ENV_VAR] == "1"


def test_threads_for_sets_then_restores_and_names_the_option() -> None:
    set_threads(1)
    with threads_for("--threads", max_threads()) as n:
        assert n == max_threads() == get_threads()
    assert get_threads() == 1  # the previous choice is back
    with threads_for("--threads", None) as n:
        assert n == 1
    with pytest.raises(CMDPInputError, match=rf"^--threads: .*\[1, {max_threads()}\].*got {max_threads() + 1}$"):
        with threads_for("--threads", max_threads() + 1):
            raise AssertionError("not reached")  # pragma: no cover
    assert get_threads() == 1
