"""``cmdp-rl learn MODEL --from-log FILE``: plan on logged episodes only, then certify the plan
(no environment, no budget, no random numbers)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from cmdp_rl.cli.exit_codes import EXIT_INFEASIBLE, EXIT_OK
from cmdp_rl.cli.learn_common import LOG_LEARNERS, check_safe, safe_plan
from cmdp_rl.plumbing.errors import CMDPInputError


def _check_from_log(args: argparse.Namespace, model: Any) -> None:
    """Refuse every option ``--from-log`` would ignore, naming it; check its resource limits
    (one plan on the logged counts: the learner's extended LP, or the certified-safe planner's
    candidate LPs)."""
    from cmdp_rl.cli.common import refuse_given, resource_limits
    from cmdp_rl.plumbing.limits import Estimate, check_estimate, elp_estimate, exact_estimate

    refuse_given(
        args, ("samples_per_pair", "episodes", "eps", "max_episodes"), "no budget with --from-log (the log is the data)"
    )
    refuse_given(args, ("seed",), "--from-log draws no random numbers (the log is the data)")
    refuse_given(
        args, ("bonus_scale", "k0"), "applies to the baselines (plugin, optcmdp, ...), which do not plan from a log"
    )
    if args.deploy == "certified":
        refuse_given(
            args,
            ("algorithm", "radius"),
            "--from-log --deploy certified runs no learner: the certified-safe planner plans on the log "
            "(with cmdp-rl certify's empirical Bernstein radius); drop the option",
        )
    elif args.algorithm not in LOG_LEARNERS:
        raise CMDPInputError(
            f"--algorithm: {args.algorithm} learns from the episodes it plays; with --from-log use gmbl or online-crl"
        )
    S, A, N = model.S, model.A, model.N
    H = model.horizon("learn --from-log")
    if args.deploy == "certified":  # about 20 bisection steps and 2 more candidates, each an exact LP on p_hat
        one = exact_estimate(S, A, H, N, float(S) * A * S, args.method)
        est = Estimate(one.bytes + 8.0 * 4 * S * A * S, 22 * one.seconds)
    else:
        est = elp_estimate(S, A, H, N, args.method)
    check_estimate(est, "from-log", *resource_limits(args))


def _plan(args: argparse.Namespace, model: Any, counts: Any, out: dict[str, Any]) -> tuple[Any, Any, str]:
    """The plan on the logged counts: the certified-safe planner's (``--deploy certified``) or the learner's
    extended LP, then its certificate; ``(policy or None, certificate, status)``."""
    from cmdp_rl.certificates.certify import certify
    from cmdp_rl.cli.common import certificate_json
    from cmdp_rl.evaluation.mixture import MixturePolicy
    from cmdp_rl.learners import OnlineCRL, OptimisticGMBL

    if args.deploy == "certified":
        plan = safe_plan(model, counts, args.deploy_delta, "adaptive", args.method, args.play == "mixture")
        out.update(method=plan.method, safe_method=plan.method, skipped_candidates=plan.skipped)
        if plan.samples_per_pair is not None:
            out["samples_per_pair_needed"] = plan.samples_per_pair
        out.update(elp_status=plan.status, certificate=certificate_json(plan.certificate))
        return plan.policy, plan.certificate, plan.status
    out["radius"] = args.radius
    if args.algorithm == "gmbl":
        n_min = int(counts.sum(-1).min())
        gmbl = OptimisticGMBL(model, args.delta, samples_per_pair=max(n_min, 1), radius=args.radius, method=args.method)
        plan_res = gmbl.plan(counts, n_min, None).plan
    else:
        episodes = max(1, -(-int(counts.sum()) // model.horizon("learn --from-log")))
        crl = OnlineCRL(model, args.delta, episodes=episodes, radius=args.radius, method=args.method)
        plan_res = crl.replan(counts, None)
    s0, H = model.episodic("learn --from-log")
    compact = args.play == "mixture" and plan_res.columns is not None  # FILE.npz: the plan's columns
    policy = MixturePolicy.of_plan(plan_res) if compact else plan_res.policy
    cert = certify(policy, counts, model.r, model.c, model.c_bar, s0, H, delta=args.delta)
    out.update(elp_status=plan_res.status, certificate=certificate_json(cert))
    return policy, cert, plan_res.status


def run_from_log(args: argparse.Namespace, model: Any, policy_out: Path | None) -> int:
    """``learn MODEL --from-log FILE``: check, plan on the logged counts only, certify the plan,
    write the outputs, report; exit 1 when ``--deploy certified`` certifies no policy."""
    import json

    from cmdp_rl.cli.common import print_certificate, save_counts
    from cmdp_rl.cli.policy_io import write_learned_policy
    from cmdp_rl.model.transition_logs import read_log
    from cmdp_rl.plumbing.paths import check_input_path

    _check_from_log(args, model)
    check_input_path(args.from_log, f"from-log: {args.from_log}", "a CSV or Parquet file")
    check_safe(args, model)
    counts = read_log(args.from_log, model.S, model.A, model.horizon("learn --from-log"))
    algorithm = "safe" if args.deploy == "certified" else args.algorithm  # the planner that actually ran
    out: dict[str, Any] = {
        "algorithm": algorithm,
        "method": args.method,
        "from_log": str(args.from_log),
        "delta": args.deploy_delta if args.deploy == "certified" else args.delta,
    }
    out["samples"] = int(counts.sum())
    policy, cert, status = _plan(args, model, counts, out)
    if policy is not None and policy_out is not None:
        write_learned_policy(policy_out, policy)
        out["policy_out"] = str(policy_out)
    if args.counts_out is not None:
        save_counts(Path(args.counts_out), counts, model.S, model.A)
        out["counts_out"] = str(args.counts_out)
    if args.json:
        print(json.dumps(out))
    else:
        print(f"log         {args.from_log}: {out['samples']:,} transitions")
        certified = args.deploy == "certified"
        how = f"certified-safe planning, {out['method']}" if certified else f"{args.algorithm} ELP, {args.method}"
        print(f"plan        {status} ({how})")
        if not certified:
            print(f"learner     delta {args.delta:g}, radius {args.radius} (the plan's confidence set)")
        print_certificate(cert, model)
        if policy is None:
            need = out.get("samples_per_pair_needed")
            more = f"; about {need:,} samples per pair would be needed" if need else ""
            print(f"no policy can be certified safe with these data{more}")
        elif policy_out is not None:
            print(f"policy      written to {policy_out}")
    if args.deploy == "certified" and policy is None:
        return EXIT_INFEASIBLE
    return EXIT_OK


__all__ = ["run_from_log"]
