"""The one counts validator and the statistics of counts in either layout, against numbers worked
out by hand on a two-state, two-action example."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from cmdp_rl import CMDPInputError
from cmdp_rl.confidence.counts import check_counts, kernel_estimate, pair_counts, scaled_counts

#: n(s, a, s2): pair (0, 0) saw 3 then 1, pair (0, 1) nothing, (1, 0) 2 of next state 1, (1, 1) 1 and 1
DENSE = np.array([[[3, 1], [0, 0]], [[0, 2], [1, 1]]])


def _sparse(counts: np.ndarray) -> sp.csr_array:
    S, A, _ = counts.shape
    return sp.csr_array(counts.reshape(S * A, S))


def test_check_counts_picks_the_layout_and_copies() -> None:
    dense, S, A = check_counts(DENSE)
    assert (S, A) == (2, 2) and isinstance(dense, np.ndarray) and dense.dtype == np.float64
    np.testing.assert_array_equal(dense, DENSE)
    coo = sp.coo_array(([2.0, 1.0, 1.0], ([0, 0, 3], [0, 0, 1])), shape=(4, 2))  # (0, 0) -> 0 listed twice
    csr, S, A = check_counts(coo)
    assert (S, A) == (2, 2) and isinstance(csr, sp.csr_array)
    np.testing.assert_array_equal(csr.toarray(), [[3, 0], [0, 0], [0, 0], [0, 1]])  # duplicates add up
    assert coo.nnz == 3  # the input is left as it was


@pytest.mark.parametrize(
    ("counts", "match"),
    [
        (np.array([[[1, -1]], [[0, 0]]]), r"counts\[0, 0, 1\]: must be a non-negative integer, got -1"),
        (np.array([[[0.5, 0]], [[0, 0]]]), r"counts\[0, 0, 0\]: must be a non-negative integer, got 0.5"),
        (np.zeros((2, 1, 3)), r"counts: expected shape \(S, A, S\)"),
        (sp.csr_array(np.array([[1.0, 0.0], [0.0, -2.0]])), r"counts\[1, 1\] \(state 1, action 0, next state 1\)"),
        (sp.csr_array(np.ones((3, 2))), r"counts: sparse counts have shape \(S\*A, S\)"),
    ],
)
def test_check_counts_names_the_entry_and_the_rule(counts: object, match: str) -> None:
    with pytest.raises(CMDPInputError, match=match):
        check_counts(counts)


@pytest.mark.parametrize("layout", ["dense", "sparse"])
def test_pair_counts_and_kernel_estimate(layout: str) -> None:
    counts = check_counts(DENSE if layout == "dense" else _sparse(DENSE))[0]
    np.testing.assert_array_equal(pair_counts(counts), [[4, 0], [2, 2]])
    p_hat = kernel_estimate(counts)
    rows = p_hat.toarray() if isinstance(p_hat, sp.csr_array) else p_hat.reshape(4, 2)
    np.testing.assert_array_equal(rows, [[0.75, 0.25], [0.5, 0.5], [0.0, 1.0], [0.5, 0.5]])  # (0, 1): uniform


def test_pair_counts_with_background_counts_every_unlisted_state() -> None:
    counts = check_counts(_sparse(DENSE))[0]
    background = np.array([0.0, 5.0, 1.0, 0.0])  # (0, 1) lists no state: 2 x 5; (1, 0) lists one: 1 x 1
    np.testing.assert_array_equal(pair_counts(counts, background), [[4, 10], [3, 2]])


def test_scaled_counts_spread_m_samples_as_the_empirical_kernel_in_either_layout() -> None:
    dense, background = scaled_counts(check_counts(DENSE)[0], 10.0)
    assert background is None
    np.testing.assert_array_equal(dense, [[[8, 2], [5, 5]], [[0, 10], [5, 5]]])  # round(7.5) = 8 (to even)
    csr, background = scaled_counts(check_counts(_sparse(DENSE))[0], 10.0)
    assert isinstance(csr, sp.csr_array) and background is not None
    np.testing.assert_array_equal(background, [0.0, 5.0, 0.0, 0.0])  # the unvisited pair's uniform row, implicit
    full = csr.toarray() + background[:, None] * (csr.toarray() == 0)
    np.testing.assert_array_equal(full, dense.reshape(4, 2))


def test_integer_counts_take_the_fast_path_with_the_same_rules() -> None:
    """Plain integer counts skip the element-wise checks (two reductions decide) and give what the
    general path gives: a float64 copy of their own."""
    dense, _, _ = check_counts(DENSE)
    general, _, _ = check_counts(DENSE.astype(np.float64))  # floats take the element-wise checks
    np.testing.assert_array_equal(dense, general)
    assert not np.shares_memory(dense, DENSE) and dense.flags.c_contiguous and dense.flags.writeable
    view = np.asfortranarray(DENSE)[:, :, :]  # a non-contiguous layout of the same numbers
    np.testing.assert_array_equal(check_counts(view)[0], DENSE)


def test_a_pair_one_above_2_53_is_refused_in_either_layout_although_its_float_sum_rounds() -> None:
    """2**52 + (2**52 + 1) = 2**53 + 1 rounds to 2**53 in float64: the pair is recounted exactly."""
    big = np.zeros((2, 1, 2), dtype=np.int64)
    big[1, 0] = [2**52, 2**52 + 1]
    assert float(big[1, 0].astype(np.float64).sum()) == 2.0**53  # the float sum hides the excess
    for given, where in ((big, r"counts\[1, 0, :\]"), (_sparse(big), r"counts\[1, :\] \(state 1, action 0\)")):
        with pytest.raises(CMDPInputError, match=where + r": holds 9007199254740993 samples, above 2\*\*53"):
            check_counts(given)
    exactly = big.copy()
    exactly[1, 0] = [2**52, 2**52]  # 2**53 samples: still exact, accepted
    assert check_counts(exactly)[0][1, 0].sum() == 2.0**53
    assert check_counts(_sparse(exactly))[0].sum() == 2.0**53
