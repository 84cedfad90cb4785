"""The paper's learners, one per module, and the sampling interfaces they use."""

from .environment import EpisodicEnv, GenerativeModel
from .metrics import Scorer
from .online_crl import OnlineCRL, OnlineCRLResult, checkpoints
from .optimistic_gmbl import GMBLResult, OptimisticGMBL

__all__ = [
    "EpisodicEnv",
    "GMBLResult",
    "GenerativeModel",
    "OnlineCRL",
    "OnlineCRLResult",
    "OptimisticGMBL",
    "Scorer",
    "checkpoints",
]
