"""Misbehaving Gymnasium environments for the simulator faults (``test_faults_new_paths_simulators``).

Importing this module registers each under ``cmdp_rl_faults/<Name>-v0``; a subprocess reaches
them as ``cmdp-rl learn --env fault_envs:cmdp_rl_faults/<Name>-v0`` with this folder on
``PYTHONPATH`` (``gymnasium.make`` imports the module before the id is looked up), and the
fault's details come from ``--env-kwargs``. Every environment has ``Discrete(3)`` states and
``Discrete(2)`` actions, reward 0.5 and ``info = {"cost": 0.1}`` unless its fault says
otherwise, and misbehaves from step ``at`` of episode ``episode`` (0-based) on.
"""

from __future__ import annotations

import collections
import itertools
import os
import time
from typing import Any, ClassVar

import gymnasium as gym


class Faulty(gym.Env[Any, int]):
    """A three-state environment with one fault (module docstring).

    Args:
        fault: ``"none"``, ``"obs"`` (step returns ``obs``), ``"reset_obs"`` (reset returns
            ``obs``), ``"info"`` (step returns ``info``), ``"six"`` (the six-tuple with cost
            ``cost``), ``"raise"`` / ``"reset_raise"`` (a ``RuntimeError``), ``"sleep"``
            (``time.sleep(seconds)``, interruptible), ``"cloop"`` (a C loop that holds the GIL and
            never returns to the interpreter), ``"reset_cloop"`` (the same in reset), ``"die"``
            (the process exits at once, as a crash in C code would), ``"grow"`` / ``"shrink"`` /
            ``"actions"`` / ``"box"`` (the observation space grows, shrinks, the action space
            changes, the observation space becomes a ``Box``, before the reset of episode
            ``episode``).
        at: the step (of episode ``episode``) from which the fault shows.
        episode: the episode of the fault.
        obs: the observation returned by ``"obs"`` / ``"reset_obs"``.
        info: the info dict of ``"info"``.
        cost: the cost item of ``"six"``.
        seconds: the sleep of ``"sleep"``.
        pid_file: a file the environment writes its process id to at every call (to check where
            it runs and that a stuck process is gone).
        good_cost: the ``info["cost"]`` of the steps before the fault.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(
        self,
        fault: str = "none",
        at: int = 0,
        episode: int = 0,
        obs: Any = 1,
        info: Any = None,
        cost: Any = 0.1,
        seconds: float = 3600.0,
        pid_file: str | None = None,
        good_cost: Any = 0.1,
    ) -> None:
        self.observation_space: Any = gym.spaces.Discrete(3)
        self.action_space: Any = gym.spaces.Discrete(2)
        self.fault, self.at, self.fault_episode = fault, at, episode
        self.obs, self.info, self.cost, self.seconds = obs, info, cost, seconds
        self.pid_file, self.good_cost = pid_file, good_cost
        self.episode, self.t = -1, 0

    def _mark(self) -> None:
        if self.pid_file:
            with open(self.pid_file, "w") as fh:
                fh.write(str(os.getpid()))

    def _now(self) -> bool:
        return self.episode == self.fault_episode and self.t >= self.at

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self._mark()
        self.episode += 1
        self.t = 0
        if self.episode == self.fault_episode:
            if self.fault == "grow":
                self.observation_space = gym.spaces.Discrete(5)
            elif self.fault == "shrink":
                self.observation_space = gym.spaces.Discrete(2)
            elif self.fault == "actions":
                self.action_space = gym.spaces.Discrete(4)
            elif self.fault == "box":
                self.observation_space = gym.spaces.Box(0.0, 1.0, (1,))
            elif self.fault == "reset_raise":
                raise RuntimeError("reset failed: device not ready")
            elif self.fault == "reset_cloop":
                _c_loop()
            elif self.fault == "reset_obs":
                return self.obs, {}
        return 0, {}

    def step(self, action: int) -> Any:
        self._mark()
        now = self._now()
        self.t += 1
        obs: Any = int(self.t % 3)
        info: Any = {"cost": self.good_cost}
        if now:
            if self.fault == "obs":
                obs = self.obs
            elif self.fault == "info":
                info = self.info
            elif self.fault == "six":
                return obs, 0.5, self.cost, False, False, {}
            elif self.fault == "raise":
                raise RuntimeError("sensor failure")
            elif self.fault == "sleep":
                time.sleep(self.seconds)
            elif self.fault == "cloop":
                _c_loop()
            elif self.fault == "die":
                os._exit(77)
        return obs, 0.5, False, False, info


def _c_loop() -> None:
    """Hours in C code holding the GIL: ``deque`` consuming a ``repeat`` never returns to the
    interpreter, so no Python signal handler (``SIGALRM``) runs until it ends."""
    collections.deque(itertools.repeat(None, 10**13), maxlen=0)


#: the registered ids and their faults (the details come from --env-kwargs)
IDS = {
    "Good": "none",
    "BadObservation": "obs",
    "BadResetObservation": "reset_obs",
    "BadInfo": "info",
    "SixTuple": "six",
    "Raises": "raise",
    "ResetRaises": "reset_raise",
    "Sleeps": "sleep",
    "CLoop": "cloop",
    "ResetCLoop": "reset_cloop",
    "Dies": "die",
    "GrowingSpace": "grow",
    "ShrinkingSpace": "shrink",
    "ChangingActions": "actions",
    "BoxSpace": "box",
}

for _name, _fault in IDS.items():
    _id = f"cmdp_rl_faults/{_name}-v0"
    if _id not in gym.registry:
        gym.register(id=_id, entry_point=Faulty, kwargs={"fault": _fault}, disable_env_checker=True)


def env_id(name: str) -> str:
    """The ``--env`` argument of ``name`` for a subprocess (``module:id``)."""
    return f"fault_envs:cmdp_rl_faults/{name}-v0"


__all__ = ["IDS", "Faulty", "env_id"]
