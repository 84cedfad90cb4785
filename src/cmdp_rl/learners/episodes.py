"""The library's one episode loop: plan, act ``H`` steps, count, score, repeat.

Every online learner supplies only its planner, "the next episode's policy from the
counts so far and the learner's own state" ([`EpisodePlanner`][cmdp_rl.learners.episodes.EpisodePlanner]); this loop
does everything else the same way for all of them: it checks that learner, environment and
scorer describe problems of the same size (before any compiled code runs), keeps the
transition counts, plays each episode through the environment's compiled rollout,
scores the played policy exactly when a scorer is given, and times the three parts of
every episode (planning, acting, scoring), which the benchmarks read instead of timing
a copy of the loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.evaluation.mixture import MixturePolicy
from cmdp_rl.learners.environment import EpisodicEnv
from cmdp_rl.learners.metrics import Scorer
from cmdp_rl.model.actions import uniform_rows
from cmdp_rl.model.cmdp import CMDP, KnownParts
from cmdp_rl.plumbing.progress import progress_bar
from cmdp_rl.plumbing.validation import CMDPInputError, CMDPTypeError

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]
#: what an episode plays: an ``(H, S, A)`` Markov table or a compact mixture of deterministic columns
Played = Array | MixturePolicy


@dataclass(frozen=True)
class EpisodePlan:
    """What a planner returns for one episode.

    Attributes:
        policy: ``(H, S, A)`` the policy to play, or a compact
            [`MixturePolicy`][cmdp_rl.evaluation.mixture.MixturePolicy] (a learner playing mixtures,
            ``OnlineLearner.configure_play``, or a baseline given as one): the episode draws one column
            with its weight from the environment's generator and follows it
            ([`rollout_mixture`][cmdp_rl.learners.environment.EpisodicEnv.rollout_mixture]), and is
            scored by the weighted sum of the columns' exact values.
        status: planning status, e.g. ``"optimal"`` or ``"infeasible"``.
        value: the planner's own (e.g. optimistic) value of the policy.
        iterations: solver iterations spent.
        baseline: the policy is the learner's safe baseline (DOPE's first ``K0`` episodes,
            OptPess-LP's failed safety test, an infeasible plan of a safe learner).
        mixture: a mixed policy ``(policies (J, H, S, A), weights (J,))`` (``weights`` sum to 1):
            the episode draws one component at its start, ``j`` with probability ``weights[j]``
            ([`draw`][cmdp_rl.learners.episodes.EpisodePlan.draw]), and plays it; its expected
            value and costs, which the episode is scored by, are the weighted sums of the
            components' ([`mixed_values`][cmdp_rl.learners.episodes.mixed_values]). ``policy`` is then
            the heaviest component (what a report shows). ``None``: the episode plays ``policy``.
    """

    policy: Played
    status: str
    value: float
    iterations: int = 0
    baseline: bool = False
    mixture: tuple[Array, Array] | None = None

    def draw(self, rng: np.random.Generator) -> Played:
        """The table this episode plays: ``policy``, or one component of the mixture drawn by its
        weight with one uniform number of ``rng`` (none is drawn without a mixture, so the
        environment's random stream is the same as before for every other plan)."""
        if self.mixture is None:
            return self.policy
        policies, weights = self.mixture
        j = int(np.searchsorted(np.cumsum(weights), rng.random() * float(np.sum(weights)), side="right"))
        out: Array = policies[min(j, len(weights) - 1)]
        return out


def mixed_values(
    values: Callable[[Played], tuple[float, Array]], plan: EpisodePlan, played: Played
) -> tuple[float, Array]:
    """``(V(s0), C(s0) (N,))`` of the policy an episode played, by ``values`` (a scorer's exact
    evaluation of one table): of ``played``, or for a mixture the weighted sums over its
    components (the expected value and costs of the mixed policy, the coin included)."""
    if plan.mixture is None:
        return values(played)
    policies, weights = plan.mixture
    value, costs = 0.0, None
    for pol, w in zip(policies, weights, strict=True):
        v, c = values(pol)
        value += float(w) * v
        costs = float(w) * np.asarray(c) if costs is None else costs + float(w) * np.asarray(c)
    assert costs is not None
    return value, costs


class EpisodePlanner(Protocol):
    """Plans the next episode from the transition counts ``(S, A, S)`` gathered so far."""

    def __call__(self, counts: IntArray) -> EpisodePlan: ...


@dataclass(frozen=True)
class EpisodeLog:
    """Per-episode arrays of one run of [`play_episodes`][cmdp_rl.learners.episodes.play_episodes] (length = episodes
    played).

    Attributes:
        value_gap, violation: ``(K,)`` exact metrics of each played policy (``nan`` without scorer).
        value: ``(K,)`` exact ``V^pi_k(s0)`` of each played policy (``nan`` without scorer).
        costs: ``(K, N)`` exact ``C_i^pi_k(s0)`` (``nan`` without scorer).
        baseline: ``(K,)`` whether the episode played the learner's safe baseline.
        planned_value: ``(K,)`` the planner's value.
        status: ``(K,)`` planning status strings.
        iterations: ``(K,)`` solver iterations.
        min_visits: ``(K,)`` ``min_{s,a} n(s, a)`` after each episode.
        plan_seconds, act_seconds, score_seconds: ``(K,)`` wall time of each part.
        counts: ``(S, A, S)`` final transition counts.
        policy: ``(H, S, A)`` the last policy played, or its compact
            [`MixturePolicy`][cmdp_rl.evaluation.mixture.MixturePolicy] (a learner playing mixtures).
        realized_return: ``(K,)`` the rewards the environment returned, summed per episode.
        realized_costs: ``(K, N)`` the costs it returned, summed per episode.
        mixture: the last episode's mixed policy ``(policies (J, H, S, A), weights (J,))``, or
            ``None`` when it played one table.
    """

    value_gap: Array
    violation: Array
    value: Array
    costs: Array
    baseline: NDArray[np.bool_]
    planned_value: Array
    status: NDArray[np.str_]
    iterations: IntArray
    min_visits: IntArray
    plan_seconds: Array
    act_seconds: Array
    score_seconds: Array
    counts: IntArray
    policy: Played
    realized_return: Array
    realized_costs: Array
    mixture: tuple[Array, Array] | None = None


def check_same_problem(learner_model: CMDP | KnownParts, env: object, scorer: object) -> None:
    """Raise ``ValueError`` unless ``env`` (and ``scorer``) match the learner's sizes.

    The compiled rollout indexes the environment's arrays with the learner's policy,
    so a size mismatch must be caught here, before any compiled call.
    """
    if not isinstance(env, EpisodicEnv):
        raise CMDPTypeError(f"env: must be an EpisodicEnv, got {type(env).__name__}")
    if scorer is not None and not isinstance(scorer, Scorer):
        raise CMDPTypeError(f"scorer: must be a Scorer or None, got {type(scorer).__name__}")
    m = learner_model if isinstance(learner_model, KnownParts) else KnownParts.of(learner_model, "the episodes")
    want = (m.S, m.A, m.H, m.N)
    for name, other in (("env", env.cmdp), ("scorer", None if scorer is None else scorer.cmdp)):
        if other is None:
            continue
        got = (other.S, other.A, other.H, other.N)
        if got != want or other.s0 != m.s0:
            raise CMDPInputError(
                f"{name}: its model has S={other.S}, A={other.A}, H={other.H}, N={other.N}, "
                f"s0={other.s0} but the learner was built for S={m.S}, A={m.A}, H={m.H}, N={m.N}, s0={m.s0}"
            )


def play_episodes(
    model: CMDP | KnownParts,
    planner: EpisodePlanner,
    env: EpisodicEnv,
    episodes: int,
    scorer: Scorer | None = None,
    progress: bool = False,
    stop: Callable[[IntArray], bool] | None = None,
    desc: str = "episodes",
    on_episode: Callable[[int, IntArray, Played], None] | None = None,
) -> EpisodeLog:
    """Run up to ``episodes`` episodes: plan from the counts, play, count, score.

    Args:
        model: the learner's known model (sizes, ``s0``, ``H``; its ``P`` is not read).
        planner: the learner's plan for the next episode.
        env: the episodic environment (owns the random generator).
        episodes: the budget ``K``.
        scorer: exact scoring on the true model, or ``None``.
        progress: show a progress bar.
        stop: called with the counts after each episode; ``True`` ends the run early.
        desc: the progress bar's label.
        on_episode: called after each episode ``k`` (1-based) with the counts after it and
            the policy played (read-only views: e.g. to certify the policy at checkpoints).
    """
    check_same_problem(model, env, scorer)
    if isinstance(model, CMDP):
        model = KnownParts.of(model, "the episodes")
    K = episodes
    S, A = model.S, model.A
    counts = np.zeros((S, A, S), dtype=np.int64)
    gap, viol, planned = np.full(K, np.nan), np.full(K, np.nan), np.empty(K)
    value, costs = np.full(K, np.nan), np.full((K, model.N), np.nan)
    baseline = np.zeros(K, dtype=bool)
    c_bar = model.c_bar
    status = np.empty(K, dtype=object)
    iters = np.zeros(K, dtype=np.int64)
    min_visits = np.zeros(K, dtype=np.int64)
    t_plan, t_act, t_score = np.zeros(K), np.zeros(K), np.zeros(K)
    ret, rcost = np.zeros(K), np.zeros((K, model.N))
    r_env, c_env = env.cmdp.r, env.cmdp.c
    policy: Played = np.broadcast_to(uniform_rows(model.actions, S, A), (model.H, S, A))
    visits = slice(None) if model.actions is None else model.actions  # min n(s, a) over the available pairs
    mixture: tuple[Array, Array] | None = None
    clock = time.perf_counter
    n_ep = 0
    bar = progress_bar(K, desc, "ep", show=progress)
    try:
        for k in range(K):
            t0 = clock()
            plan = planner(counts)
            t1 = clock()
            policy, mixture = plan.draw(env.rng), plan.mixture
            states, actions, _ = env.rollout(policy, counts)  # plays the episode, adds its transitions to counts
            ret[k], rcost[k] = r_env[states, actions].sum(), c_env[:, states, actions].sum(axis=1)
            t2 = clock()
            if scorer is not None:
                value[k], costs[k] = mixed_values(scorer.values, plan, policy)
                gap[k] = scorer.v_star - value[k]
                viol[k] = max(float(np.max(costs[k] - c_bar, initial=0.0)), 0.0)
            t3 = clock()
            planned[k], status[k], iters[k], baseline[k] = plan.value, plan.status, plan.iterations, plan.baseline
            min_visits[k] = counts.sum(-1)[visits].min()
            t_plan[k], t_act[k], t_score[k] = t1 - t0, t2 - t1, t3 - t2
            n_ep = k + 1
            if on_episode is not None:
                on_episode(n_ep, counts, policy)
            bar.update()
            if stop is not None and stop(counts):
                break
    finally:
        bar.close()
    cut = slice(0, n_ep)
    return EpisodeLog(
        gap[cut],
        viol[cut],
        value[cut],
        costs[cut],
        baseline[cut],
        planned[cut],
        status[cut].astype(str),
        iters[cut],
        min_visits[cut],
        t_plan[cut],
        t_act[cut],
        t_score[cut],
        counts,
        policy,
        ret[cut],
        rcost[cut],
        mixture,
    )


__all__ = [
    "EpisodeLog",
    "EpisodePlan",
    "EpisodePlanner",
    "Played",
    "check_same_problem",
    "mixed_values",
    "play_episodes",
]
