"""A Gymnasium adapter for any [`CMDP`][cmdp_rl.model.cmdp.CMDP] (optional extra ``gym``).

Episodes start in ``s0`` and last exactly ``H`` steps: ``step`` returns
``truncated=True`` on step ``H`` and never ``terminated=True`` (the horizon is
the only end, as in the paper). Like Safety-Gymnasium, ``step`` puts the
constraint costs of the step in ``info["cost"]``, an ``(N,)`` float array;
``info["h"]`` is the number of steps taken so far.

Observations and actions are plain state and action indices
(``Discrete(S)``, ``Discrete(A)``). The environment owns ``self.np_random``,
seeded through ``reset(seed=...)``.
"""

from __future__ import annotations

from typing import Any, SupportsFloat

import numpy as np
from numpy.typing import NDArray

try:
    import gymnasium as gym
    from gymnasium import spaces
except ImportError as exc:  # pragma: no cover - exercised only without gymnasium
    raise ImportError(
        "cmdp_rl.envs.gym_env needs the optional dependency 'gymnasium'; install it with "
        "`pip install 'cmdp-rl[gym]'` (or `pip install gymnasium`)"
    ) from exc

from cmdp_rl.envs.scenarios import SCENARIOS, get_scenario
from cmdp_rl.kernels.sampling import KernelDraws
from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.plumbing.validation import CMDPInputError, plain

Array = NDArray[np.float64]


