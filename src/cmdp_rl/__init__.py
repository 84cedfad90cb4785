"""cmdp-rl: safe reinforcement learning on tabular constrained MDPs.

Implements "Learning with Safety Constraints: Sample Complexity of Reinforcement
Learning for Constrained MDPs": the occupation-measure LP, the extended LP over
Bernstein/Hoeffding confidence sets, Optimistic-GMBL and Online-CRL.

The names people use are importable from the top level::

    from cmdp_rl import CMDP, make, solve, solve_elp, OnlineCRL, EpisodicEnv, Scorer, certify, solve_safe
    from cmdp_rl import make_learner, LearnerRecord  # the arena's learners by name
"""

from importlib.metadata import PackageNotFoundError, version

from . import pg
from .certify import Certificate, certify
from .envs.registry import make
from .envs.scenarios import scenario_cmdp
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
from .planning import PlanResult, SolverError, solve
from .planning.elp import solve_elp
from .planning.frontier import Frontier, frontier
from .safe import SafePlan, solve_safe
from .validation import CMDPInputError

try:
    __version__ = version("cmdp-rl")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without installing
    __version__ = "0.0.0+unknown"

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
