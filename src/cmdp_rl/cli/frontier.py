"""``cmdp-rl frontier MODEL --out DIR``: the exact optimal value against one constraint's threshold."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from cmdp_rl.cli.exit_codes import EXIT_OK
from cmdp_rl.cli.options import (
    FORCE_FOLDER_HELP,
    OUT_FOLDER_HELP,
    add_force,
    add_limits,
    add_model,
    add_out,
    add_table_fill,
    int_at_least,
)

NAME = "frontier"
HELP = "the optimal value against one constraint's threshold (exact, with certificates)"
DESCRIPTION = (
    "Trace the exact optimal value as a function of one constraint's threshold, the others "
    "fixed, from the smallest feasible threshold to the one above which the constraint is slack; with one "
    "constraint also the exact breakpoints. Writes OUT/frontier.csv (c_bar, value, gap) and "
    "OUT/frontier.png (and OUT/breakpoints.csv for one constraint)."
)
#: the files ``cmdp-rl frontier`` writes into ``--out``
OUTPUTS = ("frontier.csv", "frontier.png", "breakpoints.csv")


def add_options(p: argparse.ArgumentParser) -> None:
    """``frontier``'s arguments."""
    add_model(p)
    add_table_fill(p, ("horizon", "c_bar", "s0"))
    p.add_argument("--constraint", type=int_at_least(0), default=0, metavar="I", help="the constraint to vary")
    p.add_argument("--points", type=int_at_least(2), default=50, metavar="K", help="grid points")
    p.add_argument(
        "--breakpoints",
        action="store_true",
        help="one constraint: enumerate every exact breakpoint, however many (default: within a sweep budget)",
    )
    add_out(p, OUT_FOLDER_HELP, required=True)
    add_force(p, FORCE_FOLDER_HELP)
    add_limits(p)


def run(args: argparse.Namespace) -> int:
    """Trace the frontier and write it into ``--out`` (see ``cmdp-rl frontier --help``). A
    ``--constraint`` out of range is the library's refusal (before any solve or write)."""
    import numpy as np

    from cmdp_rl.cli.common import check_distinct_paths, load_model, model_summary, refuse_given, resource_limits
    from cmdp_rl.planning.frontier import check_constraints_to_vary, frontier, write_frontier
    from cmdp_rl.plumbing.limits import check_estimate, exact_estimate, frontier_estimate, passes
    from cmdp_rl.plumbing.results_folder import check_results_folder, config_settings, results_folder

    settings = {"model": args.model, "constraint": args.constraint, "points": args.points}
    settings["breakpoints"] = args.breakpoints
    settings.update({k: getattr(args, k) for k in ("horizon", "c_bar", "s0") if getattr(args, k) is not None})
    config = config_settings(NAME, settings)
    out = Path(args.out)
    model_file = args.model if os.path.isfile(args.model) else None
    check_distinct_paths([(f"--out {name}", out / name) for name in OUTPUTS], [("MODEL", model_file)])
    check_results_folder(args.out, config, force=args.force, outputs=OUTPUTS)
    model = load_model(args.model, args)
    check_constraints_to_vary(model, f"model {args.model}")
    if model.N > 1:
        refuse_given(args, ("breakpoints",), f"applies to a model with one constraint; {args.model} has N = {model.N}")
    plan = exact_estimate(model.S, model.A, passes(model), model.N, model.nnz)
    check_estimate(plan, "model", *resource_limits(args))
    check_estimate(frontier_estimate(plan, args.points, model.N), "points", *resource_limits(args))
    start = time.perf_counter()
    fr = frontier(model, constraint=args.constraint, points=args.points, breakpoints=True if args.breakpoints else None)
    elapsed = time.perf_counter() - start
    with results_folder(out, config, command=NAME, force=args.force, outputs=OUTPUTS) as folder:
        write_frontier(fr, str(out), label=str(args.model))
        folder.complete()
    print(model_summary(f"model     {args.model}", model))
    print(f"constraint {args.constraint}: feasible from c_bar = {fr.lo:.6g}, slack above {fr.hi:.6g}")
    print(f"value     {fr.value[0]:.6g} .. {fr.value[-1]:.6g}  (max gap {float(np.max(fr.gap)):.3g})")
    if fr.breakpoints is not None:
        merged = f"vertices within gap {fr.gap_tol:.3g} merged"
        print(f"breakpoints {len(fr.breakpoints)}  (the curve is piecewise linear; {merged})")
    elif model.N == 1:
        print("breakpoints not enumerated (more than the sweep budget; --breakpoints to enumerate them all)")
    print(f"time      {elapsed:.3g} s  ({fr.sweeps} sweeps)")
    print(f"wrote     {out / 'frontier.csv'} and {out / 'frontier.png'}")
    return EXIT_OK


__all__ = ["DESCRIPTION", "HELP", "NAME", "OUTPUTS", "add_options", "run"]
