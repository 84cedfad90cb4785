"""The commands on models: ``solve``, ``export``, ``envs``, ``scenarios``, ``bounds``,
``frontier``, ``certify`` and ``import-gym``."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from cmdp_rl.cli.common import (
    announce_long,
    certificate_json,
    check_distinct_paths,
    check_output_file,
    checked_content,
    fmt,
    load_model,
    load_npy,
    model_summary,
    parse_env_kwargs,
    print_certificate,
    refuse_given,
    resource_limits,
)
from cmdp_rl.cli.exit_codes import EXIT_INFEASIBLE, EXIT_OK, EXIT_UNCERTIFIED
from cmdp_rl.model.cmdp import CMDP, length_label
from cmdp_rl.planning import PlanResult, solve
from cmdp_rl.plumbing.limits import (
    certify_estimate,
    check_estimate,
    check_int64,
    exact_estimate,
    frontier_estimate,
    human_bytes,
    model_file_estimate,
    passes,
)
from cmdp_rl.plumbing.validation import CMDPInputError


def _plan_json(res: PlanResult) -> dict[str, Any]:
    out: dict[str, Any] = {"status": res.status, "value": res.value, "costs": [float(v) for v in res.costs]}
    if res.feasible:
        out["gap"] = res.gap
    if res.min_costs is not None:
        out["min_costs"] = [float(v) for v in res.min_costs]
    if res.multipliers is not None:
        out["multipliers"] = [float(v) for v in res.multipliers]
    return out


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


def _cmd_solve(args: argparse.Namespace) -> int:
    model = load_model(args.model, args)
    est = exact_estimate(model.S, model.A, passes(model), model.N, model.nnz, args.method)
    check_estimate(est, "model", *resource_limits(args))
    announce_long("solve", f"S = {model.S:,}, A = {model.A}", est.seconds, "its progress shows once it passes a second")
    progress = _SolveProgress()
    try:
        res = solve(model, args.method, gap_tol=args.gap_tol, callback=progress)
    finally:
        progress.close()
    elapsed = time.perf_counter() - progress.start
    if args.json:
        print(json.dumps(_plan_json(res)))
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
        det = np.isclose(res.policy.max(-1), 1.0).all()
        print(f"policy    {'deterministic' if det else 'randomized'}, shape {res.policy.shape}")
        how = f"{res.sweeps} sweeps, {res.iterations} iterations" if args.method == "fast" else "HiGHS"
        print(f"time      {elapsed:.3g} s  ({args.method}: {how})")
    return plan_exit(res)


def plan_exit(res: PlanResult) -> int:
    """The exit code of a plan: 0 optimal, 4 uncertified (feasible, gap above the tolerance),
    1 infeasible."""
    return {"optimal": EXIT_OK, "uncertified": EXIT_UNCERTIFIED}.get(res.status, EXIT_INFEASIBLE)


def _cmd_bounds(args: argparse.Namespace) -> int:
    from cmdp_rl.confidence.sample_size import bounds_report

    rep = bounds_report(args.states, args.actions, args.horizon, args.constraints, args.eps, args.delta)
    if args.json:
        print(json.dumps(rep))
        return EXIT_OK
    g, o = rep["optimistic_gmbl"], rep["online_crl"]
    print(
        f"inputs: |S|={args.states} |A|={args.actions} H={args.horizon} N={args.constraints} "
        f"eps={args.eps} delta={args.delta}"
    )
    print("Optimistic-GMBL (Theorem 1)")
    print(f"  n per (s,a)          {g['n_per_pair']:.4g}")
    print(f"  total samples        {g['total_samples']:.4g}")
    print(f"  delta_P              {g['delta_P']:.4g}")
    verdict = "valid" if g["eps_valid"] else "OUT OF RANGE"
    print(f"  valid eps range      (0, {g['eps_max']:.4g})  -> eps is {verdict}")
    print("Online-CRL (Theorem 2)")
    print(f"  m (eq. m)            {o['m']:.4g}   (eq. m1 lower bound {o['m1_lower']:.4g})")
    print(f"  w_min                {o['w_min']:.4g}")
    print(f"  U_max                {o['U_max']:.4g}")
    print(f"  delta_1              {o['delta_1']:.4g}")
    print(f"  stop when n(s,a) >=  {o['stop_count']:.4g}")
    print(f"  E_max                {o['E_max']:.4g}")
    print(f"  bad episodes <=      {o['bad_episodes']:.4g}")
    return EXIT_OK


def _cmd_scenarios(args: argparse.Namespace) -> int:
    from cmdp_rl.envs import scenario_table

    rows = scenario_table()
    if args.json:
        print(json.dumps(rows, default=float))
        return EXIT_OK
    print(
        f"{'name':<5} {'grid':<5} {'S':>3} {'A':>2} {'H':>3} {'c_bar':>6} {'V* (constrained)':>17} "
        f"{'V (unconstrained)':>18}  description"
    )
    for r in rows:
        print(
            f"{r['name']:<5} {r['grid']:<5} {r['S']:>3} {r['A']:>2} {r['H']:>3} "
            f"{fmt(r['c_bar']):>6} {r['v_star']:>17.4f} {r['v_unconstrained']:>18.4f}  {r['description']}"
        )
    return EXIT_OK


def _load_sparse_counts(path: str, model: CMDP, args: argparse.Namespace) -> Any:
    """Validated sparse ``(S*A, S)`` counts from an ``.npz`` written by ``scipy.sparse.save_npz``, or
    a one-line error naming the file: missing, truncated or damaged (SciPy's decoder, behind
    [`decoding`][cmdp_rl.plumbing.decoding.decoding], and a full check of the CSR arrays), another shape,
    entries that are not non-negative integers. Their size is checked from the members' headers
    against ``--max-memory`` first."""
    import scipy.sparse as sp

    from cmdp_rl.confidence.sparse_box import validate_sparse_counts
    from cmdp_rl.plumbing.decoding import decoding
    from cmdp_rl.plumbing.paths import check_input_path

    label = f"counts: {path}"
    check_input_path(path, label, "an .npz or .npy file")
    check_estimate(model_file_estimate(path, label), label, *resource_limits(args))
    with open(path, "rb") as fh, decoding(label, "not a readable scipy.sparse .npz matrix"):  # fh: ours to close
        counts = sp.load_npz(fh)
        if counts.format in ("csr", "csc", "bsr"):
            counts.check_format(full_check=True)  # indices in range, indptr consistent
        else:
            counts = counts.tocsr()  # COO/DIA: SciPy checks the entries while converting
    want = (model.S * model.A, model.S)
    if counts.shape != want:
        raise CMDPInputError(f"{label}: expected a sparse (S*A, S) = {want} matrix, got {counts.shape}")
    return checked_content(label, validate_sparse_counts, counts)


def _cmd_certify(args: argparse.Namespace) -> int:
    from cmdp_rl.certificates.certify import certify
    from cmdp_rl.confidence.radii import validate_counts
    from cmdp_rl.evaluation.evaluate import validate_policy
    from cmdp_rl.model.transition_logs import read_log

    model = load_model(args.model, args)
    if (args.counts is None) == (args.log is None):
        raise CMDPInputError("--counts/--log: give exactly one source of data")
    s0, H = model.episodic("certify")
    est = certify_estimate(model.S, model.A, H, model.N, float(model.S) * model.A * min(model.S, 64))
    check_estimate(est, "model", *resource_limits(args))
    policy = load_npy(args.policy, "policy", args)
    if policy.shape != (H, model.S, model.A):
        raise CMDPInputError(
            f"policy: {args.policy}: expected an (H, S, A) = {(H, model.S, model.A)} array, got {policy.shape}"
        )
    policy = checked_content(f"policy: {args.policy}", validate_policy, policy, H, model.S, model.A)
    counts: Any
    if args.counts is not None and str(args.counts).endswith(".npz"):
        counts = _load_sparse_counts(args.counts, model, args)
    elif args.counts is not None:
        counts = load_npy(args.counts, "counts", args)
        if counts.shape != (model.S, model.A, model.S):
            raise CMDPInputError(
                f"counts: {args.counts}: expected an (S, A, S) = {(model.S, model.A, model.S)} array, "
                f"got {counts.shape}"
            )
        counts = checked_content(f"counts: {args.counts}", validate_counts, counts)
    else:
        counts = read_log(args.log, model.S, model.A, H)
    cert = certify(
        policy,
        counts,
        model.r,
        model.c,
        model.c_bar,
        s0,
        H,
        delta=args.delta,
        radius=args.radius,
        sampling=args.sampling,
    )
    if args.json:
        print(json.dumps(certificate_json(cert)))
    else:
        print_certificate(cert, model)
    return EXIT_OK if cert.safe else EXIT_INFEASIBLE


def _cmd_envs(args: argparse.Namespace) -> int:
    from cmdp_rl.envs.registry import problem_table

    rows = problem_table()
    if args.json:
        print(json.dumps(rows))
        return EXIT_OK

    def num(x: Any) -> str:
        return "-" if x is None else f"{x:.4g}"

    print(
        f"{'name':<22} {'S':>4} {'A':>2} {'H|gamma':>7} {'N':>2} {'nnz':>6} {'V*':>9} {'V (unconstr.)':>13} "
        f"{'Slater gap':>10}  baseline cost"
    )
    for r in rows:
        base = "[" + ", ".join(f"{v:.4g}" for v in r["baseline_costs"]) + "]" if r["baseline_costs"] else "-"
        length = r["H"] if r["H"] is not None else r["gamma"]
        print(
            f"{r['name']:<22} {r['S']:>4} {r['A']:>2} {length:>7} {r['N']:>2} {r['nnz']:>6} {num(r['v_star']):>9} "
            f"{num(r['v_unconstrained']):>13} {num(r['slater_gap']):>10}  {base}"
        )
    return EXIT_OK


def _cmd_import_gym(args: argparse.Namespace) -> int:
    out = check_output_file(args.out, args.force, "out")
    kwargs = parse_env_kwargs(args.env_kwargs)
    check_int64("horizon", args.horizon)
    from cmdp_rl.envs.gymnasium_import import from_gymnasium

    max_memory, max_seconds = resource_limits(args)
    model = from_gymnasium(
        args.env_id,
        args.horizon,
        cost=args.cost,
        c_bar=args.c_bar,
        max_memory=max_memory,
        max_seconds=max_seconds,
        **kwargs,
    )
    model.save(out)
    print(f"wrote {args.env_id} (S={model.S} A={model.A} {length_label(model)} N={model.N}) to {out}")
    return EXIT_OK


#: the files ``cmdp-rl frontier`` writes into ``--out``
FRONTIER_OUTPUTS = ("frontier.csv", "frontier.png", "breakpoints.csv")


def _cmd_frontier(args: argparse.Namespace) -> int:
    from cmdp_rl.planning.frontier import frontier, write_frontier
    from cmdp_rl.plumbing.results_folder import check_results_folder, config_settings, results_folder

    settings = {"model": args.model, "constraint": args.constraint, "points": args.points}
    settings["breakpoints"] = args.breakpoints
    config = config_settings("frontier", settings)
    out = Path(args.out)
    model_file = args.model if os.path.isfile(args.model) else None
    check_distinct_paths([(f"--out {name}", out / name) for name in FRONTIER_OUTPUTS], [("MODEL", model_file)])
    check_results_folder(args.out, config, force=args.force, outputs=FRONTIER_OUTPUTS)
    model = load_model(args.model, args)
    if model.N == 0:
        raise CMDPInputError(f"model {args.model}: has no constraints (N = 0): no threshold to vary")
    if model.N > 1:
        refuse_given(args, ("breakpoints",), f"applies to a model with one constraint; {args.model} has N = {model.N}")
    if not 0 <= args.constraint < model.N:
        raise CMDPInputError(f"constraint: must be an index in [0, {model.N - 1}], got {args.constraint}")
    plan = exact_estimate(model.S, model.A, passes(model), model.N, model.nnz)
    check_estimate(plan, "model", *resource_limits(args))
    check_estimate(frontier_estimate(plan, args.points, model.N), "points", *resource_limits(args))
    start = time.perf_counter()
    fr = frontier(model, constraint=args.constraint, points=args.points, breakpoints=True if args.breakpoints else None)
    elapsed = time.perf_counter() - start
    with results_folder(out, config, command="frontier", force=args.force, outputs=FRONTIER_OUTPUTS) as folder:
        write_frontier(fr, str(out), label=str(args.model))
        folder.complete()
    print(model_summary(f"model     {args.model}", model))
    print(f"constraint {args.constraint}: feasible from c_bar = {fr.lo:.6g}, slack above {fr.hi:.6g}")
    print(f"value     {fr.value[0]:.6g} .. {fr.value[-1]:.6g}  (max gap {float(np.max(fr.gap)):.3g})")
    if fr.breakpoints is not None:
        print(f"breakpoints {len(fr.breakpoints)}  (exact: the curve is piecewise linear)")
    elif model.N == 1:
        print("breakpoints not enumerated (more than the sweep budget; --breakpoints to enumerate them all)")
    print(f"time      {elapsed:.3g} s  ({fr.sweeps} sweeps)")
    print(f"wrote     {out / 'frontier.csv'} and {out / 'frontier.png'}")
    return EXIT_OK


def _cmd_export(args: argparse.Namespace) -> int:
    scenario_file = args.scenario if os.path.isfile(args.scenario) else None
    check_distinct_paths([("path", args.path)], [("scenario", scenario_file)])
    path = check_output_file(args.path, args.force, "path")
    model = load_model(args.scenario, args)
    model.save(path)
    kind = "scenario" if model.names in ("1a", "1b", "2") and args.scenario == model.names else "model"
    size = f"{'sparse' if model.is_sparse else 'dense'}, nnz={model.nnz:,}, {human_bytes(model.nbytes)}"
    print(f"wrote {kind} {args.scenario} (S={model.S} A={model.A} {length_label(model)} N={model.N}, {size}) to {path}")
    return EXIT_OK
