"""``cmdp-rl learn``: a learner on a model's kernel (budget or theory mode), on logged episodes
(``--from-log``, [`cmdp_rl.cli.learn_log`][cmdp_rl.cli.learn_log]) or on a simulator (``--env``,
[`cmdp_rl.cli.simulator`][cmdp_rl.cli.simulator]); ``--deploy certified`` returns the best policy
certified safe from the data (``--safe``: its deprecated alias)."""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path
from typing import Any

from cmdp_rl.cli.exit_codes import EXIT_INFEASIBLE, EXIT_OK
from cmdp_rl.cli.learn_common import (
    LOG_LEARNERS,
    add_deploy,
    add_play,
    add_ranges,
    baseline_options,
    certified_verdict,
    check_safe,
    not_certified_note,
    resolve_deploy,
    safe_plan,
)
from cmdp_rl.cli.learn_report import print_report
from cmdp_rl.cli.options import (
    DELTA_HELP,
    MODEL_HELP,
    add_bonus_scale,
    add_c_bar,
    add_delta,
    add_env_kwargs,
    add_episodes,
    add_eps,
    add_force,
    add_horizon,
    add_json,
    add_limits,
    add_method,
    add_model,
    add_policy_out,
    add_radius,
    add_seed,
    add_table_fill,
    int_at_least,
    output_name,
    seconds,
)
from cmdp_rl.plumbing.errors import CMDPInputError
from cmdp_rl.plumbing.names import ONLINE_ALGORITHMS

NAME = "learn"
HELP = "learn a CMDP with Optimistic-GMBL, Online-CRL or a baseline of the arena"
DESCRIPTION = (
    "Learn a policy from samples of MODEL's kernel (the learner knows r, c, c_bar, "
    "s0, H) and score it exactly against the optimum. Give exactly one budget: "
    "--samples-per-pair (gmbl), --episodes (online learners) or --eps (theory mode).\n\n"
    "Or learn from a simulator: --env ID (a Gymnasium id; the library's own problems are "
    "cmdp_rl/<name>-v0; module:NAME imports module from the working directory, NAME an environment class, "
    "a callable returning one, or an id the module registers) with --horizon, --c-bar and --episodes, "
    "instead of MODEL: the learner only resets and steps it, and estimates the start distribution, rewards "
    "and costs "
    "(docs/simulators.md)."
)
#: the options of ``--env`` alone (learning from a simulator)
ENV_ONLY = (
    "env_kwargs",
    "horizon",
    "c_bar",
    "cost_key",
    "reward_range",
    "cost_range",
    "step_timeout",
    "run_log",
    "baseline",
    "baseline_costs",
    "figure",
)


def _add_env_options(p: argparse.ArgumentParser) -> None:
    """The options of ``--env`` (learning from a simulator)."""
    p.add_argument(
        "--env",
        metavar="ID",
        help="learn from this Gymnasium environment (a black box) instead of MODEL: a Gymnasium id, or "
        "module:NAME (module imported from the working directory; NAME a class or callable in it, or an id "
        "it registers) (default: MODEL)",
    )
    add_env_kwargs(p, "--env: keywords of gymnasium.make, a JSON object (default: none)")
    add_horizon(p, "--env, or MODEL a table or checker file: steps per episode (required with either)", metavar="H")
    add_c_bar(
        p,
        "--env, or MODEL a table or checker file: bounds on the expected sums of the H step costs, one per "
        "constraint (required with --env, and with a table or checker file that has costs)",
        "X[/Y...]",
    )
    add_table_fill(p, ("s0",))
    p.add_argument("--cost-key", metavar="K", help="--env: the info key of the step costs (default: cost, then costs)")
    add_ranges(p)
    p.add_argument(
        "--step-timeout",
        type=seconds,
        metavar="S",
        help="--env: seconds allowed per reset or step call (default: no limit)",
    )
    p.add_argument(
        "--run-log",
        type=output_name,
        metavar="FILE.jsonl",
        help="--env: append every episode to FILE (JSON lines); a rerun with the same arguments resumes "
        "(default: no log, no resume)",
    )
    p.add_argument(
        "--baseline",
        metavar="POLICY.npy|POLICY.npz",
        help="--env, the safe learners: a known safe policy, POLICY.npy its (H, S, A) table or POLICY.npz a compact "
        "mixture of deterministic policies (what solve --policy-out writes; its baseline episodes draw one column "
        "with its weight; default: none; those learners need one with --env)",
    )
    p.add_argument(
        "--baseline-costs",
        metavar="X[/Y...]",
        help="--env, the safe learners: that policy's expected costs (required with --baseline)",
    )
    p.add_argument(
        "--figure",
        type=output_name,
        metavar="FILE.png",
        help="--env: plot the running means of the realized return and costs per episode (thresholds drawn; "
        "default: no figure)",
    )


