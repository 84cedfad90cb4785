"""The paper's figures from the run records (headless matplotlib, no pyplot state).

* ``fig_value_<scenario>``: value difference ``V*(s0) - V^pi(s0)`` against samples,
* ``fig_violation_<scenario>``: constraint violation against samples,

both algorithms on one log-scaled sample axis, mean over runs with a 95%
Student-t band (clipped at 0 for the non-negative violation metrics) and a zero
line (the paper's six figures for 1a, 1b, 2); and
``fig_cumulative_violation``: Online-CRL's cumulative violation against
episodes, one curve per scenario; and ``fig_certificate_<scenario>``: the true cost of
the current policy, its certified upper bound ([`certify`][cmdp_rl.certificates.certify.certify], valid
radius) and the threshold against samples, so a reader sees when a learned policy
becomes certifiably safe. Every figure is written as PNG and SVG.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from cmdp_rl.experiments.aggregate import ALGORITHM_LABELS, Curve, curve, group
from cmdp_rl.experiments.config import ExperimentConfig
from cmdp_rl.experiments.runner import RunRecord, file_stem
from cmdp_rl.plumbing.atomic import atomic_path
from cmdp_rl.plumbing.interrupts import init_worker, starting_workers
from cmdp_rl.plumbing.validation import check_positive_int

FORMATS: tuple[str, ...] = ("png", "svg")
"""File formats written for every figure."""

METRICS: dict[str, tuple[str, str]] = {
    "value": ("value_gap", "value difference  $V^*(s_0) - V^{\\pi}(s_0)$"),
    "violation": ("violation", "constraint violation  $\\max(C^{\\pi}(s_0) - \\bar{C}, 0)$"),
}
"""Figure kind -> (record column, y-axis label)."""

STYLE: dict[str, dict[str, object]] = {
    "gmbl": {"color": "#1f77b4", "marker": "o"},
    "online-crl": {"color": "#d62728", "marker": "s"},
}
SCENARIO_COLORS: tuple[str, ...] = ("#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf")

_SVG_META: dict[str, str | None] = {"Date": None}  # no timestamp: same records, same SVG bytes


def plot_band(ax: Axes, c: Curve, label: str, color: object, marker: object, nonnegative: bool = False) -> None:
    """Mean line with its 95% band; the band is clipped at 0 for a non-negative metric."""
    ax.plot(c.x, c.mean, label=f"{label} (n={c.runs})", color=color, marker=marker, markersize=3.5, linewidth=1.6)
    if c.runs > 1:
        lo = c.mean - c.half
        if nonnegative:
            lo = np.maximum(lo, 0.0)
        ax.fill_between(c.x, lo, c.mean + c.half, color=color, alpha=0.2, linewidth=0)


def save_figure(fig: Figure, out_dir: Path, stem: str) -> list[Path]:
    FigureCanvasAgg(fig)
    paths = []
    with matplotlib.rc_context({"svg.hashsalt": "cmdp-rl"}):
        for fmt in FORMATS:
            p = out_dir / f"{stem}.{fmt}"
            if fmt == "svg":
                with atomic_path(p) as tmp:
                    fig.savefig(tmp, format=fmt, bbox_inches="tight", metadata=_SVG_META)
            else:
                with atomic_path(p) as tmp:
                    fig.savefig(tmp, format=fmt, bbox_inches="tight", dpi=150)
            paths.append(p)
    return paths


def metric_figure(config: ExperimentConfig, records: Sequence[RunRecord], scenario: str, kind: str) -> Figure:
    """One of the paper's figures: ``kind`` ``"value"`` or ``"violation"`` for ``scenario``."""
    column, ylabel = METRICS[kind]
    fig = Figure(figsize=(6.0, 4.0))
    ax = fig.add_subplot()
    for algo in config.algorithms:
        g = group(records, scenario, algo)
        if g:
            st = STYLE.get(algo, {})
            plot_band(
                ax,
                curve(g, column),
                ALGORITHM_LABELS[algo],
                st.get("color"),
                st.get("marker"),
                nonnegative=(kind == "violation"),
            )
    ax.axhline(0.0, color="black", linewidth=0.8, linestyle="--", zorder=0)
    ax.set_xscale("log")
    ax.set_xlabel("samples drawn from the environment")
    ax.set_ylabel(ylabel)
    title = "Value difference" if kind == "value" else "Constraint violation"
    ax.set_title(f"{title} for scenario {scenario}")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="best", fontsize="small", title="mean, 95% band", title_fontsize="small")
    return fig


