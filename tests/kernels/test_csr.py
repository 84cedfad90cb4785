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
