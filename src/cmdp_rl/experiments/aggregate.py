"""From per-run records to the tidy ``results.csv``, curve statistics and ``summary.md``.

Intervals everywhere (table and figure bands) are 95% Student-t intervals of
the mean over runs: ``mean +- t_{0.975, n-1} * s / sqrt(n)`` with ``s`` the
sample standard deviation (no interval with a single run).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from cmdp_rl.experiments.config import ExperimentConfig
from cmdp_rl.experiments.runner import CRL_BASE_COLUMNS, GMBL_COLUMNS, RunRecord, eps_column

Array = NDArray[np.float64]

ALGORITHM_LABELS: dict[str, str] = {"gmbl": "Optimistic-GMBL", "online-crl": "Online-CRL"}
"""Display names of the algorithms."""

FLOAT_FORMAT = ".10g"
"""Format of every float in ``results.csv`` (``-0`` is written as ``0``)."""

CI_LEVEL = 0.95


def csv_columns(config: ExperimentConfig) -> list[str]:
    """Column order of ``results.csv``: identifiers, then both algorithms' metrics.

    ``scenario, algorithm, run`` (the run index), ``samples``, ``episodes``
    (Online-CRL only), ``n_per_pair`` (GMBL only), ``value_gap``, ``violation``,
    ``optimistic_value``, ``elp_status``, then Online-CRL's ``cum_value_gap``,
    ``cum_violation``, ``infeasible_episodes``, ``min_visits`` and one
    ``bad_eps_<eps>`` per eps. A column that does not apply is left blank.
    """
    ids = ["scenario", "algorithm", "run", "samples", "episodes", "n_per_pair"]
    rest = [c for c in GMBL_COLUMNS + CRL_BASE_COLUMNS if c not in ids]
    seen: list[str] = []
    for c in rest:
        if c not in seen:
            seen.append(c)
    return ids + seen + [eps_column(e) for e in config.eps]


def format_cell(v: object) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return ""
        return format(v + 0.0, FLOAT_FORMAT)
    return str(v)


def _order(config: ExperimentConfig, records: Iterable[RunRecord]) -> list[RunRecord]:
    sc = {s: i for i, s in enumerate(config.scenarios)}
    al = {a: i for i, a in enumerate(config.algorithms)}
    return sorted(records, key=lambda r: (sc[r.spec.scenario], al[r.spec.algorithm], r.spec.run))


def results_csv(config: ExperimentConfig, records: Iterable[RunRecord]) -> str:
    """The tidy table: one row per recorded point of every run, as CSV text.

    Rows are sorted by scenario and algorithm (configuration order), run index and
    samples; floats use [`FLOAT_FORMAT`][cmdp_rl.experiments.aggregate.FLOAT_FORMAT], so equal records give equal bytes.
    """
    cols = csv_columns(config)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for rec in _order(config, records):
        sp = rec.spec
        n = sp.n_points
        order = sorted(range(n), key=lambda i: rec.columns["samples"][i])
        for i in order:
            row: dict[str, object] = {"scenario": sp.scenario, "algorithm": sp.algorithm, "run": sp.run}
            for name, vals in rec.columns.items():
                row[name] = vals[i]
            w.writerow([format_cell(row.get(c)) for c in cols])
    return buf.getvalue()


def mean_ci(values: Sequence[float] | Array, axis: int = 0) -> tuple[Array, Array]:
    """Mean and 95% Student-t half-width along ``axis``.

    Args:
        values: ``(runs, ...)`` samples (runs along ``axis``).

    Returns:
        ``(mean, half)`` with the run axis removed; ``half`` is ``nan`` for one run
        and ``0`` where all runs agree.
    """
    x = np.asarray(values, dtype=np.float64)
    n = x.shape[axis]
    mean = x.mean(axis=axis)
    if n < 2:
        return mean, np.full_like(mean, np.nan)
    sd = x.std(axis=axis, ddof=1)
    half = float(stats.t.ppf(0.5 + CI_LEVEL / 2, n - 1)) * sd / math.sqrt(n)
    return mean, half


@dataclass(frozen=True)
class Curve:
    """Mean curve of one metric for one (scenario, algorithm) over its runs.

    Attributes:
        x: ``(P,)`` the x-coordinate of each recorded point (e.g. samples).
        mean: ``(P,)`` mean over runs.
        half: ``(P,)`` 95% Student-t half-width (``nan`` for one run).
        runs: number of runs.
    """

    x: Array
    mean: Array
    half: Array
    runs: int


def group(records: Iterable[RunRecord], scenario: str, algorithm: str) -> list[RunRecord]:
    """The records of one (scenario, algorithm), ordered by run index."""
    return sorted(
        (r for r in records if r.spec.scenario == scenario and r.spec.algorithm == algorithm),
        key=lambda r: r.spec.run,
    )


def curve(records: Sequence[RunRecord], metric: str, x: str = "samples") -> Curve:
    """Mean and 95% band of ``metric`` against ``x`` over ``records`` (one scenario and
    algorithm, so every run has the same recorded points)."""
    xs = np.asarray(records[0].columns[x], dtype=np.float64)
    vals = np.array([r.columns[metric] for r in records], dtype=np.float64)  # (runs, P)
    mean, half = mean_ci(vals, axis=0)
    return Curve(xs, mean, half, len(records))


def fmt(x: float, spec: str) -> str:
    """``format(x, spec)`` for a table cell: ``n/a`` for ``nan`` (the table's note says why) and
    never ``-0`` (a negative number that rounds to zero is written ``0``)."""
    x = float(x)
    if math.isnan(x):
        return "n/a"
    out = format(x, spec)
    if out.startswith("-") and math.isfinite(x) and float(out[1:].replace(",", "").rstrip("%")) == 0.0:
        return out[1:]
    return out


def pm(mean: float, half: float, spec: str) -> str:
    """``mean ± half`` in ``spec`` for a table cell; ``mean`` alone without an interval, ``n/a``
    without a mean ([`fmt`][cmdp_rl.experiments.aggregate.fmt])."""
    if math.isnan(mean) or math.isnan(half):
        return fmt(mean, spec)
    return f"{fmt(mean, spec)} ± {fmt(half, spec)}"


def _num(x: float, digits: int = 3) -> str:
    """Compact number: thousands separators from 1000 up, else ``digits`` significant digits."""
    if x == 0:
        return "0"
    if not math.isnan(x) and abs(x) >= 1000:
        return fmt(x, ",.0f")
    return fmt(x, f".{digits}g")


def plus_minus(mean: float, half: float) -> str:
    """``mean ± half`` (just ``mean`` without an interval, ``n/a`` without a mean)."""
    if math.isnan(half) or math.isnan(mean):
        return _num(mean)
    return f"{_num(mean)} ± {_num(half, 2)}"


def summary_markdown(config: ExperimentConfig, records: Sequence[RunRecord]) -> str:
    """``summary.md``: final value gap and violation per scenario and algorithm (mean and 95%
    interval over runs), the samples at the final point, and for Online-CRL the cumulative
    violation, infeasible ELPs and eps-bad episode counts."""
    lines = [
        "# cmdp-rl reproduce: summary",
        "",
        f"Scenarios {', '.join(config.scenarios)}; {config.runs} runs per (scenario, algorithm); "
        f"root seed {config.seed}; delta {config.delta:g}; extended-LP method `{config.method}`.",
        "Each entry is the mean over runs at the final recorded point (largest budget) "
        "± the half-width of a 95% Student-t interval of the mean "
        "(mean ± t_{0.975, n-1} · s / √n). Value gap = V*(s0) − V^π(s0) (signed); "
        "violation = max_i max(C_i^π(s0) − c̄_i, 0); both exact on the true model.",
        "",
        "## Final value gap and violation",
        "",
        "| scenario | algorithm | runs | samples | V* | value gap | violation | runs with violation 0 |",
        "|---|---|---:|---:|---:|---|---|---:|",
    ]
    for sc in config.scenarios:
        for algo in config.algorithms:
            g = group(records, sc, algo)
            if not g:
                continue
            gap = np.array([r.columns["value_gap"][-1] for r in g])
            viol = np.array([r.columns["violation"][-1] for r in g])
            gm, gh = mean_ci(gap)
            vm, vh = mean_ci(viol)
            samples = int(g[0].columns["samples"][-1])
            zero = int(np.sum(viol <= 0.0))
            lines.append(
                f"| {sc} | {ALGORITHM_LABELS[algo]} | {len(g)} | {samples:,} | "
                f"{g[0].v_star:.4f} | {plus_minus(float(gm), float(gh))} | "
                f"{plus_minus(float(vm), float(vh))} | {zero}/{len(g)} |"
            )
    if "online-crl" in config.algorithms:
        eps_head = " | ".join(f"eps-bad episodes (eps={e:g})" for e in config.eps)
        lines += [
            "",
            "## Online-CRL over all episodes",
            "",
            "Cumulative violation = sum over episodes 1..K of each episode's violation; "
            "an episode is eps-bad when its policy's value gap or violation exceeds eps "
            "(Theorem 2's count).",
            "",
            f"| scenario | episodes K | samples | cumulative violation | infeasible ELPs | {eps_head} |",
            "|---|---:|---:|---|---|" + "---|" * len(config.eps),
        ]
        for sc in config.scenarios:
            g = group(records, sc, "online-crl")
            if not g:
                continue
            cells = []
            for name in ["cum_violation", "infeasible_episodes"] + [eps_column(e) for e in config.eps]:
                m, h = mean_ci([r.columns[name][-1] for r in g])
                cells.append(plus_minus(float(m), float(h)))
            K = int(g[0].columns["episodes"][-1])
            lines.append(f"| {sc} | {K:,} | {int(g[0].columns['samples'][-1]):,} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


__all__ = [
    "ALGORITHM_LABELS",
    "CI_LEVEL",
    "FLOAT_FORMAT",
    "Curve",
    "csv_columns",
    "curve",
    "group",
    "mean_ci",
    "results_csv",
    "summary_markdown",
]
