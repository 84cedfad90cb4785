"""``cmdp-rl study n-constraints``: samples needed against the number of constraints, resumable."""

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

NAME = "study"
HELP = "studies beyond the paper: n-constraints (samples against the number of constraints)"
DESCRIPTION = (
    "n-constraints: both learners, both radii, on the copies and distinct families for N in "
    "1..64; samples needed until eps-good for good, fits a + b log N and a + b N, figures and summary.md "
    "in --out. Resumable like reproduce (rerun the same command); --force replaces runs of other settings."
)


def add_options(p: argparse.ArgumentParser) -> None:
    """``study``'s arguments."""
    p.add_argument("name", choices=("n-constraints",), help="which study")
    add_quick(p, "N in {1, 4, 16}, 2 runs, small budgets")
    add_runs(p, "runs per cell (default 10; quick 2)")
    add_out(p, "output folder (default results/n-constraints[-quick])")
    add_jobs(p)
    add_seed(p, "root seed (default 0)")
    add_sweep_options(
        p,
        force_help="replace finished runs of other settings found in --out",
        address_help="Ray cluster address (implies --backend ray); default: a local Ray instance",
    )


def run(args: argparse.Namespace) -> int:
    """Run the study into ``--out`` and print where its results are (see ``--help``)."""
    from cmdp_rl.cli.common import (
        announce_long,
        note_compilation,
        resource_limits,
        resumable,
        sweep_driver,
        sweep_overrides,
    )
    from cmdp_rl.experiments.backends import check_backend
    from cmdp_rl.experiments.reproduce import estimate_sweep
    from cmdp_rl.experiments.study import NConstraintsStudy, run_study
    from cmdp_rl.plumbing.limits import check_estimate
    from cmdp_rl.plumbing.results_folder import check_results_folder

    changes = sweep_overrides(args)
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
        check_estimate(est, sweep_driver("runs (study)", runs, cfg), *resource_limits(args))
        seconds += est.seconds
    note_compilation()
    announce_long(NAME, "the n-constraints sweeps", seconds)
    with resumable(NAME, out):
        res = run_study(study, out, progress=not args.no_progress, force=args.force)
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


__all__ = ["DESCRIPTION", "HELP", "NAME", "add_options", "run"]
