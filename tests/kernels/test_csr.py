"""The CSR sweeps against plain NumPy written here from the definitions (dense kernels, loops over
``h`` only): backward induction for ``dp_sweep`` (the forward evaluation is tested in
``tests/evaluation/test_evaluate.py``)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from cmdp_rl.kernels.csr import dp_sweep


def _random_kernel(rng: np.random.Generator, S: int, A: int, zeros: float) -> np.ndarray:
    """``(S, A, S)`` rows on random supports (about ``zeros`` of the entries zero)."""
    P = rng.random((S, A, S)) * (rng.random((S, A, S)) > zeros)
    P[..., 0] += 1e-3  # no empty row
    return P / P.sum(axis=2, keepdims=True)


def _csr(P: np.ndarray) -> sp.csr_array:
    S, A, _ = P.shape
    return sp.csr_array(P.reshape(S * A, S))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dp_sweep_is_backward_induction(seed: int) -> None:
    rng = np.random.default_rng(seed)
    S, A, H = 7, 3, 5
    P = _random_kernel(rng, S, A, 0.6)
    reward = rng.normal(size=(S, A))
    K = _csr(P)
    V0, actions = dp_sweep(K.indptr, K.indices, K.data, reward, H)
    V = np.zeros(S)
    greedy = np.empty((H, S), dtype=int)
    for h in range(H - 1, -1, -1):
        Q = reward + P @ V
        greedy[h] = Q.argmax(axis=1)
        V = Q.max(axis=1)
    np.testing.assert_allclose(V0, V, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(actions, greedy)


@pytest.mark.parametrize("step_dependent", [False, True])
def test_kernel_entries_list_every_transition_of_each_step_in_either_layout(step_dependent: bool) -> None:
    """The non-zero transitions ``(h, s*A + a, s2, p)`` of the first steps, from the dense kernel
    (stationary or per step) and from the CSR twin of a stationary one, against a loop over entries."""
    from cmdp_rl.kernels.csr import kernel_entries

    rng = np.random.default_rng(3)
    S, A, steps = 5, 2, 3
    P = _random_kernel(rng, S, A, 0.6)
    dense = np.stack([_random_kernel(rng, S, A, 0.6) for _ in range(steps + 1)]) if step_dependent else P
    want = set()
    for h in range(steps):
        Ph = dense[h] if step_dependent else dense
        for s, a, s2 in np.ndindex(S, A, S):
            if Ph[s, a, s2] != 0.0:
                want.add((h, s * A + a, s2, float(Ph[s, a, s2])))
    layouts = [dense] if step_dependent else [dense, _csr(P)]
    for kernel in layouts:
        n_states, pairs, hh, xb, s2, vals = kernel_entries(kernel, steps)
        assert (n_states, pairs) == (S, S * A)
        got = list(zip(hh.tolist(), xb.tolist(), s2.tolist(), vals.tolist(), strict=True))
        assert len(got) == len(want) and set(got) == want
        assert hh.tolist() == sorted(hh.tolist())  # by step
    assert kernel_entries(P, 0)[2].size == 0


def _sparse_kernel(rng: np.random.Generator, S: int, A: int, b: int) -> sp.csr_array:
    """``(S*A, S)`` CSR kernel, ``b`` distinct random successors per pair (int64 index arrays, as
    the planner passes them)."""
    rows = np.repeat(np.arange(S * A), b)
    cols = np.concatenate([rng.choice(S, size=b, replace=False) for _ in range(S * A)])
    vals = rng.random(S * A * b) + 0.1
    K = sp.csr_array((vals, (rows, cols)), shape=(S * A, S))
    K.sum_duplicates()
    K.data /= np.repeat(K.sum(axis=1), np.diff(K.indptr))
    K.indptr, K.indices = K.indptr.astype(np.int64), K.indices.astype(np.int64)
    return K


def _serial_sweep(K: sp.csr_array, reward: np.ndarray, H: int) -> tuple[np.ndarray, np.ndarray]:
    """Backward induction in plain Python, each ``Q(s, a)`` summed in the kernel's order from
    ``reward[s, a]`` (the order the compiled sweep promises on every thread count)."""
    S, A = reward.shape
    ip, ix, data = K.indptr.tolist(), K.indices.tolist(), K.data.tolist()
    nxt = [0.0] * S
    actions = np.empty((H, S), dtype=np.int32)
    for h in range(H - 1, -1, -1):
        cur = [0.0] * S
        for s in range(S):
            best, best_a = -np.inf, 0
            for a in range(A):
                row = s * A + a
                q = float(reward[s, a])
                for k in range(ip[row], ip[row + 1]):
                    q += data[k] * nxt[ix[k]]
                if q > best:
                    best, best_a = q, a
            cur[s] = best
            actions[h, s] = best_a
        nxt = cur
    return np.array(nxt), actions


@pytest.mark.parametrize("seed", [0, 1])
def test_dp_sweep_is_bit_for_bit_the_same_on_one_and_two_threads(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Random sparse models (ties included: rewards on a coarse grid): ``V_0`` and the actions on 1
    and 2 threads are identical (``np.array_equal``) and equal to serial Python summing in the
    same order; the inputs are not modified. (The model is small: the threshold for threads is
    lowered to 0 so that 2 threads really run.)"""
    import numba

    from cmdp_rl.kernels import csr

    monkeypatch.setattr(csr, "PARALLEL_MIN_ENTRIES", 0)

    from cmdp_rl.plumbing.threads import set_threads

    rng = np.random.default_rng(seed)
    S, A, b, H = 300, 4, 3, 7
    K = _sparse_kernel(rng, S, A, b)
    reward = np.round(rng.normal(size=(S, A)), 1)
    before = (K.indptr.copy(), K.indices.copy(), K.data.copy(), reward.copy())
    want_v, want_a = _serial_sweep(K, reward, H)
    counts = [1, 2] if numba.config.NUMBA_NUM_THREADS >= 2 else [1]
    try:
        for n in counts:
            set_threads(n)
            V0, actions = dp_sweep(K.indptr, K.indices, K.data, reward, H)
            assert numba.get_num_threads() == n
            assert np.array_equal(V0, want_v) and np.array_equal(actions, want_a)
            assert actions.dtype == np.int32 and actions.shape == (H, S)
    finally:
        set_threads(None)
    for x, y in zip(before, (K.indptr, K.indices, K.data, reward), strict=True):
        assert np.array_equal(x, y)


