"""cmdp-rl: safe reinforcement learning on tabular constrained MDPs.

Implements "Learning with Safety Constraints: Sample Complexity of Reinforcement
Learning for Constrained MDPs": the occupation-measure LP, the extended LP over
Bernstein/Hoeffding confidence sets, Optimistic-GMBL and Online-CRL.
"""

from .evaluate import Evaluation, evaluate
from .model import CMDP, random_cmdp
from .planning import PlanResult, SolverError, solve
from .planning.elp import solve_elp
from .validation import CMDPInputError

__version__ = "0.1.0"

__all__ = [
    "CMDP",
    "CMDPInputError",
    "Evaluation",
    "PlanResult",
    "SolverError",
    "__version__",
    "evaluate",
    "random_cmdp",
    "solve",
    "solve_elp",
]
