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
  ``_Planning``): on an environment that never terminates, with ``r``, ``c`` and ``s0``
  given, the learner is exactly the model path's. The absorbing state's self-loop is known:
  its row is pinned by ``PIN`` virtual counts (a radius below ``1e-7``).
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

import hashlib
import json
import math
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from cmdp_rl.confidence.radii import delta_1
from cmdp_rl.envs.making import env_attribute
from cmdp_rl.learners.base import LearnerRecord
from cmdp_rl.learners.catalog import ONLINE_ALGORITHMS, SAFE_ALGORITHMS, make_learner
from cmdp_rl.learners.episodes import EpisodePlan
from cmdp_rl.model.cmdp import CMDP, KnownParts
from cmdp_rl.model.sparse import SPARSE_ABOVE_BYTES, dense_bytes
from cmdp_rl.plumbing.atomic import append_line
from cmdp_rl.plumbing.errors import one_line
from cmdp_rl.plumbing.limits import (
    BYTES_PER_EPISODE,
    DEFAULT_MAX_MEMORY,
    DEFAULT_MAX_SECONDS,
    check_allocation,
    check_estimate,
    simulator_estimate,
)
from cmdp_rl.plumbing.paths import check_output_path
from cmdp_rl.plumbing.progress import progress_bar
from cmdp_rl.plumbing.validation import (
    CMDPInputError,
    as_float,
    as_float_array,
    as_index,
    as_int,
    check_positive_int,
    check_probability,
    distribution_rows,
    log_ratio,
    plain,
    renamed_arguments,
)
from cmdp_rl.simulators.blackbox import BlackBox, make_env
from cmdp_rl.simulators.run_log import RunShape, Steps, open_run_log, read_run_log, write_episode

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: virtual counts pinning the absorbing state's known self-loop (radius ~ sqrt(log / PIN))
PIN = 2**53


class Estimates:
    """Empirical rewards and costs of the environment's pairs, with Hoeffding radii.

    Args:
        S: the environment's states.
        A: its actions.
        N: its constraints.
        planner_S: the planner's states (the extra ones have reward and cost 0).
        delta1: the per-entry failure probability of the radii.
        r: known ``(S, A)`` rewards, or ``None`` (estimated).
        c: known ``(N, S, A)`` costs, or ``None`` (estimated).
    """

    def __init__(self, S: int, A: int, N: int, planner_S: int, delta1: float, r: Array | None, c: Array | None):
        self.S, self.A, self.N, self.planner_S = S, A, N, planner_S
        self.log_term = log_ratio(2.0, delta1)
        self.n = np.zeros((S, A), dtype=np.int64)
        self.r_sum = np.zeros((S, A))
        self.c_sum = np.zeros((N, S, A))
        self.r_known, self.c_known = r, c

    def add(self, states: IntArray, actions: IntArray, rewards: Array, costs: Array) -> None:
        """One episode's observed steps: ``states, actions (T,)``, ``rewards (T,)``, ``costs (T, N)``."""
        np.add.at(self.n, (states, actions), 1)
        np.add.at(self.r_sum, (states, actions), rewards)
        for i in range(self.N):
            np.add.at(self.c_sum[i], (states, actions), costs[:, i])

    def parts(self, mode: str) -> tuple[Array, Array]:
        """The planning ``r (S', A)`` and ``c (N, S', A)`` over the planner's ``S'`` states:
        ``"optimistic"``: ``r_hat + radius``, ``c_hat - radius``; ``"safe"``: ``c_hat + radius``
        (unvisited: cost 1); ``"plugin"``: the means themselves (certainty equivalence).
        Unvisited pairs get reward 1 and cost 0 (safe: 1); everything is clipped to ``[0, 1]``."""
        safe = mode == "safe"
        n = np.maximum(self.n, 1)
        scale = 0.0 if mode == "plugin" else 1.0
        rad = np.where(self.n > 0, scale * np.sqrt(self.log_term / (2.0 * n)), np.inf)
        r = np.zeros((self.planner_S, self.A))
        c = np.zeros((self.N, self.planner_S, self.A))
        if self.r_known is not None:
            r[: self.S] = self.r_known
        else:
            r[: self.S] = np.clip(np.where(self.n > 0, self.r_sum / n + rad, 1.0), 0.0, 1.0)
        if self.c_known is not None:
            c[:, : self.S] = self.c_known
        elif self.N:
            sign = 1.0 if safe else -1.0
            unvisited = 1.0 if safe else 0.0
            c[:, : self.S] = np.clip(np.where(self.n > 0, self.c_sum / n + sign * rad, unvisited), 0.0, 1.0)
        return r, c


