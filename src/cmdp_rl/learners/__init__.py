"""The online learners (Online-CRL and the baselines of this research line, one per module),
Optimistic-GMBL (generative model) and the sampling interfaces they use."""

from .base import EPISODE_STATUSES, STATUSES, Learner, LearnerRecord, OnlineLearner, SafeLearner
from .catalog import LABELS, LEARNERS, ONLINE_ALGORITHMS, SAFE_ALGORITHMS, make_learner
from .dope import DOPE
from .environment import EpisodicEnv, GenerativeModel
from .metrics import Scorer
from .online_crl import OnlineCRL, OnlineCRLResult, checkpoints
from .optcmdp import OptCMDP
from .optcmdp_bonus import OptCMDPBonus
from .optdual import OptDual
from .optimistic_gmbl import GMBLResult, OptimisticGMBL
from .optpess import OptPess
from .plugin import Plugin
from .simulator import learn

__all__ = [
    "DOPE",
    "EPISODE_STATUSES",
    "LABELS",
    "LEARNERS",
    "ONLINE_ALGORITHMS",
    "SAFE_ALGORITHMS",
    "STATUSES",
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
    "OptimisticGMBL",
    "Plugin",
    "SafeLearner",
    "Scorer",
    "checkpoints",
    "learn",
    "make_learner",
]
