"""Learning from a simulator: every online learner on a black-box Gymnasium environment.

[`learn`][cmdp_rl.simulators.learning.learn] runs one of
[`ONLINE_ALGORITHMS`][cmdp_rl.plumbing.names.ONLINE_ALGORITHMS] on an
environment it only ``reset``\\ s and ``step``\\ s ([`BlackBox`][cmdp_rl.simulators.blackbox.BlackBox]), with what the
model-based learners normally know estimated from what is observed (see the docs page 'Learn from a simulator'):

* **States.** The planner's states are the environment's ``0 .. S-1``, an absorbing state
  ``S`` (where an episode that the environment terminated before ``H`` steps spends its
  remaining steps, with zero reward and cost, without calling the environment) and, when the
  start state is unknown (``s0=None``, the default), a virtual start state ``S + 1`` whose one
  action (every action, with the same statistics) leads to the state ``reset`` returned: the
  planner works on ``S + 2`` states and ``H + 1`` steps, and the confidence sets cover the
  unknown start distribution. The absorbing state joins the planner at the environment's
  first termination (the run is then rebuilt and re-planned through its history,
  [`LearnerRun`][cmdp_rl.simulators.estimates.LearnerRun]): on an environment that never
  terminates, with ``r``, ``c`` and ``s0`` given, the learner is exactly the model path's.
* **The learner** is built from what is known, never from a model: the estimates below (or the
  given ``r``, ``c``), ``c_bar``, the start and ``H`` on the planner's states
  ([`KnownParts`][cmdp_rl.model.cmdp.KnownParts]); before every plan the run hands it the current
  estimates ([`update_known`][cmdp_rl.learners.base.OnlineLearner.update_known]).
* **Rewards and costs.** Unless ``r`` and ``c`` are given, per visited pair the empirical means
  with a Hoeffding radius ``sqrt(log(2 / delta_1) / (2 n))`` (``delta_1`` the kernel's
  per-entry split, [`delta_1`][cmdp_rl.confidence.radii.delta_1]); the optimism-based learners plan with
  ``r_hat + radius`` and ``c_hat - radius``, the safe ones (DOPE, OptPess) with ``c_hat +
  radius``, the plug-in learner with the means themselves, clipped to ``[0, 1]`` (an unvisited
  pair: reward 1, cost 0, or cost 1 for the safe ones).
* **Randomness.** Episode ``k`` starts with ``env.reset(seed=...)`` seeded from child ``k`` of
  ``SeedSequence(seed)``, and its actions are drawn from that child's own generator: the same
  ``seed`` gives the same run, and a resumed run the same episodes.
* **Run log.** ``run_log`` (a path) holds a header line with the configuration, one JSON line
  per finished episode (``episode, state, action, next_state, reward, costs``; a step into the
  absorbing state has ``next_state = S``) and a final ``{"complete": true}``
  ([`cmdp_rl.simulators.run_log`][cmdp_rl.simulators.run_log]). A run with the same arguments
  resumes after the last complete line by re-planning through the logged episodes, so it ends
  with the same policy as an uninterrupted run: an incomplete last line (an interrupted write)
  is dropped with a warning, any other damage is a one-line error naming the file and line.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import IO, Any

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.envs.making import env_attribute
from cmdp_rl.evaluation.mixture import MixturePolicy
from cmdp_rl.kernels.column_rollout import draw_columns
from cmdp_rl.learners.base import LEARNER_TABLES, LearnerRecord
from cmdp_rl.learners.catalog import ONLINE_ALGORITHMS, SAFE_ALGORITHMS, check_baseline_given
from cmdp_rl.learners.deploy import DEPLOY_DELTA, check_deploy
from cmdp_rl.learners.episodes import EpisodePlan, mixed_values
from cmdp_rl.plumbing.atomic import append_line
from cmdp_rl.plumbing.limits import (
    BYTES_PER_EPISODE,
    DEFAULT_MAX_MEMORY,
    DEFAULT_MAX_SECONDS,
    check_allocation,
    check_estimate,
    simulator_estimate,
)
from cmdp_rl.plumbing.names import PLAY
from cmdp_rl.plumbing.paths import check_output_path
from cmdp_rl.plumbing.progress import progress_bar
from cmdp_rl.plumbing.validation import (
    CMDPInputError,
    as_float,
    as_float_array,
    as_index,
    as_int,
    check_choice,
    check_positive_int,
    check_probability,
    plain,
    renamed_arguments,
)
from cmdp_rl.simulators import ranges
from cmdp_rl.simulators.blackbox import BlackBox, make_env
from cmdp_rl.simulators.estimates import LearnerRun, RunSpec
from cmdp_rl.simulators.played import PlayedArrays, env_values, plays_tables
from cmdp_rl.simulators.run_log import (
    RunShape,
    Steps,
    config_digest,
    env_name,
    open_run_log,
    read_run_log,
    write_episode,
)

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]


@renamed_arguments(algo="algorithm")
def learn(
    env: Any,
    *,
    H: int,
    c_bar: float | Sequence[float] | Array,
    episodes: int,
    algorithm: str = "online-crl",
    delta: float = 0.1,
    seed: int = 0,
    r: Any = None,
    c: Any = None,
    s0: int | None = None,
    env_kwargs: Mapping[str, Any] | None = None,
    reward_range: tuple[float, float] | None = None,
    cost_range: Any = None,
    cost_key: str | None = None,
    baseline: tuple[Any, Any] | None = None,
    step_timeout: float | None = None,
    run_log: str | os.PathLike[str] | None = None,
    progress: bool = False,
    max_memory: float = DEFAULT_MAX_MEMORY,
    max_seconds: float = DEFAULT_MAX_SECONDS,
    deploy: str = "certified",
    deploy_delta: float = DEPLOY_DELTA,
    play: str = "auto",
    **options: Any,
) -> LearnerRecord:
    """Learn a constrained policy from a black-box Gymnasium environment (module docstring).

    Args:
        env: a Gymnasium environment with ``Discrete`` observation and action spaces, an id for
            ``gymnasium.make`` (``cmdp_rl/<name>-v0``: the library's own) or ``"module:NAME"`` (see gym_make).
        H: steps per episode (each episode is exactly ``H`` steps; an earlier termination goes
            on in the absorbing state, a truncation before ``H`` is an error).
        c_bar: the bound on the expected sum of the ``H`` step costs: a number or ``N`` numbers (in the
            environment's units).
        episodes: episodes to play ``K``.
        algorithm: one of [`ONLINE_ALGORITHMS`][cmdp_rl.plumbing.names.ONLINE_ALGORITHMS] (``algo``: its
            deprecated name, for one release).
        delta: failure probability in (0, 1) (the learners' default 0.1 and radius, the paper's: docs
            page 'Learning').
        seed: root seed (integer >= 0) of every episode's reset and actions.
        r: known ``(S, A)`` rewards in ``[0, 1]`` or in ``reward_range``, or ``None`` (estimated).
        c: known ``(N, S, A)`` costs in ``[0, 1]`` or in ``cost_range``, or ``None`` (estimated).
        s0: the known, fixed start state (skips the virtual start), or ``None``.
        env_kwargs: keywords of ``gymnasium.make`` (with an id only).
        reward_range: ``(lo, hi)``: the learner sees rewards mapped affinely to ``[0, 1]``; the record's
            returns are the environment's ([`in_reward_units`][cmdp_rl.simulators.blackbox.BlackBox.in_reward_units]).
        cost_range: ``(lo, hi)`` for every cost, or ``N`` pairs, one per constraint: the learner sees costs,
            ``c_bar`` and a baseline's costs mapped affinely to ``[0, 1]``; the record (realized costs,
            ``c_bar``, ``costs``, ``violation``, the certificate) is in the environment's units
            ([`cmdp_rl.simulators.ranges`][cmdp_rl.simulators.ranges]).
        cost_key: the ``info`` key of the step costs (default ``"cost"``, then ``"costs"``).
        baseline: for the safe learners (``SAFE_ALGORITHMS``): ``(policy, costs (N,))``, a policy
            known to be safe, an ``(H, S, A)`` table or a ``MixturePolicy`` of ``(K, H, S)`` columns
            (played as a mixture), and its expected costs (the environment's units), below ``c_bar``.
        step_timeout: seconds allowed per ``reset`` or ``step``, or ``None``. With a timeout the
            environment runs in a child process, killed when a call passes the deadline (even
            one stuck in C code; [`blackbox`][cmdp_rl.simulators.blackbox]); without one it runs in this
            process.
        run_log: a JSON-lines file of the episodes (appended per episode; resumed from, see
            [`cmdp_rl.simulators.run_log`][cmdp_rl.simulators.run_log]).
        progress: show a progress bar.
        max_memory: refuse a run estimated to need more bytes
            ([`simulator_estimate`][cmdp_rl.plumbing.limits.simulator_estimate], from ``H``, ``episodes``, ``N``
            and the spaces' sizes, before the first ``reset``).
        max_seconds: refuse a run estimated to take longer.
        deploy: the policy handed over ([`deployed`][cmdp_rl.learners.deploy.deployed]): ``"certified"`` (default:
            the best one certified safe from the counts and the estimates' intervals, else the safe
            baseline if given, else the last with status ``"uncertified"``) or ``"last"`` (the last played).
        deploy_delta: that certificate's failure probability (default 0.05).
        play: ``"table"``, ``"mixture"`` (the plans' columns, one per episode; ``policy`` a ``MixturePolicy``)
            or ``"auto"`` (default: tables while the run's estimate with them fits in ``max_memory``).
        options: the learner's own keywords (e.g. ``radius`` for Online-CRL, ``k0`` for DOPE,
            ``bonus_scale`` for the baselines).

    Returns:
        The [`LearnerRecord`][cmdp_rl.learners.records.LearnerRecord]: ``realized_return (K,)``,
        ``realized_costs (K, N)``, their running means, ``cost_exceedances (K,)``, ``policy (H, S, A)`` over the
        environment's states. ``value_gap``, ``violation``, ``value`` and ``costs`` are exact
        scores when the environment is one of the library's own (it has a model), else
        ``None``. ``counts`` are over the planner's states (``S`` absorbing, ``S + 1`` start).

    Raises:
        CMDPInputError: a bad argument (before any step), or
            [`SimulatorError`][cmdp_rl.simulators.blackbox.SimulatorError] for an environment that broke a rule (the
            message names the episode and step; the run log so far is kept).
    """
    args = _check_arguments(
        H, c_bar, episodes, algorithm, delta, seed, (reward_range, cost_range), cost_key, step_timeout, progress,
        run_log, baseline,
    )  # fmt: skip
    deploy, deploy_delta = check_deploy(deploy, deploy_delta)
    play = check_choice("play", play, PLAY)
    source = (env, env_kwargs) if isinstance(env, str) else None  # the child of step_timeout makes it again
    N, rr, cr = args.c_bar.size, args.reward_range, args.cost_range
    box = BlackBox(make_env(env, env_kwargs), N, args.H, rr, cost_key, args.timeout, source, cr)
    spec = _run_spec(box, args, algorithm, r, c, s0, baseline, options, (max_memory, max_seconds), play)
    run = LearnerRun(spec, absorbing=False)  # checks the learner's options and the baseline
    scorer = _scorer(box.env, spec.H, args.c_bar, spec.S, spec.A, s0)  # the environment's units
    config = _config(env, env_kwargs, spec, args, cost_key, {**options, "play": play})
    shape = RunShape(spec.S, spec.A, spec.N, spec.H, spec.K, spec.s0)
    logged, complete = ([], False) if run_log is None else read_run_log(Path(run_log), config, shape)
    out: IO[bytes] | None = None
    if run_log is not None and not complete:
        out = open_run_log(Path(run_log), config, len(logged))
    bar = progress_bar(spec.K, f"{algorithm} on {config['env']}", "ep", show=progress)
    try:
        played, run = _play_episodes(run, box, scorer, args.seed, logged, out, bar)
        if out is not None:
            append_line(out, str(out.name), json.dumps({"complete": True}) + "\n")
    finally:
        bar.close()
        box.close()
        if out is not None:
            out.close()
    assert played.table is not None  # K >= 1 episodes
    rec = run.hand_over(_record(run, played, scorer, config, args), played.table, deploy, deploy_delta)
    return dataclasses.replace(rec, certificate=ranges.certificate_in_units(rec.certificate, box.units))


@dataclass(frozen=True)
class _Arguments:
    """``learn``'s own arguments, checked before the environment is made."""

    H: int
    K: int
    c_bar: Array  # the environment's units
    unit_c_bar: Array  # the learner's (cost_range mapped; c_bar itself without it)
    delta: float
    seed: int
    reward_range: tuple[float, float] | None
    cost_range: Array | None  # (N, 2)
    timeout: float | None


def _check_arguments(
    H: Any,
    c_bar: Any,
    episodes: Any,
    algorithm: Any,
    delta: Any,
    seed: Any,
    given_ranges: tuple[Any, Any],
    cost_key: Any,
    step_timeout: Any,
    progress: Any,
    run_log: Any,
    baseline: Any,
) -> _Arguments:
    """Step 1 of ``learn``: every argument that needs no environment, checked (one-line
    [`CMDPInputError`][cmdp_rl.plumbing.errors.CMDPInputError] naming it)."""
    H = check_positive_int("H", H)
    K = check_positive_int("episodes", episodes)
    cb = as_float_array("c_bar", np.atleast_1d(np.asarray(c_bar, dtype=object)).astype(np.float64), 1)
    N = cb.size
    check_allocation("episodes", (BYTES_PER_EPISODE + 16.0 * N) * K, f"the records of {K:,} episodes")
    check_allocation("H", 64.0 * H, f"the steps of an episode of H = {H:,} steps")
    if algorithm not in ONLINE_ALGORITHMS:
        raise CMDPInputError(
            f"algorithm: unknown learner {plain(algorithm)}; valid names are {list(ONLINE_ALGORITHMS)}"
        )
    delta = check_probability("delta", delta)
    if isinstance(seed, bool) or as_int("seed", seed) < 0:
        raise CMDPInputError(f"seed: must be an integer >= 0, got {plain(seed)}")
    rr, cr = ranges.check_reward_range(given_ranges[0]), ranges.check_cost_range(given_ranges[1], N)
    unit_cb = ranges.unit_c_bar(cb, ranges.run_units(rr, cr, N, H), cr is not None)
    if cost_key is not None and not isinstance(cost_key, str):
        raise CMDPInputError(f"cost_key: must be a string, got {type(cost_key).__name__}")
    timeout = None
    if step_timeout is not None:
        timeout = as_float("step_timeout", step_timeout)
        if not 0 < timeout <= threading.TIMEOUT_MAX:
            raise CMDPInputError(
                f"step_timeout: must be > 0 seconds and at most {threading.TIMEOUT_MAX:.3g} (the longest wait "
                f"the platform supports), got {plain(step_timeout)}"
            )
    if not isinstance(progress, (bool, np.bool_)):
        raise CMDPInputError(f"progress: must be True or False, got {plain(progress)}")
    if run_log is not None:  # appended to: a regular file, or /dev/null (never a device, FIFO or folder)
        check_output_path(run_log, "run_log", force=True)
    check_baseline_given(algorithm, baseline is not None)
    if algorithm in SAFE_ALGORITHMS and N == 0:
        raise CMDPInputError(f"c_bar: {algorithm} needs a constraint (N >= 1)")
    return _Arguments(H, K, cb, unit_cb, delta, int(seed), rr, cr, timeout)


def _run_spec(
    box: BlackBox,
    args: _Arguments,
    algorithm: str,
    r: Any,
    c: Any,
    s0: Any,
    baseline: tuple[Any, Any] | None,
    options: Mapping[str, Any],
    limits: tuple[float, float],
    play: str,
) -> RunSpec:
    """Step 2 of ``learn``: what the learner is built from, on the environment's spaces; the run's
    memory and time estimated and refused above the limits before the first ``reset`` (the
    ``(H, S, A)`` tables only for a learner that plays tables: ``play``, ``plays_tables``)."""
    S, A, N, H, K = box.S, box.A, args.c_bar.size, args.H, args.K
    max_memory, max_seconds = limits
    tables = plays_tables(algorithm, play, simulator_estimate(S, A, H, N, K).bytes, max_memory)
    if tables:
        check_allocation(
            "H", 8.0 * LEARNER_TABLES * H * (S + 2) * A, f"(H, S, A) policies and statistics for H = {H:,}"
        )
    driver = f"horizon H = {H:,} and episodes = {K:,} (on S = {S:,} states, A = {A:,} actions)"
    check_estimate(simulator_estimate(S, A, H, N, K, tables), driver, max_memory, max_seconds)  # before any reset
    play = "table" if tables and play == "auto" else "mixture" if play == "auto" else play  # auto: resolved here
    u, rr, cr = box.units, args.reward_range, args.cost_range
    r_known = ranges.known_table("r", r, (S, A), u.r_offset, u.r_width, None if rr is None else "reward_range")
    cw = u.c_offset[:, None, None], u.c_width[:, None, None]
    c_known = ranges.known_table("c", c, (N, S, A), *cw, None if cr is None else "cost_range")
    start = None if s0 is None else as_index("s0", s0, S)
    mode = "safe" if algorithm in SAFE_ALGORITHMS else "plugin" if algorithm == "plugin" else "optimistic"
    base = None if baseline is None else ranges.unit_baseline(baseline, u, N)
    return RunSpec(
        algorithm, args.delta, K, S, A, N, H, args.unit_c_bar, start, base, dict(options), r_known, c_known, mode,
        play, max_memory,
    )  # fmt: skip


def _config(
    env: Any, env_kwargs: Mapping[str, Any] | None, spec: RunSpec, args: _Arguments, cost_key: str | None,
    options: Mapping[str, Any],
) -> dict[str, Any]:  # fmt: skip
    """The run's configuration: the run log's header (a resumed run must have the same); ``options``
    holds the learner's keywords and ``play`` as given (resolved in ``spec``)."""
    options = dict(options)
    given_play = options.pop("play", "auto")
    rr = args.reward_range
    cost_range = {} if args.cost_range is None else {"cost_range": args.cost_range.tolist()}  # old logs resume
    return {
        "env": env_name(env),
        "env_kwargs": dict(env_kwargs or {}),
        "algorithm": spec.algorithm,
        "H": spec.H,
        "c_bar": args.c_bar.tolist(),
        "episodes": spec.K,
        "delta": spec.delta,
        "seed": args.seed,
        "s0": spec.s0,
        "reward_range": None if rr is None else list(rr),
        **cost_range,
        "cost_key": cost_key,
        "r": config_digest(spec.r),
        "c": config_digest(spec.c),
        "baseline": None
        if spec.baseline is None
        else [config_digest(spec.baseline[0], spec.A), config_digest(spec.baseline[1])],
        "options": {k: v for k, v in sorted(options.items())},
        **({} if given_play == "auto" else {"play": given_play}),  # the default stays out: older logs resume
    }


def _play_episodes(
    run: LearnerRun,
    box: BlackBox,
    scorer: Any,
    seed: int,
    logged: list[Steps],
    out: IO[bytes] | None,
    bar: Any,
) -> tuple[PlayedArrays, LearnerRun]:
    """Step 3 of ``learn``: the episodes (module docstring): plan, play ``H`` steps on the
    environment (or take the logged episode of a resumed run), log, count, score, time. Returns the
    arrays and the learner's run (rebuilt with the absorbing state at the first termination)."""
    spec = run.spec
    S, N, H, K = spec.S, spec.N, spec.H, spec.K
    virtual = spec.s0 is None
    # one stream per episode, and one more for the coins of mixed policies (the first K children
    # are the same as those of spawn(K): a run without mixtures draws what it drew before)
    *children, coin_seed = np.random.SeedSequence(seed).spawn(K + 1)
    coins = np.random.default_rng(coin_seed)
    played = PlayedArrays.empty(K, N, S, spec.A, H)
    history: list[Steps] = []
    clock = time.perf_counter
    for k in range(K):
        t0 = clock()
        if not run.absorbing and any(S in steps[2] for steps in history[-1:]):
            run = LearnerRun(spec, absorbing=True).replay(history)  # the first termination
        plan: EpisodePlan = run.plan()
        played.table = table = plan.draw(coins)
        played.policy = run.on_env(table)
        # a compact plan: one column drawn with its weight from the coins' stream, then followed
        action_table = (
            table
            if not isinstance(table, MixturePolicy)
            else table.columns[int(draw_columns(table.weights, coins.random(1))[0])]
        )
        if plan.mixture is not None:  # the components on the environment's states, as the policy
            played.mixture = (np.ascontiguousarray(plan.mixture[0][:, int(virtual) :, :S]), plan.mixture[1])
        else:
            played.mixture = None
        t1 = clock()
        if k < len(logged):
            steps = logged[k]
        else:
            steps = box.play(action_table, children[k], k, virtual, spec.s0)
            if out is not None:
                write_episode(out, k, steps)
        run.add(steps)
        history.append(steps)
        played.realized_return[k] = box.in_reward_units(float(np.sum(steps[3])), len(steps[3]))
        played.realized_costs[k] = box.in_cost_units(np.sum(steps[4], axis=0), len(steps[4])) if len(steps[4]) else 0
        t2 = clock()
        if scorer is not None:
            played.value[k], played.costs[k] = mixed_values(partial(env_values, scorer, run), plan, table)
        t3 = clock()
        played.planned_value[k], played.episode_status[k] = box.in_reward_units(plan.value, H), plan.status
        played.iterations[k], played.baseline[k] = plan.iterations, plan.baseline
        played.min_visits[k] = run.est.n.min()
        played.plan_seconds[k], played.act_seconds[k], played.score_seconds[k] = t1 - t0, t2 - t1, t3 - t2
        bar.update()
    return played, run


def _record(
    run: LearnerRun, played: PlayedArrays, scorer: Any, config: Mapping[str, Any], args: _Arguments
) -> LearnerRecord:
    """Step 4 of ``learn``: the [`LearnerRecord`][cmdp_rl.learners.records.LearnerRecord] of the run
    (exact scores only with a scorer; the learner's settings and how the run saw the environment),
    in the environment's units."""
    spec, c_bar = run.spec, args.c_bar
    gap = viol = None
    if scorer is not None:
        gap = scorer.v_star - played.value
        viol = np.maximum(np.max(played.costs - c_bar, axis=1, initial=0.0), 0.0)
    settings = {
        **run.learner.settings(),
        "env": config["env"],
        "seed": config["seed"],
        "s0": config["s0"],
        "virtual_start": spec.s0 is None,
        "absorbing_state": run.absorbing,
        "reward_range": config["reward_range"],
        "cost_range": config.get("cost_range"),
        "cost_key": config["cost_key"],
        **({"play": "mixture"} if run.learner.plays_mixtures else {}),
        "rewards": "known" if spec.r is not None else "estimated",
        "costs": "known" if spec.c is not None else "estimated",
    }
    return LearnerRecord(
        algorithm=spec.algorithm,
        value_gap=gap,
        violation=viol,
        value=played.value if scorer is not None else None,
        costs=played.costs if scorer is not None else None,
        baseline=played.baseline,
        episode_status=played.episode_status.astype(str),
        planned_value=played.planned_value,
        iterations=played.iterations,
        min_visits=played.min_visits,
        plan_seconds=played.plan_seconds,
        act_seconds=played.act_seconds,
        score_seconds=played.score_seconds,
        counts=run.public_counts(),
        policy=played.policy,
        H=spec.H,
        settings=settings,
        info={},
        realized_return=played.realized_return,
        realized_costs=played.realized_costs,
        c_bar=c_bar,
        mixture=played.mixture,
        cost_scale=None if args.cost_range is None else np.diff(args.cost_range, axis=1)[:, 0],
    )


def _scorer(env: Any, H: int, c_bar: Array, S: int, A: int, s0: int | None) -> Any:
    """Exact scoring when the environment is one of the library's own (it carries its model):
    read by the driver for the record only, never by the learner."""
    from cmdp_rl.envs.gym_env import CMDPEnv
    from cmdp_rl.learners.metrics import Scorer

    inner = env_attribute(env, "unwrapped", "env", env)
    if not isinstance(inner, CMDPEnv):
        return None
    m = inner.cmdp
    if m.H is None or not isinstance(m.s0, int):  # a discounted model or a start distribution: no exact scoring
        return None
    if (m.S, m.A, m.N) != (S, A, c_bar.size) or H > m.H or (s0 is not None and s0 != m.s0):
        return None
    return Scorer.for_model(m.replace(c_bar=c_bar, H=H))


__all__ = ["learn"]
