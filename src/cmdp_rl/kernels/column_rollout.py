"""Episodes of a compact policy: a mixture of deterministic Markov policies (columns), played as
a mixture: one column drawn per episode with its weight, then followed for the whole episode.

The column is drawn by the library's one categorical sampler
([`categorical`][cmdp_rl.kernels.sampling.categorical]) on the running sum of the weights
([`draw_columns`][cmdp_rl.kernels.column_rollout.draw_columns]); the episode then reads its action
at each visited ``(h, s)`` from the column's ``(H, S)`` action table (no ``(H, S, A)`` table, no
action draw) and draws each next state exactly as the randomized rollouts do
([`rollout`][cmdp_rl.kernels.sampling.rollout], [`rollout_csr`][cmdp_rl.kernels.sampling.rollout_csr]), from
the transition uniforms ``u[:, 1]`` of the episode's ``(H, 2)`` uniforms: with the same uniforms a
column's episode is the one the randomized rollout plays with the column's one-hot table.
"""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from cmdp_rl.kernels.sampling import categorical, categorical_many, cumulative
from cmdp_rl.plumbing.validation import CMDPInputError

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]


def draw_columns(weights: Array, u: Array) -> IntArray:
    """``(n,)`` columns drawn with the weights ``(K,)`` (non-negative, a positive sum), one per
    uniform of ``u (n,)`` in ``[0, 1)``: column ``k`` with probability ``weights[k] / sum``
    ([`categorical`][cmdp_rl.kernels.sampling.categorical]; a column of weight 0 is never drawn)."""
    w = np.ascontiguousarray(weights, dtype=np.float64)
    uu = np.ascontiguousarray(u, dtype=np.float64).reshape(-1)
    if w.ndim != 1 or w.size < 1 or (w < 0).any() or not w.sum() > 0:
        raise CMDPInputError(f"weights: expected (K,) non-negative weights with a positive sum, got shape {w.shape}")
    if uu.size and not (0.0 <= float(uu.min()) and float(uu.max()) < 1.0):
        raise CMDPInputError("u: uniforms must lie in [0, 1)")
    return np.asarray(categorical_many(cumulative(w), uu))


