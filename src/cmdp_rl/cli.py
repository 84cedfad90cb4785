"""The ``cmdp-rl`` command line.

Exit codes: 0 success (optimal), 1 infeasible, 2 bad input (one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import numpy as np

from .model import CMDP
from .planning import PlanResult, SolverError, solve
from .validation import CMDPInputError

EXIT_OK, EXIT_INFEASIBLE, EXIT_BAD_INPUT = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see --help)\n")


def _fmt(x: Sequence[float] | np.ndarray) -> str:
    return "[" + ", ".join(f"{v:.6g}" for v in np.asarray(x, dtype=float)) + "]"


def _plan_json(res: PlanResult) -> dict[str, Any]:
    out: dict[str, Any] = {"status": res.status, "value": res.value, "costs": [float(v) for v in res.costs]}
    if res.min_costs is not None:
        out["min_costs"] = [float(v) for v in res.min_costs]
    return out


def _cmd_solve(args: argparse.Namespace) -> int:
    model = CMDP.load(args.model)
    res = solve(model)
    if args.json:
        print(json.dumps(_plan_json(res)))
    else:
        print(f"model     {args.model}: S={model.S} A={model.A} H={model.H} N={model.N} s0={model.s0}")
        print(f"status    {res.status}")
        print(f"value     {res.value:.6f}")
        print(f"costs     {_fmt(res.costs)}  (thresholds {_fmt(model.c_bar)})")
        if res.min_costs is not None:
            print(f"min_costs {_fmt(res.min_costs)}  (smallest achievable cost of each constraint)")
        det = np.isclose(res.policy.max(-1), 1.0).all()
        print(f"policy    {'deterministic' if det else 'randomized'}, shape {res.policy.shape}")
    return EXIT_OK if res.feasible else EXIT_INFEASIBLE


def _cmd_learn(args: argparse.Namespace) -> int:
    from .evaluate import evaluate
    from .learners import EpisodicEnv, GenerativeModel, OnlineCRL, OptimisticGMBL, Scorer

    model = CMDP.load(args.model)
    budget = {"samples_per_pair": args.samples_per_pair, "episodes": args.episodes, "eps": args.eps}
    given = [k for k, v in budget.items() if v is not None]
    if len(given) != 1:
        raise CMDPInputError("--samples-per-pair/--episodes/--eps: give exactly one budget")
    if args.algo == "gmbl" and args.episodes is not None:
        raise CMDPInputError("--episodes: applies to --algo online-crl; use --samples-per-pair for gmbl")
    if args.algo == "online-crl" and args.samples_per_pair is not None:
        raise CMDPInputError("--samples-per-pair: applies to --algo gmbl; use --episodes for online-crl")
    scorer = Scorer.for_model(model)
    rng = np.random.default_rng(np.random.SeedSequence(args.seed).spawn(1)[0])
    out: dict[str, Any] = {"algo": args.algo, "seed": args.seed, "delta": args.delta, "v_star": scorer.v_star}
    if args.algo == "gmbl":
        gmbl = OptimisticGMBL(
            model, args.delta, samples_per_pair=args.samples_per_pair, eps=args.eps, method=args.method
        )
        res = gmbl.fit(GenerativeModel(model, rng), scorer)
        policy, samples, status = res.policy, res.samples, res.plan.status
        out.update(samples_per_pair=res.n_per_pair, optimistic_value=res.plan.value)
    else:
        crl = OnlineCRL(
            model,
            args.delta,
            episodes=args.episodes,
            eps=args.eps,
            max_episodes=args.max_episodes,
            method=args.method,
        )
        run = crl.fit(EpisodicEnv(model, rng), scorer, progress=not args.json)
        policy, samples = run.policy, int(run.samples[-1])
        status = "infeasible" if run.infeasible[-1] else "optimal"
        out.update(
            episodes=run.episodes,
            stopped=run.stopped,
            infeasible_episodes=int(run.infeasible.sum()),
            bad_episodes={str(e): run.bad_episodes(e) for e in (0.05, 0.1, 0.2)},
            optimistic_value=float(run.optimistic_value[-1]),
        )
    ev = evaluate(model, policy)
    gap = scorer.v_star - ev.value
    viol = float(max(np.max(ev.costs - model.c_bar, initial=0.0), 0.0))
    out.update(
        samples=samples,
        elp_status=status,
        value=ev.value,
        costs=[float(v) for v in ev.costs],
        value_gap=gap,
        violation=viol,
    )
    if args.json:
        print(json.dumps(out))
    else:
        print(f"algorithm   {args.algo} (seed {args.seed}, delta {args.delta})")
        print(f"samples     {samples:,}")
        if "episodes" in out:
            print(
                f"episodes    {out['episodes']:,}  (infeasible ELPs: {out['infeasible_episodes']}, "
                f"eps-bad episodes at eps=0.1: {out['bad_episodes']['0.1']})"
            )
        print(f"ELP         {status}, optimistic value {out['optimistic_value']:.6f}")
        print(f"value       {ev.value:.6f}   (optimum V* = {scorer.v_star:.6f}, gap {gap:+.6f})")
        print(f"costs       {_fmt(ev.costs)}  (thresholds {_fmt(model.c_bar)}, violation {viol:.6f})")
    return EXIT_OK


def _cmd_bounds(args: argparse.Namespace) -> int:
    from .theory import bounds_report

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
    from .envs import scenario_table

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
            f"{_fmt(r['c_bar']):>6} {r['v_star']:>17.4f} {r['v_unconstrained']:>18.4f}  {r['description']}"
        )
    return EXIT_OK


def _cmd_export(args: argparse.Namespace) -> int:
    from .envs import scenario_cmdp

    model = scenario_cmdp(args.scenario)
    model.save(args.path)
    print(f"wrote scenario {args.scenario} (S={model.S} A={model.A} H={model.H} N={model.N}) to {args.path}")
    return EXIT_OK


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from .experiments import ExperimentConfig, load_config, reproduce

    base = ExperimentConfig.quick() if args.quick else ExperimentConfig()
    cfg = load_config(args.config, base=base) if args.config else base
    changes: dict[str, Any] = {}
    for key in ("runs", "jobs", "seed", "backend", "address"):
        value = getattr(args, key)
        if value is not None:
            changes[key] = value
    if args.address is not None and args.backend is None:
        changes["backend"] = "ray"
    if changes:
        cfg = cfg.replace(**changes)
    out = args.out if args.out is not None else ("results/quick" if args.quick else "results/paper")
    try:
        res = reproduce(cfg, out, progress=not args.no_progress)
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
        f"{f', {len(sw.removed)} corrupt files rerun' if sw.removed else ''} "
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


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with all subcommands."""
    parser = _Parser(
        prog="cmdp-rl",
        description=(
            "Solve and learn finite-horizon constrained MDPs (tabular). Models are .npz files "
            "with keys P (S,A,S), r (S,A), c (N,S,A), c_bar (N,), s0, H."
        ),
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser(
        "solve",
        help="solve a CMDP exactly with the occupation-measure LP",
        description="Solve a CMDP exactly (HiGHS). Exit code 0 if optimal, 1 if infeasible, 2 on bad input.",
    )
    p.add_argument("model", help="path to a .npz model file")
    p.add_argument("--json", action="store_true", help='print {"status", "value", "costs"[, "min_costs"]}')
    p.set_defaults(func=_cmd_solve)

    p = sub.add_parser(
        "learn",
        help="learn a CMDP with Optimistic-GMBL or Online-CRL",
        description="Learn a policy from samples of MODEL's kernel (the learner knows "
        "r, c, c_bar, s0, H) and score it exactly against the optimum.",
    )
    p.add_argument("model", help="path to a .npz model file (the true CMDP)")
    p.add_argument("--algo", choices=("gmbl", "online-crl"), required=True)
    p.add_argument("--samples-per-pair", type=int, help="budget mode for gmbl: n samples per (s,a)")
    p.add_argument("--episodes", type=int, help="budget mode for online-crl: K episodes")
    p.add_argument("--eps", type=float, help="theory mode: sample sizes from the paper's theorems")
    p.add_argument("--max-episodes", type=int, help="cap on episodes in online-crl theory mode")
    p.add_argument("--delta", type=float, default=0.1, help="failure probability (default 0.1)")
    p.add_argument("--seed", type=int, default=0, help="root seed (default 0)")
    p.add_argument(
        "--method",
        choices=("fast", "lp"),
        default="fast",
        help="extended-LP method (default fast: column generation)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_cmd_learn)

    p = sub.add_parser(
        "bounds",
        help="the paper's sample-complexity numbers",
        description="Theory calculator: Theorem 1 (Optimistic-GMBL) and Theorem 2 / eq. m "
        "(Online-CRL) for given sizes, eps and delta.",
    )
    p.add_argument("--states", type=int, required=True)
    p.add_argument("--actions", type=int, required=True)
    p.add_argument("--horizon", type=int, required=True)
    p.add_argument("--constraints", type=int, default=1)
    p.add_argument("--eps", type=float, required=True)
    p.add_argument("--delta", type=float, required=True)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_bounds)

    p = sub.add_parser(
        "scenarios",
        help="list the paper's grid-world scenarios",
        description="The paper's scenarios (DESIGN section 10) with size, horizon, threshold and exact optimum.",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_scenarios)

    p = sub.add_parser(
        "export",
        help="write a scenario as a .npz model file",
        description="Write scenario NAME (1a, 1b, 2) in the library's file format.",
    )
    p.add_argument("scenario", help="scenario name: 1a, 1b or 2")
    p.add_argument("path", help="output .npz path")
    p.set_defaults(func=_cmd_export)

    p = sub.add_parser(
        "reproduce",
        help="run the paper's experiments: sweep, table, figures",
        description="Run the paper's experiment protocol (scenarios 1a, 1b, 2; "
        "Optimistic-GMBL and Online-CRL; 25 runs each by default), then "
        "write results.csv, summary.md, config.toml and the figures into "
        "--out. Finished runs are kept in OUT/runs: rerunning the same "
        "command resumes an interrupted sweep. Exit code 2 on a bad "
        "configuration.",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="small preset (few runs, small budgets; about a minute on 2 cores)",
    )
    p.add_argument(
        "--config",
        metavar="FILE",
        help="TOML file overriding the preset (keys: the ExperimentConfig fields, optional preset = 'quick' | 'full')",
    )
    p.add_argument("--runs", type=int, help="runs per (scenario, algorithm) (default 25; quick 5)")
    p.add_argument("--out", metavar="DIR", help="output folder (default results/paper; with --quick results/quick)")
    p.add_argument("--jobs", type=int, help="parallel workers (default: number of CPUs)")
    p.add_argument("--seed", type=int, help="root seed (default 0)")
    p.add_argument("--backend", choices=("local", "ray"), help="local processes (default) or Ray tasks")
    p.add_argument(
        "--address",
        metavar="ADDR",
        help="Ray cluster address (implies --backend ray); default: a local Ray instance",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_reproduce)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``cmdp-rl`` console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except CMDPInputError as exc:
        print(f"cmdp-rl {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except SolverError as exc:
        print(f"cmdp-rl {args.command}: solver error: {exc}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print(f"cmdp-rl {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
