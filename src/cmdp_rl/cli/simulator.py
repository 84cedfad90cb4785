"""``cmdp-rl learn --env ID ...``: an online learner on a black-box Gymnasium environment.

The command line of [`learn`][cmdp_rl.simulators.learning.learn] (docs/simulators.md): every argument and output
path is checked before the first ``reset``; the run prints one summary (or one JSON object)
and writes the learned policy, the counts, the run log and a figure of the realized return
and costs per episode (running means, the thresholds drawn) when asked.
"""

from __future__ import annotations

import argparse
import json
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from cmdp_rl.cli.checker_model import CHECKER_NAMES
from cmdp_rl.cli.common import (
    certificate_json,
    check_distinct_paths,
    check_output_file,
    note_compilation,
    parse_env_kwargs,
    parse_thresholds,
    refuse_given,
    resource_limits,
    save_counts,
)
from cmdp_rl.cli.exit_codes import EXIT_INFEASIBLE, EXIT_OK
from cmdp_rl.cli.learn_common import baseline_options, not_certified_note
from cmdp_rl.cli.policy_io import (
    check_baseline_output,
    learned_play,
    policy_out_file,
    read_policy,
    write_learned_policy,
)
from cmdp_rl.plumbing.errors import CMDPInputError
from cmdp_rl.plumbing.limits import BYTES_PER_EPISODE, Estimate, check_estimate
from cmdp_rl.plumbing.paths import is_devnull
from cmdp_rl.plumbing.results_folder import file_lock, probe_lock


def _check_mode(args: argparse.Namespace) -> list[float]:
    """The options of ``--env`` and those it refuses; the thresholds ``--c-bar``, and the run's
    size against the resource limits."""
    if args.model is not None:
        raise CMDPInputError(f"--env: give either a MODEL ({args.model}) or --env, not both")
    if args.algorithm == "gmbl":
        raise CMDPInputError("--algorithm: gmbl needs a generative model; with --env use an online learner")
    for opt in ("samples_per_pair", "eps", "max_episodes", "from_log", "s0", "avoid", "reach", *CHECKER_NAMES):
        if getattr(args, opt) is not None:
            raise CMDPInputError(f"--{opt.replace('_', '-')}: not available with --env")
    if args.horizon is None:
        raise CMDPInputError("--horizon: required with --env (steps per episode)")
    if args.c_bar is None:
        raise CMDPInputError("--c-bar: required with --env (thresholds X[/Y...] on the expected cost sums)")
    if args.episodes is None:
        raise CMDPInputError("--episodes: required with --env")
    if args.policy_out is None and args.counts_out is None and args.figure is None:
        refuse_given(args, ("force",), "no output file to replace (it applies to --policy-out, --counts-out, --figure)")
    c_bar = parse_thresholds(args.c_bar, "c-bar", negative=args.cost_range is not None)  # checked by _ranges
    limits = resource_limits(args)
    check_estimate(Estimate(64.0 * args.horizon, 0.0), "horizon", *limits)
    per_episode = Estimate(BYTES_PER_EPISODE + 16.0 * len(c_bar), 2e-6 * args.horizon)
    check_estimate(
        Estimate(per_episode.bytes * args.episodes, per_episode.seconds * args.episodes), "episodes", *limits
    )
    return c_bar


def _outputs(args: argparse.Namespace) -> tuple[Path | None, Path | None, Path | None, Path | None, Path | None]:
    """``--policy-out``, ``--counts-out``, ``--figure``, ``--run-log`` (each its own file, not
    ``--baseline``) and the run log's lock, probed: ``None`` for those not given."""
    check_distinct_paths(
        [
            ("--policy-out", args.policy_out),
            ("--counts-out", args.counts_out),
            ("--figure", args.figure),
            ("--run-log", args.run_log),
        ],
        [("--baseline", args.baseline)],
    )
    args.play = learned_play(args)
    policy_out = None if args.policy_out is None else policy_out_file(args)
    counts_out = None if args.counts_out is None else check_output_file(args.counts_out, args.force, "counts-out")
    figure = None if args.figure is None else check_output_file(args.figure, args.force, "figure")
    run_log = None if args.run_log is None else check_output_file(args.run_log, True, "run-log")  # appended to
    if run_log is not None and is_devnull(run_log):
        run_log_lock = None  # a discarded log: nothing to resume, nothing to hold (no /dev/null.lock)
    else:
        run_log_lock = None if run_log is None else Path(f"{run_log}.lock")
    if run_log_lock is not None:
        probe_lock(run_log_lock, f"--run-log {run_log}")  # another run on it: refuse before any work
    return policy_out, counts_out, figure, run_log, run_log_lock


