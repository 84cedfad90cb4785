"""The ``cmdp-rl`` command line.

Exit codes (one error boundary for every command, :func:`main`):

* 0 success (``solve``: optimal); 1 the problem is infeasible;
* 2 bad input: a bad argument, file, path, number, a refused overwrite or a job beyond
  a resource limit; one line on stderr, nothing written;
* 3 an internal error or a solver failure: one line on stderr naming the file that holds
  the full traceback (``--debug`` prints it instead);
* 130 interrupted (SIGINT, Ctrl-C), 143 terminated (SIGTERM): workers are stopped,
  finished runs are kept, rerunning resumes; 141 the reader of the output went away
  (broken pipe).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import signal
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

import numpy as np

from . import __version__
from .cli_common import check_output_file, load_npy, note_compilation, save_counts, save_npy
from .learners.catalog import ONLINE_ALGORITHMS
from .limits import (
    DEFAULT_MAX_MEMORY,
    DEFAULT_MAX_SECONDS,
    Estimate,
    check_estimate,
    check_samples_per_pair,
    exact_estimate,
    human_bytes,
    learn_estimate,
    parse_duration,
    parse_size,
    passes,
)
from .model import CMDP, length_label, start_label
from .planning import METHODS, PlanResult, SolverError, solve
from .validation import CMDPInputError

EXIT_OK, EXIT_INFEASIBLE, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_BROKEN_PIPE, EXIT_SIGINT, EXIT_SIGTERM = 141, 130, 143


class Terminated(KeyboardInterrupt):
    """Raised in the main thread on SIGTERM, so every ``finally`` (worker shutdown) runs."""


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see --help)\n")


class _Help(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Show defaults in --help and keep the descriptions' line breaks."""


# -- argument types: each names the rule it checks ------------------------------------------


def _int_at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {value}")
        return value

    parse.__name__ = f"integer >= {minimum}"
    return parse


