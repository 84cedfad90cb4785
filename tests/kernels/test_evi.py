"""The compiled column evaluation of the EVI kernels against a NumPy forward pass."""

from __future__ import annotations

import numpy as np
import pytest

from cmdp_rl import random_cmdp
from cmdp_rl.confidence.box import Box, greedy_rows, make_column
from cmdp_rl.confidence.radii import confidence_set
from cmdp_rl.kernels.evi import column_into


def test_batched_columns_equal_numpy_forward_pass() -> None:
    """The compiled evaluation of a vertex against a NumPy forward pass over the greedy rows."""
    m = random_cmdp(7, 3, 5, 2, seed=1, slack=0.3, support=3)
    cs = confidence_set(np.random.default_rng(1).multinomial(30, m.P), 0.05)
    box = Box.from_radius(cs.p_hat, cs.beta)
    rng = np.random.default_rng(0)
    acts = rng.integers(0, m.A, (6, m.H, m.S))
    ords = np.stack([np.stack([rng.permutation(m.S) for _ in range(m.H)]) for _ in range(6)])
    dist, values, costs = np.empty((6, m.H, m.S)), np.empty(6), np.empty((6, m.N))
    for k in range(6):
        column_into(box.lower, box.room, box.spare, acts[k], ords[k], m.r, m.c, m.s0, k, dist, values, costs)
    ss = np.arange(m.S)
    for k in range(6):
        rows = greedy_rows(box, ords[k])  # (H, S, A, S)
        ref = np.zeros((m.H, m.S))
        ref[0, m.s0] = 1.0
        for h in range(m.H - 1):
            ref[h + 1] = ref[h] @ rows[h, ss, acts[k, h]]
        np.testing.assert_allclose(dist[k], ref, rtol=0, atol=1e-13)
        assert values[k] == pytest.approx(float(np.sum(ref * m.r[ss, acts[k]])), rel=1e-12, abs=1e-13)
        ref_costs = [float(np.sum(ref * m.c[i][ss, acts[k]])) for i in range(m.N)]
        np.testing.assert_allclose(costs[k], ref_costs, rtol=1e-12, atol=1e-13)
        col = make_column(box, acts[k], ords[k], m.r, m.c, m.s0)
        np.testing.assert_array_equal(col.rows(box), rows[np.arange(m.H)[:, None], ss[None, :], acts[k]])


def _evi_numpy(lower: np.ndarray, room: np.ndarray, spare: np.ndarray, reward: np.ndarray, H: int) -> tuple:
    """Extended value iteration in NumPy from its definition: at each step the plausible row of
    each ``(s, a)`` pours its spare mass into the states by decreasing ``V_{h+1}`` (ties by index),
    each taking at most its room; ``Q = reward + row . V_{h+1}``."""
    S = reward.shape[0]
    V = np.zeros(S)
    values, actions = [], []
    for _ in range(H):
        order = np.argsort(-V, kind="stable")
        cum = np.cumsum(room[:, :, order], axis=2)  # room taken before and at each state of the order
        give = np.clip(np.minimum(room[:, :, order], spare[..., None] - (cum - room[:, :, order])), 0.0, None)
        Q = reward + lower @ V + give @ V[order]
        actions.append(Q.argmax(axis=1))
        V = Q.max(axis=1)
        values.append(V)
    return np.array(values[::-1]), np.array(actions[::-1])


def test_evi_sweep_on_a_big_kernel_is_bit_for_bit_the_same_on_one_and_two_threads() -> None:
    """A kernel of ``80 * 40 * 80 >= EVI_PARALLEL_MIN_ENTRIES`` entries (the threaded build runs):
    ``evi_sweep``, and the Lagrangian sweep that calls it from compiled code (as the learners'
    batched planning does), give the same values, actions and orders on 1 and 2 threads
    (``np.array_equal``), and the values and actions of EVI written in NumPy (to 1e-12)."""
    import numba

    from cmdp_rl.kernels.evi import EVI_PARALLEL_MIN_ENTRIES, evi_sweep, lagrangian_sweep
    from cmdp_rl.plumbing.threads import apply_threads, set_threads

    rng = np.random.default_rng(3)
    S, A, H = 80, 40, 3
    assert S * A * S >= EVI_PARALLEL_MIN_ENTRIES
    P = rng.random((S, A, S)) * (rng.random((S, A, S)) > 0.7)
    P[..., 0] += 1e-3
    P /= P.sum(axis=2, keepdims=True)
    lower = np.maximum(P - 0.02, 0.0)
    room = np.minimum(P + 0.02, 1.0) - lower
    spare = 1.0 - lower.sum(axis=2)
    reward = rng.random((S, A))
    c, lam, avail = rng.random((1, S, A)), np.array([0.4]), np.ones((S, A), dtype=np.bool_)
    results = []
    try:
        for n in [1, 2] if numba.config.NUMBA_NUM_THREADS >= 2 else [1]:
            set_threads(n)
            apply_threads()
            results.append(evi_sweep(lower, room, spare, reward, H) + lagrangian_sweep(
                lower, room, spare, reward, c, lam, 1.0, H, avail
            ))  # fmt: skip
    finally:
        set_threads(None)
    for got in results[1:]:
        assert all(np.array_equal(x, y) for x, y in zip(got, results[0], strict=True))
    V, actions, _ = results[0][:3]
    want_v, want_a = _evi_numpy(lower, room, spare, reward, H)
    np.testing.assert_allclose(V[:H], want_v, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(actions, want_a)
    np.testing.assert_allclose(results[0][3][:H], _evi_numpy(lower, room, spare, reward - 0.4 * c[0], H)[0], rtol=1e-12)
