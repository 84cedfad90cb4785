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

import dataclasses
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import tomli_w
from numpy.typing import NDArray
from scipy import stats

from cmdp_rl.experiments.aggregate import fmt, format_cell, pm
from cmdp_rl.experiments.backends import backend_session, check_backend, run_sweep
from cmdp_rl.experiments.config import ExperimentConfig, default_jobs
from cmdp_rl.experiments.runner import RunRecord, eps_column, run_specs
from cmdp_rl.experiments.store import load_all, runs_check
from cmdp_rl.plumbing.atomic import write_atomic
from cmdp_rl.plumbing.names import BACKENDS, RADII
from cmdp_rl.plumbing.results_folder import check_output_folder, results_folder
from cmdp_rl.plumbing.validation import CMDPInputError, plain

Array = NDArray[np.float64]

FAMILIES: tuple[str, ...] = ("copies", "distinct")
STUDY_ALGORITHMS: tuple[str, ...] = ("gmbl", "online-crl")
FULL_NS: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)
QUICK_NS: tuple[int, ...] = (1, 4, 16)

RESULT_COLUMNS: tuple[str, ...] = (
    "n_constraints",
    "family",
    "algorithm",
    "radius",
    "run",
    "samples",
    "episodes",
    "n_per_pair",
    "value_gap",
    "violation",
    "v_star",
    "model",
    "cum_value_gap",
    "cum_violation",
    "cost_hi",
    "certified_safe",
)
"""Columns of ``results.csv`` before the ``bad_eps_<eps>`` counters (Online-CRL; blank for GMBL)."""

NEEDED_COLUMNS: tuple[str, ...] = (
    "n_constraints",
    "family",
    "algorithm",
    "radius",
    "run",
    "eps",
    "samples",
    "reached",
    "bad_episodes",
    "v_star",
    "model",
)
"""Columns of ``samples_needed.csv``: ``samples`` needed (blank if not ``reached`` within the budget)."""


def problem_spec(family: str, n: int) -> str:
    """The registry spec of an instance, e.g. ``"distinct:n=16"``."""
    return f"{family}:n={n}"


def model_file(family: str, n: int) -> str:
    """The instance's path relative to the output folder, e.g. ``models/distinct_n16.npz``."""
    return f"models/{family}_n{n}.npz"


