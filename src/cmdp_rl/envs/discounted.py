"""Discounted problem families for the policy-gradient methods (``cmdp_rl.pg``): a Garnet and a queue.

* ``garnet_discounted``: the Garnet of [`garnet`][cmdp_rl.envs.generators.garnet] (the same kernel,
  reward and cost draws from ``seed``) made discounted: ``gamma`` instead of ``H``, start state 0,
  one constraint with ``c_bar = (1 - f) C(pi_s) + f C(pi_u)``, ``pi_s`` the least-cost policy and
  ``pi_u`` the unconstrained optimum, both from the exact discounted planner; the Slater margin is
  ``f (C(pi_u) - C(pi_s))``.
* ``boost_queue``: a queue of ``size`` levels (0 .. size-1, start empty) served at rate ``serve``,
  or ``boost`` for a cost of 1 per step; each step one arrival with probability ``arrival`` and one
  departure with the service rate (both or neither: the level stays). Reward ``1 - level / (size - 1)``
  (an empty queue earns 1, a full one 0); ``gamma = 0.95`` and a budget ``c_bar = 4`` of discounted
  boost steps (of ``1 / (1 - gamma) = 20``): the optimum boosts in some states only, with mixing.
"""

from __future__ import annotations

import numpy as np

from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.plumbing.validation import CMDPInputError, as_float, check_positive_int


def _gamma(value: float) -> float:
    g = as_float("gamma", value)
    if not 0.0 < g < 1.0:
        raise CMDPInputError(f"gamma: the discount factor must lie in (0, 1), got {value}")
    return g


def _prob(name: str, value: float) -> float:
    v = as_float(name, value)
    if not 0.0 <= v <= 1.0:
        raise CMDPInputError(f"{name}: must be a probability in [0, 1], got {v}")
    return v


def garnet_discounted(S: int = 20, A: int = 4, b: int = 3, f: float = 0.5, gamma: float = 0.9, seed: int = 0) -> CMDP:
    """A discounted Garnet with one constraint at fraction ``f`` (module docstring). ``S, A, b, seed``
    as in [`garnet`][cmdp_rl.envs.generators.garnet] (the kernel kept sparse, as there, when a dense
    one would exceed ``cmdp_rl.model.sparse.SPARSE_ABOVE_BYTES``); ``gamma`` in (0, 1); ``f`` in [0, 1]."""
    from cmdp_rl.envs.generators import garnet_kernel
    from cmdp_rl.model.sparse import SPARSE_ABOVE_BYTES, dense_bytes
    from cmdp_rl.planning import solve

    S, A, b = check_positive_int("S", S), check_positive_int("A", A), check_positive_int("b", b)
    seed = check_positive_int("seed", seed, 0)
    if b > S:
        raise CMDPInputError(f"b: the branching factor must be at most S = {S}, got {b}")
    f, g = as_float("f", f), _gamma(gamma)
    if not 0.0 <= f <= 1.0:
        raise CMDPInputError(f"f: the threshold fraction must lie in [0, 1], got {f}")
    rng = np.random.default_rng(seed)
    K = garnet_kernel(S, A, b, rng)
    r, c = rng.random((S, A)), rng.random((1, S, A))
    kernel = K if dense_bytes(S, A) > SPARSE_ABOVE_BYTES else K.toarray().reshape(S, A, S)
    base = CMDP(kernel, r, c, [1.0 / (1.0 - g)], 0, gamma=g)
    C_u = float(solve(base).costs[0])  # no constraint binds at c_bar = 1 / (1 - gamma)
    C_s = float(solve(base.replace(r=1.0 - c[0])).costs[0])  # the least cost
    params = {"S": S, "A": A, "b": b, "f": f, "gamma": g, "seed": seed}
    meta = {
        "name": "garnet-discounted",
        "source": "Garnet (Archibald et al. 1995) made discounted, threshold at fraction f of the way from the "
        "least cost to the unconstrained optimum's",
        "parameters": params,
        "slater_gap": f * (C_u - C_s),
    }
    return base.replace(c_bar=[(1.0 - f) * C_s + f * C_u], names="garnet-discounted", meta=meta)


def boost_queue(
    size: int = 6,
    gamma: float = 0.95,
    c_bar: float = 4.0,
    arrival: float = 0.5,
    serve: float = 0.3,
    boost: float = 0.8,
) -> CMDP:
    """The discounted queue with a costly boost (module docstring): actions 0 = serve at rate
    ``serve``, 1 = boost (rate ``boost``, cost 1)."""
    n = check_positive_int("size", size, 2)
    g = _gamma(gamma)
    lam = _prob("arrival", arrival)
    mu = np.array([_prob("serve", serve), _prob("boost", boost)])
    up, down = lam * (1.0 - mu), mu * (1.0 - lam)  # (2,) an arrival and no departure, and the reverse
    s = np.arange(n)
    P = np.zeros((n, 2, n))
    for a in range(2):
        np.add.at(P[:, a], (s, np.minimum(s + 1, n - 1)), up[a])
        np.add.at(P[:, a], (s, np.maximum(s - 1, 0)), down[a])
        np.add.at(P[:, a], (s, s), 1.0 - up[a] - down[a])
    r = np.repeat((1.0 - s / (n - 1))[:, None], 2, axis=1)
    c = np.zeros((1, n, 2))
    c[0, :, 1] = 1.0
    params = {"size": n, "gamma": g, "c_bar": float(c_bar), "arrival": lam, "serve": mu[0], "boost": mu[1]}
    meta = {"name": "boost-queue", "source": "cmdp_rl.envs.discounted.boost_queue", "parameters": params}
    return CMDP(P, r, c, [as_float("c_bar", c_bar)], 0, gamma=g, names="boost-queue", meta=meta)


#: the families registered by [`cmdp_rl.envs.registry`][cmdp_rl.envs.registry]: factory, defaults,
#: description, source
DISCOUNTED = {
    "garnet-discounted": (
        garnet_discounted,
        {"S": 20, "A": 4, "b": 3, "f": 0.5, "gamma": 0.9, "seed": 0},
        "discounted Garnet random CMDP, one constraint at fraction f of the way from the least cost to the "
        "unconstrained optimum's",
        "Archibald, McKinnon, Thomas 1995 (discounted; cmdp_rl.envs.discounted)",
    ),
    "boost-queue": (
        boost_queue,
        {"size": 6, "gamma": 0.95, "c_bar": 4.0, "arrival": 0.5, "serve": 0.3, "boost": 0.8},
        "discounted queue (6 levels, gamma 0.95) whose boost action serves faster for a cost of 1 per step, budget 4",
        "cmdp_rl.envs.discounted (issue 35's queue example)",
    ),
}

__all__ = ["DISCOUNTED", "boost_queue", "garnet_discounted"]
