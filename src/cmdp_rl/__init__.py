"""cmdp-rl: safe reinforcement learning on tabular constrained MDPs.

Implements "Learning with Safety Constraints: Sample Complexity of Reinforcement
Learning for Constrained MDPs": the occupation-measure LP, the extended LP over
Bernstein/Hoeffding confidence sets, Optimistic-GMBL and Online-CRL.

The names people use are importable from the top level::

    from cmdp_rl import CMDP, make, solve, solve_elp, OnlineCRL, EpisodicEnv, Scorer, certify, solve_safe
    from cmdp_rl import make_learner, LearnerRecord  # the arena's learners by name

They are loaded on first use (PEP 562), so ``import cmdp_rl`` (and ``cmdp-rl --help``) loads
neither NumPy nor SciPy; ``cmdp_rl.X`` and ``from cmdp_rl import X`` work as for any attribute.
"""

from __future__ import annotations

import sys


def _launched_as_cli() -> bool:
    """This process is the command line: the ``cmdp-rl`` console script, or ``python -m cmdp_rl``
    (``python -m cmdp_rl.cli``) whose package is being imported to be run."""
    if sys.argv and sys.argv[0] == "-m":  # python -m NAME: NAME's packages are imported to find it
        argv = list(getattr(sys, "orig_argv", ()))
        for i, arg in enumerate(argv):
            if arg.startswith("-m"):
                name = arg[2:] or (argv[i + 1] if i + 1 < len(argv) else "")
                return name in ("cmdp_rl", "cmdp_rl.cli")
        return False
    script = sys.argv[0].replace("\\", "/").rsplit("/", 1)[-1] if sys.argv else ""
    return script.removesuffix(".exe").removesuffix("-script.py") == "cmdp-rl"


if _launched_as_cli():  # from here, the command line records SIGINT and SIGTERM (cmdp_rl.interrupts)
    import signal as _signal

    _mask = None
    if hasattr(_signal, "pthread_sigmask"):  # held until the handlers are installed
        _mask = _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGINT, _signal.SIGTERM})
    from .interrupts import record_signals

    record_signals(_mask)
from importlib import import_module  # noqa: E402 (after the signals' set-up above)
from importlib.metadata import PackageNotFoundError, version  # noqa: E402 (after the signals' set-up above)
from importlib.util import find_spec  # noqa: E402 (after the signals' set-up above)
from types import ModuleType  # noqa: E402 (after the signals' set-up above)
from typing import TYPE_CHECKING, Any  # noqa: E402 (after the signals' set-up above)

if TYPE_CHECKING:
    from . import pg
    from .certify import Certificate, certify
    from .envs.registry import make
    from .envs.scenarios import scenario_cmdp
    from .errors import CMDPInputError, SolverError
    from .evaluate import Evaluation, evaluate
    from .generators import random_cmdp
    from .learners import (
        EpisodicEnv,
        GenerativeModel,
        GMBLResult,
        LearnerRecord,
        OnlineCRL,
        OnlineCRLResult,
        OptimisticGMBL,
        Scorer,
        checkpoints,
        learn,
        make_learner,
    )
    from .logs import read_log
    from .model import CMDP
    from .planning import PlanResult, solve
    from .planning.elp import solve_elp
    from .planning.frontier import Frontier, frontier
    from .safe import SafePlan, solve_safe

try:
    __version__ = version("cmdp-rl")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without installing
    __version__ = "0.0.0+unknown"

#: each exported name -> the module that defines it ("pg" is the submodule itself)
_HOMES: dict[str, str] = {
    "CMDP": "model",
    "CMDPInputError": "errors",
    "Certificate": "certify",
    "EpisodicEnv": "learners",
    "Evaluation": "evaluate",
    "Frontier": "planning.frontier",
    "GMBLResult": "learners",
    "GenerativeModel": "learners",
    "LearnerRecord": "learners",
    "OnlineCRL": "learners",
    "OnlineCRLResult": "learners",
    "OptimisticGMBL": "learners",
    "PlanResult": "planning",
    "SafePlan": "safe",
    "Scorer": "learners",
    "SolverError": "errors",
    "certify": "certify",
    "checkpoints": "learners",
    "evaluate": "evaluate",
    "frontier": "planning.frontier",
    "learn": "learners",
    "make": "envs.registry",
    "make_learner": "learners",
    "pg": "pg",
    "random_cmdp": "generators",
    "read_log": "logs",
    "scenario_cmdp": "envs.scenarios",
    "solve": "planning",
    "solve_elp": "planning.elp",
    "solve_safe": "safe",
}


def __getattr__(name: str) -> Any:
    """Load an exported name on first use (then it is a plain attribute); a submodule's name
    imports it (``import cmdp_rl; cmdp_rl.planning.solve`` works as when everything was loaded
    up front)."""
    home = _HOMES.get(name)
    if home is None:
        if name.startswith("_") or find_spec(f"{__name__}.{name}") is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        return import_module(f"{__name__}.{name}")
    module = import_module(f"{__name__}.{home}")
    value = module if name == "pg" else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})


class _Package(ModuleType):
    """This package's module type: the functions ``certify`` and ``evaluate`` share their names
    with the submodules that define them, and the import system binds a submodule to its
    package's attribute when it first loads it; here the function keeps the name (as when the
    package imported everything up front: ``cmdp_rl.certify`` is the function)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, ModuleType) and _HOMES.get(name) == name and name != "pg":
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

__all__ = [
    "CMDP",
    "CMDPInputError",
    "Certificate",
    "EpisodicEnv",
    "Evaluation",
    "Frontier",
    "GMBLResult",
    "GenerativeModel",
    "LearnerRecord",
    "OnlineCRL",
    "OnlineCRLResult",
    "OptimisticGMBL",
    "PlanResult",
    "SafePlan",
    "Scorer",
    "SolverError",
    "__version__",
    "certify",
    "checkpoints",
    "evaluate",
    "frontier",
    "learn",
    "make",
    "make_learner",
    "pg",
    "random_cmdp",
    "read_log",
    "scenario_cmdp",
    "solve",
    "solve_elp",
    "solve_safe",
]
