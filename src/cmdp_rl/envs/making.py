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

**``module:NAME``.** An id with a colon names a Python module (``queue_env``, ``pkg.envs``)
imported as ``python -m`` does: the working directory first on ``sys.path`` (it is put there,
and stays, when it is not on the path already), so ``queue_env.py`` beside the user is found.
``NAME`` is then an environment class, or a callable returning an environment, defined in that
module (called with ``env_kwargs``); or else, when the module has no attribute ``NAME``, a
Gymnasium id that importing the module registers (Gymnasium's own ``module:Id`` convention, e.g.
``queue_env:Queue-v0``). A module that cannot be found, or fails while it is imported, is a
one-line ``CMDPInputError`` that says so and how to fix it.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Mapping
from typing import Any

from cmdp_rl.plumbing.errors import CMDPInputError, foreign, one_line

#: ``env_attribute``'s marker of an attribute without a default (a missing one is refused)
REQUIRED: Any = object()


def import_env_module(module: str, name: str = "env") -> Any:
    """The module ``module`` of a ``module:NAME`` id, imported as ``python -m`` does (the working
    directory first on ``sys.path``; module docstring).

    Raises:
        CMDPInputError: naming ``name``: a module that is not found (with the folders searched
            first and how to make it importable), or one whose import raised (its error on one line).
    """
    cwd = os.getcwd()
    if cwd not in {os.path.abspath(p) for p in sys.path if isinstance(p, str)}:
        sys.path.insert(0, cwd)  # what ``python -m`` does (``''`` and ``.`` already mean the cwd)
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if module == missing or module.startswith(f"{missing}."):  # the module itself, not one it imports
            path = module.replace(".", "/")
            raise CMDPInputError(
                f"{name}: cannot import the module {module!r}: no {path}.py or {path}/ in the working "
                f"directory {cwd} nor on the Python path; run from the folder that holds it, or add its folder to "
                "PYTHONPATH, or install it (pip install -e)"
            ) from None
        raise CMDPInputError(f"{name}: importing the module {module!r} failed ({foreign(exc)})") from None
    except (Exception, SystemExit) as exc:  # a syntax error, an exception or exit() at its top level
        raise CMDPInputError(f"{name}: importing the module {module!r} failed ({foreign(exc)})") from None


def _from_module(env_id: str, env_kwargs: Mapping[str, Any] | None, name: str) -> Any | None:
    """``module:NAME`` made from the module's class or callable ``NAME``, or ``None`` when the module
    has no attribute ``NAME`` (then it is a Gymnasium id the module registers)."""
    module_name, _, attr = env_id.partition(":")
    if not module_name or not attr:
        raise CMDPInputError(f"{name}: {one_line(repr(env_id))} must be module:NAME with both parts non-empty")
    module = import_env_module(module_name, name)
    if not attr.isidentifier() or not hasattr(module, attr):
        return None
    factory = getattr(module, attr)
    if not callable(factory):
        raise CMDPInputError(
            f"{name}: {module_name}.{attr} is a {type(factory).__name__}, not an environment class or a callable "
            "returning an environment"
        )
    kwargs = dict(env_kwargs or {})
    shown = f"{module_name}.{attr}"
    try:
        env = factory(**kwargs)
    except Exception as exc:
        if kwargs:
            raise CMDPInputError(f"env_kwargs: {shown} refused them ({foreign(exc)})") from None
        raise CMDPInputError(f"{name}: {shown}() failed ({foreign(exc)})") from None
    for method in ("reset", "step"):
        if not callable(env_attribute(env, method, name, None)):
            raise CMDPInputError(
                f"{name}: {shown}() returned a {type(env).__name__}, not an environment (with reset and step)"
            )
    return env


def gym_make(env_id: str, env_kwargs: Mapping[str, Any] | None, name: str = "env") -> Any:
    """``gymnasium.make(env_id, **env_kwargs)``, or for ``module:NAME`` the module's own class or
    callable ``NAME`` (module docstring); every failure is a one-line ``CMDPInputError``.

    It names ``name`` (the id's argument) for an unknown id or module (``nosuchmod:Foo-v0``) or
    an environment that fails to build without keywords, and ``env_kwargs`` when keywords were
    given and the environment refused them (an unknown keyword, FrozenLake's ``map_name="9x9"``).
    """
    if ":" in env_id:
        env = _from_module(env_id, env_kwargs, name)
        if env is not None:
            return env
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


__all__ = ["REQUIRED", "env_attribute", "gym_make", "import_env_module"]
