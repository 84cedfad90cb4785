"""The chunked forward passes (``column_stats``, ``column_distribution``, ``csr_forward_value_costs``)
against plain Python written here: the distribution pushed by dense matrix products (to 1e-12),
and a scatter loop over the same fixed chunks of source states (bit for bit), on 1 and 2 threads.
The models are small, so the thresholds are lowered: ``CHUNK_STATES`` (several chunks) and
``PARALLEL_MIN_ENTRIES`` (the threaded build really runs)."""

from __future__ import annotations

import numba
import numpy as np
import pytest
import scipy.sparse as sp

from cmdp_rl.evaluation.evaluate import csr_forward_value_costs
from cmdp_rl.kernels import csr, forward
from cmdp_rl.plumbing.threads import set_threads

S, A, B, H, N = 61, 3, 3, 5, 2


def _model(seed: int) -> tuple[sp.csr_array, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A random ``(S*A, S)`` CSR kernel (``B`` successors per pair, int64 indices as the planner
    passes them), a random policy ``(H, S, A)`` (some zeros), tables ``(S, A, 1 + N)`` and a
    random initial distribution."""
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(S * A), B)
    cols = np.concatenate([rng.choice(S, size=B, replace=False) for _ in range(S * A)])
    K = sp.csr_array((rng.random(S * A * B) + 0.1, (rows, cols)), shape=(S * A, S))
    K.data /= np.repeat(K.sum(axis=1), np.diff(K.indptr))
    K.indptr, K.indices = K.indptr.astype(np.int64), K.indices.astype(np.int64)
    policy = rng.random((H, S, A)) * (rng.random((H, S, A)) > 0.3)
    policy[..., 0] += 1e-3
    policy /= policy.sum(axis=2, keepdims=True)
    tables = rng.normal(size=(S, A, 1 + N))
    d0 = rng.random(S) * (rng.random(S) > 0.5)  # unreached states: the passes skip them
    d0[0] += 0.1
    return K, policy, tables, d0 / d0.sum(), rng.integers(0, A, size=(H, S)).astype(np.uint8)


def _chunked_python(K: sp.csr_array, policy: np.ndarray, tables: np.ndarray, d0: np.ndarray, chunks: int) -> tuple:
    """The forward pass in plain Python over ``chunks`` fixed chunks of source states: each chunk
    scatters its states in order into its own buffer, ``d_{h+1}(t)`` is the buffers summed in chunk
    order, and the tables' sums are the chunks' partial sums added in chunk order, chunk 0
    carrying the running total. Returns the sums ``(M,)`` and the distributions ``(H, S)``."""
    ip, ix, data = K.indptr.tolist(), K.indices.tolist(), K.data.tolist()
    size = -(-S // chunks)
    d = d0.tolist()
    total = [0.0] * tables.shape[2]
    dists = []
    for h in range(H):
        dists.append(list(d))
        bufs = [[0.0] * S for _ in range(chunks)]
        parts = [list(total)] + [[0.0] * len(total) for _ in range(chunks - 1)]
        for j in range(chunks):
            for s in range(j * size, min(S, (j + 1) * size)):
                if d[s] == 0.0:
                    continue
                for a in range(A):
                    q = d[s] * float(policy[h, s, a])
                    if q == 0.0:
                        continue
                    for m in range(len(total)):
                        parts[j][m] += q * float(tables[s, a, m])
                    for k in range(ip[s * A + a], ip[s * A + a + 1]):
                        bufs[j][ix[k]] += q * data[k]
        for m in range(len(total)):
            x = parts[0][m]
            for j in range(1, chunks):
                x += parts[j][m]
            total[m] = x
        d = list(bufs[0])
        for j in range(1, chunks):
            d = [d[t] + bufs[j][t] for t in range(S)]
    return np.array(total), np.array(dists)


def _dense(K: sp.csr_array, policy: np.ndarray, tables: np.ndarray, d0: np.ndarray) -> tuple:
    """The same pass by dense matrix products (another summation order): sums and distributions."""
    P = K.toarray().reshape(S, A, S)
    d, total, dists = d0.copy(), np.zeros(tables.shape[2]), []
    for h in range(H):
        dists.append(d)
        q = d[:, None] * policy[h]
        total = total + np.einsum("sa,sam->m", q, tables)
        d = np.einsum("sa,sat->t", q, P)
    return total, np.array(dists)


def _counts() -> list[int]:
    return [1, 2] if numba.config.NUMBA_NUM_THREADS >= 2 else [1]


def test_forward_chunks_depend_on_the_states_only() -> None:
    """One chunk below ``2 * CHUNK_STATES`` states, then one per ``CHUNK_STATES``, at most
    ``FORWARD_CHUNKS``, whatever the thread count."""
    c = forward.CHUNK_STATES
    assert [forward.forward_chunks(n) for n in (1, 2 * c - 1, 2 * c, 3 * c, 5 * c)] == [1, 1, 2, 3, 4]
    assert forward.forward_chunks(10**6) == forward.FORWARD_CHUNKS == 4
    try:
        set_threads(1)
        assert forward.forward_chunks(10**6) == 4
    finally:
        set_threads(None)


@pytest.mark.parametrize("chunk_states", [8, 10**6])
def test_deterministic_passes_are_bit_for_bit_the_chunked_scatter_on_any_thread_count(
    chunk_states: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``column_stats`` and ``column_distribution`` of a deterministic column: with 4 chunks of 16,
    16, 16 and 13 states (or one chunk: the plain scatter) equal to the chunked Python scatter bit for bit,
    on the serial build and on 1 and 2 threads, and to the dense products to 1e-12; ``columns_stats``
    row ``k`` is ``column_stats`` of column ``k``; the inputs are not modified."""
    monkeypatch.setattr(forward, "CHUNK_STATES", chunk_states)
    K, _, tables, d0, col = _model(0)
    chunks = forward.forward_chunks(S)
    assert chunks == (4 if chunk_states == 8 else 1)
    onehot = np.eye(A)[col]  # the column as a Markov table (H, S, A)
    want_stats, want_dist = _chunked_python(K, onehot, tables, d0, chunks)
    dense_stats, dense_dist = _dense(K, onehot, tables, d0)
    np.testing.assert_allclose(want_stats, dense_stats, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(want_dist, dense_dist, rtol=1e-12, atol=1e-15)
    before = (K.data.copy(), col.copy(), tables.copy(), d0.copy())
    got = [(csr.column_stats(K.indptr, K.indices, K.data, col, tables, d0), None)]  # serial build
    got[0] = (got[0][0], csr.column_distribution(K.indptr, K.indices, K.data, col, A, d0))
    monkeypatch.setattr(csr, "PARALLEL_MIN_ENTRIES", 0)
    try:
        for n in _counts():
            set_threads(n)
            stats = csr.column_stats(K.indptr, K.indices, K.data, col, tables, d0)
            got.append((stats, csr.column_distribution(K.indptr, K.indices, K.data, col, A, d0)))
            both = csr.columns_stats(K.indptr, K.indices, K.data, np.stack([col, col[::-1]]), tables, d0)
            assert np.array_equal(both[0], stats)
    finally:
        set_threads(None)
    for stats, dist in got:
        assert np.array_equal(stats, want_stats) and np.array_equal(dist, want_dist)
    for x, y in zip(before, (K.data, col, tables, d0), strict=True):
        assert np.array_equal(x, y)


@pytest.mark.parametrize("chunk_states", [8, 10**6])
def test_policy_pass_is_bit_for_bit_the_chunked_scatter_on_any_thread_count(
    chunk_states: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``csr_forward_value_costs`` of a randomized table from ``s0 = 4``: the chunked Python
    scatter bit for bit on the serial build and on 1 and 2 threads, the dense products to 1e-12."""
    monkeypatch.setattr(forward, "CHUNK_STATES", chunk_states)
    K, policy, tables, _, _ = _model(1)
    r, c = np.ascontiguousarray(tables[..., 0]), np.ascontiguousarray(np.moveaxis(tables[..., 1:], -1, 0))
    d0 = np.zeros(S)
    d0[4] = 1.0
    want, _ = _chunked_python(K, policy, tables, d0, forward.forward_chunks(S))
    np.testing.assert_allclose(want, _dense(K, policy, tables, d0)[0], rtol=1e-12, atol=1e-12)
    results = [csr_forward_value_costs(K.indptr, K.indices, K.data, policy, r, c, 4)]
    monkeypatch.setattr(csr, "PARALLEL_MIN_ENTRIES", 0)
    try:
        for n in _counts():
            set_threads(n)
            results.append(csr_forward_value_costs(K.indptr, K.indices, K.data, policy, r, c, 4))
    finally:
        set_threads(None)
    for value, costs in results:
        assert isinstance(value, float) and costs.shape == (N,)
        assert value == want[0] and np.array_equal(costs, want[1:])
