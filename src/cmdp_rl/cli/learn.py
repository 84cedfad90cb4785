"""``cmdp-rl learn``: a learner on a model's kernel (budget or theory mode), on logged episodes
(``--from-log``) or on a simulator (``--env``, [`cmdp_rl.cli.simulator`][cmdp_rl.cli.simulator]); ``--safe`` returns
the best policy certified safe from the data."""

from __future__ import annotations

import argparse
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from cmdp_rl.cli.common import (
    announce_long,
    certificate_json,
    check_distinct_paths,
    check_output_file,
    fmt,
    load_model,
    note_compilation,
    print_certificate,
    refuse_given,
    resource_limits,
    save_counts,
    save_npy,
)
from cmdp_rl.cli.exit_codes import EXIT_INFEASIBLE, EXIT_OK
from cmdp_rl.plumbing.limits import (
    Estimate,
    check_estimate,
    check_samples_per_pair,
    elp_estimate,
    exact_estimate,
    learn_estimate,
    passes,
)
from cmdp_rl.plumbing.paths import check_input_path
from cmdp_rl.plumbing.validation import CMDPInputError

#: the learners that plan from counts (``--from-log``): the paper's two
LOG_LEARNERS = ("gmbl", "online-crl")


def _safe_plan(model: Any, counts: np.ndarray, delta: float, sampling: str, method: str) -> Any:
    """[`solve_safe`][cmdp_rl.certificates.safe.solve_safe] on ``counts`` with the model's known parts; its
    candidates' LPs by ``method`` (the other method when the solver fails on one)."""
    from cmdp_rl.certificates.safe import solve_safe

    if model.N == 0:
        raise CMDPInputError("--safe: the model has no constraint to certify")
    s0, H = model.episodic("learn --safe")
    return solve_safe(counts, model.r, model.c, model.c_bar, s0, H, delta=delta, sampling=sampling, method=method)


def _check_from_log(args: argparse.Namespace, model: Any) -> None:
    """Refuse every option ``--from-log`` would ignore, naming it; check its resource limits
    (one plan on the logged counts: the learner's extended LP, or the certified-safe planner's
    candidate LPs)."""
    refuse_given(
        args, ("samples_per_pair", "episodes", "eps", "max_episodes"), "no budget with --from-log (the log is the data)"
    )
    refuse_given(args, ("seed",), "--from-log draws no random numbers (the log is the data)")
    refuse_given(
        args, ("bonus_scale", "k0"), "applies to the baselines (plugin, optcmdp, ...), which do not plan from a log"
    )
    if args.safe:
        refuse_given(
            args,
            ("algorithm", "radius"),
            "--from-log --safe runs no learner: the certified-safe planner plans on the log "
            "(with cmdp-rl certify's empirical Bernstein radius); drop the option",
        )
    elif args.algorithm not in LOG_LEARNERS:
        raise CMDPInputError(
            f"--algorithm: {args.algorithm} learns from the episodes it plays; with --from-log use gmbl or online-crl"
        )
    S, A, N = model.S, model.A, model.N
    H = model.horizon("learn --from-log")
    if args.safe:  # about 20 bisection steps and 2 more candidates, each an exact LP on p_hat
        one = exact_estimate(S, A, H, N, float(S) * A * S, args.method)
        est = Estimate(one.bytes + 8.0 * 4 * S * A * S, 22 * one.seconds)
    else:
        est = elp_estimate(S, A, H, N, args.method)
    check_estimate(est, "from-log", *resource_limits(args))


