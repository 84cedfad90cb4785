"""cmdp-rl: safe reinforcement learning on tabular constrained MDPs.

Implements "Learning with Safety Constraints: Sample Complexity of Reinforcement
Learning for Constrained MDPs": the occupation-measure LP, the extended LP over
Bernstein/Hoeffding confidence sets, Optimistic-GMBL and Online-CRL.

The names people use are importable from the top level::

    from cmdp_rl import CMDP, make, solve, solve_elp, OnlineCRL, EpisodicEnv, Scorer, certify, solve_safe
    from cmdp_rl import make_learner, LearnerRecord  # the arena's learners by name
    from cmdp_rl import from_prism, from_jani, from_drn, from_storm, to_drn, to_storm  # model checkers

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


if _launched_as_cli():  # from here, the command line records SIGINT and SIGTERM (cmdp_rl.plumbing.interrupts)
    import signal as _signal

    _mask = None
    if hasattr(_signal, "pthread_sigmask"):  # held until the handlers are installed
        _mask = _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGINT, _signal.SIGTERM})
    from cmdp_rl.plumbing.interrupts import record_signals

    record_signals(_mask)
from importlib import import_module  # noqa: E402 (after the signals' set-up above)
from importlib.util import find_spec  # noqa: E402 (after the signals' set-up above)
from typing import TYPE_CHECKING, Any  # noqa: E402 (after the signals' set-up above)

if TYPE_CHECKING:
    from cmdp_rl import pg
    from cmdp_rl.certificates.certify import Certificate, certify
    from cmdp_rl.certificates.safe import SafePlan, solve_safe
    from cmdp_rl.envs.generators import random_cmdp
    from cmdp_rl.envs.registry import make
    from cmdp_rl.envs.scenarios import scenario_cmdp
    from cmdp_rl.evaluation.evaluate import Evaluation, evaluate
    from cmdp_rl.evaluation.mixture import MixturePolicy
    from cmdp_rl.evaluation.policy_files import load_policy, save_policy
    from cmdp_rl.learners import (
        EpisodicEnv,
        GenerativeModel,
        GMBLResult,
        LearnerRecord,
        OnlineCRL,
        OnlineCRLResult,
        OptimisticGMBL,
        Scorer,
        checkpoints,
        make_learner,
    )
    from cmdp_rl.model.cmdp import CMDP
    from cmdp_rl.model.drn import to_drn
    from cmdp_rl.model.reach import reach_constraint, reach_objective
    from cmdp_rl.model.storm import from_drn, from_jani, from_prism, from_storm, to_storm
    from cmdp_rl.model.transition_logs import read_log
    from cmdp_rl.planning import PlanResult, solve
    from cmdp_rl.planning.elp import solve_elp
    from cmdp_rl.planning.frontier import Frontier, frontier
    from cmdp_rl.plumbing.errors import CMDPInputError, SolverError
    from cmdp_rl.plumbing.threads import get_threads, set_threads
    from cmdp_rl.simulators.learning import learn

from cmdp_rl.plumbing.version import VERSION as __version__  # noqa: E402 (after the signals' set-up above)

#: each exported name -> the module that defines it ("pg" is the submodule itself)
_HOMES: dict[str, str] = {
    "CMDP": "model.cmdp",
    "CMDPInputError": "plumbing.errors",
    "Certificate": "certificates.certify",
    "EpisodicEnv": "learners",
    "Evaluation": "evaluation.evaluate",
    "Frontier": "planning.frontier",
    "GMBLResult": "learners",
    "GenerativeModel": "learners",
    "LearnerRecord": "learners",
    "MixturePolicy": "evaluation.mixture",
    "OnlineCRL": "learners",
    "OnlineCRLResult": "learners",
    "OptimisticGMBL": "learners",
    "PlanResult": "planning",
    "SafePlan": "certificates.safe",
    "Scorer": "learners",
    "SolverError": "plumbing.errors",
    "certify": "certificates.certify",
    "checkpoints": "learners",
    "evaluate": "evaluation.evaluate",
    "from_drn": "model.storm",
    "from_jani": "model.storm",
    "from_prism": "model.storm",
    "from_storm": "model.storm",
    "frontier": "planning.frontier",
    "get_threads": "plumbing.threads",
    "learn": "simulators.learning",
    "load_policy": "evaluation.policy_files",
    "make": "envs.registry",
    "make_learner": "learners",
    "pg": "pg",
    "random_cmdp": "envs.generators",
    "reach_constraint": "model.reach",
    "reach_objective": "model.reach",
    "read_log": "model.transition_logs",
    "save_policy": "evaluation.policy_files",
    "scenario_cmdp": "envs.scenarios",
    "set_threads": "plumbing.threads",
    "solve": "planning",
    "solve_elp": "planning.elp",
    "solve_safe": "certificates.safe",
    "to_drn": "model.drn",
    "to_storm": "model.storm",
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
    "MixturePolicy",
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
    "from_drn",
    "from_jani",
    "from_prism",
    "from_storm",
    "frontier",
    "get_threads",
    "learn",
    "load_policy",
    "make",
    "make_learner",
    "pg",
    "random_cmdp",
    "reach_constraint",
    "reach_objective",
    "read_log",
    "save_policy",
    "scenario_cmdp",
    "set_threads",
    "solve",
    "solve_elp",
    "solve_safe",
    "to_drn",
    "to_storm",
]
