"""Transition tables in and out: a CMDP from rows ``state, action, next_state, prob[, reward, cost_0, ...]``.

One row per listed outcome of a pair ``(state, action)``, 0-based indices (like ``c[i]``):

* ``P[s, a, s2]`` sums the ``prob`` of the rows of ``(s, a, s2)``; every pair's
  probabilities must sum to 1 (tolerance ``1e-8``) and every pair of the
  ``S x A`` grid must appear (``S`` = 1 + the largest state index in ``state`` or
  ``next_state``, ``A`` = 1 + the largest action);
* ``reward`` and ``cost_i`` (optional; absent means 0) are per outcome and averaged
  with the probabilities: ``r(s, a) = sum prob * reward``, ``c_i(s, a) = sum prob * cost_i``
  (a value that is the same on every row of a pair is that pair's value exactly, so the
  round trip through :func:`to_table` gives the model back bit for bit);
* the kernel is sparse (an ``(S*A, S)`` CSR array, DESIGN section 16) when a dense
  ``(S, A, S)`` one would exceed :data:`cmdp_rl.sparse.SPARSE_ABOVE_BYTES`, dense otherwise
  (``sparse=True`` / ``False`` forces it); either is built without a loop over rows, and
  :func:`to_table` writes a sparse model from its non-zeros without densifying it.

CSV files are read with the standard library; a pandas ``DataFrame`` is accepted as is;
Parquet needs pandas with pyarrow (``pip install pandas pyarrow``).
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from .model import CMDP
from .sparse import SPARSE_ABOVE_BYTES, dense_bytes
from .validation import ROW_SUM_TOL, CMDPInputError, plain

REQUIRED = ("state", "action", "next_state", "prob")


def _columns_from_path(path: Path) -> dict[str, list[str]]:
    if not path.is_file():
        raise CMDPInputError(f"table: {path} is not a file")
    if path.suffix.lower() == ".parquet":
        try:
            import pandas as pd
        except ImportError:
            raise CMDPInputError(
                "table: reading Parquet needs pandas and pyarrow (pip install pandas pyarrow)"
            ) from None
        return _columns_from_frame(pd.read_parquet(path))
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        try:
            header = next(reader)
        except StopIteration:
            raise CMDPInputError(f"table: {path} is empty") from None
        rows = list(reader)
    names = [h.strip() for h in header]
    for j, row in enumerate(rows):
        if len(row) != len(names):
            raise CMDPInputError(f"table: row {j + 2} of {path} has {len(row)} fields, the header has {len(names)}")
    return {n: [row[k] for row in rows] for k, n in enumerate(names)}


def _columns_from_frame(frame: Any) -> dict[str, list[Any]]:
    return {str(c): list(frame[c]) for c in frame.columns}


def _numbers(name: str, values: list[Any], integer: bool, what: str = "table") -> NDArray[Any]:
    """A column as numbers (``integer``: non-negative indices); errors start with ``what``."""
    try:
        arr = np.array([float(v) for v in values], dtype=np.float64)
    except (TypeError, ValueError):
        bad = next(v for v in values if not _is_number(v))
        raise CMDPInputError(f"{what}: column {name!r} holds a non-number {bad!r}") from None
    if not np.all(np.isfinite(arr)):
        raise CMDPInputError(f"{what}: column {name!r} holds a non-finite value")
    if integer:
        if np.any(arr != np.round(arr)) or np.any(arr < 0):
            raise CMDPInputError(f"{what}: column {name!r} must hold non-negative integer indices")
        return arr.astype(np.int64)
    return arr


def _is_number(v: Any) -> bool:
    try:
        float(v)
        return True
    except (TypeError, ValueError):
        return False


def _expected(
    values: NDArray[np.float64], s: NDArray[np.int64], a: NDArray[np.int64], prob: NDArray[np.float64], S: int, A: int
) -> NDArray[np.float64]:
    """``(S, A)`` probability-weighted sums of the per-row ``values`` (rows in table order); a pair
    whose rows all carry the same value gets that value exactly."""
    out = np.zeros((S, A))
    np.add.at(out, (s, a), prob * values)
    lo = np.full((S, A), np.inf)
    hi = np.full((S, A), -np.inf)
    np.minimum.at(lo, (s, a), values)
    np.maximum.at(hi, (s, a), values)
    same = lo == hi
    out[same] = lo[same]
    return out


def from_table(
    table: Any,
    c_bar: Any = None,
    s0: int = 0,
    H: int = 1,
    *,
    names: str = "",
    meta: Mapping[str, Any] | None = None,
    sparse: bool | None = None,
) -> CMDP:
    """A :class:`~cmdp_rl.model.CMDP` from a transition table (module docstring).

    Args:
        table: a CSV or Parquet path, or a pandas ``DataFrame``.
        c_bar: ``(N,)`` thresholds, one per ``cost_i`` column (``N = 0`` without cost columns).
        s0: initial state.
        H: horizon.
        names: a free-form label.
        meta: JSON-serializable metadata.
        sparse: ``None`` (default): a sparse ``(S*A, S)`` CSR kernel when a dense ``(S, A, S)``
            float64 kernel would exceed :data:`cmdp_rl.sparse.SPARSE_ABOVE_BYTES`, else dense;
            ``True`` / ``False`` force a sparse / dense kernel. The probabilities of repeated
            ``(state, action, next_state)`` rows are summed in table order either way.

    Raises:
        CMDPInputError: a missing column, a bad value, a pair that is missing or whose
            probabilities do not sum to 1 (named), or the CMDP's own rules.
    """
    if sparse is not None and not isinstance(sparse, (bool, np.bool_)):
        raise CMDPInputError(f"sparse: must be True, False or None (by size), got {plain(sparse)}")
    if isinstance(table, (str, os.PathLike)):
        cols = _columns_from_path(Path(table))
    elif hasattr(table, "columns") and hasattr(table, "__getitem__"):
        cols = _columns_from_frame(table)
    else:
        raise TypeError(f"table: must be a CSV/Parquet path or a pandas DataFrame, got {type(table).__name__}")
    missing = [c for c in REQUIRED if c not in cols]
    if missing:
        raise CMDPInputError(f"table: missing column(s) {missing}; required: {list(REQUIRED)}")
    cost_names = sorted((c for c in cols if re.fullmatch(r"cost_\d+", c)), key=lambda c: int(c[5:]))
    if [int(c[5:]) for c in cost_names] != list(range(len(cost_names))):
        raise CMDPInputError(f"table: cost columns must be cost_0, cost_1, ... without gaps, got {cost_names}")
    unknown = [c for c in cols if c not in (*REQUIRED, "reward", *cost_names)]
    if unknown:
        raise CMDPInputError(f"table: unknown column(s) {unknown}")
    if not cols["state"]:
        raise CMDPInputError("table: has no rows")
    s = _numbers("state", cols["state"], True)
    a = _numbers("action", cols["action"], True)
    s2 = _numbers("next_state", cols["next_state"], True)
    prob = _numbers("prob", cols["prob"], False)
    if np.any(prob < 0):
        raise CMDPInputError("table: column 'prob' must be non-negative")
    S, A = int(max(s.max(), s2.max())) + 1, int(a.max()) + 1
    use_sparse = dense_bytes(S, A) > SPARSE_ABOVE_BYTES if sparse is None else bool(sparse)
    kernel: NDArray[np.float64] | sp.csr_array
    if use_sparse:  # entries sorted by (row s*A + a, next state): the CSR order
        entry, first = np.unique((s * A + a) * S + s2, return_inverse=True)
        vals = np.zeros(entry.size)
        np.add.at(vals, first.reshape(-1), prob)  # summed in table order, as the dense path does
        pair = entry // S
        mass: NDArray[np.float64] = np.zeros((S, A))
        np.add.at(mass.reshape(-1), pair, vals)
        indptr = np.zeros(S * A + 1, dtype=np.int64)
        np.cumsum(np.bincount(pair, minlength=S * A), out=indptr[1:])
        kernel = sp.csr_array((vals, (entry % S).astype(np.int64), indptr), shape=(S * A, S))
    else:
        P = np.zeros((S, A, S))
        np.add.at(P, (s, a, s2), prob)
        mass = P.sum(axis=-1)
        kernel = P
    absent = np.argwhere(mass == 0)
    if absent.size:
        shown = ", ".join(f"(state {int(x)}, action {int(y)})" for x, y in absent[:5])
        raise CMDPInputError(
            f"table: {len(absent)} state-action pair(s) have no rows: {shown}{' ...' if len(absent) > 5 else ''}"
        )
    off = np.argwhere(np.abs(mass - 1.0) > ROW_SUM_TOL)
    if off.size:
        x, y = (int(v) for v in off[0])
        raise CMDPInputError(f"table: the probabilities of (state {x}, action {y}) sum to {float(mass[x, y])!r}, not 1")
    r = _expected(_numbers("reward", cols["reward"], False), s, a, prob, S, A) if "reward" in cols else np.zeros((S, A))
    c = np.zeros((len(cost_names), S, A))
    for i, name in enumerate(cost_names):
        c[i] = _expected(_numbers(name, cols[name], False), s, a, prob, S, A)
    # sums of prob * value can leave [0, 1] by a rounding error; snap those (real violations stay and are reported)
    for arr in (r, c):
        near = (arr > 1.0) & (arr <= 1.0 + 1e-12) | (arr < 0.0) & (arr >= -1e-12)
        arr[near] = np.clip(arr[near], 0.0, 1.0)
    if c_bar is None and cost_names:
        raise CMDPInputError(f"c_bar: required, one threshold per cost column ({len(cost_names)})")
    return CMDP(kernel, r, c, np.zeros(0) if c_bar is None else c_bar, s0, H, names=names, meta=meta or {})


def to_table(cmdp: CMDP, path: str | os.PathLike[str] | None = None) -> str:
    """The table of ``cmdp`` as CSV text (written atomically to ``path`` when given).

    One row per ``(s, a, s2)`` with ``P > 0``, in the order of ``s, a, s2``; ``reward`` and
    ``cost_i`` are the pair's expected values (constant over its outcomes), so :func:`from_table`
    gives the model back. A sparse model is written from the non-zeros of ``cmdp.K`` (never densified).
    """
    if cmdp.is_sparse:
        K = cmdp.K
        row = np.repeat(np.arange(cmdp.S * cmdp.A, dtype=np.int64), np.diff(K.indptr))
        s, a, s2 = row // cmdp.A, row % cmdp.A, np.asarray(K.indices, dtype=np.int64)
        prob = np.asarray(K.data, dtype=np.float64)
    else:
        s, a, s2 = np.nonzero(cmdp.P)
        prob = cmdp.P[s, a, s2]
    header = ["state", "action", "next_state", "prob", "reward", *[f"cost_{i}" for i in range(cmdp.N)]]
    columns = [map(str, s.tolist()), map(str, a.tolist()), map(str, s2.tolist()), map(repr, prob.tolist())]
    columns += [map(repr, cmdp.r[s, a].tolist())] + [map(repr, cmdp.c[i, s, a].tolist()) for i in range(cmdp.N)]
    text = "\n".join([",".join(header), *map(",".join, zip(*columns, strict=True))]) + "\n"
    if path is not None:
        from .atomic import write_atomic

        write_atomic(path, text)
    return text


__all__ = ["REQUIRED", "from_table", "to_table"]
