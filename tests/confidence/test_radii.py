"""Radii against hand computation; coverage against Lemma 1."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cmdp_rl import CMDPInputError, random_cmdp
from cmdp_rl.confidence.box import Box
from cmdp_rl.confidence.radii import confidence_set, delta_1, delta_p, empirical_kernel, radius


def test_radius_hand_values() -> None:
    # phat = 0.25, n = 16, delta' = 0.05: L = ln 80 = 4.38203;
    # Bernstein: sqrt(2 * 0.25 * 0.75 * L / 16) + 2 L / 48 = 0.32047 + 0.18258 = 0.50305
    # Hoeffding: sqrt(L / 32) = 0.370052 -> the minimum is Hoeffding's.
    counts = np.zeros((2, 1, 2), dtype=int)
    counts[0, 0] = [4, 12]  # phat = (0.25, 0.75), n = 16
    counts[1, 0] = [0, 100]  # phat = (0, 1), n = 100
    cs = confidence_set(counts, 0.05)
    assert cs.beta[0, 0, 0] == pytest.approx(0.370052, abs=1e-6)
    assert cs.beta[0, 0, 1] == pytest.approx(0.370052, abs=1e-6)
    # phat = 0, n = 100: Bernstein = 2 L / 300 = 0.0292135 < Hoeffding sqrt(L / 200) = 0.148021
    assert cs.beta[1, 0, 0] == pytest.approx(0.0292135, abs=1e-6)
    assert cs.n.tolist() == [[16], [100]]


def test_bernstein_wins_for_large_n() -> None:
    p_hat = np.array([[[0.1, 0.9]]])
    n = np.array([[10_000]])
    L = math.log(4 / 0.01)
    bern = math.sqrt(2 * 0.09 * L / 10_000) + 2 * L / 30_000
    hoef = math.sqrt(L / 20_000)
    assert radius(p_hat, n, 0.01)[0, 0, 0] == pytest.approx(min(bern, hoef), rel=1e-12)
    assert bern < hoef


def test_unvisited_pairs_allow_everything() -> None:
    counts = np.zeros((3, 2, 3), dtype=int)
    counts[0, 0, 1] = 5
    cs = confidence_set(counts, 0.1)
    assert np.all(cs.beta[1:] == 1.0) and np.allclose(cs.p_hat[2, 1], 1 / 3)
    assert np.all(cs.lower[1:] == 0.0) and np.all(cs.upper[1:] == 1.0)
    any_kernel = np.zeros((3, 2, 3))
    any_kernel[..., 2] = 1.0
    any_kernel[0, 0] = [0, 1, 0]
    assert cs.contains(any_kernel)


def test_delta_splits() -> None:
    assert delta_p(0.1, 9, 4, 10, 1) == pytest.approx(0.1 / (12 * 3 * 81 * 4 * 10))
    assert delta_1(0.1, 9, 1, 500) == pytest.approx(0.1 / (4 * 2 * 9 * 500))
    with pytest.raises(CMDPInputError, match="delta"):
        delta_p(1.0, 9, 4, 10, 1)
    with pytest.raises(CMDPInputError, match="counts"):
        confidence_set(-np.ones((2, 1, 2)), 0.1)
    with pytest.raises(CMDPInputError, match="delta_prime"):
        confidence_set(np.ones((2, 1, 2)), 0.0)


def test_coverage_at_least_lemma_1() -> None:
    """Each entry lies in its interval w.p. >= 1 - delta' and the whole kernel
    w.p. >= 1 - |S|^2 |A| delta' (Lemma 1). 4000 trials with a fixed seed; the
    margin is 4 binomial standard deviations of the promised rate."""
    rng = np.random.default_rng(2024)
    m = random_cmdp(3, 2, 1, 0, seed=1)
    trials, n, dp = 4000, 30, 0.05
    entry_miss = 0
    whole_in = 0
    for _ in range(trials):
        counts = rng.multinomial(n, m.P)
        p_hat, nn = empirical_kernel(counts)
        beta = radius(p_hat, nn, dp)
        inside = np.abs(m.P - p_hat) <= beta
        entry_miss += int((~inside).sum())
        whole_in += bool(inside.all())
    entries = trials * m.P.size
    rate = entry_miss / entries
    assert rate <= dp + 4 * math.sqrt(dp * (1 - dp) / entries)
    promised = 1 - m.P.size * dp
    assert whole_in / trials >= promised - 4 * math.sqrt(0.25 / trials)


def test_box_from_counts_by_hand() -> None:
    """The learners' compiled box against the formulas evaluated by hand (S = 2, A = 2)."""
    counts = np.array([[[300, 100], [1, 0]], [[0, 0], [2, 2]]])  # n = 400, 1, 0, 4
    d = 0.01
    L4, L8 = math.log(4 / d), math.log(8 / d)

    def paper(p: float, n: int) -> float:
        return min(math.sqrt(2 * p * (1 - p) * L4 / n) + 2 * L4 / (3 * n), math.sqrt(L4 / (2 * n)))

    def eb(p: float, n: int) -> float:
        if n == 1:
            return math.sqrt(L8 / 2)
        v = n * p * (1 - p) / (n - 1)
        return min(math.sqrt(2 * v * L8 / n) + 7 * L8 / (3 * (n - 1)), math.sqrt(L8 / (2 * n)))

    for rule, beta in (("paper", paper), ("empirical-bernstein", eb)):
        box = Box.from_counts(counts, d, rule)
        for s, a in np.ndindex(2, 2):
            n = int(counts[s, a].sum())
            for j in range(2):
                p = counts[s, a, j] / n if n else 0.5
                b = beta(p, n) if n else 1.0
                lo, hi = min(max(p - b, 0.0), 1.0), min(max(p + b, 0.0), 1.0)
                assert box.lower[s, a, j] == pytest.approx(lo, rel=1e-12, abs=1e-15)
                assert box.upper[s, a, j] == pytest.approx(hi, rel=1e-12, abs=1e-15)
                assert box.room[s, a, j] == pytest.approx(hi - lo, rel=1e-12, abs=1e-15)
            assert box.spare[s, a] == pytest.approx(1 - box.lower[s, a].sum(), abs=1e-15)
        assert box.lower[0, 0, 0] > 0 and box.spare[0, 0] < 1  # a lower bound binds (n = 400)


@pytest.mark.parametrize(
    ("counts", "delta", "rule", "match"),
    [
        (np.zeros((2, 2, 3), dtype=int), 0.1, "paper", r"counts: expected shape \(S, A, S\)"),
        (np.full((2, 1, 2), -1), 0.1, "paper", r"counts\[0, 0, 0\]: must be a non-negative integer, got -1"),
        (np.full((2, 1, 2), 0.5), 0.1, "paper", r"counts\[0, 0, 0\]: must be a non-negative integer, got 0.5"),
        (np.zeros((0, 1, 0), dtype=int), 0.1, "paper", r"counts: expected shape \(S, A, S\), got \(0, 1, 0\)"),
        (np.zeros((2, 1, 2), dtype=int), 1.5, "paper", "delta_prime"),
        (np.zeros((2, 1, 2), dtype=int), np.full((3, 3), 0.1), "paper", "delta_prime"),
        (np.zeros((2, 1, 2), dtype=int), 0.1, "hoeffding", "rule: must be one of"),
    ],
)
def test_box_from_counts_refuses_bad_input(counts, delta, rule, match) -> None:
    with pytest.raises(CMDPInputError, match=match):
        Box.from_counts(counts, delta, rule)