def _learner_options(args: argparse.Namespace) -> tuple[Any, dict[str, Any], tuple[float, float] | None]:
    """The safe baseline (``--baseline``/``--baseline-costs``, or ``None``), the learner's
    keywords and ``--reward-range``."""
    from cmdp_rl.learners.catalog import check_baseline_given
    from cmdp_rl.simulators.blackbox import check_reward_range

    baseline = None
    if (args.baseline is None) != (args.baseline_costs is None):
        raise CMDPInputError("--baseline/--baseline-costs: give both (the safe policy and its expected costs)")
    if args.baseline is not None:
        costs = np.array(parse_thresholds(args.baseline_costs, "baseline-costs", negative=args.cost_range is not None))
        baseline = (read_policy(args.baseline, "baseline", args), costs)
    check_baseline_given(
        args.algorithm,
        baseline is not None,
        "--baseline",
        "--baseline POLICY.npy (H, S, A) or POLICY.npz --baseline-costs X[/Y...] (its expected costs, below --c-bar)",
    )
    options: dict[str, Any] = {}
    if args.algorithm == "online-crl":
        options["radius"] = args.radius
        if args.method != "fast":  # the default stays out of the run log's configuration (resumes)
            options["method"] = args.method
    else:
        refuse_given(args, ("radius",), f"applies to online-crl, not to {args.algorithm}")
        refuse_given(args, ("method",), f"applies to online-crl (its extended LP), not to {args.algorithm}")
    options.update(baseline_options(args, ("bonus_scale",)))
    return baseline, options, check_reward_range(args.reward_range, "--reward-range")


def _ranges(args: argparse.Namespace, c_bar: list[float]) -> Any:
    """``--cost-range`` (once for every cost, or once per constraint) as ``learn``'s ``cost_range``,
    checked with ``--reward-range`` and ``--c-bar`` against it in the options' own names
    ([`cmdp_rl.simulators.ranges`][cmdp_rl.simulators.ranges])."""
    from cmdp_rl.simulators import ranges

    N = len(c_bar)
    cost_range = ranges.check_cost_range(args.cost_range, N, "--cost-range")
    reward_range = ranges.check_reward_range(args.reward_range, "--reward-range")
    units = ranges.run_units(reward_range, cost_range, N, args.horizon, ("--reward-range", "--cost-range"))
    ranges.unit_c_bar(np.array(c_bar), units, cost_range is not None, ("--c-bar", "--cost-range"))
    return cost_range


def cmd_learn_env(args: argparse.Namespace) -> int:
    """``learn --env``: check everything, learn, report, write the outputs."""
    from cmdp_rl.simulators.learning import learn

    # 1. arguments and files, before the environment is stepped
    c_bar = _check_mode(args)
    env_kwargs = parse_env_kwargs(args.env_kwargs)
    policy_out, counts_out, figure, run_log, run_log_lock = _outputs(args)
    baseline, options, reward_range = _learner_options(args)
    check_baseline_output(None if baseline is None else baseline[0], policy_out)
    cost_range = _ranges(args, c_bar)

    # 2. work
    note_compilation()
    # one run per log at a time: FILE.lock (pid, host, start) refuses a second one while this one runs
    held = nullcontext() if run_log_lock is None else file_lock(run_log_lock, "cmdp-rl learn", f"--run-log {run_log}")
    with held:
        rec = learn(
            args.env,
            H=args.horizon,
            c_bar=c_bar,
            episodes=args.episodes,
            algorithm=args.algorithm,
            delta=args.delta,
            seed=args.seed,
            env_kwargs=env_kwargs,
            reward_range=reward_range,
            cost_range=cost_range,
            cost_key=args.cost_key,
            baseline=baseline,
            step_timeout=args.step_timeout,
            run_log=run_log,
            progress=not args.json,
            max_memory=float(args.max_memory),
            max_seconds=float(args.max_time),
            deploy=args.deploy,
            deploy_delta=args.deploy_delta,
            play=args.play,
            **options,
        )
    out: dict[str, Any] = {
        "algorithm": args.algorithm,
        "method": args.method if args.algorithm == "online-crl" else None,
        "env": args.env,
        "seed": args.seed,
        "delta": args.delta,
        "radius": args.radius if args.algorithm == "online-crl" else None,
        "episodes": rec.episodes,
        "mean_realized_return": float(rec.mean_realized_return[-1]),
        "mean_realized_costs": [float(x) for x in rec.mean_realized_costs[-1]],
        "cost_exceedances": int(rec.cost_exceedances.sum()),
        "c_bar": c_bar,
        "deploy": args.deploy,
        "deploy_delta": args.deploy_delta,
        "status": rec.status,
        "certified": bool(rec.certified),
    }
    if rec.certificate is not None:
        out["certificate"] = certificate_json(rec.certificate)
    if rec.value_gap is not None and rec.violation is not None:
        out.update(value_gap=float(rec.value_gap[-1]), violation=float(rec.violation[-1]))
    if policy_out is not None and rec.status != "uncertified":  # no policy is returned then (exit 1)
        write_learned_policy(policy_out, rec.policy)
        out["policy_out"] = str(policy_out)
    if counts_out is not None:  # the environment's states only (not the absorbing and start states)
        A = rec.counts.shape[0] // rec.counts.shape[1]  # (size * A, size) public counts
        S = rec.counts.shape[1] - 1 - int(rec.settings["virtual_start"])
        save_counts(counts_out, sp.csr_array(rec.counts[: S * A, :S]), S, A)
        out["counts_out"] = str(counts_out)
    if figure is not None:
        write_realized_figure(rec, figure, f"{args.algorithm} on {args.env}")
        out["figure"] = str(figure)
    if run_log is not None:
        out["run_log"] = str(run_log)
    if args.json:
        print(json.dumps(out))
    else:
        _print_report(args, out)
    if rec.status == "uncertified":  # --deploy certified found no policy and had no baseline
        return EXIT_INFEASIBLE
    if not rec.certified:
        not_certified_note(args.deploy)
    return EXIT_OK


