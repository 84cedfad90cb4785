"""The reachable-state sweeps against the full ones and against sets found here by brute force:
the reachable sets are every state some sequence of available actions can be in at step ``h``
(structural entries, zero probabilities included), the restricted sweep and forward pass give
the full ones' bits on them."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from cmdp_rl.kernels import csr_reach as reach
from cmdp_rl.kernels.csr import column_distribution, column_stats, dp_sweep
from cmdp_rl.kernels.csr_reach import (
    column_distribution_reach,
    column_stats_reach,
    dp_sweep_reach,
    reach_steps,
    reached_entries,
)


def _forward_model(rng: np.random.Generator, S: int, A: int) -> tuple[sp.csr_array, np.ndarray, np.ndarray]:
    """A kernel that only moves forward (successors of ``s`` among ``s + 1 .. s + 3``, the last
    state absorbing), so few states are reachable at each step; some stored probabilities are 0;
    a random mask of available actions (at least one per state) and a reward on a coarse grid
    (ties), ``-inf`` on unavailable pairs as the planner prices them."""
    rows, cols, vals = [], [], []
    for s in range(S):
        for a in range(A):
            succ = sorted({min(s + int(d), S - 1) for d in rng.integers(1, 4, size=2)})
            p = rng.random(len(succ)) + 0.1
            if len(succ) > 1 and rng.random() < 0.3:
                p[0] = 0.0  # an explicit zero: still structurally reachable
            for t, q in zip(succ, p / p.sum(), strict=True):
                rows.append(s * A + a)
                cols.append(t)
                vals.append(q)
    K = sp.csr_array((vals, (rows, cols)), shape=(S * A, S))
    K.indptr, K.indices = K.indptr.astype(np.int64), K.indices.astype(np.int64)
    mask = rng.random((S, A)) < 0.6
    mask[np.arange(S), rng.integers(0, A, size=S)] = True
    reward = np.where(mask, np.round(rng.normal(size=(S, A)), 1), -np.inf)
    return K, mask, reward


def _brute_reach(K: sp.csr_array, mask: np.ndarray, start: np.ndarray, H: int) -> list[list[int]]:
    """``R_h`` by a loop over the stored entries of the available pairs."""
    S, A = mask.shape
    cur = {s for s in range(S) if start[s] != 0.0}
    out = []
    for _ in range(H):
        out.append(sorted(cur))
        cur = {
            int(K.indices[k])
            for s in cur
            for a in range(A)
            if mask[s, a]
            for k in range(K.indptr[s * A + a], K.indptr[s * A + a + 1])
        }
    return out


@pytest.mark.parametrize("seed", [0, 1])
def test_reachable_sets_are_those_found_by_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    S, A, H = 60, 3, 12
    K, mask, _ = _forward_model(rng, S, A)
    start = np.zeros(S)
    start[[0, 2]] = [0.25, 0.75]
    steps = reach_steps(K.indptr, K.indices, A, start, mask.ravel(), H)
    assert steps is not None
    order, starts = steps
    assert starts.shape == (H + 1,) and order.dtype == np.int32
    got = [order[starts[h] : starts[h + 1]].tolist() for h in range(H)]
    assert got == _brute_reach(K, mask, start, H)


def test_a_model_reachable_everywhere_is_given_up() -> None:
    """Every state a successor of every state: ``R_h`` is all of them from step 1, more than half
    of the ``H * S`` pairs, so no lists are kept."""
    S, A, H = 8, 2, 10
    K = sp.csr_array(np.full((S * A, S), 1.0 / S))
    start = np.zeros(S)
    start[0] = 1.0
    assert reach_steps(K.indptr.astype(np.int64), K.indices.astype(np.int64), A, start, np.ones(S * A, bool), H) is None
    # H = 1: R_0 = {0} alone, 1 pair of 8
    steps = reach_steps(K.indptr.astype(np.int64), K.indices.astype(np.int64), A, start, np.ones(S * A, bool), 1)
    assert steps is not None and steps[0].tolist() == [0]


@pytest.mark.parametrize("parallel", [False, True])
def test_restricted_sweep_and_forward_pass_are_the_full_ones_on_reachable_states(
    parallel: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On every reachable pair ``(h, s)``: the same greedy action, ``V_0`` at the start, the same
    value and costs of a column and its state distribution (``np.array_equal``, bit for bit);
    elsewhere the table keeps its fill. ``parallel``: the threaded build (its threshold lowered to 0)."""
    if parallel:
        monkeypatch.setattr(reach, "PARALLEL_MIN_ENTRIES", 0)
    rng = np.random.default_rng(7)
    S, A, H = 80, 3, 15
    K, mask, reward = _forward_model(rng, S, A)
    start = np.zeros(S)
    start[0] = 1.0
    steps = reach_steps(K.indptr, K.indices, A, start, mask.ravel(), H)
    assert steps is not None
    order, starts = steps
    V_full, a_full = dp_sweep(K.indptr, K.indices, K.data, reward, H)
    table = np.full((H, S), 99, dtype=np.int8)
    V0 = dp_sweep_reach(K.indptr, K.indices, K.data, reward, order, starts, table)
    on = np.zeros((H, S), dtype=bool)
    for h in range(H):
        on[h, order[starts[h] : starts[h + 1]]] = True
    assert on.sum() < H * S / 2  # the restriction really drops pairs
    assert np.array_equal(table[on], a_full[on]) and np.all(table[~on] == 99)
    assert V0[0] == V_full[0] and np.all(V0[1:] == 0.0)
    assert np.array_equal(reached_entries(table, order, starts), a_full[on.nonzero()].astype(np.int8))
    tables = np.stack([np.where(mask, rng.random((S, A)), 0.0) for _ in range(3)], axis=-1)
    column = np.where(on, table, a_full).astype(np.int8)  # the full sweep's actions off R_h: never played
    want = column_stats(K.indptr, K.indices, K.data, a_full.astype(np.int8), tables, start)
    got = column_stats_reach(K.indptr, K.indices, K.data, column, tables, start, order, starts)
    assert np.array_equal(got, want)
    dist = column_distribution(K.indptr, K.indices, K.data, a_full.astype(np.int8), A, start)
    assert np.array_equal(column_distribution_reach(K.indptr, K.indices, K.data, column, A, start, order, starts), dist)
