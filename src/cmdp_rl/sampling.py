"""The one categorical sampler of the library, and the compiled episode rollout built on it.

Every draw of a next state or an action (the episodic environment, its compiled
rollout, the generative model's per-pair samples, the Gymnasium adapter) goes through
:func:`categorical`: inverse-CDF sampling on a cumulative row, scaled by the row's own
total. For a uniform ``u`` in ``[0, 1)`` it returns the first index ``j`` with
``cum[j] > u * cum[-1]``. Such a ``j`` always has ``p[j] > 0`` (``cum[j] > cum[j-1]``),
so an outcome of probability zero is never returned, wherever the zeros are (the
previous samplers forced ``cum[-1] = 1`` and could return a trailing zero-probability
state when the floating-point sum of a row fell short of 1).

The counts of Optimistic-GMBL's batch draw (``n`` samples of every pair at once) come
from ``Generator.multinomial`` instead: it draws counts, not outcomes, and gives
zero-probability outcomes a count of zero exactly.
"""

from __future__ import annotations

import numba as nb
import numpy as np
from numpy.typing import NDArray

from .validation import CMDPInputError

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]


@nb.njit(cache=True, inline="always")
def categorical(cum: np.ndarray, u: float) -> int:
    """Index drawn from the cumulative row ``cum (K,)`` with the uniform ``u`` in [0, 1).

    The first ``j`` with ``cum[j] > u * cum[-1]``; if rounding leaves none (``u`` a hair
    below 1), the last index with positive probability.
    """
    K = cum.size
    target = u * cum[K - 1]
    for j in range(K):
        if cum[j] > target:
            return j
    j = K - 1
    while j > 0 and cum[j] <= cum[j - 1]:
        j -= 1
    return j


@nb.njit(cache=True)
def categorical_many(cum: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``u.size`` draws from one cumulative row ``cum (K,)``."""
    out = np.empty(u.size, dtype=np.int64)
    for i in range(u.size):
        out[i] = categorical(cum, u[i])
    return out


@nb.njit(cache=True)
def _rollout(
    policy: np.ndarray, cum_kernel: np.ndarray, s0: int, u: np.ndarray, counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    H, _, A = policy.shape
    states = np.empty(H, dtype=np.int64)
    actions = np.empty(H, dtype=np.int64)
    nexts = np.empty(H, dtype=np.int64)
    cum = np.empty(A)
    s = s0
    for h in range(H):
        acc = 0.0
        for a in range(A):  # the visited row of cumulative(policy), summed in the same order
            acc += policy[h, s, a]
            cum[a] = acc
        a = categorical(cum, u[h, 0])
        nxt = categorical(cum_kernel[s, a], u[h, 1])
        states[h], actions[h], nexts[h] = s, a, nxt
        if counts.size:
            counts[s, a, nxt] += 1
        s = nxt
    return states, actions, nexts


def cumulative(rows: Array) -> Array:
    """Cumulative sums along the last axis (a contiguous float64 copy), the sampler's input."""
    return np.ascontiguousarray(np.cumsum(rows, axis=-1, dtype=np.float64))


def sample_many(cum_row: Array, u: Array) -> IntArray:
    """Draws from one cumulative row ``(K,)`` for each uniform of ``u (n,)`` (checked shapes)."""
    row = np.asarray(cum_row, dtype=np.float64)
    uu = np.ascontiguousarray(u, dtype=np.float64).reshape(-1)
    if row.ndim != 1 or row.size < 1 or not row[-1] > 0:
        raise CMDPInputError(
            f"cum_row: expected a non-empty cumulative row with a positive total, got shape {row.shape}"
        )
    if uu.size and not (0.0 <= float(uu.min()) and float(uu.max()) < 1.0):
        raise CMDPInputError("u: uniforms must lie in [0, 1)")
    return np.asarray(categorical_many(np.ascontiguousarray(row), uu))


def rollout(
    policy: Array, cum_kernel: Array, s0: int, u: Array, counts: IntArray | None = None
) -> tuple[IntArray, IntArray, IntArray]:
    """One episode from ``s0``: ``(states, actions, next_states)``, each ``(H,)``.

    Args:
        policy: ``(H, S, A)`` policy (rows trusted to be distributions; the action at a
            visited ``(h, s)`` is drawn from the row's running sum, the same numbers as
            :func:`cumulative` of the whole policy, without computing the other rows).
        cum_kernel: ``(S, A, S)`` cumulative kernel rows.
        s0: initial state in ``[0, S)``.
        u: ``(H, 2)`` the episode's uniforms in [0, 1) (action, transition).
        counts: optional int64 ``(S, A, S)`` transition counts, incremented in place by
            the episode's transitions (the learners' count update, in the same pass).

    Raises:
        CMDPInputError: shapes that do not fit each other (checked here, before the
            compiled loop, which does no bounds checking).
    """
    if policy.ndim != 3 or cum_kernel.ndim != 3:
        raise CMDPInputError(
            f"policy: expected an (H, S, A) policy and an (S, A, S) kernel, got shapes "
            f"{policy.shape} and {cum_kernel.shape}"
        )
    H, S, A = policy.shape
    if cum_kernel.shape != (S, A, S):
        raise CMDPInputError(
            f"policy: shape {policy.shape} (S={S}, A={A}) does not fit the "
            f"environment's kernel of shape {cum_kernel.shape} "
            f"(S={cum_kernel.shape[0]}, A={cum_kernel.shape[1]})"
        )
    if u.shape != (H, 2):
        raise CMDPInputError(f"u: expected shape {(H, 2)}, got {u.shape}")
    if not 0 <= s0 < S:
        raise CMDPInputError(f"s0: must be a state index in [0, {S - 1}], got {s0}")
    if counts is None:
        counts = np.zeros((0, 0, 0), dtype=np.int64)
    elif counts.shape != (S, A, S) or counts.dtype != np.int64 or not counts.flags.c_contiguous:
        raise CMDPInputError(f"counts: expected a contiguous int64 array of shape {(S, A, S)}, got {counts.shape}")
    return _rollout(
        np.ascontiguousarray(policy, dtype=np.float64),
        np.ascontiguousarray(cum_kernel, dtype=np.float64),
        int(s0),
        np.ascontiguousarray(u, dtype=np.float64),
        counts,
    )


__all__ = ["categorical", "categorical_many", "cumulative", "rollout", "sample_many"]
