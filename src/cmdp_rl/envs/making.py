"""Making and inspecting a Gymnasium environment, for every entry point that takes one.

``cmdp-rl learn --env`` and [`cmdp_rl.learn`][cmdp_rl.simulators.learning.learn] (through
``cmdp_rl.simulators.blackbox.make_env``), ``cmdp-rl import-gym`` and
``from_gymnasium`` make an environment from an id with
[`gym_make`][cmdp_rl.envs.making.gym_make] and read its attributes with
[`env_attribute`][cmdp_rl.envs.making.env_attribute]. Whatever goes wrong there (an unknown id, a
module that cannot be imported, keywords the environment refuses, an exception inside its
constructor or one of its properties, a missing attribute) is a
[`CMDPInputError`][cmdp_rl.plumbing.errors.CMDPInputError] naming the argument (``env``, ``env_or_id`` or
``env_kwargs``), with the environment's own message on one line: never an internal error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cmdp_rl.plumbing.errors import CMDPInputError, foreign, one_line

#: ``env_attribute``'s marker of an attribute without a default (a missing one is refused)
REQUIRED: Any = object()


def gym_make(env_id: str, env_kwargs: Mapping[str, Any] | None, name: str = "env") -> Any:
    """``gymnasium.make(env_id, **env_kwargs)``; every failure is a one-line ``CMDPInputError``.

    It names ``name`` (the id's argument) for an unknown id or module (``nosuchmod:Foo-v0``) or
    an environment that fails to build without keywords, and ``env_kwargs`` when keywords were
    given and the environment refused them (an unknown keyword, FrozenLake's ``map_name="9x9"``).
    """
    try:
        import gymnasium as gym
    except ImportError:  # pragma: no cover - gymnasium is a dependency
        raise CMDPInputError(f"{name}: an environment id needs gymnasium (pip install gymnasium)") from None
    kwargs = dict(env_kwargs or {})
    shown = one_line(repr(env_id))
    try:
        return gym.make(env_id, **kwargs)
    except gym.error.Error as exc:  # unknown id, namespace or version; a malformed id
        raise CMDPInputError(f"{name}: gymnasium.make({shown}) failed: {one_line(exc)}") from None
    except ImportError as exc:  # "module:Env-v0" whose module is missing or broken
        raise CMDPInputError(
            f"{name}: gymnasium.make({shown}) cannot import the environment ({foreign(exc)})"
        ) from None
    except Exception as exc:  # the environment's constructor refused its keywords, or failed
        if kwargs:
            raise CMDPInputError(f"env_kwargs: {shown} refused them ({foreign(exc)})") from None
        raise CMDPInputError(f"{name}: gymnasium.make({shown}) failed ({foreign(exc)})") from None


def env_attribute(env: Any, attribute: str, name: str = "env", default: Any = REQUIRED) -> Any:
    """``env.<attribute>`` read from an environment (``observation_space``, ``spec``, ``P``, ...):
    an exception raised while reading it (a property of the environment that fails) is a
    one-line ``CMDPInputError`` naming ``name``; a missing attribute gives ``default``, or is
    refused when there is none (an object without spaces is not an environment)."""
    try:
        return getattr(env, attribute)
    except AttributeError as exc:
        missing = getattr(exc, "name", attribute) == attribute  # not another attribute a property needed
        if missing and default is not REQUIRED:
            return default
        if missing:
            raise CMDPInputError(
                f"{name}: {type(env).__name__} has no {attribute}; a Gymnasium environment (reset, step and "
                "Discrete observation and action spaces) is needed"
            ) from None
        raise CMDPInputError(f"{name}: reading its {attribute} failed ({foreign(exc)})") from None
    except Exception as exc:
        raise CMDPInputError(f"{name}: reading its {attribute} failed ({foreign(exc)})") from None


__all__ = ["REQUIRED", "env_attribute", "gym_make"]
