"""The exact occupation-measure LP against independently known answers."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import dense_reference_lp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cmdp_rl import CMDP, evaluate, random_cmdp, solve
from cmdp_rl.evaluation.evaluate import optimal_values


def test_hand_solved_randomized_optimum(two_state: CMDP) -> None:
    """Two states, H = 2, s0 = 0, c_bar = 0.5.

    In state 0 the safe action (reward 0, cost 0) stays put; the risky action
    (reward 1, cost 1) moves to the absorbing state 1, where every action earns
    0.5 at no cost. With p = pi(risky | s0, h=0) and q = pi(risky | s0, h=1):
    V = p + 0.5 p + (1 - p) q and C = p + (1 - p) q <= 0.5. So V = C + 0.5 p,
    and p <= C, giving V <= 0.75 with equality only at p = 0.5, q = 0: the
    unique optimum is randomized, V* = 0.75, C = 0.5.
    """
    res = solve(two_state)
    assert res.status == "optimal"
    assert res.value == pytest.approx(0.75, abs=1e-9)
    assert res.costs[0] == pytest.approx(0.5, abs=1e-9)
    assert res.policy[0, 0] == pytest.approx([0.5, 0.5], abs=1e-9)
    assert res.policy[1, 0] == pytest.approx([1.0, 0.0], abs=1e-9)


@pytest.mark.parametrize("seed", range(5))
def test_unconstrained_equals_dynamic_programming(seed: int) -> None:
    m = random_cmdp(8, 3, 6, 0, seed=seed)
    res = solve(m)
    dp = optimal_values(m.P, m.r, m.H)[0, m.s0]
    assert res.value == pytest.approx(dp, rel=1e-8)
    assert evaluate(m, res.policy).value == pytest.approx(dp, rel=1e-8)


@pytest.mark.parametrize("seed", range(6))
def test_policy_reproduces_value_and_costs(seed: int) -> None:
    m = random_cmdp(10, 3, 7, 1 + seed % 3, seed=100 + seed)
    res = solve(m)
    assert res.status == "optimal"
    ev = evaluate(m, res.policy)
    assert ev.value == pytest.approx(res.value, rel=1e-7, abs=1e-9)
    assert np.allclose(ev.costs, res.costs, atol=1e-7)
    assert np.all(ev.costs <= m.c_bar + 1e-7)
    assert np.allclose(ev.occupancy, res.occupancy, atol=1e-8)


def test_infeasible_reports_min_costs() -> None:
    m = random_cmdp(6, 3, 5, 2, seed=7, slack=-0.3)
    res = solve(m)
    assert res.status == "infeasible"
    for i in range(m.N):
        _, ref = dense_reference_lp(m, objective=-m.c[i], with_costs=False)
        assert res.min_costs[i] == pytest.approx(-ref, abs=1e-7)
    assert res.max_excess > 0
    ev = evaluate(m, res.policy)
    assert np.allclose(ev.costs, res.costs, atol=1e-7)
    # the returned policy minimizes the worst excess: no better than min_cost gaps allow
    assert res.max_excess >= np.max(res.min_costs - m.c_bar) - 1e-7


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    S=st.integers(2, 6),
    A=st.integers(1, 3),
    H=st.integers(1, 5),
    N=st.integers(1, 2),
    slack=st.floats(0.05, 0.95),
)
def test_lp_beats_every_random_feasible_policy(seed, S, A, H, N, slack) -> None:
    m = random_cmdp(S, A, H, N, seed=seed, slack=slack)
    res = solve(m)
    assert res.status == "optimal"
    rng = np.random.default_rng(seed)
    for _ in range(5):
        # a random policy is rarely feasible for m: relax the thresholds until it is, so the
        # comparison always runs (the LP of the relaxed problem must beat it, and m's LP
        # must beat every policy feasible for m, which the relaxed LP's value bounds above)
        pol = rng.dirichlet(np.ones(A), size=(H, S))
        ev = evaluate(m, pol)
        relaxed = solve(m.replace(c_bar=np.maximum(m.c_bar, ev.costs)))
        assert relaxed.status == "optimal"
        assert ev.value <= relaxed.value + 1e-8
        assert res.value <= relaxed.value + 1e-8
        if np.all(ev.costs <= m.c_bar):
            assert ev.value <= res.value + 1e-8


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), shrink=st.floats(0.0, 1.0))
def test_tightening_never_raises_value(seed, shrink) -> None:
    m = random_cmdp(5, 3, 4, 2, seed=seed, slack=0.8)
    tight = m.replace(c_bar=m.c_bar * shrink)
    a, b = solve(m), solve(tight)
    assert a.status == "optimal"
    if b.status == "optimal":
        assert b.value <= a.value + 1e-8
        assert np.all(b.costs <= tight.c_bar + 1e-7)
    else:  # infeasible: no policy meets the tightened thresholds, so the best worst excess is positive
        assert b.max_excess > 0 and b.min_costs is not None
