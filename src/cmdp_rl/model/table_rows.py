"""Transition tables as arrays: the rows ``state, action, next_state, prob[, reward, cost_0, ...]``
read into a kernel, rewards and costs ([`read_table`][cmdp_rl.model.table_rows.read_table]), and a model's arrays
written as
rows ([`table_text`][cmdp_rl.model.table_rows.table_text]); the format is described in
[`cmdp_rl.model.tables`][cmdp_rl.model.tables].

[`CMDP.from_table`][cmdp_rl.model.cmdp.CMDP.from_table] and ``CMDP.to_table`` build on these two
functions, and [`cmdp_rl.model.tables`][cmdp_rl.model.tables] on those methods: this module knows no ``CMDP``, so the
imports go one way (``tables`` -> ``model`` -> ``table_rows``).
"""

from __future__ import annotations

import csv
import io
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from cmdp_rl.model.sparse import SPARSE_ABOVE_BYTES, dense_bytes
from cmdp_rl.plumbing.decoding import decoding, detail, utf8_text
from cmdp_rl.plumbing.paths import check_input_path
from cmdp_rl.plumbing.validation import ROW_SUM_TOL, CMDPInputError, CMDPTypeError, plain

REQUIRED = ("state", "action", "next_state", "prob")
#: a table whose indices make more state-action pairs than its rows plus this is refused before
#: its kernel is allocated (a damaged index); fewer missing pairs are listed by name
MAX_ABSENT = 2**20
#: the largest index a table or log may hold (integers are exact in float64 up to here)
MAX_INDEX = 2**53


@dataclass(frozen=True)
class Rows:
    """The columns of a table or log as read, and where each row came from (for error messages).

    Attributes:
        columns: ``{name: values}``, text from a CSV file, objects from a DataFrame or Parquet file.
        label: how messages name the source: ``"table FILE"``, ``"log FILE"``, or ``"table"`` /
            ``"log"`` for a DataFrame.
        lines: each row's 1-based line in a CSV file (as an editor shows it), or ``None``: rows
            of a DataFrame or Parquet file are numbered from 1.
    """

    columns: dict[str, list[Any]]
    label: str
    lines: NDArray[np.int64] | None

    def place(self, i: int) -> str:
        """``"line N"`` (a CSV file) or ``"row N"`` of row ``i`` (0-based)."""
        return f"line {int(self.lines[i])}" if self.lines is not None else f"row {i + 1}"

    def at(self, i: int) -> str:
        """``"LABEL: line N"`` (or ``"LABEL: row N"``) of row ``i`` (0-based): where a message starts."""
        return f"{self.label}: {self.place(i)}"


def read_rows(source: Any, what: str) -> Rows:
    """The [`Rows`][cmdp_rl.model.table_rows.Rows] of a CSV or Parquet path or a pandas ``DataFrame``; ``what``
    (``"table"``, ``"log"``) starts every message.

    Raises:
        CMDPInputError: one line naming the file and, for a CSV file, the line: not a file,
            empty, not UTF-8 text, a line the CSV reader rejects, a repeated column name, a row
            with another number of fields than the header; a Parquet file that cannot be read.
        CMDPTypeError: ``source`` is neither a path nor a DataFrame.
    """
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        label = f"{what} {path}"
        check_input_path(path, label, "a CSV or Parquet file")
        if path.suffix.lower() == ".parquet":
            try:
                import pandas as pd

                with decoding(label, "not a readable Parquet file"):
                    frame = pd.read_parquet(path)
            except ImportError:  # pandas, or the Parquet engine pandas looks for
                raise CMDPInputError(
                    f"{label}: reading Parquet needs pandas and pyarrow (pip install pandas pyarrow)"
                ) from None
            return Rows(_columns_from_frame(frame), label, None)
        return _csv_rows(path.read_bytes(), label)
    if hasattr(source, "columns") and hasattr(source, "__getitem__"):
        return Rows(_columns_from_frame(source), what, None)
    raise CMDPTypeError(f"{what}: must be a CSV/Parquet path or a pandas DataFrame, got {type(source).__name__}")


