"""A Gymnasium environment seen as a black box: ``reset`` and ``step`` only.

[`BlackBox`][cmdp_rl.simulators.blackbox.BlackBox] wraps an environment with ``Discrete`` observation and action spaces
and gives the learners' simulator loop ([`simulator`][cmdp_rl.simulators.learning]) one step at a time, checked:

* the environment is never asked for a model: no ``P``, no ``spec`` tables, no attribute
  other than ``observation_space``, ``action_space``, ``reset`` and ``step``;
* ``reset(seed)`` passes the episode's seed and checks the observation;
* ``step(a)`` returns ``(next_state, reward, costs (N,), terminated)``: the reward mapped to
  ``[0, 1]`` by ``reward_range`` (when given) and checked, the costs read from
  ``info[cost_key]``, else ``info["cost"]`` (a number or ``N`` numbers), else
  ``info["costs"]``, or from the third item of the safety-gymnasium 6-tuple
  ``(obs, reward, cost, terminated, truncated, info)``, each mapped to ``[0, 1]`` by its
  ``cost_range`` (when given) and checked ([`cmdp_rl.simulators.ranges`][cmdp_rl.simulators.ranges]);
* a truncation by the environment, an exception inside it, a call slower than
  ``step_timeout`` seconds, or observation or action spaces that change between episodes
  (checked at every ``reset``) is a [`SimulatorError`][cmdp_rl.simulators.blackbox.SimulatorError] naming the
  episode and step.

**Timeouts.** Without ``step_timeout`` the environment is called in this process (no
overhead). With it, the environment runs in a child process ([`cmdp_rl.simulators.process`][cmdp_rl.simulators.process],
started at the first call) fed through a pipe: each ``reset`` or ``step`` is sent to it, and a
call without an answer when ``step_timeout`` seconds have passed is killed with its process
(``SIGKILL``), wherever it is stuck: in Python, in a system call, or in C code that holds the GIL
or never returns to the interpreter (which a ``SIGALRM`` handler could not interrupt). A child
that dies (a crash in C code) is reported the same way. The child is a new interpreter that
makes the environment again from its id or unpickles it, so it inherits no lock that another
thread of this process held (a forked child deadlocked on one, and the run failed as a slow
step); an environment that can be neither is forked, and a child that does not start within
``envprocess.START_TIMEOUT`` seconds is reported as hung at start. The
environment object in the caller's process is then never stepped; the child ends with the run.

The docs page 'Learn from a simulator' says what the environment must provide.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.envs.making import env_attribute, gym_make
from cmdp_rl.plumbing.errors import foreign, one_line
from cmdp_rl.plumbing.validation import CMDPInputError, check_real_kind, plain
from cmdp_rl.simulators.process import EnvProcess, poll, spaces_of, start_forked, start_fresh
from cmdp_rl.simulators.ranges import RANGE_TOL, check_reward_range, run_units
from cmdp_rl.simulators.run_log import Steps

Array = NDArray[np.float64]


class SimulatorError(CMDPInputError):
    """The environment broke the rules of a black-box run (a bad observation, reward or cost,
    an early truncation, an exception inside it, a slow call); the message names the episode
    and step."""


#: what identifies a space for the check that spaces stay the same: ``(type name, n, start)``
Spaces = tuple[tuple[str, Any, Any], tuple[str, Any, Any]]


def _space_text(space: tuple[str, Any, Any]) -> str:
    kind, n, start = space
    return f"{kind}({n}{'' if start in (0, None) else f', start={start}'})" if n is not None else kind


def make_env(env: Any, env_kwargs: Mapping[str, Any] | None) -> Any:
    """``env`` itself, or ``gymnasium.make(env, **env_kwargs)`` for an id (a string); every failure
    to make it is a one-line ``CMDPInputError`` naming ``env`` or ``env_kwargs``
    ([`gym_make`][cmdp_rl.envs.making.gym_make]), and so is an object that is not an environment."""
    if isinstance(env, str):
        if env.startswith("cmdp_rl/"):
            from cmdp_rl.envs.gym_env import register_problems, register_scenarios

            register_scenarios()
            register_problems()
        return gym_make(env, env_kwargs, "env")
    if env_kwargs:
        raise CMDPInputError("env_kwargs: only with an environment id (a string), not with an instance")
    for method in ("reset", "step"):
        if not callable(env_attribute(env, method, "env", None)):
            raise CMDPInputError(
                f"env: must be a Gymnasium environment (with reset and step) or an id, got {type(env).__name__}"
            )
    return env


def discrete_size(name: str, space: Any) -> int:
    """The size ``n`` of a ``Discrete(n)`` space starting at 0, else a one-line error naming ``env``."""
    shown = one_line(repr(space))
    n, start = env_attribute(space, "n", "env", None), env_attribute(space, "start", "env", 0)
    if type(space).__name__ != "Discrete" or n is None:
        raise CMDPInputError(f"env: {name} space must be Discrete, got {shown}")
    try:
        size, first = int(n), int(start)
    except Exception as exc:
        raise CMDPInputError(f"env: {name} space {shown} has no integer size and start ({foreign(exc)})") from None
    if first != 0:
        raise CMDPInputError(f"env: {name} space must start at 0, got {shown}")
    return size


class BlackBox:
    """One environment, stepped through ``reset`` and ``step`` only (module docstring).

    Args:
        env: the environment (see [`make_env`][cmdp_rl.simulators.blackbox.make_env]).
        N: the number of constraints (costs expected per step).
        H: the episode length (a truncation before step ``H`` is an error, at ``H`` it is the end).
        reward_range: ``(lo, hi)`` mapped affinely to ``[0, 1]``, or ``None`` (rewards in ``[0, 1]``).
        cost_key: the ``info`` key of the costs, or ``None`` for ``"cost"`` then ``"costs"``.
        step_timeout: seconds allowed per ``reset`` or ``step`` call, or ``None``.
        source: ``(id, env_kwargs)`` when ``env`` was made by ``gymnasium.make`` from an id: the
            process of ``step_timeout`` makes it again from them.
        cost_range: ``(N, 2)`` rows ``(lo_i, hi_i)`` mapped affinely to ``[0, 1]``
            ([`check_cost_range`][cmdp_rl.simulators.ranges.check_cost_range]), or ``None`` (costs in ``[0, 1]``).
    """

    def __init__(
        self,
        env: Any,
        N: int,
        H: int,
        reward_range: tuple[float, float] | None = None,
        cost_key: str | None = None,
        step_timeout: float | None = None,
        source: tuple[str, Mapping[str, Any] | None] | None = None,
        cost_range: Array | None = None,
    ) -> None:
        self.env = env
        self.source = source
        self.S = discrete_size("observation", env_attribute(env, "observation_space"))
        self.A = discrete_size("action", env_attribute(env, "action_space"))
        self.N, self.H = N, H
        self.reward_range = reward_range
        self.cost_range = cost_range
        self.units = run_units(reward_range, cost_range, N, H)  # the identity without ranges
        self.cost_key = cost_key
        self.step_timeout = step_timeout
        self.spaces = spaces_of(env)
        self._worker: _Worker | None = None

    def close(self) -> None:
        """End the child process of a run with ``step_timeout`` (nothing to do without one)."""
        if self._worker is not None:
            self._worker.stop()
            self._worker = None

    def reset(self, seed: int, episode: int) -> int:
        """Start episode ``episode`` with ``env.reset(seed=seed)``; the first state. The spaces
        must be those the run started with."""
        out, spaces = self._call("reset", seed, episode, 0)
        if spaces is not None and spaces != self.spaces:
            for name, before, now in zip(("observation", "action"), self.spaces, spaces, strict=True):
                if before != now:
                    raise SimulatorError(
                        f"episode {episode}, step 0: the {name} space changed from {_space_text(before)} to "
                        f"{_space_text(now)} since the run started; the spaces must stay the same for the whole run"
                    )
        obs = out[0] if isinstance(out, tuple) else out
        return self._state(obs, episode, 0, "reset")

    def step(self, action: int, episode: int, step: int) -> tuple[int, float, Array, bool]:
        """Step ``step`` (0-based) of episode ``episode``: ``(next_state, reward, costs, terminated)``."""
        out = self._call("step", action, episode, step)[0]
        if not isinstance(out, tuple) or len(out) not in (5, 6):
            raise SimulatorError(
                f"episode {episode}, step {step}: step() must return (obs, reward, terminated, truncated, info) "
                f"or (obs, reward, cost, terminated, truncated, info), got {type(out).__name__}"
                + (f" of length {len(out)}" if isinstance(out, tuple) else "")
            )
        if len(out) == 6:
            obs, reward, cost, terminated, truncated, info = out
        else:
            obs, reward, terminated, truncated, info = out
            cost = self._cost_of(info, episode, step) if self.N else ()
        if self.N == 0:
            cost = ()  # no constraint: whatever costs the environment reports are not used
        nxt = self._state(obs, episode, step, "step")
        if truncated and not terminated and step + 1 < self.H:
            raise SimulatorError(
                f"episode {episode}, step {step}: the environment truncated the episode after {step + 1} "
                f"steps, before the horizon H = {self.H} (episodes are exactly H steps: raise the "
                "environment's time limit, e.g. max_episode_steps, to at least H)"
            )
        return nxt, self._reward(reward, episode, step), self._costs(cost, episode, step), bool(terminated)

    # ----------------------------------------------------------------------------- checks

    def play(
        self, policy: NDArray[Any], child: np.random.SeedSequence, episode: int, virtual: bool, s0: int | None
    ) -> Steps:
        """One episode of ``H`` steps with the planner's ``policy`` (its first step is the virtual
        start's when ``virtual``): an ``(H', S', A)`` table, or an ``(H', S')`` integer column of a
        deterministic policy (a mixture's drawn column): ``reset`` seeded from ``child``, actions
        drawn from ``child``'s own generator. Returns ``(states, actions, next_states, rewards,
        costs)`` of the steps taken (a termination ends them; its next state is ``S``, the absorbing
        state).

        Raises:
            CMDPInputError: ``reset`` returned another state than the known start ``s0``.
        """
        H, S = self.H, self.S
        reset_seed = int(child.generate_state(1)[0])
        rng = np.random.default_rng(child.spawn(1)[0])
        u = rng.random(H)
        s = self.reset(reset_seed, episode)
        if s0 is not None and s != s0:
            raise CMDPInputError(f"s0: the environment's reset returned state {s} in episode {episode}, not s0 = {s0}")
        column = policy.ndim == 2  # a deterministic column (H', S') of actions: no draw needed
        cum = policy[int(virtual) :] if column else np.cumsum(policy[int(virtual) :], axis=-1)  # (H, S', A) rows
        states: list[int] = []
        actions: list[int] = []
        nexts: list[int] = []
        rewards: list[float] = []
        costs: list[Array] = []
        for t in range(H):
            if column:
                a = int(cum[t, s])
            else:
                row = cum[t, s]
                a = int(min(np.searchsorted(row, u[t] * row[-1], side="right"), row.size - 1))
            s2, rew, cost, terminated = self.step(a, episode, t)
            states.append(s)
            actions.append(a)
            nexts.append(S if terminated else s2)
            rewards.append(rew)
            costs.append(cost)
            if terminated:
                break
            s = s2
        return states, actions, nexts, rewards, costs

    def _state(self, obs: Any, episode: int, step: int, call: str) -> int:
        if isinstance(obs, np.ndarray) and obs.shape == () and obs.dtype.kind in "iu":
            obs = obs[()]  # a 0-d integer array, which Discrete(n).contains accepts: np.array(0)
        if isinstance(obs, (bool, np.bool_)) or not isinstance(obs, (int, np.integer)):
            raise SimulatorError(
                f"episode {episode}, step {step}: {call}() returned the observation {plain(obs)}, "
                f"not a state index of Discrete({self.S})"
            )
        if not 0 <= int(obs) < self.S:
            raise SimulatorError(
                f"episode {episode}, step {step}: {call}() returned the state {int(obs)}, outside Discrete({self.S})"
            )
        return int(obs)

    def in_reward_units(self, mapped: float, steps: int) -> float:
        """A sum of ``steps`` rewards mapped to ``[0, 1]`` by ``reward_range = (lo, hi)``, back in the
        environment's units: ``steps lo + (hi - lo) mapped`` (unchanged without a range). A
        planner's value counts ``H`` steps; an episode the environment ends early has fewer."""
        if self.reward_range is None:
            return mapped
        lo, hi = self.reward_range
        return steps * lo + (hi - lo) * mapped

    def in_cost_units(self, mapped: Array, steps: int) -> Array:
        """``(N,)`` sums of ``steps`` costs mapped to ``[0, 1]`` by ``cost_range``, back in the
        environment's units: ``steps lo_i + w_i mapped_i`` (unchanged without a range)."""
        if self.cost_range is None:
            return mapped
        out: Array = steps * self.units.c_offset + self.units.c_width * mapped
        return out

    def _reward(self, reward: Any, episode: int, step: int) -> float:
        if isinstance(reward, float) or type(reward) is int:  # the common cases (not a bool), without NumPy
            raw = float(reward)
        else:
            arr = _real_numbers(reward, "reward", "a number", episode, step)
            if arr.size != 1:
                raise SimulatorError(f"episode {episode}, step {step}: reward {plain(reward)} is not one number")
            raw = float(arr[0])
        value = raw
        if self.reward_range is not None:
            lo, hi = self.reward_range
            value = (raw - lo) / (hi - lo)
        if not (math.isfinite(value) and -RANGE_TOL <= value <= 1.0 + RANGE_TOL):
            where = "[0, 1]" if self.reward_range is None else f"reward_range [{plain(lo)}, {plain(hi)}]"
            raise SimulatorError(
                f"episode {episode}, step {step}: reward {plain(raw)} outside {where}"
                + ("" if self.reward_range is not None else " (give reward_range=(lo, hi) to map it)")
            )
        return min(max(value, 0.0), 1.0)

    def _cost_of(self, info: Any, episode: int, step: int) -> Any:
        if not isinstance(info, Mapping):
            raise SimulatorError(
                f"episode {episode}, step {step}: step() info must be a dict, got {type(info).__name__}"
            )
        if self.cost_key is not None:
            if self.cost_key not in info:
                raise SimulatorError(
                    f"episode {episode}, step {step}: info has no key {self.cost_key!r} (cost_key); "
                    f"its keys are {sorted(map(str, info))}"
                )
            return info[self.cost_key]
        for key in ("cost", "costs"):
            if key in info:
                return info[key]
        if self.N == 0:
            return ()
        raise SimulatorError(
            f"episode {episode}, step {step}: info has neither 'cost' nor 'costs' (give cost_key=...); "
            f"its keys are {sorted(map(str, info))}"
        )

    def _costs(self, cost: Any, episode: int, step: int) -> Array:
        # the common cases in plain Python (a NumPy check costs more than the environment's step)
        values: list[float] | None = None
        if isinstance(cost, float) and self.N == 1:
            values = [cost]
        elif isinstance(cost, np.ndarray) and cost.shape == (self.N,) and cost.dtype == np.float64:
            values = cost.tolist()
        if values is not None and self.cost_range is None and all(0.0 <= v <= 1.0 for v in values):
            return np.array(values)
        arr = _real_numbers(cost, "cost", "a number or numbers", episode, step)
        if arr.size != self.N:
            raise SimulatorError(
                f"episode {episode}, step {step}: the step reported {arr.size} cost(s) but c_bar has N = {self.N}"
            )
        mapped = arr if self.cost_range is None else self.units.unit_c(arr)
        bad = ~(np.isfinite(mapped) & (mapped >= -RANGE_TOL) & (mapped <= 1.0 + RANGE_TOL))
        if bad.any():
            i = int(np.argmax(bad))
            if self.cost_range is None:
                where = "[0, 1] (give cost_range=(lo, hi) to map it)"
            else:
                where = f"cost_range [{plain(self.cost_range[i, 0])}, {plain(self.cost_range[i, 1])}]"
            raise SimulatorError(f"episode {episode}, step {step}: cost {i} = {plain(float(arr[i]))} outside {where}")
        out: Array = np.clip(mapped, 0.0, 1.0)
        return out

    def _call(self, call: str, arg: int, episode: int, step: int) -> tuple[Any, Spaces | None]:
        """``env.reset(seed=arg)`` or ``env.step(arg)``: its result, and the spaces after a reset
        (``None`` after a step); in this process, or in the child with ``step_timeout``."""
        where = f"episode {episode}, step {step}"
        if self.step_timeout is not None:
            if self._worker is None:
                self._worker = _Worker(self.env, self.source)
                kind, value = self._worker.started()
                if kind == "hung":
                    raise SimulatorError(f"{where}: {value}")
                if kind == "died":
                    raise SimulatorError(f"{where}: the environment's process died at start (exit code {value})")
                if kind == "cannot":
                    raise SimulatorError(f"{where}: the environment's process could not start it ({value})")
            kind, value = self._worker.call(call, arg, self.step_timeout)
            if kind == "ok":
                out, spaces = value
                return out, spaces
            if kind == "timeout":
                forked = f"; {FORKED}" if self._worker.process.forked else ""
                raise SimulatorError(
                    f"{where}: {call}() took longer than step_timeout = {plain(self.step_timeout)} s "
                    f"(stopped: its process was killed{forked})"
                )
            if kind == "died":
                raise SimulatorError(f"{where}: the environment's process died in {call}() (exit code {value})")
            raise SimulatorError(f"{where}: {value}" if kind == "error" else f"{where}: {_raised(call, *value)}")
        try:
            out = self.env.reset(seed=arg) if call == "reset" else self.env.step(arg)
            spaces = spaces_of(self.env) if call == "reset" else None  # its properties are the environment's code
        except (KeyboardInterrupt, SystemExit, SimulatorError):
            raise
        except Exception as exc:
            raise SimulatorError(f"{where}: {_raised(call, type(exc).__name__, str(exc))}") from exc
        return out, spaces


