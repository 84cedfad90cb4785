"""The sparse kernel times a vector, ``K @ x`` for the ``(S*A, S)`` CSR kernel, on every thread
(see the docs page 'Large models', section 'Threads').

The exact evaluation of a randomized Markov table ([`evaluate`][cmdp_rl.evaluation.evaluate.evaluate]:
``E[V_{h+1}(s') | s, a]`` at each step of the backward pass, eqs. "value" and "cost_i", and the
forward pass of the occupancy, eq. "occupancy-measure", through the transposed kernel) is these
products. Each row is summed from ``0.0`` in the kernel's order by one thread, as SciPy's own
serial product does, so the result is bit-for-bit the same for any thread count.
"""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np
from numpy.typing import NDArray

from cmdp_rl.kernels import csr
from cmdp_rl.plumbing.threads import apply_threads


def csr_matvec(
    indptr: NDArray[np.integer], indices: NDArray[np.integer], data: NDArray[np.float64], x: NDArray[np.float64]
) -> NDArray[np.float64]:
    """``y = K x`` for a CSR matrix ``K (R, C)`` given by ``indptr (R + 1,)``, ``indices (nnz,)``,
    ``data (nnz,)`` and ``x (C,)`` (float64): ``y[i] = sum_k data[k] x[indices[k]]`` over row ``i``'s
    entries in order. The rows split over [`get_threads`][cmdp_rl.plumbing.threads.get_threads]
    threads from ``csr.PARALLEL_MIN_ENTRIES`` entries on (one thread, no thread pool, below).
    Returns ``(R,)``."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    if int(indptr[-1]) < csr.PARALLEL_MIN_ENTRIES:
        return _matvec_serial(indptr, indices, data, x)
    apply_threads()
    return _matvec(indptr, indices, data, x)


def csr_dot(matrix: Any, x: NDArray[np.float64]) -> NDArray[np.float64]:
    """[`csr_matvec`][cmdp_rl.kernels.spmv.csr_matvec] of a SciPy CSR matrix (``csr_array`` or
    ``csr_matrix``, float64 data) and a vector: ``matrix @ x``, bit for bit as SciPy's, on every thread."""
    return csr_matvec(matrix.indptr, matrix.indices, np.asarray(matrix.data, dtype=np.float64), x)


@nb.njit(cache=True, inline="always")
def _row(i: int, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, x: np.ndarray) -> float:
    """Row ``i``'s sum, from ``0.0`` in the kernel's order."""
    total = 0.0
    for k in range(indptr[i], indptr[i + 1]):
        total += data[k] * x[indices[k]]
    return total


@nb.njit(cache=True, parallel=True)
def _matvec(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``csr_matvec``'s rows in parallel."""
    R = indptr.shape[0] - 1
    y = np.empty(R)
    for i in nb.prange(R):
        y[i] = _row(i, indptr, indices, data, x)
    return y


@nb.njit(cache=True)
def _matvec_serial(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``_matvec`` on one thread, compiled without a thread pool: the same bits."""
    R = indptr.shape[0] - 1
    y = np.empty(R)
    for i in range(R):
        y[i] = _row(i, indptr, indices, data, x)
    return y


__all__ = ["csr_dot", "csr_matvec"]
