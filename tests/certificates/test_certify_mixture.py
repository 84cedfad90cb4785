"""Certificates of a compact policy: the weighted sum of its columns' bounds."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from cmdp_rl import certify, evaluate, random_cmdp, solve
from cmdp_rl.evaluation.mixture import mixture_policy
from cmdp_rl.learners.environment import GenerativeModel
from cmdp_rl.plumbing.validation import CMDPInputError


@pytest.fixture(scope="module")
def case() -> tuple:
    """A model, the mixture of its fast plan (two columns or more) and counts of 40 samples per pair."""
    m = random_cmdp(8, 3, 5, 2, 2, support=3)
    plan = solve(m, method="fast")
    assert plan.columns is not None and plan.columns.shape[0] >= 2
    counts = GenerativeModel(m, np.random.default_rng(1)).sample_counts(40)
    return m, plan, mixture_policy(plan.columns, plan.weights, m.A), counts


def _args(m: object) -> tuple:
    return m.r, m.c, m.c_bar, m.s0, m.H  # type: ignore[attr-defined]


def test_mixture_bound_is_the_weighted_column_bounds(case: tuple) -> None:
    """Each bound equals sum_k w_k (bound of column k), each column certified on its own as a
    one-hot (H, S, A) table through the dense-policy path (a second computation)."""
    m, _, mix, counts = case
    cert = certify(mix, counts, *_args(m))
    singles = [certify(np.eye(m.A)[col.astype(np.int64)], counts, *_args(m)) for col in mix.columns]
    w = mix.weights
    assert cert.value_lo == pytest.approx(sum(wk * c.value_lo for wk, c in zip(w, singles, strict=True)), abs=1e-12)
    assert cert.value_hi == pytest.approx(sum(wk * c.value_hi for wk, c in zip(w, singles, strict=True)), abs=1e-12)
    np.testing.assert_allclose(cert.cost_lo, sum(wk * c.cost_lo for wk, c in zip(w, singles, strict=True)), atol=1e-12)
    np.testing.assert_allclose(cert.cost_hi, sum(wk * c.cost_hi for wk, c in zip(w, singles, strict=True)), atol=1e-12)
    assert cert.safe == bool(np.all(cert.cost_hi <= m.c_bar))
    assert cert.samples == int(counts.sum())


def test_mixture_bound_contains_the_true_values(case: tuple) -> None:
    """The true value and costs of the mixture (exact evaluation on the true kernel) lie inside
    its certified intervals, for a plan given directly too (its columns used, same certificate)."""
    m, plan, mix, counts = case
    cert = certify(plan, counts, *_args(m))
    same = certify(mix, counts, *_args(m))
    assert (cert.value_lo, cert.value_hi) == (same.value_lo, same.value_hi)
    true = evaluate(m, mix)
    assert cert.value_lo <= true.value <= cert.value_hi
    assert np.all(cert.cost_lo <= true.costs) and np.all(true.costs <= cert.cost_hi)
    assert cert.value_hi - cert.value_lo < m.H  # informative, not the trivial interval


def test_sparse_counts_give_the_same_certificate(case: tuple) -> None:
    m, _, mix, counts = case
    dense = certify(mix, counts, *_args(m))
    csr = certify(mix, sp.csr_array(counts.reshape(m.S * m.A, m.S)), *_args(m))
    assert csr.value_lo == pytest.approx(dense.value_lo, abs=1e-12)
    np.testing.assert_allclose(csr.cost_hi, dense.cost_hi, atol=1e-12)


def test_mixture_that_does_not_fit_is_refused(case: tuple) -> None:
    m, _, mix, counts = case
    with pytest.raises(CMDPInputError, match=r"policy: expected columns of shape \(K, 5, 8\)"):
        certify(mixture_policy(mix.columns[:, 1:], mix.weights), counts, *_args(m))
    with pytest.raises(CMDPInputError, match="plays action 3, there are A = 3"):
        certify(mixture_policy(np.full_like(mix.columns, 3), mix.weights), counts, *_args(m))