def _add_learner_options(p: argparse.ArgumentParser) -> None:
    """The learner, its budget and its settings."""
    p.add_argument(
        "--algorithm",
        "--algo",
        choices=("gmbl", *ONLINE_ALGORITHMS),
        default="online-crl",
        help="Optimistic-GMBL (generative model, Algorithm 1), Online-CRL (episodes, Algorithm 2) or a "
        "baseline: plugin, optcmdp, optcmdp-bonus, optdual, optpess, dope (docs/baselines.md), or safe-crl "
        "(no violating episode: docs/which-learner.md)",
    )
    p.add_argument(
        "--samples-per-pair",
        type=int_at_least(1, 2**53, "2**53"),
        metavar="N",
        help="budget mode for gmbl: N samples of every (s, a) pair (at most 2^53); one budget is required",
    )
    add_episodes(p, "budget mode for the online learners: K episodes of H steps each; one budget is required")
    add_bonus_scale(
        p,
        "baselines: factor on the reward and cost bonuses, never on a confidence radius "
        "(default 1 = the papers' constants)",
    )
    p.add_argument(
        "--k0",
        type=int_at_least(0),
        metavar="K0",
        help="dope: episodes of the safe-baseline phase (default ceil(S^2 A H^3 / gamma^2))",
    )
    add_eps(p, "theory mode: accuracy in (0, 1); sample sizes from the paper's theorems; one budget is required")
    p.add_argument(
        "--max-episodes",
        type=int_at_least(1),
        metavar="K",
        help="cap on episodes in online-crl theory mode (required there)",
    )
    add_delta(p, DELTA_HELP, default=0.1)
    add_seed(p, "root seed (integer >= 0)", default=0)
    add_method(p, "extended-LP method: fast (column generation) or lp (the literal LP)")


def add_options(p: argparse.ArgumentParser) -> None:
    """``learn``'s arguments."""
    add_model(p, f"{MODEL_HELP}: the true CMDP", optional=True)
    _add_env_options(p)
    _add_learner_options(p)
    add_policy_out(
        p,
        "save the learned policy (written atomically): FILE.npy its (H, S, A) float64 Markov table, FILE.npz the "
        "compact mixture of deterministic policies (columns, weights; the learner then plays its plans' columns, "
        "--play mixture; default: not saved)",
        "FILE.npz|FILE.npy",
    )
    p.add_argument(
        "--counts-out",
        type=output_name,
        metavar="FILE",
        help="save the transition counts for cmdp-rl certify: FILE.npz as an (S*A, S) sparse matrix "
        "(scipy.sparse.save_npz), another name as an (S, A, S) int64 .npy array; with --env among the "
        "environment's states (steps into the absorbing state, i.e. terminations, are left out; default: not saved)",
    )
    add_radius(p, "the learner's confidence radius: the paper's Lemma 1 or a valid empirical Bernstein bound", "paper")
    add_deploy(p)
    add_play(p)
    p.add_argument(
        "--from-log",
        metavar="FILE",
        help="plan on logged episodes only (CSV/Parquet: episode, step, state, action, next_state; no "
        "environment, no budget): writes the policy and prints its certificate (default: learn from MODEL or --env)",
    )
    add_force(p, "overwrite an existing --policy-out/--counts-out file")
    add_json(p)
    add_limits(p)


def run(args: argparse.Namespace) -> int:
    """Run ``cmdp-rl learn`` (see its ``--help``): every argument and file is checked before any
    solve, sample or write; ``--env`` and ``--from-log`` go to their modules."""
    from cmdp_rl.cli.common import check_distinct_paths, check_output_file, load_model, refuse_given
    from cmdp_rl.cli.policy_io import learned_play, policy_out_file

    resolve_deploy(args, "certified" if args.env is not None else "last")
    if args.env is not None:
        from cmdp_rl.cli.simulator import cmd_learn_env

        return cmd_learn_env(args)
    for opt in ENV_ONLY:
        if opt in ("horizon", "c_bar") and args.model is not None:
            continue  # a transition table's, refused by load_model for a model that carries them
        if getattr(args, opt) is not None:
            raise CMDPInputError(f"--{opt.replace('_', '-')}: applies to --env (learning from a simulator) only")
    if args.model is None:
        raise CMDPInputError("model: give a MODEL (a .npz file or a registered problem) or --env ID")
    if args.policy_out is None and args.counts_out is None:
        refuse_given(args, ("force",), "no output file to replace (it applies to --policy-out and --counts-out)")
    model_file = args.model if os.path.isfile(args.model) else None
    check_distinct_paths(
        [("--policy-out", args.policy_out), ("--counts-out", args.counts_out)],
        [("MODEL", model_file), ("--from-log", args.from_log)],
    )
    args.play = learned_play(args)
    model = load_model(args.model, args)
    policy_out = None if args.policy_out is None else policy_out_file(args)
    counts_out = None if args.counts_out is None else check_output_file(args.counts_out, args.force, "counts-out")
    if args.from_log is not None:
        from cmdp_rl.cli.learn_log import run_from_log

        return run_from_log(args, model, policy_out)
    _check_budget(args, model)
    learner = _learner(args, model)
    return _learn(args, model, learner, policy_out, counts_out)


