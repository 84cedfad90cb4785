"""One confidence-set type, two layouts: the constructors pick ``Box`` or ``SparseBox`` from the
counts, both hold the same set, and their sweeps agree with each other and, on a set of radius
0, with backward induction on the empirical kernel written here."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from cmdp_rl.confidence.box import Box
from cmdp_rl.confidence.counts import check_counts
from cmdp_rl.confidence.sets import (
    confidence_box,
    empirical_box,
    empirical_box_and_sums,
    radius_box,
    radius_sums,
    rule_box,
)
from cmdp_rl.confidence.sparse_box import SparseBox


def _counts(seed: int, S: int = 6, A: int = 2) -> np.ndarray:
    """Counts on a random support, one pair never visited."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 6, size=(S, A, S)) * (rng.random((S, A, S)) < 0.4)
    counts[1, 1] = 0
    return counts


def _sparse(counts: np.ndarray) -> sp.csr_array:
    S, A, _ = counts.shape
    return sp.csr_array(counts.reshape(S * A, S))


def _p_hat(counts: np.ndarray) -> np.ndarray:
    n = counts.sum(axis=-1, keepdims=True)
    return np.where(n > 0, counts / np.maximum(n, 1), 1.0 / counts.shape[-1])


def _bounds(box: Box | SparseBox) -> tuple[np.ndarray, np.ndarray]:
    dense = box.to_box()
    return dense.lower, dense.upper


@pytest.mark.parametrize("rule", ["paper", "empirical-bernstein"])
def test_confidence_box_picks_the_layout_and_both_hold_the_same_set(rule: str) -> None:
    counts = _counts(0)
    dense = confidence_box(counts, 0.05, rule)
    sparse = confidence_box(_sparse(counts), 0.05, rule)
    assert isinstance(dense, Box) and isinstance(sparse, SparseBox)
    for a, b in zip(_bounds(dense), _bounds(sparse), strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-15)
    d = np.full((6, 2), 0.05)  # the certificates' set: per-pair delta', plain NumPy on the dense layout
    ruled = [_bounds(rule_box(check_counts(c)[0], d, rule)) for c in (counts, _sparse(counts))]
    for a, b, c in zip(*ruled, _bounds(dense), strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-15)
        np.testing.assert_allclose(a, c, rtol=0, atol=1e-15)


def test_radius_box_and_radius_sums_follow_the_entry_rule_in_either_layout() -> None:
    counts = _counts(1)

    def beta(p: np.ndarray, n: np.ndarray) -> np.ndarray:
        return np.where(n > 0, 0.1 + 0.5 * p, 1.0)

    p_hat = _p_hat(counts)
    n = counts.sum(axis=-1, keepdims=True)
    want_beta = np.where(n > 0, 0.1 + 0.5 * p_hat, 1.0)
    for c in (counts, _sparse(counts)):
        lower, upper = _bounds(radius_box(c, beta))
        np.testing.assert_allclose(lower, np.clip(p_hat - want_beta, 0, 1), atol=1e-15)
        np.testing.assert_allclose(upper, np.clip(p_hat + want_beta, 0, 1), atol=1e-15)
        np.testing.assert_allclose(radius_sums(c, beta), want_beta.sum(axis=-1), rtol=1e-14)


@pytest.mark.parametrize("layout", ["dense", "sparse"])
def test_radius_zero_sweeps_are_backward_induction_on_p_hat(layout: str) -> None:
    counts = _counts(2)
    S, A, H = 6, 2, 4
    box = empirical_box(counts if layout == "dense" else _sparse(counts))
    P = _p_hat(counts)
    rng = np.random.default_rng(5)
    reward = rng.random((S, A))
    V = rng.random(S)
    np.testing.assert_allclose(box.fill(V), P @ V, atol=1e-14)
    np.testing.assert_allclose(box.fill(V, upper=False), P @ V, atol=1e-14)
    # the optimal sweep: V_h = max_a reward + P V_{h+1}
    want = np.zeros((H + 1, S))
    for h in range(H - 1, -1, -1):
        want[h] = (reward + P @ want[h + 1]).max(axis=1)
    values, actions = box.robust_sweep(reward, H)
    np.testing.assert_allclose(values, want, atol=1e-13)
    np.testing.assert_array_equal(actions[0], (reward + P @ want[1]).argmax(axis=1))
    # a fixed policy: the robust values of every table are its values on p_hat
    policy = rng.random((H, S, A))
    policy /= policy.sum(axis=-1, keepdims=True)
    tables = np.stack([reward, 1 - reward])
    got = box.robust_values(policy, tables, np.array([True, False]))
    for t in range(2):
        v = np.zeros(S)
        for h in range(H - 1, -1, -1):
            v = (policy[h] * (tables[t] + P @ v)).sum(axis=1)
        np.testing.assert_allclose(got[t], v, atol=1e-13)


def test_both_layouts_sweep_alike_with_radii() -> None:
    counts = _counts(3)
    S, A, H = 6, 2, 5
    dense = confidence_box(counts, 0.1, "empirical-bernstein")
    sparse = confidence_box(_sparse(counts), 0.1, "empirical-bernstein")
    rng = np.random.default_rng(7)
    cost = rng.random((S, A))
    for upper in (True, False):
        for maximize in (True, False):
            vd, ad = dense.robust_sweep(cost, H, upper=upper, maximize=maximize)
            vs, as_ = sparse.robust_sweep(cost, H, upper=upper, maximize=maximize)
            np.testing.assert_allclose(vd, vs, atol=1e-12)
            np.testing.assert_array_equal(ad, as_)
    V = rng.random(S)
    assert np.all(dense.fill(V) >= dense.fill(V, upper=False) - 1e-15)
    np.testing.assert_allclose(dense.fill(V), sparse.fill(V), atol=1e-13)
    assert dense.nbytes == 3 * S * A * S * 8 + S * A * 8


@pytest.mark.parametrize("layout", ["dense", "sparse"])
def test_empirical_box_and_sums_at_once_equal_the_two_calls(layout: str) -> None:
    counts = _counts(2)
    given = counts if layout == "dense" else _sparse(counts)

    def beta(p: np.ndarray, n: np.ndarray) -> np.ndarray:
        return np.where(n > 0, 0.2 + 0.3 * p, 1.0)

    box, sums = empirical_box_and_sums(given, beta)
    assert type(box) is type(empirical_box(given))
    for a, b in zip(_bounds(box), _bounds(empirical_box(given)), strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(sums, radius_sums(given, beta))
    n = counts.sum(axis=-1, keepdims=True)  # and the sums are the rule's, from p_hat written here
    np.testing.assert_allclose(sums, np.where(n > 0, 0.2 + 0.3 * _p_hat(counts), 1.0).sum(axis=-1), rtol=1e-14)
