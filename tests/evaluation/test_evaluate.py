"""Exact evaluation against Monte-Carlo-free independent computations."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from cmdp_rl import CMDP, CMDPInputError, evaluate, random_cmdp


def _enumerate_paths(model: CMDP, policy: np.ndarray) -> tuple[float, np.ndarray]:
    """Brute force: sum over every (state, action) trajectory of its probability."""
    H, S, A = policy.shape
    value, costs = 0.0, np.zeros(model.N)
    for traj in itertools.product(range(S * A), repeat=H):
        prob, s_prev, a_prev, ret, cst = 1.0, None, None, 0.0, np.zeros(model.N)
        for h, sa in enumerate(traj):
            s, a = divmod(sa, A)
            if h == 0:
                prob *= float(s == model.s0)
            else:
                prob *= model.P[s_prev, a_prev, s]
            prob *= policy[h, s, a]
            if prob == 0.0:
                break
            ret += model.r[s, a]
            cst += model.c[:, s, a]
            s_prev, a_prev = s, a
        value += prob * ret
        costs += prob * cst
    return value, costs


def test_matches_brute_force_enumeration() -> None:
    model = random_cmdp(3, 2, 3, 2, seed=5)
    policy = np.random.default_rng(0).dirichlet(np.ones(2), size=(3, 3))
    ev = evaluate(model, policy)
    v, c = _enumerate_paths(model, policy)
    assert ev.value == pytest.approx(v, rel=1e-12)
    assert np.allclose(ev.costs, c, rtol=1e-12)
    assert np.isclose(ev.occupancy.sum(), model.H)
    assert np.isclose((ev.occupancy * model.r).sum(), v)


def test_local_variance_definition() -> None:
    """sigma_h^2(s) = E[(V_{h+1}(s') - P_pi V_{h+1}(s))^2], computed by explicit sums."""
    model = random_cmdp(4, 3, 4, 1, seed=8)
    policy = np.random.default_rng(1).dirichlet(np.ones(3), size=(4, 4))
    ev = evaluate(model, policy)
    for h in range(model.H):
        for s in range(model.S):
            joint = policy[h, s][:, None] * model.P[s]  # P(a, s')
            mean = (joint * ev.values[h + 1][None, :]).sum()
            var = (joint * (ev.values[h + 1][None, :] - mean) ** 2).sum()
            assert ev.local_variance[h, s] == pytest.approx(var, abs=1e-12)
    assert np.all(ev.local_variance[-1] == 0.0)  # V_H = 0


def test_step_dependent_kernel_equals_stationary() -> None:
    model = random_cmdp(5, 2, 4, 1, seed=2)
    policy = np.full((4, 5, 2), 0.5)
    a = evaluate(model, policy)
    b = evaluate(model, policy, kernel=np.broadcast_to(model.P, (4, 5, 2, 5)))
    assert a.value == pytest.approx(b.value) and np.allclose(a.costs, b.costs)


def test_policy_validation(two_state: CMDP) -> None:
    with pytest.raises(CMDPInputError, match=r"policy: expected shape \(2, 2, 2\)"):
        evaluate(two_state, np.full((1, 2, 2), 0.5))
    bad = np.full((2, 2, 2), 0.5)
    bad[1, 0] = [0.9, 0.3]
    with pytest.raises(CMDPInputError, match=r"policy\[1, 0\]: .*sum to 1"):
        evaluate(two_state, bad)
    bad[1, 0] = [1.5, -0.5]
    with pytest.raises(CMDPInputError, match=r"policy\[1, 0, 1\]: .*non-negative"):
        evaluate(two_state, bad)
    with pytest.raises(CMDPInputError, match="kernel"):
        evaluate(two_state, np.full((2, 2, 2), 0.5), kernel=np.ones((2, 2, 2)))


def test_compiled_scoring_equals_the_occupancy_evaluation() -> None:
    from cmdp_rl import random_cmdp
    from cmdp_rl.evaluation.evaluate import value_and_costs

    rng = np.random.default_rng(5)
    for seed in range(20):
        m = random_cmdp(int(rng.integers(2, 8)), int(rng.integers(1, 4)), int(rng.integers(1, 6)), 2, seed=seed)
        pol = rng.random((m.H, m.S, m.A))
        pol /= pol.sum(-1, keepdims=True)
        pol[0, m.s0] = np.eye(m.A)[0]  # deterministic rows and zero-probability actions too
        ev = evaluate(m, pol)
        v, costs = value_and_costs(m, pol)
        assert v == pytest.approx(ev.value, abs=1e-12)
        np.testing.assert_allclose(costs, ev.costs, atol=1e-12)
        mu = ev.occupancy  # and against the occupancy measure directly
        assert v == pytest.approx(float((mu * m.r).sum()), abs=1e-12)


@pytest.mark.parametrize("layout", ["dense", "sparse"])
@pytest.mark.parametrize("seed", [0, 1])
def test_forward_value_costs_is_the_occupancy_sum(seed: int, layout: str) -> None:
    """The one forward evaluation, on a dense ``(S, A, S)`` kernel or its ``(S*A, S)`` CSR twin,
    against the occupancy ``q_h(s, a) = d_h(s) pi_h(a|s)`` pushed forward here in NumPy."""
    import scipy.sparse as sp

    from cmdp_rl.evaluation.evaluate import forward_value_costs

    rng = np.random.default_rng(seed)
    S, A, H, N = 6, 2, 4, 2
    P = rng.random((S, A, S)) * (rng.random((S, A, S)) > 0.5)
    P[..., 0] += 1e-3  # no empty row
    P /= P.sum(axis=2, keepdims=True)
    r = rng.random((S, A))
    c = rng.random((N, S, A))
    policy = rng.random((H, S, A))
    policy /= policy.sum(axis=2, keepdims=True)
    kernel = P if layout == "dense" else sp.csr_array(P.reshape(S * A, S))
    value, costs = forward_value_costs(kernel, policy, r, c, 3)
    d = np.zeros(S)
    d[3] = 1.0
    want_v, want_c = 0.0, np.zeros(N)
    for h in range(H):
        q = d[:, None] * policy[h]  # occupancy q_h(s, a)
        want_v += float((q * r).sum())
        want_c += (q[None] * c).sum(axis=(1, 2))
        d = np.einsum("sa,sat->t", q, P)
    assert isinstance(value, float)
    assert value == pytest.approx(want_v, rel=1e-12)
    np.testing.assert_allclose(costs, want_c, rtol=1e-12)
