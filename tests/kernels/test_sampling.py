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