def _open_unit(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1), got {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must lie in the open interval (0, 1), got {text}")
    return value


def _nonnegative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text!r}") from None
    if not (math.isfinite(value) and value >= 0.0):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return value


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text!r}") from None
    if not (math.isfinite(value) and value > 0.0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except CMDPInputError as exc:
        raise argparse.ArgumentTypeError(str(exc).split(": ", 1)[1]) from None


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except CMDPInputError as exc:
        raise argparse.ArgumentTypeError(str(exc).split(": ", 1)[1]) from None


# -- shared helpers ---------------------------------------------------------------------------


def _fmt(x: Sequence[float] | np.ndarray) -> str:
    return "[" + ", ".join(f"{v:.6g}" for v in np.asarray(x, dtype=float)) + "]"


def _plan_json(res: PlanResult) -> dict[str, Any]:
    out: dict[str, Any] = {"status": res.status, "value": res.value, "costs": [float(v) for v in res.costs]}
    if res.feasible:
        out["gap"] = res.gap
    if res.min_costs is not None:
        out["min_costs"] = [float(v) for v in res.min_costs]
    if res.multipliers is not None:
        out["multipliers"] = [float(v) for v in res.multipliers]
    return out


def load_model(arg: str, args: argparse.Namespace | None = None) -> CMDP:
    """A model from a ``.npz`` path or a registered problem spec such as ``1a`` or
    ``garnet:S=50,seed=1`` (an existing file of that name wins). A spec is checked against the
    command's ``--max-memory`` / ``--max-time`` (when it has them) from its parameters, before
    it is built."""
    from .envs.registry import PROBLEMS, is_spec, make

    if os.path.exists(arg) or not is_spec(arg):
        if not os.path.exists(arg):
            raise CMDPInputError(
                f"model: {arg!r} is neither a file nor a registered problem (cmdp-rl envs lists them: "
                f"{', '.join(PROBLEMS)})"
            )
        return CMDP.load(arg)
    if args is not None and hasattr(args, "max_memory"):
        return make(arg, max_memory=float(args.max_memory), max_seconds=float(args.max_time))
    return make(arg)


def _limits(args: argparse.Namespace) -> tuple[float, float]:
    return float(args.max_memory), float(args.max_time)


# -- commands -----------------------------------------------------------------------------------


def model_summary(label: str, model: CMDP) -> str:
    """``label: S=.. A=.. H=..|gamma=.. N=.. s0=.., dense|sparse, nnz=.., <memory>`` (one line)."""
    kind = "sparse" if model.is_sparse else "dense"
    return (
        f"{label}: S={model.S} A={model.A} {length_label(model)} N={model.N} s0={start_label(model)}, "
        f"{kind}, nnz={model.nnz:,}, {human_bytes(model.nbytes)}"
    )


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
    check_estimate(
        exact_estimate(model.S, model.A, passes(model), model.N, model.nnz, args.method), "model", *_limits(args)
    )
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
        print(f"costs     {_fmt(res.costs)}  (thresholds {_fmt(model.c_bar)})")
        if res.min_costs is not None:
            print(f"min_costs {_fmt(res.min_costs)}  (smallest achievable cost of each constraint)")
        det = np.isclose(res.policy.max(-1), 1.0).all()
        print(f"policy    {'deterministic' if det else 'randomized'}, shape {res.policy.shape}")
        how = f"{res.sweeps} sweeps, {res.iterations} iterations" if args.method == "fast" else "HiGHS"
        print(f"time      {elapsed:.3g} s  ({args.method}: {how})")
    return EXIT_OK if res.feasible else EXIT_INFEASIBLE


def _safe_plan(model: Any, counts: np.ndarray, delta: float, sampling: str) -> Any:
    """:func:`cmdp_rl.safe.solve_safe` on ``counts`` with the model's known parts."""
    from .safe import solve_safe

    if model.N == 0:
        raise CMDPInputError("--safe: the model has no constraint to certify")
    s0, H = model.episodic("learn --safe")
    return solve_safe(counts, model.r, model.c, model.c_bar, s0, H, delta=delta, sampling=sampling)


def _cmd_learn_from_log(args: argparse.Namespace, model: Any, policy_out: Path | None) -> int:
    """``learn MODEL --from-log FILE``: plan on the logged counts only, then certify the plan."""
    from .certify import certify
    from .learners import OnlineCRL, OptimisticGMBL
    from .logs import read_log

    counts = read_log(args.from_log, model.S, model.A, model.horizon("learn --from-log"))
    out: dict[str, Any] = {"algo": args.algo, "from_log": str(args.from_log), "delta": args.delta}
    out["samples"] = int(counts.sum())
    if args.safe:
        plan = _safe_plan(model, counts, args.delta, "adaptive")
        policy, cert, status = plan.policy, plan.certificate, plan.status
        if plan.samples_per_pair is not None:
            out["samples_per_pair_needed"] = plan.samples_per_pair
    else:
        if args.algo == "gmbl":
            n_min = int(counts.sum(-1).min())
            res = OptimisticGMBL(model, args.delta, samples_per_pair=max(n_min, 1), radius=args.radius).plan(
                counts, n_min, None
            )
            plan_res = res.plan
        else:
            episodes = max(1, -(-int(counts.sum()) // model.horizon("learn --from-log")))
            plan_res = OnlineCRL(model, args.delta, episodes=episodes, radius=args.radius).replan(counts, None)
        policy, status = plan_res.policy, plan_res.status
        s0, H = model.episodic("learn --from-log")
        cert = certify(policy, counts, model.r, model.c, model.c_bar, s0, H, delta=args.delta)
    out.update(elp_status=status, certificate=_certificate_json(cert))
    if policy is not None and policy_out is not None:
        save_npy(policy_out, np.asarray(policy, dtype=np.float64))
        out["policy_out"] = str(policy_out)
    if args.counts_out is not None:
        save_counts(Path(args.counts_out), counts, model.S, model.A)
        out["counts_out"] = str(args.counts_out)
    if args.json:
        print(json.dumps(out))
    else:
        print(f"log         {args.from_log}: {out['samples']:,} transitions")
        print(f"plan        {status}" + (" (certified-safe planning)" if args.safe else f" ({args.algo} ELP)"))
        _print_certificate(cert, model)
        if policy is None:
            need = out.get("samples_per_pair_needed")
            more = f"; about {need:,} samples per pair would be needed" if need else ""
            print(f"no policy can be certified safe with these data{more}")
        elif policy_out is not None:
            print(f"policy      written to {policy_out}")
    if args.safe and policy is None:
        return EXIT_INFEASIBLE
    return EXIT_OK


def _cmd_learn(args: argparse.Namespace) -> int:
    from .evaluate import evaluate
    from .learners import (
        EpisodicEnv,
        GenerativeModel,
        OnlineCRL,
        OnlineCRLResult,
        OptimisticGMBL,
        Scorer,
        make_learner,
    )

    if args.env is not None:
        from .cli_simulator import cmd_learn_env

        return cmd_learn_env(args)
    env_only = ("env_kwargs", "horizon", "c_bar", "cost_key", "reward_range", "step_timeout", "run_log")
    for opt in (*env_only, "baseline", "baseline_costs", "figure"):
        if getattr(args, opt) is not None:
            raise CMDPInputError(f"--{opt.replace('_', '-')}: applies to --env (learning from a simulator) only")
    if args.model is None:
        raise CMDPInputError("model: give a MODEL (a .npz file or a registered problem) or --env ID")
    # 1. every argument and file, before any solve, sample or write
    model = load_model(args.model, args)
    policy_out = None if args.policy_out is None else check_output_file(args.policy_out, args.force, "policy-out")
    counts_out = None if args.counts_out is None else check_output_file(args.counts_out, args.force, "counts-out")
    budget = {"samples_per_pair": args.samples_per_pair, "episodes": args.episodes, "eps": args.eps}
    given = [k for k, v in budget.items() if v is not None]
    if args.from_log is not None:
        if given:
            raise CMDPInputError(f"--{given[0].replace('_', '-')}: no budget with --from-log (the log is the data)")
        if not os.path.isfile(args.from_log):
            raise CMDPInputError(f"from-log: {args.from_log}: no such file")
        return _cmd_learn_from_log(args, model, policy_out)
    if len(given) != 1:
        raise CMDPInputError("--samples-per-pair/--episodes/--eps: give exactly one budget")
    if args.algo == "gmbl" and args.episodes is not None:
        raise CMDPInputError("--episodes: applies to --algo online-crl; use --samples-per-pair for gmbl")
    baseline_algo = args.algo not in ("gmbl", "online-crl")
    if args.algo != "gmbl" and args.samples_per_pair is not None:
        raise CMDPInputError(f"--samples-per-pair: applies to --algo gmbl; use --episodes for {args.algo}")
    if baseline_algo:
        if args.eps is not None:
            raise CMDPInputError(f"--eps: theory mode is Online-CRL's and GMBL's; give --episodes for {args.algo}")
        for opt, value, default in (("method", args.method, "fast"), ("radius", args.radius, "paper")):
            if value != default:
                raise CMDPInputError(f"--{opt}: applies to gmbl and online-crl, not to {args.algo}")
    else:
        for opt in ("bonus_scale", "k0"):
            if getattr(args, opt) is not None:
                raise CMDPInputError(
                    f"--{opt.replace('_', '-')}: applies to the baselines (plugin, optcmdp, ...), not to {args.algo}"
                )
    if args.k0 is not None and args.algo != "dope":
        raise CMDPInputError("--k0: applies to --algo dope only")
    if args.max_episodes is not None and not (args.algo == "online-crl" and args.eps is not None):
        raise CMDPInputError("--max-episodes: applies to --algo online-crl with --eps (theory mode)")
    if args.safe and model.N == 0:
        raise CMDPInputError("--safe: the model has no constraint to certify")
    nnz = model.nnz / (model.S * model.A)
    if args.algo == "gmbl":
        gmbl = OptimisticGMBL(
            model,
            args.delta,
            samples_per_pair=args.samples_per_pair,
            eps=args.eps,
            method=args.method,
            radius=args.radius,
        )
        check_samples_per_pair(gmbl.n, "samples-per-pair" if args.eps is None else "eps")
        est = learn_estimate(
            model.S,
            model.A,
            passes(model),
            model.N,
            samples_per_pair=gmbl.n,
            method=args.method,
            nnz_per_row=nnz,
        )
        check_estimate(est, "samples-per-pair" if args.eps is None else "eps", *_limits(args))
    else:
        if baseline_algo:
            options = {} if args.k0 is None else {"k0": args.k0}
            bonus = 1.0 if args.bonus_scale is None else args.bonus_scale
            crl = make_learner(args.algo, model, args.delta, episodes=args.episodes, bonus_scale=bonus, **options)
        else:
            crl = OnlineCRL(
                model,
                args.delta,
                episodes=args.episodes,
                eps=args.eps,
                max_episodes=args.max_episodes,
                method=args.method,
                radius=args.radius,
            )
        est = learn_estimate(
            model.S,
            model.A,
            passes(model),
            model.N,
            episodes=_budget(crl),
            method=args.method,
            nnz_per_row=nnz,
        )
        check_estimate(est, "episodes" if args.eps is None else "max-episodes", *_limits(args))
    # 2. work
    note_compilation()
    scorer = Scorer.for_model(model)
    rng = np.random.default_rng(np.random.SeedSequence(args.seed).spawn(1)[0])
    out: dict[str, Any] = {
        "algo": args.algo,
        "seed": args.seed,
        "delta": args.delta,
        "radius": args.radius,
        "v_star": scorer.v_star,
    }
    if args.algo == "gmbl":
        res = gmbl.fit(GenerativeModel(model, rng), scorer)
        policy, samples, status, counts = res.policy, res.samples, res.plan.status, res.counts
        out.update(samples_per_pair=res.n_per_pair, optimistic_value=res.plan.value)
    else:
        run = crl.fit(EpisodicEnv(model, rng), scorer, progress=not args.json)
        policy, samples, counts = run.policy, int(run.samples[-1]), run.counts
        last = str(run.status[-1])
        status = {"optimistic": "optimal"}.get(last, last)  # "optimal", "infeasible" or "baseline"
        out.update(
            episodes=run.episodes,
            infeasible_episodes=int(np.sum(run.status == "infeasible")),
            bad_episodes={str(e): run.bad_episodes(e) for e in (0.05, 0.1, 0.2)},
            optimistic_value=_finite_or_none(run.planned_value[-1]),
            violating_episodes=run.violating_episodes,
            baseline_episodes=run.baseline_episodes,
            cum_value_gap=float(run.cum_value_gap[-1]),
            cum_abs_value_gap=float(run.cum_abs_value_gap[-1]),
            cum_violation=float(run.cum_violation[-1]),
            statuses=run.status_counts(),
            settings=dict(run.settings),
            seconds_per_episode=float(np.mean(run.plan_seconds + run.act_seconds)),
        )
        if isinstance(run, OnlineCRLResult):
            out["stopped"] = run.stopped
    safe_plan = None
    if args.safe:
        safe_plan = _safe_plan(model, counts, args.delta, "fixed" if args.algo == "gmbl" else "adaptive")
        out["certificate"] = _certificate_json(safe_plan.certificate)
        out["safe_status"] = safe_plan.status
        if safe_plan.samples_per_pair is not None:
            out["samples_per_pair_needed"] = safe_plan.samples_per_pair
        policy = safe_plan.policy
    out.update(samples=samples, elp_status=status)
    if policy is not None:
        ev = evaluate(model, policy)
        gap = scorer.v_star - ev.value
        viol = float(max(np.max(ev.costs - model.c_bar, initial=0.0), 0.0))
        out.update(value=ev.value, costs=[float(v) for v in ev.costs], value_gap=gap, violation=viol)
        if policy_out is not None:
            save_npy(policy_out, np.asarray(policy, dtype=np.float64))
            out["policy_out"] = str(policy_out)
    if counts_out is not None:
        save_counts(counts_out, counts, model.S, model.A)
        out["counts_out"] = str(counts_out)
    if args.json:
        print(json.dumps(out))
    else:
        detail = (
            f"radius {args.radius}"
            if args.algo in ("gmbl", "online-crl")
            else f"bonus_scale {out['settings']['bonus_scale']:g}"
        )
        print(f"algorithm   {args.algo} (seed {args.seed}, delta {args.delta}, {detail})")
        print(f"samples     {samples:,}")
        if "episodes" in out:
            print(
                f"episodes    {out['episodes']:,}  (infeasible {'ELPs' if args.algo == 'online-crl' else 'plans'}: "
                f"{out['infeasible_episodes']}, "
                f"eps-bad episodes at eps=0.1: {out['bad_episodes']['0.1']})"
            )
            print(
                f"regret      {out['cum_value_gap']:.6g}  (sum of V* - V^pi_k; cumulative violation "
                f"{out['cum_violation']:.6g}, violating episodes {out['violating_episodes']}, "
                f"baseline episodes {out['baseline_episodes']})"
            )
        if args.algo in ("gmbl", "online-crl"):
            print(f"ELP         {status}, optimistic value {out['optimistic_value']:.6f}")
        elif status == "baseline":
            print("plan        baseline (the last episode played the safe baseline policy)")
        else:
            print(f"plan        {status}, planned value {out['optimistic_value']:.6f}")
        if safe_plan is not None:
            print("safe plan   " + ("certified safe" if safe_plan.safe else "none: no policy certified safe"))
            _print_certificate(safe_plan.certificate, model)
            if not safe_plan.safe and safe_plan.samples_per_pair:
                print(f"need        about {safe_plan.samples_per_pair:,} samples per pair (calculator estimate)")
        if policy is not None:
            print(f"value       {out['value']:.6f}   (optimum V* = {scorer.v_star:.6f}, gap {out['value_gap']:+.6f})")
            print(
                f"costs       {_fmt(np.asarray(out['costs']))}  (thresholds {_fmt(model.c_bar)}, "
                f"violation {out['violation']:.6f})"
            )
        if policy_out is not None and policy is not None:
            print(f"policy      written to {policy_out} (shape {policy.shape})")
        if counts_out is not None:
            print(f"counts      written to {counts_out}")
    return EXIT_INFEASIBLE if safe_plan is not None and not safe_plan.safe else EXIT_OK


def _finite_or_none(x: Any) -> float | None:
    """``x`` as a float, or ``None`` (JSON ``null``) when it is not finite (a baseline episode has
    no planned value)."""
    v = float(x)
    return v if math.isfinite(v) else None


def _budget(learner: Any) -> int:
    """The episode budget of an online learner (Online-CRL's ``max_episodes``, else ``episodes``)."""
    return int(getattr(learner, "max_episodes", None) or learner.episodes)


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


def _load_sparse_counts(path: str, model: CMDP) -> Any:
    """Sparse ``(S*A, S)`` counts from an ``.npz`` written by ``scipy.sparse.save_npz``, or a one-line error."""
    import scipy.sparse as sp

    if not os.path.isfile(path):
        raise CMDPInputError(f"counts: {path}: no such file")
    try:
        counts = sp.load_npz(path)
    except (OSError, ValueError, EOFError, KeyError) as exc:
        raise CMDPInputError(f"counts: {path}: not a scipy.sparse .npz matrix ({exc})") from None
    want = (model.S * model.A, model.S)
    if counts.shape != want:
        raise CMDPInputError(f"counts: expected a sparse (S*A, S) = {want} matrix, got {counts.shape}")
    return counts


def _certificate_json(cert: Any) -> dict[str, Any]:
    """The certificate as JSON: ``value`` [lo, hi], ``costs`` [[lo, hi], ...], ``safe``, ``delta_prime``
    (the smallest per-entry failure probability used; ``delta_prime_max`` the largest), ``radius``,
    ``sampling``, ``samples``, ``delta``."""
    return {
        "value": [cert.value_lo, cert.value_hi],
        "costs": [[float(lo), float(hi)] for lo, hi in zip(cert.cost_lo, cert.cost_hi, strict=True)],
        "safe": cert.safe,
        "delta_prime": float(cert.delta_prime.min()),
        "delta_prime_max": float(cert.delta_prime.max()),
        "radius": cert.radius,
        "sampling": cert.sampling,
        "samples": cert.samples,
        "delta": cert.delta,
    }


def _print_certificate(cert: Any, model: Any) -> None:
    print(
        f"data        {cert.samples:,} transitions; radius {cert.radius}, sampling {cert.sampling}, "
        f"delta {cert.delta:g} (per entry {cert.delta_prime.min():.3g} .. {cert.delta_prime.max():.3g})"
    )
    print(f"value       [{cert.value_lo:.6f}, {cert.value_hi:.6f}]")
    for i in range(model.N):
        print(f"cost {i:<6} [{cert.cost_lo[i]:.6f}, {cert.cost_hi[i]:.6f}]  (threshold {model.c_bar[i]:g})")
    verdict = "certified safe" if cert.safe else "NOT certified safe"
    print(f"verdict     {verdict} with probability >= {1 - cert.delta:g}")


def _cmd_certify(args: argparse.Namespace) -> int:
    from .certify import certify
    from .logs import read_log

    model = load_model(args.model, args)
    if (args.counts is None) == (args.log is None):
        raise CMDPInputError("--counts/--log: give exactly one source of data")
    s0, H = model.episodic("certify")
    policy = load_npy(args.policy, "policy")
    if policy.shape != (H, model.S, model.A):
        raise CMDPInputError(f"policy: expected an (H, S, A) = {(H, model.S, model.A)} array, got {policy.shape}")
    counts: Any
    if args.counts is not None and str(args.counts).endswith(".npz"):
        counts = _load_sparse_counts(args.counts, model)
    elif args.counts is not None:
        counts = load_npy(args.counts, "counts")
        if counts.shape != (model.S, model.A, model.S):
            raise CMDPInputError(
                f"counts: expected an (S, A, S) = {(model.S, model.A, model.S)} array, got {counts.shape}"
            )
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
        print(json.dumps(_certificate_json(cert)))
    else:
        _print_certificate(cert, model)
    return EXIT_OK if cert.safe else EXIT_INFEASIBLE


def _cmd_envs(args: argparse.Namespace) -> int:
    from .envs.registry import problem_table

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
    try:
        kwargs = json.loads(args.env_kwargs) if args.env_kwargs else {}
    except json.JSONDecodeError as exc:
        raise CMDPInputError(f"env-kwargs: not valid JSON ({exc})") from None
    if not isinstance(kwargs, dict):
        raise CMDPInputError("env-kwargs: must be a JSON object such as '{\"is_slippery\": true}'")
    from .envs.gymnasium_import import from_gymnasium

    model = from_gymnasium(args.env_id, args.horizon, cost=args.cost, threshold=args.threshold, **kwargs)
    model.save(out)
    print(f"wrote {args.env_id} (S={model.S} A={model.A} {length_label(model)} N={model.N}) to {out}")
    return EXIT_OK


def _cmd_frontier(args: argparse.Namespace) -> int:
    from .experiments.reproduce import check_output_folder
    from .planning.frontier import frontier, write_frontier

    out = Path(args.out)
    check_output_folder(out)
    model = load_model(args.model, args)
    if model.N == 0:
        raise CMDPInputError(f"model {args.model}: has no constraints (N = 0): no threshold to vary")
    if not 0 <= args.constraint < model.N:
        raise CMDPInputError(f"constraint: must be an index in [0, {model.N - 1}], got {args.constraint}")
    check_estimate(exact_estimate(model.S, model.A, passes(model), model.N, model.nnz), "model", *_limits(args))
    start = time.perf_counter()
    fr = frontier(model, constraint=args.constraint, points=args.points, breakpoints=True if args.breakpoints else None)
    elapsed = time.perf_counter() - start
    write_frontier(fr, str(out), label=str(args.model))
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


def _cmd_pg(args: argparse.Namespace) -> int:
    from .cli_pg import cmd_pg

    return cmd_pg(args, load_model, model_summary)


def _cmd_export(args: argparse.Namespace) -> int:
    path = check_output_file(args.path, args.force, "path")
    model = load_model(args.scenario, args)
    model.save(path)
    kind = "scenario" if model.names in ("1a", "1b", "2") and args.scenario == model.names else "model"
    size = f"{'sparse' if model.is_sparse else 'dense'}, nnz={model.nnz:,}, {human_bytes(model.nbytes)}"
    print(f"wrote {kind} {args.scenario} (S={model.S} A={model.A} {length_label(model)} N={model.N}, {size}) to {path}")
    return EXIT_OK


def _sweep_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The sweep options given on the command line (``--runs/--jobs/--seed/--backend/--address``);
    an ``--address`` implies the Ray backend."""
    changes = {
        k: getattr(args, k) for k in ("runs", "jobs", "seed", "backend", "address") if getattr(args, k) is not None
    }
    if args.address is not None and args.backend is None:
        changes["backend"] = "ray"
    return changes


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from .experiments import ExperimentConfig, load_config, reproduce
    from .experiments.reproduce import check_output_folder, estimate_sweep

    base = ExperimentConfig.quick() if args.quick else ExperimentConfig()
    cfg = load_config(args.config, base=base) if args.config else base
    changes = _sweep_overrides(args)
    if changes:
        cfg = cfg.replace(**changes)
    out = Path(args.out if args.out is not None else ("results/quick" if args.quick else "results/paper"))
    check_output_folder(out)
    est = estimate_sweep(cfg)
    check_estimate(est, "episodes/runs (configuration)", *_limits(args))
    note_compilation()
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
    from .experiments.compare import QUICK, CompareConfig, compare
    from .experiments.reproduce import check_output_folder

    changes = _sweep_overrides(args)
    for key in ("episodes", "delta", "bonus_scale", "checkpoints"):
        if getattr(args, key) is not None:
            changes[key] = getattr(args, key)
    if args.algos is not None:
        changes["algorithms"] = args.algos
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
    out = Path(args.out)
    check_output_folder(out)
    cfg.check_problem()
    from .envs.registry import make

    m = make(cfg.problem)
    est = learn_estimate(m.S, m.A, m.horizon("compare"), m.N, episodes=cfg.episodes, nnz_per_row=m.nnz / (m.S * m.A))
    runs = len(cfg.algorithms) * cfg.runs
    jobs = min(cfg.jobs, runs)
    check_estimate(Estimate(est.bytes * jobs, est.seconds * runs / jobs), "episodes/runs", *_limits(args))
    note_compilation()
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


def _algo_list(text: str) -> tuple[str, ...]:
    names = tuple(a.strip() for a in text.split(",") if a.strip())
    for a in names:
        if a not in ONLINE_ALGORITHMS:
            raise argparse.ArgumentTypeError(f"unknown learner {a!r}; valid names are {', '.join(ONLINE_ALGORITHMS)}")
    if not names:
        raise argparse.ArgumentTypeError("give at least one learner, e.g. dope,optpess")
    return names


def _cmd_study(args: argparse.Namespace) -> int:
    from .experiments.reproduce import check_output_folder, estimate_sweep
    from .experiments.study import NConstraintsStudy, run_study

    changes = _sweep_overrides(args)
    study = NConstraintsStudy.quick(**changes) if args.quick else NConstraintsStudy(**changes)
    out = Path(
        args.out if args.out is not None else ("results/n-constraints-quick" if args.quick else "results/n-constraints")
    )
    check_output_folder(out)
    for cfg in study.experiment_configs().values():
        check_estimate(estimate_sweep(cfg), "runs (study)", *_limits(args))
    note_compilation()
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


def _add_limits(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--max-memory",
        type=_size,
        default=DEFAULT_MAX_MEMORY,
        metavar="SIZE",
        help=f"refuse jobs estimated to need more memory (e.g. 16G, 500M; default "
        f"{human_bytes(DEFAULT_MAX_MEMORY)}, shown in bytes below)",
    )
    p.add_argument(
        "--max-time",
        type=_duration,
        default=DEFAULT_MAX_SECONDS,
        metavar="DURATION",
        help="refuse jobs estimated to run longer (e.g. 3d, 2h, 90s; default one day, shown in seconds below)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with all subcommands."""
    parser = _Parser(
        prog="cmdp-rl",
        formatter_class=_Help,
        description=(
            "Solve and learn finite-horizon constrained MDPs (tabular). A MODEL is a .npz file with keys "
            "P (S,A,S), r (S,A), c (N,S,A), c_bar (N,), s0, H[, meta], or a registered problem with optional "
            "overrides (1a, garnet:S=50,seed=1; cmdp-rl envs lists them); an existing file of that name wins."
        ),
        epilog="Exit codes: 0 ok, 1 infeasible, 2 bad input (one line, nothing written), 3 internal or "
        "solver error, 130/143 interrupted/terminated (rerun resumes), 141 broken pipe.",
    )
    parser.add_argument("--version", action="version", version=f"cmdp-rl {__version__}")
    parser.add_argument("--debug", action="store_true", help="print the full traceback of an internal error")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser(
        "solve",
        help="solve a CMDP exactly, with a certified optimality gap",
        formatter_class=_Help,
        description="Solve a CMDP exactly (dense or sparse model): column generation with a certified "
        "gap (fast, default) or the occupation-measure LP (lp, HiGHS). Exit code 0 if optimal, 1 if "
        "infeasible, 2 on bad input.",
    )
    p.add_argument("model", help="a .npz model file or a registered problem (see cmdp-rl envs)")
    p.add_argument(
        "--method", choices=METHODS, default="fast", help="fast: column generation with a certificate; lp: HiGHS"
    )
    p.add_argument(
        "--gap-tol",
        type=_nonnegative,
        default=None,
        metavar="G",
        help="fast: stop once the certified gap V* - value is at most G (default: 1e-9 * H)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help='print {"status", "value", "costs", "gap"[, "min_costs"], "multipliers"}',
    )
    _add_limits(p)
    p.set_defaults(func=_cmd_solve)

    p = sub.add_parser(
        "learn",
        help="learn a CMDP with Optimistic-GMBL, Online-CRL or a baseline of the arena",
        formatter_class=_Help,
        description="Learn a policy from samples of MODEL's kernel (the learner knows r, c, c_bar, "
        "s0, H) and score it exactly against the optimum. Give exactly one budget: "
        "--samples-per-pair (gmbl), --episodes (online learners) or --eps (theory mode).\n\n"
        "Or learn from a simulator: --env ID (a Gymnasium id; the library's own problems are "
        "cmdp_rl/<name>-v0) with --horizon, --c-bar and --episodes, instead of MODEL: the learner only "
        "resets and steps it, and estimates the start distribution, rewards and costs "
        "(docs/simulators.md).",
    )
    p.add_argument(
        "model", nargs="?", help="a .npz model file or a registered problem (see cmdp-rl envs): the true CMDP"
    )
    p.add_argument("--env", metavar="ID", help="learn from this Gymnasium environment (a black box) instead of MODEL")
    p.add_argument("--env-kwargs", metavar="JSON", help="--env: keywords of gymnasium.make, a JSON object")
    p.add_argument("--horizon", type=_int_at_least(1), metavar="H", help="--env: steps per episode")
    p.add_argument(
        "--c-bar", metavar="X[/Y...]", help="--env: bounds on the expected sums of the H step costs, one per constraint"
    )
    p.add_argument("--cost-key", metavar="K", help="--env: the info key of the step costs (default: cost, then costs)")
    p.add_argument(
        "--reward-range",
        type=float,
        nargs=2,
        metavar=("LO", "HI"),
        help="--env: map the environment's rewards from [LO, HI] to [0, 1]",
    )
    p.add_argument("--step-timeout", type=_positive, metavar="S", help="--env: seconds allowed per reset or step call")
    p.add_argument(
        "--run-log",
        metavar="FILE.jsonl",
        help="--env: append every episode to FILE (JSON lines); a rerun with the same arguments resumes",
    )
    p.add_argument("--baseline", metavar="POLICY.npy", help="--env, optpess/dope: a known safe (H, S, A) policy")
    p.add_argument("--baseline-costs", metavar="X[/Y...]", help="--env, optpess/dope: that policy's expected costs")
    p.add_argument(
        "--figure",
        metavar="FILE.png",
        help="--env: plot the running means of the realized return and costs per episode (thresholds drawn)",
    )
    p.add_argument(
        "--algo",
        choices=("gmbl", *ONLINE_ALGORITHMS),
        default="online-crl",
        help="Optimistic-GMBL (generative model, Algorithm 1), Online-CRL (episodes, Algorithm 2) or a "
        "baseline: plugin, optcmdp, optcmdp-bonus, optdual, optpess, dope (docs/baselines.md)",
    )
    p.add_argument(
        "--samples-per-pair",
        type=_int_at_least(1),
        metavar="N",
        help="budget mode for gmbl: N samples of every (s, a) pair (at most 2^53)",
    )
    p.add_argument(
        "--episodes",
        type=_int_at_least(1),
        metavar="K",
        help="budget mode for the online learners: K episodes of H steps each",
    )
    p.add_argument(
        "--bonus-scale",
        type=_nonnegative,
        metavar="X",
        help="baselines: factor on the reward and cost bonuses, never on a confidence radius "
        "(default 1 = the papers' constants)",
    )
    p.add_argument(
        "--k0",
        type=_int_at_least(0),
        metavar="K0",
        help="dope: episodes of the safe-baseline phase (default ceil(S^2 A H^3 / gamma^2))",
    )
    p.add_argument(
        "--eps", type=_open_unit, help="theory mode: accuracy in (0, 1); sample sizes from the paper's theorems"
    )
    p.add_argument(
        "--max-episodes",
        type=_int_at_least(1),
        metavar="K",
        help="cap on episodes in online-crl theory mode (required there)",
    )
    p.add_argument("--delta", type=_open_unit, default=0.1, help="failure probability in (0, 1)")
    p.add_argument("--seed", type=_int_at_least(0), default=0, help="root seed (integer >= 0)")
    p.add_argument(
        "--method",
        choices=("fast", "lp"),
        default="fast",
        help="extended-LP method: fast (column generation) or lp (the literal LP)",
    )
    p.add_argument(
        "--policy-out",
        metavar="FILE.npy",
        help="save the learned policy as an (H, S, A) float64 .npy array (written atomically)",
    )
    p.add_argument(
        "--counts-out",
        metavar="FILE",
        help="save the transition counts for cmdp-rl certify: FILE.npz as an (S*A, S) sparse matrix "
        "(scipy.sparse.save_npz), another name as an (S, A, S) int64 .npy array; with --env among the "
        "environment's states (steps into the absorbing state, i.e. terminations, are left out)",
    )
    p.add_argument(
        "--radius",
        choices=("paper", "empirical-bernstein"),
        default="paper",
        help="the learner's confidence radius: the paper's Lemma 1 or a valid empirical Bernstein bound",
    )
    p.add_argument(
        "--safe",
        action="store_true",
        help="return the best policy certified safe from the data (cmdp-rl certify's test); exit 1 if none",
    )
    p.add_argument(
        "--from-log",
        metavar="FILE",
        help="plan on logged episodes only (CSV/Parquet: episode, step, state, action, next_state; no "
        "environment, no budget): writes the policy and prints its certificate",
    )
    p.add_argument("--force", action="store_true", help="overwrite an existing --policy-out/--counts-out file")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    _add_limits(p)
    p.set_defaults(func=_cmd_learn)

    p = sub.add_parser(
        "bounds",
        help="the paper's sample-complexity numbers",
        formatter_class=_Help,
        description="Theory calculator: Theorem 1 (Optimistic-GMBL) and Theorem 2 / eq. m "
        "(Online-CRL) for given sizes, eps and delta.",
    )
    p.add_argument("--states", type=_int_at_least(1), required=True, help="|S|, number of states")
    p.add_argument("--actions", type=_int_at_least(1), required=True, help="|A|, number of actions")
    p.add_argument("--horizon", type=_int_at_least(1), required=True, help="H, steps per episode (>= 3 for eq. m)")
    p.add_argument("--constraints", type=_int_at_least(0), default=1, help="N, number of constraints")
    p.add_argument("--eps", type=_open_unit, required=True, help="accuracy in (0, 1)")
    p.add_argument("--delta", type=_open_unit, required=True, help="failure probability in (0, 1)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_cmd_bounds)

    p = sub.add_parser(
        "scenarios",
        help="list the paper's grid-world scenarios",
        formatter_class=_Help,
        description="The paper's scenarios (docs/scenarios.md) with size, horizon, threshold and exact optimum.",
    )
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.set_defaults(func=_cmd_scenarios)

    p = sub.add_parser(
        "certify",
        help="certify a policy's value and safety from data alone",
        formatter_class=_Help,
        description="Bound a policy's value and costs over every kernel of the confidence set built from the "
        "data (counts or a log of episodes). MODEL supplies r, c, c_bar, s0 and H; its kernel P is NOT used. "
        "Exit 0 if certified safe, 1 if not, 2 on bad input, 3 on an internal error.",
    )
    p.add_argument("model", help="a .npz model file or a registered problem (its P is not used)")
    p.add_argument("--policy", required=True, metavar="POLICY.npy", help="the (H, S, A) policy to certify")
    p.add_argument(
        "--counts",
        metavar="COUNTS",
        help="integer transition counts: an (S, A, S) .npy array, or a sparse (S*A, S) matrix in an .npz "
        "written by scipy.sparse.save_npz (row s*A + a holds n(s, a, .))",
    )
    p.add_argument(
        "--log", metavar="FILE", help="logged episodes: CSV/Parquet with episode, step, state, action, next_state"
    )
    p.add_argument("--delta", type=_open_unit, default=0.05, help="failure probability in (0, 1)")
    p.add_argument(
        "--radius",
        choices=("empirical-bernstein", "paper"),
        default="empirical-bernstein",
        help="confidence radius: a valid empirical Bernstein bound, or the paper's Lemma 1",
    )
    p.add_argument(
        "--sampling",
        choices=("adaptive", "fixed"),
        default="adaptive",
        help="sample sizes chosen by the data (learners, logs) or fixed in advance (generative model)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_cmd_certify)

    p = sub.add_parser(
        "envs",
        help="list the registered problems with their optimum and Slater gap",
        formatter_class=_Help,
        description="Every registered problem (a name usable wherever a model file is, with overrides "
        "NAME:key=value,...): S, A, H, N, the constrained optimum V*, the unconstrained optimum, the joint Slater "
        "gap and the safe baseline's cost, at the documented defaults (docs/environments.md).",
    )
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.set_defaults(func=_cmd_envs)

    p = sub.add_parser(
        "import-gym",
        help="import a Gymnasium toy-text environment (FrozenLake, CliffWalking, Taxi) as a CMDP file",
        formatter_class=_Help,
        description="Convert a Gymnasium environment whose unwrapped object exposes the tabular model P "
        "into a CMDP (.npz with meta); the conversion is documented in docs/environments.md.",
    )
    p.add_argument("env_id", help="Gymnasium id, e.g. FrozenLake-v1, CliffWalking-v1, Taxi-v4")
    p.add_argument("--horizon", type=_int_at_least(1), required=True, help="H, steps per episode")
    p.add_argument("--cost", help="named cost (FrozenLake: hole, CliffWalking: cliff, Taxi: illegal); none: N = 0")
    p.add_argument("--threshold", type=float, help="c_bar of the cost (expected total cost per episode)")
    p.add_argument("--env-kwargs", metavar="JSON", help="options for gymnasium.make, e.g. '{\"is_slippery\": true}'")
    p.add_argument("--out", required=True, metavar="FILE.npz", help="output model file (its folder must exist)")
    p.add_argument("--force", action="store_true", help="overwrite an existing file")
    p.set_defaults(func=_cmd_import_gym)

    p = sub.add_parser(
        "export",
        help="write a scenario (or copy a model) as a .npz model file",
        formatter_class=_Help,
        description="Write scenario NAME (1a, 1b, 2) in the library's file format (atomically; an "
        "existing file is only replaced with --force).",
    )
    p.add_argument("scenario", help="a registered problem (1a, garnet:S=50,seed=1, ...; see cmdp-rl envs) or a file")
    p.add_argument("path", help="output .npz path (its folder must exist)")
    p.add_argument("--force", action="store_true", help="overwrite an existing file")
    p.set_defaults(func=_cmd_export)

    p = sub.add_parser(
        "frontier",
        help="the optimal value against one constraint's threshold (exact, with certificates)",
        formatter_class=_Help,
        description="Trace the exact optimal value as a function of one constraint's threshold, the others "
        "fixed, from the smallest feasible threshold to the one above which the constraint is slack; with one "
        "constraint also the exact breakpoints. Writes OUT/frontier.csv (c_bar, value, gap) and "
        "OUT/frontier.png (and OUT/breakpoints.csv for one constraint).",
    )
    p.add_argument("model", help="a .npz model file or a registered problem (see cmdp-rl envs)")
    p.add_argument("--constraint", type=_int_at_least(0), default=0, metavar="I", help="the constraint to vary")
    p.add_argument("--points", type=_int_at_least(2), default=50, metavar="K", help="grid points")
    p.add_argument(
        "--breakpoints",
        action="store_true",
        help="one constraint: enumerate every exact breakpoint, however many (default: within a sweep budget)",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (created if missing)")
    _add_limits(p)
    p.set_defaults(func=_cmd_frontier)

    p = sub.add_parser(
        "pg",
        help="NPG-PD and CRPO on a discounted model: gap and violation per iteration",
        formatter_class=_Help,
        description="Run the policy-gradient primal-dual methods NPG-PD (Ding et al. 2020) and CRPO (Xu et al. "
        "2021) on a discounted model (e.g. ding-random:seed=10, the NPG-PD paper's instance), with exact "
        "gradients (default) or SAMPLES rollouts per state-action pair. Writes OUT/results.csv (one row per "
        "iteration: algorithm, iteration, value, value_gap, avg_value_gap, violation, signed_violation, "
        "multiplier_i), OUT/gap.png and OUT/violation.png; V* comes from the exact planner. Existing results "
        "in OUT are only replaced with --force.",
    )
    p.add_argument("model", help="a discounted .npz model or a registered problem (e.g. ding-random:seed=10)")
    p.add_argument("--algo", default="npg-pd", help="npg-pd, crpo, or both as npg-pd,crpo")
    p.add_argument("--iterations", type=_int_at_least(1), default=300, metavar="T", help="iterations")
    grad = p.add_mutually_exclusive_group()
    grad.add_argument("--exact", action="store_true", help="exact gradients (the default)")
    grad.add_argument(
        "--samples", type=_int_at_least(1), metavar="K", help="sample-based: K rollouts per pair per iteration"
    )
    p.add_argument("--seed", type=_int_at_least(0), default=0, help="root seed of the rollouts (integer >= 0)")
    p.add_argument("--eta1", type=_positive, help="NPG-PD primal step size (default 1)")
    p.add_argument("--eta2", type=_positive, help="NPG-PD dual step size (default 1)")
    p.add_argument(
        "--lambda-max", type=_positive, metavar="L", help="NPG-PD multiplier bound (default 2 / ((1 - gamma) xi))"
    )
    p.add_argument("--eta", type=_positive, help="CRPO step size (default 0.4)")
    p.add_argument("--tol", type=_nonnegative, help="CRPO constraint tolerance (default 0.01)")
    p.add_argument(
        "--update",
        choices=("paper", "script"),
        default="paper",
        help="primal step: the paper's natural gradient, or the authors' tabular script's (1e3 x policy gradient)",
    )
    p.add_argument(
        "--init",
        choices=("uniform", "script"),
        default="uniform",
        help="start from the uniform policy, or from the authors' script's random theta0 (ding-random)",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (created if missing)")
    p.add_argument("--force", action="store_true", help="replace results already in --out")
    p.add_argument("--json", action="store_true", help="print a JSON summary instead of the text report")
    _add_limits(p)
    p.set_defaults(func=_cmd_pg)

    p = sub.add_parser(
        "reproduce",
        help="run the paper's experiments: sweep, table, figures",
        formatter_class=_Help,
        description="Run the paper's experiment protocol (scenarios 1a, 1b, 2; Optimistic-GMBL and Online-CRL; "
        "25 runs each by default), then write results.csv, summary.md, config.toml and the figures "
        "into --out. Finished runs are kept in OUT/runs: rerunning the same command resumes an "
        "interrupted sweep (Ctrl-C or SIGTERM stop the workers and exit 130/143). A folder holding "
        "runs of another configuration is refused (exit 2, nothing written) unless --force.",
    )
    p.add_argument(
        "--quick", action="store_true", help="small preset (5 runs, small budgets; under a minute on 2 cores)"
    )
    p.add_argument(
        "--config",
        metavar="FILE",
        help="TOML file overriding the preset (keys: the ExperimentConfig fields, optional preset = 'quick' | 'full')",
    )
    p.add_argument("--runs", type=_int_at_least(1), help="runs per (scenario, algorithm) (preset: 25; quick 5)")
    p.add_argument("--out", metavar="DIR", help="output folder (default results/paper; with --quick results/quick)")
    p.add_argument("--jobs", type=_int_at_least(1), help="parallel workers (default: number of CPUs)")
    p.add_argument("--seed", type=_int_at_least(0), help="root seed (preset: 0)")
    p.add_argument("--backend", choices=("local", "ray"), help="local processes (default) or Ray tasks")
    p.add_argument(
        "--address",
        metavar="ADDR",
        help="Ray cluster address, e.g. ray://HEAD:10001 (implies --backend ray); default: a local Ray instance",
    )
    p.add_argument("--force", action="store_true", help="replace finished runs of another configuration found in --out")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    _add_limits(p)
    p.set_defaults(func=_cmd_reproduce)

    p = sub.add_parser(
        "compare",
        help="the online learners on one problem: runs, regret and violation table, figures",
        formatter_class=_Help,
        description="Run every learner of --algos for --runs runs of --episodes episodes on PROBLEM, scoring "
        "each episode's policy exactly, then write results.csv (problem, algorithm, run, episodes, samples, "
        "value_gap, violation, cum_value_gap, cum_violation, cum_abs_value_gap, violating_episodes, "
        "baseline_episodes), timings.csv, summary.md, config.toml and figures into --out. Resumable like "
        "reproduce; same seed, same results.csv bytes. --preset dope is the DOPE paper's media-control setting.",
    )
    p.add_argument("problem", nargs="?", help="a registered problem (cmdp-rl envs), e.g. media-control")
    p.add_argument(
        "--algos",
        type=_algo_list,
        metavar="A,B,...",
        help=f"comma-separated learners (default: all of {', '.join(ONLINE_ALGORITHMS)})",
    )
    p.add_argument("--episodes", type=_int_at_least(1), metavar="K", help="episodes per run (default 2000)")
    p.add_argument("--runs", type=_int_at_least(1), help="runs per algorithm (default 5)")
    p.add_argument("--out", metavar="DIR", required=True, help="output folder")
    p.add_argument("--jobs", type=_int_at_least(1), help="parallel workers (default: number of CPUs)")
    p.add_argument("--seed", type=_int_at_least(0), help="root seed (default 0)")
    p.add_argument("--delta", type=_open_unit, help="failure probability of every learner (default 0.1)")
    p.add_argument("--bonus-scale", type=_nonnegative, metavar="X", help="factor on the baselines' bonuses (default 1)")
    p.add_argument(
        "--checkpoints", type=_int_at_least(1), help="log-spaced and evenly spaced recorded episodes (default 25 each)"
    )
    p.add_argument(
        "--preset",
        choices=("dope",),
        help="dope: media-control, DOPE/OptPess-LP/OptCMDP/Online-CRL, 20,000 episodes, 5 runs, delta 0.01",
    )
    p.add_argument("--quick", action="store_true", help="smoke size: 200 episodes, 2 runs (seconds)")
    p.add_argument("--backend", choices=("local", "ray"), help="local processes (default) or Ray tasks")
    p.add_argument(
        "--address",
        metavar="ADDR",
        help="Ray cluster address, e.g. ray://HEAD:10001 (implies --backend ray); default: a local Ray instance",
    )
    p.add_argument("--force", action="store_true", help="replace finished runs of another configuration found in --out")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    _add_limits(p)
    p.set_defaults(func=_cmd_compare)

    p = sub.add_parser(
        "study",
        help="studies beyond the paper: n-constraints (samples against the number of constraints)",
        formatter_class=_Help,
        description="n-constraints: both learners, both radii, on the copies and distinct families for N in "
        "1..64; samples needed until eps-good for good, fits a + b log N and a + b N, figures and summary.md "
        "in --out. Resumable like reproduce (rerun the same command); --force replaces runs of other settings.",
    )
    p.add_argument("name", choices=("n-constraints",), help="which study")
    p.add_argument("--quick", action="store_true", help="N in {1, 4, 16}, 2 runs, small budgets (under 3 minutes)")
    p.add_argument("--runs", type=_int_at_least(1), help="runs per cell (default 10; quick 2)")
    p.add_argument("--out", metavar="DIR", help="output folder (default results/n-constraints[-quick])")
    p.add_argument("--jobs", type=_int_at_least(1), help="parallel workers (default: number of CPUs)")
    p.add_argument("--seed", type=_int_at_least(0), help="root seed (default 0)")
    p.add_argument("--backend", choices=("local", "ray"), help="local processes (default) or Ray tasks")
    p.add_argument("--address", metavar="ADDR", help="Ray cluster address (implies --backend ray)")
    p.add_argument("--force", action="store_true", help="replace finished runs of other settings found in --out")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    _add_limits(p)
    p.set_defaults(func=_cmd_study)
    return parser


def _traceback_file(exc: BaseException) -> Path:
    """Write the full traceback of ``exc`` to a file in the temporary folder; return its path."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    fd, name = tempfile.mkstemp(prefix=f"cmdp-rl-traceback-{stamp}-", suffix=".txt")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(f"cmdp-rl {__version__}, Python {sys.version.split()[0]}\n")
        fh.write("argv: " + " ".join(sys.argv) + "\n\n")
        fh.write("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
    return Path(name)


@contextmanager
def _signals_as_exceptions() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` in the main thread (so cleanup runs); restored afterwards."""

    def on_term(signum: int, frame: FrameType | None) -> None:
        raise Terminated()

    try:
        previous = signal.signal(signal.SIGTERM, on_term)
    except ValueError:  # not the main thread (e.g. called from a test's worker thread)
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _one_line_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    print(f"cmdp-rl: warning: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``cmdp-rl`` console script; returns the exit code (see the module docstring)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # usage errors (2), --help and --version (0)
        return exc.code if isinstance(exc.code, int) else EXIT_BAD_INPUT
    func: Callable[[argparse.Namespace], int] = args.func
    name = f"cmdp-rl {args.command}"
    old_showwarning = warnings.showwarning
    warnings.showwarning = _one_line_warning
    try:
        with _signals_as_exceptions():
            return func(args)
    except CMDPInputError as exc:
        print(f"{name}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError, FileExistsError) as exc:
        # a path the user gave cannot be read or written (checked up front where possible)
        where = f" {exc.filename}" if exc.filename else ""
        print(f"{name}: error: cannot use{where}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # the reader went away (e.g. `| head`): silence the final flush of stdout
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_BROKEN_PIPE
    except Terminated:
        print(f"{name}: terminated", file=sys.stderr)
        return EXIT_SIGTERM
    except KeyboardInterrupt:
        print(f"{name}: interrupted", file=sys.stderr)
        return EXIT_SIGINT
    except Exception as exc:
        kind = "solver error" if isinstance(exc, SolverError) else f"internal error: {type(exc).__name__}"
        if args.debug:
            traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
            print(f"{name}: {kind}: {exc}", file=sys.stderr)
            return EXIT_INTERNAL
        try:
            where = f"full traceback in {_traceback_file(exc)}"
        except OSError:
            where = "rerun with --debug for the traceback"
        msg = " ".join(str(exc).split())
        print(f"{name}: {kind}: {msg} ({where}; please report it)", file=sys.stderr)
        return EXIT_INTERNAL
    finally:
        warnings.showwarning = old_showwarning


if __name__ == "__main__":
    sys.exit(main())