def _csv_rows(raw: bytes, label: str) -> Rows:
    """The rows of a CSV file's bytes: a header line, then rows with as many fields, each with its line."""
    reader = csv.reader(io.StringIO(utf8_text(raw, label), newline=""))
    rows: list[list[str]] = []
    ends: list[int] = []
    try:
        header = next(reader, None)
        for row in reader:
            rows.append(row)
            ends.append(reader.line_num)
    except csv.Error as exc:
        raise CMDPInputError(f"{label}: line {reader.line_num}: not valid CSV ({detail(exc)})") from None
    if header is None:
        raise CMDPInputError(f"{label}: is empty (no header line)")
    names = [h.strip() for h in header]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise CMDPInputError(f"{label}: line 1: the header repeats column(s) {repeated}")
    lines = np.asarray(ends, dtype=np.int64)
    widths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    bad = np.flatnonzero(widths != len(names))
    if bad.size:
        i = int(bad[0])
        raise CMDPInputError(f"{label}: line {lines[i]} has {widths[i]} fields, the header has {len(names)}")
    return Rows({n: [row[k] for row in rows] for k, n in enumerate(names)}, label, lines)


def _columns_from_frame(frame: Any) -> dict[str, list[Any]]:
    return {str(c): list(frame[c]) for c in frame.columns}


