"""What the modes of ``cmdp-rl learn`` share (a model's kernel in [`cmdp_rl.cli.learn`][cmdp_rl.cli.learn],
logged episodes in [`cmdp_rl.cli.learn_log`][cmdp_rl.cli.learn_log], a simulator in
[`cmdp_rl.cli.simulator`][cmdp_rl.cli.simulator]): the learners that plan from counts, the rules of
the baselines' options, and what a run hands over (``--deploy``; ``--safe`` is its deprecated alias)."""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Any

from cmdp_rl.cli.options import finite, open_unit
from cmdp_rl.plumbing.errors import CMDPInputError
from cmdp_rl.plumbing.names import DEPLOY

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


def add_ranges(p: argparse.ArgumentParser) -> None:
    """``--reward-range LO HI`` and ``--cost-range LO HI`` (repeatable) of ``learn --env``: the
    environment's units mapped onto ``[0, 1]`` for the learner
    ([`cmdp_rl.simulators.ranges`][cmdp_rl.simulators.ranges])."""
    p.add_argument(
        "--reward-range",
        type=finite,
        nargs=2,
        metavar=("LO", "HI"),
        help="--env: the learner sees rewards mapped from [LO, HI] to [0, 1], the record the env's (default: [0, 1])",
    )
    p.add_argument(
        "--cost-range",
        type=finite,
        nargs=2,
        action="append",
        metavar=("LO", "HI"),
        help="--env: the learner sees costs, --c-bar and --baseline-costs mapped from [LO, HI] to [0, 1], the record "
        "the env's; once for every cost, or once per constraint in order (default: [0, 1])",
    )


def add_deploy(p: argparse.ArgumentParser) -> None:
    """``--deploy``, ``--deploy-delta`` and the deprecated ``--safe`` of ``cmdp-rl learn``."""
    p.add_argument(
        "--deploy",
        choices=DEPLOY,
        help="the policy returned: last (the last one played; default with MODEL) or certified (the best "
        "policy certified safe from the run's data, cmdp-rl certify's test at --deploy-delta; else the "
        "learner's safe baseline; else exit 1; default with --env)",
    )
    p.add_argument(
        "--deploy-delta",
        type=open_unit,
        metavar="P",
        help="failure probability of the returned policy's certificate (default 0.05)",
    )
    p.add_argument("--safe", action="store_true", help="deprecated alias of --deploy certified")


def resolve_deploy(args: argparse.Namespace, default: str) -> None:
    """Set ``args.deploy`` and ``args.deploy_delta`` (checked before any work): ``--safe``, the
    deprecated alias of ``--deploy certified``, leaves one warning line for stderr (printed with the
    result, as a renamed option's); ``default`` is the
    mode's own (``"last"`` on a model's kernel and a log, ``"certified"`` with ``--env``)."""
    from cmdp_rl.learners.deploy import DEPLOY_DELTA

    if args.safe:  # one line with the command's result, never with a refusal (the entry point's notes)
        warnings.warn("--safe is deprecated, use --deploy certified", DeprecationWarning, stacklevel=1)
        if args.deploy == "last":
            raise CMDPInputError("--safe: is --deploy certified (its deprecated alias); drop it or --deploy last")
        args.deploy = "certified"
    if args.deploy is None:
        args.deploy = default
    if args.deploy_delta is None:
        args.deploy_delta = DEPLOY_DELTA


def check_safe(args: argparse.Namespace, model: Any) -> None:
    """``--deploy certified`` needs a constraint to certify (checked before any work)."""
    if args.deploy == "certified" and model.N == 0:
        raise CMDPInputError("--deploy: certified needs a constraint to certify; the model has none")


def not_certified_note(mode: str) -> None:
    """The one line on stderr when the policy a run returns is not certified safe (exit 0)."""
    if mode == "last":
        what, how = "policy", "; --deploy certified returns the best policy the data certify safe"
    else:
        what, how = "policy (the learner's safe baseline: no policy was certified)", ""
    print(f"cmdp-rl learn: note: the returned {what} is not certified safe by this run's data{how}", file=sys.stderr)


def certified_verdict(
    args: argparse.Namespace, model: Any, policy: Any, counts: Any, sampling: str, safe: Any, out: dict[str, Any]
) -> bool:
    """Whether the returned ``policy`` is certified safe from the run's ``counts`` at
    ``--deploy-delta`` (``out["certified"]``): the certified plan's own verdict, else a
    [`certify`][cmdp_rl.certificates.certify.certify] of the policy (a model without a constraint:
    every policy is safe)."""
    from cmdp_rl.certificates.certify import certify

    if policy is None or model.N == 0:
        ok = policy is not None
    elif safe is not None and safe.safe:
        ok = True
    else:
        s0, H = model.episodic("learn --deploy")
        cert = certify(policy, counts, model.r, model.c, model.c_bar, s0, H, delta=args.deploy_delta, sampling=sampling)
        ok = bool(cert.safe)
    out["certified"] = ok
    return ok


def safe_plan(model: Any, counts: Any, delta: float, sampling: str, method: str, compact: bool = False) -> Any:
    """[`solve_safe`][cmdp_rl.certificates.safe.solve_safe] on ``counts`` with the model's known parts
    (a model with a constraint: [`check_safe`][cmdp_rl.cli.learn_common.check_safe]); its candidates'
    LPs by ``method`` (the other method when the solver fails on one); ``compact``: candidates as
    their plans' columns (``--play mixture``, a ``FILE.npz`` policy)."""
    from cmdp_rl.certificates.safe import solve_safe

    s0, H = model.episodic("learn --deploy certified")
    return solve_safe(
        counts, model.r, model.c, model.c_bar, s0, H, delta=delta, sampling=sampling, method=method, compact=compact
    )


def add_play(p: argparse.ArgumentParser) -> None:
    """``--play``: how a learner plays its plans (``OnlineLearner.configure_play``)."""
    from cmdp_rl.plumbing.names import PLAY

    p.add_argument(
        "--play",
        choices=PLAY,
        help="how the learner plays its plans: table (the randomized Markov table), mixture (the plan's "
        "deterministic columns, one drawn per episode with its weight: no (H, S, A) table) or auto (tables while "
        "they fit in --max-memory; default); --policy-out FILE.npz implies mixture",
    )


__all__ = [
    "LOG_LEARNERS",
    "add_deploy",
    "add_play",
    "add_ranges",
    "baseline_options",
    "certified_verdict",
    "check_safe",
    "not_certified_note",
    "resolve_deploy",
    "safe_plan",
]
