"""Sparse transition kernels: validation, conversion and size guards (see the docs page 'Large models').

A sparse kernel is the ``(S*A, S)`` CSR array ``K`` whose row ``s*A + a`` is ``P(. | s, a)``;
the flat pair index ``s*A + a`` is the one used everywhere on the sparse path. Memory is
``O(nnz)``: no ``(S, A, S)`` array is ever built from it except by an explicit, size-checked
densification ([`CMDP.dense_kernel`][cmdp_rl.model.cmdp.CMDP.dense_kernel]).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from cmdp_rl.plumbing.limits import SPARSE_ABOVE_BYTES, dense_bytes, human_bytes
from cmdp_rl.plumbing.validation import ROW_SUM_TOL, CMDPInputError, check_real_kind, plain, row_sum_tolerance

Array = NDArray[np.float64]

#: bytes of a dense ``(S, A, S)`` float64 kernel above which the functions that need one refuse a
#: sparse model (about 256 MiB: ``S = 2,000`` with ``A = 8``)
MAX_DENSE_BYTES = 256 * 2**20


def is_sparse_input(value: Any) -> bool:
    """True for a ``scipy.sparse`` matrix or array of any format."""
    return bool(sp.issparse(value))


def pair_label(row: int, A: int) -> str:
    """``"state s, action a"`` of the flat pair index ``row = s*A + a`` (for one-line errors)."""
    return f"state {row // A}, action {row % A}"


def as_csr_kernel(name: str, value: Any) -> sp.csr_array:
    """A validated, canonical, read-only ``(S*A, S)`` CSR copy of a sparse kernel.

    Rules (each broken one is a one-line [`CMDPInputError`][cmdp_rl.plumbing.errors.CMDPInputError] naming ``name``,
    the row
    and column): two dimensions with ``S >= 1`` columns and a positive multiple of ``S``
    rows; integer indices in range; finite, non-negative entries; no duplicate entries
    (the first duplicated row and column are named); every row summing to 1 within
    ``ROW_SUM_TOL`` (widened for lower-precision data, whose rows are then renormalized
    in float64). Explicit zeros are dropped; column indices are sorted within each row.
    The input is never modified.
    """
    if not is_sparse_input(value):
        raise CMDPInputError(f"{name}: expected a scipy.sparse matrix or array, got {type(value).__name__}")
    if len(value.shape) != 2:
        raise CMDPInputError(f"{name}: a sparse kernel has 2 dimensions (S*A, S), got shape {value.shape}")
    n_rows, S = (int(x) for x in value.shape)
    if S < 1 or n_rows < 1 or n_rows % S:
        raise CMDPInputError(
            f"{name}: a sparse kernel has shape (S*A, S) with S >= 1 and A >= 1, got {(n_rows, S)} "
            f"(rows must be a positive multiple of the {S} columns)"
        )
    A = n_rows // S
    if value.nnz < n_rows:  # checked before any array of n_rows entries is allocated
        raise CMDPInputError(
            f"{name}: a kernel of shape (S*A, S) = {(n_rows, S)} needs an entry in each of its {n_rows:,} rows "
            f"(each row is a distribution), got {value.nnz:,} entries"
        )
    coo = value.tocoo(copy=True)  # keeps duplicate entries (CSR/CSC/COO); DOK/LIL cannot hold any
    check_real_kind(name, coo.data, coo.data[:6])  # the dense rules: no complex, boolean or string entries
    tol = row_sum_tolerance(coo.data, S)
    try:
        data = np.asarray(coo.data, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise CMDPInputError(f"{name}: entries cannot be read as numbers ({exc})") from None
    row = np.asarray(coo.row, dtype=np.int64)
    col = np.asarray(coo.col, dtype=np.int64)
    bad = ~np.isfinite(data)
    if bad.any():
        k = int(np.argmax(bad))
        raise CMDPInputError(
            f"{name}[{row[k]}, {col[k]}] ({pair_label(int(row[k]), A)}): must be finite, got {plain(data[k])}"
        )
    neg = data < 0
    if neg.any():
        k = int(np.argmax(neg))
        raise CMDPInputError(
            f"{name}[{row[k]}, {col[k]}] ({pair_label(int(row[k]), A)}): kernel entries must be non-negative, "
            f"got {plain(data[k])}"
        )
    order = np.lexsort((col, row))
    row, col, data = row[order], col[order], data[order]
    dup = (row[1:] == row[:-1]) & (col[1:] == col[:-1])
    if dup.any():
        k = int(np.argmax(dup))
        raise CMDPInputError(
            f"{name}[{row[k]}, {col[k]}] ({pair_label(int(row[k]), A)}): duplicate entry (the kernel holds "
            f"row {row[k]}, column {col[k]} more than once); sum them or drop one before building the model"
        )
    keep = data != 0.0
    row, col, data = row[keep], col[keep], data[keep]
    sums = np.bincount(row, weights=data, minlength=n_rows)
    off = np.abs(sums - 1.0) > tol
    if off.any():
        k = int(np.argmax(off))
        raise CMDPInputError(
            f"{name}[{k}, :] ({pair_label(k, A)}): each kernel row must sum to 1 (tolerance {tol:g}), "
            f"sums to {plain(sums[k])}"
        )
    if tol > ROW_SUM_TOL:  # a lower-precision kernel: rows made exact distributions in float64
        data = data / sums[row]
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(row, minlength=n_rows), out=indptr[1:])
    K = sp.csr_array((data, col, indptr), shape=(n_rows, S))
    K.has_sorted_indices = True
    for arr in (K.data, K.indices, K.indptr):
        arr.setflags(write=False)
    return K


def csr_from_parts(name: str, data: Any, indices: Any, indptr: Any, shape: Any) -> sp.csr_array:
    """A validated CSR kernel from its raw arrays (the file keys ``P_data, P_indices, P_indptr,
    P_shape``): every array is checked before SciPy sees it (a one-line
    [`CMDPInputError`][cmdp_rl.plumbing.errors.CMDPInputError] naming the key), then the kernel's rules
    ([`as_csr_kernel`][cmdp_rl.model.sparse.as_csr_kernel])."""
    try:
        shp = tuple(int(x) for x in np.asarray(shape).ravel())
    except (TypeError, ValueError, OverflowError):
        raise CMDPInputError(f"{name}_shape: must be two integers (S*A, S), got {plain(shape)}") from None
    if len(shp) != 2 or min(shp) < 1:
        raise CMDPInputError(f"{name}_shape: must be two positive integers (S*A, S), got {plain(shape)}")
    dat = np.asarray(data)
    index: dict[str, NDArray[np.int64]] = {}
    for key, value in (("indices", indices), ("indptr", indptr)):
        arr = np.asarray(value)
        if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
            raise CMDPInputError(f"{name}_{key}: must be a 1-d integer array, got {arr.dtype} of shape {arr.shape}")
        if arr.dtype.kind == "u" and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
            raise CMDPInputError(f"{name}_{key}: holds {int(arr.max())}, beyond any valid index")
        index[key] = arr.astype(np.int64)
    ind, ptr = index["indices"], index["indptr"]
    if dat.ndim != 1 or dat.size != ind.size:
        raise CMDPInputError(f"{name}_data: must be 1-d with one entry per index ({ind.size}), got shape {dat.shape}")
    check_real_kind(f"{name}_data", dat, dat[:6])
    if ptr.size != shp[0] + 1 or ptr[0] != 0 or ptr[-1] != ind.size or np.any(np.diff(ptr) < 0):
        raise CMDPInputError(
            f"{name}_indptr: must be non-decreasing, start at 0, end at the number of entries ({ind.size}) "
            f"and have {shp[0] + 1} entries"
        )
    if ind.size and (ind.min() < 0 or ind.max() >= shp[1]):
        raise CMDPInputError(f"{name}_indices: column indices must lie in [0, {shp[1] - 1}]")
    raw = sp.csr_array((dat, ind, ptr), shape=shp)
    return as_csr_kernel(name, raw)


def csr_of_dense(P: Array) -> sp.csr_array:
    """The ``(S*A, S)`` read-only CSR array of a validated dense ``(S, A, S)`` kernel."""
    S, A = P.shape[0], P.shape[1]
    K = sp.csr_array(P.reshape(S * A, S))
    K.sort_indices()
    K.indices = K.indices.astype(np.int64)
    K.indptr = K.indptr.astype(np.int64)
    for arr in (K.data, K.indices, K.indptr):
        arr.setflags(write=False)
    return K


def check_dense_statistics(cmdp: Any, what: str) -> None:
    """Refuse, before anything is allocated, a sparse model too large for ``what``, a function
    that keeps dense ``(S, A, S)`` arrays (the learners' counts and estimates) of more than
    ``MAX_DENSE_BYTES`` each. Dense models pass: they hold such an array already."""
    if getattr(cmdp, "is_sparse", False) and dense_bytes(cmdp.S, cmdp.A) > MAX_DENSE_BYTES:
        raise CMDPInputError(
            f"{what} keeps dense (S, A, S) statistics: this sparse model (S={cmdp.S}, A={cmdp.A}, "
            f"nnz={cmdp.nnz}) would need {human_bytes(dense_bytes(cmdp.S, cmdp.A))} per array, above "
            f"{human_bytes(MAX_DENSE_BYTES)}; plan it with the exact planner (solve, or cmdp-rl solve), or use a "
            "model with fewer states"
        )


def dense_counts(counts: Any, S: int, A: int) -> NDArray[np.int64]:
    """``(S, A, S)`` int64 counts from dense counts (returned as they are) or sparse ``(S*A, S)``
    ones (a small model's: the learners that keep dense statistics, see
    [`check_dense_statistics`][cmdp_rl.model.sparse.check_dense_statistics])."""
    if is_sparse_input(counts):
        out: NDArray[np.int64] = np.asarray(counts.toarray(), dtype=np.int64).reshape(S, A, S)
        return out
    return np.asarray(counts)


def csr_bytes(K: sp.csr_array) -> int:
    """Bytes held by a CSR array's three arrays."""
    return int(K.data.nbytes + K.indices.nbytes + K.indptr.nbytes)


def densify(K: sp.csr_array, S: int, A: int, what: str, limit: int = MAX_DENSE_BYTES) -> Array:
    """The dense ``(S, A, S)`` kernel of ``K`` for ``what`` (a function that genuinely needs one),
    refused before allocating when it would exceed ``limit`` bytes."""
    need = dense_bytes(S, A)
    if need > limit:
        raise CMDPInputError(
            f"{what} needs a dense (S, A, S) kernel: this sparse model (S={S}, A={A}, nnz={K.nnz}) would "
            f"need {human_bytes(need)}, above {human_bytes(limit)}; use a model with fewer states"
        )
    out: Array = K.toarray().reshape(S, A, S)
    return out


__all__ = [
    "MAX_DENSE_BYTES",
    "SPARSE_ABOVE_BYTES",
    "as_csr_kernel",
    "check_dense_statistics",
    "csr_bytes",
    "csr_from_parts",
    "csr_of_dense",
    "dense_bytes",
    "dense_counts",
    "densify",
    "is_sparse_input",
    "pair_label",
]
