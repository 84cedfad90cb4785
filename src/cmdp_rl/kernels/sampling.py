"""The one categorical sampler of the library, and the compiled episode rollout built on it.

Every draw of a next state or an action (the episodic environment, its compiled
rollout, the generative model's per-pair samples, the Gymnasium adapter) goes through
[`categorical`][cmdp_rl.kernels.sampling.categorical]: inverse-CDF sampling on a cumulative row, scaled by the row's own
total. For a uniform ``u`` in ``[0, 1)`` it returns the first index ``j`` with
``cum[j] > u * cum[-1]``. Such a ``j`` always has ``p[j] > 0`` (``cum[j] > cum[j-1]``),
so an outcome of probability zero is never returned, wherever the zeros are (the
previous samplers forced ``cum[-1] = 1`` and could return a trailing zero-probability
state when the floating-point sum of a row fell short of 1).

The counts of Optimistic-GMBL's batch draw (``n`` samples of every pair at once) come
from ``Generator.multinomial`` instead: it draws counts, not outcomes, and gives
zero-probability outcomes a count of zero exactly.

A sparse model is sampled from its ``(S*A, S)`` CSR kernel ``K``
without any ``(S, A, S)`` array: [`cumulative_csr`][cmdp_rl.kernels.sampling.cumulative_csr] gives the running sum of
``K.data`` within each row (``(nnz,)``, aligned with ``K.data``), and a draw of pair
``(s, a)`` is [`categorical`][cmdp_rl.kernels.sampling.categorical] on the slice ``indptr[s*A + a]:indptr[s*A + a + 1]``
mapped through ``K.indices`` ([`sample_row`][cmdp_rl.kernels.sampling.sample_row],
[`rollout_csr`][cmdp_rl.kernels.sampling.rollout_csr]). The running sums are the same floating-point numbers as the
dense rows'
at their non-zero entries (adding an exact zero changes nothing), so a uniform draws the same next state from a sparse
model as from its dense twin. The sparse batch counts ([`multinomial_csr`][cmdp_rl.kernels.sampling.multinomial_csr])
are a
multinomial per row too, drawn as successive binomials along the rows' entries.
"""

from __future__ import annotations

