"""What the modes of ``cmdp-rl learn`` share (a model's kernel in [`cmdp_rl.cli.learn`][cmdp_rl.cli.learn],
logged episodes in [`cmdp_rl.cli.learn_log`][cmdp_rl.cli.learn_log], a simulator in
[`cmdp_rl.cli.simulator`][cmdp_rl.cli.simulator]): the learners that plan from counts, the rules of
the baselines' options, and the certified-safe plan of ``--safe``."""

from __future__ import annotations

import argparse
from typing import Any

from cmdp_rl.plumbing.errors import CMDPInputError

#: the learners that plan from counts (``--from-log``): the paper's two
LOG_LEARNERS = ("gmbl", "online-crl")


def baseline_options(args: argparse.Namespace, not_for_the_papers: tuple[str, ...]) -> dict[str, Any]:
    """``--bonus-scale`` and ``--k0`` as the learner's keywords (those given): each option of
    ``not_for_the_papers`` is refused for the paper's learners
    (``LOG_LEARNERS``), ``--k0`` for any learner but ``dope``."""
    for opt in not_for_the_papers:
        if getattr(args, opt) is not None and args.algorithm in LOG_LEARNERS:
            raise CMDPInputError(
                f"--{opt.replace('_', '-')}: applies to the baselines (plugin, optcmdp, ...), not to {args.algorithm}"
            )
    if args.k0 is not None and args.algorithm != "dope":
        raise CMDPInputError("--k0: applies to --algo dope only")
    return {key: getattr(args, key) for key in ("bonus_scale", "k0") if getattr(args, key) is not None}


def check_safe(args: argparse.Namespace, model: Any) -> None:
    """``--safe`` needs a constraint to certify (checked before any work)."""
    if args.safe and model.N == 0:
        raise CMDPInputError("--safe: the model has no constraint to certify")


def safe_plan(model: Any, counts: Any, delta: float, sampling: str, method: str) -> Any:
    """[`solve_safe`][cmdp_rl.certificates.safe.solve_safe] on ``counts`` with the model's known parts
    (a model with a constraint: [`check_safe`][cmdp_rl.cli.learn_common.check_safe]); its candidates'
    LPs by ``method`` (the other method when the solver fails on one)."""
    from cmdp_rl.certificates.safe import solve_safe

    s0, H = model.episodic("learn --safe")
    return solve_safe(counts, model.r, model.c, model.c_bar, s0, H, delta=delta, sampling=sampling, method=method)


__all__ = ["LOG_LEARNERS", "baseline_options", "check_safe", "safe_plan"]
