"""The per-iteration table and figures of policy-gradient runs (``cmdp-rl pg``, the docs' figure).

One row per iteration and algorithm, with the library's column names: ``algorithm``,
``iteration`` (1-based: the policy after that update), ``value``, ``value_gap`` (``V* - value``),
``avg_value_gap`` (the running average of ``value_gap`` over iterations ``1 .. t``),
``violation`` (``max_i max(V_ci - c_bar_i, 0)``, clipped at 0 as everywhere in the library),
``signed_violation`` (``max_i (V_ci - c_bar_i)``, what the papers plot) and one
``multiplier_i`` column per constraint.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.pg.methods import PGResult
from cmdp_rl.plumbing.atomic import atomic_path

Array = NDArray[np.float64]

#: the table's leading columns (then ``multiplier_0 .. multiplier_{N-1}``)
COLUMNS = ("algorithm", "iteration", "value", "value_gap", "avg_value_gap", "violation", "signed_violation")


def result_rows(result: PGResult, v_star: float, c_bar: Array) -> list[dict[str, Any]]:
    """The table rows of one run (module docstring)."""
    gap = result.value_gap(v_star)
    avg = result.avg_value_gap(v_star)
    signed = result.signed_violation(c_bar)
    rows = []
    for t in range(result.iterations):
        row: dict[str, Any] = {
            "algorithm": result.algorithm,
            "iteration": t + 1,
            "value": float(result.values[t]),
            "value_gap": float(gap[t]),
            "avg_value_gap": float(avg[t]),
            "violation": max(float(signed[t]), 0.0),
            "signed_violation": float(signed[t]),
        }
        for i, lam in enumerate(result.multipliers[t]):
            row[f"multiplier_{i}"] = float(lam)
        rows.append(row)
    return rows


def write_table(results: Sequence[PGResult], path: str | os.PathLike[str], v_star: float, c_bar: Array) -> None:
    """Write every run's rows as one CSV (atomically: complete or absent)."""
    N = int(np.asarray(c_bar).size)
    fields = [*COLUMNS, *(f"multiplier_{i}" for i in range(N))]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for res in results:
        for row in result_rows(res, v_star, c_bar):
            writer.writerow({k: (repr(v) if isinstance(v, float) else v) for k, v in row.items()})
    with atomic_path(path) as tmp:
        tmp.write_text(buf.getvalue())


def write_figures(
    curves: Sequence[tuple[str, Array, Array]], folder: str | os.PathLike[str], title: str = ""
) -> list[str]:
    """``gap.png`` (the running-average optimality gap, log scale) and ``violation.png`` (the
    running-average signed constraint violation) of labelled curves ``(label, avg_gap (T,),
    avg_signed_violation (T,))``, into ``folder`` (atomically). Returns the paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    for name, index, ylabel in (
        ("gap.png", 1, "average optimality gap"),
        ("violation.png", 2, "average constraint violation"),
    ):
        fig, ax = plt.subplots(figsize=(5.5, 3.8))
        for k, curve in enumerate(curves):
            y = np.asarray(curve[index])
            x = np.arange(1, y.size + 1)
            ax.plot(x, np.maximum(y, 1e-12) if index == 1 else y, color=f"C{k}", label=curve[0])
        if index == 1:
            ax.set_yscale("log")
        else:
            ax.axhline(0.0, color="0.5", lw=0.8, ls=":")
        ax.set_xlabel("iteration")
        ax.set_ylabel(ylabel)
        if title:
            ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = os.path.join(os.fspath(folder), name)
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format="png", dpi=120)
        plt.close(fig)
        written.append(path)
    return written


def running_signed_violation(result: PGResult, c_bar: Array) -> Array:
    """``(T,)`` the running average of [`PGResult.signed_violation`][cmdp_rl.pg.methods.PGResult.signed_violation] over
    iterations ``1 .. t``."""
    signed = result.signed_violation(c_bar)
    out: Array = np.cumsum(signed) / np.arange(1, signed.size + 1)
    return out


__all__ = ["COLUMNS", "result_rows", "running_signed_violation", "write_figures", "write_table"]
