"""``cmdp-rl compare PROBLEM --out DIR``: the online learners on one problem (the arena), resumable."""

from __future__ import annotations

import argparse
from pathlib import Path

from cmdp_rl.cli.exit_codes import EXIT_OK
from cmdp_rl.cli.options import (
    add_algorithms,
    add_bonus_scale,
    add_delta,
    add_episodes,
    add_jobs,
    add_out,
    add_quick,
    add_runs,
    add_seed,
    add_sweep_options,
    int_at_least,
    learner_list,
)
from cmdp_rl.plumbing.errors import CMDPInputError
from cmdp_rl.plumbing.names import ONLINE_ALGORITHMS

NAME = "compare"
HELP = "the online learners on one problem: runs, regret and violation table, figures"
DESCRIPTION = (
    "Run every learner of --algorithms for --runs runs of --episodes episodes on PROBLEM, scoring "
    "each episode's policy exactly, then write results.csv (problem, algorithm, run, episodes, samples, "
    "value_gap, violation, cum_value_gap, cum_violation, cum_abs_value_gap, violating_episodes, "
    "baseline_episodes), timings.csv, summary.md, config.toml and figures into --out. Resumable like "
    "reproduce; same seed, same results.csv bytes. --preset dope is the DOPE paper's media-control setting."
)


def add_options(p: argparse.ArgumentParser) -> None:
    """``compare``'s arguments."""
    p.add_argument("problem", nargs="?", help="a registered problem (cmdp-rl envs), e.g. media-control")
    add_algorithms(
        p,
        f"comma-separated learners (default: all of {', '.join(ONLINE_ALGORITHMS)})",
        metavar="A,B,...",
        type=learner_list,
    )
    add_episodes(p, "episodes per run (default 2000)")
    add_runs(p, "runs per algorithm (default 5)")
    add_out(p, "output folder", required=True)
    add_jobs(p)
    add_seed(p, "root seed (default 0)")
    add_delta(p, "failure probability of every learner (default 0.1)")
    add_bonus_scale(p, "factor on the baselines' bonuses (default 1)")
    p.add_argument(
        "--checkpoints", type=int_at_least(1), help="log-spaced and evenly spaced recorded episodes (default 25 each)"
    )
    p.add_argument(
        "--preset",
        choices=("dope",),
        help="dope: media-control, DOPE/OptPess-LP/OptCMDP/Online-CRL, 20,000 episodes, 5 runs, delta 0.01 "
        "(default: none; PROBLEM is then required)",
    )
    add_quick(p, "smoke size: 200 episodes, 2 runs")
    add_sweep_options(p)


def run(args: argparse.Namespace) -> int:
    """Run the arena into ``--out`` and print where its results are (see ``--help``)."""
    from cmdp_rl.cli.common import (
        announce_long,
        note_compilation,
        resource_limits,
        resumable,
        sweep_driver,
        sweep_overrides,
    )
    from cmdp_rl.envs.registry import make
    from cmdp_rl.experiments.backends import check_backend
    from cmdp_rl.experiments.compare import QUICK, CompareConfig, compare
    from cmdp_rl.plumbing.limits import check_estimate, learn_estimate, sweep_estimate
    from cmdp_rl.plumbing.results_folder import check_results_folder

    changes = sweep_overrides(args)
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
    m = make(cfg.problem, max_memory=float(args.max_memory), max_seconds=float(args.max_time))
    est = learn_estimate(m.S, m.A, m.horizon(NAME), m.N, episodes=cfg.episodes, nnz_per_row=m.nnz / (m.S * m.A))
    runs = len(cfg.algorithms) * cfg.runs
    jobs = min(cfg.jobs, runs)
    sweep = sweep_estimate(est, runs, cfg.jobs, cfg.backend)
    check_estimate(sweep, sweep_driver("episodes/runs", runs, cfg), *resource_limits(args))
    note_compilation()
    announce_long(NAME, f"{runs} runs on {jobs} workers", sweep.seconds)
    with resumable(NAME, out):
        res = compare(cfg, out, progress=not args.no_progress, force=args.force)
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


__all__ = ["DESCRIPTION", "HELP", "NAME", "add_options", "run"]