def column_numbers(name: str, rows: Rows, integer: bool) -> NDArray[Any]:
    """Column ``name`` of ``rows`` as numbers (``integer``: non-negative indices); a bad value is
    named with its line."""
    values = rows.columns[name]
    try:
        arr = np.array([float(v) for v in values], dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        i = next(k for k, v in enumerate(values) if not _is_number(v))
        raise CMDPInputError(f"{rows.at(i)}: column {name!r} holds a non-number {plain(values[i])}") from None
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        i = int(bad[0])
        raise CMDPInputError(f"{rows.at(i)}: column {name!r} holds a non-finite value {plain(values[i])}")
    if integer:
        bad = np.flatnonzero((arr != np.round(arr)) | (arr < 0) | (arr > MAX_INDEX))
        if bad.size:
            i = int(bad[0])
            raise CMDPInputError(
                f"{rows.at(i)}: column {name!r} must hold non-negative integer indices (at most 2**53), "
                f"got {plain(values[i])}"
            )
        return arr.astype(np.int64)
    return arr


def _is_number(v: Any) -> bool:
    try:
        float(v)
        return True
    except (TypeError, ValueError, OverflowError):
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
) -> tuple[NDArray[np.float64] | sp.csr_array, NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_] | None]:
    """The kernel (dense ``(S, A, S)`` or CSR ``(S*A, S)``), ``r`` ``(S, A)``, ``c`` ``(N, S, A)`` and
    the ``(S, A)`` mask of the available actions (the pairs with rows; ``None`` when every pair has
    rows) of a transition table (a CSV or Parquet path, or a pandas ``DataFrame``; format and ``sparse``:
    [`from_table`][cmdp_rl.model.tables.from_table]), checked row by row; the CMDP's own rules are checked by
    [`CMDP`][cmdp_rl.model.cmdp.CMDP], which builds the model from them.

    Raises:
        CMDPInputError: one line naming the file and, where there is one, the line (see
            [`read_rows`][cmdp_rl.model.table_rows.read_rows]): a missing column, a bad value, a state
            without rows (no available action), or a pair whose probabilities do not sum to 1 or
            whose expected reward or cost leaves ``[0, 1]``.
    """
    if sparse is not None and not isinstance(sparse, (bool, np.bool_)):
        raise CMDPInputError(f"sparse: must be True, False or None (by size), got {plain(sparse)}")
    rows = read_rows(table, "table")
    cols, where = rows.columns, rows.label
    missing = [c for c in REQUIRED if c not in cols]
    if missing:
        raise CMDPInputError(f"{where}: missing column(s) {missing}; required: {list(REQUIRED)}")
    cost_names = sorted((c for c in cols if re.fullmatch(r"cost_\d+", c)), key=lambda c: int(c[5:]))
    if [int(c[5:]) for c in cost_names] != list(range(len(cost_names))):
        raise CMDPInputError(f"{where}: cost columns must be cost_0, cost_1, ... without gaps, got {cost_names}")
    unknown = [c for c in cols if c not in (*REQUIRED, "reward", *cost_names)]
    if unknown:
        raise CMDPInputError(f"{where}: unknown column(s) {unknown}")
    n_rows = len(cols["state"])
    if not n_rows:
        raise CMDPInputError(f"{where}: has no rows")
    s = column_numbers("state", rows, True)
    a = column_numbers("action", rows, True)
    s2 = column_numbers("next_state", rows, True)
    prob = column_numbers("prob", rows, False)
    neg = np.flatnonzero(prob < 0)
    if neg.size:
        raise CMDPInputError(f"{rows.at(int(neg[0]))}: column 'prob' must be non-negative")
    S, A = int(max(s.max(), s2.max())) + 1, int(a.max()) + 1
    if S * A > n_rows + MAX_ABSENT:  # surely pairs without a row: refused before a kernel of that size exists
        big_s, big_a = int(np.argmax(np.maximum(s, s2))), int(np.argmax(a))
        raise CMDPInputError(
            f"{where}: {S:,} states and {A:,} actions make {S * A:,} state-action pairs, far more than its "
            f"{n_rows:,} rows: a damaged index? the largest state is on "
            f"{rows.place(big_s)}, the largest action on {rows.place(big_a)}"
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
    listed = np.bincount(s * A + a, minlength=S * A).reshape(S, A) > 0  # the available pairs
    bare = np.flatnonzero(~listed.any(axis=1))
    if bare.size:
        _refuse_bare(where, bare)
    off = np.argwhere(listed & (np.abs(mass - 1.0) > ROW_SUM_TOL))
    if off.size:
        x, y = (int(v) for v in off[0])
        raise CMDPInputError(
            f"{rows.at(_first_row(s, a, x, y))}: the probabilities of (state {x}, action {y}) sum to "
            f"{float(mass[x, y])!r}, not 1"
        )
    actions = None if listed.all() else listed
    r = _expected(column_numbers("reward", rows, False), s, a, prob, S, A) if "reward" in cols else np.zeros((S, A))
    c = np.zeros((len(cost_names), S, A))
    for i, name in enumerate(cost_names):
        c[i] = _expected(column_numbers(name, rows, False), s, a, prob, S, A)
    # no rows: an unavailable pair, its reward and costs ignored; sums of prob * value of a column
    # in [0, 1] can leave it by a rounding error: snap those, so the model stays on the unit scale
    # (a column in other units is kept as it is: any finite rewards and costs are the user's units)
    r[~listed] = 0.0
    c[:, ~listed] = 0.0
    for arr in (r[None], *c[:, None]):
        if np.all((arr >= -1e-12) & (arr <= 1.0 + 1e-12)):
            np.clip(arr, 0.0, 1.0, out=arr)
    return kernel, r, c, actions


def _refuse_bare(where: str, states: NDArray[np.int64]) -> None:
    """Refuse a table with states that have no rows (no available action), naming the first ones."""
    shown = ", ".join(str(int(x)) for x in states[:5])
    raise CMDPInputError(
        f"{where}: state {int(states[0])} has no rows, so no available action ({states.size} such state(s): "
        f"{shown}{' ...' if states.size > 5 else ''}); every state from 0 to the largest index needs at least one "
        "action (an absorbing state: a row to itself with prob 1)"
    )


def _first_row(s: NDArray[np.int64], a: NDArray[np.int64], x: int, y: int) -> int:
    """The first row (0-based) of the pair ``(x, y)``."""
    return int(np.flatnonzero((s == x) & (a == y))[0])


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


__all__ = ["REQUIRED", "Rows", "read_rows", "read_table", "table_text"]
