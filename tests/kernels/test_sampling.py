"""The one categorical sampler: draws by inversion of the cumulative row (checked on a grid of
uniforms, where the answer is known by hand) and frequencies that fit the probabilities."""

from __future__ import annotations

import numpy as np
from scipy.stats import chisquare

from cmdp_rl.kernels.sampling import categorical_many, cumulative


def test_inversion_on_a_grid_of_uniforms() -> None:
    cum = cumulative(np.array([[0.2, 0.0, 0.5, 0.3]]))[0]
    u = np.array([0.0, 0.1999, 0.2, 0.69, 0.7, 0.9999])
    # [0, 0.2) -> 0; the zero-probability index 1 is never drawn; [0.2, 0.7) -> 2; [0.7, 1) -> 3
    np.testing.assert_array_equal(categorical_many(cum, u), [0, 0, 2, 2, 3, 3])


def test_a_uniform_a_hair_below_one_gives_the_last_index_with_mass() -> None:
    cum = cumulative(np.array([[0.5, 0.5, 0.0]]))[0]
    assert categorical_many(cum, np.array([np.nextafter(1.0, 0.0)]))[0] == 1


def test_frequencies_fit_the_probabilities() -> None:
    rng = np.random.default_rng(np.random.SeedSequence(7))
    p = np.array([0.1, 0.25, 0.05, 0.6])
    draws = categorical_many(cumulative(p[None])[0], rng.random(20_000))
    counts = np.bincount(draws, minlength=p.size)
    assert chisquare(counts, 20_000 * p).pvalue > 1e-3


def test_kernel_draws_give_the_same_next_states_in_either_layout() -> None:
    """``KernelDraws`` on a model and on its sparse twin: the same next states for the same
    uniforms (step by step and whole episodes), counts in the model's layout, and each next state
    the first whose cumulative probability exceeds the uniform (computed here)."""
    from cmdp_rl import random_cmdp
    from cmdp_rl.kernels.sampling import KernelDraws

    m = random_cmdp(S=5, A=3, N=1, H=4, seed=2)
    dense, sparse = KernelDraws(m), KernelDraws(m.to_sparse())
    u = np.random.default_rng(0).random(50)
    for s, a in ((0, 0), (3, 2)):
        want = [int(np.argmax(np.cumsum(m.P[s, a]) > x)) for x in u]
        np.testing.assert_array_equal(dense.next_states(s, a, u), want)
        np.testing.assert_array_equal(sparse.next_states(s, a, u), want)
    policy = np.full((4, 5, 3), 1.0 / 3.0)
    uu = np.random.default_rng(1).random((4, 2))
    for a, b in zip(dense.rollout(policy, 0, uu), sparse.rollout(policy, 0, uu), strict=True):
        np.testing.assert_array_equal(a, b)
    assert dense.counts(np.random.default_rng(2), 7).shape == (5, 3, 5)
    sparse_counts = sparse.counts(np.random.default_rng(2), 7)
    assert sparse_counts.shape == (15, 5)
    np.testing.assert_array_equal(sparse_counts.sum(axis=1), np.full(15, 7))
    np.testing.assert_array_equal(sparse.dense_cumulative("test"), dense.dense_cumulative("test"))
