"""Transition tables in and out: a CMDP from rows ``state, action, next_state, prob[, reward, cost_0, ...]``.

One row per listed outcome of a pair ``(state, action)``, 0-based indices (like ``c[i]``):

* ``P[s, a, s2]`` sums the ``prob`` of the rows of ``(s, a, s2)``; every listed pair's
  probabilities must sum to 1 (tolerance ``1e-8``); ``S`` = 1 + the largest state index in
  ``state`` or ``next_state``, ``A`` = 1 + the largest action;
* ragged action sets: a pair of the ``S x A`` grid without rows is unavailable (the model's
  ``actions`` mask; see [`CMDP`][cmdp_rl.model.cmdp.CMDP]); every state needs rows for at least one
  action (an absorbing state: one row to itself with ``prob`` 1);
* ``reward`` and ``cost_i`` (optional; absent means 0) are per outcome and averaged
  with the probabilities: ``r(s, a) = sum prob * reward``, ``c_i(s, a) = sum prob * cost_i``
  (a value that is the same on every row of a pair is that pair's value exactly, so the
  round trip through [`to_table`][cmdp_rl.model.tables.to_table] gives the model back bit for bit);
* the kernel is sparse (an ``(S*A, S)`` CSR array) when a dense
  ``(S, A, S)`` one would exceed ``cmdp_rl.model.sparse.SPARSE_ABOVE_BYTES``, dense otherwise
  (``sparse=True`` / ``False`` forces it); either is built without a loop over rows, and
  [`to_table`][cmdp_rl.model.tables.to_table] writes a sparse model from its non-zeros without densifying it.

CSV files are read with the standard library; a pandas ``DataFrame`` is accepted as is;
Parquet needs pandas with pyarrow (``pip install pandas pyarrow``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.model.table_rows import REQUIRED as REQUIRED  # the required columns


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
    """A [`CMDP`][cmdp_rl.model.cmdp.CMDP] from a transition table (module docstring).

    Args:
        table: a CSV or Parquet path, or a pandas ``DataFrame``.
        c_bar: ``(N,)`` thresholds, one per ``cost_i`` column (``N = 0`` without cost columns).
        s0: initial state.
        H: horizon.
        names: a free-form label.
        meta: JSON-serializable metadata.
        sparse: ``None`` (default): a sparse ``(S*A, S)`` CSR kernel when a dense ``(S, A, S)``
            float64 kernel would exceed ``cmdp_rl.model.sparse.SPARSE_ABOVE_BYTES``, else dense;
            ``True`` / ``False`` force a sparse / dense kernel. The probabilities of repeated
            ``(state, action, next_state)`` rows are summed in table order either way.

    Raises:
        CMDPInputError: a missing column, a bad value, a pair that is missing or whose
            probabilities do not sum to 1 (named), or the CMDP's own rules.
    """
    return CMDP.from_table(table, c_bar, s0, H, names=names, meta=meta, sparse=sparse)


def to_table(cmdp: CMDP, path: str | os.PathLike[str] | None = None) -> str:
    """The table of ``cmdp`` as CSV text (written atomically to ``path`` when given).

    One row per ``(s, a, s2)`` with ``P > 0``, in the order of ``s, a, s2`` (so a ragged model's
    unavailable pairs have no rows and the table gives its ``actions`` mask back); ``reward`` and
    ``cost_i`` are the pair's expected values (constant over its outcomes), so
    [`from_table`][cmdp_rl.model.tables.from_table]
    gives the model back. A sparse model is written from the non-zeros of ``cmdp.K`` (never densified).
    """
    return cmdp.to_table(path)


__all__ = ["REQUIRED", "from_table", "to_table"]
