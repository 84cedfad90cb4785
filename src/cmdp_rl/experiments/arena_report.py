"""What ``compare`` shows of its runs: ``summary.md`` (per learner, the totals at the last episode
with their 95% intervals, the first departure from the baseline and the time per episode) and
the figures (regret, violation and strong violation against episodes, every learner on one pair
of axes) ([`compare`][cmdp_rl.experiments.compare.compare] writes them)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

import numpy as np
from matplotlib.figure import Figure

from cmdp_rl.experiments.aggregate import curve, fmt, mean_ci, plus_minus
from cmdp_rl.experiments.plots import plot_band
from cmdp_rl.experiments.runner import RunRecord
from cmdp_rl.learners import LABELS, SAFE_ALGORITHMS


class ArenaSettings(Protocol):
    """What the summary and figures read of a comparison's configuration
    ([`CompareConfig`][cmdp_rl.experiments.compare.CompareConfig] is one)."""

    @property
    def problem(self) -> str: ...
    @property
    def algorithms(self) -> tuple[str, ...]: ...
    @property
    def episodes(self) -> int: ...
    @property
    def runs(self) -> int: ...
    @property
    def seed(self) -> int: ...
    @property
    def delta(self) -> float: ...
    @property
    def bonus_scale(self) -> float: ...


FIGURES: dict[str, tuple[str, str]] = {
    "cum_value_gap": ("cumulative regret  $\\sum_{j \\leq k} (V^* - V^{\\pi_j})$", "Cumulative regret"),
    "cum_violation": (
        "cumulative violation  $\\sum_{j \\leq k} \\max_i (C_i^{\\pi_j} - \\bar{C}_i)^+$",
        "Cumulative constraint violation",
    ),
    "strong_violation": (
        "strong violation  $\\sum_{j \\leq k} \\sum_i (C_i^{\\pi_j} - \\bar{C}_i)^+$",
        "Strong violation (no cancellation)",
    ),
}
"""Figure metric -> (y-axis label, title)."""

COLORS: dict[str, str] = {
    "online-crl": "#d62728",
    "plugin": "#7f7f7f",
    "optcmdp": "#1f77b4",
    "optcmdp-bonus": "#17becf",
    "optdual": "#9467bd",
    "optpess": "#ff7f0e",
    "dope": "#2ca02c",
    "safe-crl": "#8c564b",
}


def _group(records: Sequence[RunRecord], algorithm: str) -> list[RunRecord]:
    return sorted((r for r in records if r.spec.algorithm == algorithm), key=lambda r: r.spec.run)


def summary_markdown(config: ArenaSettings, records: Sequence[RunRecord]) -> str:
    """``summary.md``: per algorithm, the final regret and violation totals (mean ± 95% interval
    over runs), violating and baseline episodes, and the time per episode."""
    lines = [
        f"# cmdp-rl compare: {config.problem}",
        "",
        f"{config.runs} runs per algorithm, {config.episodes:,} episodes each; root seed {config.seed}; "
        f"delta {config.delta:g}; bonus_scale {config.bonus_scale:g}. V* = "
        f"{records[0].v_star:.6g}."
        if records
        else "no runs",
        "Entries are means over runs at episode K ± the half-width of a 95% Student-t interval. "
        "Regret = sum_k (V* − V^π_k) (cum_value_gap); |regret| = sum_k |V* − V^π_k| (the DOPE "
        "code's, cum_abs_value_gap); violation = sum_k max_i (C_i^π_k − c̄_i)^+; a violating episode "
        "exceeds a threshold by more than 1e-9; baseline episodes played the safe baseline. Strong violation "
        "= sum_k sum_i (C_i^π_k − c̄_i)^+ (every constraint's excess, none cancelled: strong_violation). "
        "First departure: the first episode not played on the baseline alone, median over runs [min, max] "
        "(– while a run has not departed; no entry for a learner without a baseline). Time per "
        "episode = median plan time + median act time over a run's episodes (no scoring), averaged over runs.",
        "",
        "| algorithm | runs | regret | abs. regret | cum. violation | strong violation | violating episodes | "
        "baseline episodes | first departure | ms / episode |",
        "|---|---:|---|---|---|---|---|---|---|---:|",
    ]
    metrics = (
        "cum_value_gap",
        "cum_abs_value_gap",
        "cum_violation",
        "strong_violation",
        "violating_episodes",
        "baseline_episodes",
    )
    for algo in config.algorithms:
        g = _group(records, algo)
        if not g:
            continue
        cells = []
        for name in metrics:
            m, h = mean_ci([r.columns[name][-1] for r in g])
            cells.append(plus_minus(float(m), float(h)))
        cells.append(departure_cell(algo, [r.columns["first_departure"][-1] for r in g]))
        ms = float(np.mean([r.timing.get("plan_ms", math.nan) + r.timing.get("act_ms", math.nan) for r in g]))
        lines.append(f"| {LABELS[algo]} | {len(g)} | " + " | ".join(cells) + f" | {fmt(ms, '.3g')} |")
    return "\n".join(lines) + "\n"


def departure_cell(algorithm: str, firsts: Sequence[int | None]) -> str:
    """The summary's first-departure entry of one learner's runs: ``median [min, max]`` over the runs
    (a run that never departed counts as never: ``–`` when the median run did not), empty for a
    learner without a baseline."""
    if algorithm not in SAFE_ALGORITHMS:
        return ""
    ks = sorted(math.inf if k is None else k for k in firsts)
    med = ks[(len(ks) - 1) // 2]
    text = "–" if math.isinf(med) else f"{med:,}"
    if len(ks) > 1:
        text += f" [{'–' if math.isinf(ks[0]) else f'{ks[0]:,}'}, {'–' if math.isinf(ks[-1]) else f'{ks[-1]:,}'}]"
    return text


def metric_figure(config: ArenaSettings, records: Sequence[RunRecord], metric: str) -> Figure:
    """``metric`` (``cum_value_gap``, ``cum_violation`` or ``strong_violation``) against episodes, every
    algorithm on one pair of axes, mean with its 95% band; on the regret figure a dotted line marks
    where each safe learner's median run first left its baseline (``first_departure``)."""
    ylabel, title = FIGURES[metric]
    fig = Figure(figsize=(6.4, 4.2))
    ax = fig.add_subplot()
    for algo in config.algorithms:
        g = _group(records, algo)
        if g:
            log = metric != "cum_value_gap"
            plot_band(ax, curve(g, metric, x="episodes"), LABELS[algo], COLORS.get(algo), None, log)
            firsts = [r.columns["first_departure"][-1] for r in g]
            if metric == "cum_value_gap" and algo in SAFE_ALGORITHMS and any(k is not None for k in firsts):
                first = float(np.median([k if k is not None else math.inf for k in firsts]))
                if math.isfinite(first):  # where the median run left its baseline
                    ax.axvline(first, color=COLORS.get(algo), linewidth=0.9, linestyle=":", zorder=0)
    ax.axhline(0.0, color="black", linewidth=0.8, linestyle="--", zorder=0)
    ax.set_xlabel("episodes k")
    ax.set_ylabel(ylabel)
    ax.set_title(f"{title}: {config.problem}")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize="small", title="mean, 95% band", title_fontsize="small")
    return fig


__all__ = ["COLORS", "FIGURES", "ArenaSettings", "departure_cell", "metric_figure", "summary_markdown"]