def _check_budget(args: argparse.Namespace, model: Any) -> None:
    """Learning from the model's kernel: exactly one budget, and only the options of the learner."""
    from cmdp_rl.cli.common import refuse_given

    budget = {"samples_per_pair": args.samples_per_pair, "episodes": args.episodes, "eps": args.eps}
    if len([k for k, v in budget.items() if v is not None]) != 1:
        raise CMDPInputError("--samples-per-pair/--episodes/--eps: give exactly one budget")
    if args.algorithm == "gmbl" and args.episodes is not None:
        raise CMDPInputError("--episodes: applies to --algo online-crl; use --samples-per-pair for gmbl")
    if args.algorithm != "gmbl" and args.samples_per_pair is not None:
        raise CMDPInputError(f"--samples-per-pair: applies to --algo gmbl; use --episodes for {args.algorithm}")
    if args.algorithm not in LOG_LEARNERS:
        if args.eps is not None:
            raise CMDPInputError(f"--eps: theory mode is Online-CRL's and GMBL's; give --episodes for {args.algorithm}")
        refuse_given(args, ("radius",), f"applies to gmbl and online-crl, not to {args.algorithm}")
        if args.deploy != "certified":
            refuse_given(
                args,
                ("method",),
                f"applies to gmbl and online-crl (and to --deploy certified's planner), not to {args.algorithm}",
            )
    baseline_options(args, ("bonus_scale", "k0"))
    if args.max_episodes is not None and not (args.algorithm == "online-crl" and args.eps is not None):
        raise CMDPInputError("--max-episodes: applies to --algo online-crl with --eps (theory mode)")
    check_safe(args, model)


def _learner(args: argparse.Namespace, model: Any) -> Any:
    """The learner of ``--algorithm`` on the model, its budget checked against the resource limits
    (and announced when it is long)."""
    from cmdp_rl.cli.common import announce_long, resource_limits
    from cmdp_rl.learners import OnlineCRL, OptimisticGMBL, make_learner
    from cmdp_rl.plumbing.limits import check_estimate, check_samples_per_pair, learn_estimate, passes

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
        driver = "samples-per-pair" if args.eps is None else "eps"
        check_samples_per_pair(gmbl.n, driver)
        est = learn_estimate(
            model.S, model.A, passes(model), model.N, samples_per_pair=gmbl.n, method=args.method, nnz_per_row=nnz
        )
        check_estimate(est, driver, *resource_limits(args))
        announce_long(NAME, f"{gmbl.n:,} samples per pair", est.seconds, "Ctrl-C stops it")
        return gmbl
    if args.algorithm not in LOG_LEARNERS:
        options = {} if args.k0 is None else {"k0": args.k0}
        bonus = 1.0 if args.bonus_scale is None else args.bonus_scale
        crl = make_learner(
            args.algorithm,
            model,
            args.delta,
            episodes=args.episodes,
            bonus_scale=bonus,
            play=args.play,
            max_memory=resource_limits(args)[0],
            **options,
        )
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
        crl.configure_play(args.play, resource_limits(args)[0])
    est = learn_estimate(
        model.S, model.A, passes(model), model.N, episodes=_budget(crl), method=args.method, nnz_per_row=nnz
    )
    check_estimate(est, "episodes" if args.eps is None else "max-episodes", *resource_limits(args))
    announce_long(NAME, f"{_budget(crl):,} episodes", est.seconds, "a progress bar follows; Ctrl-C stops it")
    return crl


