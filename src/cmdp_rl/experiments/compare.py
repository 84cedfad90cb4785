"""``compare``: the online learners of this research line on one problem, side by side.

Layout of ``out_dir``::

    config.toml        the comparison (load it back with load_compare_config)
    runs/              one JSON file per finished run (resume: rerunning skips them)
    results.csv        tidy table, one row per recorded episode of every run
    timings.csv        per-run wall time and time per episode (informational: not in results.csv,
                       so the results' bytes repeat)
    summary.md         final regret, violation, violating and baseline episodes, time per episode
    figures/           fig_cum_value_gap, fig_cum_violation (.png, .svg): all algorithms on shared
                       axes, mean over runs with a 95% band

Every run draws from ``SeedSequence(seed, spawn_key=(problem, algorithm, run))`` (the runner's
rule), so the same configuration gives the same ``results.csv`` bytes, whatever the number of
workers, the backend or the order in which runs finish; an interrupted comparison, rerun,
only computes the runs without a valid file. The runs use the experiment runner, its store
(checksummed run files), its process pool and Ray backend.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import tomli_w

from cmdp_rl.experiments.aggregate import format_cell
from cmdp_rl.experiments.arena_report import FIGURES, metric_figure, summary_markdown
from cmdp_rl.experiments.backends import SweepReport, backend_session, check_backend, run_sweep
from cmdp_rl.experiments.config import default_jobs, int_field
from cmdp_rl.experiments.plots import save_figure
from cmdp_rl.experiments.runner import ARENA_COLUMNS, RunRecord, RunSpec
from cmdp_rl.experiments.store import load_all, runs_check
from cmdp_rl.learners import ONLINE_ALGORITHMS, SAFE_ALGORITHMS, checkpoints
from cmdp_rl.plumbing.atomic import write_atomic
from cmdp_rl.plumbing.decoding import detail
from cmdp_rl.plumbing.limits import check_allocation, grid_covers_integers
from cmdp_rl.plumbing.names import BACKENDS
from cmdp_rl.plumbing.paths import check_input_path
from cmdp_rl.plumbing.results_folder import check_output_folder, results_folder
from cmdp_rl.plumbing.validation import (
    CMDPInputError,
    CMDPTypeError,
    as_float,
    check_positive_int,
    check_probability,
    plain,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

CSV_COLUMNS: tuple[str, ...] = ("problem", "algorithm", "run", *ARENA_COLUMNS)
"""Columns of ``results.csv`` (the names ``reproduce`` uses, plus ``cum_abs_value_gap``,
``violating_episodes``, ``baseline_episodes``, ``strong_violation`` and ``first_departure``)."""

RESULTS_FORMAT = 2
"""The version of ``results.csv``'s columns: 2 added ``strong_violation`` and ``first_departure``
(issue 35); a results folder of format 1 (no ``results_format`` in its ``config.toml``) is another
configuration."""

PRESETS: dict[str, dict[str, Any]] = {
    "dope": {
        "problem": "media-control",
        "algorithms": ("dope", "optpess", "optcmdp", "online-crl"),
        "episodes": 20_000,
        "runs": 5,
        "delta": 0.01,
    },
}
"""Named comparisons. ``dope``: the DOPE paper's media-control setting (Bura et al. 2022:
``H = 10``, ``c_bar = H / 2``, ``delta = 0.01``) with DOPE, OptPess-LP, OptCMDP and Online-CRL;
20,000 episodes (past DOPE's ``K0 = 12,500`` baseline phase on this problem; the authors'
script runs 100,000) and 5 runs."""

QUICK: dict[str, Any] = {"episodes": 200, "runs": 2, "checkpoints": 10}
"""What ``--quick`` overrides: a smoke-size comparison (seconds)."""

#: what compare writes into its folder (removed when --force replaces another configuration's)
OUTPUTS = ("results.csv", "timings.csv", "summary.md", "figures")


def arena_checkpoints(K: int, points: int) -> tuple[int, ...]:
    """Recorded episodes: ``points`` log-spaced and ``points`` evenly spaced episodes in ``1 .. K``
    (merged, increasing, always ending at ``K``), so curves read well on either axis."""
    if grid_covers_integers(1, K, points, log=False):  # every episode (also hit by the log grid's union)
        check_allocation("checkpoints", 48.0 * K, f"recording every one of K = {K} episodes")
        return tuple(range(1, K + 1))
    log = checkpoints(K, points)
    lin = np.round(np.linspace(K / points, K, points)).astype(np.int64)
    return tuple(int(k) for k in np.unique(np.clip(np.concatenate([log, lin]), 1, K)))


@dataclass(frozen=True)
class CompareConfig:
    """One comparison: ``algorithms`` x ``runs`` on ``problem``, each run ``episodes`` long.

    Attributes:
        problem: a registered problem spec (``cmdp-rl envs``) or a scenario name.
        algorithms: online learners ([`ONLINE_ALGORITHMS`][cmdp_rl.plumbing.names.ONLINE_ALGORITHMS]).
        episodes: ``K`` per run.
        runs: independent runs per algorithm.
        seed: root seed.
        delta: every learner's failure probability.
        bonus_scale: the baselines' factor on their bonuses (recorded in every run).
        checkpoints: log-spaced and evenly spaced recorded episodes
            ([`arena_checkpoints`][cmdp_rl.experiments.compare.arena_checkpoints]).
        jobs, backend, address: where runs execute (as for ``reproduce``).
        results_format: the version of ``results.csv``'s columns
            ([`RESULTS_FORMAT`][cmdp_rl.experiments.compare.RESULTS_FORMAT], the only one accepted):
            written into ``config.toml``, so a folder of an earlier format is another configuration
            (refused on resume, replaced with ``--force``).
    """

    problem: str
    algorithms: tuple[str, ...] = ONLINE_ALGORITHMS
    episodes: int = 2_000
    runs: int = 5
    seed: int = 0
    delta: float = 0.1
    bonus_scale: float = 1.0
    checkpoints: int = 25
    jobs: int = field(default_factory=default_jobs)
    backend: str = "local"
    address: str | None = None
    results_format: int = 2

    def __post_init__(self) -> None:
        from cmdp_rl.envs.registry import PROBLEMS, is_spec

        put = object.__setattr__
        if type(self.results_format) is not int or self.results_format != RESULTS_FORMAT:
            raise CMDPInputError(
                f"results_format: this version writes results.csv format {RESULTS_FORMAT} (columns "
                f"{', '.join(CSV_COLUMNS)}), got {plain(self.results_format)}"
            )
        if not isinstance(self.problem, str) or not is_spec(self.problem):
            raise CMDPInputError(
                f"problem: unknown name {plain(self.problem)}; registered problems are {list(PROBLEMS)}"
            )
        algos = self.algorithms
        if isinstance(algos, str):
            algos = tuple(a.strip() for a in algos.split(",") if a.strip())
        algos = tuple(algos)
        if not algos:
            raise CMDPInputError("algorithms: give at least one learner")
        for a in algos:
            if a not in ONLINE_ALGORITHMS:
                raise CMDPInputError(
                    f"algorithms: unknown learner {plain(a)}; valid names are {list(ONLINE_ALGORITHMS)}"
                )
        if len(set(algos)) != len(algos):
            raise CMDPInputError(f"algorithms: names must be distinct, got {list(algos)}")
        put(self, "algorithms", algos)
        put(self, "episodes", int_field("episodes", self.episodes, 1))
        put(self, "runs", int_field("runs", self.runs, 1))
        put(self, "seed", int_field("seed", self.seed, 0))
        put(self, "delta", check_probability("delta", self.delta))
        scale = as_float("bonus_scale", self.bonus_scale)
        if scale < 0:
            raise CMDPInputError(f"bonus_scale: must be >= 0, got {plain(self.bonus_scale)}")
        put(self, "bonus_scale", scale)
        put(self, "checkpoints", int_field("checkpoints", self.checkpoints, 1))
        put(self, "jobs", check_positive_int("jobs", self.jobs))
        if self.backend not in BACKENDS:
            raise CMDPInputError(f"backend: must be one of {list(BACKENDS)}, got {plain(self.backend)}")
        if self.address is not None and self.backend != "ray":
            raise CMDPInputError("address: only used with backend = 'ray'")

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> CompareConfig:
        """The named comparison ([`PRESETS`][cmdp_rl.experiments.compare.PRESETS]) with ``overrides``."""
        if name not in PRESETS:
            raise CMDPInputError(f"preset: unknown name {plain(name)}; presets are {list(PRESETS)}")
        return cls(**{**PRESETS[name], **overrides})

    def replace(self, **changes: Any) -> CompareConfig:
        """A validated copy with ``changes``."""
        return dataclasses.replace(self, **changes)

    def check_problem(self) -> None:
        """Build the problem and, for the safe learners, check it has a Slater gap (before any run).

        Raises:
            CMDPInputError: the problem's overrides are bad, or a safe learner is asked for on a
                problem without a strictly safe policy.
        """
        from cmdp_rl.envs.registry import make
        from cmdp_rl.planning.baseline import slater_gap

        model = make(self.problem)
        safe = [a for a in self.algorithms if a in SAFE_ALGORITHMS]
        if safe:
            if model.N == 0:
                raise CMDPInputError(
                    f"algorithms: {', '.join(safe)} need a constrained problem; {self.problem} has none"
                )
            gap = slater_gap(model)
            if not gap > 0.0:
                raise CMDPInputError(
                    f"algorithms: {', '.join(safe)} need a problem with a Slater gap (a strictly safe policy); "
                    f"{self.problem} has Slater gap {gap:.6g} <= 0"
                )

    def run_specs(self) -> list[RunSpec]:
        """Every run, ordered by algorithm (configuration order) and run index."""
        marks = arena_checkpoints(self.episodes, self.checkpoints)
        return [
            RunSpec(
                self.problem,
                algo,
                i,
                self.seed,
                self.delta,
                "fast",
                episodes=self.episodes,
                checkpoints=marks,
                bonus_scale=self.bonus_scale,
                arena=True,
            )
            for algo in self.algorithms
            for i in range(self.runs)
        ]

    def to_dict(self) -> dict[str, Any]:
        """Plain TOML-ready dict (``address`` omitted when ``None``)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["algorithms"] = list(self.algorithms)
        return {k: v for k, v in out.items() if v is not None}

    def to_toml(self) -> str:
        """The configuration as TOML ([`load_compare_config`][cmdp_rl.experiments.compare.load_compare_config] reads it
        back)."""
        return "# cmdp-rl compare configuration\n" + tomli_w.dumps(self.to_dict())


