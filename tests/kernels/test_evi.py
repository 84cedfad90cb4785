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