def _identity_model(S: int, A: int, r: Array, c: Array, c_bar: Array, s0: int, H: int) -> CMDP:
    """A CMDP of the planner's sizes whose kernel (self-loops) no learner reads: what the
    learners' constructors take (they keep ``r, c, c_bar, s0, H`` only)."""
    rows = np.arange(S * A)
    K = sp.csr_array((np.ones(S * A), rows // A, np.arange(S * A + 1)), shape=(S * A, S))
    return CMDP(K, r, c, c_bar, s0, H)


def _checked_c_bar(c_bar: Any) -> Array:
    arr = as_float_array("c_bar", np.atleast_1d(np.asarray(c_bar, dtype=object)).astype(np.float64), 1)
    if np.any(arr < 0):
        raise CMDPInputError(f"c_bar: thresholds must be >= 0 (costs are in [0, 1]), got {arr.tolist()}")
    return arr


def _checked_range(reward_range: Any) -> tuple[float, float] | None:
    if reward_range is None:
        return None
    try:
        lo, hi = reward_range
    except (TypeError, ValueError):
        raise CMDPInputError(f"reward_range: must be a pair (lo, hi), got {reward_range!r}") from None
    lo_, hi_ = as_float("reward_range", lo), as_float("reward_range", hi)
    if not lo_ < hi_:
        raise CMDPInputError(f"reward_range: needs lo < hi, got ({plain(lo_)}, {plain(hi_)})")
    if not math.isfinite(hi_ - lo_):
        raise CMDPInputError(f"reward_range: hi - lo must be a finite number, got ({plain(lo_)}, {plain(hi_)})")
    return lo_, hi_


def _digest(arr: Any) -> str | None:
    if arr is None:
        return None
    a = np.ascontiguousarray(np.asarray(arr, dtype=np.float64))
    return hashlib.sha256(a.tobytes() + str(a.shape).encode()).hexdigest()[:16]


def _env_name(env: Any) -> str:
    if isinstance(env, str):
        return env
    spec = env_attribute(env, "spec", "env", None)
    return one_line(str(env_attribute(spec, "id", "env", None) or type(env).__name__))


@dataclass(frozen=True)
class _Spec:
    """What a simulator run's planning is built from (``_Planning``)."""

    algorithm: str
    delta: float
    K: int
    S: int
    A: int
    N: int
    H: int
    c_bar: Array
    s0: int | None
    baseline: tuple[Any, Any] | None
    options: Mapping[str, Any]
    r: Array | None
    c: Array | None
    mode: str


class _Planning:
    """The learner on the planner's states, its counts and the reward and cost estimates.

    The planner's states are the environment's ``0 .. S-1``, then the absorbing state (index
    ``S``) once the environment has terminated an episode (``absorbing``), then the virtual start
    state when the start is unknown. Until a termination is seen, the planner is the model
    path's (the same states), so on an environment that never terminates the learner plans as
    on a model; at the first termination the run is rebuilt with the absorbing state and the
    episodes so far are re-planned (``replay``), so the learner's own state (warm starts,
    multipliers, episode counts) follows the same history.
    """

    def __init__(self, spec: _Spec, absorbing: bool) -> None:
        self.spec, self.absorbing = spec, absorbing
        S, A = spec.S, spec.A
        virtual = spec.s0 is None
        self.n_states = S + int(absorbing) + int(virtual)
        self.start = S + int(absorbing) if spec.s0 is None else spec.s0
        self.H = spec.H + int(virtual)
        base = None
        if spec.baseline is not None:
            base = _planner_baseline(spec.baseline, spec.H, S, A, spec.N, self.n_states, self.H, virtual)
        delta1 = delta_1(spec.delta, self.n_states, spec.N, float(spec.K))
        self.est = Estimates(S, A, spec.N, self.n_states, delta1, spec.r, spec.c)
        r0, c0 = self.est.parts(spec.mode)
        model = _identity_model(self.n_states, A, r0, c0, spec.c_bar, self.start, self.H)
        # visited-only (S'*A, S') counts where the dense (S', A, S') ones would be large
        self.sparse = dense_bytes(self.n_states, A) > SPARSE_ABOVE_BYTES
        options = {**spec.options, "statistics": "sparse"} if self.sparse else dict(spec.options)
        self.learner = make_learner(spec.algorithm, model, spec.delta, episodes=spec.K, baseline=base, **options)
        self.plan_next = self.learner.planner()
        self.counts = np.zeros((0, 0, 0) if self.sparse else (self.n_states, A, self.n_states), dtype=np.int64)
        self.entries: dict[int, int] = {}  # sparse: (s*A + a) * S' + s2 -> count
        if absorbing:
            for a in range(A):
                self._count(S, a, S, PIN)

    def _count(self, s: int, a: int, s2: int, n: int = 1) -> None:
        if self.sparse:
            key = (s * self.spec.A + a) * self.n_states + s2
            self.entries[key] = self.entries.get(key, 0) + n
        else:
            self.counts[s, a, s2] += n

    def planner_counts(self) -> IntArray | sp.csr_array:
        """The counts the learner plans from: ``(S', A, S')`` dense, or ``(S'*A, S')`` CSR."""
        if not self.sparse:
            return self.counts
        n = self.n_states
        keys = np.fromiter(self.entries.keys(), dtype=np.int64, count=len(self.entries))
        vals = np.fromiter(self.entries.values(), dtype=np.int64, count=len(self.entries))
        return sp.csr_array((vals, (keys // n, keys % n)), shape=(n * self.spec.A, n))

    def plan(self) -> EpisodePlan:
        """The next episode's plan, from the counts and the current estimates."""
        r_plan, c_plan = self.est.parts(self.spec.mode)
        self.learner.known = KnownParts(r_plan, c_plan, self.spec.c_bar, self.start, self.H)
        return self.plan_next(self.planner_counts())

    def add(self, steps: Steps) -> None:
        """Count one episode's steps (a next state ``S`` is the absorbing state)."""
        states, actions, nexts = (np.asarray(x, dtype=np.int64) for x in steps[:3])
        costs = np.asarray(steps[4], dtype=np.float64).reshape(len(states), self.spec.N)
        self.est.add(states, actions, np.asarray(steps[3], dtype=np.float64), costs)
        if self.sparse:
            for s, a, s2 in zip(states.tolist(), actions.tolist(), nexts.tolist(), strict=True):
                self._count(s, a, s2)
        else:
            np.add.at(self.counts, (states, actions, nexts), 1)
        if self.spec.s0 is None:
            for a in range(self.spec.A):  # the reset, under every action of the start
                self._count(self.start, a, int(states[0]))

    def replay(self, history: list[Steps]) -> _Planning:
        """Re-plan through the episodes played so far (their plans are not played again)."""
        for steps in history:
            self.plan()
            self.add(steps)
        return self

    def public_counts(self) -> sp.csr_array:
        """``(S'*A, S')`` CSR counts in the documented layout (absorbing state ``S``, virtual start
        ``S + 1`` when the start is unknown), whether or not the run needed them; the pin removed."""
        S, A, n = self.spec.S, self.spec.A, self.n_states
        size = S + 1 + int(self.spec.s0 is None)
        counts = self.planner_counts()
        if not sp.issparse(counts):
            counts = sp.csr_array(np.asarray(counts).reshape(n * A, n))
        coo = sp.coo_array(counts)
        rows, cols, vals = coo.row.astype(np.int64), coo.col.astype(np.int64), coo.data.astype(np.int64)
        # internal index -> public index: the start state moves to S + 1 when no absorbing state was needed
        public = np.arange(n)
        if self.spec.s0 is None and not self.absorbing:
            public[S] = S + 1
        s, a = rows // A, rows % A
        keep = ~((public[s] == S) & (public[cols] == S))  # the absorbing state's pinned self-loop
        out = sp.csr_array((vals[keep], (public[s][keep] * A + a[keep], public[cols][keep])), shape=(size * A, size))
        out.sum_duplicates()
        return out


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
    cost_key: str | None = None,
    baseline: tuple[Any, Any] | None = None,
    step_timeout: float | None = None,
    run_log: str | os.PathLike[str] | None = None,
    progress: bool = False,
    max_memory: float = DEFAULT_MAX_MEMORY,
    max_seconds: float = DEFAULT_MAX_SECONDS,
    **options: Any,
) -> LearnerRecord:
    """Learn a constrained policy from a black-box Gymnasium environment (module docstring).

    Args:
        env: a Gymnasium environment with ``Discrete`` observation and action spaces, or an id
            for ``gymnasium.make`` (the library's own problems are ``cmdp_rl/<name>-v0``).
        H: steps per episode (each episode is exactly ``H`` steps; an earlier termination goes
            on in the absorbing state, a truncation before ``H`` is an error).
        c_bar: the bound on the expected sum of the ``H`` step costs: a number or ``N`` numbers.
        episodes: episodes to play ``K``.
        algorithm: one of [`ONLINE_ALGORITHMS`][cmdp_rl.plumbing.names.ONLINE_ALGORITHMS] (``algo``: its
            deprecated name, for one release).
        delta: failure probability in (0, 1) (the learners' default 0.1 and radius, the paper's: docs
            page 'Learning').
        seed: root seed (integer >= 0) of every episode's reset and actions.
        r: known ``(S, A)`` rewards in ``[0, 1]`` (then used as is), or ``None`` (estimated).
        c: known ``(N, S, A)`` costs in ``[0, 1]``, or ``None`` (estimated).
        s0: the known, fixed start state (skips the virtual start), or ``None``.
        env_kwargs: keywords of ``gymnasium.make`` (with an id only).
        reward_range: ``(lo, hi)``: rewards are mapped affinely to ``[0, 1]`` (the record's
            returns are in the mapped units, ``settings["reward_range"]`` says so).
        cost_key: the ``info`` key of the step costs (default ``"cost"``, then ``"costs"``).
        baseline: for the safe learners (``optpess``, ``dope``): ``(policy (H, S, A), costs
            (N,))``, a policy known to be safe and its expected costs, below ``c_bar``.
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
        options: the learner's own keywords (e.g. ``radius`` for Online-CRL, ``k0`` for DOPE,
            ``bonus_scale`` for the baselines).

    Returns:
        The [`LearnerRecord`][cmdp_rl.learners.base.LearnerRecord]: ``realized_return (K,)``, ``realized_costs (K, N)``,
        their running means, ``cost_exceedances (K,)``, ``policy (H, S, A)`` over the
        environment's states. ``value_gap``, ``violation``, ``value`` and ``costs`` are exact
        scores when the environment is one of the library's own (it has a model), else
        ``None``. ``counts`` are over the planner's states (``S`` absorbing, ``S + 1`` start).

    Raises:
        CMDPInputError: a bad argument (before any step), or
            [`SimulatorError`][cmdp_rl.simulators.blackbox.SimulatorError] for an environment that broke a rule (the
            message names the episode and step; the run log so far is kept).
    """
    H = check_positive_int("H", H)
    K = check_positive_int("episodes", episodes)
    cb = _checked_c_bar(c_bar)
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
    seed = int(seed)
    rr = _checked_range(reward_range)
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
    if algorithm in SAFE_ALGORITHMS and baseline is None:
        raise CMDPInputError(
            f"baseline: {algorithm} needs a known safe policy: pass baseline=(policy (H, S, A), costs (N,)), "
            "a policy whose expected costs are below c_bar"
        )
    if algorithm in SAFE_ALGORITHMS and N == 0:
        raise CMDPInputError(f"c_bar: {algorithm} needs a constraint (N >= 1)")
    source = (env, env_kwargs) if isinstance(env, str) else None  # the child of step_timeout makes it again
    box = BlackBox(make_env(env, env_kwargs), N, H, rr, cost_key, timeout, source)
    S, A = box.S, box.A
    check_allocation("H", 8.0 * 4 * H * (S + 2) * A, f"(H, S, A) policies and statistics for H = {H:,}")
    driver = f"horizon H = {H:,} and episodes = {K:,} (on S = {S:,} states, A = {A:,} actions)"
    check_estimate(simulator_estimate(S, A, H, N, K), driver, max_memory, max_seconds)  # before any reset
    r_known = _known_table("r", r, (S, A))
    c_known = _known_table("c", c, (N, S, A))
    virtual = s0 is None
    start = None if virtual else as_index("s0", s0, S)
    mode = "safe" if algorithm in SAFE_ALGORITHMS else "plugin" if algorithm == "plugin" else "optimistic"
    learner_options = dict(options)
    if algorithm == "online-crl":
        learner_options.pop("bonus_scale", None)
    spec = _Spec(algorithm, delta, K, S, A, N, H, cb, start, baseline, learner_options, r_known, c_known, mode)
    run = _Planning(spec, absorbing=False)  # checks the learner's options and the baseline
    scorer = _scorer(box.env, H, cb, S, A, s0)

    config = {
        "env": _env_name(env),
        "env_kwargs": dict(env_kwargs or {}),
        "algorithm": algorithm,
        "H": H,
        "c_bar": cb.tolist(),
        "episodes": K,
        "delta": delta,
        "seed": seed,
        "s0": start,
        "reward_range": None if rr is None else list(rr),
        "cost_key": cost_key,
        "r": _digest(r_known),
        "c": _digest(c_known),
        "baseline": None if baseline is None else [_digest(baseline[0]), _digest(baseline[1])],
        "options": {k: v for k, v in sorted(options.items())},
    }
    shape = RunShape(S, A, N, H, K, start)
    logged, complete = ([], False) if run_log is None else read_run_log(Path(run_log), config, shape)

    children = np.random.SeedSequence(seed).spawn(K)
    ret, rcost = np.zeros(K), np.zeros((K, N))
    planned, iters = np.empty(K), np.zeros(K, dtype=np.int64)
    status = np.empty(K, dtype=object)
    played_base = np.zeros(K, dtype=bool)
    min_visits = np.zeros(K, dtype=np.int64)
    t_plan, t_act, t_score = np.zeros(K), np.zeros(K), np.zeros(K)
    value, costs = np.full(K, np.nan), np.full((K, N), np.nan)
    history: list[Steps] = []
    policy = np.full((H, S, A), 1.0 / A)
    out: IO[bytes] | None = None
    if run_log is not None and not complete:
        out = open_run_log(Path(run_log), config, len(logged))
    bar = progress_bar(K, f"{algorithm} on {_env_name(env)}", "ep", show=progress)
    clock = time.perf_counter
    try:
        for k in range(K):
            t0 = clock()
            if not run.absorbing and any(S in steps[2] for steps in history[-1:]):
                run = _Planning(spec, absorbing=True).replay(history)  # the first termination
            plan: EpisodePlan = run.plan()
            policy = np.ascontiguousarray(plan.policy[int(virtual) :, :S])
            t1 = clock()
            if k < len(logged):
                steps = logged[k]
            else:
                steps = _play(box, plan.policy, children[k], k, H, S, virtual, start)
                if out is not None:
                    write_episode(out, k, steps)
            run.add(steps)
            history.append(steps)
            ret[k] = float(np.sum(steps[3]))
            rcost[k] = np.sum(steps[4], axis=0) if len(steps[4]) else np.zeros(N)
            t2 = clock()
            if scorer is not None:
                value[k], costs[k] = scorer.values(policy)
            t3 = clock()
            planned[k], status[k], iters[k], played_base[k] = plan.value, plan.status, plan.iterations, plan.baseline
            min_visits[k] = run.est.n.min()
            t_plan[k], t_act[k], t_score[k] = t1 - t0, t2 - t1, t3 - t2
            bar.update()
        if out is not None:
            append_line(out, str(out.name), json.dumps({"complete": True}) + "\n")
    finally:
        bar.close()
        box.close()
        if out is not None:
            out.close()
    gap = viol = None
    if scorer is not None:
        gap = scorer.v_star - value
        viol = np.maximum(np.max(costs - cb, axis=1, initial=0.0), 0.0)
    learner = run.learner
    settings = {
        **(learner.settings() if hasattr(learner, "settings") else {"delta": delta, "episodes": K}),
        "env": config["env"],
        "seed": seed,
        "s0": config["s0"],
        "virtual_start": virtual,
        "absorbing_state": run.absorbing,
        "reward_range": config["reward_range"],
        "cost_key": cost_key,
        "rewards": "known" if r_known is not None else "estimated",
        "costs": "known" if c_known is not None else "estimated",
    }
    return LearnerRecord(
        algorithm=algorithm,
        value_gap=gap,
        violation=viol,
        value=value if scorer is not None else None,
        costs=costs if scorer is not None else None,
        baseline=played_base,
        episode_status=status.astype(str),
        planned_value=planned,
        iterations=iters,
        min_visits=min_visits,
        plan_seconds=t_plan,
        act_seconds=t_act,
        score_seconds=t_score,
        counts=run.public_counts(),
        policy=policy,
        H=H,
        settings=settings,
        info={},
        realized_return=ret,
        realized_costs=rcost,
        c_bar=cb,
    )


def _play(
    box: BlackBox, policy: Array, child: np.random.SeedSequence, k: int, H: int, S: int, virtual: bool, s0: int | None
) -> Steps:
    """One episode of ``H`` steps on the environment: ``(states, actions, next_states, rewards,
    costs)`` of the steps it took (a termination ends them; its next state is ``S``)."""
    reset_seed = int(child.generate_state(1)[0])
    rng = np.random.default_rng(child.spawn(1)[0])
    u = rng.random(H)
    s = box.reset(reset_seed, k)
    if s0 is not None and s != s0:
        raise CMDPInputError(f"s0: the environment's reset returned state {s} in episode {k}, not s0 = {s0}")
    offset = int(virtual)
    cum = np.cumsum(policy[offset:], axis=-1)  # (H, S', A): the rows the actions are drawn from
    states: list[int] = []
    actions: list[int] = []
    nexts: list[int] = []
    rewards: list[float] = []
    costs: list[Array] = []
    for t in range(H):
        row = cum[t, s]
        a = int(min(np.searchsorted(row, u[t] * row[-1], side="right"), row.size - 1))
        s2, rew, cost, terminated = box.step(a, k, t)
        states.append(s)
        actions.append(a)
        nexts.append(S if terminated else s2)
        rewards.append(rew)
        costs.append(cost)
        if terminated:
            break
        s = s2
    return states, actions, nexts, rewards, costs


def _known_table(name: str, value: Any, shape: tuple[int, ...]) -> Array | None:
    if value is None:
        return None
    arr = as_float_array(name, value, len(shape))
    if arr.shape != shape:
        raise CMDPInputError(f"{name}: expected shape {shape} for this environment, got {arr.shape}")
    if np.any(arr < 0) or np.any(arr > 1):
        raise CMDPInputError(f"{name}: entries must lie in [0, 1]")
    return arr


def _planner_baseline(
    baseline: tuple[Any, Any], H: int, S: int, A: int, N: int, planner_S: int, planner_H: int, virtual: bool
) -> tuple[Array, Array]:
    """The user's ``(H, S, A)`` safe policy on the planner's states and steps (uniform elsewhere)."""
    try:
        pol, costs = baseline
    except (TypeError, ValueError):
        raise CMDPInputError("baseline: must be a pair (policy (H, S, A), costs (N,))") from None
    p = as_float_array("baseline", pol, 3)
    if p.shape != (H, S, A):
        raise CMDPInputError(f"baseline: expected an (H, S, A) = {(H, S, A)} policy, got {p.shape}")
    distribution_rows("baseline", pol, p, "each action distribution baseline[h, s, :]")  # float32: widened
    out = np.full((planner_H, planner_S, A), 1.0 / A)
    out[int(virtual) :, :S] = p
    cost = as_float_array("baseline", np.atleast_1d(np.asarray(costs, dtype=object)), 1)  # not "0.5", None
    if cost.shape != (N,):
        raise CMDPInputError(f"baseline: its costs must have shape ({N},), got {cost.shape}")
    return out, cost


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


__all__ = ["PIN", "Estimates", "learn"]
