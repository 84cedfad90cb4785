"""The iterative path of a policy's system ``(I - gamma P_pi) x = b``: against ``numpy.linalg.solve``
on the same matrix written out densely here, the stated error bound ``||r|| / (1 - gamma)`` against
the true error, warm and cold starts, the sparse-LU fallback."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from cmdp_rl.envs.generators import garnet_kernel
from cmdp_rl.evaluation import stationary as st


def _system(seed: int, S: int, gamma: float, sparse: bool) -> tuple[sp.csr_array, np.ndarray]:
    """A deterministic policy's kernel ``P_pi (S, S)`` (CSR) and the dense ``I - gamma P_pi``."""
    rng = np.random.default_rng(seed)
    if sparse:
        K = garnet_kernel(S, 3, 3, rng)
        P = st.policy_kernel(K, rng.integers(0, 3, size=S))
    else:
        P = sp.csr_array(rng.dirichlet(np.full(S, 0.3), size=S))
    M = np.eye(S) - gamma * sp.csr_array(P).toarray()
    return sp.csr_array(P), M


@pytest.mark.parametrize("gamma", [0.5, 0.9, 0.99])
@pytest.mark.parametrize("sparse", [False, True])
def test_iterative_solve_equals_a_dense_solve(gamma, sparse):
    for seed in range(3):
        S = 30 + 20 * seed
        P, M = _system(seed, S, gamma, sparse)
        rng = np.random.default_rng(100 + seed)
        system = st.PolicySystem(P, gamma, dense=False, banded=False)
        assert not system.dense
        b = rng.random(S)
        x = system.solve(b)
        exact = np.linalg.solve(M, b)
        assert np.abs(x - exact).max() <= 1e-10
        assert system.residual <= st.residual_target(np.abs(b).max(), gamma)
        # the bound the certificate relies on: ||x - x*||_inf <= ||r||_inf / (1 - gamma)
        assert system.error == pytest.approx(system.residual / (1 - gamma))
        assert np.abs(x - exact).max() <= system.error + 1e-15
        B = rng.random((S, 3))
        X = system.solve(B)
        assert X.shape == (S, 3) and np.abs(X - np.linalg.solve(M, B)).max() <= 1e-10
        rho = rng.dirichlet(np.ones(S))
        d = system.solve(rho, transpose=True)
        d_exact = np.linalg.solve(M.T, rho)
        assert np.abs(d - d_exact).max() <= 1e-10
        # transpose: ||d - d*||_1 <= ||r||_1 / (1 - gamma)
        assert np.abs(d - d_exact).sum() <= system.error + 1e-15


def test_dense_and_iterative_paths_agree_and_report_their_residual():
    P, _ = _system(7, 60, 0.95, True)
    b = np.random.default_rng(1).random(60)
    dense, it = st.PolicySystem(P, 0.95, dense=True), st.PolicySystem(P, 0.95, dense=False, banded=False)
    assert dense.dense and not it.dense
    assert np.abs(dense.solve(b) - it.solve(b)).max() <= 1e-10
    assert 0.0 <= dense.residual <= 1e-12 and dense.iterations == 0 < it.iterations


def test_warm_and_cold_starts_agree():
    """A first guess from a policy that differs in a few states: the same solution; the exact
    solution as the guess: no iteration at all."""
    S, gamma = 300, 0.99
    rng = np.random.default_rng(3)
    K = garnet_kernel(S, 3, 3, rng)
    r = rng.random((S, 3))
    acts = rng.integers(0, 3, size=S)
    rows = np.arange(S)
    old = st.PolicySystem(st.policy_kernel(K, acts), gamma, dense=False, banded=False)
    x_old = old.solve(r[rows, acts])
    new_acts = acts.copy()
    idx = rng.choice(S, 5, replace=False)
    new_acts[idx] = (acts[idx] + 1) % 3
    cold = st.PolicySystem(st.policy_kernel(K, new_acts), gamma, dense=False, banded=False)
    warm = st.PolicySystem(st.policy_kernel(K, new_acts), gamma, dense=False, banded=False)
    b = r[rows, new_acts]
    x_cold, x_warm = cold.solve(b), warm.solve(b, x0=x_old)
    M = np.eye(S) - gamma * st.policy_kernel(K, new_acts).toarray()
    exact = np.linalg.solve(M, b)
    assert np.abs(x_cold - exact).max() <= 1e-10 and np.abs(x_warm - exact).max() <= 1e-10
    again = st.PolicySystem(st.policy_kernel(K, new_acts), gamma, dense=False, banded=False)
    x_again = again.solve(b, x0=exact)
    assert again.iterations == 0 and np.array_equal(x_again, exact)


def test_a_looser_tolerance_still_meets_its_own_target():
    P, M = _system(4, 80, 0.9, True)
    b = np.random.default_rng(2).random(80)
    system = st.PolicySystem(P, 0.9, dense=False, banded=False)
    x = system.solve(b, tol=1e-4)
    assert system.residual <= st.residual_target(np.abs(b).max(), 0.9, 1e-4)
    assert np.abs(x - np.linalg.solve(M, b)).max() <= system.error + 1e-15


def test_the_sparse_lu_takes_over_when_the_krylov_methods_stop_early(monkeypatch):
    P, M = _system(5, 50, 0.99, True)
    b = np.random.default_rng(3).random(50)
    monkeypatch.setattr(st, "KRYLOV_MAXITER", 1)
    system = st.PolicySystem(P, 0.99, dense=False, banded=False)
    x = system.solve(b)
    assert np.abs(x - np.linalg.solve(M, b)).max() <= 1e-10


def test_a_banded_system_is_solved_by_a_sparse_lu():
    """A birth-death chain of 600 states (bandwidth 1, above DENSE_SOLVE_MAX) against numpy."""
    S, gamma = 600, 0.999
    rng = np.random.default_rng(8)
    up, down = rng.random(S) * 0.5, rng.random(S) * 0.5
    up[-1], down[0] = 0.0, 0.0
    P = sp.diags([down[1:], 1 - up - down, up[:-1]], [-1, 0, 1], format="csr")
    system = st.PolicySystem(sp.csr_array(P), gamma)
    assert not system.dense and system.banded and st.bandwidth(system.matrix()) == 1
    M = np.eye(S) - gamma * P.toarray()
    b = rng.random((S, 2))
    assert np.abs(system.solve(b) - np.linalg.solve(M, b)).max() <= 1e-10 and system.iterations == 0
    assert system.residual <= st.residual_target(np.abs(b).max(), gamma)
    rho = rng.dirichlet(np.ones(S))
    assert np.abs(system.solve(rho, transpose=True) - np.linalg.solve(M.T, rho)).sum() <= 1e-10


def test_a_zero_right_hand_side_gives_zero():
    P, _ = _system(6, 40, 0.9, True)
    system = st.PolicySystem(P, 0.9, dense=False, banded=False)
    x = system.solve(np.zeros((40, 2)), x0=np.ones((40, 2)))
    assert np.array_equal(x, np.zeros((40, 2))) and system.residual == 0.0