def _real_numbers(value: Any, what: str, rule: str, episode: int, step: int) -> Array:
    """A reward or cost the environment reported, as a flat float64 array, under the rules
    ``CMDP()`` applies to ``r`` and ``c`` (``validation.check_real_kind``): real numbers only, so
    a string (even ``"0.5"``), a boolean, ``None`` or a complex number is a ``SimulatorError``
    naming the episode, the step and the value as it was (``None``, not ``nan``)."""
    try:
        raw = np.asarray(value)
        check_real_kind(what, raw, value)
        return np.atleast_1d(np.asarray(raw, dtype=np.float64)).ravel()
    except (CMDPInputError, TypeError, ValueError, OverflowError):
        raise SimulatorError(
            f"episode {episode}, step {step}: {what} {plain(value)} is not {rule} (real numbers only, as CMDP() "
            "requires: not strings, booleans, None or complex numbers)"
        ) from None


def _raised(call: str, kind: str, text: str) -> str:
    return f"the environment raised {kind} in {call}(): {one_line(text)}"


#: what a forked environment process may have inherited (the environment could not be started afresh)
FORKED = (
    "it was forked from this process, where a lock that another thread held at that moment stays held "
    "for ever: give the environment as an id or a picklable object, and its process starts afresh"
)


class _Worker:
    """The environment in its own process (module docstring, 'Timeouts'), one call at a time
    through a pipe; a call past its deadline is stopped by killing the process."""

    def __init__(self, env: Any, source: tuple[str, Mapping[str, Any] | None] | None) -> None:
        fresh = start_fresh(env, source)
        self.process: EnvProcess = fresh if fresh is not None else start_forked(env)
        self.dead = False

    def started(self) -> tuple[str, Any]:
        """``("ready", spaces)``; ``("hung", message)`` (no answer within ``START_TIMEOUT``: the
        process is killed), ``("died", exit code)`` or ``("cannot", reason)``."""
        kind, value = self.process.first
        if kind == "ready":
            return kind, value
        self.stop()
        if kind == "hung":
            how = FORKED if self.process.forked else "making or loading the environment did not finish"
            return kind, (
                f"the environment's process hung at start (no answer within {plain(self.process.start_timeout)} s; "
                f"{how}; the process was killed)"
            )
        return kind, value

    def call(self, call: str, arg: int, timeout: float) -> tuple[str, Any]:
        """``("ok", (result, spaces))``, ``("raised", (type, text))``, ``("error", text)``,
        ``("timeout", None)`` (the process killed) or ``("died", exit code)``."""
        if self.dead:
            return "died", self.process.exitcode
        conn = self.process.conn
        try:
            conn.send((call, arg))
            if not poll(conn, timeout):
                self.stop()
                return "timeout", None
            reply: tuple[str, Any] = conn.recv()
        except (EOFError, OSError):
            self.stop()
            return "died", self.process.exitcode
        return reply

    def stop(self) -> None:
        """Kill the child (at once: a stuck call would not read a polite request) and reap it."""
        self.dead = True
        self.process.kill()


__all__ = ["RANGE_TOL", "BlackBox", "SimulatorError", "check_reward_range", "discrete_size", "make_env", "spaces_of"]
