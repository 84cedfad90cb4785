"""Sparse models (DESIGN section 16): construction, validation, the dense/sparse views, and the
samplers (generative model, episodic environment, Gymnasium adapter) on a sparse kernel."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import chi2

from cmdp_rl import CMDP, CMDPInputError, EpisodicEnv, GenerativeModel, random_cmdp
from cmdp_rl.envs.generators import garnet_kernel
from cmdp_rl.envs.gym_env import CMDPEnv
from cmdp_rl.kernels.sampling import cumulative_csr, multinomial_csr, rollout_csr
from cmdp_rl.model.sparse import MAX_DENSE_BYTES, dense_bytes


def _parts(rng: np.random.Generator, S: int, A: int, N: int = 1) -> tuple[np.ndarray, np.ndarray]:
    return rng.random((S, A)), rng.random((N, S, A))


def _sparse_model(S: int = 12, A: int = 3, b: int = 3, H: int = 6, seed: int = 0) -> CMDP:
    rng = np.random.default_rng(seed)
    K = garnet_kernel(S, A, b, rng)
    r, c = _parts(rng, S, A)
    return CMDP(K, r, c, [H / 2], s0=1, H=H)


def _same_csr(X: sp.csr_array, Y: sp.csr_array) -> bool:
    return (
        X.shape == Y.shape
        and np.array_equal(X.indptr, Y.indptr)
        and np.array_equal(X.indices, Y.indices)
        and np.array_equal(X.data, Y.data)
    )


def _huge() -> CMDP:
    """A sparse model whose dense kernel is refused (above MAX_DENSE_BYTES): S = 6,000, A = 1, a ring."""
    S = 6000
    assert dense_bytes(S, 1) > MAX_DENSE_BYTES
    rows = np.repeat(np.arange(S), 2)
    cols = np.stack([np.arange(S), (np.arange(S) + 1) % S], axis=1).ravel()
    K = sp.csr_array((np.full(2 * S, 0.5), (rows, cols)), shape=(S, S))
    return CMDP(K, np.zeros((S, 1)), None, None, s0=0, H=5)


# ---------------------------------------------------------------- construction and validation


@pytest.mark.parametrize(
    "convert",
    [
        sp.csr_array,
        sp.csc_array,
        sp.coo_array,
        sp.lil_array,
        sp.dok_array,
        sp.csr_matrix,
        sp.csc_matrix,
        sp.coo_matrix,
        sp.lil_matrix,
        sp.dok_matrix,
    ],
)
def test_every_sparse_format_gives_the_same_K(convert) -> None:
    dense = random_cmdp(8, 3, 4, 1, seed=2, support=3)
    P2 = dense.P.reshape(8 * 3, 8)
    m = CMDP(convert(P2), dense.r, dense.c, dense.c_bar, dense.s0, dense.H)
    assert m.is_sparse and (m.S, m.A, m.N) == (8, 3, 1)
    assert isinstance(m.K, sp.csr_array) and m.K.has_sorted_indices
    assert m.K.indices.dtype == np.int64 and m.K.indptr.dtype == np.int64
    assert not any(a.flags.writeable for a in (m.K.data, m.K.indices, m.K.indptr))
    assert _same_csr(m.K, dense.K)
    assert m.kernel is m.K and m.nnz == int(np.count_nonzero(dense.P))
    assert np.array_equal(m.to_dense().P, dense.P)
    assert _same_csr(dense.to_sparse().K, m.K)


def _coo(rows, cols, vals, shape) -> sp.coo_array:
    return sp.coo_array((np.asarray(vals, dtype=float), (np.asarray(rows), np.asarray(cols))), shape=shape)


@pytest.mark.parametrize(
    "K, match",
    [
        (sp.csr_array(np.ones((7, 3)) / 3), r"rows must be a positive multiple of the 3 columns"),
        (sp.csr_array((0, 3)), r"S >= 1 and A >= 1, got \(0, 3\)"),
        (_coo([0, 1, 2, 3], [0, 1, 0, 1], [1, np.nan, 1, 1], (4, 2)), r"P\[1, 1\] .*must be finite"),
        (_coo([0, 0, 1, 2, 3], [0, 1, 1, 0, 1], [1.5, -0.5, 1, 1, 1], (4, 2)), r"P\[0, 1\] .*non-negative"),
        (_coo([0, 1, 2, 3], [0, 1, 0, 1], [1, 0.9, 1, 1], (4, 2)), r"P\[1, :\] \(state 0, action 1\): .*sum to 1"),
        (_coo([0, 1, 2, 2, 3, 3], [0, 1, 1, 0, 1, 1], [1, 1, 0.5, 0.5, 0.5, 0.5], (4, 2)), r"P\[3, 1\] .*duplicate"),
        (
            sp.csr_array((np.array([1.0, 0.25, 0.75, 0.5, 0.5]), np.array([0, 1, 1, 0, 0]), [0, 1, 3, 4, 5]), (4, 2)),
            r"P\[1, 1\] \(state 0, action 1\): duplicate entry",
        ),
    ],
    ids=["rows-not-multiple", "empty", "non-finite", "negative", "row-sum", "coo-duplicate", "csr-duplicate"],
)
def test_sparse_validation_is_one_line(K, match: str) -> None:
    S, A = K.shape[1], max(K.shape[0] // max(K.shape[1], 1), 1)
    with pytest.raises(CMDPInputError, match=match) as ex:
        CMDP(K, np.zeros((S, A)), None, None, 0, 2)
    assert "\n" not in str(ex.value)


def test_duplicates_name_the_first_duplicated_row_and_column() -> None:
    # entries (2, 1) and (1, 0) are both repeated; (1, 0) comes first in row order
    K = _coo([2, 1, 2, 1, 0, 3, 1], [1, 0, 1, 0, 0, 1, 1], [0.5, 0.25, 0.5, 0.25, 1, 1, 0.5], (4, 2))
    with pytest.raises(CMDPInputError, match=r"P\[1, 0\] \(state 0, action 1\): duplicate entry"):
        CMDP(K, np.zeros((2, 2)), None, None, 0, 2)


def test_wrong_sizes_of_r_and_s0_against_a_sparse_kernel() -> None:
    K = sp.csr_array(np.tile(np.eye(3), (2, 1)))  # S = 3, A = 2
    with pytest.raises(CMDPInputError, match=r"r: expected shape \(3, 2\)"):
        CMDP(K, np.zeros((2, 3)), None, None, 0, 2)
    with pytest.raises(CMDPInputError, match=r"s0: must be a state index in \[0, 2\]"):
        CMDP(K, np.zeros((3, 2)), None, None, 3, 2)


def test_explicit_zeros_are_dropped() -> None:
    data = np.array([1.0, 0.0, 0.0, 1.0, 0.5, 0.5, 0.0, 1.0])
    indices = np.array([0, 1, 0, 1, 0, 1, 0, 1])
    K = sp.csr_array((data, indices, np.array([0, 2, 4, 6, 8])), shape=(4, 2))
    m = CMDP(K, np.zeros((2, 2)), None, None, 0, 2)
    assert m.nnz == 5 and np.all(m.K.data > 0)
    assert np.array_equal(m.to_dense().P.reshape(4, 2), K.toarray())


def test_P_is_refused_for_a_sparse_model_naming_K() -> None:
    m = _sparse_model()
    with pytest.raises(CMDPInputError, match=r"cmdp\.P: .*sparse.*use cmdp\.K") as ex:
        _ = m.P
    assert "\n" not in str(ex.value)


def test_dense_model_K_is_built_once_and_equals_P() -> None:
    m = random_cmdp(9, 4, 3, 2, seed=5, support=3)
    assert not m.is_sparse
    K = m.K
    assert m.K is K  # cached
    assert isinstance(K, sp.csr_array) and K.shape == (36, 9)
    assert np.array_equal(K.toarray().reshape(9, 4, 9), m.P)
    assert not K.data.flags.writeable and m.kernel is m.P


def test_inputs_are_not_modified_or_shared() -> None:
    rng = np.random.default_rng(3)
    K = garnet_kernel(10, 2, 3, rng)
    # column indices unsorted within each row: the model sorts its own copy, the input stays as given
    perm = np.concatenate([np.arange(K.indptr[i], K.indptr[i + 1])[::-1] for i in range(20)])
    K = sp.csr_array((K.data[perm], K.indices[perm], K.indptr), shape=K.shape)
    assert np.any(np.diff(K.indices[:3]) < 0)
    before = (K.data.copy(), K.indices.copy(), K.indptr.copy())
    r, c = _parts(rng, 10, 2)
    r0, c0 = r.copy(), c.copy()
    m = CMDP(K, r, c, [1.0], 0, 3)
    assert m.K.has_sorted_indices and np.all(np.diff(m.K.indices[:3]) > 0)
    for got, want in zip((K.data, K.indices, K.indptr), before, strict=True):
        assert np.array_equal(got, want)
    assert np.array_equal(r, r0) and np.array_equal(c, c0)
    for arr in (m.K.data, m.K.indices, m.K.indptr):
        assert not any(np.shares_memory(arr, x) for x in (K.data, K.indices, K.indptr))
    K.data[:] = 0.0  # later writes to the input do not reach the model
    assert np.allclose(np.asarray(m.K.sum(axis=1)).ravel(), 1.0)


def test_dense_kernel_refuses_a_large_sparse_model() -> None:
    m = _huge()
    with pytest.raises(CMDPInputError, match=r"my_function needs a dense \(S, A, S\) kernel") as ex:
        m.dense_kernel("my_function")
    assert "\n" not in str(ex.value)
    small = _sparse_model()
    assert np.array_equal(small.dense_kernel("x"), small.to_dense().P)


# ---------------------------------------------------------------- samplers on a sparse model


@pytest.mark.parametrize("seed", [0, 1])
def test_generative_model_draws_equal_the_dense_twin(seed: int) -> None:
    m = _sparse_model(seed=seed)
    d = m.to_dense()
    gs, gd = GenerativeModel(m, np.random.default_rng(seed)), GenerativeModel(d, np.random.default_rng(seed))
    for s, a in [(0, 0), (3, 2), (11, 1)]:
        assert np.array_equal(gs.sample(s, a, 300), gd.sample(s, a, 300))
    assert gs.samples_drawn == gd.samples_drawn == 900


def test_episodic_env_equals_the_dense_twin_step_and_rollout() -> None:
    m = _sparse_model(seed=4)
    d = m.to_dense()
    es, ed = EpisodicEnv(m, np.random.default_rng(7)), EpisodicEnv(d, np.random.default_rng(7))
    es.reset(), ed.reset()
    for t in range(m.H):
        xs, xd = es.step(t % m.A), ed.step(t % m.A)
        assert xs[0] == xd[0] and xs[1] == xd[1] and np.array_equal(xs[2], xd[2]) and xs[3] == xd[3]
    policy = np.random.default_rng(1).dirichlet(np.ones(m.A), size=(m.H, m.S))
    cs = np.zeros((m.S, m.A, m.S), dtype=np.int64)
    cd = cs.copy()
    entry = np.zeros(m.nnz, dtype=np.int64)
    es2 = EpisodicEnv(m, np.random.default_rng(8))
    for _ in range(40):
        out_s, out_d = es.rollout(policy, cs), ed.rollout(policy, cd)
        for x, y in zip(out_s, out_d, strict=True):
            assert np.array_equal(x, y)
        es2.rollout(policy, entry)
    assert np.array_equal(cs, cd) and cs.sum() == 40 * m.H
    assert entry.sum() == 40 * m.H
    assert es.samples_drawn == ed.samples_drawn and (es.state, es.t) == (ed.state, ed.t)
    # the compiled dense rollouts' cumulative kernel: built on demand, equal to the dense twin's
    assert np.array_equal(es.cum_kernel, ed.cum_kernel) and es.cum_kernel is es.cum_kernel


def test_rollouts_stay_on_the_support_of_K() -> None:
    m = _sparse_model(S=40, A=3, b=2, H=25, seed=9)
    env = EpisodicEnv(m, np.random.default_rng(0))
    policy = np.full((m.H, m.S, m.A), 1.0 / m.A)
    entry = np.zeros(m.nnz, dtype=np.int64)
    Kd = m.K.toarray()
    for _ in range(30):
        states, actions, nexts = env.rollout(policy, entry)
        assert states[0] == m.s0 and np.array_equal(states[1:], nexts[:-1])
        assert np.all(Kd[states * m.A + actions, nexts] > 0)
    # per-entry counts land on K's entries: as a CSR they have K's structure and sum to the steps
    counts = sp.csr_array((entry, m.K.indices, m.K.indptr), shape=m.K.shape)
    assert counts.sum() == 30 * m.H and np.all(Kd[counts.toarray() > 0] > 0)


def test_rollout_checks_counts_and_policy_shapes() -> None:
    m = _sparse_model()
    env = EpisodicEnv(m, np.random.default_rng(0))
    policy = np.full((m.H, m.S, m.A), 1.0 / m.A)
    with pytest.raises(CMDPInputError, match=r"counts: expected a contiguous int64 array"):
        env.rollout(policy, np.zeros(m.nnz + 1, dtype=np.int64))
    with pytest.raises(CMDPInputError, match=r"counts: expected"):
        env.rollout(policy, np.zeros(m.nnz, dtype=np.float64))
    with pytest.raises(CMDPInputError, match=r"policy: shape"):
        env.rollout(policy[:, :-1], None)
    cum = cumulative_csr(m.K)
    with pytest.raises(CMDPInputError, match=r"u: expected shape"):
        rollout_csr(policy, m.K, cum, 0, np.zeros((m.H, 3)))
    with pytest.raises(CMDPInputError, match=r"cum_data: expected shape"):
        rollout_csr(policy, m.K, cum[:-1], 0, np.zeros((m.H, 2)))


def test_gym_adapter_equals_the_dense_twin() -> None:
    from gymnasium.utils.env_checker import check_env

    m = _sparse_model(seed=2)
    gs, gd = CMDPEnv(m), CMDPEnv(m.to_dense())
    gs.reset(seed=5), gd.reset(seed=5)
    for t in range(m.H):
        xs, xd = gs.step(t % m.A), gd.step(t % m.A)
        assert xs[0] == xd[0] and xs[1] == xd[1] and xs[3] == xd[3]
        assert np.array_equal(xs[4]["cost"], xd[4]["cost"])
    check_env(CMDPEnv(m), skip_render_check=True)


def test_samplers_never_densify_a_large_sparse_model() -> None:
    m = _huge()  # any (S, A, S) array of it is refused (and cmdp.P raises)
    g = GenerativeModel(m, np.random.default_rng(0))
    assert set(g.sample(17, 0, 50).tolist()) <= {17, 18}
    counts = g.sample_counts(3)
    assert counts.shape == (6000, 6000) and counts.sum() == 3 * 6000
    env = EpisodicEnv(m, np.random.default_rng(0))
    states, _, nexts = env.rollout(np.ones((m.H, m.S, 1)), np.zeros(m.nnz, dtype=np.int64))
    assert np.all((nexts - states) % m.S <= 1)
    gym_env = CMDPEnv(m)
    gym_env.reset(seed=0)
    assert gym_env.step(0)[0] in (0, 1)
    with pytest.raises(CMDPInputError, match=r"EpisodicEnv\.cum_kernel needs a dense"):
        _ = env.cum_kernel


def test_sample_counts_is_csr_with_the_structure_of_K() -> None:
    m = _sparse_model(S=15, A=2, b=4, seed=3)
    g = GenerativeModel(m, np.random.default_rng(0))
    counts = g.sample_counts(25)
    assert isinstance(counts, sp.csr_array) and counts.shape == (30, 15) and counts.dtype == np.int64
    assert np.array_equal(counts.indptr, m.K.indptr) and np.array_equal(counts.indices, m.K.indices)
    assert np.all(np.asarray(counts.sum(axis=1)).ravel() == 25) and np.all(counts.data >= 0)
    assert g.samples_drawn == 25 * 30
    assert not np.shares_memory(counts.indices, m.K.indices)
    dense_counts = GenerativeModel(m.to_dense(), np.random.default_rng(0)).sample_counts(25)
    assert isinstance(dense_counts, np.ndarray) and dense_counts.shape == (15, 2, 15)  # dense: unchanged
    with pytest.raises(CMDPInputError, match=r"n: "):
        g.sample_counts(0)


def _chi2_rows(counts: np.ndarray, probs: np.ndarray, n: int) -> tuple[float, int]:
    """Pearson statistic summed over rows (support entries only) and its degrees of freedom."""
    mask = probs > 0
    expected = n * probs[mask]
    stat = float(np.sum((counts[mask] - expected) ** 2 / expected))
    return stat, int(mask.sum() - probs.shape[0])


def test_sample_counts_has_the_kernel_distribution() -> None:
    m = _sparse_model(S=10, A=3, b=4, seed=6)
    n = 4000
    Kd = m.K.toarray()
    sparse_counts = GenerativeModel(m, np.random.default_rng(11)).sample_counts(n).toarray()
    dense_counts = GenerativeModel(m.to_dense(), np.random.default_rng(11)).sample_counts(n).reshape(30, 10)
    for counts in (sparse_counts, dense_counts):
        assert np.all(counts[Kd == 0] == 0)
        stat, df = _chi2_rows(counts, Kd, n)
        assert stat < chi2.ppf(0.9999, df), (stat, df)
    # the two samplers against each other (a two-sample homogeneity test over every row)
    both = sparse_counts + dense_counts
    mask = Kd > 0
    expected = both[mask] / 2.0
    stat = float(np.sum((sparse_counts[mask] - expected) ** 2 / expected))
    assert stat < chi2.ppf(0.9999, int(mask.sum() - 30))


def test_multinomial_csr_rows_of_different_lengths() -> None:
    S, A = 5, 2
    rows = [0, 1, 1, 2, 2, 2, 2, 2, 3, 4, 5, 6, 7, 8, 9]
    cols = [2, 0, 4, 0, 1, 2, 3, 4, 3, 1, 0, 1, 2, 3, 4]
    vals = [1.0, 0.5, 0.5, 1e-12, 0.25, 0.25, 0.25, 0.25 - 1e-12, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    m = CMDP(
        sp.csr_array((np.array(vals), (np.array(rows), np.array(cols))), shape=(S * A, S)),
        np.zeros((S, A)),
        None,
        None,
        0,
        1,
    )
    n = 20000
    counts = multinomial_csr(np.random.default_rng(0), n, m.K)
    assert np.all(np.asarray(counts.sum(axis=1)).ravel() == n)
    row2 = counts.toarray()[2]
    assert row2[0] <= 3 and np.all(np.abs(row2[1:] - n / 4) < 5 * np.sqrt(n * 0.25 * 0.75))
    assert counts.toarray()[0, 2] == n and counts.toarray()[3, 3] == n


@pytest.mark.parametrize(
    "rows, cols, vals, match",
    [
        ([0, 1, 2, 3], [0, 1, 0, 1], [1, np.nan, 1, 1], r"P\[1, 1\] .*must be finite"),
        ([0, 0, 1, 2, 3], [0, 1, 1, 0, 1], [1.5, -0.5, 1, 1, 1], r"P\[0, 1\] .*non-negative"),
        ([0, 1, 2, 3], [0, 1, 0, 1], [1, 0.9, 1, 1], r"P\[1, :\] \(state 0, action 1\): .*sum to 1"),
    ],
    ids=["non-finite", "negative", "row-sum"],
)
def test_a_canonical_csr_kernel_is_checked_by_the_same_rules(rows, cols, vals, match: str) -> None:
    # a canonical CSR input is read without a sorted COO copy (model/sparse.py): same rules, same messages
    K = _coo(rows, cols, vals, (4, 2)).tocsr()
    assert K.has_canonical_format
    with pytest.raises(CMDPInputError, match=match):
        CMDP(K, np.zeros((2, 2)), None, None, 0, 2)


def test_a_canonical_csr_kernel_gives_the_kernel_of_its_shuffled_coo_twin() -> None:
    dense = random_cmdp(9, 3, 4, 1, seed=5, support=3)
    csr = sp.csr_array(dense.P.reshape(27, 9))
    coo = csr.tocoo()
    order = np.random.default_rng(0).permutation(coo.nnz)
    twin = sp.coo_array((coo.data[order], (coo.row[order], coo.col[order])), shape=coo.shape)
    before = (csr.data.copy(), csr.indices.copy(), csr.indptr.copy())
    a = CMDP(csr, dense.r, dense.c, dense.c_bar, dense.s0, dense.H)
    b = CMDP(twin, dense.r, dense.c, dense.c_bar, dense.s0, dense.H)
    assert _same_csr(a.K, b.K) and a.K.data is not csr.data
    assert all(np.array_equal(x, y) for x, y in zip(before, (csr.data, csr.indices, csr.indptr), strict=True))