@dataclass(frozen=True)
class NConstraintsStudy:
    """Settings of the ``log N`` study (validated on construction; errors name the field).

    Attributes:
        ns: numbers of constraints ``N``.
        families: ``"copies"`` and/or ``"distinct"``.
        algorithms: ``"gmbl"`` and/or ``"online-crl"``.
        radii: the learners' radius rules (``"paper"``, ``"empirical-bernstein"``).
        runs: runs per (N, family, algorithm, radius).
        seed: root seed (each run's stream as in ``reproduce``).
        delta: the learners' failure probability.
        episodes: Online-CRL episodes per run.
        gmbl_n_min, gmbl_n_max, gmbl_points: GMBL's grid of samples per pair.
        checkpoints: recorded Online-CRL episodes per run.
        eps: accuracies of the samples-needed statistic (and Theorem 2's eps-bad counts).
        jobs, backend, address: as in ``reproduce``.
    """

    ns: tuple[int, ...] = FULL_NS
    families: tuple[str, ...] = FAMILIES
    algorithms: tuple[str, ...] = STUDY_ALGORITHMS
    radii: tuple[str, ...] = RADII
    runs: int = 10
    seed: int = 0
    delta: float = 0.1
    episodes: int = 2000
    gmbl_n_min: int = 10
    gmbl_n_max: int = 20_000
    gmbl_points: int = 15
    checkpoints: int = 30
    eps: tuple[float, ...] = (0.1, 0.2, 0.4)
    jobs: int = dataclasses.field(default_factory=default_jobs)
    backend: str = "local"
    address: str | None = None

    def __post_init__(self) -> None:
        put = object.__setattr__
        ns = tuple(self.ns)
        if not ns or any(not isinstance(n, int) or isinstance(n, bool) or n < 1 for n in ns):
            raise CMDPInputError(f"ns: must be a non-empty list of integers >= 1, got {plain(self.ns)}")
        put(self, "ns", tuple(sorted(set(ns))))
        for name, allowed in (("families", FAMILIES), ("algorithms", STUDY_ALGORITHMS), ("radii", RADII)):
            vals = tuple(getattr(self, name))
            bad = [v for v in vals if v not in allowed]
            if not vals or bad:
                raise CMDPInputError(f"{name}: must be a non-empty subset of {list(allowed)}, got {plain(vals)}")
            put(self, name, vals)
        eps = tuple(self.eps)
        if not eps or any(isinstance(e, bool) or not isinstance(e, (int, float)) or not 0 < e < math.inf for e in eps):
            raise CMDPInputError(f"eps: must be a non-empty list of positive numbers, got {plain(self.eps)}")
        put(self, "eps", tuple(sorted({float(e) for e in eps})))
        if self.backend not in BACKENDS:
            raise CMDPInputError(f"backend: must be one of {list(BACKENDS)}, got {plain(self.backend)}")
        for cfg in self.experiment_configs().values():  # validates every other field (names them)
            del cfg

    @classmethod
    def quick(cls, **overrides: Any) -> NConstraintsStudy:
        """Both families, both learners, both radii, ``N`` in {1, 4, 16}: under 3 minutes on 2 cores."""
        base: dict[str, Any] = dict(
            ns=QUICK_NS, runs=2, episodes=300, gmbl_n_max=2000, gmbl_points=6, checkpoints=10, eps=(0.2, 0.4)
        )
        base.update(overrides)
        return cls(**base)

    def experiment_configs(self) -> dict[str, ExperimentConfig]:
        """One ``reproduce`` configuration per radius (same problems, runs and seeds)."""
        specs = tuple(problem_spec(f, n) for f in self.families for n in self.ns)
        eps = tuple(e for e in self.eps if e < 1) or (0.5,)
        return {
            radius: ExperimentConfig(
                scenarios=specs,
                algorithms=self.algorithms,
                runs=self.runs,
                seed=self.seed,
                delta=self.delta,
                gmbl_n_min=self.gmbl_n_min,
                gmbl_n_max=dict.fromkeys(specs, self.gmbl_n_max),
                gmbl_points=self.gmbl_points,
                episodes=dict.fromkeys(specs, self.episodes),
                checkpoints=self.checkpoints,
                eps=eps,
                radius=radius,
                jobs=self.jobs,
                backend=self.backend,
                address=self.address,
            )
            for radius in self.radii
        }

    def to_toml(self) -> str:
        data = {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(self).items()}
        data = {k: v for k, v in data.items() if v is not None}
        return "# cmdp-rl study n-constraints settings\n" + tomli_w.dumps(data)


# -- statistics ---------------------------------------------------------------------------


def samples_to_eps(samples: Sequence[float], gap: Sequence[float], violation: Sequence[float], eps: float) -> float:
    """The first recorded ``samples`` from which on the policy is eps-optimal and eps-feasible at every
    later recorded point (``gap <= eps`` and ``violation <= eps``); ``nan`` if the last point is not.

    Points are taken in increasing ``samples`` order.
    """
    x = np.asarray(samples, dtype=np.float64)
    order = np.argsort(x, kind="stable")
    good = (np.asarray(gap, dtype=np.float64)[order] <= eps) & (np.asarray(violation, dtype=np.float64)[order] <= eps)
    if good.size == 0 or not good[-1]:
        return float("nan")
    bad = np.flatnonzero(~good)
    first = 0 if bad.size == 0 else int(bad[-1]) + 1
    return float(x[order][first])


@dataclass(frozen=True)
class Fit:
    """Least-squares fit ``y = a + b g(N)`` with 95% Student-t intervals.

    Attributes:
        a, b: intercept and slope; a_half, b_half: their 95% half-widths.
        r2: coefficient of determination; rss: residual sum of squares; points: data points.
    """

    a: float
    b: float
    a_half: float
    b_half: float
    r2: float
    rss: float
    points: int


