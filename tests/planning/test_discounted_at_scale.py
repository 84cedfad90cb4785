"""The discounted column generation at scale: ``method="fast"`` against the LP on random models
(the iterative evaluation forced, and by size), the pool's pricing bound against value iteration
written out here, its column statistics and distributions against dense solves, warm against cold
pools and inexact against exact policy iteration."""

from __future__ import annotations

import numpy as np
import pytest

from cmdp_rl import CMDP, solve
from cmdp_rl.envs.generators import garnet_kernel
from cmdp_rl.evaluation import stationary as st
from cmdp_rl.planning import discounted as disc


def _model(seed: int, N: int, S: int = 60, A: int = 3) -> CMDP:
    """A sparse Garnet (3 successors) with thresholds half-way between the costs of the policy
    least in total cost and those of the unconstrained optimum, both from Altman's LP (the
    mixture of the two meets them: feasible)."""
    gamma = (0.9, 0.95, 0.99)[seed % 3]
    rng = np.random.default_rng(seed)
    K = garnet_kernel(S, A, 3, rng)
    r, c = rng.random((S, A)), rng.random((N, S, A))
    base = CMDP(K, r, c, np.full(N, 1.0 / (1.0 - gamma)), 0, gamma=gamma)
    if N == 0:
        return base
    free = solve(base, method="lp").costs
    least = solve(base.replace(r=1.0 - c.mean(axis=0)), method="lp").costs
    return base.replace(c_bar=least + 0.5 * (free - least))


def _direct(m: CMDP, policy: np.ndarray) -> tuple[float, np.ndarray]:
    """Value and costs of a stationary ``(S, A)`` policy by ``numpy.linalg.solve``."""
    P_pi = np.einsum("sa,sat->st", policy, m.K.toarray().reshape(m.S, m.A, m.S))
    M = np.eye(m.S) - m.gamma * P_pi
    tables = np.concatenate([m.r[None], m.c])
    X = np.linalg.solve(M, np.einsum("sa,msa->sm", policy, tables))
    w = m.rho @ X
    return float(w[0]), w[1:]


@pytest.mark.parametrize("iterative", [True, False])
@pytest.mark.parametrize("N", [0, 1, 2])
@pytest.mark.parametrize("seed", range(3))
def test_fast_equals_the_lp_within_gap_tol(seed, N, iterative, monkeypatch):
    m = _model(seed, N)
    if iterative:
        monkeypatch.setattr(st, "DENSE_SOLVE_MAX", 0)
        monkeypatch.setattr(st, "BAND_MAX", -1)
    fast = solve(m)
    monkeypatch.undo()
    lp = solve(m, method="lp")
    gap_tol = 1e-9 / (1 - m.gamma)
    assert fast.status == lp.status == "optimal"
    assert N == 0 or np.max(lp.multipliers) > 1e-6  # a binding constraint
    assert abs(fast.value - lp.value) <= gap_tol and 0.0 <= fast.gap <= gap_tol
    value, costs = _direct(m, fast.policy)  # the plan's policy, evaluated independently
    assert abs(value - fast.value) <= gap_tol and np.all(costs <= m.c_bar + 1e-9)


def _lagrangian_optimum(m: CMDP, weight_r: float, lam: np.ndarray) -> float:
    """``max_pi rho . V_{weight_r r - lam . c}`` by value iteration (contraction ``gamma^k``)."""
    R = weight_r * m.r - np.tensordot(lam, m.c, axes=1)
    V = np.zeros(m.S)
    for _ in range(int(np.ceil(np.log(1e-15) / np.log(m.gamma)))):
        V = (R + m.gamma * (m.K @ V).reshape(m.S, m.A)).max(axis=1)
    return float(m.rho @ V)


LAMBDAS = [(1.0, [0.0, 0.0]), (1.0, [0.7, 0.2]), (0.0, [1.0, 0.0]), (1.0, [0.3, 1.5]), (0.0, [0.5, 0.5])]


def _pool(m: CMDP) -> disc.StationaryPool:
    return disc.StationaryPool(m.K, m.r, m.c, m.rho, m.gamma)


def test_pricing_bounds_and_columns_are_exact_on_the_iterative_path(monkeypatch):
    m = _model(0, 2, S=80)  # gamma 0.9
    monkeypatch.setattr(st, "DENSE_SOLVE_MAX", 0)
    monkeypatch.setattr(st, "BAND_MAX", -1)
    warm = _pool(m)
    for weight_r, lam in LAMBDAS:
        lam = np.array(lam)
        bound, acts = warm.price(weight_r, lam)
        best = _lagrangian_optimum(m, weight_r, lam)
        assert best - 1e-12 <= bound <= best + 1e-10  # an upper bound, and a tight one
        cold_bound, cold_acts = _pool(m).price(weight_r, lam)  # no warm start at all
        assert cold_bound == pytest.approx(bound, abs=1e-10) and np.array_equal(cold_acts, acts)
        idx, _ = warm.add(acts)
        value, costs = _direct(m, np.eye(m.A)[acts])
        assert warm.stats[idx].value == pytest.approx(value, abs=1e-10)
        assert np.allclose(warm.stats[idx].costs, costs, rtol=0, atol=1e-10)
    assert 0.0 < warm.error <= 1e-10
    for j in range(len(warm.actions)):  # distributions, each from the last one
        P_pi = m.K.toarray().reshape(m.S, m.A, m.S)[np.arange(m.S), warm.actions[j]]
        d = (1 - m.gamma) * np.linalg.solve((np.eye(m.S) - m.gamma * P_pi).T, m.rho)
        assert np.abs(warm.distribution(j) - d).sum() <= 1e-10


def test_inexact_rounds_price_as_exact_policy_iteration(monkeypatch):
    m = _model(2, 1, S=120)  # gamma 0.99
    monkeypatch.setattr(st, "DENSE_SOLVE_MAX", 0)
    monkeypatch.setattr(st, "BAND_MAX", -1)
    inexact, exact = _pool(m), _pool(m)
    for weight_r, lam in LAMBDAS[:3]:
        lam = np.array(lam[:1])
        got = inexact.price(weight_r, lam)
        monkeypatch.setattr(disc, "INEXACT_TOL", st.RESIDUAL_TOL)
        want = exact.price(weight_r, lam)
        monkeypatch.setattr(disc, "INEXACT_TOL", 1e-3)
        assert got[0] == pytest.approx(want[0], abs=1e-9) and np.array_equal(got[1], want[1])
        assert want[0] == pytest.approx(_lagrangian_optimum(m, weight_r, lam), abs=1e-9)
