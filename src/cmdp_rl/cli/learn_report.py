"""The text report of ``cmdp-rl learn MODEL`` (a learner on the model's kernel): the run, its
regret and violations, the plan, the handed-over policy's certificate, value and costs, and the
files written (the ``--json`` object holds the same numbers)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def print_report(
    args: argparse.Namespace,
    model: Any,
    out: dict[str, Any],
    status: str,
    safe: Any,
    policy: Any,
    policy_out: Path | None,
    counts_out: Path | None,
) -> None:
    """The text report of a run on the model's kernel."""
    import numpy as np

    from cmdp_rl.cli.common import fmt, print_certificate
    from cmdp_rl.cli.policy_io import policy_shape

    detail = (
        f"radius {args.radius}"
        if args.algorithm in ("gmbl", "online-crl")
        else f"bonus_scale {out['settings']['bonus_scale']:g}"
    )
    print(f"algorithm   {args.algorithm} (seed {args.seed}, delta {args.delta}, {detail})")
    print(f"samples     {out['samples']:,}")
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
    if safe is not None:
        verdict = "certified safe" if safe.safe else "none: no policy certified safe"
        if out.get("safe_status") == "baseline":
            verdict += "; returned: the learner's safe baseline"
        print(f"deployed    {verdict} (delta {args.deploy_delta:g})")
        print_certificate(safe.certificate, model)
        if not safe.safe and safe.samples_per_pair:
            print(f"need        about {safe.samples_per_pair:,} samples per pair (calculator estimate)")
    if policy is not None and safe is None and "mixture_weights" in out:
        weights = ", ".join(f"{w:.3g}" for w in out["mixture_weights"])
        print(
            f"policy      mixed: {len(out['mixture_weights'])} Markov policies drawn at the episode's start "
            f"(weights {weights}); value and costs below are its expectation"
            + ("; --policy-out holds the one the last episode drew" if policy_out is not None else "")
        )
    if policy is not None:
        print(f"value       {out['value']:.6f}   (optimum V* = {out['v_star']:.6f}, gap {out['value_gap']:+.6f})")
        print(
            f"costs       {fmt(np.asarray(out['costs']))}  (thresholds {fmt(model.c_bar)}, "
            f"violation {out['violation']:.6f})"
        )
    if policy_out is not None and policy is not None:
        print(f"policy      written to {policy_out} ({policy_shape(policy)})")
    if counts_out is not None:
        print(f"counts      written to {counts_out}")


__all__ = ["print_report"]
