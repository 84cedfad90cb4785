"""Environments that share a lock with a background thread of the caller (``test_faults_round3_step_timeout``).

Every environment has ``Discrete(3)`` states and ``Discrete(2)`` actions, reward 0.5 and
``info = {"cost": 0.1}``, and takes a lock in ``reset`` and ``step``:

* ``cmdp_rl_r3/ModuleLock-v0`` (importing this module registers it): the module's ``LOCK``;
* [`OwnLock`][threaded_envs.OwnLock]: its own lock, dropped when pickled and made anew when
  unpickled (``picklable=True``), or kept (the object cannot be pickled);
* [`LockedSpaces`][threaded_envs.LockedSpaces]: its spaces are read under its own lock (a
  telemetry thread that holds it while it reads the environment), and it cannot be pickled.

A child forked while another thread holds the lock inherits it held, by a thread that does not
exist in the child: the child waits forever.
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar

import gymnasium as gym

#: the lock of ``cmdp_rl_r3/ModuleLock-v0``
LOCK = threading.Lock()


class _Steps(gym.Env[Any, int]):
    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(self) -> None:
        self.observation_space: Any = gym.spaces.Discrete(3)
        self.action_space: Any = gym.spaces.Discrete(2)
        self.t = 0

    def _lock(self) -> Any:
        return LOCK

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[Any, dict[str, Any]]:
        with self._lock():
            super().reset(seed=seed)
            self.t = 0
            return 0, {}

    def step(self, action: int) -> Any:
        with self._lock():
            self.t += 1
            return int((self.t + action) % 3), 0.5, False, False, {"cost": 0.1}


class ModuleLock(_Steps):
    """Takes the module's ``LOCK`` in ``reset`` and ``step``."""


class OwnLock(_Steps):
    """Takes its own lock in ``reset`` and ``step``; ``picklable``: the lock is left out of its pickle."""

    def __init__(self, picklable: bool = True) -> None:
        super().__init__()
        self.picklable = picklable
        self.lock = threading.Lock()

    def _lock(self) -> Any:
        return self.lock

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        if self.picklable:
            del state["lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.lock = threading.Lock()


class LockedSpaces(_Steps):
    """Its spaces are read under its own lock; it cannot be pickled (the lock)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._spaces = (gym.spaces.Discrete(3), gym.spaces.Discrete(2))
        self.t = 0

    @property
    def observation_space(self) -> Any:  # type: ignore[override]
        with self.lock:
            return self._spaces[0]

    @property
    def action_space(self) -> Any:  # type: ignore[override]
        with self.lock:
            return self._spaces[1]

    def _lock(self) -> Any:
        return threading.Lock()  # its steps need no shared lock


def hold(lock: Any) -> tuple[threading.Event, threading.Thread]:
    """A background thread that takes ``lock`` and holds it until the returned event is set."""
    taken, release = threading.Event(), threading.Event()

    def run() -> None:
        with lock:
            taken.set()
            release.wait()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    taken.wait()
    return release, thread


if "cmdp_rl_r3/ModuleLock-v0" not in gym.registry:
    gym.register(id="cmdp_rl_r3/ModuleLock-v0", entry_point=ModuleLock, disable_env_checker=True)

__all__ = ["LOCK", "LockedSpaces", "ModuleLock", "OwnLock", "hold"]