def _fit(
    args: argparse.Namespace, model: Any, learner: Any, scorer: Any, out: dict[str, Any]
) -> tuple[Any, int, str, Any]:
    """Run the learner on samples of the model's kernel, each policy scored by ``scorer``;
    ``(policy, samples, status, counts)``, its record's numbers added to ``out``."""
    import numpy as np

    from cmdp_rl.evaluation.mixture import MixturePolicy
    from cmdp_rl.learners import EpisodicEnv, GenerativeModel, OnlineCRLResult

    rng = np.random.default_rng(np.random.SeedSequence(args.seed).spawn(1)[0])
    if args.algorithm == "gmbl":
        res = learner.fit(GenerativeModel(model, rng), scorer)
        out.update(samples_per_pair=res.n_per_pair, optimistic_value=res.plan.value)
        compact = args.play == "mixture" and res.plan.columns is not None  # FILE.npz: the plan's columns
        return MixturePolicy.of_plan(res.plan) if compact else res.policy, res.samples, res.plan.status, res.counts
    run = learner.fit(EpisodicEnv(model, rng), scorer, progress=not args.json)
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
    if run.mixture is not None:  # a mixed policy (safe-crl): its weights; the value below is its expectation
        out["mixture_weights"] = [float(w) for w in run.mixture[1]]
        out["last_value"], out["last_costs"] = float(run.value[-1]), [float(v) for v in run.costs[-1]]
    # the record's own status: "optimal", "infeasible" or "baseline"
    return run.policy, int(run.samples[-1]), run.status, run.counts


def _learn(args: argparse.Namespace, model: Any, learner: Any, policy_out: Path | None, counts_out: Path | None) -> int:
    """Learn, score the policy exactly (``--safe``: the best policy certified safe), write the
    outputs, report; exit 1 when ``--safe`` certifies no policy."""
    import json

    import numpy as np

    from cmdp_rl.cli.common import certificate_json, note_compilation, save_counts
    from cmdp_rl.cli.policy_io import write_learned_policy
    from cmdp_rl.evaluation.evaluate import evaluate
    from cmdp_rl.evaluation.mixture import MixturePolicy
    from cmdp_rl.learners import Scorer

    baseline_algo = args.algorithm not in LOG_LEARNERS
    note_compilation()
    scorer = Scorer.for_model(model)
    out: dict[str, Any] = {
        "algorithm": args.algorithm,
        "method": None if baseline_algo else args.method,  # the baselines have no extended-LP method
        "seed": args.seed,
        "delta": args.delta,
        "radius": None if baseline_algo else args.radius,
        "v_star": scorer.v_star,
    }
    policy, samples, status, counts = _fit(args, model, learner, scorer, out)
    sampling = "fixed" if args.algorithm == "gmbl" else "adaptive"
    safe = None
    out.update(deploy=args.deploy, deploy_delta=args.deploy_delta)
    if args.deploy == "certified":
        compact = args.play == "mixture" or bool(getattr(learner, "plays_mixtures", False))
        safe = safe_plan(model, counts, args.deploy_delta, sampling, args.method, compact)
        out["certificate"] = certificate_json(safe.certificate)
        out.update(safe_status=safe.status, safe_method=safe.method, skipped_candidates=safe.skipped)
        if safe.samples_per_pair is not None:
            out["samples_per_pair_needed"] = safe.samples_per_pair
        policy = safe.policy
        if policy is None and getattr(learner, "baseline", None) is not None:  # the learner's safe baseline
            policy = learner.baseline if isinstance(learner.baseline, MixturePolicy) else np.array(learner.baseline)
            out["safe_status"] = "baseline"
    certified = certified_verdict(args, model, policy, counts, sampling, safe, out)
    out.update(samples=samples, elp_status=status)
    if policy is not None:
        ev = evaluate(model, policy)
        value, costs = ev.value, ev.costs
        last = (out.pop("last_value", None), out.pop("last_costs", None))
        if safe is None and last[0] is not None:  # the last episode's mixed policy: its expectation
            value, costs = float(last[0]), np.asarray(last[1])
        gap = scorer.v_star - value
        viol = float(max(np.max(costs - model.c_bar, initial=0.0), 0.0))
        out.update(value=value, costs=[float(v) for v in costs], value_gap=gap, violation=viol)
        if policy_out is not None:
            write_learned_policy(policy_out, policy)
            out["policy_out"] = str(policy_out)
    if counts_out is not None:
        save_counts(counts_out, counts, model.S, model.A)
        out["counts_out"] = str(counts_out)
    if args.json:
        print(json.dumps(out))
    else:
        print_report(args, model, out, status, safe, policy, policy_out, counts_out)
    if policy is not None and not certified:
        not_certified_note(args.deploy)
    return EXIT_INFEASIBLE if safe is not None and policy is None else EXIT_OK


def _finite_or_none(x: Any) -> float | None:
    """``x`` as a float, or ``None`` (JSON ``null``) when it is not finite (a baseline episode has
    no planned value)."""
    v = float(x)
    return v if math.isfinite(v) else None


def _budget(learner: Any) -> int:
    """The episode budget of an online learner (Online-CRL's ``max_episodes``, else ``episodes``)."""
    return int(getattr(learner, "max_episodes", None) or learner.episodes)


__all__ = ["DESCRIPTION", "ENV_ONLY", "HELP", "NAME", "add_options", "run"]
