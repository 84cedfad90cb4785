"""Seeded random instance generators (tests, benchmarks, studies).

Kept apart from :mod:`cmdp_rl.model` (which defines the data type) because a
generator needs the solvers of :mod:`cmdp_rl.evaluate` to place thresholds.
"""

from __future__ import annotations

import numpy as np

from .evaluate import evaluate, optimal_values
from .model import CMDP
from .validation import CMDPInputError, as_float, check_positive_int


def random_cmdp(
    S: int,
    A: int,
    H: int,
    N: int = 1,
    rng: np.random.Generator | int | None = 0,
    *,
    support: int | None = None,
    slack: float = 0.5,
) -> CMDP:
    """A seeded random CMDP for tests and benchmarks.

    Kernel rows are Dirichlet draws on ``support`` random next states (all states
    when ``None``); rewards and costs are uniform in [0, 1]. With ``base`` the
    costs of the policy minimizing the summed cost (jointly achievable) and
    ``hi_i`` the largest achievable cost ``i``, thresholds are
    ``base + slack * (hi - base)``: ``slack`` in [0, 1] gives a feasible problem
    whose constraints usually bind. ``slack < 0`` puts each threshold below its
    smallest achievable cost ``lo_i`` (``lo + slack * (hi - lo)``): infeasible.
    """
    S = check_positive_int("S", S)
    A = check_positive_int("A", A)
    H = check_positive_int("H", H)
    N = check_positive_int("N", N, 0)
    if support is not None:
        support = check_positive_int("support", support)
    slack = as_float("slack", slack)
    if slack > 1:
        raise CMDPInputError(f"slack: must be <= 1 (1 puts each threshold at its largest achievable cost), got {slack}")
    if rng is not None and not isinstance(rng, (np.random.Generator, int, np.integer)):
        raise TypeError(f"rng: must be a numpy.random.Generator, an int seed or None, got {type(rng).__name__}")
    gen = np.random.default_rng(rng)
    k = S if support is None else max(1, min(support, S))
    P = np.zeros((S, A, S))
    w = gen.dirichlet(np.ones(k), size=(S, A))
    idx = np.argsort(gen.random((S, A, S)), axis=-1)[..., :k]
    np.put_along_axis(P, idx, w, axis=-1)
    P /= P.sum(-1, keepdims=True)
    r = gen.random((S, A))
    c = gen.random((N, S, A))
    s0 = int(gen.integers(S))
    hi = np.array([optimal_values(P, c[i], H)[0, s0] for i in range(N)])
    if slack < 0:
        lo = np.array([-optimal_values(P, -c[i], H)[0, s0] for i in range(N)])
        c_bar = lo + slack * (hi - lo)
    else:
        total = -c.sum(axis=0)
        V = optimal_values(P, total, H)
        greedy = np.zeros((H, S, A))
        for h in range(H):
            best = (total + P @ V[h + 1]).argmax(axis=1)
            greedy[h, np.arange(S), best] = 1.0
        base = evaluate(CMDP(P, r, c, np.zeros(N), s0, H), greedy).costs
        c_bar = base + slack * (hi - base)
    return CMDP(P, r, c, c_bar, s0, H)


__all__ = ["random_cmdp"]
