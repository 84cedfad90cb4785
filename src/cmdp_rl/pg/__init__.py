"""Policy-gradient primal-dual methods for discounted CMDPs (NPG-PD and CRPO), their per-iteration
table and figures."""

from cmdp_rl.pg.methods import (
    ALGORITHMS,
    INITS,
    STEP_SIZES,
    UPDATES,
    PGResult,
    discounted_state_distribution,
    run,
    slater_margin,
)

__all__ = [
    "ALGORITHMS",
    "INITS",
    "STEP_SIZES",
    "UPDATES",
    "PGResult",
    "discounted_state_distribution",
    "run",
    "slater_margin",
]