def test_a_small_kernel_runs_the_serial_sweep(monkeypatch: pytest.MonkeyPatch) -> None:
    """Below ``PARALLEL_MIN_ENTRIES`` entries the sweep runs its serial build (no thread pool is
    started: a restricted environment, e.g. a file-size limit, then sees no threading layer's
    warnings), with the same bits as the serial Python sweep."""
    from cmdp_rl.kernels import csr

    def parallel(*args: object) -> None:
        raise AssertionError("the parallel build ran on a small kernel")

    monkeypatch.setattr(csr, "_dp_sweep", parallel)
    rng = np.random.default_rng(5)
    K = _sparse_kernel(rng, 20, 2, 2)
    assert K.nnz < csr.PARALLEL_MIN_ENTRIES
    reward = np.round(rng.normal(size=(20, 2)), 1)
    V0, actions = dp_sweep(K.indptr, K.indices, K.data, reward, 3)
    want_v, want_a = _serial_sweep(K, reward, 3)
    assert np.array_equal(V0, want_v) and np.array_equal(actions, want_a)


def _serial_lex(K: sp.csr_array, first: np.ndarray, second: np.ndarray, H: int, tol: float) -> tuple:
    """The lexicographic sweep in plain Python, each ``Q`` summed in the kernel's order: the best
    ``first`` value, then among the actions within ``tol`` of it the first with the largest ``second``."""
    S, A = first.shape
    ip, ix, data = K.indptr.tolist(), K.indices.tolist(), K.data.tolist()
    n1, n2 = [0.0] * S, [0.0] * S
    actions = np.empty((H, S), dtype=np.int32)
    for h in range(H - 1, -1, -1):
        c1, c2 = [0.0] * S, [0.0] * S
        for s in range(S):
            q1, q2 = [], []
            for a in range(A):
                row = s * A + a
                x, y = float(first[s, a]), float(second[s, a])
                for k in range(ip[row], ip[row + 1]):
                    x += data[k] * n1[ix[k]]
                    y += data[k] * n2[ix[k]]
                q1.append(x)
                q2.append(y)
            best = max(q1)
            ties = [a for a in range(A) if q1[a] >= best - tol]
            pick = ties[0]
            for a in ties:
                if q2[a] > q2[pick]:
                    pick = a
            c1[s], c2[s], actions[h, s] = q1[pick], q2[pick], pick
        n1, n2 = c1, c2
    return np.array(n1), np.array(n2), actions


