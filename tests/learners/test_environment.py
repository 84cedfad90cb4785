"""Episodes of a compact policy (a mixture of deterministic columns) in the episodic environment."""

from __future__ import annotations

import numpy as np
import pytest

from cmdp_rl import evaluate, random_cmdp, solve
from cmdp_rl.evaluation.mixture import mixture_policy
from cmdp_rl.learners.environment import EpisodicEnv
from cmdp_rl.plumbing.validation import CMDPInputError


@pytest.fixture(scope="module")
def planned() -> tuple:
    """A model whose fast plan mixes at least two columns, and that mixture."""
    m = random_cmdp(15, 3, 6, 2, 2, support=4)
    plan = solve(m, method="fast")
    assert plan.columns is not None and plan.columns.shape[0] >= 2
    return m, mixture_policy(plan.columns, plan.weights, m.A)


@pytest.mark.parametrize("sparse", [False, True])
def test_mean_return_and_column_frequencies(planned: tuple, sparse: bool) -> None:
    """3,000 episodes: the empirical mean return and costs within 4 standard errors of evaluate's
    exact values of the mixture, and each column drawn with a frequency within 4 binomial standard
    errors of its weight."""
    m, mix = planned
    m = m.to_sparse() if sparse else m
    exact = evaluate(m, mix)
    n = 3000
    cols, states, actions, _ = EpisodicEnv(m, np.random.default_rng(11)).mixture_episodes(mix, n)
    returns = m.r[states, actions].sum(axis=1)
    assert abs(returns.mean() - exact.value) <= 4 * returns.std(ddof=1) / np.sqrt(n)
    for i in range(m.N):
        costs = m.c[i][states, actions].sum(axis=1)
        assert abs(costs.mean() - exact.costs[i]) <= 4 * costs.std(ddof=1) / np.sqrt(n)
    freq = np.bincount(cols, minlength=mix.K) / n
    w = mix.weights
    assert np.all(np.abs(freq - w) <= 4 * np.sqrt(w * (1 - w) / n) + 1e-12)
    for k in range(mix.K):  # each episode follows its column throughout
        chosen = cols == k
        np.testing.assert_array_equal(actions[chosen], mix.columns[k][np.arange(m.H), states[chosen]])


def test_seeded_reproducibility_and_batch_equals_calls(planned: tuple) -> None:
    """Same seed, same episodes; the batch plays the episodes of as many single calls; rollout()
    of a mixture is rollout_mixture() without the column; transitions counted."""
    m, mix = planned
    a = EpisodicEnv(m, np.random.default_rng(5)).mixture_episodes(mix, 20)
    b = EpisodicEnv(m, np.random.default_rng(5)).mixture_episodes(mix, 20)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    env = EpisodicEnv(m, np.random.default_rng(5))
    counts = np.zeros((m.S, m.A, m.S), dtype=np.int64)
    for e in range(20):
        k, s, acts, nxt = env.rollout_mixture(mix, counts)
        np.testing.assert_array_equal(acts, a[2][e])
        assert k == a[0][e]
        np.testing.assert_array_equal(s, a[1][e])
        np.testing.assert_array_equal(nxt, a[3][e])
    assert counts.sum() == 20 * m.H and env.samples_drawn == 20 * m.H
    one = EpisodicEnv(m, np.random.default_rng(5)).rollout(mix)
    np.testing.assert_array_equal(one[0], a[1][0])


def test_mixture_that_does_not_fit_is_refused(planned: tuple) -> None:
    m, mix = planned
    env = EpisodicEnv(m, np.random.default_rng(0))
    short = mixture_policy(mix.columns[:, :-1], mix.weights, m.A)
    with pytest.raises(CMDPInputError, match="policy: expected columns of shape"):
        env.rollout(short)
    wide = mixture_policy(np.full_like(mix.columns, 3), mix.weights)
    with pytest.raises(CMDPInputError, match="plays action 3"):
        env.mixture_episodes(wide, 2)
