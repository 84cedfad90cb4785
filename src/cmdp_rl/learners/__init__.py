"""The online learners (Online-CRL and the baselines of this research line, one per module),
Optimistic-GMBL (generative model) and the sampling interfaces they use."""

from typing import Any

from cmdp_rl.learners.base import EPISODE_STATUSES, STATUSES, Learner, LearnerRecord, OnlineLearner
from cmdp_rl.learners.catalog import LABELS, LEARNERS, ONLINE_ALGORITHMS, SAFE_ALGORITHMS, make_learner
from cmdp_rl.learners.dope import DOPE
from cmdp_rl.learners.dope_plus import DOPEPlus
from cmdp_rl.learners.environment import EpisodicEnv, GenerativeModel
from cmdp_rl.learners.metrics import Scorer
from cmdp_rl.learners.online_crl import OnlineCRL, OnlineCRLResult, checkpoints
from cmdp_rl.learners.optcmdp import OptCMDP
from cmdp_rl.learners.optcmdp_bonus import OptCMDPBonus
from cmdp_rl.learners.optdual import OptDual
from cmdp_rl.learners.optimistic_gmbl import GMBLResult, OptimisticGMBL
from cmdp_rl.learners.optpess import OptPess
from cmdp_rl.learners.optpess_pd import OptPessPD
from cmdp_rl.learners.plugin import Plugin
from cmdp_rl.learners.rpd import RPD
from cmdp_rl.learners.safe import SafeLearner


def __getattr__(name: str) -> Any:
    """``learn`` lives one floor up, in [`cmdp_rl.simulators`][cmdp_rl.simulators] (it drives a learner
    in an environment); the name this package has always exported forwards there on first use."""
    if name == "learn":
        from cmdp_rl.simulators.learning import learn

        return learn
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DOPE",
    "EPISODE_STATUSES",
    "LABELS",
    "LEARNERS",
    "ONLINE_ALGORITHMS",
    "RPD",
    "SAFE_ALGORITHMS",
    "STATUSES",
    "DOPEPlus",
    "EpisodicEnv",
    "GMBLResult",
    "GenerativeModel",
    "Learner",
    "LearnerRecord",
    "OnlineCRL",
    "OnlineCRLResult",
    "OnlineLearner",
    "OptCMDP",
    "OptCMDPBonus",
    "OptDual",
    "OptPess",
    "OptPessPD",
    "OptimisticGMBL",
    "Plugin",
    "SafeLearner",
    "Scorer",
    "checkpoints",
    "learn",
    "make_learner",
]