def linear_fit(g: Array, y: Array) -> Fit:
    """Ordinary least squares of ``y`` on ``[1, g]`` (each run one point), with 95% t intervals."""
    g, y = np.asarray(g, dtype=np.float64), np.asarray(y, dtype=np.float64)
    n = y.size
    if n < 2 or np.ptp(g) == 0:
        return Fit(float(np.mean(y)) if n else math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, n)
    X = np.column_stack([np.ones(n), g])
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ coef
    rss = float(resid @ resid)
    tss = float(((y - y.mean()) ** 2).sum())
    if n > 2:
        s2 = rss / (n - 2)
        cov = s2 * np.linalg.inv(X.T @ X)
        t = float(stats.t.ppf(0.975, n - 2))
        a_half, b_half = t * math.sqrt(cov[0, 0]), t * math.sqrt(cov[1, 1])
    else:
        a_half = b_half = math.nan
    r2 = 1.0 - rss / tss if tss > 0 else math.nan
    return Fit(float(coef[0]), float(coef[1]), a_half, b_half, r2, rss, n)


def theory_growth(algorithm: str, ns: Sequence[int], S: int, A: int, H: int, eps: float, delta: float) -> Array:
    """The theory bound's samples at each ``N`` divided by its value at ``ns[0]`` (the bounds' own
    N-dependence: Theorem 1's ``n`` for GMBL, eq. "m"'s ``m`` for Online-CRL)."""
    from cmdp_rl.confidence.sample_size import gmbl_bounds, online_crl_bounds

    vals = []
    for n in ns:
        if algorithm == "gmbl":
            vals.append(float(gmbl_bounds(S, A, H, n, eps, delta).n_per_pair))
        else:
            vals.append(float(online_crl_bounds(S, A, H, n, eps, delta).m))
    arr = np.asarray(vals)
    out: Array = arr / arr[0]
    return out


# -- the study ----------------------------------------------------------------------------


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


def _family_n(spec: str) -> tuple[str, int]:
    family, _, rest = spec.partition(":n=")
    return family, int(rest)


def _csv(rows: list[list[Any]], header: Sequence[str]) -> str:
    return "\n".join([",".join(header)] + [",".join(format_cell(v) for v in row) for row in rows]) + "\n"


def _results_rows(eps: Sequence[float], radius: str, records: list[RunRecord]) -> list[list[Any]]:
    rows = []
    for rec in records:
        family, n = _family_n(rec.spec.scenario)
        cols = rec.columns
        k = len(cols["samples"])
        for i in sorted(range(k), key=lambda j: cols["samples"][j]):

            def get(name: str, i: int = i, cols: Any = cols) -> Any:
                return cols[name][i] if name in cols else None

            row = [n, family, rec.spec.algorithm, radius, rec.spec.run, get("samples"), get("episodes")]
            row += [get("n_per_pair"), get("value_gap"), get("violation"), rec.v_star, model_file(family, n)]
            row += [get("cum_value_gap"), get("cum_violation"), get("cost_hi"), get("certified_safe")]
            row += [get(eps_column(e)) for e in eps]
            rows.append(row)
    return rows


def _needed_rows(study: NConstraintsStudy, radius: str, records: list[RunRecord]) -> list[list[Any]]:
    rows = []
    for rec in records:
        family, n = _family_n(rec.spec.scenario)
        c = rec.columns
        for e in study.eps:
            x = samples_to_eps(c["samples"], c["value_gap"], c["violation"], e)
            # Theorem 2's count over all episodes (Online-CRL records it for eps < 1 only)
            bad = c[eps_column(e)][-1] if eps_column(e) in c else None
            rows.append(
                [
                    n,
                    family,
                    rec.spec.algorithm,
                    radius,
                    rec.spec.run,
                    e,
                    None if math.isnan(x) else int(x),
                    int(not math.isnan(x)),
                    bad,
                    rec.v_star,
                    model_file(family, n),
                ]
            )
    return rows


def _fits(study: NConstraintsStudy, needed: list[list[Any]]) -> list[dict[str, Any]]:
    out = []
    for family in study.families:
        for algo in study.algorithms:
            for radius in study.radii:
                for e in study.eps:
                    pts = [r for r in needed if r[1] == family and r[2] == algo and r[3] == radius and r[5] == e]
                    ok = [r for r in pts if r[7]]
                    N = np.array([r[0] for r in ok], dtype=np.float64)
                    y = np.array([r[6] for r in ok], dtype=np.float64)
                    flog, flin = linear_fit(np.log(N), y), linear_fit(N, y)
                    out.append(
                        {
                            "family": family,
                            "algorithm": algo,
                            "radius": radius,
                            "eps": e,
                            "runs": len(pts),
                            "reached": len(ok),
                            "log_a": flog.a,
                            "log_b": flog.b,
                            "log_b_half": flog.b_half,
                            "log_r2": flog.r2,
                            "lin_a": flin.a,
                            "lin_b": flin.b,
                            "lin_b_half": flin.b_half,
                            "lin_r2": flin.r2,
                        }
                    )
    return out


