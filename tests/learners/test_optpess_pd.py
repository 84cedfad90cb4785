"""``optpess-pd``: its pieces against hand computation on a 2-state model, its refusals, the same plans
from dense and sparse counts, and the paper's claim (bounded cumulative violation) at small scale."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from cmdp_rl import CMDP, CMDPInputError, random_cmdp
from cmdp_rl.learners import EpisodicEnv, Scorer, make_learner
from cmdp_rl.learners.bonuses import optpess_log
from cmdp_rl.learners.optpess_pd import OptPessPD, flat_counts, lagrangian_greedy, next_values, optpess_pd_epsilon
from cmdp_rl.model.cmdp import KnownParts

# 2 states, 2 actions: n(0, 0, .) = (3, 1), n(0, 1, .) = (0, 2), n(1, 0, .) = (1, 1), (1, 1) unvisited
COUNTS = np.array([[[3, 1], [0, 2]], [[1, 1], [0, 0]]], dtype=np.int64)
R = np.array([[0.5, 0.2], [0.0, 1.0]])
C = np.array([[[0.0, 1.0], [0.5, 0.0]]])


def _known(H: int, c_bar: float = 1.0) -> KnownParts:
    return KnownParts(R, C, np.array([c_bar]), 0, H)


def test_next_values_by_hand_dense_and_sparse() -> None:
    V = np.array([[2.0, 10.0], [4.0, 0.0]])  # two value columns
    want = np.array(
        [
            [[(3 * 2 + 4) / 4, (3 * 10 + 0) / 4], [4.0, 0.0]],
            [[3.0, 5.0], [3.0, 5.0]],  # (1, 1) unvisited: the mean over the states
        ]
    )
    flat, n, S, A = flat_counts(COUNTS)
    assert (S, A) == (2, 2) and n.tolist() == [[4, 2], [2, 0]]
    np.testing.assert_allclose(next_values(flat, n, V), want, rtol=1e-15)
    flat_sp, n_sp, _, _ = flat_counts(sp.csr_array(COUNTS.reshape(4, 2)))
    np.testing.assert_allclose(next_values(flat_sp, n_sp, V), want, rtol=1e-15)


def test_epsilon_formula() -> None:
    assert optpess_pd_epsilon(2, 100, 1.0) == pytest.approx(0.5)  # min(1/2, 8 / 10)
    assert optpess_pd_epsilon(2, 100, 4.0) == pytest.approx(0.2)  # min(2, 8 / 40)
    assert optpess_pd_epsilon(3, 1, 0.0) == 0.0
    with pytest.raises(CMDPInputError, match="gamma"):
        optpess_pd_epsilon(2, 10, -0.1)
    with pytest.raises(CMDPInputError, match="K"):
        optpess_pd_epsilon(2, 0, 1.0)


def test_greedy_sweep_by_hand() -> None:
    """H = 2, bonus b = 0.1 everywhere, lambda = 2: step 1 picks argmax of r + b - 2 c, step 0 adds
    p_hat times that value; the pessimistic cost sums c + b along the greedy actions, truncated."""
    known, b, lam = _known(2), np.full((2, 2), 0.1), np.array([2.0])
    flat, n, _, _ = flat_counts(COUNTS)
    actions, value, costs = lagrangian_greedy(flat, n, known, b, lam)
    # step 1: s0: (0.6 - 0, 0.3 - 2) -> a0, Lagrangian 0.6; s1: (0.1 - 1, 1.1 - 0) -> a1, 1.1
    assert actions[1].tolist() == [0, 1]
    # the optimistic reward value is truncated at H - h = 1 (s1: 1.1 -> 1), the Lagrangian is not
    v1_lag, v1_r, v1_c = np.array([0.6, 1.1]), np.array([0.6, 1.0]), np.array([0.1, 0.1])
    # step 0, s0: a0: 0.6 + (3 * 0.6 + 1.1) / 4 = 1.325; a1: 0.3 - 2 + 1.1 = -0.6 -> a0
    assert actions[0, 0] == 0
    assert value == pytest.approx(0.6 + (3 * v1_r[0] + v1_r[1]) / 4)
    assert costs[0] == pytest.approx(min(0.0 + 0.1 + (3 * v1_c[0] + v1_c[1]) / 4, 2.0))
    assert v1_lag[0] == pytest.approx(0.6)
    big = np.full((2, 2), 5.0)  # a bonus above the horizon: the pessimistic cost is truncated at H - h
    _, _, costs = lagrangian_greedy(flat, n, known, big, np.array([0.0]))
    assert costs[0] == pytest.approx(2.0)


def _learner(H: int = 2, K: int = 100, **kw: object) -> OptPessPD:
    known = _known(H)
    return OptPessPD(
        known, 0.1, episodes=K, baseline=np.full((H, 2, 2), 0.5), baseline_costs=[0.5], bonus_scale=0.1, **kw
    )


def test_dual_step_and_multipliers_by_hand() -> None:
    learner = _learner()
    assert learner.gamma == pytest.approx(0.5)
    t, eps = 1.0 / (2 * math.sqrt(100)), min(0.25, 2 * 4 / (0.5 * 10))
    assert learner.step == pytest.approx(t) and learner.epsilon == pytest.approx(eps)
    plan = learner.planner()
    plan(COUNTS)
    plan(COUNTS)
    lam = learner._info()["multipliers"]
    L = optpess_log(2, 2, 100, 0.1)
    b = 0.1 * (1 + 2 * 2) * np.sqrt(L / np.maximum(COUNTS.sum(-1), 1))
    flat, n, _, _ = flat_counts(COUNTS)
    _, _, pess = lagrangian_greedy(flat, n, _known(2), b, np.zeros(1))
    assert lam.shape == (2, 1) and lam[0, 0] == 0.0
    assert lam[1, 0] == pytest.approx(max(0.0, t * (pess[0] + eps - 1.0)))
    assert learner.settings()["epsilon"] == pytest.approx(eps)


def test_dense_and_sparse_counts_plan_the_same() -> None:
    a, b = _learner().planner(), _learner(statistics="sparse").planner()
    for _ in range(3):
        pa, pb = a(COUNTS), b(sp.csr_array(COUNTS.reshape(4, 2)))
        np.testing.assert_array_equal(pa.policy, pb.policy)
        assert pa.value == pytest.approx(pb.value, rel=1e-12)


def test_new_costs_are_read_at_the_next_plan() -> None:
    learner = _learner(H=1)
    plan = learner.planner()
    assert plan(COUNTS).policy[0, 0].tolist() == [1.0, 0.0]  # s0: a0 (r + b = 1.01 > 0.93), cost 0
    learner.update_known(KnownParts(R, np.array([[[1.0, 0.0], [0.5, 0.0]]]), np.array([1.0]), 0, 1))
    for _ in range(400):  # a0 now costs 1 + b > c_bar: the multiplier grows until s0 takes a1 (cost 0)
        pol = plan(COUNTS).policy
    assert pol[0, 0].tolist() == [0.0, 1.0]


def test_refusals() -> None:
    with pytest.raises(CMDPInputError, match="Slater gap"):
        OptPessPD(_known(2), episodes=5, baseline=np.full((2, 2, 2), 0.5), baseline_costs=[1.0])
    with pytest.raises(CMDPInputError, match="bonus_scale"):
        OptPessPD(_known(2), episodes=5, baseline=np.full((2, 2, 2), 0.5), baseline_costs=[0.2], bonus_scale=-1)
    with pytest.raises(CMDPInputError, match="baseline"):
        OptPessPD(_known(2), episodes=5, baseline=np.ones((2, 2, 3)), baseline_costs=[0.2])


@pytest.fixture(scope="module")
def model() -> CMDP:
    return random_cmdp(6, 3, 5, 1, seed=1, slack=0.3, support=3)


@pytest.mark.parametrize("seed", range(3))
def test_cumulative_violation_stops_growing(model: CMDP, seed: int) -> None:
    """The paper's claim, bounded (O(1) in K) cumulative violation: no violation in the second half of
    the run (the cumulative violation at K equals that at K / 2), and the signed excess summed over the
    run, the paper's cancelling measure, at most where it stood at K / 2."""
    K = 1200
    learner = make_learner("optpess-pd", model, 0.1, episodes=K, bonus_scale=0.01)
    rec = learner.fit(EpisodicEnv(model, np.random.default_rng(seed)), Scorer.for_model(model))
    half = K // 2 - 1
    assert rec.cum_violation[-1] == pytest.approx(rec.cum_violation[half], abs=1e-9)
    signed = np.cumsum(rec.costs[:, 0] - model.c_bar[0])
    assert signed[-1] <= signed[half]
    assert rec.info["multipliers"].shape == (K, 1)
    assert rec.baseline_episodes == 0  # the baseline's gap is read, the policy never played
