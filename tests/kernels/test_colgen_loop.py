"""The compiled column generation's mixing of columns into one plan, against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from cmdp_rl.kernels.colgen_loop import mix_plan
from cmdp_rl.planning.result import REACH_TOL, policy_from_occupancy


def test_compiled_plan_equals_numpy() -> None:
    rng = np.random.default_rng(3)
    K, H, S, A, N = 4, 5, 6, 3, 2
    acts = rng.integers(0, A, (K, H, S))
    dist = rng.random((K, H, S)) * (rng.random((K, H, S)) < 0.6)
    values, costs = rng.random(K), rng.random((K, N))
    w_in = np.array([1.0, -1e-17, 0.6, 0.4])
    w, mu, pol, value, mixed = mix_plan(w_in, acts, dist, values, costs, A, REACH_TOL)
    w_ref = np.maximum(w_in, 0.0) / np.maximum(w_in, 0.0).sum()
    ref = np.zeros((H, S, A))
    for k in range(K):
        np.add.at(ref, (np.arange(H)[:, None], np.arange(S)[None, :], acts[k]), w_ref[k] * dist[k])
    np.testing.assert_allclose(w, w_ref, rtol=0, atol=1e-15)
    np.testing.assert_allclose(mu, ref, rtol=0, atol=1e-15)
    np.testing.assert_allclose(pol, policy_from_occupancy(ref), rtol=0, atol=1e-15)
    assert value == pytest.approx(w_ref @ values, rel=1e-15)
    np.testing.assert_allclose(mixed, w_ref @ costs, rtol=1e-15)
