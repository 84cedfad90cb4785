"""``cmdp-rl pg``: NPG-PD and CRPO on a discounted model, written as a table and two figures."""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from cmdp_rl.cli.exit_codes import EXIT_OK
from cmdp_rl.cli.options import (
    FORCE_FOLDER_HELP,
    OUT_FOLDER_HELP,
    add_algorithms,
    add_force,
    add_json,
    add_limits,
    add_model,
    add_out,
    add_seed,
    add_table_fill,
    deprecated_option,
    int_at_least,
    nonnegative,
    positive,
)
from cmdp_rl.plumbing.errors import CMDPInputError
from cmdp_rl.plumbing.names import PG_ALGORITHMS, PG_INITS, PG_UPDATES

NAME = "pg"
HELP = "NPG-PD and CRPO on a discounted model: gap and violation per iteration"
DESCRIPTION = (
    "Run the policy-gradient primal-dual methods NPG-PD (Ding et al. 2020) and CRPO (Xu et al. "
    "2021) on a discounted model (e.g. ding-random:seed=10, the NPG-PD paper's instance), with exact "
    "gradients (default) or SAMPLES rollouts per state-action pair. Writes OUT/results.csv (one row per "
    "iteration: algorithm, iteration, value, value_gap, avg_value_gap, violation, signed_violation, "
    "multiplier_i), OUT/gap.png and OUT/violation.png; V* comes from the exact planner. Existing results "
    "in OUT are only replaced with --force."
)
#: the files ``cmdp-rl pg`` writes into ``--out``
OUTPUTS = ("results.csv", "gap.png", "violation.png")


def add_options(p: argparse.ArgumentParser) -> None:
    """``pg``'s arguments."""
    add_model(
        p,
        "a discounted model: a registered problem (e.g. ding-random:seed=10), a .npz model file, a CSV/Parquet "
        "transition table or a model checker's file .prism/.nm/.pm, .jani or .drn (with the options below for "
        "what such a file does not carry)",
    )
    add_table_fill(p, ("gamma", "c_bar", "s0"))
    add_algorithms(p, "npg-pd, crpo, or both as npg-pd,crpo", metavar="A[,B]", default="npg-pd")
    deprecated_option(p, "--algo", "--algorithms")
    p.add_argument("--iterations", type=int_at_least(1), default=300, metavar="T", help="iterations")
    grad = p.add_mutually_exclusive_group()
    grad.add_argument("--exact", action="store_true", help="exact gradients (the default)")
    grad.add_argument(
        "--samples",
        type=int_at_least(1),
        metavar="K",
        help="sample-based: K rollouts per pair per iteration (default: exact gradients)",
    )
    add_seed(p, "root seed of the rollouts (integer >= 0)", default=0)
    p.add_argument(
        "--eta1",
        type=positive,
        help="NPG-PD primal step size, constant (default 10 (1 - gamma)^2 with the default schedule; giving "
        "--eta1, --eta2 or --kappa selects constant steps, the paper's 1, 1, 0 for the others)",
    )
    p.add_argument("--eta2", type=positive, help="NPG-PD dual step size, constant (default 6 (1 - gamma) / sqrt(t))")
    p.add_argument(
        "--kappa",
        type=nonnegative,
        metavar="K",
        help="NPG-PD multiplier's proportional gain on (1 - gamma) (V_c - c_bar) (default 1; 0: the paper's update)",
    )
    p.add_argument(
        "--lambda-max", type=positive, metavar="L", help="NPG-PD multiplier bound (default 2 / ((1 - gamma) xi))"
    )
    p.add_argument(
        "--eta", type=positive, help="CRPO step size, constant (default 20 (1 - gamma)^2 / sqrt(t) at iteration t)"
    )
    p.add_argument("--tol", type=nonnegative, help="CRPO constraint tolerance (default 0.01)")
    p.add_argument(
        "--update",
        choices=PG_UPDATES,
        default="paper",
        help="primal step: the paper's natural gradient, or the authors' tabular script's (1e3 x policy gradient)",
    )
    p.add_argument(
        "--init",
        choices=PG_INITS,
        default="uniform",
        help="start from the uniform policy, or from the authors' script's random theta0 (ding-random)",
    )
    add_out(p, OUT_FOLDER_HELP, required=True)
    add_force(p, FORCE_FOLDER_HELP)
    add_json(p, "print a JSON summary instead of the text report")
    add_limits(p)


def parse_algorithms(text: str) -> list[str]:
    """``--algorithms``: one of ``npg-pd``, ``crpo`` or a comma-separated list of them."""
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise CMDPInputError(f"--algorithms: give npg-pd, crpo or both separated by a comma, got {text!r}")
    for name in names:
        if name not in PG_ALGORITHMS:
            raise CMDPInputError(f"--algorithms: unknown algorithm {name!r}; choose from {', '.join(PG_ALGORITHMS)}")
    if len(set(names)) != len(names):
        raise CMDPInputError(f"--algorithms: {text!r} names an algorithm twice")
    return names


def _step_sizes(algo: str, args: argparse.Namespace) -> dict[str, float]:
    """The step-size options given for ``algo``; an option of the other algorithm alone is refused."""
    mine = {"npg-pd": ("eta1", "eta2", "kappa", "lambda_max"), "crpo": ("eta", "tol")}[algo]
    out: dict[str, float] = {}
    for key in mine:
        value = getattr(args, key)
        if value is not None:
            out["Lambda" if key == "lambda_max" else key] = value
    return out


