"""``cmdp-rl reproduce``: the paper's experiment protocol (sweep, table, figures), resumable."""

from __future__ import annotations

import argparse
from pathlib import Path

from cmdp_rl.cli.exit_codes import EXIT_OK
from cmdp_rl.cli.options import (
    add_jobs,
    add_out,
    add_quick,
    add_runs,
    add_seed,
    add_sweep_options,
)
from cmdp_rl.plumbing.errors import CMDPInputError

NAME = "reproduce"
HELP = "run the paper's experiments: sweep, table, figures"
DESCRIPTION = (
    "Run the paper's experiment protocol (scenarios 1a, 1b, 2; Optimistic-GMBL and Online-CRL; "
    "25 runs each by default), then write results.csv, summary.md, config.toml and the figures "
    "into --out. Finished runs are kept in OUT/runs: rerunning the same command resumes an "
    "interrupted sweep (Ctrl-C or SIGTERM stop the workers and exit 130/143). A folder holding "
    "runs of another configuration is refused (exit 2, nothing written) unless --force."
)


def add_options(p: argparse.ArgumentParser) -> None:
    """``reproduce``'s arguments."""
    add_quick(p, "small preset (5 runs, small budgets)")
    p.add_argument(
        "--config",
        metavar="FILE",
        help="TOML file overriding the preset (keys: the ExperimentConfig fields, optional preset = 'quick' | "
        "'full'; default: the preset alone)",
    )
    add_runs(p, "runs per (scenario, algorithm) (preset: 25; quick 5)")
    add_out(p, "output folder (default results/paper; with --quick results/quick)")
    add_jobs(p)
    add_seed(p, "root seed (preset: 0)")
    add_sweep_options(p)


def run(args: argparse.Namespace) -> int:
    """Run the paper's sweep into ``--out`` and print where its results are (see ``--help``)."""
    from cmdp_rl.cli.common import (
        announce_long,
        note_compilation,
        resource_limits,
        resumable,
        sweep_driver,
        sweep_overrides,
    )
    from cmdp_rl.experiments import ExperimentConfig, load_config, reproduce
    from cmdp_rl.experiments.backends import check_backend
    from cmdp_rl.experiments.reproduce import estimate_sweep
    from cmdp_rl.plumbing.limits import check_estimate
    from cmdp_rl.plumbing.results_folder import check_results_folder

    base = ExperimentConfig.quick() if args.quick else ExperimentConfig()
    cfg = load_config(args.config, base=base) if args.config else base
    if args.config and args.quick and load_config(args.config, base=ExperimentConfig()) == cfg:
        raise CMDPInputError(
            "--quick: has no effect with this --config (its preset key, or its own keys, decide); drop one of them"
        )
    changes = sweep_overrides(args)
    if changes:
        cfg = cfg.replace(**changes)
    check_backend(cfg)
    out_text = args.out if args.out is not None else ("results/quick" if args.quick else "results/paper")
    check_results_folder(out_text, cfg.to_toml(), force=args.force)
    out = Path(out_text)
    est = estimate_sweep(cfg)
    runs = len(cfg.scenarios) * len(cfg.algorithms) * cfg.runs
    check_estimate(est, sweep_driver("episodes/runs (configuration)", runs, cfg), *resource_limits(args))
    note_compilation()
    announce_long(NAME, f"{len(cfg.scenarios)} scenarios x {cfg.runs} runs on {cfg.jobs} workers", est.seconds)
    with resumable(NAME, out):
        res = reproduce(cfg, out, progress=not args.no_progress, force=args.force)
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


__all__ = ["DESCRIPTION", "HELP", "NAME", "add_options", "run"]