def cumulative_figure(config: ExperimentConfig, records: Sequence[RunRecord]) -> Figure:
    """Online-CRL's cumulative violation against episodes, one curve per scenario."""
    fig = Figure(figsize=(6.0, 4.0))
    ax = fig.add_subplot()
    for i, sc in enumerate(config.scenarios):
        g = group(records, sc, "online-crl")
        if g:
            col = SCENARIO_COLORS[i % len(SCENARIO_COLORS)]
            plot_band(ax, curve(g, "cum_violation", x="episodes"), f"scenario {sc}", col, None, nonnegative=True)
    ax.axhline(0.0, color="black", linewidth=0.8, linestyle="--", zorder=0)
    ax.set_xscale("log")
    ax.set_xlabel("episodes k")
    ax.set_ylabel("cumulative violation (sum over episodes 1..k)")
    ax.set_title("Online-CRL: cumulative constraint violation")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="best", fontsize="small", title="mean, 95% band", title_fontsize="small")
    return fig


def certificate_figure(config: ExperimentConfig, records: Sequence[RunRecord], scenario: str) -> Figure:
    """True cost, certified cost upper bound and threshold against samples, both learners."""
    from cmdp_rl.envs.registry import make

    c_bar = make(scenario).c_bar
    fig = Figure(figsize=(6.0, 4.0))
    ax = fig.add_subplot()
    for algo in config.algorithms:
        g = group(records, scenario, algo)
        if g and "cost_hi" in g[0].columns:
            st = STYLE.get(algo, {})
            label = ALGORITHM_LABELS[algo]
            plot_band(ax, curve(g, "cost"), f"{label}: true cost", st.get("color"), st.get("marker"))
            hi = curve(g, "cost_hi")
            ax.plot(hi.x, hi.mean, label=f"{label}: certified upper bound", color=st.get("color"), linestyle=":")
            if hi.runs > 1:
                ax.fill_between(hi.x, hi.mean - hi.half, hi.mean + hi.half, color=st.get("color"), alpha=0.1)
    for i, cb in enumerate(np.unique(c_bar)):
        ax.axhline(float(cb), color="black", linewidth=1.0, linestyle="--", label="threshold" if i == 0 else None)
    ax.set_xscale("log")
    ax.set_xlabel("samples drawn from the environment")
    worst = "" if c_bar.size <= 1 else " (constraint with the largest certified excess)"
    ax.set_ylabel("cost of the current policy" + worst)
    ax.set_title(f"Certified safety for scenario {scenario} (delta = {config.delta:g})")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="best", fontsize="small", title="mean, 95% band", title_fontsize="small")
    return fig


def _figure_tasks(config: ExperimentConfig) -> list[tuple[str, str]]:
    """``(kind, scenario)`` of every figure of ``config``, in the order they are written."""
    tasks = [(kind, sc) for sc in config.scenarios for kind in (*METRICS, "certificate")]
    if "online-crl" in config.algorithms:
        tasks.append(("cumulative", ""))
    return tasks


def _draw(task: tuple[str, str], config: ExperimentConfig, records: Sequence[RunRecord], out_dir: Path) -> list[Path]:
    """Draw and save one figure of ``_figure_tasks``."""
    kind, sc = task
    if kind == "cumulative":
        return save_figure(cumulative_figure(config, records), out_dir, "fig_cumulative_violation")
    if kind == "certificate":
        return save_figure(certificate_figure(config, records, sc), out_dir, f"fig_certificate_{file_stem(sc)}")
    return save_figure(metric_figure(config, records, sc, kind), out_dir, f"fig_{kind}_{file_stem(sc)}")


def write_figures(config: ExperimentConfig, records: Sequence[RunRecord], out_dir: Path, jobs: int = 1) -> list[Path]:
    """Write every figure of ``config`` into ``out_dir`` as PNG and SVG; return the paths.

    ``fig_value_<sc>``, ``fig_violation_<sc>``, ``fig_certificate_<sc>`` for each scenario, and
    ``fig_cumulative_violation`` when Online-CRL is in the sweep. With ``jobs > 1`` the
    figures are drawn by that many forked processes (where the platform forks; the same
    bytes as drawn one by one: each figure depends only on the records).
    """
    jobs = check_positive_int("jobs", jobs)
    out_dir.mkdir(parents=True, exist_ok=True)
    tasks = _figure_tasks(config)
    draw = partial(_draw, config=config, records=records, out_dir=out_dir)
    if jobs > 1 and len(tasks) > 1 and "fork" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=ctx, initializer=init_worker) as pool:
            with starting_workers():  # the workers start (on the first submissions) with SIGINT blocked
                results = pool.map(draw, tasks)
            drawn = list(results)
    else:
        drawn = [draw(t) for t in tasks]
    return [p for paths in drawn for p in paths]


__all__ = ["FORMATS", "METRICS", "certificate_figure", "cumulative_figure", "metric_figure", "write_figures"]
