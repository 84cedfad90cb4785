"""Transition counts in either layout, validated once, and the statistics read from them.

Counts are dense ``(S, A, S)`` (``n(s, a, s2)``) or a ``scipy.sparse`` ``(S*A, S)`` matrix whose
row ``s*A + a`` holds ``n(s, a, .)`` (the flat pair index of the sparse kernels: memory
``O(nnz + S*A)``). [`check_counts`][cmdp_rl.confidence.counts.check_counts] is the one validator: it
picks the layout from the input and applies that layout's rules
([`validate_counts`][cmdp_rl.confidence.counts.validate_counts] for dense counts,
[`validate_sparse_counts`][cmdp_rl.confidence.counts.validate_sparse_counts] for sparse ones; each a one-line
[`CMDPInputError`][cmdp_rl.plumbing.errors.CMDPInputError] naming the entry that breaks a rule). The statistics
below ([`pair_counts`][cmdp_rl.confidence.counts.pair_counts],
[`kernel_estimate`][cmdp_rl.confidence.counts.kernel_estimate],
[`scaled_counts`][cmdp_rl.confidence.counts.scaled_counts]) take validated counts of either layout and
answer in it, so their callers need not branch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from cmdp_rl.model.sparse import is_sparse_input, pair_label
from cmdp_rl.plumbing.limits import MAX_EXACT_COUNT, check_allocation
from cmdp_rl.plumbing.validation import CMDPInputError, as_float_array, check_real_kind, plain

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]
#: validated counts: dense ``(S, A, S)`` float or ``(S*A, S)`` CSR (``check_counts``)
Counts: TypeAlias = Array | sp.csr_array


def check_counts(counts: object, name: str = "counts") -> tuple[Counts, int, int]:
    """Validated counts of either layout with their ``S`` and ``A``: a float copy of dense
    ``(S, A, S)`` counts ([`validate_counts`][cmdp_rl.confidence.counts.validate_counts]), or the canonical
    CSR copy of ``scipy.sparse`` ``(S*A, S)`` counts
    ([`validate_sparse_counts`][cmdp_rl.confidence.counts.validate_sparse_counts]). The input is never modified."""
    if is_sparse_input(counts):
        csr = validate_sparse_counts(counts, name)
        return csr, int(csr.shape[1]), int(csr.shape[0] // csr.shape[1])
    dense = validate_counts(counts, name)
    return dense, int(dense.shape[0]), int(dense.shape[1])


def validate_counts(counts: object, name: str = "counts") -> Array:
    """A validated float copy of dense ``(S, A, S)`` non-negative integer counts (the dense layout's
    rules of [`check_counts`][cmdp_rl.confidence.counts.check_counts]): finite, non-negative whole numbers,
    at most ``2**53`` samples per pair (beyond, float64 counts are not exact)."""
    if isinstance(counts, np.ndarray) and plain_integer_counts(counts):  # the learners' counts: two reductions
        return np.array(counts, dtype=np.float64, copy=True)
    arr = as_float_array(name, counts, 3)
    if arr.shape[0] != arr.shape[2]:
        raise CMDPInputError(f"{name}: expected shape (S, A, S), got {arr.shape}")
    if (arr < 0).any() or (arr != np.round(arr)).any():
        idx = tuple(int(i) for i in np.argwhere((arr < 0) | (arr != np.round(arr)))[0])
        raise CMDPInputError(f"{name}{list(idx)}: must be a non-negative integer, got {arr[idx]}")
    if arr.size == 0:
        return arr
    S = arr.shape[2]
    # integer input is recounted from its own entries (their float copies can round above 2**53)
    rows = (counts if isinstance(counts, np.ndarray) and counts.dtype.kind in "iu" else arr).reshape(-1, S)
    above = first_pair_above_exact(arr.sum(axis=-1).ravel(), lambda k: sum(int(v) for v in rows[k]))
    if above is not None:
        (s, a), total = np.unravel_index(above[0], arr.shape[:2]), above[1]
        raise CMDPInputError(
            f"{name}[{s}, {a}, :]: holds {plain(total)} samples, above 2**53 = {MAX_EXACT_COUNT}, beyond "
            "which counts are not exact in float64"
        )
    return arr


def first_pair_above_exact(sums: Array, exact: Callable[[int], int]) -> tuple[int, int] | None:
    """The first pair ``k`` (and its exact number of samples) holding more than ``2**53`` samples.

    ``sums``: ``(P,)`` float64 sums of each pair's whole-number counts. Every partial sum below
    ``2**53`` is an exact integer, so a sum below ``2**53`` is exact, and a pair above ``2**53`` sums
    to at least ``2**53`` (rounding may hide ``2**53 + 1``): only those pairs are recounted with
    ``exact(k)``, in Python integers."""
    for k in np.flatnonzero(sums >= MAX_EXACT_COUNT):
        total = exact(int(k))
        if total > MAX_EXACT_COUNT:
            return int(k), total
    return None


def plain_integer_counts(arr: NDArray[Any]) -> bool:
    """Integer ``(S, A, S)`` counts that pass [`validate_counts`][cmdp_rl.confidence.counts.validate_counts] for
    sure (non-negative, no pair above ``2**53`` samples), checked in two reductions: the learners'
    per-episode counts skip its element-wise checks."""
    if arr.dtype.kind not in "iu" or arr.ndim != 3 or arr.shape[0] != arr.shape[2] or arr.size == 0:
        return False
    return int(arr.min()) >= 0 and int(arr.max()) * arr.shape[2] <= MAX_EXACT_COUNT


def validate_sparse_counts(counts: Any, name: str = "counts") -> sp.csr_array:
    """A validated canonical ``(S*A, S)`` CSR copy of sparse transition counts.

    Any ``scipy.sparse`` format is accepted (a 3-d COO array of shape ``(S, A, S)`` is reshaped
    to ``(S*A, S)``). Rules (a broken one is a one-line [`CMDPInputError`][cmdp_rl.plumbing.errors.CMDPInputError]
    naming
    ``name``, the row and column): shape ``(S*A, S)`` with ``S >= 1`` columns and a positive multiple of
    ``S`` rows; finite, non-negative integer entries. Duplicate entries are summed (counts
    add up), explicit zeros dropped, column indices sorted; data float64, indices int64. The
    input is never modified.
    """
    if not is_sparse_input(counts):
        raise CMDPInputError(f"{name}: expected a scipy.sparse (S*A, S) matrix or array, got {type(counts).__name__}")
    shape = tuple(int(x) for x in counts.shape)
    coo = counts.tocoo(copy=True)
    if len(shape) == 3 and shape[0] == shape[2]:
        coo = coo.reshape((shape[0] * shape[1], shape[2]))
        shape = (shape[0] * shape[1], shape[2])
    if len(shape) != 2:
        raise CMDPInputError(f"{name}: sparse counts have 2 dimensions (S*A, S), got shape {shape}")
    n_rows, S = shape
    if S < 1 or n_rows < 1 or n_rows % S:
        raise CMDPInputError(
            f"{name}: sparse counts have shape (S*A, S) with S >= 1 and A >= 1, got {shape} "
            f"(rows must be a positive multiple of the {S} columns)"
        )
    A = n_rows // S
    check_allocation(name, 16.0 * (n_rows + 1), f"sparse counts of S*A = {n_rows:,} rows (S = {S:,})")
    check_real_kind(name, coo.data, coo.data[:6])  # the dense rules: no complex, boolean or string entries
    try:
        data = np.asarray(coo.data, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise CMDPInputError(f"{name}: entries cannot be read as numbers ({exc})") from None
    row = np.asarray(coo.coords[0], dtype=np.int64)
    col = np.asarray(coo.coords[1], dtype=np.int64)
    bad = ~np.isfinite(data) | (data < 0) | (data != np.round(data))
    if bad.any():
        k = int(np.argmax(bad))
        raise CMDPInputError(
            f"{name}[{row[k]}, {col[k]}] ({pair_label(int(row[k]), A)}, next state {col[k]}): must be a "
            f"non-negative integer, got {plain(data[k])}"
        )
    sums: Array = np.bincount(row, weights=data, minlength=n_rows).astype(np.float64) if row.size else np.zeros(0)
    exact_data = coo.data if coo.data.dtype.kind in "iu" else data  # duplicates and a pair's entries add up
    above = first_pair_above_exact(sums, lambda k: sum(int(v) for v in exact_data[row == k]))
    if above is not None:
        k, total = above
        raise CMDPInputError(
            f"{name}[{k}, :] ({pair_label(k, A)}): holds {plain(total)} samples, above 2**53 = {MAX_EXACT_COUNT}, "
            "beyond which counts are not exact in float64"
        )
    csr = sp.csr_array((data, (row, col)), shape=(n_rows, S))  # sums duplicates
    csr.sum_duplicates()
    csr.eliminate_zeros()
    csr.sort_indices()
    out = sp.csr_array(
        (
            np.ascontiguousarray(csr.data, dtype=np.float64),
            np.ascontiguousarray(csr.indices, dtype=np.int64),
            np.ascontiguousarray(csr.indptr, dtype=np.int64),
        ),
        shape=(n_rows, S),
    )
    out.has_sorted_indices = True
    return out


def pair_counts(counts: Counts, background: Array | None = None) -> IntArray:
    """``(S, A)`` samples per pair ``n(s, a)`` of validated counts of either layout (sparse: plus
    ``background[p]`` for each unlisted state of pair ``p``, see
    [`pair_samples`][cmdp_rl.confidence.counts.pair_samples])."""
    if isinstance(counts, sp.csr_array):
        S = int(counts.shape[1])
        return pair_samples(counts, background).reshape(S, -1)
    return empirical_kernel(counts)[1]


def pair_samples(counts: sp.csr_array, background: Array | None = None) -> IntArray:
    """``(S*A,)`` samples per pair ``n(s, a)`` of validated CSR counts (plus ``background[p]``
    for each of the pair's unlisted states, when given)."""
    SA, S = counts.shape
    lengths = np.diff(counts.indptr)
    n = np.bincount(np.repeat(np.arange(SA), lengths), weights=counts.data, minlength=SA)
    if background is not None:
        n = n + background * (S - lengths)
    return np.round(n).astype(np.int64)


def sparse_empirical_kernel(counts: sp.csr_array) -> sp.csr_array:
    """``(S*A, S)`` CSR empirical kernel of validated CSR counts: ``p_hat = n(s, a, s2) / n(s, a)``
    on the listed entries, and the uniform row ``1/S`` for a pair without samples (the dense
    convention of [`empirical_kernel`][cmdp_rl.confidence.counts.empirical_kernel]; such a row has ``S`` entries)."""
    SA, S = counts.shape
    n = pair_samples(counts)
    lengths = np.diff(counts.indptr)
    unvisited = n == 0
    row_len = np.where(unvisited, S, lengths)
    indptr = np.zeros(SA + 1, dtype=np.int64)
    np.cumsum(row_len, out=indptr[1:])
    indices = np.empty(int(indptr[-1]), dtype=np.int64)
    data = np.empty(int(indptr[-1]))
    visited_rows = np.repeat(np.arange(SA), lengths)  # rows of the counts' entries (all visited)
    dst = indptr[visited_rows] + (np.arange(counts.nnz) - counts.indptr[visited_rows])
    indices[dst] = counts.indices
    data[dst] = counts.data / n[visited_rows].astype(np.float64)
    u = np.flatnonzero(unvisited)
    if u.size:
        dst_u = (indptr[u][:, None] + np.arange(S)[None, :]).ravel()
        indices[dst_u] = np.tile(np.arange(S, dtype=np.int64), u.size)
        data[dst_u] = 1.0 / S
    return sp.csr_array((data, indices, indptr), shape=(SA, S))


def sparse_scaled_counts(counts: sp.csr_array, m: float) -> tuple[sp.csr_array, Array]:
    """The sparse counts ``round(p_hat * m)`` of ``m`` samples per pair spread as the empirical kernel
    (uniform where unvisited), as CSR counts on the visited pairs' entries plus the ``(S*A,)``
    ``background`` count of every unlisted state (``round(m / S)`` for an unvisited pair, else 0)."""
    SA, S = counts.shape
    n = pair_samples(counts)
    rows = np.repeat(np.arange(SA), np.diff(counts.indptr))
    data = np.round(counts.data / n[rows].astype(np.float64) * m)
    scaled = sp.csr_array((data, counts.indices.copy(), counts.indptr.copy()), shape=(SA, S))
    scaled.eliminate_zeros()
    scaled = sp.csr_array((scaled.data, scaled.indices.astype(np.int64), scaled.indptr.astype(np.int64)), shape=(SA, S))
    background = np.where(n == 0, np.round(1.0 / S * m), 0.0)
    return scaled, background


def empirical_kernel(counts: NDArray[np.integer] | Array) -> tuple[Array, NDArray[np.int64]]:
    """``phat = counts / n(s, a)`` (uniform where unvisited) and ``n (S, A)`` from ``(S, A, S)`` counts."""
    n = counts.sum(axis=-1)
    S = counts.shape[-1]
    safe = np.where(n > 0, n, 1)[..., None]
    p_hat = np.where((n > 0)[..., None], counts / safe, 1.0 / S)
    return p_hat, n.astype(np.int64)


def kernel_estimate(counts: Counts, actions: NDArray[np.bool_] | None = None) -> Array | sp.csr_array:
    """The empirical kernel of validated counts in their layout: dense ``(S, A, S)``
    ([`empirical_kernel`][cmdp_rl.confidence.counts.empirical_kernel]) or the ``(S*A, S)`` CSR
    ([`sparse_empirical_kernel`][cmdp_rl.confidence.counts.sparse_empirical_kernel]); a pair without
    samples has the uniform row ``1/S`` in both, except a pair a ragged model's ``actions`` mask
    ``(S, A)`` marks unavailable: no row (all zeros)."""
    if isinstance(counts, sp.csr_array):
        est = sparse_empirical_kernel(counts)
        if actions is None:
            return est
        return sp.csr_array(sp.diags(actions.reshape(-1).astype(np.float64)) @ est)
    out: Array = empirical_kernel(counts)[0]
    return out if actions is None else out * actions[..., None]


def scaled_counts(counts: Counts, m: float) -> tuple[Counts, Array | None]:
    """The counts ``round(p_hat * m)`` of ``m`` samples per pair spread as the empirical kernel
    (uniform where unvisited), in the counts' layout: dense ``(S, A, S)`` counts and ``None``, or
    [`sparse_scaled_counts`][cmdp_rl.confidence.counts.sparse_scaled_counts]'s CSR counts and ``(S*A,)``
    background."""
    if isinstance(counts, sp.csr_array):
        return sparse_scaled_counts(counts, m)
    return np.round(empirical_kernel(counts)[0] * m), None


__all__ = [
    "Counts",
    "check_counts",
    "empirical_kernel",
    "first_pair_above_exact",
    "kernel_estimate",
    "pair_counts",
    "pair_samples",
    "scaled_counts",
    "sparse_empirical_kernel",
    "sparse_scaled_counts",
    "validate_counts",
    "validate_sparse_counts",
]