import numba as nb
import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.plumbing.validation import CMDPInputError, CMDPTypeError, check_positive_int

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
def rollout_compiled(
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


@nb.njit(cache=True)
def _rollout_csr(
    policy: np.ndarray,
    cum_data: np.ndarray,
    indices: np.ndarray,
    indptr: np.ndarray,
    s0: int,
    u: np.ndarray,
    counts: np.ndarray,
    entry_counts: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    H, _, A = policy.shape
    states = np.empty(H, dtype=np.int64)
    actions = np.empty(H, dtype=np.int64)
    nexts = np.empty(H, dtype=np.int64)
    cum = np.empty(A)
    s = s0
    for h in range(H):
        acc = 0.0
        for a in range(A):  # the visited row of cumulative(policy), as in rollout_compiled
            acc += policy[h, s, a]
            cum[a] = acc
        a = categorical(cum, u[h, 0])
        lo = indptr[s * A + a]
        k = lo + categorical(cum_data[lo : indptr[s * A + a + 1]], u[h, 1])
        nxt = indices[k]
        states[h], actions[h], nexts[h] = s, a, nxt
        if counts.size:
            counts[s, a, nxt] += 1
        if entry_counts.size:
            entry_counts[k] += 1
        s = nxt
    return states, actions, nexts


@nb.njit(cache=True)
def _row_cumsum(data: np.ndarray, indptr: np.ndarray) -> np.ndarray:
    out = np.empty(data.size)
    for i in range(indptr.size - 1):
        acc = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            acc += data[k]
            out[k] = acc
    return out


@nb.njit(cache=True)
def _conditional_probs(data: np.ndarray, indptr: np.ndarray) -> np.ndarray:
    """``data[k] / sum(data[k:row end])`` per entry (the last entry of a row: exactly 1)."""
    out = np.empty(data.size)
    for i in range(indptr.size - 1):
        acc = 0.0
        for k in range(indptr[i + 1] - 1, indptr[i] - 1, -1):
            acc += data[k]
            q = data[k] / acc if acc > 0.0 else 1.0
            out[k] = q if q < 1.0 else 1.0
        if indptr[i + 1] > indptr[i]:
            out[indptr[i + 1] - 1] = 1.0
    return out


def cumulative(rows: Array) -> Array:
    """Cumulative sums along the last axis (a contiguous float64 copy), the sampler's input."""
    return np.ascontiguousarray(np.cumsum(rows, axis=-1, dtype=np.float64))


def _check_csr(K: sp.csr_array) -> tuple[int, int]:
    """``(S, A)`` of an ``(S*A, S)`` CSR kernel (the model's ``K``: canonical, int64 indices)."""
    if not isinstance(K, (sp.csr_array, sp.csr_matrix)) or len(K.shape) != 2:
        raise CMDPInputError(f"K: expected an (S*A, S) CSR kernel (cmdp.K), got {type(K).__name__}")
    n_rows, S = (int(x) for x in K.shape)
    if S < 1 or n_rows < 1 or n_rows % S:
        raise CMDPInputError(f"K: expected shape (S*A, S), got {(n_rows, S)}")
    return S, n_rows // S


def cumulative_csr(K: sp.csr_array) -> Array:
    """``(nnz,)`` running sums of ``K.data`` within each row of the ``(S*A, S)`` CSR kernel ``K``
    (aligned with ``K.data``; the same numbers as [`cumulative`][cmdp_rl.kernels.sampling.cumulative] of the dense
    rows at
    their non-zero entries), the sparse sampler's input."""
    _check_csr(K)
    out: Array = _row_cumsum(
        np.ascontiguousarray(K.data, dtype=np.float64), np.ascontiguousarray(K.indptr, dtype=np.int64)
    )
    return out


def sample_row(cum_data: Array, K: sp.csr_array, row: int, u: Array) -> IntArray:
    """Next states drawn from row ``row`` (``= s*A + a``) of the CSR kernel ``K``, one for each
    uniform of ``u (n,)``; ``cum_data (nnz,)`` is [`cumulative_csr`][cmdp_rl.kernels.sampling.cumulative_csr] of
    ``K``. Returns
    ``(n,)`` column indices of ``K`` (states), the same draws as [`sample_many`][cmdp_rl.kernels.sampling.sample_many]
    on the
    dense row."""
    if not 0 <= row < K.shape[0]:
        raise CMDPInputError(f"row: must be a row of K (s*A + a) in [0, {K.shape[0] - 1}], got {row}")
    if cum_data.shape != (K.nnz,):
        raise CMDPInputError(
            f"cum_data: expected shape {(K.nnz,)} (one running sum per entry of K), got {cum_data.shape}"
        )
    lo, hi = int(K.indptr[row]), int(K.indptr[row + 1])
    local = sample_many(cum_data[lo:hi], u)
    out: IntArray = np.asarray(K.indices[lo + local], dtype=np.int64)
    return out


def row_offsets_cumulative(K: sp.csr_array) -> Array:
    """``(nnz,)`` [`cumulative_csr`][cmdp_rl.kernels.sampling.cumulative_csr] of ``K`` plus each entry's row index: one
    increasing array over all rows, so [`sample_rows`][cmdp_rl.kernels.sampling.sample_rows] draws from many rows with
    one
    ``searchsorted``."""
    rows = np.repeat(np.arange(K.shape[0], dtype=np.float64), np.diff(K.indptr))
    out: Array = cumulative_csr(K) + rows
    return out


def sample_rows(offset_cum: Array, K: sp.csr_array, rows: IntArray, u: Array) -> IntArray:
    """Next states, one drawn from each row ``rows[j]`` (``= s*A + a``) of the CSR kernel ``K`` with
    the uniform ``u[j]`` (same draw as [`sample_row`][cmdp_rl.kernels.sampling.sample_row]); ``offset_cum`` is
    [`row_offsets_cumulative`][cmdp_rl.kernels.sampling.row_offsets_cumulative] of ``K``. Vectorized: ``O(n log nnz)``
    for ``n``
    draws."""
    pos = np.searchsorted(offset_cum, rows + u, side="right")
    # rounding: a row summing to 1 -/+ 1e-16 must not hand the draw to its neighbour
    pos = np.clip(pos, K.indptr[rows], K.indptr[rows + 1] - 1)
    out: IntArray = np.asarray(K.indices[pos], dtype=np.int64)
    return out


def multinomial_csr(rng: np.random.Generator, n: int, K: sp.csr_array) -> sp.csr_array:
    """``n`` draws of every row of the ``(S*A, S)`` CSR kernel ``K`` at once, as counts.

    Returns an ``(S*A, S)`` int64 CSR array with ``K``'s sparsity structure (its own copies of
    ``K.indices`` and ``K.indptr``; entries with no draw are explicit zeros), so ``counts.data``
    lines up with ``K.data``; every row sums to ``n``. Each row is a multinomial draw, made as
    successive binomials along the row (``count_k ~ Binomial(n - earlier counts, p_k / sum of
    p_k and the later entries)``, the last entry taking the rest), vectorized over the rows:
    one binomial call per entry position, ``O(nnz)`` work and ``O(nnz + S*A)`` memory.
    """
    _check_csr(K)
    if not isinstance(rng, np.random.Generator):
        raise CMDPTypeError(f"rng: must be a numpy.random.Generator, got {type(rng).__name__}")
    n = check_positive_int("n", n, minimum=0)
    indptr = np.ascontiguousarray(K.indptr, dtype=np.int64)
    q = _conditional_probs(np.ascontiguousarray(K.data, dtype=np.float64), indptr)
    lengths = np.diff(indptr)
    n_rows = lengths.size
    order = np.argsort(-lengths, kind="stable")  # longest rows first: rows active at position k are a prefix
    starts = indptr[:-1][order]
    longest = int(lengths.max(initial=0))
    active = n_rows - np.searchsorted(np.sort(lengths), np.arange(longest), side="right")
    remaining = np.full(n_rows, n, dtype=np.int64)
    data = np.zeros(q.size, dtype=np.int64)
    for k in range(longest):  # entry positions within a row (at most the longest row's length)
        m = int(active[k])
        idx = starts[:m] + k
        drawn = rng.binomial(remaining[:m], q[idx])
        data[idx] = drawn
        remaining[:m] -= drawn
    counts = sp.csr_array((data, K.indices.astype(np.int64), indptr.copy()), shape=K.shape)
    counts.has_sorted_indices = bool(K.has_sorted_indices)
    return counts


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
            [`cumulative`][cmdp_rl.kernels.sampling.cumulative] of the whole policy, without computing the other rows).
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
    return rollout_compiled(
        np.ascontiguousarray(policy, dtype=np.float64),
        np.ascontiguousarray(cum_kernel, dtype=np.float64),
        int(s0),
        np.ascontiguousarray(u, dtype=np.float64),
        counts,
    )


def rollout_csr(
    policy: Array, K: sp.csr_array, cum_data: Array, s0: int, u: Array, counts: IntArray | None = None
) -> tuple[IntArray, IntArray, IntArray]:
    """One episode from ``s0`` on the ``(S*A, S)`` CSR kernel ``K``: ``(states, actions, next_states)``,
    each ``(H,)``, the same draws as [`rollout`][cmdp_rl.kernels.sampling.rollout] on the dense kernel for the same
    ``u``.

    Args:
        policy: ``(H, S, A)`` policy (rows trusted to be distributions, as in
            [`rollout`][cmdp_rl.kernels.sampling.rollout]).
        K: ``(S*A, S)`` CSR kernel, row ``s*A + a`` = ``P(. | s, a)`` (the model's ``cmdp.K``).
        cum_data: ``(nnz,)`` [`cumulative_csr`][cmdp_rl.kernels.sampling.cumulative_csr] of ``K``.
        s0: initial state in ``[0, S)``.
        u: ``(H, 2)`` the episode's uniforms in [0, 1) (action, transition).
        counts: optional int64 transition counts, incremented in place: ``(S, A, S)`` (a small
            model's dense counts) or ``(nnz,)`` per entry of ``K`` (aligned with ``K.data``).

    Raises:
        CMDPInputError: shapes that do not fit each other (checked before the compiled loop).
    """
    S, A = _check_csr(K)
    if policy.ndim != 3 or policy.shape[1:] != (S, A):
        raise CMDPInputError(
            f"policy: shape {policy.shape} does not fit the environment's (S*A, S) kernel of shape "
            f"{K.shape} (S={S}, A={A}): expected (H, {S}, {A})"
        )
    H = policy.shape[0]
    if cum_data.shape != (K.nnz,):
        raise CMDPInputError(
            f"cum_data: expected shape {(K.nnz,)} (one running sum per entry of K), got {cum_data.shape}"
        )
    if u.shape != (H, 2):
        raise CMDPInputError(f"u: expected shape {(H, 2)}, got {u.shape}")
    if not 0 <= s0 < S:
        raise CMDPInputError(f"s0: must be a state index in [0, {S - 1}], got {s0}")
    dense_counts = np.zeros((0, 0, 0), dtype=np.int64)
    entry_counts = np.zeros(0, dtype=np.int64)
    if counts is not None:
        ok = counts.dtype == np.int64 and counts.flags.c_contiguous and counts.shape in ((S, A, S), (K.nnz,))
        if not ok:
            raise CMDPInputError(
                f"counts: expected a contiguous int64 array of shape {(S, A, S)} or {(K.nnz,)} (one count per "
                f"entry of K), got {counts.shape}"
            )
        if counts.ndim == 3:
            dense_counts = counts
        else:
            entry_counts = counts
    return _rollout_csr(
        np.ascontiguousarray(policy, dtype=np.float64),
        np.ascontiguousarray(cum_data, dtype=np.float64),
        np.ascontiguousarray(K.indices, dtype=np.int64),
        np.ascontiguousarray(K.indptr, dtype=np.int64),
        int(s0),
        np.ascontiguousarray(u, dtype=np.float64),
        dense_counts,
        entry_counts,
    )


class KernelDraws:
    """Draws from a model's kernel in its own layout: the cumulative rows ``(S, A, S)`` of a dense
    model, or the ``(nnz,)`` running sums of ``K.data`` of a sparse one (never densified), so the
    simulators that sample a known model need not branch. A uniform draws the same next state from
    both layouts (module docstring).

    Args:
        cmdp: the model (a [`CMDP`][cmdp_rl.model.cmdp.CMDP]).
    """

    def __init__(self, cmdp: CMDP) -> None:
        self.cmdp = cmdp
        #: the ``(S*A, S)`` CSR kernel of a sparse model (``None`` for a dense one)
        self.K: sp.csr_array | None = cmdp.K if cmdp.is_sparse else None
        #: ``(S, A, S)`` cumulative rows (dense model) or ``(nnz,)`` running sums of ``K.data`` (sparse)
        self.cum: Array = cumulative(cmdp.P) if self.K is None else cumulative_csr(self.K)
        self._cum_dense: Array | None = None

    def next_states(self, s: int, a: int, u: Array) -> IntArray:
        """The next states of pair ``(s, a)`` drawn with the uniforms ``u (n,)`` in [0, 1)."""
        if self.K is not None:
            return sample_row(self.cum, self.K, s * self.cmdp.A + a, u)
        return sample_many(self.cum[s, a], u)

    def counts(self, rng: np.random.Generator, n: int) -> IntArray | sp.csr_array:
        """``n`` next states of every pair at once, as counts: int64 ``(S, A, S)`` for a dense model,
        an int64 ``(S*A, S)`` CSR array with ``K``'s sparsity structure for a sparse one
        ([`multinomial_csr`][cmdp_rl.kernels.sampling.multinomial_csr])."""
        if self.K is not None:
            return multinomial_csr(rng, n, self.K)
        out: IntArray = rng.multinomial(n, self.cmdp.P)
        return out

    def rollout(
        self, policy: Array, s0: int, u: Array, counts: IntArray | None = None
    ) -> tuple[IntArray, IntArray, IntArray]:
        """One episode from ``s0`` with the uniforms ``u (H, 2)``:
        [`rollout`][cmdp_rl.kernels.sampling.rollout] or [`rollout_csr`][cmdp_rl.kernels.sampling.rollout_csr]
        (``counts``: ``(S, A, S)``, or for a sparse model ``(nnz,)`` per entry of ``K``)."""
        if self.K is not None:
            return rollout_csr(policy, self.K, self.cum, s0, u, counts)
        return rollout(policy, self.cum, s0, u, counts)

    def dense_cumulative(self, what: str) -> Array:
        """``(S, A, S)`` cumulative rows of the kernel, what the compiled dense rollouts draw from: a
        sparse model's are built once, from a dense copy of its kernel (refused with a one-line error
        naming ``what``, before allocating, for a large model)."""
        if self.K is None:
            return self.cum
        if self._cum_dense is None:
            self._cum_dense = cumulative(self.cmdp.dense_kernel(what))
        return self._cum_dense


__all__ = [
    "KernelDraws",
    "categorical",
    "categorical_many",
    "cumulative",
    "cumulative_csr",
    "multinomial_csr",
    "rollout",
    "rollout_csr",
    "row_offsets_cumulative",
    "sample_many",
    "sample_row",
    "sample_rows",
]