def _print_report(args: argparse.Namespace, out: dict[str, Any]) -> None:
    """The text report of a run on a simulator."""
    K = out["episodes"]
    print(f"env         {args.env}: {args.algorithm}, {K:,} episodes of H = {args.horizon} steps (seed {args.seed})")
    radius = f", radius {args.radius}" if args.algorithm == "online-crl" else ""
    print(f"learner     delta {args.delta:g}{radius}")
    print(f"return      {out['mean_realized_return']:.6g} per episode (mean over the run)")
    mean_costs = "/".join(f"{x:.6g}" for x in out["mean_realized_costs"])
    print(f"costs       {mean_costs} per episode (thresholds {args.c_bar}); {out['cost_exceedances']:,} of {K:,} "
          "episodes exceeded them")  # fmt: skip
    by = f"by the run's data (delta {args.deploy_delta:g})"
    if args.deploy == "last":
        returned = f"the last policy played, {'certified' if out['certified'] else 'NOT certified'} safe {by}"
    elif out["status"] == "certified":
        returned = f"the best policy certified safe {by}"
    elif out["status"] == "baseline":
        returned = f"the safe baseline you gave: no policy is certified safe {by}"
    else:
        returned = f"none: no policy is certified safe {by}"
    print(f"deployed    {returned}")
    if "value_gap" in out:
        print(f"last policy value gap {out['value_gap']:.6g}, violation {out['violation']:.6g} (exact)")
    for key in ("policy_out", "counts_out", "figure", "run_log"):
        if key in out:
            print(f"{key.replace('_out', ''):<11} written to {out[key]}")


def write_realized_figure(rec: Any, path: Path, title: str) -> None:
    """Running means of the realized return and of each realized cost per episode, thresholds drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from cmdp_rl.plumbing.atomic import atomic_path

    k = np.arange(1, rec.episodes + 1)
    fig, (ax_r, ax_c) = plt.subplots(1, 2, figsize=(9, 3.4))
    ax_r.plot(k, rec.mean_realized_return, color="C0")
    ax_r.set_title("running mean of the realized return", fontsize=9)
    for i in range(rec.realized_costs.shape[1]):
        ax_c.plot(k, rec.mean_realized_costs[:, i], color=f"C{i}", label=f"cost {i}")
        ax_c.axhline(rec.c_bar[i], color=f"C{i}", ls="--", lw=1, label=f"threshold {i}")
    ax_c.set_title("running mean of the realized costs", fontsize=9)
    if rec.realized_costs.shape[1]:
        ax_c.legend(fontsize=7)
    for ax in (ax_r, ax_c):
        ax.set_xlabel("episode")
        if rec.episodes >= 100:
            ax.set_xscale("log")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)


__all__ = ["cmd_learn_env", "parse_thresholds", "write_realized_figure"]
