"""The discounted families garnet-discounted and boost-queue (cmdp_rl.envs.discounted).

Known answers: the queue's kernel written out from its description; the Garnet's threshold from
brute force over every deterministic stationary policy (the least cost and the cost of the
value-maximizing policy are attained by deterministic policies), each evaluated by a dense solve.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from cmdp_rl import CMDPInputError, make, solve
from cmdp_rl.envs.discounted import boost_queue, garnet_discounted


def _values(m, pi: np.ndarray) -> tuple[float, float]:
    P_pi = np.einsum("sa,sat->st", pi, m.P)
    M = np.eye(m.S) - m.gamma * P_pi
    V = np.linalg.solve(M, (pi * m.r).sum(1))
    C = np.linalg.solve(M, (pi * m.c[0]).sum(1))
    return float(m.rho @ V), float(m.rho @ C)


def test_boost_queue_kernel_rewards_and_costs() -> None:
    m = boost_queue(size=4, arrival=0.5, serve=0.3, boost=0.8)
    assert (m.S, m.A, m.N, m.gamma, m.c_bar[0]) == (4, 2, 1, 0.95, 4.0) and m.rho[0] == 1.0
    # level 1, boost: an arrival without a departure 0.5 * 0.2, a departure without an arrival 0.8 * 0.5
    assert np.allclose(m.P[1, 1], [0.4, 0.5, 0.1, 0.0])
    assert np.allclose(m.P[0, 0], [1 - 0.35, 0.35, 0, 0])  # empty: no departure; an arrival 0.5 * 0.7
    assert np.allclose(m.P[3, 0], [0, 0, 0.15, 0.85])  # full: no growth; a departure 0.3 * 0.5
    assert np.allclose(m.r[:, 0], [1, 2 / 3, 1 / 3, 0]) and np.array_equal(m.r[:, 0], m.r[:, 1])
    assert np.array_equal(m.c[0, :, 1], np.ones(4)) and not m.c[0, :, 0].any()
    plan = solve(make("boost-queue"))
    assert plan.costs[0] == pytest.approx(4.0, abs=1e-7)  # the budget binds


@pytest.mark.parametrize("seed", [0, 1])
def test_garnet_discounted_threshold_by_brute_force(seed: int) -> None:
    f = 0.4
    m = garnet_discounted(S=4, A=2, b=2, f=f, gamma=0.85, seed=seed)
    pairs = [_values(m, np.eye(m.A)[list(acts)]) for acts in itertools.product(range(m.A), repeat=m.S)]
    C_s = min(c for _, c in pairs)
    C_u = max(pairs)[1]  # the value-maximizing deterministic policy's cost
    assert m.c_bar[0] == pytest.approx((1 - f) * C_s + f * C_u, abs=1e-8)
    assert m.meta["slater_gap"] == pytest.approx(f * (C_u - C_s), abs=1e-8)
    assert m.rho[0] == 1.0 and m.gamma == 0.85
    assert np.array_equal(make(f"garnet-discounted:S=4,A=2,b=2,f={f},gamma=0.85,seed={seed}").c_bar, m.c_bar)


def test_a_large_garnet_discounted_stays_sparse_with_the_same_draws() -> None:
    """S = 1,000, A = 4: a dense kernel would be 32 MB (above SPARSE_ABOVE_BYTES): kept sparse,
    the kernel, rewards and costs drawn as for the dense layout (garnet_kernel, then r, then c)."""
    from cmdp_rl.envs.generators import garnet_kernel

    m = garnet_discounted(S=1000, A=4, b=3, gamma=0.9, seed=2)
    assert m.is_sparse and m.nnz == 1000 * 4 * 3
    rng = np.random.default_rng(2)
    K = garnet_kernel(1000, 4, 3, rng)
    assert (m.K != K).nnz == 0
    assert np.array_equal(m.r, rng.random((1000, 4))) and np.array_equal(m.c[0], rng.random((1000, 4)))
    assert 0.0 < m.meta["slater_gap"] and m.c_bar[0] < 1 / (1 - 0.9)


def test_bad_parameters_are_named() -> None:
    for call, name in [
        (lambda: garnet_discounted(gamma=1.0), "gamma"),
        (lambda: garnet_discounted(f=1.5), "f"),
        (lambda: garnet_discounted(S=2, b=3), "b"),
        (lambda: boost_queue(size=1), "size"),
        (lambda: boost_queue(boost=2.0), "boost"),
        (lambda: make("boost-queue:gamma=0"), "gamma"),
    ]:
        with pytest.raises(CMDPInputError, match=rf"^{name}"):
            call()
