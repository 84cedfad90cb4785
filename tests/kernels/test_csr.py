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