def _check_options(algos: list[str], args: argparse.Namespace) -> None:
    owners = {
        "eta1": "npg-pd",
        "eta2": "npg-pd",
        "kappa": "npg-pd",
        "lambda_max": "npg-pd",
        "eta": "crpo",
        "tol": "crpo",
    }
    for key, owner in owners.items():
        if getattr(args, key) is not None and owner not in algos:
            raise CMDPInputError(
                f"--{key.replace('_', '-')}: is a step size of {owner}, which --algorithms does not run"
            )


def run(args: argparse.Namespace) -> int:
    """Run ``cmdp-rl pg`` (see its ``--help``)."""
    import numpy as np

    from cmdp_rl.cli.common import check_distinct_paths, load_model, model_summary, refuse_given, resource_limits
    from cmdp_rl.pg.methods import instance_seed
    from cmdp_rl.pg.methods import run as run_pg
    from cmdp_rl.pg.results import running_signed_violation, write_figures, write_table
    from cmdp_rl.planning import solve
    from cmdp_rl.plumbing.limits import check_estimate, exact_estimate, passes, pg_estimate
    from cmdp_rl.plumbing.results_folder import check_results_folder, config_settings, results_folder

    algos = parse_algorithms(args.algorithms)
    _check_options(algos, args)
    settings = {
        "model": args.model,
        "algorithms": algos,
        "iterations": args.iterations,
        "exact": args.samples is None,
        "samples": args.samples,
        "seed": args.seed,
        **{key: getattr(args, key) for key in ("eta1", "eta2", "kappa", "lambda_max", "eta", "tol")},
        "update": args.update,
        "init": args.init,
        **{k: getattr(args, k) for k in ("gamma", "c_bar", "s0") if getattr(args, k) is not None},
    }
    config = config_settings(NAME, settings)
    out = Path(args.out)
    model_file = args.model if os.path.isfile(args.model) else None
    check_distinct_paths([(f"--out {name}", out / name) for name in OUTPUTS], [("MODEL", model_file)])
    check_results_folder(args.out, config, force=args.force, outputs=OUTPUTS)
    model = load_model(args.model, args)
    gamma = model.discount("cmdp-rl pg (e.g. ding-random:seed=10)", f"model {args.model}")
    if args.samples is None and not (args.init == "script" and instance_seed(model, -1) == -1):
        refuse_given(
            args,
            ("seed",),
            "exact gradients draw no random numbers (it seeds the rollouts of --samples K, or --init script's "
            "theta0 on a model that is not a ding-random instance)",
        )
    limits = resource_limits(args)
    check_estimate(exact_estimate(model.S, model.A, passes(model), model.N, model.nnz), "model", *limits)
    est = pg_estimate(model.S, model.A, model.N, gamma, model.nnz, args.iterations, args.samples, len(algos))
    check_estimate(est, "iterations" if args.samples is None else "iterations/samples", *limits)
    opt = solve(model)
    if not opt.feasible:
        raise CMDPInputError(f"model {args.model}: its thresholds cannot be met (no optimum V* to measure gaps from)")
    exact = args.samples is None
    results = []
    start = time.perf_counter()
    for algo in algos:
        results.append(
            run_pg(
                model,
                algo,
                args.iterations,
                exact=exact,
                samples=args.samples or 10,
                seed=args.seed,
                update=args.update,
                init=args.init,
                progress=not args.json,
                **_step_sizes(algo, args),
            )
        )
    elapsed = time.perf_counter() - start
    c_bar = np.asarray(model.c_bar)
    with results_folder(out, config, command=NAME, force=args.force, outputs=OUTPUTS) as folder:
        write_table(results, out / "results.csv", opt.value, c_bar)
        curves = [(r.algorithm, r.avg_value_gap(opt.value), running_signed_violation(r, c_bar)) for r in results]
        title = f"{args.model} ({'exact' if exact else f'{args.samples} rollouts per pair'})"
        write_figures(curves, out, title=title)
        folder.complete()
    final: dict[str, dict[str, Any]] = {
        r.algorithm: {
            "value": float(r.values[-1]),
            "value_gap": float(opt.value - r.values[-1]),
            "avg_value_gap": float(r.avg_value_gap(opt.value)[-1]),
            "signed_violation": float(r.signed_violation(c_bar)[-1]),
            "settings": r.settings,
        }
        for r in results
    }
    if args.json:
        print(json.dumps({"v_star": opt.value, "iterations": args.iterations, "algorithms": final, "out": str(out)}))
        return EXIT_OK
    print(model_summary(f"model     {args.model}", model))
    print(f"optimum   V* = {opt.value:.6g}  (exact planner, gap {opt.gap:.2g})")
    for name, f in final.items():
        print(
            f"{name:9s} after {args.iterations} iterations: value {f['value']:.6g}, gap {f['value_gap']:.3g}, "
            f"average gap {f['avg_value_gap']:.3g}, violation {max(f['signed_violation'], 0.0):.3g}"
        )
    how = "exact gradients" if exact else f"{args.samples} rollouts per pair"
    print(f"time      {elapsed:.3g} s  ({how})")
    print(f"wrote     {', '.join(str(out / name) for name in OUTPUTS)}")
    return EXIT_OK


__all__ = ["DESCRIPTION", "HELP", "NAME", "OUTPUTS", "add_options", "parse_algorithms", "run"]
