"""The experiment commands: ``reproduce`` (the paper's sweep), ``compare`` (the arena) and
``study`` (n-constraints); each checks its output folder and estimate first, and is resumable."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cmdp_rl.cli.common import announce_long, note_compilation, resource_limits
from cmdp_rl.cli.exit_codes import EXIT_OK
from cmdp_rl.plumbing.limits import check_estimate, learn_estimate, sweep_estimate, worker_processes
from cmdp_rl.plumbing.validation import CMDPInputError


def _sweep_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The sweep options given on the command line (``--runs/--jobs/--seed/--backend/--address``);
    an ``--address`` implies the Ray backend."""
    changes = {
        k: getattr(args, k) for k in ("runs", "jobs", "seed", "backend", "address") if getattr(args, k) is not None
    }
    if args.address is not None and args.backend is None:
        changes["backend"] = "ray"
    return changes


def _driver(what: str, runs: int, cfg: Any) -> str:
    """The options a sweep's estimate names: ``jobs/`` first when it starts worker processes
    (each counts its own footprint, so fewer jobs need less memory)."""
    return f"jobs/{what}" if worker_processes(cfg.jobs, runs, cfg.backend) else what


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from cmdp_rl.experiments import ExperimentConfig, load_config, reproduce
    from cmdp_rl.experiments.backends import check_backend
    from cmdp_rl.experiments.reproduce import estimate_sweep
    from cmdp_rl.plumbing.results_folder import check_results_folder

    base = ExperimentConfig.quick() if args.quick else ExperimentConfig()
    cfg = load_config(args.config, base=base) if args.config else base
    if args.config and args.quick and load_config(args.config, base=ExperimentConfig()) == cfg:
        raise CMDPInputError(
            "--quick: has no effect with this --config (its preset key, or its own keys, decide); drop one of them"
        )
    changes = _sweep_overrides(args)
    if changes:
        cfg = cfg.replace(**changes)
    check_backend(cfg)
    out_text = args.out if args.out is not None else ("results/quick" if args.quick else "results/paper")
    check_results_folder(out_text, cfg.to_toml(), force=args.force)
    out = Path(out_text)
    est = estimate_sweep(cfg)
    runs = len(cfg.scenarios) * len(cfg.algorithms) * cfg.runs
    check_estimate(est, _driver("episodes/runs (configuration)", runs, cfg), *resource_limits(args))
    note_compilation()
    announce_long("reproduce", f"{len(cfg.scenarios)} scenarios x {cfg.runs} runs on {cfg.jobs} workers", est.seconds)
    try:
        res = reproduce(cfg, out, progress=not args.no_progress, force=args.force)
    except KeyboardInterrupt:
        print(
            f"cmdp-rl reproduce: finished runs are saved in {out}/runs; rerun the same command to resume",
            file=sys.stderr,
        )
        raise
    sw = res.sweep
    n_fig = len(res.figures)
    print(
        f"reproduce  {sw.total} runs: {len(sw.computed)} computed, {len(sw.reused)} reused"
        f"{f', {len(sw.removed)} corrupt or altered files rerun' if sw.removed else ''} "
        f"({sw.seconds:.1f} s, backend {cfg.backend}, jobs {cfg.jobs})"
    )
    print(f"config     {res.config_path}")
    print(f"runs       {res.runs_dir}/")
    print(f"table      {res.results_csv}")
    print(f"summary    {res.summary_md}")
    print(f"timings    {res.timings_csv}")
    print(
        f"figures    {res.out_dir / 'figures'}/  ({n_fig} files: fig_value_*, fig_violation_*"
        f"{', fig_cumulative_violation' if 'online-crl' in cfg.algorithms else ''}; .png and .svg)"
    )
    print()
    print(res.summary, end="")
    return EXIT_OK


