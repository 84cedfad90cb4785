"""Round 3, class 9: ``step_timeout`` while another thread of the caller holds a lock.

With ``step_timeout`` the environment runs in its own process. It was forked at the first call:
a lock that a background thread of the caller held at that moment stayed held in the child (by
a thread that does not exist there), the child waited for ever, and the run failed with
"reset() took longer than step_timeout" although the same environment ran without a timeout.
Now the process starts afresh (a new interpreter) for an id or a picklable environment, and
the lock is free there; an environment that must be forked is checked by a start handshake
with its own deadline, and a child that hangs there is reported as hung at start.
"""

from __future__ import annotations

import numpy as np
import pytest
import threaded_envs as te
from faultkit import cases

import cmdp_rl.simulators.process
from cmdp_rl import learn
from cmdp_rl.simulators.blackbox import BlackBox, SimulatorError

CLASS = "Round 3: 9. step_timeout and threads"

ENV_ID = "threaded_envs:cmdp_rl_r3/ModuleLock-v0"


def _run(env: object, seed: int, step_timeout: float | None) -> np.ndarray:
    rec = learn(env, H=4, c_bar=3.0, episodes=3, seed=seed, algorithm="plugin", step_timeout=step_timeout)
    return np.asarray(rec.realized_return)


def test_an_id_starts_afresh_while_a_thread_holds_its_lock(tally) -> None:
    """``cmdp_rl_r3/ModuleLock-v0`` takes its module's lock in every call; a background thread holds
    it for the whole run: the run with a timeout is the run without one (same returns)."""
    n = cases(1, 4)
    for seed in range(n):
        plain_run = _run(ENV_ID, seed, None)
        release, thread = te.hold(te.LOCK)
        try:
            timed = _run(ENV_ID, seed, 30.0)
        finally:
            release.set()
            thread.join()
        np.testing.assert_array_equal(timed, plain_run)
        assert np.all(timed == 0.5 * 4)  # reward 0.5 at each of the H = 4 steps
    tally(n)


def test_a_picklable_object_starts_afresh_while_a_thread_holds_its_lock(tally) -> None:
    n = cases(1, 3)
    for seed in range(n):
        env = te.OwnLock(picklable=True)
        release, thread = te.hold(env.lock)
        try:
            timed = _run(env, seed, 30.0)
        finally:
            release.set()
            thread.join()
        np.testing.assert_array_equal(timed, np.full(3, 2.0))
    tally(n)


def test_an_unpicklable_object_is_forked_and_a_held_lock_is_named(tally) -> None:
    """Forked (it cannot be started afresh): the lock stays held in the child, and the timeout's
    one-line message says why and what to do."""
    env = te.OwnLock(picklable=False)
    release, thread = te.hold(env.lock)
    try:
        with pytest.raises(SimulatorError) as err:
            _run(env, 0, 2.0)
    finally:
        release.set()
        thread.join()
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith("episode 0, step 0: reset() took longer than step_timeout = 2.0 s"), msg
    assert "forked from this process" in msg and "picklable" in msg, msg
    tally(1)


def test_a_forked_child_that_hangs_at_start_is_reported_as_such(monkeypatch: pytest.MonkeyPatch, tally) -> None:
    """The child reads the spaces under the environment's lock for its start handshake; a thread
    of the caller holds that lock as the child is forked: hung at start, not a slow step."""
    monkeypatch.setattr(cmdp_rl.simulators.process, "START_TIMEOUT", 1.0)
    n = cases(1, 2)
    for _ in range(n):
        env = te.LockedSpaces()
        box = BlackBox(env, N=1, H=4, step_timeout=30.0)
        release, thread = te.hold(env.lock)
        try:
            with pytest.raises(SimulatorError) as err:
                box.reset(seed=0, episode=0)
        finally:
            release.set()
            thread.join()
            box.close()
        msg = str(err.value)
        assert "\n" not in msg
        assert msg.startswith("episode 0, step 0: the environment's process hung at start (no answer within 1.0 s"), msg
        assert "took longer than step_timeout" not in msg
    tally(n)


def test_without_a_held_lock_every_way_runs_the_same(tally) -> None:
    """The id, the picklable object and the forked object give the same run, with or without a timeout."""
    ways = [ENV_ID, te.OwnLock(picklable=True), te.OwnLock(picklable=False)]
    for env in ways:
        np.testing.assert_array_equal(_run(env, 5, 30.0), _run(env, 5, None))
    tally(len(ways))
