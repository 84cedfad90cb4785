"""Seeded random instance generators (tests, benchmarks, studies).

Kept apart from [`cmdp_rl.model.cmdp`][cmdp_rl.model.cmdp] (which defines the data type) because a
generator needs the solvers of [`cmdp_rl.evaluation.evaluate`][cmdp_rl.evaluation.evaluate] to place thresholds.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from cmdp_rl.evaluation.evaluate import evaluate, expected_next, optimal_values
from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.model.sparse import SPARSE_ABOVE_BYTES, dense_bytes
from cmdp_rl.plumbing.limits import build_estimate, check_allocation, exact_estimate
from cmdp_rl.plumbing.validation import CMDPInputError, CMDPTypeError, as_float, check_positive_int, renamed_arguments

Array = NDArray[np.float64]


@renamed_arguments(rng="seed")
def random_cmdp(
    S: int,
    A: int,
    H: int,
    N: int = 1,
    seed: np.random.Generator | int | None = 0,
    *,
    support: int | None = None,
    slack: float = 0.5,
) -> CMDP:
    """A seeded random CMDP for tests and benchmarks.

    Kernel rows are Dirichlet draws on ``support`` random next states (all states
    when ``None``), kept sparse when a dense kernel would exceed
    ``cmdp_rl.model.sparse.SPARSE_ABOVE_BYTES`` (then drawn per row: another random stream);
    rewards and costs are uniform in [0, 1]. With ``base`` the
    costs of the policy minimizing the summed cost (jointly achievable) and
    ``hi_i`` the largest achievable cost ``i``, thresholds are
    ``base + slack * (hi - base)``: ``slack`` in [0, 1] gives a feasible problem
    whose constraints usually bind. ``slack < 0`` puts each threshold below its
    smallest achievable cost ``lo_i`` (``lo + slack * (hi - lo)``): infeasible.

    ``seed``: an integer >= 0, a ``numpy.random.Generator`` (drawn from) or ``None`` (fresh
    entropy), as for ``numpy.random.default_rng`` (``rng``: its deprecated name, for one release).
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
    if (seed is not None and not isinstance(seed, (np.random.Generator, int, np.integer))) or isinstance(seed, bool):
        raise CMDPTypeError(f"seed: must be an int seed, a numpy.random.Generator or None, got {type(seed).__name__}")
    if isinstance(seed, (int, np.integer)):
        check_positive_int("seed", seed, 0)  # a seed: an integer >= 0
    k = S if support is None else max(1, min(support, S))
    kernel = 16.0 * S * A * S if dense_bytes(S, A) <= SPARSE_ABOVE_BYTES else 32.0 * S * A * k
    need = kernel + exact_estimate(S, A, H, N, float(S) * A * k).bytes + 8.0 * (H + 1) * S * (N + 1)
    check_allocation("S, A, H", need, f"a random CMDP of S = {S:,}, A = {A:,}, H = {H:,}, N = {N:,}")
    gen = np.random.default_rng(seed)
    P: Array | sp.csr_array
    if dense_bytes(S, A) <= SPARSE_ABOVE_BYTES:
        P = np.zeros((S, A, S))
        w = gen.dirichlet(np.ones(k), size=(S, A))
        idx = np.argsort(gen.random((S, A, S)), axis=-1)[..., :k]
        np.put_along_axis(P, idx, w, axis=-1)
        P /= P.sum(-1, keepdims=True)
    else:  # large: successors drawn per row, kept sparse (a stream of its own)
        w = gen.dirichlet(np.ones(k), size=S * A)
        nxt = distinct_successors(S * A, S, k, gen)
        P = sp.csr_array((w.ravel(), (np.repeat(np.arange(S * A), k), nxt.ravel())), shape=(S * A, S))
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
            best = (total + expected_next(P, h, V[h + 1])).argmax(axis=1)
            greedy[h, np.arange(S), best] = 1.0
        base = evaluate(CMDP(P, r, c, np.zeros(N), s0, H), greedy).costs
        c_bar = base + slack * (hi - base)
    return CMDP(P, r, c, c_bar, s0, H)