def _thread_counts() -> list[int]:
    import numba

    return [1, 2] if numba.config.NUMBA_NUM_THREADS >= 2 else [1]


def test_lex_sweep_is_bit_for_bit_the_same_on_one_and_two_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lexicographic sweep (ties on a coarse grid, several chunks of ``LEX_CHUNK`` states) on 1
    and 2 threads equals serial Python summing in the same order, bit for bit; below the threshold
    the serial build gives the same bits."""
    from cmdp_rl.kernels import csr
    from cmdp_rl.plumbing.threads import set_threads

    rng = np.random.default_rng(7)
    S, A, b, H, tol = 3 * csr.LEX_CHUNK + 5, 3, 2, 4, 1e-9
    K = _sparse_kernel(rng, S, A, b)
    first = np.round(rng.normal(size=(S, A)), 0)
    second = np.round(rng.normal(size=(S, A)), 1)
    want = _serial_lex(K, first, second, H, tol)
    assert np.array_equal(csr.lex_sweep(K.indptr, K.indices, K.data, first, second, H, tol)[2], want[2])  # serial
    monkeypatch.setattr(csr, "PARALLEL_MIN_ENTRIES", 0)
    try:
        for n in _thread_counts():
            set_threads(n)
            got = csr.lex_sweep(K.indptr, K.indices, K.data, first, second, H, tol)
            assert all(np.array_equal(g, w) for g, w in zip(got, want, strict=True)), n
            assert got[2].dtype == np.int32
    finally:
        set_threads(None)


def test_columns_stats_is_each_column_s_forward_pass_on_any_thread_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """``columns_stats`` of 3 random deterministic columns (uint8 actions) on 1 and 2 threads: row
    ``k`` is ``column_stats`` of column ``k`` bit for bit, and the exact value and costs of the
    column computed here from the dense kernel (distribution pushed by matrix products)."""
    from cmdp_rl.kernels import csr
    from cmdp_rl.plumbing.threads import set_threads

    rng = np.random.default_rng(8)
    S, A, b, H, M = 60, 3, 3, 5, 2
    K = _sparse_kernel(rng, S, A, b)
    P = K.toarray().reshape(S, A, S)
    tables = rng.normal(size=(S, A, M))
    d0 = rng.random(S)
    d0 /= d0.sum()
    columns = rng.integers(0, A, size=(3, H, S)).astype(np.uint8)
    want = []
    for col in columns:
        d, total = d0.copy(), np.zeros(M)
        for h in range(H):
            total += d @ tables[np.arange(S), col[h]]
            d = d @ P[np.arange(S), col[h]]
        want.append(total)
    one = np.array([csr.column_stats(K.indptr, K.indices, K.data, c, tables, d0) for c in columns])
    np.testing.assert_allclose(one, np.array(want), rtol=1e-12, atol=1e-12)
    monkeypatch.setattr(csr, "PARALLEL_MIN_ENTRIES", 0)
    try:
        for n in _thread_counts():
            set_threads(n)
            assert np.array_equal(csr.columns_stats(K.indptr, K.indices, K.data, columns, tables, d0), one), n
    finally:
        set_threads(None)
