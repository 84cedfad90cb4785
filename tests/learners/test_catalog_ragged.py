"""Ragged action sets in the learners: none plays an action a state lacks, and none counts one."""

from __future__ import annotations

import numpy as np
import pytest

from cmdp_rl import CMDP, CMDPInputError, random_cmdp, solve
from cmdp_rl.learners import ONLINE_ALGORITHMS, EpisodicEnv, GenerativeModel, OptimisticGMBL, Scorer, make_learner


def ragged() -> CMDP:
    """4 states, 3 actions, one constraint; three pairs unavailable, thresholds with slack."""
    base = random_cmdp(4, 3, 3, 1, seed=3, slack=0.3, support=3)
    mask = np.ones((4, 3), dtype=bool)
    mask[0, 2] = mask[1, 0] = mask[3, 1] = False
    m = CMDP(np.where(mask[..., None], base.P, 0.0), base.r, base.c, base.c_bar, 0, H=3, actions=mask)
    lo = solve(m.replace(c_bar=[0.0])).min_costs
    hi = solve(m.replace(c_bar=[m.H])).costs
    return m.replace(c_bar=0.3 * lo + 0.7 * hi)


@pytest.mark.parametrize("name", ONLINE_ALGORITHMS)
def test_no_learner_plays_or_counts_an_unavailable_action(name: str) -> None:
    m = ragged()
    learner = make_learner(name, m, 0.1, episodes=12)
    rec = learner.fit(EpisodicEnv(m, np.random.default_rng(1)), Scorer.for_model(m))
    counts = np.asarray(rec.counts.toarray() if hasattr(rec.counts, "toarray") else rec.counts).reshape(m.S, m.A, -1)
    assert counts.sum() == 12 * m.H
    assert counts[~m.actions].sum() == 0
    policy = np.asarray(rec.policy)
    assert np.all(policy[..., ~m.actions] == 0.0)


def test_the_certified_deployment_of_a_ragged_model_plays_available_actions_only() -> None:
    m = ragged()
    learner = make_learner("optcmdp", m, 0.1, episodes=12, deploy="certified")
    rec = learner.fit(EpisodicEnv(m, np.random.default_rng(3)), Scorer.for_model(m))
    assert np.all(np.asarray(rec.policy)[..., ~m.actions] == 0.0)
    assert rec.certificate is not None


def test_the_environment_refuses_an_unavailable_action() -> None:
    m = ragged()
    env = EpisodicEnv(m, np.random.default_rng(0))
    policy = np.full((m.H, m.S, m.A), 1.0 / m.A)
    with pytest.raises(CMDPInputError, match=r"policy\[0, 0, 2\]: .*not available in state 0"):
        env.rollout(policy)
    env.reset()
    with pytest.raises(CMDPInputError, match="a: action 2 is not available in state 0"):
        env.step(2)


@pytest.mark.parametrize("layout", ["dense", "sparse"])
def test_the_generative_model_samples_available_pairs_only(layout: str) -> None:
    m = ragged() if layout == "dense" else ragged().to_sparse()
    gen = GenerativeModel(m, np.random.default_rng(0))
    counts = gen.sample_counts(50)
    dense = (counts.toarray() if hasattr(counts, "toarray") else counts).reshape(m.S, m.A, m.S)
    assert np.all(dense[~m.actions].sum(-1) == 0) and np.all(dense[m.actions].sum(-1) == 50)
    assert gen.samples_drawn == 50 * int(m.actions.sum())
    with pytest.raises(CMDPInputError, match="action 0 is not available in state 1"):
        gen.sample(1, 0)


def test_optimistic_gmbl_samples_and_plans_available_pairs_only() -> None:
    m = ragged()
    learner = OptimisticGMBL(m, 0.1, samples_per_pair=30)
    res = learner.fit(GenerativeModel(m, np.random.default_rng(4)), Scorer.for_model(m))
    assert res.samples == 30 * int(m.actions.sum())
    assert res.counts[~m.actions].sum() == 0
    assert np.all(res.policy[:, ~m.actions] == 0.0)
    literal = OptimisticGMBL(m, 0.1, samples_per_pair=30, method="lp").plan(res.counts, 30, None)
    fast = learner.plan(res.counts, 30, None)  # the literal extended LP takes the mask too, and agrees
    assert np.all(literal.policy[:, ~m.actions] == 0.0)
    assert literal.value == pytest.approx(fast.value, abs=1e-6)
