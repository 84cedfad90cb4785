"""Logged transitions in: counts from a table of episodes (CSV, or Parquet with pandas).

Columns ``episode, step, state, action, next_state`` (0-based states and actions; ``reward``
and ``cost_*`` columns may be present and are ignored: the model supplies them). Checks:
states and actions in range of the model, steps of each episode consecutive from 0 and
below the horizon, and each row's ``state`` equal to the previous row's ``next_state``.
"""

from __future__ import annotations

import io
import os
from typing import Any

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.model.table_rows import column_numbers, read_rows
from cmdp_rl.plumbing.limits import check_allocation
from cmdp_rl.plumbing.validation import CMDPInputError, check_positive_int

LOG_COLUMNS = ("episode", "step", "state", "action", "next_state")


def read_log(log: Any, S: int, A: int, H: int) -> NDArray[np.int64]:
    """``(S, A, S)`` transition counts from a log of episodes (module docstring), validated.

    Raises:
        CMDPInputError: one line naming the file and, where there is one, the line (rows of a
            DataFrame or Parquet file: the row, from 1): a file that is not a readable CSV or
            Parquet table (see [`read_rows`][cmdp_rl.model.table_rows.read_rows]), a missing column, a
            value out of range, a gap or a break in an episode.
    """
    S, A, H = check_positive_int("S", S), check_positive_int("A", A), check_positive_int("H", H)
    check_allocation("S", 8.0 * S * A * S, f"(S, A, S) counts of S = {S:,} states and A = {A:,} actions")
    rows = read_rows(log, "log")
    cols, where = rows.columns, rows.label
    missing = [c for c in LOG_COLUMNS if c not in cols]
    if missing:
        raise CMDPInputError(f"{where}: missing column(s) {missing}; required: {list(LOG_COLUMNS)}")
    if not cols["episode"]:
        raise CMDPInputError(f"{where}: has no rows")
    ep, step, s, a, s2 = (column_numbers(name, rows, True) for name in LOG_COLUMNS)
    for name, arr, hi in (("state", s, S), ("next_state", s2, S), ("action", a, A), ("step", step, H)):
        bad = np.flatnonzero(arr >= hi)
        if bad.size:
            i = int(bad[0])
            raise CMDPInputError(f"{rows.at(i)}: {name} {int(arr[i])} out of range [0, {hi - 1}]")
    order = np.lexsort((step, ep))
    ep, step, s, a, s2 = ep[order], step[order], s[order], a[order], s2[order]
    first = np.r_[True, ep[1:] != ep[:-1]]
    expected = np.where(first, 0, np.r_[0, step[:-1] + 1])
    gap = np.flatnonzero(step != expected)
    if gap.size:
        i = int(gap[0])
        raise CMDPInputError(
            f"{rows.at(int(order[i]))}: episode {int(ep[i])}: step {int(step[i])} where step {int(expected[i])} "
            "was expected (steps must be consecutive from 0)"
        )
    broken = np.flatnonzero(~first & (s != np.r_[-1, s2[:-1]]))
    if broken.size:
        i = int(broken[0])
        raise CMDPInputError(
            f"{rows.at(int(order[i]))}: episode {int(ep[i])}, step {int(step[i])}: state {int(s[i])} is not the "
            f"previous step's next_state {int(s2[i - 1])}"
        )
    counts = np.zeros((S, A, S), dtype=np.int64)
    np.add.at(counts, (s, a, s2), 1)
    return counts


def write_log(
    path: str | os.PathLike[str], states: NDArray[np.int64], actions: NDArray[np.int64], nexts: NDArray[np.int64]
) -> None:
    """Write episodes ``(E, H)`` of states, actions and next states as a log CSV (atomically)."""
    from cmdp_rl.plumbing.atomic import write_atomic

    E, H = np.shape(states)
    table = np.column_stack(
        [np.repeat(np.arange(E), H), np.tile(np.arange(H), E)] + [np.ravel(x) for x in (states, actions, nexts)]
    )
    buf = io.StringIO()
    np.savetxt(buf, table, fmt="%d", delimiter=",", header=",".join(LOG_COLUMNS), comments="")
    write_atomic(path, buf.getvalue())


__all__ = ["LOG_COLUMNS", "read_log", "write_log"]