def _cmd_learn_from_log(args: argparse.Namespace, model: Any, policy_out: Path | None) -> int:
    """``learn MODEL --from-log FILE``: plan on the logged counts only, then certify the plan."""
    from cmdp_rl.certificates.certify import certify
    from cmdp_rl.learners import OnlineCRL, OptimisticGMBL
    from cmdp_rl.model.transition_logs import read_log

    counts = read_log(args.from_log, model.S, model.A, model.horizon("learn --from-log"))
    algorithm = "safe" if args.safe else args.algorithm  # the planner that actually ran
    out: dict[str, Any] = {
        "algorithm": algorithm,
        "method": args.method,
        "from_log": str(args.from_log),
        "delta": args.delta,
    }
    out["samples"] = int(counts.sum())
    if args.safe:
        plan = _safe_plan(model, counts, args.delta, "adaptive", args.method)
        policy, cert, status = plan.policy, plan.certificate, plan.status
        out.update(method=plan.method, safe_method=plan.method, skipped_candidates=plan.skipped)
        if plan.samples_per_pair is not None:
            out["samples_per_pair_needed"] = plan.samples_per_pair
    else:
        out["radius"] = args.radius
        if args.algorithm == "gmbl":
            n_min = int(counts.sum(-1).min())
            gmbl = OptimisticGMBL(
                model, args.delta, samples_per_pair=max(n_min, 1), radius=args.radius, method=args.method
            )
            plan_res = gmbl.plan(counts, n_min, None).plan
        else:
            episodes = max(1, -(-int(counts.sum()) // model.horizon("learn --from-log")))
            crl = OnlineCRL(model, args.delta, episodes=episodes, radius=args.radius, method=args.method)
            plan_res = crl.replan(counts, None)
        policy, status = plan_res.policy, plan_res.status
        s0, H = model.episodic("learn --from-log")
        cert = certify(policy, counts, model.r, model.c, model.c_bar, s0, H, delta=args.delta)
    out.update(elp_status=status, certificate=certificate_json(cert))
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
        how = f"certified-safe planning, {out['method']}" if args.safe else f"{args.algorithm} ELP, {args.method}"
        print(f"plan        {status} ({how})")
        if not args.safe:
            print(f"learner     delta {args.delta:g}, radius {args.radius} (the plan's confidence set)")
        print_certificate(cert, model)
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
    from cmdp_rl.evaluation.evaluate import evaluate
    from cmdp_rl.learners import (
        EpisodicEnv,
        GenerativeModel,
        OnlineCRL,
        OnlineCRLResult,
        OptimisticGMBL,
        Scorer,
        make_learner,
    )

    if args.env is not None:
        from cmdp_rl.cli.simulator import cmd_learn_env

        return cmd_learn_env(args)
    env_only = ("env_kwargs", "horizon", "c_bar", "cost_key", "reward_range", "step_timeout", "run_log")
    for opt in (*env_only, "baseline", "baseline_costs", "figure"):
        if getattr(args, opt) is not None:
            raise CMDPInputError(f"--{opt.replace('_', '-')}: applies to --env (learning from a simulator) only")
    if args.model is None:
        raise CMDPInputError("model: give a MODEL (a .npz file or a registered problem) or --env ID")
    # 1. every argument and file, before any solve, sample or write
    if args.policy_out is None and args.counts_out is None:
        refuse_given(args, ("force",), "no output file to replace (it applies to --policy-out and --counts-out)")
    model_file = args.model if os.path.isfile(args.model) else None
    check_distinct_paths(
        [("--policy-out", args.policy_out), ("--counts-out", args.counts_out)],
        [("MODEL", model_file), ("--from-log", args.from_log)],
    )
    model = load_model(args.model, args)
    policy_out = None if args.policy_out is None else check_output_file(args.policy_out, args.force, "policy-out")
    counts_out = None if args.counts_out is None else check_output_file(args.counts_out, args.force, "counts-out")
    budget = {"samples_per_pair": args.samples_per_pair, "episodes": args.episodes, "eps": args.eps}
    budgets = [k for k, v in budget.items() if v is not None]
    if args.from_log is not None:
        _check_from_log(args, model)
        check_input_path(args.from_log, f"from-log: {args.from_log}", "a CSV or Parquet file")
        return _cmd_learn_from_log(args, model, policy_out)
    if len(budgets) != 1:
        raise CMDPInputError("--samples-per-pair/--episodes/--eps: give exactly one budget")
    if args.algorithm == "gmbl" and args.episodes is not None:
        raise CMDPInputError("--episodes: applies to --algo online-crl; use --samples-per-pair for gmbl")
    baseline_algo = args.algorithm not in LOG_LEARNERS
    if args.algorithm != "gmbl" and args.samples_per_pair is not None:
        raise CMDPInputError(f"--samples-per-pair: applies to --algo gmbl; use --episodes for {args.algorithm}")
    if baseline_algo:
        if args.eps is not None:
            raise CMDPInputError(f"--eps: theory mode is Online-CRL's and GMBL's; give --episodes for {args.algorithm}")
        refuse_given(args, ("radius",), f"applies to gmbl and online-crl, not to {args.algorithm}")
        if not args.safe:
            refuse_given(
                args, ("method",), f"applies to gmbl and online-crl (and to --safe's planner), not to {args.algorithm}"
            )
    else:
        for opt in ("bonus_scale", "k0"):
            if getattr(args, opt) is not None:
                raise CMDPInputError(
                    f"--{opt.replace('_', '-')}: applies to the baselines (plugin, optcmdp, ...), "
                    f"not to {args.algorithm}"
                )
    if args.k0 is not None and args.algorithm != "dope":
        raise CMDPInputError("--k0: applies to --algo dope only")
    if args.max_episodes is not None and not (args.algorithm == "online-crl" and args.eps is not None):
        raise CMDPInputError("--max-episodes: applies to --algo online-crl with --eps (theory mode)")
    if args.safe and model.N == 0:
        raise CMDPInputError("--safe: the model has no constraint to certify")
    nnz = model.nnz / (model.S * model.A)
    if args.algorithm == "gmbl":
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
        check_estimate(est, "samples-per-pair" if args.eps is None else "eps", *resource_limits(args))
        announce_long("learn", f"{gmbl.n:,} samples per pair", est.seconds, "Ctrl-C stops it")
    else:
        if baseline_algo:
            options = {} if args.k0 is None else {"k0": args.k0}
            bonus = 1.0 if args.bonus_scale is None else args.bonus_scale
            crl = make_learner(args.algorithm, model, args.delta, episodes=args.episodes, bonus_scale=bonus, **options)
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
        check_estimate(est, "episodes" if args.eps is None else "max-episodes", *resource_limits(args))
        announce_long("learn", f"{_budget(crl):,} episodes", est.seconds, "a progress bar follows; Ctrl-C stops it")
    # 2. work
    note_compilation()
    scorer = Scorer.for_model(model)
    rng = np.random.default_rng(np.random.SeedSequence(args.seed).spawn(1)[0])
    out: dict[str, Any] = {
        "algorithm": args.algorithm,
        "method": None if baseline_algo else args.method,  # the baselines have no extended-LP method
        "seed": args.seed,
        "delta": args.delta,
        "radius": None if baseline_algo else args.radius,
        "v_star": scorer.v_star,
    }
    if args.algorithm == "gmbl":
        res = gmbl.fit(GenerativeModel(model, rng), scorer)
        policy, samples, status, counts = res.policy, res.samples, res.plan.status, res.counts
        out.update(samples_per_pair=res.n_per_pair, optimistic_value=res.plan.value)
    else:
        run = crl.fit(EpisodicEnv(model, rng), scorer, progress=not args.json)
        policy, samples, counts = run.policy, int(run.samples[-1]), run.counts
        status = run.status  # the record's own: "optimal", "infeasible" or "baseline"
        out.update(
            episodes=run.episodes,
            infeasible_episodes=int(np.sum(run.episode_status == "infeasible")),
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
        sampling = "fixed" if args.algorithm == "gmbl" else "adaptive"
        safe_plan = _safe_plan(model, counts, args.delta, sampling, args.method)
        out["certificate"] = certificate_json(safe_plan.certificate)
        out.update(safe_status=safe_plan.status, safe_method=safe_plan.method, skipped_candidates=safe_plan.skipped)
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
            if args.algorithm in ("gmbl", "online-crl")
            else f"bonus_scale {out['settings']['bonus_scale']:g}"
        )
        print(f"algorithm   {args.algorithm} (seed {args.seed}, delta {args.delta}, {detail})")
        print(f"samples     {samples:,}")
        if "episodes" in out:
            print(
                f"episodes    {out['episodes']:,}  "
                f"(infeasible {'ELPs' if args.algorithm == 'online-crl' else 'plans'}: "
                f"{out['infeasible_episodes']}, "
                f"eps-bad episodes at eps=0.1: {out['bad_episodes']['0.1']})"
            )
            print(
                f"regret      {out['cum_value_gap']:.6g}  (sum of V* - V^pi_k; cumulative violation "
                f"{out['cum_violation']:.6g}, violating episodes {out['violating_episodes']}, "
                f"baseline episodes {out['baseline_episodes']})"
            )
        planned = out["optimistic_value"]
        planned_text = "none (no finite planned value)" if planned is None else f"{planned:.6f}"
        if args.algorithm in ("gmbl", "online-crl"):
            print(f"ELP         {status}, optimistic value {planned_text}")
        elif status == "baseline":
            print("plan        baseline (the last episode played the safe baseline policy)")
        else:
            print(f"plan        {status}, planned value {planned_text}")
        if safe_plan is not None:
            print("safe plan   " + ("certified safe" if safe_plan.safe else "none: no policy certified safe"))
            print_certificate(safe_plan.certificate, model)
            if not safe_plan.safe and safe_plan.samples_per_pair:
                print(f"need        about {safe_plan.samples_per_pair:,} samples per pair (calculator estimate)")
        if policy is not None:
            print(f"value       {out['value']:.6f}   (optimum V* = {scorer.v_star:.6f}, gap {out['value_gap']:+.6f})")
            print(
                f"costs       {fmt(np.asarray(out['costs']))}  (thresholds {fmt(model.c_bar)}, "
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