def distinct_successors(rows: int, S: int, k: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """``(rows, k)``: for each row ``k`` distinct states of ``0..S-1`` drawn without replacement.

    ``O(rows * k)`` memory: ``k`` uniform states per row, and rows holding a repeated state drawn
    again (all such rows at once) until none repeats; when ``2 k > S`` each row instead takes
    the first ``k`` states of a random permutation (``O(rows * S)``, only for small ``S``).
    """
    if 2 * k > S:
        out: NDArray[np.int64] = np.argsort(rng.random((rows, S)), axis=-1)[:, :k]
        return out
    nxt = rng.integers(0, S, size=(rows, k))
    while True:
        srt = np.sort(nxt, axis=1)
        bad = np.flatnonzero((srt[:, 1:] == srt[:, :-1]).any(axis=1))
        if bad.size == 0:
            return nxt
        nxt[bad] = rng.integers(0, S, size=(bad.size, k))


def garnet_kernel(S: int, A: int, b: int, rng: np.random.Generator) -> sp.csr_array:
    """``(S*A, S)`` CSR Garnet kernel: each row ``s*A + a`` has ``b`` distinct successors drawn
    without replacement, with probabilities from a uniform random partition of [0, 1].

    Drawn per row in ``O(S*A*b)`` memory ([`distinct_successors`][cmdp_rl.envs.generators.distinct_successors]).
    """
    S, A, b = check_positive_int("S", S), check_positive_int("A", A), check_positive_int("b", b)
    if b > S:
        raise CMDPInputError(f"b: the branching factor must be at most S = {S}, got {b}")
    if not isinstance(rng, np.random.Generator):
        raise CMDPTypeError(f"rng: must be a numpy.random.Generator, got {type(rng).__name__}")
    check_allocation("S, A, b", 48.0 * S * A * b, f"a Garnet kernel of S*A*b = {S * A * b:,} entries")
    SA = S * A
    nxt = distinct_successors(SA, S, b, rng)
    cuts = np.sort(rng.random((SA, b - 1)), axis=-1)
    w = np.diff(np.concatenate([np.zeros((SA, 1)), cuts, np.ones((SA, 1))], axis=-1), axis=-1)
    rows = np.repeat(np.arange(SA), b)
    return sp.csr_array((w.ravel(), (rows, nxt.ravel())), shape=(SA, S))


def garnet(S: int = 20, A: int = 4, b: int = 3, N: int = 1, f: float = 0.5, H: int = 20, seed: int = 0) -> CMDP:
    """A Garnet-style random CMDP with thresholds placed by the fraction ``f`` (see the docs page 'Environments').

    Garnet ("generic average reward non-stationary environment test-bench", Archibald,
    McKinnon and Thomas 1995; Bhatnagar et al. 2009): every ``(s, a)`` leads to ``b``
    distinct next states drawn without replacement, with probabilities from a uniform
    random partition of [0, 1] (sorted uniforms); rewards and the ``N`` costs are uniform
    in [0, 1]; ``s0 = 0``. Thresholds: ``c_bar_i = (1 - f) C_i(pi_s) + f C_i(pi_u)``, with
    ``pi_s`` the policy minimizing the worst cost ``max_i C_i`` (the smallest total cost among
    the minimizers) and ``pi_u`` the unconstrained optimum (the smallest total cost among
    ties), both from the exact planner ([`cmdp_rl.planning.solve`][cmdp_rl.planning.solve]), so the thresholds do
    not depend on a solver's choice among tied optima. The mixture of the two occupancies meets every threshold, so the
    thresholds are jointly feasible for every ``N``; ``pi_s`` itself keeps a margin of
    ``f (C_i(pi_u) - C_i(pi_s))`` on constraint ``i``, so a larger ``f`` gives a wider Slater
    gap and a less binding problem. ``meta`` records the parameters, ``f`` and the joint
    Slater gap ``max_pi min_i (c_bar_i - C_i(pi))``. The same arguments give the same bytes.
    The kernel is drawn per row ([`garnet_kernel`][cmdp_rl.envs.generators.garnet_kernel]) and kept sparse when a
    dense one
    would exceed ``cmdp_rl.model.sparse.SPARSE_ABOVE_BYTES``.

    Args:
        S: states (>= 1).
        A: actions (>= 1).
        b: branching factor, ``1 <= b <= S``.
        N: constraints (>= 1).
        f: threshold fraction in [0, 1].
        H: horizon (>= 1).
        seed: integer >= 0 (the only source of randomness).
    """
    from cmdp_rl.planning.solve import slater_thresholds

    S, A, H = check_positive_int("S", S), check_positive_int("A", A), check_positive_int("H", H)
    b, N = check_positive_int("b", b), check_positive_int("N", N)
    seed = check_positive_int("seed", seed, 0)
    if b > S:
        raise CMDPInputError(f"b: the branching factor must be at most S = {S}, got {b}")
    f = as_float("f", f)
    if not 0.0 <= f <= 1.0:
        raise CMDPInputError(f"f: the threshold fraction must lie in [0, 1], got {f}")
    need = build_estimate(S, A, H, N, float(S) * A * b).bytes
    check_allocation("S, A, b, H", need, f"a Garnet CMDP of S = {S:,}, A = {A:,}, b = {b:,}, H = {H:,}")
    rng = np.random.default_rng(seed)
    K = garnet_kernel(S, A, b, rng)
    r = rng.random((S, A))
    c = rng.random((N, S, A))
    kernel = K if dense_bytes(S, A) > SPARSE_ABOVE_BYTES else K.toarray().reshape(S, A, S)
    base = CMDP(kernel, r, c, np.zeros(N), 0, H)
    del K, kernel  # the model holds its own validated copy: the drawn one is not kept through the solves
    c_bar, gap = slater_thresholds(base, f)
    model = base.replace(c_bar=c_bar)
    params = {"S": S, "A": A, "b": b, "N": N, "f": f, "H": H, "seed": seed}
    meta = {
        "name": "garnet",
        "source": "Garnet (Archibald et al. 1995), thresholds at fraction f of the way to the unconstrained "
        "optimum's costs",
        "parameters": params,
        "f": f,
        "slater_gap": gap,
    }
    return model.replace(names="garnet", meta=meta)


__all__ = ["distinct_successors", "garnet", "garnet_kernel", "random_cmdp"]
