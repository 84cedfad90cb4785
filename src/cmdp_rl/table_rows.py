"""Transition tables as arrays: the rows ``state, action, next_state, prob[, reward, cost_0, ...]``
read into a kernel, rewards and costs ([`read_table`][cmdp_rl.table_rows.read_table]), and a model's arrays written as
rows ([`table_text`][cmdp_rl.table_rows.table_text]); the format is described in [`cmdp_rl.tables`][cmdp_rl.tables].

[`CMDP.from_table`][cmdp_rl.model.CMDP.from_table] and ``CMDP.to_table`` build on these two
functions, and [`cmdp_rl.tables`][cmdp_rl.tables] on those methods: this module knows no ``CMDP``, so the
imports go one way (``tables`` -> ``model`` -> ``table_rows``).
"""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

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


def read_table(
    table: Any, sparse: bool | None = None
) -> tuple[NDArray[np.float64] | sp.csr_array, NDArray[np.float64], NDArray[np.float64]]:
    """The kernel (dense ``(S, A, S)`` or CSR ``(S*A, S)``), ``r`` ``(S, A)`` and ``c`` ``(N, S, A)``
    of a transition table (a CSV or Parquet path, or a pandas ``DataFrame``; format and ``sparse``:
    [`from_table`][cmdp_rl.tables.from_table]), checked row by row; the CMDP's own rules are checked by
    [`CMDP`][cmdp_rl.model.CMDP], which builds the model from them.

    Raises:
        CMDPInputError: a missing column, a bad value, or a pair that is missing or whose
            probabilities do not sum to 1 (named).
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
    if S * A > max(s.size, 2**20):  # every pair needs a row: refused before the (S, A) arrays are allocated
        raise CMDPInputError(
            f"table: the largest state {S - 1:,} and action {A - 1:,} make S * A = {S * A:,} state-action pairs, "
            f"but the table has {s.size:,} rows (every pair needs at least one)"
        )
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
    return kernel, r, c


def table_text(kernel: NDArray[np.float64] | sp.csr_array, r: NDArray[np.float64], c: NDArray[np.float64]) -> str:
    """The rows of a validated model's ``kernel`` (dense ``(S, A, S)`` or CSR ``(S*A, S)``), ``r``
    ``(S, A)`` and ``c`` ``(N, S, A)`` as CSV text: one row per ``(s, a, s2)`` with ``P > 0``, in
    the order of ``s, a, s2``; a sparse kernel is written from its non-zeros (never densified)."""
    S, A = r.shape
    N = c.shape[0]
    if isinstance(kernel, np.ndarray):
        s, a, s2 = np.nonzero(kernel)
        prob = kernel[s, a, s2]
    else:
        row = np.repeat(np.arange(S * A, dtype=np.int64), np.diff(kernel.indptr))
        s, a, s2 = row // A, row % A, np.asarray(kernel.indices, dtype=np.int64)
        prob = np.asarray(kernel.data, dtype=np.float64)
    header = ["state", "action", "next_state", "prob", "reward", *[f"cost_{i}" for i in range(N)]]
    columns = [map(str, s.tolist()), map(str, a.tolist()), map(str, s2.tolist()), map(repr, prob.tolist())]
    columns += [map(repr, r[s, a].tolist())] + [map(repr, c[i, s, a].tolist()) for i in range(N)]
    return "\n".join([",".join(header), *map(",".join, zip(*columns, strict=True))]) + "\n"


__all__ = ["REQUIRED", "read_table", "table_text"]