def _cmd_compare(args: argparse.Namespace) -> int:
    from cmdp_rl.experiments.backends import check_backend
    from cmdp_rl.experiments.compare import QUICK, CompareConfig, compare
    from cmdp_rl.plumbing.results_folder import check_results_folder

    changes = _sweep_overrides(args)
    for key in ("episodes", "delta", "bonus_scale", "checkpoints"):
        if getattr(args, key) is not None:
            changes[key] = getattr(args, key)
    if args.algorithms is not None:
        changes["algorithms"] = args.algorithms
    if args.problem is not None:
        changes["problem"] = args.problem
    if args.quick:
        changes = {**QUICK, **changes}
    if args.preset is not None:
        cfg = CompareConfig.preset(args.preset, **changes)
    else:
        if args.problem is None:
            raise CMDPInputError("problem: give a PROBLEM (e.g. media-control) or --preset NAME")
        cfg = CompareConfig(**changes)
    if args.bonus_scale is not None and all(a == "online-crl" for a in cfg.algorithms):
        raise CMDPInputError("--bonus-scale: applies to the baselines' bonuses, and --algorithms runs only online-crl")
    check_backend(cfg)
    check_results_folder(args.out, cfg.to_toml(), force=args.force)
    out = Path(args.out)
    cfg.check_problem()
    from cmdp_rl.envs.registry import make

    m = make(cfg.problem, max_memory=float(args.max_memory), max_seconds=float(args.max_time))
    est = learn_estimate(m.S, m.A, m.horizon("compare"), m.N, episodes=cfg.episodes, nnz_per_row=m.nnz / (m.S * m.A))
    runs = len(cfg.algorithms) * cfg.runs
    jobs = min(cfg.jobs, runs)
    sweep = sweep_estimate(est, runs, cfg.jobs, cfg.backend)
    check_estimate(sweep, _driver("episodes/runs", runs, cfg), *resource_limits(args))
    note_compilation()
    announce_long("compare", f"{runs} runs on {jobs} workers", sweep.seconds)
    try:
        res = compare(cfg, out, progress=not args.no_progress, force=args.force)
    except KeyboardInterrupt:
        print(
            f"cmdp-rl compare: finished runs are saved in {out}/runs; rerun the same command to resume", file=sys.stderr
        )
        raise
    sw = res.sweep
    print(
        f"compare    {cfg.problem}: {sw.total} runs ({', '.join(cfg.algorithms)} x {cfg.runs}), "
        f"{len(sw.computed)} computed, {len(sw.reused)} reused"
        f"{f', {len(sw.removed)} corrupt or altered files rerun' if sw.removed else ''} "
        f"({sw.seconds:.1f} s, backend {cfg.backend}, jobs {cfg.jobs})"
    )
    print(f"config     {res.config_path}")
    print(f"runs       {res.runs_dir}/")
    print(f"table      {res.results_csv}")
    print(f"timings    {res.timings_csv}")
    print(f"summary    {res.summary_md}")
    print(f"figures    {out / 'figures'}/  (fig_cum_value_gap, fig_cum_violation; .png and .svg)")
    print()
    print(res.summary, end="")
    return EXIT_OK


def _cmd_study(args: argparse.Namespace) -> int:
    from cmdp_rl.experiments.backends import check_backend
    from cmdp_rl.experiments.reproduce import estimate_sweep
    from cmdp_rl.experiments.study import NConstraintsStudy, run_study
    from cmdp_rl.plumbing.results_folder import check_results_folder

    changes = _sweep_overrides(args)
    study = NConstraintsStudy.quick(**changes) if args.quick else NConstraintsStudy(**changes)
    check_backend(study)
    default = "results/n-constraints-quick" if args.quick else "results/n-constraints"
    out_text = args.out if args.out is not None else default
    check_results_folder(out_text, study.to_toml(), force=args.force)
    out = Path(out_text)
    seconds = 0.0
    for cfg in study.experiment_configs().values():
        est = estimate_sweep(cfg)
        runs = len(cfg.scenarios) * len(cfg.algorithms) * cfg.runs
        check_estimate(est, _driver("runs (study)", runs, cfg), *resource_limits(args))
        seconds += est.seconds
    note_compilation()
    announce_long("study", "the n-constraints sweeps", seconds)
    try:
        res = run_study(study, out, progress=not args.no_progress, force=args.force)
    except KeyboardInterrupt:
        print(
            f"cmdp-rl study: finished runs are saved in {out}/runs; rerun the same command to resume", file=sys.stderr
        )
        raise
    print(f"models     {out / 'models'}/")
    print(f"table      {res.results_csv}")
    print(f"needed     {res.needed_csv}")
    print(f"fits       {res.fits_csv}")
    print(f"timings    {res.timings_csv}")
    print(f"summary    {res.summary_md}")
    print(f"figures    {out / 'figures'}/  ({len(res.figures)} files)")
    print()
    print(res.summary, end="")
    return EXIT_OK
