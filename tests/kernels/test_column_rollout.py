"""Episodes of a deterministic column, and the column draw of a mixture."""

from __future__ import annotations

import numpy as np
import pytest

from cmdp_rl import random_cmdp
from cmdp_rl.kernels.column_rollout import draw_columns, rollout_column
from cmdp_rl.kernels.sampling import cumulative, cumulative_csr, rollout, rollout_csr
from cmdp_rl.plumbing.validation import CMDPInputError


def test_draw_columns_by_hand() -> None:
    """Weights (0.25, 0, 0.75): cumulative (0.25, 0.25, 1); u < 0.25 draws 0, else 2 (never the
    column of weight 0, even at the boundary)."""
    got = draw_columns(np.array([0.25, 0.0, 0.75]), np.array([0.0, 0.2499, 0.25, 0.5, 0.999999]))
    np.testing.assert_array_equal(got, [0, 0, 2, 2, 2])


def test_draw_columns_frequencies_match_weights() -> None:
    """4,000 draws: each column's frequency within 4 binomial standard errors of its weight."""
    w = np.array([0.1, 0.6, 0.3])
    n = 4000
    freq = np.bincount(draw_columns(w, np.random.default_rng(3).random(n)), minlength=3) / n
    assert np.all(np.abs(freq - w) <= 4 * np.sqrt(w * (1 - w) / n))


@pytest.mark.parametrize("sparse", [False, True])
def test_column_episode_is_the_one_hot_tables_episode(sparse: bool) -> None:
    """With the same uniforms, a column's episode is the randomized rollout's with the column's
    one-hot table (its action draw always picks the one action), dense and CSR, counts included."""
    m = random_cmdp(7, 3, 6, 1, 4, support=3)
    rng = np.random.default_rng(0)
    acts = rng.integers(0, 3, size=(6, 7)).astype(np.uint8)
    table = np.eye(3)[acts]
    for _ in range(5):
        u = rng.random((6, 2))
        if sparse:
            K = m.to_sparse().K
            cum = cumulative_csr(K)
            c1, c2 = np.zeros(K.nnz, dtype=np.int64), np.zeros(K.nnz, dtype=np.int64)
            got = rollout_column(acts, cum, 2, u, c1, K)
            want = rollout_csr(table, K, cum, 2, u, c2)
        else:
            cum = cumulative(m.P)
            c1, c2 = np.zeros((7, 3, 7), dtype=np.int64), np.zeros((7, 3, 7), dtype=np.int64)
            got = rollout_column(acts, cum, 2, u, c1)
            want = rollout(table, cum, 2, u, c2)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(c1, c2)
        assert c1.sum() == 6


def test_refusals() -> None:
    m = random_cmdp(4, 2, 3, 1, 0)
    cum = cumulative(m.P)
    acts = np.zeros((3, 4), dtype=np.int64)
    with pytest.raises(CMDPInputError, match="weights"):
        draw_columns(np.array([0.0, 0.0]), np.array([0.5]))
    with pytest.raises(CMDPInputError, match="u: uniforms"):
        draw_columns(np.array([1.0]), np.array([1.0]))
    with pytest.raises(CMDPInputError, match="u: expected shape"):
        rollout_column(acts, cum, 0, np.zeros((2, 2)))
    with pytest.raises(CMDPInputError, match="s0"):
        rollout_column(acts, cum, 4, np.zeros((3, 2)))
    with pytest.raises(CMDPInputError, match="does not fit"):
        rollout_column(np.zeros((3, 5), dtype=np.int64), cum, 0, np.zeros((3, 2)))
    with pytest.raises(CMDPInputError, match="integer action table"):
        rollout_column(np.zeros((3, 4)), cum, 0, np.zeros((3, 2)))
    with pytest.raises(CMDPInputError, match="counts"):
        rollout_column(acts, cum, 0, np.zeros((3, 2)), np.zeros((4, 2, 4), dtype=np.int32))
