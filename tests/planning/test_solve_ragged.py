"""Ragged action sets in the exact planners, against the padded model (the independent oracle).

A ragged model is equivalent to the padded model in which each unavailable action of a state is a
copy of one of its available actions (what users did by hand): the copies add no occupancy a
policy could not reach already. The padded model is solved here by this file's own
occupation-measure LPs (``scipy.optimize.linprog`` on dense arrays, written from the paper's
eq. "lp" and Altman's LP), not by the library.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

from cmdp_rl import CMDP, evaluate, frontier, solve
from cmdp_rl.planning.baseline import safe_baseline


def ragged_model(seed: int, S: int = 6, A: int = 3, N: int = 2, gamma: float | None = None) -> tuple[CMDP, dict]:
    """A random ragged model and the arrays of its padded twin (each missing action a copy of the
    state's last available one)."""
    rng = np.random.default_rng(seed)
    mask = rng.random((S, A)) < 0.6
    mask[np.arange(S), rng.integers(0, A, S)] = True
    P = rng.random((S, A, S)) * (rng.random((S, A, S)) < 0.5)
    P[:, :, 0] += 1e-3
    P /= P.sum(-1, keepdims=True)
    r = rng.random((S, A))
    c = rng.random((N, S, A))
    donor = np.array([np.flatnonzero(mask[s])[-1] for s in range(S)])
    pad = {"P": P.copy(), "r": r.copy(), "c": c.copy()}
    for s in range(S):
        for a in np.flatnonzero(~mask[s]):
            pad["P"][s, a] = P[s, donor[s]]
            pad["r"][s, a] = r[s, donor[s]]
            pad["c"][:, s, a] = c[:, s, donor[s]]
    P_rag = np.where(mask[..., None], P, 0.0)
    r_junk = np.where(mask, r, 5.0)  # ignored values, far outside [0, 1]
    length = {"H": 5} if gamma is None else {"gamma": gamma}
    c_bar = np.full(N, 0.0)
    m = CMDP(P_rag, r_junk, c, c_bar, 0, **length, actions=mask)
    # thresholds between the least and the unconstrained costs: binding
    lo, hi = own_lp(pad, np.full(N, np.inf), m)[1], own_lp(pad, np.full(N, np.inf), m, minimize_cost=True)[1]
    return m.replace(c_bar=0.5 * (lo + hi)), pad


def own_lp(pad: dict, c_bar: np.ndarray, m: CMDP, minimize_cost: bool = False) -> tuple[float, np.ndarray]:
    """The padded model's optimum ``(value, costs)`` by a dense LP built here (``minimize_cost``: the
    policy minimizing the total cost instead)."""
    P, r, c = pad["P"], pad["r"], pad["c"]
    S, A = r.shape
    N = c.shape[0]
    if m.gamma is None:
        H = m.H
        n = H * S * A
        A_eq = np.zeros((H * S, n))
        b_eq = np.zeros(H * S)
        b_eq[m.s0] = 1.0
        for h in range(H):
            for s in range(S):
                A_eq[h * S + s, h * S * A + s * A : h * S * A + (s + 1) * A] = 1.0
                if h:
                    A_eq[h * S + s, (h - 1) * S * A : h * S * A] -= P[:, :, s].ravel()
        obj, cost = np.tile(r.ravel(), H), np.tile(c.reshape(N, -1), (1, H))
    else:
        A_eq = np.zeros((S, S * A))
        for s in range(S):
            A_eq[s, s * A : (s + 1) * A] = 1.0
            A_eq[s] -= m.gamma * P[:, :, s].ravel()
        b_eq = m.rho
        obj, cost = r.ravel(), c.reshape(N, -1)
    finite = np.isfinite(c_bar)
    goal = cost.sum(0) if minimize_cost else -obj
    res = linprog(goal, A_ub=cost[finite], b_ub=c_bar[finite], A_eq=A_eq, b_eq=b_eq, method="highs")
    assert res.status == 0
    return float(obj @ res.x), cost @ res.x


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("method", ["fast", "lp"])
@pytest.mark.parametrize("layout", ["dense", "sparse"])
def test_finite_horizon_optimum_equals_the_padded_models(seed: int, method: str, layout: str) -> None:
    m, pad = ragged_model(seed)
    m = m.to_sparse() if layout == "sparse" else m
    value, _ = own_lp(pad, m.c_bar, m)
    res = solve(m, method=method)
    assert res.status == "optimal"
    assert abs(res.value - value) <= 1e-7
    assert np.all(res.costs <= m.c_bar + 1e-7)
    # no mass on unavailable actions, anywhere (unreachable states: uniform over the available ones)
    assert np.all(res.policy[:, ~m.actions] == 0.0)
    assert np.allclose(res.policy.sum(-1), 1.0)
    ev = evaluate(m, res.policy)
    assert abs(ev.value - res.value) <= 1e-7


def test_unreachable_states_get_the_uniform_policy_over_their_available_actions() -> None:
    # state 2 is never reached from 0: its policy is uniform over actions 0 and 2
    P = np.zeros((3, 3, 3))
    P[0, :, 1] = 1.0
    P[1, :, 0] = 1.0
    P[2, [0, 2], 2] = 1.0
    mask = np.array([[True, True, True], [True, True, True], [True, False, True]])
    m = CMDP(P, np.full((3, 3), 0.5), None, None, 0, H=3, actions=mask)
    for method in ("fast", "lp"):
        pol = solve(m, method=method).policy
        assert np.array_equal(pol[:, 2], np.tile([0.5, 0.0, 0.5], (3, 1)))


def test_the_best_response_never_takes_an_unavailable_action_however_rewarding() -> None:
    # the unavailable action 1 of state 0 carries reward 1 (ignored); the only available one 0
    P = np.zeros((1, 2, 1))
    P[0, 0, 0] = 1.0
    m = CMDP(P, [[0.25, 1.0]], None, None, 0, H=4, actions=[[True, False]])
    assert m.r[0, 1] == 0.25  # the ignored value is replaced by the available action's
    res = solve(m)
    assert res.value == pytest.approx(1.0) and np.all(res.policy[:, 0] == [1.0, 0.0])


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("method", ["fast", "lp"])
@pytest.mark.parametrize("layout", ["dense", "sparse"])
def test_discounted_optimum_equals_the_padded_models(seed: int, method: str, layout: str) -> None:
    m, pad = ragged_model(seed, gamma=0.8)
    m = m.to_sparse() if layout == "sparse" else m
    value, _ = own_lp(pad, m.c_bar, m)
    res = solve(m, method=method)
    assert res.status == "optimal"
    assert abs(res.value - value) <= 1e-7
    assert np.all(res.policy[~m.actions] == 0.0)
    assert abs(evaluate(m, res.policy).value - value) <= 1e-7


def test_frontier_equals_the_padded_models_optimum_at_each_threshold() -> None:
    m, pad = ragged_model(7, N=1)
    fr = frontier(m, points=5)
    for x, v in zip(fr.c_bar, fr.value, strict=True):
        assert abs(v - own_lp(pad, np.array([x + 1e-10]), m)[0]) <= 1e-7  # lo: the least cost, to rounding


def test_evaluate_matches_the_padded_model_and_refuses_mass_on_an_unavailable_action() -> None:
    m, pad = ragged_model(3)
    rng = np.random.default_rng(0)
    pol = rng.random((m.H, m.S, m.A)) * m.actions
    pol /= pol.sum(-1, keepdims=True)
    # backward induction on the padded model, written out
    V = np.zeros(m.S)
    for h in range(m.H - 1, -1, -1):
        V = (pol[h] * (pad["r"] + pad["P"] @ V)).sum(-1)
    assert evaluate(m, pol).value == pytest.approx(V[0], abs=1e-12)
    assert evaluate(m.to_sparse(), pol).value == pytest.approx(V[0], abs=1e-12)
    s, a = np.argwhere(~m.actions)[0]
    bad = pol.copy()
    bad[1, s] = 0.0
    bad[1, s, a] = 1.0
    with pytest.raises(Exception, match=rf"policy\[1, {s}, {a}\].*not available in state {s}"):
        evaluate(m, bad)


def test_sparse_storage_grows_with_the_available_pairs() -> None:
    m, _ = ragged_model(1, S=8)
    K = m.to_sparse().K
    rows = np.diff(K.indptr).reshape(m.S, m.A)
    assert np.all(rows[~m.actions] == 0) and np.all(rows[m.actions] > 0)
    given = sp.csr_array(m.P.reshape(m.S * m.A, m.S))
    assert CMDP(given, m.r, m.c, m.c_bar, 0, H=3, actions=m.actions).nnz == K.nnz


def test_frontier_with_two_constraints_equals_the_padded_models_optimum() -> None:
    m, pad = ragged_model(8, N=2)
    fr = frontier(m, constraint=1, points=4)
    for x, v in zip(fr.c_bar, fr.value, strict=True):
        c_bar = np.array([m.c_bar[0], x + 1e-10])
        assert abs(v - own_lp(pad, c_bar, m)[0]) <= 1e-7


@pytest.mark.parametrize("gamma", [None, 0.8])
def test_infeasible_thresholds_report_the_padded_models_least_cost(gamma: float | None) -> None:
    m, pad = ragged_model(4, N=1, gamma=gamma)
    least = own_lp(pad, np.array([np.inf]), m, minimize_cost=True)[1][0]
    bad = m.replace(c_bar=[least - 0.05])
    for method in ("fast", "lp"):
        res = solve(bad, method=method)
        assert res.status == "infeasible" and res.min_costs[0] == pytest.approx(least, abs=1e-7)
        assert np.all(res.policy[..., ~m.actions] == 0.0)
    base = safe_baseline(bad)
    assert base.rule == "min-worst-excess" and base.slater_gap == pytest.approx(-0.05, abs=1e-7)
    assert np.all(base.policy[..., ~m.actions] == 0.0)


@pytest.mark.parametrize("seed", [0, 1])
def test_the_literal_extended_lp_takes_a_ragged_model(seed: int) -> None:
    from cmdp_rl.planning.elp import solve_elp

    m, pad = ragged_model(seed, S=4, A=3, N=1)
    p_hat = m.P
    exact = solve_elp(m, p_hat, np.zeros_like(p_hat), method="lp")  # beta = 0: the occupancy LP on p_hat
    value, _ = own_lp(pad, m.c_bar, m)
    assert exact.status == "optimal"
    assert exact.value == pytest.approx(value, abs=1e-7)
    assert np.all(exact.policy[:, ~m.available] == 0.0)
    beta = np.where(m.available[..., None], 0.1, 0.0) * np.ones_like(p_hat)  # plausible kernels around p_hat
    wide_lp, wide_fast = (solve_elp(m, p_hat, beta, method=k) for k in ("lp", "fast"))
    assert wide_lp.value == pytest.approx(wide_fast.value, abs=1e-6)
    assert wide_lp.value >= exact.value - 1e-9  # optimism: a larger plausible set
    assert np.all(wide_lp.policy[:, ~m.available] == 0.0)
