"""Transition tables in and out: a CMDP from rows ``state, action, next_state, prob[, reward, cost_0, ...]``.

One row per listed outcome of a pair ``(state, action)``, 0-based indices (like ``c[i]``):

* ``P[s, a, s2]`` sums the ``prob`` of the rows of ``(s, a, s2)``; every pair's
  probabilities must sum to 1 (tolerance ``1e-8``) and every pair of the
  ``S x A`` grid must appear (``S`` = 1 + the largest state index in ``state`` or
  ``next_state``, ``A`` = 1 + the largest action);
* ``reward`` and ``cost_i`` (optional; absent means 0) are per outcome and averaged
  with the probabilities: ``r(s, a) = sum prob * reward``, ``c_i(s, a) = sum prob * cost_i``.

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
from numpy.typing import NDArray

from .model import CMDP
from .validation import ROW_SUM_TOL, CMDPInputError

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


def from_table(
    table: Any, c_bar: Any = None, s0: int = 0, H: int = 1, *, names: str = "", meta: Mapping[str, Any] | None = None
) -> CMDP:
    """A :class:`~cmdp_rl.model.CMDP` from a transition table (module docstring).

    Args:
        table: a CSV or Parquet path, or a pandas ``DataFrame``.
        c_bar: ``(N,)`` thresholds, one per ``cost_i`` column (``N = 0`` without cost columns).
        s0: initial state.
        H: horizon.
        names: a free-form label.
        meta: JSON-serializable metadata.

    Raises:
        CMDPInputError: a missing column, a bad value, a pair that is missing or whose
            probabilities do not sum to 1 (named), or the CMDP's own rules.
    """
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
    P = np.zeros((S, A, S))
    np.add.at(P, (s, a, s2), prob)
    mass = P.sum(axis=-1)
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
    r = np.zeros((S, A))
    if "reward" in cols:
        np.add.at(r, (s, a), prob * _numbers("reward", cols["reward"], False))
    c = np.zeros((len(cost_names), S, A))
    for i, name in enumerate(cost_names):
        np.add.at(c[i], (s, a), prob * _numbers(name, cols[name], False))
    # sums of prob * value can leave [0, 1] by a rounding error; snap those (real violations stay and are reported)
    for arr in (r, c):
        near = (arr > 1.0) & (arr <= 1.0 + 1e-12) | (arr < 0.0) & (arr >= -1e-12)
        arr[near] = np.clip(arr[near], 0.0, 1.0)
    if c_bar is None and cost_names:
        raise CMDPInputError(f"c_bar: required, one threshold per cost column ({len(cost_names)})")
    return CMDP(P, r, c, np.zeros(0) if c_bar is None else c_bar, s0, H, names=names, meta=meta or {})


def to_table(cmdp: CMDP, path: str | os.PathLike[str] | None = None) -> str:
    """The table of ``cmdp`` as CSV text (written atomically to ``path`` when given).

    One row per ``(s, a, s2)`` with ``P > 0``; ``reward`` and ``cost_i`` are the pair's
    expected values (constant over its outcomes), so :func:`from_table` gives the model back.
    """
    s, a, s2 = np.nonzero(cmdp.P)
    header = ["state", "action", "next_state", "prob", "reward", *[f"cost_{i}" for i in range(cmdp.N)]]
    lines = [",".join(header)]
    for x, y, z in zip(s, a, s2, strict=True):
        vals = [repr(float(cmdp.P[x, y, z])), repr(float(cmdp.r[x, y]))]
        vals += [repr(float(cmdp.c[i, x, y])) for i in range(cmdp.N)]
        lines.append(f"{x},{y},{z}," + ",".join(vals))
    text = "\n".join(lines) + "\n"
    if path is not None:
        from .atomic import write_atomic

        write_atomic(path, text)
    return text


__all__ = ["REQUIRED", "from_table", "to_table"]
