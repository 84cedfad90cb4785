"""``study n-constraints``: does the number of samples grow like ``log N`` in the number of constraints?

The paper's Theorems 1-2 let ``N`` enter only through the union bound of the
confidence level (``delta_P = delta / (12 (N + 2) S^2 A H)``, ``delta_1 = delta / (4 (N + 1) S U)``),
so the samples needed should grow like ``log N``. The study runs both learners on the
N-constraints family ([`cmdp_rl.envs.n_constraints`][cmdp_rl.envs.n_constraints]: ``copies``, one constraint N
times, and ``distinct``, N different ones) for each ``N`` and each radius rule, with the
same runner, store, progress bar and checksums as ``reproduce`` (one runs folder per
radius), then measures, per run, the samples needed until the policy is eps-optimal and
eps-feasible *and stays so* at every later recorded point, and fits ``a + b log N`` and
``a + b N`` to them.

Layout of ``out_dir``::

    config.toml         the study's settings
    models/             the instances, ``<family>_n<N>.npz`` (re-solve them with cmdp-rl solve)
    runs/<radius>/      one JSON file per finished run (resume: rerunning skips them)
    results.csv         tidy: one row per recorded point of every run
    samples_needed.csv  one row per run and eps: samples until eps-good for good
    fits.csv            per (family, algorithm, radius, eps): both fits with 95% intervals
    timings.csv         per-episode / per-plan compute time (so the CSVs' bytes repeat)
    summary.md          the fits and the theory's own N-dependence
    figures/            fig_samples_needed_<family>, fig_final_gap (.png, .svg)
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from cmdp_rl.experiments.aggregate import format_cell
from cmdp_rl.experiments.backends import backend_session, check_backend, run_sweep
from cmdp_rl.experiments.runner import eps_column, run_specs
from cmdp_rl.experiments.store import load_all, runs_check
from cmdp_rl.experiments.study_analysis import (
    Fit,
    family_n,
    fit_rows,
    linear_fit,
    needed_rows,
    results_rows,
    samples_to_eps,
    summary_text,
    theory_growth,
)
from cmdp_rl.experiments.study_config import (
    FAMILIES,
    NEEDED_COLUMNS,
    RESULT_COLUMNS,
    NConstraintsStudy,
    model_file,
    problem_spec,
)
from cmdp_rl.plumbing.atomic import write_atomic
from cmdp_rl.plumbing.results_folder import check_output_folder, results_folder

Array = NDArray[np.float64]


@dataclass(frozen=True)
class StudyResult:
    """Where ``run_study`` put things (paths) and the text of ``summary.md``."""

    out_dir: Path
    results_csv: Path
    needed_csv: Path
    fits_csv: Path
    timings_csv: Path
    summary_md: Path
    figures: tuple[Path, ...]
    summary: str


def _csv(rows: list[list[Any]], header: Sequence[str]) -> str:
    return "\n".join([",".join(header)] + [",".join(format_cell(v) for v in row) for row in rows]) + "\n"


def _figures(study: NConstraintsStudy, needed: list[list[Any]], out_dir: Path) -> list[Path]:
    from matplotlib.figure import Figure

    from cmdp_rl.envs.registry import make
    from cmdp_rl.experiments.plots import STYLE, save_figure

    out_dir.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    m = make(problem_spec(study.families[0], study.ns[0]))
    e = study.eps[len(study.eps) // 2]
    ns = np.array(study.ns, dtype=np.float64)
    for family in study.families:
        fig = Figure(figsize=(6.5, 4.2))
        ax = fig.add_subplot()
        for algo in study.algorithms:
            for radius in study.radii:
                means, halves, xs = [], [], []
                for n in study.ns:
                    got = [
                        r[6] for r in needed if (r[0], r[1], r[2], r[3], r[5]) == (n, family, algo, radius, e) and r[7]
                    ]
                    if got:
                        a = np.asarray(got, dtype=np.float64)
                        xs.append(n)
                        means.append(a.mean())
                        halves.append(
                            stats.t.ppf(0.975, a.size - 1) * a.std(ddof=1) / math.sqrt(a.size) if a.size > 1 else 0.0
                        )
                if not xs:
                    continue
                st = STYLE.get(algo, {})
                ls = "-" if radius == "paper" else "--"
                ax.errorbar(
                    xs,
                    means,
                    yerr=halves,
                    label=f"{algo}, {radius}",
                    color=st.get("color"),
                    marker=st.get("marker"),
                    linestyle=ls,
                    capsize=3,
                    markersize=4,
                )
                growth = theory_growth(algo, study.ns, m.S, m.A, m.horizon("study"), 0.1, study.delta)
                ax.plot(ns, means[0] * growth, color=st.get("color"), linestyle=":", linewidth=1.0, alpha=0.7)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")  # GMBL and Online-CRL differ by orders of magnitude
        ax.set_xlabel("number of constraints N")
        ax.set_ylabel(f"samples until eps-good for good (eps = {e:g})")
        ax.set_title(f"Samples needed against N, family '{family}' (dotted: theory's N-dependence)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small", title="mean, 95% interval", title_fontsize="small")
        paths += save_figure(fig, out_dir, f"fig_samples_needed_{family}")
    return paths


#: what the study writes into its folder (removed when --force replaces another configuration's)
OUTPUTS = ("results.csv", "samples_needed.csv", "fits.csv", "timings.csv", "summary.md", "figures", "study.toml")


def run_study(
    study: NConstraintsStudy | None = None,
    out_dir: str | os.PathLike[str] = "results/n-constraints",
    progress: bool = True,
    force: bool = False,
) -> StudyResult:
    """Run the study into ``out_dir`` (resumable; checks before writing anything, as ``reproduce``:
    the folder, the backend (Ray installed, started or reached), runs of other settings)."""
    from cmdp_rl.envs.registry import make

    st = study if study is not None else NConstraintsStudy()
    check_output_folder(out_dir)
    check_backend(st)
    out = Path(out_dir)
    configs = st.experiment_configs()

    check_runs = runs_check([(out / "runs" / radius, run_specs(cfg)) for radius, cfg in configs.items()], force)

    with (
        backend_session(st),
        results_folder(
            out, st.to_toml(), command="study", force=force, outputs=OUTPUTS, under_lock=check_runs
        ) as folder,
    ):
        (out / "models").mkdir(exist_ok=True)
        v_star: dict[str, float] = {}
        for family in st.families:
            for n in st.ns:
                model = make(problem_spec(family, n))
                path = out / model_file(family, n)
                if not path.exists():
                    model.save(path)
        results: list[list[Any]] = []
        needed: list[list[Any]] = []
        timing_rows: list[list[Any]] = []
        for radius, cfg in configs.items():
            runs_dir = out / "runs" / radius
            run_sweep(cfg, runs_dir, progress=progress)
            records = load_all(runs_dir, run_specs(cfg))
            results += results_rows(cfg.eps, radius, records)
            needed += needed_rows(st, radius, records)
            for rec in records:
                family, n = family_n(rec.spec.scenario)
                v_star[rec.spec.scenario] = rec.v_star
                plans = rec.spec.episodes if rec.spec.algorithm == "online-crl" else len(rec.spec.budgets)
                timing_rows.append(
                    [n, family, rec.spec.algorithm, radius, rec.spec.run, rec.seconds, rec.seconds / plans]
                )
        eps_cols = [eps_column(e) for e in next(iter(configs.values())).eps]
        res_path = out / "results.csv"
        write_atomic(res_path, _csv(results, [*RESULT_COLUMNS, *eps_cols]))
        need_path = out / "samples_needed.csv"
        write_atomic(need_path, _csv(needed, NEEDED_COLUMNS))
        fits = fit_rows(st, needed)
        fits_path = out / "fits.csv"
        keys = list(fits[0]) if fits else []
        write_atomic(fits_path, _csv([[f[k] for k in keys] for f in fits], keys))
        timing_path = out / "timings.csv"
        write_atomic(
            timing_path,
            _csv(timing_rows, ["n_constraints", "family", "algorithm", "radius", "run", "seconds", "seconds_per_plan"]),
        )
        summary = summary_text(st, needed, fits, dict(sorted(v_star.items(), key=lambda kv: family_n(kv[0]))))
        summary_path = out / "summary.md"
        write_atomic(summary_path, summary)
        figures = _figures(st, needed, out / "figures")
        folder.complete()
    return StudyResult(out, res_path, need_path, fits_path, timing_path, summary_path, tuple(figures), summary)


__all__ = [
    "FAMILIES",
    "NEEDED_COLUMNS",
    "RESULT_COLUMNS",
    "Fit",
    "NConstraintsStudy",
    "StudyResult",
    "linear_fit",
    "model_file",
    "problem_spec",
    "run_study",
    "samples_to_eps",
    "theory_growth",
]
