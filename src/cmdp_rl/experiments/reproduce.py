"""``reproduce``: run the sweep, aggregate, plot, and write everything into one folder.

Layout of ``out_dir``::

    config.toml        the configuration used (load it with --config to rerun)
    runs/              one JSON file per finished run (resume: rerunning skips them)
    results.csv        tidy table, one row per recorded point of every run
    summary.md         final gap/violation per scenario and algorithm, 95% intervals
    timings.csv        wall seconds per run, by scenario and algorithm (informational)
    figures/           fig_value_<sc>, fig_violation_<sc>, fig_certificate_<sc>, fig_cumulative_violation (.png, .svg)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from cmdp_rl.experiments.aggregate import results_csv, summary_markdown
from cmdp_rl.experiments.backends import SweepReport, backend_session, check_backend, run_sweep
from cmdp_rl.experiments.config import ExperimentConfig
from cmdp_rl.experiments.plots import write_figures
from cmdp_rl.experiments.runner import RunRecord, run_specs
from cmdp_rl.experiments.store import load_all, runs_check
from cmdp_rl.plumbing.atomic import write_atomic
from cmdp_rl.plumbing.limits import Estimate, learn_estimate, sweep_estimate
from cmdp_rl.plumbing.results_folder import check_output_folder, results_folder


@dataclass(frozen=True)
class ReproduceResult:
    """Where [`reproduce`][cmdp_rl.experiments.reproduce.reproduce] put things, and what it did.

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


#: what reproduce writes into its folder (removed when --force replaces another configuration's)
OUTPUTS = ("results.csv", "summary.md", "timings.csv", "figures")


@cache
def _sizes(spec: str) -> tuple[int, int, int, int]:
    """``(S, A, H, N)`` of a registered problem, from its parameters where its family declares its
    sizes ([`problem_sizes`][cmdp_rl.envs.registry.problem_sizes]: the study's families are not built
    to be counted), else from a build; a discounted problem is refused naming ``gamma``."""
    from cmdp_rl.envs.registry import make, problem_sizes

    S, A, H, N = problem_sizes(spec)
    return S, A, make(spec).horizon("reproduce") if H is None else H, N


def estimate_sweep(config: ExperimentConfig) -> Estimate:
    """Planned memory and wall time of ``config``'s sweep (no allocation): the Online-CRL runs
    dominate; ``jobs`` workers share the time, and each worker process counts its own footprint
    (``limits.WORKER_BYTES``) and one run's records
    ([`sweep_estimate`][cmdp_rl.plumbing.limits.sweep_estimate])."""
    sizes = {name: _sizes(name) for name in config.scenarios}
    seconds, peak = 0.0, 0.0
    # the runs of one (scenario, algorithm) share their estimate: computed once, times the runs
    # (arithmetic on the counts: a configuration of a billion runs is estimated without listing them)
    for sc in config.scenarios:
        S, A, H, N = sizes[sc]
        for algo in config.algorithms:
            if algo == "online-crl":
                est = learn_estimate(S, A, H, N, episodes=config.episodes[sc], method=config.method, nnz_per_row=3)
            else:
                budgets = config.gmbl_budgets(sc)
                est = learn_estimate(S, A, H, N, samples_per_pair=max(budgets), method=config.method, nnz_per_row=3)
                est = Estimate(est.bytes, est.seconds * len(budgets))
            seconds += est.seconds * config.runs
            peak = max(peak, est.bytes)
    total = len(config.scenarios) * len(config.algorithms) * config.runs
    return sweep_estimate(Estimate(peak, 0.0), total, config.jobs, config.backend, seconds=seconds)


def reproduce(
    config: ExperimentConfig | None = None,
    out_dir: str | os.PathLike[str] = "results/paper",
    progress: bool = True,
    force: bool = False,
) -> ReproduceResult:
    """Run the experiment protocol of ``config`` into ``out_dir`` (resumable).

    Checks first and writes nothing if a check fails: ``out_dir`` must be usable as a
    folder and must not hold finished runs of a different configuration (``force``
    deletes those instead). Then writes the configuration, runs every run without a
    valid file in ``out_dir/runs`` (so an interrupted call, rerun, loses only the runs
    that were in flight), aggregates all runs into ``results.csv`` and ``summary.md``
    and draws the figures; every file is written atomically.

    Args:
        config: the sweep (default: the full protocol,
            [`ExperimentConfig`][cmdp_rl.experiments.config.ExperimentConfig]).
        out_dir: output folder (created if missing).
        progress: show a progress bar on stderr.
        force: replace finished runs of another configuration found in ``out_dir``.

    Raises:
        CMDPInputError: ``out_dir`` is a file or not writable, or holds runs of a
            different configuration (without ``force``), or the backend cannot run (Ray not
            installed, not started or not reached); nothing is written then.
    """
    cfg = config if config is not None else ExperimentConfig()
    check_output_folder(out_dir)
    check_backend(cfg)
    out = Path(out_dir)
    runs_dir = out / "runs"
    specs = run_specs(cfg)
    check_runs = runs_check([(runs_dir, specs)], force)
    with (
        backend_session(cfg),
        results_folder(
            out, cfg.to_toml(), command="reproduce", force=force, outputs=OUTPUTS, under_lock=check_runs
        ) as folder,
    ):
        config_path = out / "config.toml"
        sweep = run_sweep(cfg, runs_dir, progress=progress)
        records = load_all(runs_dir, specs)
        csv_path, summary_path, timing_path = out / "results.csv", out / "summary.md", out / "timings.csv"
        write_atomic(csv_path, results_csv(cfg, records))
        summary = summary_markdown(cfg, records)
        write_atomic(summary_path, summary)
        write_atomic(timing_path, timings_csv(cfg, records))
        # figures in parallel on the local machine only (forking a Ray driver is unsafe)
        figures = write_figures(cfg, records, out / "figures", jobs=cfg.jobs if cfg.backend == "local" else 1)
        folder.complete()
    return ReproduceResult(
        out, config_path, runs_dir, csv_path, summary_path, timing_path, tuple(figures), summary, sweep
    )


__all__ = ["ReproduceResult", "reproduce", "timings_csv"]