@nb.njit(cache=True)
def rollout_column_compiled(
    actions: np.ndarray, cum_kernel: np.ndarray, s0: int, u: np.ndarray, counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One episode of the deterministic policy ``actions (H, S)`` on the cumulative dense kernel
    ``(S, A, S)`` with the transition uniforms ``u[:, 1]``; ``counts (S, A, S)`` (or empty) updated."""
    H = actions.shape[0]
    states = np.empty(H, dtype=np.int64)
    acts = np.empty(H, dtype=np.int64)
    nexts = np.empty(H, dtype=np.int64)
    s = s0
    for h in range(H):
        a = np.int64(actions[h, s])
        nxt = categorical(cum_kernel[s, a], u[h, 1])
        states[h], acts[h], nexts[h] = s, a, nxt
        if counts.size:
            counts[s, a, nxt] += 1
        s = nxt
    return states, acts, nexts


@nb.njit(cache=True)
def rollout_column_csr_compiled(
    actions: np.ndarray,
    cum_data: np.ndarray,
    indices: np.ndarray,
    indptr: np.ndarray,
    A: int,
    s0: int,
    u: np.ndarray,
    counts: np.ndarray,
    entry_counts: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """[`rollout_column_compiled`][cmdp_rl.kernels.column_rollout.rollout_column_compiled] on the
    ``(S*A, S)`` CSR kernel (``cum_data``: running sums of its data per row); ``counts`` ``(S, A, S)``
    or ``entry_counts`` ``(nnz,)`` (or empty) updated."""
    H = actions.shape[0]
    states = np.empty(H, dtype=np.int64)
    acts = np.empty(H, dtype=np.int64)
    nexts = np.empty(H, dtype=np.int64)
    s = s0
    for h in range(H):
        a = np.int64(actions[h, s])
        lo = indptr[s * A + a]
        k = lo + categorical(cum_data[lo : indptr[s * A + a + 1]], u[h, 1])
        nxt = indices[k]
        states[h], acts[h], nexts[h] = s, a, nxt
        if counts.size:
            counts[s, a, nxt] += 1
        if entry_counts.size:
            entry_counts[k] += 1
        s = nxt
    return states, acts, nexts


def rollout_column(
    actions: NDArray[Any],
    cum: Array,
    s0: int,
    u: Array,
    counts: IntArray | None = None,
    K: sp.csr_array | None = None,
) -> tuple[IntArray, IntArray, IntArray]:
    """One episode of the deterministic Markov policy ``actions (H, S)`` from ``s0``:
    ``(states, actions, next_states)``, each ``(H,)``.

    Args:
        actions: ``(H, S)`` integer action table (entries trusted to lie in ``0 .. A - 1``).
        cum: the cumulative kernel rows the next states are drawn from: ``(S, A, S)``
            ([`cumulative`][cmdp_rl.kernels.sampling.cumulative] of a dense kernel), or with ``K``
            its ``(nnz,)`` [`cumulative_csr`][cmdp_rl.kernels.sampling.cumulative_csr].
        s0: initial state in ``[0, S)``.
        u: ``(H, 2)`` the episode's uniforms in [0, 1) (column ``1``: the transitions).
        counts: optional int64 transition counts, incremented in place: ``(S, A, S)``, or with ``K``
            also ``(nnz,)``, one per entry of ``K``.
        K: a sparse model's ``(S*A, S)`` CSR kernel, or ``None`` (dense ``cum``).
    """
    acts = np.ascontiguousarray(actions)
    if acts.ndim != 2 or acts.dtype.kind not in "iu":
        raise CMDPInputError(f"actions: expected an (H, S) integer action table, got shape {acts.shape}")
    H, S = acts.shape
    if u.shape != (H, 2):
        raise CMDPInputError(f"u: expected shape {(H, 2)}, got {u.shape}")
    if not 0 <= s0 < S:
        raise CMDPInputError(f"s0: must be a state index in [0, {S - 1}], got {s0}")
    uu = np.ascontiguousarray(u, dtype=np.float64)
    if K is None:
        A = cum.shape[1] if cum.ndim == 3 else 0
        if cum.shape != (S, A, S):
            raise CMDPInputError(f"actions: shape {acts.shape} does not fit the cumulative kernel of shape {cum.shape}")
        dense = np.zeros((0, 0, 0), dtype=np.int64) if counts is None else _counts(counts, (S, A, S))
        return rollout_column_compiled(acts, np.ascontiguousarray(cum, dtype=np.float64), int(s0), uu, dense)
    A = K.shape[0] // S
    if K.shape != (S * A, S) or cum.shape != (K.nnz,):
        raise CMDPInputError(
            f"actions: shape {acts.shape} does not fit the (S*A, S) kernel of shape {K.shape} (cum {cum.shape})"
        )
    dense, entries = np.zeros((0, 0, 0), dtype=np.int64), np.zeros(0, dtype=np.int64)
    if counts is not None and counts.ndim == 1:
        entries = _counts(counts, (K.nnz,))
    elif counts is not None:
        dense = _counts(counts, (S, A, S))
    return rollout_column_csr_compiled(
        acts,
        np.ascontiguousarray(cum, dtype=np.float64),
        np.ascontiguousarray(K.indices, dtype=np.int64),
        np.ascontiguousarray(K.indptr, dtype=np.int64),
        int(A),
        int(s0),
        uu,
        dense,
        entries,
    )


def _counts(counts: IntArray, shape: tuple[int, ...]) -> IntArray:
    """``counts`` checked: a contiguous int64 array of ``shape`` (updated in place by the rollout)."""
    if counts.shape != shape or counts.dtype != np.int64 or not counts.flags.c_contiguous:
        raise CMDPInputError(f"counts: expected a contiguous int64 array of shape {shape}, got {counts.shape}")
    return counts


__all__ = [
    "draw_columns",
    "rollout_column",
    "rollout_column_compiled",
    "rollout_column_csr_compiled",
]
