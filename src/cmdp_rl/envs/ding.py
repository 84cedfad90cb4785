"""The random discounted CMDP of the NPG-PD paper's tabular experiment (Ding, Zhang, Basar,
Jovanovic, NeurIPS 2020), exactly as the published tabular scripts build it.

The scripts (``tliu1997/ARNPG-MORL``, folder ``Tabular MDP (oracle)``, ``NPG-PD.py`` and
``CRPO.py`` lines 12-28, adapted from Ding et al.'s code) seed NumPy's legacy global generator
and draw, in this order: the kernel ``uniform(0, 1, (S*A, S))`` normalized by rows (row
``s*A + a`` is ``P(. | s, a)``, the library's own sparse layout), the reward ``uniform(0, 1,
S*A)`` and the utility ``g = uniform(0, 1, S*A)``; ``gamma = 0.8``, ``b = 3`` and the uniform
initial distribution. Their NPG-PD then draws a feasibility check's two policies
(``uniform(0, 1, (S, A))`` and ``uniform(0, 1, S*A)``) and its ``theta0 = uniform(0, 1, S*A)``.

A local ``np.random.RandomState(seed)`` reproduces that stream (the one place the library
does not use a ``np.random.Generator``: the stream is the published instance). The utility
constraint ``V_g >= b`` becomes the library's cost constraint with ``c = 1 - g`` and
``c_bar = 1 / (1 - gamma) - b``; ``r`` and ``g`` already lie in ``[0, 1)``, so nothing is rescaled.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.plumbing.validation import CMDPInputError, as_float, check_positive_int

Array = NDArray[np.float64]

SOURCE = (
    "Ding, Zhang, Basar, Jovanovic, NeurIPS 2020 (NPG-PD), tabular experiment; instance as built by "
    "tliu1997/ARNPG-MORL 'Tabular MDP (oracle)/NPG-PD.py' lines 12-28"
)


def _check(seed: int, S: int, A: int, gamma: float, b: float) -> tuple[int, int, int, float, float]:
    seed_ = check_positive_int("seed", seed, 0)
    if seed_ > 2**32 - 1:
        raise CMDPInputError(f"seed: NumPy's legacy generator takes seeds in [0, 2**32 - 1], got {seed_}")
    S_, A_ = check_positive_int("S", S), check_positive_int("A", A)
    g = as_float("gamma", gamma)
    if not 0.0 < g < 1.0:
        raise CMDPInputError(f"gamma: the discount factor must lie in (0, 1), got {gamma}")
    b_ = as_float("b", b)
    if not 0.0 <= b_ <= 1.0 / (1.0 - g):
        raise CMDPInputError(f"b: the utility threshold must lie in [0, 1/(1 - gamma)] = [0, {1 / (1 - g):g}], got {b}")
    return seed_, S_, A_, g, b_


def ding_random(seed: int = 10, S: int = 20, A: int = 10, gamma: float = 0.8, b: float = 3.0) -> CMDP:
    """The scripts' random CMDP for ``seed`` (module docstring), in the library's convention:
    ``c = 1 - g``, ``c_bar = 1/(1 - gamma) - b``, ``s0`` the uniform distribution."""
    seed_, S_, A_, g, b_ = _check(seed, S, A, gamma, b)
    rs = np.random.RandomState(seed_)
    raw = rs.uniform(0, 1, size=(S_ * A_, S_))
    P = raw / raw.sum(axis=1, keepdims=True)
    reward = rs.uniform(0, 1, size=S_ * A_)
    utility = rs.uniform(0, 1, size=S_ * A_)
    c_bar = 1.0 / (1.0 - g) - b_
    meta = {"source": SOURCE, "utility_threshold_b": b_, "seed": seed_}
    return CMDP(
        P.reshape(S_, A_, S_),
        reward.reshape(S_, A_),
        (1.0 - utility).reshape(1, S_, A_),
        [c_bar],
        np.full(S_, 1.0 / S_),
        gamma=g,
        meta=meta,
    )


def script_theta0(seed: int, S: int = 20, A: int = 10) -> Array:
    """``(S, A)`` the NPG-PD script's random ``theta0`` for the instance of ``seed``: the same
    stream after the instance's draws and the feasibility check's two policies."""
    seed_, S_, A_, _, _ = _check(seed, S, A, 0.8, 3.0)
    rs = np.random.RandomState(seed_)
    rs.uniform(0, 1, size=S_ * A_ * S_ + 2 * S_ * A_)  # kernel, reward, utility
    rs.uniform(0, 1, size=(S_, A_))  # the feasibility check's initial policy
    rs.uniform(0, 1, size=S_ * A_)  # and its curr_policy
    out: Array = rs.uniform(0, 1, size=S_ * A_).reshape(S_, A_)
    return out


__all__ = ["SOURCE", "ding_random", "script_theta0"]
