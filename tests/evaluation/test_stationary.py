"""Discounted CMDPs and initial distributions: the model, Altman's LP, column generation, evaluation.

Known answers come from independent computations: brute force over the deterministic
stationary policies (each evaluated by its own dense solve, mixed by a small LP), the dual LP,
truncated discounted sums, and linearity in the initial distribution.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

from cmdp_rl import CMDP, CMDPInputError, evaluate, solve
from cmdp_rl.evaluation import stationary as disc


def _random(seed: int, S: int = 5, A: int = 3, N: int = 2, gamma: float = 0.9, frac: float = 0.5, rho: bool = True):
    """A random discounted CMDP with thresholds a fraction ``frac`` of the way from the least to
    the most cost a policy can have (so usually feasible and binding)."""
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.full(S, 0.5), size=(S, A))
    r, c = rng.random((S, A)), rng.random((N, S, A))
    start = rng.dirichlet(np.ones(S)) if rho else 0
    lo, hi = c.min(initial=0) / (1 - gamma), c.max(initial=0) / (1 - gamma)
    return CMDP(P, r, c, np.full(N, lo + frac * (hi - lo)), start, gamma=gamma)


def _direct(m: CMDP, policy: np.ndarray) -> tuple[float, np.ndarray]:
    """Value and costs of a stationary policy by a dense solve written out here."""
    P_pi = np.einsum("sa,sat->st", policy, m.P)
    M = np.eye(m.S) - m.gamma * P_pi
    V = np.linalg.solve(M, (policy * m.r).sum(1))
    C = [np.linalg.solve(M, (policy * m.c[i]).sum(1)) for i in range(m.N)]
    return float(m.rho @ V), np.array([m.rho @ Ci for Ci in C])


def _brute_force(m: CMDP) -> float:
    """The optimum as the best mixture of deterministic stationary policies (a second formulation)."""
    vals, costs = [], []
    for acts in itertools.product(range(m.A), repeat=m.S):
        pol = np.eye(m.A)[list(acts)]
        v, cs = _direct(m, pol)
        vals.append(v)
        costs.append(cs)
    K = len(vals)
    res = linprog(
        -np.array(vals), A_ub=np.array(costs).T, b_ub=m.c_bar, A_eq=np.ones((1, K)), b_eq=[1.0], method="highs"
    )
    return -res.fun if res.status == 0 else float("nan")


def _dual_lp(m: CMDP) -> float:
    """The LP dual: ``min rho . v + lam . c_bar`` s.t. ``v(s) >= r(s,a) - lam . c(s,a) + gamma P v``."""
    S, A, N = m.S, m.A, m.N
    rows = []
    rhs = []
    for s in range(S):
        for a in range(A):
            row = np.zeros(S + N)
            row[:S] = m.gamma * m.P[s, a]
            row[s] -= 1.0
            row[S:] = -m.c[:, s, a]
            rows.append(row)
            rhs.append(-m.r[s, a])
    obj = np.concatenate([m.rho, m.c_bar])
    bounds = [(None, None)] * S + [(0, None)] * N
    res = linprog(obj, A_ub=np.array(rows), b_ub=rhs, bounds=bounds, method="highs")
    return float(res.fun)


# ----------------------------------------------------------------------------------- the model


def test_exactly_one_of_H_and_gamma():
    P = np.full((2, 1, 2), 0.5)
    r, c = np.zeros((2, 1)), np.zeros((0, 2, 1))
    with pytest.raises(CMDPInputError, match=r"H, gamma: give exactly one.*neither"):
        CMDP(P, r, c, None, 0)
    with pytest.raises(CMDPInputError, match=r"H, gamma: give exactly one.*both"):
        CMDP(P, r, c, None, 0, H=3, gamma=0.9)
    for bad in (0.0, 1.0, -0.1, 1.5, float("nan"), float("inf")):
        with pytest.raises(CMDPInputError, match=r"gamma"):
            CMDP(P, r, c, None, 0, gamma=bad)
    m = CMDP(P, r, c, None, 0, gamma=0.5)
    assert m.gamma == 0.5 and m.H is None and m.is_discounted
    assert CMDP(P, r, c, None, 0, 4).gamma is None
    assert m.max_return == pytest.approx(2.0)


def test_initial_distribution_is_validated_and_kept_as_given():
    P = np.full((3, 2, 3), 1 / 3)
    r, c = np.zeros((3, 2)), np.zeros((0, 3, 2))
    rho = np.array([0.2, 0.3, 0.5])
    m = CMDP(P, r, c, None, rho, gamma=0.9)
    assert isinstance(m.s0, np.ndarray) and np.array_equal(m.s0, rho) and np.array_equal(m.rho, rho)
    rho[0] = 0.9  # the model keeps its own copy
    assert m.rho[0] == 0.2
    with pytest.raises(ValueError):
        m.rho[0] = 1.0  # read-only
    m1 = CMDP(P, r, c, None, 2, H=3)
    assert m1.s0 == 2 and np.array_equal(m1.rho, [0, 0, 1])
    for bad, rule in (
        ([0.5, 0.5], "length S = 3"),
        ([0.5, 0.6, -0.1], "non-negative"),
        ([0.5, 0.4, 0.2], "sum to 1"),
        ([0.5, np.nan, 0.5], "finite"),
        (3, r"\[0, 2\]"),
    ):
        with pytest.raises(CMDPInputError, match=f"s0.*{rule}|{rule}.*s0|s0"):
            CMDP(P, r, c, None, bad, gamma=0.9)


def test_refusals_name_gamma_or_s0():
    from cmdp_rl import EpisodicEnv, OnlineCRL, make_learner
    from cmdp_rl.envs.gym_env import CMDPEnv

    m = _random(0)
    with pytest.raises(CMDPInputError, match=r"^gamma:"):
        OnlineCRL(m, 0.1, episodes=5)
    with pytest.raises(CMDPInputError, match=r"^gamma:"):
        EpisodicEnv(m, np.random.default_rng(0))
    with pytest.raises(CMDPInputError, match=r"^gamma:"):
        CMDPEnv(m)
    with pytest.raises(CMDPInputError, match=r"^policy: this model is discounted.*stationary"):
        evaluate(m, np.full((2, m.S, m.A), 1 / m.A))  # an (H, S, A) policy for a stationary model
    finite = m.replace(H=4)
    assert finite.gamma is None and finite.H == 4
    with pytest.raises(CMDPInputError, match=r"^s0:"):
        make_learner("optcmdp", finite, 0.1, episodes=5)
    with pytest.raises(CMDPInputError, match=r"^s0:"):
        EpisodicEnv(finite, np.random.default_rng(0))


def test_files_round_trip_and_refuse_both_or_neither(tmp_path):
    m = _random(1)
    for model in (m, m.to_sparse(), m.replace(s0=2), m.replace(H=7)):
        path = tmp_path / "m.npz"
        model.save(path)
        with np.load(path) as data:
            assert ("gamma" in data.files) == model.is_discounted and ("H" in data.files) != model.is_discounted
        back = CMDP.load(path)
        assert back.gamma == model.gamma and back.H == model.H and back.is_sparse == model.is_sparse
        assert np.array_equal(back.rho, model.rho) and type(back.s0) is type(model.s0)
    arrays = {"P": m.P, "r": m.r, "c": m.c, "c_bar": m.c_bar, "s0": np.int64(0)}
    np.savez(tmp_path / "both.npz", **arrays, H=np.int64(3), gamma=np.float64(0.9))
    np.savez(tmp_path / "neither.npz", **arrays)
    with pytest.raises(CMDPInputError, match=r"both 'H' and 'gamma'"):
        CMDP.load(tmp_path / "both.npz")
    with pytest.raises(CMDPInputError, match=r"neither 'H' nor 'gamma'"):
        CMDP.load(tmp_path / "neither.npz")


# ----------------------------------------------------------------------------------- evaluation


@pytest.mark.parametrize("sparse", [False, True])
def test_evaluate_matches_a_direct_solve_and_a_truncated_sum(sparse):
    m = _random(2, S=6, A=3)
    rng = np.random.default_rng(5)
    policy = rng.dirichlet(np.ones(m.A), size=m.S)
    ev = evaluate(m.to_sparse() if sparse else m, policy)
    v, cs = _direct(m, policy)
    assert ev.value == pytest.approx(v, abs=1e-9) and np.allclose(ev.costs, cs, atol=1e-9)
    # the truncated sum sum_{t < T} gamma^t E[r(s_t, a_t)] (error gamma^T / (1 - gamma) < 1e-12)
    P_pi = np.einsum("sa,sat->st", policy, m.P)
    d, total, T = m.rho.copy(), 0.0, 320
    for t in range(T):
        total += m.gamma**t * d @ (policy * m.r).sum(1)
        d = d @ P_pi
    assert ev.value == pytest.approx(total, abs=1e-9)
    assert ev.values.shape == (m.S,) and ev.cost_values.shape == (m.N, m.S)
    assert ev.occupancy.shape == (m.S, m.A) and ev.occupancy.sum() == pytest.approx(1.0)
    # the normalized occupancy gives the value: V = r . mu / (1 - gamma)
    assert (ev.occupancy * m.r).sum() / (1 - m.gamma) == pytest.approx(ev.value, abs=1e-9)


def test_gmres_path_matches_the_dense_solve(monkeypatch):
    m = _random(3, S=40, A=3).to_sparse()
    policy = np.random.default_rng(1).dirichlet(np.ones(3), size=40)
    dense = evaluate(m, policy)
    monkeypatch.setattr(disc, "DENSE_SOLVE_MAX", 10)
    iterative = evaluate(m, policy)
    assert iterative.value == pytest.approx(dense.value, abs=1e-9)
    assert np.allclose(iterative.costs, dense.costs, atol=1e-9)


@pytest.mark.slow
def test_finite_horizon_with_a_distribution_is_linear_in_rho():
    rng = np.random.default_rng(4)
    S, A, H = 5, 2, 4
    P = rng.dirichlet(np.ones(S), size=(S, A))
    r, c = rng.random((S, A)), rng.random((1, S, A))
    rho = rng.dirichlet(np.ones(S))
    m = CMDP(P, r, c, [1.5], rho, H=H)
    policy = rng.dirichlet(np.ones(A), size=(H, S))
    per_state = [evaluate(m.replace(s0=s), policy).value for s in range(S)]
    assert evaluate(m, policy).value == pytest.approx(rho @ per_state, abs=1e-12)
    fast, lp = solve(m), solve(m, "lp")
    assert fast.value == pytest.approx(lp.value, abs=1e-7)
    assert evaluate(m, fast.policy).value == pytest.approx(fast.value, abs=1e-9)
    assert evaluate(m, fast.policy).costs[0] <= 1.5 + 1e-7


# ----------------------------------------------------------------------------------- planning


@pytest.mark.parametrize("seed", range(6))
def test_lp_matches_brute_force_and_the_dual(seed):
    m = _random(seed, S=4, A=2, N=2, frac=0.45)
    lp = solve(m, "lp")
    brute = _brute_force(m)
    if np.isnan(brute):
        assert lp.status == "infeasible"
        return
    assert lp.status == "optimal"
    assert lp.value == pytest.approx(brute, abs=1e-7)
    assert lp.value == pytest.approx(_dual_lp(m), abs=1e-7)
    assert lp.policy.shape == (m.S, m.A) and lp.occupancy.sum() == pytest.approx(1.0)
    v, cs = _direct(m, lp.policy)
    assert v == pytest.approx(lp.value, abs=1e-7) and np.all(cs <= m.c_bar + 1e-7)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("sparse", [False, True])
def test_column_generation_matches_the_lp(seed, sparse):
    m = _random(seed, S=8, A=3, N=1 + seed % 3, gamma=(0.5, 0.9, 0.99)[seed % 3], frac=0.3 + 0.05 * seed)
    model = m.to_sparse() if sparse else m
    lp, fast = solve(model, "lp"), solve(model)
    assert fast.status == lp.status
    if lp.status != "optimal":
        assert np.allclose(fast.min_costs, lp.min_costs, atol=1e-7)
        return
    assert fast.value == pytest.approx(lp.value, abs=1e-6)
    assert 0.0 <= fast.gap <= 1e-9 / (1 - m.gamma) + 1e-12
    ev = evaluate(m, fast.policy)
    assert ev.value == pytest.approx(fast.value, abs=1e-7)
    assert np.all(ev.costs <= m.c_bar + 1e-7)
    assert fast.columns.shape[1:] == (m.S,) and fast.policy.shape == (m.S, m.A)
    assert fast.occupancy.shape == (m.S, m.A) and fast.occupancy.sum() == pytest.approx(1.0)
    assert fast.sweeps > 0 and fast.multipliers.shape == (m.N,)


@pytest.mark.slow
def test_column_generation_through_gmres_matches_the_lp():
    """S = 1,200 (above DENSE_SOLVE_MAX): pricing and column evaluation by GMRES."""
    rng = np.random.default_rng(11)
    S, A, b = 1200, 3, 4
    rows = np.repeat(np.arange(S * A), b)
    cols = rng.integers(0, S, size=S * A * b)
    vals = rng.dirichlet(np.ones(b), size=S * A).ravel()
    K = sp.csr_array((vals, (rows, cols)), shape=(S * A, S))
    r, c = rng.random((S, A)), rng.random((1, S, A))
    m = CMDP(K, r, c, [0.45 / (1 - 0.95)], 0, gamma=0.95)
    assert m.S > disc.DENSE_SOLVE_MAX
    lp, fast = solve(m, "lp"), solve(m)
    assert fast.status == lp.status == "optimal"
    assert fast.value == pytest.approx(lp.value, abs=1e-6)
    ev = evaluate(m, fast.policy)
    assert np.all(ev.costs <= m.c_bar + 1e-7) and ev.value == pytest.approx(fast.value, abs=1e-6)


def test_an_unconstrained_discounted_model_matches_value_iteration():
    m = _random(9, S=7, A=4, N=0)
    V = np.zeros(m.S)
    for _ in range(2000):  # value iteration, contraction 0.9^2000
        V = (m.r + m.gamma * m.P @ V).max(1)
    assert solve(m).value == pytest.approx(m.rho @ V, abs=1e-9)
    assert solve(m, "lp").value == pytest.approx(m.rho @ V, abs=1e-7)


def test_infeasible_thresholds_are_reported_by_both_methods():
    m = _random(10, S=5, A=2, N=2, frac=-0.5)  # below the least cost
    for method in ("fast", "lp"):
        res = solve(m, method)
        assert res.status == "infeasible" and np.isnan(res.gap)
        least = [
            min(_direct(m, np.eye(m.A)[list(a)])[1][i] for a in itertools.product(range(m.A), repeat=m.S))
            for i in range(m.N)
        ]
        assert np.allclose(res.min_costs, least, atol=1e-7)


def test_plan_result_repr_and_cli_solve_handle_stationary_policies(tmp_path, capsys):
    from cmdp_rl.cli import main

    m = _random(12)
    res = solve(m)
    assert "policy=<(5, 3) table, mixed on use>" in repr(res)  # the table is not built for the repr
    assert res.policy.shape == (5, 3) and "policy=<(5, 3) array>" in repr(res)
    path = tmp_path / "disc.npz"
    m.save(path)
    code = main(["solve", str(path)])
    out = capsys.readouterr().out
    assert code == 0 and "gamma=0.9" in out and "actions of shape (5,)" in out  # stationary columns (S,)


def test_simulator_and_frontier_take_an_initial_distribution():
    from cmdp_rl import frontier
    from cmdp_rl.envs.gym_env import CMDPEnv

    rng = np.random.default_rng(8)
    S, A, H = 4, 2, 3
    P = rng.dirichlet(np.ones(S), size=(S, A))
    rho = np.array([0.1, 0.0, 0.6, 0.3])
    m = CMDP(P, rng.random((S, A)), rng.random((1, S, A)), [1.0], rho, H=H)
    env = CMDPEnv(m)
    env.reset(seed=0)
    starts = np.bincount([env.reset()[0] for _ in range(4000)], minlength=S) / 4000
    assert np.abs(starts - rho).max() < 0.03 and starts[1] == 0
    fr = frontier(m, points=4)
    for c_bar, value in zip(fr.c_bar, fr.value, strict=True):
        assert value == pytest.approx(solve(m.replace(c_bar=[c_bar]), "lp").value, abs=1e-7)
