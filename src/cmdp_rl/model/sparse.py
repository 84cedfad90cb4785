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

from cmdp_rl.model.actions import Mask, available_count, check_actions
from cmdp_rl.plumbing.limits import SPARSE_ABOVE_BYTES, dense_bytes, human_bytes
from cmdp_rl.plumbing.validation import (
    ROW_SUM_TOL,
    CMDPInputError,
    as_float_array,
    check_real_kind,
    check_shape,
    distribution_rows,
    plain,
    row_sum_tolerance,
)

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


def as_csr_kernel(name: str, value: Any, actions: Any = None) -> sp.csr_array:
    """A validated, canonical, read-only ``(S*A, S)`` CSR copy of a sparse kernel.

    Rules (each broken one is a one-line [`CMDPInputError`][cmdp_rl.plumbing.errors.CMDPInputError] naming ``name``,
    the row
    and column): two dimensions with ``S >= 1`` columns and a positive multiple of ``S``
    rows; integer indices in range; finite, non-negative entries; no duplicate entries
    (the first duplicated row and column are named); every row summing to 1 within
    ``ROW_SUM_TOL`` (widened for lower-precision data, whose rows are then renormalized
    in float64). With ``actions``, the model's ``(S, A)`` mask of available actions
    ([`check_actions`][cmdp_rl.model.actions.check_actions]), the row of an unavailable pair
    must be empty (a non-zero entry there names the state and action) and only the available
    rows sum to 1. Explicit zeros are dropped; column indices are sorted within each row.
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
    mask = check_actions(actions, S, A)
    n_avail = available_count(mask, S, A)
    if value.nnz < n_avail:  # checked before any array of n_rows entries is allocated
        raise CMDPInputError(
            f"{name}: a kernel of shape (S*A, S) = {(n_rows, S)} needs an entry in each of its {n_avail:,} rows "
            f"of available pairs (each row is a distribution), got {value.nnz:,} entries"
        )
    # a canonical CSR input (rows' columns sorted, no duplicates: what the generators and model files
    # give) is read in place of a sorted COO copy: about a third of the memory per entry at 10^6 states
    canonical = value.format == "csr" and bool(value.has_canonical_format)
    src = value if canonical else value.tocoo(copy=True)  # COO keeps duplicates; DOK/LIL cannot hold any
    check_real_kind(name, src.data, src.data[:6])  # the dense rules: no complex, boolean or string entries
    tol = row_sum_tolerance(src.data, S)
    try:
        data = np.array(src.data, dtype=np.float64, copy=True if canonical else None)  # the input is never modified
    except (TypeError, ValueError) as exc:
        raise CMDPInputError(f"{name}: entries cannot be read as numbers ({exc})") from None
    if canonical:
        indptr: NDArray[np.int64] = np.asarray(value.indptr, dtype=np.int64)
        lengths = indptr[1:] - indptr[:-1]
        row = np.repeat(np.arange(n_rows, dtype=np.int64), lengths)
    else:
        row = np.asarray(src.row, dtype=np.int64)
    col = np.array(src.indices if canonical else src.col, dtype=np.int64)
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
    if not canonical:
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
    if not keep.all():
        row, col, data = row[keep], col[keep], data[keep]
    del keep
    if mask is not None:
        _refuse_unavailable_entries(name, row, col, mask.reshape(-1), A)
    sums = np.bincount(row, weights=data, minlength=n_rows)
    off = np.abs(sums - 1.0) > tol
    if mask is not None:
        off &= mask.reshape(-1)
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


def _refuse_unavailable_entries(
    name: str, row: NDArray[np.int64], col: NDArray[np.int64], flat: NDArray[np.bool_], A: int
) -> None:
    """Refuse a non-zero kernel entry on the row of an unavailable pair (``flat (S*A,)`` the mask)."""
    bad = ~flat[row]
    if bad.any():
        k = int(np.argmax(bad))
        raise CMDPInputError(unavailable_row_message(f"{name}[{row[k]}, {col[k]}]", int(row[k]) // A, int(row[k]) % A))


def unavailable_row_message(where: str, s: int, a: int) -> str:
    """The one-line refusal of a transition given for the unavailable pair ``(s, a)``."""
    return (
        f"{where} (state {s}, action {a}): a transition is given for action {a}, which is not available in "
        f"state {s} (actions[{s}, {a}] is False); an unavailable pair's kernel row must be empty (all zeros)"
    )


def csr_from_parts(name: str, data: Any, indices: Any, indptr: Any, shape: Any, actions: Any = None) -> sp.csr_array:
    """A validated CSR kernel from its raw arrays (the file keys ``P_data, P_indices, P_indptr,
    P_shape``): every array is checked before SciPy sees it (a one-line
    [`CMDPInputError`][cmdp_rl.plumbing.errors.CMDPInputError] naming the key), then the kernel's rules
    ([`as_csr_kernel`][cmdp_rl.model.sparse.as_csr_kernel], with the mask ``actions``)."""
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
    return as_csr_kernel(name, raw, actions)


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


def sparse_counts(counts: Any, S: int, A: int) -> sp.csr_array:
    """``(S*A, S)`` CSR counts from sparse ones (converted to CSR) or dense ``(S, A, S)`` ones
    (row ``s*A + a`` holds ``n(s, a, .)``): the other direction of
    [`dense_counts`][cmdp_rl.model.sparse.dense_counts], e.g. for ``scipy.sparse.save_npz``."""
    if is_sparse_input(counts):
        return sp.csr_array(counts)
    return sp.csr_array(np.asarray(counts).reshape(S * A, S))


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


class DenseKernel:
    """The model's kernel stored dense: the validated read-only ``(S, A, S)`` array ``P``, with its
    ``(S*A, S)`` CSR array built once, on demand. One of the two layouts of
    [`kernel_layout`][cmdp_rl.model.sparse.kernel_layout]; [`CMDP`][cmdp_rl.model.cmdp.CMDP] asks its layout
    instead of branching."""

    layout = "dense"

    def __init__(self, P: Array, actions: Mask | None = None) -> None:
        self.P = P
        self.actions = actions
        self._csr: sp.csr_array | None = None

    @property
    def given(self) -> Array:
        """The kernel as given (the dense array)."""
        return self.P

    @property
    def sizes(self) -> tuple[int, int]:
        """``(S, A)``."""
        return int(self.P.shape[0]), int(self.P.shape[1])

    def dense(self, S: int, A: int) -> Array:
        """The ``(S, A, S)`` array (a dense model's ``cmdp.P``)."""
        return self.P

    def dense_copy(self, S: int, A: int, what: str) -> Array | None:
        """``None``: the kernel is dense already."""
        return None

    def csr(self) -> sp.csr_array:
        """The ``(S*A, S)`` read-only CSR array, built once."""
        if self._csr is None:
            self._csr = csr_of_dense(self.P)
        return self._csr

    def sparse_copy(self) -> sp.csr_array | None:
        """The CSR array of a model made sparse."""
        return self.csr()

    def like(self, K: sp.csr_array, A: int) -> Array | sp.csr_array:
        """Another model's ``(S'*A, S')`` CSR kernel ``K`` in this layout: its dense ``(S', A, S')``
        copy, or ``K`` itself when that copy would exceed ``MAX_DENSE_BYTES`` (a derived model too
        large to be dense stays sparse)."""
        S2 = int(K.shape[1])
        return K if dense_bytes(S2, A) > MAX_DENSE_BYTES else densify(K, S2, A, "a dense model's derived kernel")

    @property
    def nnz(self) -> int:
        """Non-zero entries."""
        return int(self._csr.nnz) if self._csr is not None else int(np.count_nonzero(self.P))

    @property
    def nbytes(self) -> int:
        """Bytes of the kernel as stored."""
        return int(self.P.nbytes)

    def file_arrays(self) -> dict[str, Any]:
        """The kernel's ``.npz`` keys: ``P``."""
        return {"P": self.P}

    def describe(self) -> str:
        """``"dense"`` (for a model's one-line ``repr``)."""
        return "dense"


class SparseKernel:
    """The model's kernel stored sparse: the validated read-only ``(S*A, S)`` CSR array ``K``, never
    densified except by an explicit, size-checked copy ([`densify`][cmdp_rl.model.sparse.densify])."""

    layout = "sparse"

    def __init__(self, K: sp.csr_array, actions: Mask | None = None) -> None:
        self.K = K
        self.actions = actions

    @property
    def given(self) -> sp.csr_array:
        """The kernel as given (the CSR array)."""
        return self.K

    @property
    def sizes(self) -> tuple[int, int]:
        """``(S, A)``."""
        S = int(self.K.shape[1])
        return S, int(self.K.shape[0]) // S

    def dense(self, S: int, A: int) -> Array:
        """Refused: the kernel is sparse (one line naming ``cmdp.K``, so no code densifies a large
        model by accident)."""
        raise CMDPInputError(
            f"cmdp.P: this model's kernel is sparse (S={S}, A={A}); use cmdp.K, the (S*A, S) "
            f"CSR array (row s*A + a is P(. | s, a)), or cmdp.to_dense() for a small model"
        )

    def dense_copy(self, S: int, A: int, what: str) -> Array:
        """A dense ``(S, A, S)`` copy for ``what``, refused before allocating when too large."""
        return densify(self.K, S, A, what)

    def csr(self) -> sp.csr_array:
        """The CSR array."""
        return self.K

    def sparse_copy(self) -> sp.csr_array | None:
        """``None``: the kernel is sparse already."""
        return None

    def like(self, K: sp.csr_array, A: int) -> Array | sp.csr_array:
        """Another model's ``(S'*A, S')`` CSR kernel ``K`` in this layout: ``K`` itself."""
        return K

    @property
    def nnz(self) -> int:
        """Stored entries."""
        return int(self.K.nnz)

    @property
    def nbytes(self) -> int:
        """Bytes of the CSR arrays."""
        return csr_bytes(self.K)

    def file_arrays(self) -> dict[str, Any]:
        """The kernel's ``.npz`` keys: ``P_data, P_indices, P_indptr, P_shape``."""
        K = self.K
        return {
            "P_data": K.data,
            "P_indices": K.indices,
            "P_indptr": K.indptr,
            "P_shape": np.array(K.shape, dtype=np.int64),
        }

    def describe(self) -> str:
        """``"sparse, nnz=..."`` (for a model's one-line ``repr``)."""
        return f"sparse, nnz={self.nnz}"


def kernel_layout(P: Any, actions: Any = None) -> DenseKernel | SparseKernel:
    """The model's validated kernel in the layout it was given: a ``scipy.sparse`` matrix or array
    of shape ``(S*A, S)`` ([`as_csr_kernel`][cmdp_rl.model.sparse.as_csr_kernel]'s rules) or a dense
    ``(S, A, S)`` array (finite, non-negative rows summing to 1; float32 rows widened and
    renormalized), each refusal a one-line [`CMDPInputError`][cmdp_rl.plumbing.errors.CMDPInputError] naming
    ``P``. With ``actions``, the ``(S, A)`` mask of available actions
    ([`check_actions`][cmdp_rl.model.actions.check_actions], kept as the kernel's ``actions``), the rows
    of unavailable pairs must be all zeros and only the available ones sum to 1. The model's one
    layout decision: every method of [`CMDP`][cmdp_rl.model.cmdp.CMDP] that depends on the layout asks
    the returned object. A kernel this function returned (read-only, validated with its mask) is
    returned as it is: [`CMDP.replace`][cmdp_rl.model.cmdp.CMDP.replace] of other fields shares it
    instead of validating a copy (about 100 bytes per entry at its peak)."""
    if isinstance(P, (DenseKernel, SparseKernel)):
        return P
    if is_sparse_input(P):
        K = as_csr_kernel("P", P, actions)
        S = int(K.shape[1])
        return SparseKernel(K, check_actions(actions, S, int(K.shape[0]) // S))
    dense = as_float_array("P", P, 3)
    S, A = dense.shape[0], dense.shape[1]
    if S < 1 or A < 1:
        raise CMDPInputError(f"P: needs at least one state and one action, got shape {dense.shape}")
    check_shape("P", dense, (S, A, S))
    mask = check_actions(actions, S, A)
    what = "each kernel row P[s, a, :]"
    if mask is None:
        distribution_rows("P", P, dense, what)  # float32: widened, renormalized
    else:
        given = (dense != 0.0) & ~mask[..., None]
        if given.any():
            s, a, s2 = (int(v) for v in np.argwhere(given)[0])
            raise CMDPInputError(unavailable_row_message(f"P[{s}, {a}, {s2}]", s, a))
        probe = dense.copy()  # unavailable rows stand in as distributions, so errors name the real index
        probe[~mask, 0] = 1.0
        distribution_rows("P", P, probe, what + " of an available pair")
        dense[mask] = probe[mask]
    dense.setflags(write=False)
    return DenseKernel(dense, mask)


__all__ = [
    "MAX_DENSE_BYTES",
    "SPARSE_ABOVE_BYTES",
    "DenseKernel",
    "SparseKernel",
    "as_csr_kernel",
    "check_dense_statistics",
    "csr_bytes",
    "csr_from_parts",
    "csr_of_dense",
    "dense_bytes",
    "dense_counts",
    "densify",
    "is_sparse_input",
    "kernel_layout",
    "pair_label",
    "sparse_counts",
    "unavailable_row_message",
]