def load_compare_config(path: str | os.PathLike[str]) -> CompareConfig:
    """Read a ``config.toml`` written by
    [`CompareConfig.to_toml`][cmdp_rl.experiments.compare.CompareConfig.to_toml].

    Raises:
        CMDPInputError: one line naming the file: unreadable, not UTF-8 or not TOML, an unknown
            or missing key, a bad value (named)."""
    check_input_path(path, f"config: {path}", "a TOML file")
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:  # unreadable, not UTF-8, not TOML, nested too deeply
        raise CMDPInputError(f"config: cannot read {path} ({detail(exc)})") from None
    fields = dataclasses.fields(CompareConfig)
    names = {f.name for f in fields}
    unknown = sorted(set(data) - names)
    if unknown:
        raise CMDPInputError(f"config {path}: unknown key(s) {unknown}; valid keys are {sorted(names)}")
    required = [f.name for f in fields if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    missing = [k for k in required if k not in data]
    if missing:
        raise CMDPInputError(f"config {path}: missing key(s) {missing}")
    try:
        return CompareConfig(**data)
    except CMDPInputError as exc:
        raise CMDPInputError(f"config {path}: {exc}") from None


def _order(config: CompareConfig, records: Sequence[RunRecord]) -> list[RunRecord]:
    rank = {a: i for i, a in enumerate(config.algorithms)}
    return sorted(records, key=lambda r: (rank[r.spec.algorithm], r.spec.run))


def results_csv(config: CompareConfig, records: Sequence[RunRecord]) -> str:
    """The tidy table ([`CSV_COLUMNS`][cmdp_rl.experiments.compare.CSV_COLUMNS]), one row per recorded episode of every
    run; floats as in ``reproduce`` (``.10g``), so equal records give equal bytes."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for rec in _order(config, records):
        sp = rec.spec
        for i in range(sp.n_points):
            row = [sp.scenario, sp.algorithm, sp.run] + [rec.columns[c][i] for c in ARENA_COLUMNS]
            w.writerow([format_cell(v) for v in row])
    return buf.getvalue()


def timings_csv(config: CompareConfig, records: Sequence[RunRecord]) -> str:
    """Per-run times: ``algorithm, run, seconds`` (whole run, with exact scoring), ``episode_ms``
    (mean plan + act per episode), ``plan_ms`` and ``act_ms`` (medians over episodes; Online-CRL
    plays in compiled batches, so its ``plan_ms`` is a whole episode, exact scoring included,
    and its ``act_ms`` 0)."""
    lines = ["algorithm,run,seconds,episode_ms,plan_ms,act_ms"]
    for rec in _order(config, records):
        t = rec.timing
        cells = [f"{t.get(k, math.nan):.4f}" for k in ("episode_ms", "plan_ms", "act_ms")]
        lines.append(f"{rec.spec.algorithm},{rec.spec.run},{rec.seconds:.3f}," + ",".join(cells))
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class CompareResult:
    """Where [`compare`][cmdp_rl.experiments.compare.compare] put things.

    Attributes:
        out_dir, config_path, runs_dir, results_csv, timings_csv, summary_md: the files.
        figures: every figure file.
        summary: the text of ``summary.md``.
        sweep: what the sweep computed, reused and removed.
    """

    out_dir: Path
    config_path: Path
    runs_dir: Path
    results_csv: Path
    timings_csv: Path
    summary_md: Path
    figures: tuple[Path, ...]
    summary: str
    sweep: SweepReport


def compare(
    config: CompareConfig, out_dir: str | os.PathLike[str], progress: bool = True, force: bool = False
) -> CompareResult:
    """Run ``config`` into ``out_dir`` (resumable; module docstring for the layout).

    Checks first and writes nothing if a check fails (output folder, the backend: Ray installed
    and started or reached, the problem, a Slater gap for the safe learners, runs of another
    configuration in the folder unless ``force``).

    Raises:
        CMDPInputError: as above.
    """
    if not isinstance(config, CompareConfig):
        raise CMDPTypeError(f"config: must be a CompareConfig, got {type(config).__name__}")
    check_output_folder(out_dir)
    check_backend(config)
    out = Path(out_dir)
    config.check_problem()
    specs = config.run_specs()
    runs_dir = out / "runs"
    check_runs = runs_check([(runs_dir, specs)], force)

    with (
        backend_session(config),
        results_folder(
            out, config.to_toml(), command="compare", force=force, outputs=OUTPUTS, under_lock=check_runs
        ) as folder,
    ):
        config_path = out / "config.toml"
        sweep = run_sweep(config, runs_dir, progress=progress, specs=specs)
        records = load_all(runs_dir, specs)
        paths = {name: out / name for name in ("results.csv", "timings.csv", "summary.md")}
        write_atomic(paths["results.csv"], results_csv(config, records))
        write_atomic(paths["timings.csv"], timings_csv(config, records))
        summary = summary_markdown(config, records)
        write_atomic(paths["summary.md"], summary)
        fig_dir = out / "figures"
        fig_dir.mkdir(exist_ok=True)
        figures: list[Path] = []
        for metric in FIGURES:
            figures += save_figure(metric_figure(config, records, metric), fig_dir, f"fig_{metric}")
        folder.complete()
    return CompareResult(
        out,
        config_path,
        runs_dir,
        paths["results.csv"],
        paths["timings.csv"],
        paths["summary.md"],
        tuple(figures),
        summary,
        sweep,
    )


def config_overrides(values: Mapping[str, Any]) -> dict[str, Any]:
    """The non-``None`` entries of ``values`` (CLI options that were given)."""
    return {k: v for k, v in values.items() if v is not None}


__all__ = [
    "CSV_COLUMNS",
    "PRESETS",
    "QUICK",
    "RESULTS_FORMAT",
    "CompareConfig",
    "CompareResult",
    "arena_checkpoints",
    "compare",
    "load_compare_config",
    "results_csv",
    "summary_markdown",
    "timings_csv",
]