class CMDPEnv(gym.Env[Any, Any]):
    """A finite-horizon CMDP as a Gymnasium environment.

    Args:
        cmdp: the model; its kernel drives the transitions: ``P (S, A, S)`` of a dense model, or
            the rows of the ``(S*A, S)`` CSR kernel ``K`` of a sparse one (never densified; the
            same draws as the dense twin for the same seed).
        render_mode: ``None`` or ``"ansi"`` (a one-line text description of the step).

    Attributes:
        cmdp: the wrapped model.
        observation_space: ``Discrete(S)``.
        action_space: ``Discrete(A)``.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}  # noqa: RUF012 - Gymnasium declares it so

    def __init__(self, cmdp: CMDP, render_mode: str | None = None) -> None:
        if not isinstance(cmdp, CMDP):
            raise CMDPInputError(f"cmdp: must be a cmdp_rl.CMDP, got {type(cmdp).__name__}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise CMDPInputError(
                f"render_mode: must be None or one of {self.metadata['render_modes']}, got {plain(render_mode)}"
            )
        self.cmdp = cmdp
        self.render_mode = render_mode
        self.observation_space = spaces.Discrete(cmdp.S)
        self.action_space = spaces.Discrete(cmdp.A)
        # the library's one sampler, on the kernel in its layout (dense rows or the CSR rows of K)
        self._draws = KernelDraws(cmdp)
        #: episodes are H steps long (a discounted model is refused: it has no horizon)
        self.H = cmdp.horizon("CMDPEnv")
        self._state: int = 0
        self._h: int | None = None
        # the last step's pieces; render() formats them (formatting every step costs more than the step)
        self._last: tuple[Any, ...] = ()

    @property
    def h(self) -> int | None:
        """Steps taken in the current episode (``None`` before the first ``reset``)."""
        return self._h

    @property
    def state(self) -> int:
        """The current state index."""
        return self._state

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        """Start an episode in ``s0`` (drawn from ``rho`` with ``self.np_random`` when the model has an
        initial distribution); ``seed`` reseeds ``self.np_random``."""
        super().reset(seed=seed)
        s0 = self.cmdp.s0
        self._state = s0 if isinstance(s0, int) else int(self.np_random.choice(self.cmdp.S, p=s0))
        self._h = 0
        self._last = (self._state,)
        return self._state, {"h": 0}

    def step(self, action: int) -> tuple[int, SupportsFloat, bool, bool, dict[str, Any]]:
        """Take ``action``; returns ``(next_state, reward, False, h == H, {"cost": (N,), "h": h})``.

        Raises:
            RuntimeError: called before ``reset`` or after the episode ended.
            CMDPInputError: ``action`` is not an action index.
        """
        if self._h is None or self._h >= self.H:
            raise RuntimeError("CMDPEnv.step: the episode is over (or never started); call reset() first")
        if not self.action_space.contains(action):
            raise CMDPInputError(f"action: must be an integer in [0, {self.cmdp.A - 1}], got {plain(action)}")
        s, a = self._state, int(action)
        reward = float(self.cmdp.r[s, a])
        cost = self.cmdp.c[:, s, a].copy()
        s2 = int(self._draws.next_states(s, a, np.array([self.np_random.random()]))[0])
        self._state = s2
        self._h += 1
        self._last = (self._h, s, a, s2, reward, cost)
        truncated = self._h >= self.H
        return s2, reward, False, truncated, {"cost": cost, "h": self._h}

    def render(self) -> str | None:
        """The last step as text when ``render_mode == "ansi"``, else ``None``."""
        if self.render_mode != "ansi":
            return None
        if len(self._last) == 1:
            return f"h=0 state={self._last[0]}"
        if not self._last:
            return ""
        h, s, a, s2, reward, cost = self._last
        return f"h={h} state={s} action={a} -> {s2} reward={reward:g} cost={cost}"


def scenario_env(scenario: str, render_mode: str | None = None) -> CMDPEnv:
    """A [`CMDPEnv`][cmdp_rl.envs.gym_env.CMDPEnv] of the registered scenario ``scenario`` (``"1a"``, ``"1b"``,
    ``"2"``)."""
    return CMDPEnv(get_scenario(scenario).build(), render_mode=render_mode)


def problem_env(spec: str, render_mode: str | None = None) -> CMDPEnv:
    """A [`CMDPEnv`][cmdp_rl.envs.gym_env.CMDPEnv] of any registered problem spec (``"garnet:S=50"``; see
    [`cmdp_rl.envs.registry`][cmdp_rl.envs.registry])."""
    from cmdp_rl.envs.registry import make

    return CMDPEnv(make(spec), render_mode=render_mode)


def gym_id(name: str) -> str:
    """The Gymnasium id of a registered problem: ``cmdp_rl/<name>-v0``."""
    return f"cmdp_rl/{name}-v0"


def register_problems() -> list[str]:
    """Register every finite-horizon problem of [`PROBLEMS`][cmdp_rl.envs.registry.PROBLEMS] with Gymnasium
    (idempotent; a discounted problem has no episodes to simulate).

    Ids ``cmdp_rl/<name>-v0`` (e.g. ``cmdp_rl/garnet-v0``); ``gymnasium.make(id, spec="garnet:S=50")``
    passes overrides. The scenarios keep their ids of [`register_scenarios`][cmdp_rl.envs.gym_env.register_scenarios]
    too.
    """
    from cmdp_rl.envs.registry import episodic_problems

    ids = register_scenarios()
    for name in episodic_problems():
        gid = gym_id(name)
        if gid not in gym.registry:
            gym.register(id=gid, entry_point=f"{__name__}:problem_env", kwargs={"spec": name})
        ids.append(gid)
    return ids


def register_scenarios() -> list[str]:
    """Register every scenario with Gymnasium (idempotent); returns their ids.

    Ids: ``cmdp_rl/Scenario1a-v0``, ``cmdp_rl/Scenario1b-v0``, ``cmdp_rl/Scenario2-v0``;
    ``gymnasium.make(id)`` then builds a [`CMDPEnv`][cmdp_rl.envs.gym_env.CMDPEnv].
    """
    ids = []
    for name, sc in SCENARIOS.items():
        if sc.gym_id not in gym.registry:
            gym.register(id=sc.gym_id, entry_point=f"{__name__}:scenario_env", kwargs={"scenario": name})
        ids.append(sc.gym_id)
    return ids


__all__ = ["CMDPEnv", "gym_id", "problem_env", "register_problems", "register_scenarios", "scenario_env"]
