"""``reproduce``: run the sweep, aggregate, plot, and write everything into one folder.

Layout of ``out_dir``::

    config.toml        the configuration used (load it with --config to rerun)
    runs/              one JSON file per finished run (resume: rerunning skips them)
    results.csv        tidy table, one row per recorded point of every run
    summary.md         final gap/violation per scenario and algorithm, 95% intervals
    timings.csv        wall seconds per run, by scenario and algorithm (informational)
    figures/           fig_value_<sc>, fig_violation_<sc>, fig_cumulative_violation (.png, .svg)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..validation import CMDPInputError
from .aggregate import results_csv, summary_markdown
from .backends import SweepReport, run_sweep
from .config import ExperimentConfig
from .plots import write_figures
from .runner import RunRecord, run_specs
from .store import load_all, write_atomic


@dataclass(frozen=True)
class ReproduceResult:
    """Where :func:`reproduce` put things, and what it did.

    Attributes:
        out_dir: the output folder.
        config_path: ``config.toml``.
        runs_dir: folder of per-run files.
        results_csv: the tidy CSV.
        summary_md: the markdown summary.
        timings_csv: per-(scenario, algorithm) run times.
        figures: every figure file (PNG and SVG).
        summary: the text of ``summary.md``.
        sweep: what the sweep computed, reused and removed.
    """

    out_dir: Path
    config_path: Path
    runs_dir: Path
    results_csv: Path
    summary_md: Path
    timings_csv: Path
    figures: tuple[Path, ...]
    summary: str
    sweep: SweepReport


def timings_csv(config: ExperimentConfig, records: list[RunRecord]) -> str:
    """CSV of run wall times: ``scenario, algorithm, runs, mean_seconds, max_seconds, total_seconds``."""
    lines = ["scenario,algorithm,runs,mean_seconds,max_seconds,total_seconds"]
    for sc in config.scenarios:
        for algo in config.algorithms:
            t = np.array(
                [r.seconds for r in records if r.spec.scenario == sc and r.spec.algorithm == algo],
                dtype=float,
            )
            t = t[np.isfinite(t)]
            if t.size:
                lines.append(f"{sc},{algo},{t.size},{t.mean():.3f},{t.max():.3f},{t.sum():.3f}")
    return "\n".join(lines) + "\n"


def reproduce(
    config: ExperimentConfig | None = None,
    out_dir: str | os.PathLike[str] = "results/paper",
    progress: bool = True,
) -> ReproduceResult:
    """Run the experiment protocol of ``config`` into ``out_dir`` (resumable).

    Writes the configuration first, then runs every run without a valid file in
    ``out_dir/runs`` (so an interrupted call, rerun, loses only the runs that were
    in flight), then aggregates all runs into ``results.csv`` and ``summary.md``
    and draws the figures.

    Args:
        config: the sweep (default: the full protocol, :class:`ExperimentConfig`).
        out_dir: output folder (created if missing).
        progress: show a progress bar on stderr.

    Raises:
        CMDPInputError: ``out_dir`` is a file, or holds runs of a different configuration.
    """
    cfg = config if config is not None else ExperimentConfig()
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise CMDPInputError(f"out: {out} exists and is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    config_path = out / "config.toml"
    write_atomic(config_path, cfg.to_toml())
    runs_dir = out / "runs"
    sweep = run_sweep(cfg, runs_dir, progress=progress)
    records = load_all(runs_dir, run_specs(cfg))
    csv_path, summary_path, timing_path = out / "results.csv", out / "summary.md", out / "timings.csv"
    write_atomic(csv_path, results_csv(cfg, records))
    summary = summary_markdown(cfg, records)
    write_atomic(summary_path, summary)
    write_atomic(timing_path, timings_csv(cfg, records))
    figures = write_figures(cfg, records, out / "figures")
    return ReproduceResult(
        out, config_path, runs_dir, csv_path, summary_path, timing_path, tuple(figures), summary, sweep
    )


__all__ = ["ReproduceResult", "reproduce", "timings_csv"]