def _summary(
    study: NConstraintsStudy, needed: list[list[Any]], fits: list[dict[str, Any]], v_star: dict[str, float]
) -> str:
    from cmdp_rl.envs.registry import make

    lines = ["# Study: samples needed against the number of constraints N", ""]
    lines.append(
        f"{study.runs} runs per cell; N in {list(study.ns)}; families {list(study.families)}; "
        f"delta {study.delta}; Online-CRL {study.episodes:,} episodes; GMBL up to {study.gmbl_n_max:,} "
        "samples per pair. `samples` = first recorded point from which the policy stays eps-optimal and "
        "eps-feasible (runs that never get there are left out of the fits and counted)."
    )
    lines += ["", "## Optimum of each instance", "", "| family | N | V* |", "|---|--:|--:|"]
    for spec, v in v_star.items():
        family, n = _family_n(spec)
        lines.append(f"| {family} | {n} | {v:.4f} |")
    lines += ["", "## Mean samples needed (runs that reached eps)", ""]
    head = "| family | algorithm | radius | eps | " + " | ".join(f"N={n}" for n in study.ns) + " |"
    lines += [head, "|---|---|---|--:|" + "--:|" * len(study.ns)]
    for family in study.families:
        for algo in study.algorithms:
            for radius in study.radii:
                for e in study.eps:
                    cells = []
                    for n in study.ns:
                        pts = [r for r in needed if (r[0], r[1], r[2], r[3], r[5]) == (n, family, algo, radius, e)]
                        got = [r[6] for r in pts if r[7]]
                        cells.append(f"{np.mean(got):,.0f} ({len(got)}/{len(pts)})" if got else f"- (0/{len(pts)})")
                    lines.append(f"| {family} | {algo} | {radius} | {e:g} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Fits (each run one point; 95% intervals on the slope)",
        "",
        "n/a: too few runs reached the target for a fit (or an interval) at that setting.",
        "",
    ]
    lines += [
        "| family | algorithm | radius | eps | reached | a + b log N: b | R^2 | a + b N: b | R^2 |",
        "|---|---|---|--:|--:|--:|--:|--:|--:|",
    ]
    for f in fits:
        lines.append(
            f"| {f['family']} | {f['algorithm']} | {f['radius']} | {f['eps']:g} | {f['reached']}/{f['runs']} | "
            f"{pm(f['log_b'], f['log_b_half'], ',.0f')} | {fmt(f['log_r2'], '.2f')} | "
            f"{pm(f['lin_b'], f['lin_b_half'], ',.1f')} | {fmt(f['lin_r2'], '.2f')} |"
        )
    m = make(problem_spec(study.families[0], study.ns[0]))
    lines += ["", "## The theory's own N-dependence (bound at N divided by the bound at N = 1)", ""]
    lines += ["| algorithm | " + " | ".join(f"N={n}" for n in study.ns) + " |", "|---|" + "--:|" * len(study.ns)]
    for algo in study.algorithms:
        g = theory_growth(algo, study.ns, m.S, m.A, m.horizon("study"), 0.1, study.delta)
        lines.append(f"| {algo} | " + " | ".join(f"{v:.3f}" for v in g) + " |")
    return "\n".join(lines) + "\n"


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
            results += _results_rows(cfg.eps, radius, records)
            needed += _needed_rows(st, radius, records)
            for rec in records:
                family, n = _family_n(rec.spec.scenario)
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
        fits = _fits(st, needed)
        fits_path = out / "fits.csv"
        keys = list(fits[0]) if fits else []
        write_atomic(fits_path, _csv([[f[k] for k in keys] for f in fits], keys))
        timing_path = out / "timings.csv"
        write_atomic(
            timing_path,
            _csv(timing_rows, ["n_constraints", "family", "algorithm", "radius", "run", "seconds", "seconds_per_plan"]),
        )
        summary = _summary(st, needed, fits, dict(sorted(v_star.items(), key=lambda kv: _family_n(kv[0]))))
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
