"""``cmdp-rl solve MODEL``: the exact plan of a model, with its certified gap."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cmdp_rl.cli.exit_codes import EXIT_INFEASIBLE, EXIT_OK, EXIT_UNCERTIFIED
from cmdp_rl.cli.options import (
    add_force,
    add_json,
    add_limits,
    add_method,
    add_model,
    add_policy_out,
    add_table_fill,
    nonnegative,
)

if TYPE_CHECKING:
    from cmdp_rl.planning import PlanResult

NAME = "solve"
HELP = "solve a CMDP exactly, with a certified optimality gap"
DESCRIPTION = (
    "Solve a CMDP exactly (dense or sparse model): column generation with a certified "
    "gap (fast, default) or the occupation-measure LP (lp, HiGHS, its gap from its duals and an exact "
    "evaluation of its policy). Exit code 0 if optimal, 1 if infeasible, 2 on bad input, 4 if the plan is "
    "feasible but its gap could not be certified within --gap-tol (status uncertified)."
)


def add_options(p: argparse.ArgumentParser) -> None:
    """``solve``'s arguments."""
    add_model(p)
    add_table_fill(p, ("horizon", "gamma", "c_bar", "s0"))
    add_method(p, "fast: column generation with a certificate; lp: HiGHS")
    p.add_argument(
        "--gap-tol",
        type=nonnegative,
        default=None,
        metavar="G",
        help="the certified gap V* - value a plan must reach to be called optimal (fast: stop once it is at most "
        "G; lp: the check of its answer) (default: 1e-9 * H, or 1e-9 / (1 - gamma))",
    )
    add_policy_out(
        p,
        "save the plan's policy as a float64 .npy array: (H, S, A) for a finite horizon, (S, A) for a "
        "discounted model (written atomically, when the plan is feasible; default: not saved)",
    )
    add_force(p, "overwrite an existing --policy-out file")
    add_json(p, 'print {"status", "value", "costs", "gap"[, "min_costs"], "multipliers"[, "policy_out"]}')
    add_limits(p)


def _plan_json(res: PlanResult) -> dict[str, Any]:
    out: dict[str, Any] = {"status": res.status, "value": res.value, "costs": [float(v) for v in res.costs]}
    if res.feasible:
        out["gap"] = res.gap
    if res.min_costs is not None:
        out["min_costs"] = [float(v) for v in res.min_costs]
    if res.multipliers is not None:
        out["multipliers"] = [float(v) for v in res.multipliers]
    return out


def _policy_line(res: PlanResult) -> str:
    """What the plan's policy is, from its columns when it has them (its Markov table is not
    built: ``PlanResult.policy`` is mixed on demand)."""
    import numpy as np

    shape = res.table_shape
    if res.columns is not None and res.weights is not None:
        K = int(np.count_nonzero(res.weights > 0.0))
        kind = "deterministic (one column)" if K == 1 else f"randomized (a mixture of {K} deterministic columns)"
        return f"{kind}, shape {shape}"
    det = np.isclose(res.policy.max(-1), 1.0).all()
    return f"{'deterministic' if det else 'randomized'}, shape {shape}"


class _SolveProgress:
    """A one-line progress report on stderr for solves that take over a second."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.shown = False

    def __call__(self, iteration: int, gap: float) -> None:
        elapsed = time.perf_counter() - self.start
        if elapsed < 1.0 or not sys.stderr.isatty():
            return
        what = "phase 1 (feasibility)" if math.isinf(gap) else f"certified gap {gap:.3g}"
        sys.stderr.write(f"\rsolving: iteration {iteration}, {what}, {elapsed:.1f} s   ")
        sys.stderr.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\n")


def run(args: argparse.Namespace) -> int:
    """Solve ``MODEL`` (see ``cmdp-rl solve --help``); print the plan; exit as
    [`plan_exit`][cmdp_rl.cli.solve.plan_exit]."""
    import numpy as np

    from cmdp_rl.cli.common import announce_long, fmt, load_model, model_summary, resource_limits, save_npy
    from cmdp_rl.planning import solve
    from cmdp_rl.plumbing.limits import check_estimate, exact_estimate, passes

    policy_out = _policy_out(args)
    model = load_model(args.model, args)
    est = exact_estimate(model.S, model.A, passes(model), model.N, model.nnz, args.method)
    check_estimate(est, "model", *resource_limits(args))
    announce_long(NAME, f"S = {model.S:,}, A = {model.A}", est.seconds, "its progress shows once it passes a second")
    progress = _SolveProgress()
    try:
        res = solve(model, args.method, gap_tol=args.gap_tol, callback=progress)
    finally:
        progress.close()
    elapsed = time.perf_counter() - progress.start
    out = _plan_json(res)
    if policy_out is not None and res.feasible:  # an infeasible model has no plan to write (exit 1)
        save_npy(policy_out, np.asarray(res.policy, dtype=np.float64))
        out["policy_out"] = str(policy_out)
    if args.json:
        print(json.dumps(out))
    else:
        print(model_summary(f"model     {args.model}", model))
        print(f"status    {res.status}")
        print(f"value     {res.value:.6f}")
        if res.feasible:
            print(f"gap       {res.gap:.3g}  (certified: V* - value <= gap)")
            if res.status == "uncertified":
                print(f"          above --gap-tol: the planner could not close the gap (exit {EXIT_UNCERTIFIED})")
        print(f"costs     {fmt(res.costs)}  (thresholds {fmt(model.c_bar)})")
        if res.min_costs is not None:
            print(f"min_costs {fmt(res.min_costs)}  (smallest achievable cost of each constraint)")
        print(f"policy    {_policy_line(res)}")
        if policy_out is not None:
            print(f"          {'written to ' + str(policy_out) if res.feasible else 'not written: no feasible plan'}")
        how = f"{res.sweeps} sweeps, {res.iterations} iterations" if args.method == "fast" else "HiGHS"
        print(f"time      {elapsed:.3g} s  ({args.method}: {how})")
    return plan_exit(res)


def _policy_out(args: argparse.Namespace) -> Path | None:
    """``--policy-out`` checked before any work (not the model file, a writable path, an existing
    file only with ``--force``), or ``None``; ``--force`` alone is refused."""
    from cmdp_rl.cli.common import check_distinct_paths, check_output_file, refuse_given

    if args.policy_out is None:
        refuse_given(args, ("force",), "no output file to replace (it applies to --policy-out)")
        return None
    check_distinct_paths([("--policy-out", args.policy_out)], [("MODEL", args.model)])
    return check_output_file(args.policy_out, args.force, "policy-out")


def plan_exit(res: PlanResult) -> int:
    """The exit code of a plan: 0 optimal, 4 uncertified (feasible, gap above the tolerance),
    1 infeasible."""
    return {"optimal": EXIT_OK, "uncertified": EXIT_UNCERTIFIED}.get(res.status, EXIT_INFEASIBLE)


__all__ = ["DESCRIPTION", "HELP", "NAME", "add_options", "plan_exit", "run"]
