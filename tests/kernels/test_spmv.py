"""The threaded sparse product ``K @ x``: bit for bit SciPy's serial product and a plain-Python
row sum in the kernel's order, on 1 and 2 threads, in either index width."""

from __future__ import annotations

import numba
import numpy as np
import pytest
import scipy.sparse as sp

from cmdp_rl.kernels import csr
from cmdp_rl.kernels.spmv import csr_dot, csr_matvec
from cmdp_rl.plumbing.threads import set_threads


@pytest.mark.parametrize("index_type", [np.int32, np.int64])
def test_csr_dot_is_scipy_s_product_bit_for_bit_on_any_thread_count(
    index_type: type, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(11)
    R, C = 500, 200
    K = sp.random_array((R, C), density=0.05, format="csr", rng=rng)
    K.indptr, K.indices = K.indptr.astype(index_type), K.indices.astype(index_type)
    x = rng.normal(size=C)
    before = (K.indptr.copy(), K.indices.copy(), K.data.copy(), x.copy())
    ip, ix, data = K.indptr.tolist(), K.indices.tolist(), K.data.tolist()
    want = np.empty(R)
    for i in range(R):
        total = 0.0
        for k in range(ip[i], ip[i + 1]):
            total += data[k] * float(x[ix[k]])
        want[i] = total
    assert np.array_equal(K @ x, want)  # SciPy sums the same way
    assert np.array_equal(csr_dot(K, x), want)  # below the threshold: the serial build
    monkeypatch.setattr(csr, "PARALLEL_MIN_ENTRIES", 0)
    try:
        for n in [1, 2] if numba.config.NUMBA_NUM_THREADS >= 2 else [1]:
            set_threads(n)
            assert np.array_equal(csr_matvec(K.indptr, K.indices, K.data, x), want), n
            assert numba.get_num_threads() == n
    finally:
        set_threads(None)
    for a, b in zip(before, (K.indptr, K.indices, K.data, x), strict=True):
        assert np.array_equal(a, b)
