"""Online-CRL's episodes in compiled batches: the same episodes as
[`play_episodes`][cmdp_rl.learners.episodes.play_episodes] with
[`OnlineCRL.planner`][cmdp_rl.learners.online_crl.OnlineCRL.planner], without the Python around every episode.

One call of ``_crl_batch`` plays up to ``B`` whole episodes of Algorithm 2 (lines 4-12):
the confidence box from the counts ([`box_bounds`][cmdp_rl.confidence.radii.box_bounds]), the extended LP by
column generation warm-started from the previous plan (``cmdp_rl.kernels.colgen_loop.colgen_loop``),
the mixed policy (``cmdp_rl.kernels.colgen_loop.mix_plan``), the rollout on the environment's
kernel with uniforms drawn beforehand from the environment's generator
([`episode_uniforms`][cmdp_rl.learners.environment.EpisodicEnv.episode_uniforms], the same numbers one rollout per
episode draws), the count update and, with a scorer, the exact value and costs of the played policy
(``cmdp_rl.evaluation.evaluate.dense_forward_value_costs``). These are the compiled functions the
per-episode path calls, in the same order on the same arrays, so both paths give the same
numbers bit for bit (tested). A batch ends early where the per-episode path would do more
than the compiled loop: a master LP that fails its check, a column pool that outgrows its
room or an unconverged loop; that episode is then planned by
[`cmdp_rl.planning.elp_dense`][cmdp_rl.planning.elp_dense]'s
Python path (HiGHS fallback, larger pool) and the batch goes on.

Batches end at the episodes where the caller wants ``on_episode`` called (every episode by
default, or the given checkpoints), at the theory-mode stopping rule, and after at most
``BATCH`` episodes, fewer when episodes are slow: a compiled call lasts about
``BATCH_SECONDS``, so the progress bar moves and an interrupt (SIGINT, SIGTERM) is honoured
within about a second. The first batch is the first episode alone. Where batches end does not
change the results (the same uniforms, the same warm starts), only when Python runs.
Per-episode wall times are not measured inside a batch: each episode of a batch gets the
batch's time divided by its length as ``plan_seconds`` (planning, acting and scoring
together) and zero ``act_seconds`` and ``score_seconds``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from typing import Protocol

import numba as nb
import numpy as np
from numpy.typing import NDArray

from cmdp_rl.confidence.box import Box
from cmdp_rl.confidence.radii import box_bounds, radius_log
from cmdp_rl.evaluation.evaluate import dense_forward_value_costs
from cmdp_rl.kernels.colgen_loop import LOOP_INFEASIBLE, LOOP_OPTIMAL, colgen_loop, mix_plan, uniform_unreached
from cmdp_rl.kernels.sampling import rollout_compiled
from cmdp_rl.learners.environment import EpisodicEnv
from cmdp_rl.learners.episodes import EpisodeLog, check_same_problem
from cmdp_rl.learners.metrics import Scorer
from cmdp_rl.model.actions import full_mask, uniform_rows
from cmdp_rl.model.cmdp import KnownParts
from cmdp_rl.planning.elp_dense import FEAS_TOL, PRICE_TOL, ELPWorkspace, solve_on_arrays
from cmdp_rl.planning.result import REACH_TOL
from cmdp_rl.planning.thresholds import on_scale, trivial_range
from cmdp_rl.plumbing.interrupts import compiled_section
from cmdp_rl.plumbing.progress import progress_bar
from cmdp_rl.plumbing.threads import apply_threads
from cmdp_rl.plumbing.validation import check_positive_int

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: most episodes per compiled call (the progress bar moves between calls)
BATCH = 256
#: the wall time a compiled call aims at: signals are raised between calls
BATCH_SECONDS = 0.25


def next_batch(size: int, seconds: float) -> int:
    """Episodes in the next compiled call, after ``size`` episodes took ``seconds``: about
    ``BATCH_SECONDS`` worth, between 1 and ``BATCH``."""
    if seconds <= 0.0:
        return BATCH
    return max(1, min(BATCH, int(size * BATCH_SECONDS / seconds)))


#: column-generation rounds per phase, as ``cmdp_rl.planning.elp_dense.resolve_colgen``
MAX_ITER = 1000


class CRLSettings(Protocol):
    """What [`play_crl_batched`][cmdp_rl.learners.batched.play_crl_batched] reads of its learner: an
    [`OnlineCRL`][cmdp_rl.learners.online_crl.OnlineCRL] (which calls this module, so the learner is typed by what it
    provides, not by its class)."""

    @property
    def known(self) -> KnownParts:
        """The known parts of the problem."""

    @property
    def delta_1(self) -> float:
        """The per-entry failure probability of the confidence radii."""

    @property
    def radius_rule(self) -> str:
        """The radius rule ([`RADII`][cmdp_rl.plumbing.names.RADII])."""


@nb.njit(cache=True)
def _crl_batch(
    counts: np.ndarray,
    L: np.ndarray,
    valid: bool,
    r: np.ndarray,
    c: np.ndarray,
    c_bar: np.ndarray,
    s0: int,
    H: int,
    warm_a: np.ndarray,
    warm_o: np.ndarray,
    duals: np.ndarray,
    cum_kernel: np.ndarray,
    u: np.ndarray,
    P: np.ndarray,
    r_true: np.ndarray,
    c_true: np.ndarray,
    score: bool,
    stop_count: int,
    planned: np.ndarray,
    status: np.ndarray,
    iters: np.ndarray,
    min_visits: np.ndarray,
    value: np.ndarray,
    costs: np.ndarray,
    r_env: np.ndarray,
    c_env: np.ndarray,
    ret: np.ndarray,
    rcost: np.ndarray,
    avail: np.ndarray,
    policy: np.ndarray,
) -> tuple[int, bool, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Play the episodes of ``u (B, H, 2)``; see the module docstring.

    ``counts`` is updated in place; episode ``b``'s planned value, loop outcome
    (``LOOP_OPTIMAL`` or ``LOOP_INFEASIBLE``), iterations and ``min n(s, a)`` after it
    go to ``planned[b]``, ``status[b]``, ``iters[b]``, ``min_visits[b]``; with ``score`` its
    exact value and ``(N,)`` costs on the true model ``P, r_true, c_true`` to ``value[b]``, ``costs[b]``;
    the realized reward and cost sums of the episode (the environment's ``r_env``, ``c_env``) to
    ``ret[b]`` and ``rcost[b]``.

    Returns ``(played, stopped, warm_a, warm_o, duals, policy, last_state)``: the episodes
    played (fewer than ``B`` when episode ``played`` needs the Python path, or when the
    stopping rule ``min n(s, a) >= stop_count > 0`` held after episode ``played - 1``, then
    ``stopped``), the warm start for the next plan (active columns, duals: empty unless the
    last plan was feasible), the last policy played and the state the last episode ended in.
    ``avail (S, A)``: the available actions (no plan plays another; ``min n(s, a)`` is over the
    available pairs); ``policy``: the last policy played (returned when no episode is).
    """
    B = u.shape[0]
    S, A = r.shape
    N = c.shape[0]
    last = s0
    for b in range(B):
        lower, _upper, room, spare = box_bounds(counts, L, valid)
        cap = warm_a.shape[0] + 16
        # np.int64: a bare global int is a numba literal, which would compile colgen_loop a second time
        code, it, K, w, lam, pa, po, pd, pv, pc, _ = colgen_loop(
            lower,
            room,
            spare,
            r,
            c,
            c_bar,
            s0,
            H,
            warm_a,
            warm_o,
            duals,
            np.int64(MAX_ITER),
            FEAS_TOL,
            PRICE_TOL,
            cap,
            avail,
        )
        if code != LOOP_OPTIMAL and code != LOOP_INFEASIBLE:
            return b, False, warm_a, warm_o, duals, policy, last
        wn, mu, policy, val, _mixed = mix_plan(w, pa[:K], pd[:K], pv[:K], pc[:K], A, REACH_TOL)
        uniform_unreached(policy, mu, avail, REACH_TOL)
        active = 0
        for k in range(K):
            if wn[k] > 0.0:
                active += 1
        warm_a = np.empty((active, H, S), dtype=np.int64)
        warm_o = np.empty((active, H, S), dtype=np.int64)
        j = 0
        for k in range(K):
            if wn[k] > 0.0:
                warm_a[j] = pa[k]
                warm_o[j] = po[k]
                j += 1
        duals = lam.copy() if code == LOOP_OPTIMAL else np.zeros(0)
        states, actions, nexts = rollout_compiled(policy, cum_kernel, s0, u[b], counts)
        last = nexts[H - 1]
        for h in range(H):
            ret[b] += r_env[states[h], actions[h]]
            for i in range(N):
                rcost[b, i] += c_env[i, states[h], actions[h]]
        least = -1
        for s in range(S):
            for a in range(A):
                n = counts[s, a].sum()
                if avail[s, a] and (least < 0 or n < least):
                    least = n
        planned[b] = val
        status[b] = code
        iters[b] = it
        min_visits[b] = least
        if score:
            v, cs = dense_forward_value_costs(P, policy, r_true, c_true, s0)
            value[b] = v
            for i in range(N):
                costs[b, i] = cs[i]
        if stop_count > 0 and least >= stop_count:
            return b + 1, True, warm_a, warm_o, duals, policy, last
    return B, False, warm_a, warm_o, duals, policy, last


class _CompiledRun:
    """One run of [`play_crl_batched`][cmdp_rl.learners.batched.play_crl_batched]: the counts, the warm
    start of the next plan, the last policy and state, and the per-episode outputs (``K`` entries)."""

    def __init__(self, learner: CRLSettings, env: EpisodicEnv, K: int, scorer: Scorer | None, stop: int) -> None:
        known = self.known = learner.known
        S, A, H, N = known.S, known.A, known.H, known.N
        self.learner, self.env, self.scorer, self.stop = learner, env, scorer, stop
        self.counts = np.zeros((S, A, S), dtype=np.int64)
        self.planned, self.value = np.empty(K), np.full(K, np.nan)
        self.costs = np.full((K, N), np.nan)
        self.code = np.zeros(K, dtype=np.int64)
        self.iters, self.min_visits = np.zeros(K, dtype=np.int64), np.zeros(K, dtype=np.int64)
        self.t_plan = np.zeros(K)
        self.ret, self.rcost = np.zeros(K), np.zeros((K, N))
        self.r_env, self.c_env = env.cmdp.r, env.cmdp.c
        self.L = radius_log(learner.delta_1, (S, A), learner.radius_rule)
        self.valid = learner.radius_rule == "empirical-bernstein"
        self.r, self.c, self.c_bar = (
            np.ascontiguousarray(x, dtype=np.float64) for x in (known.r, known.c, known.c_bar)
        )
        # the planner's thresholds on the costs' scale (the same extended LP; solve_on_arrays does the same)
        self.b_plan = on_scale(self.c_bar, *trivial_range(self.c, H)).b if N else self.c_bar
        self.warm_a = self.warm_o = np.zeros((0, H, S), dtype=np.int64)
        self.duals = np.zeros(0)
        true = scorer.cmdp if scorer is not None else None
        self.P = (
            true.dense_kernel("scoring Online-CRL's compiled episodes") if true is not None else np.zeros((0, 0, 0))
        )
        self.r_true, self.c_true = (self.r, self.c) if true is None else (true.r, true.c)
        self.avail = full_mask(known.actions, S, A)
        self.policy = np.ascontiguousarray(np.broadcast_to(uniform_rows(known.actions, S, A), (H, S, A)))
        self.last = known.s0
        self.workspace: ELPWorkspace | None = None

    def batch(self, k: int, end: int) -> tuple[int, bool]:
        """Play episodes ``k .. end - 1`` (compiled, each one the compiled loop cannot finish on the
        Python path): ``(episodes played, stopped by the rule)``. The environment's generator and
        state advance by exactly the episodes played."""
        env = self.env
        rng_state = env.rng.bit_generator.state
        u = env.episode_uniforms(end - k)
        pos, stopped = 0, False
        apply_threads(
            launch=True
        )  # each plan's EVI sweeps (kernels/evi.py): the states over the threads, big kernels only
        while pos < end - k and not stopped:
            out = slice(k + pos, end)
            with compiled_section(_crl_batch):
                done, stopped, self.warm_a, self.warm_o, self.duals, self.policy, self.last = _crl_batch(
                    self.counts, self.L, self.valid, self.r, self.c, self.b_plan, self.known.s0, self.known.H,
                    self.warm_a, self.warm_o, self.duals, env.cum_kernel, u[pos:], self.P, self.r_true, self.c_true,
                    self.scorer is not None, self.stop, self.planned[out], self.code[out], self.iters[out],
                    self.min_visits[out], self.value[out], self.costs[out], self.r_env, self.c_env, self.ret[out],
                    self.rcost[out], self.avail, self.policy,
                )  # fmt: skip
            pos += done
            if pos == end - k or stopped:
                break
            stopped = self.python_episode(k + pos, u[pos])  # HiGHS fallback or a larger pool
            pos += 1
        if pos < end - k:  # stopped early: draw exactly the uniforms of the episodes played
            env.rng.bit_generator.state = rng_state
            env.episode_uniforms(pos)
        env.played(pos, self.last)
        return pos, stopped

    def python_episode(self, b: int, u: Array) -> bool:
        """Episode ``b`` on [`cmdp_rl.planning.elp_dense`][cmdp_rl.planning.elp_dense]'s Python path, with
        the uniforms ``u (H, 2)``: whether the stopping rule holds after it."""
        known, learner, counts = self.known, self.learner, self.counts
        if self.workspace is None:
            self.workspace = ELPWorkspace()
        box = Box.from_counts(counts, learner.delta_1, learner.radius_rule)
        plan = solve_on_arrays(
            box, self.r, self.c, self.c_bar, known.s0, known.H, self.warm_a, self.warm_o, self.duals, MAX_ITER, False,
            self.workspace, known.actions,
        )  # fmt: skip
        self.policy = plan.policy
        st, ac, nexts = rollout_compiled(self.policy, self.env.cum_kernel, known.s0, u, counts)
        self.last = int(nexts[-1])
        self.ret[b], self.rcost[b] = self.r_env[st, ac].sum(), self.c_env[:, st, ac].sum(axis=1)
        self.planned[b], self.iters[b] = plan.value, plan.iterations
        self.code[b] = LOOP_OPTIMAL if plan.feasible else LOOP_INFEASIBLE
        self.min_visits[b] = counts.sum(-1)[self.avail].min()
        if self.scorer is not None:
            self.value[b], self.costs[b] = self.scorer.values(self.policy)
        self.warm_a, self.warm_o = plan.info["warm"]
        self.duals = plan.info["duals"] if plan.info["duals"] is not None else np.zeros(0)
        return self.stop > 0 and self.min_visits[b] >= self.stop

    def log(self, k: int) -> EpisodeLog:
        """The [`EpisodeLog`][cmdp_rl.learners.episodes.EpisodeLog] of the first ``k`` episodes."""
        cut = slice(0, k)
        gap, viol = np.full(k, np.nan), np.full(k, np.nan)
        if self.scorer is not None:
            gap = self.scorer.v_star - self.value[cut]
            viol = np.maximum(np.max(self.costs[cut] - self.c_bar, axis=1, initial=0.0), 0.0)
        status = np.where(self.code[cut] == LOOP_OPTIMAL, "optimistic", "infeasible")
        return EpisodeLog(
            gap,
            viol,
            self.value[cut],
            self.costs[cut],
            np.zeros(k, dtype=bool),
            self.planned[cut],
            status,
            self.iters[cut],
            self.min_visits[cut],
            self.t_plan[cut],
            np.zeros(k),
            np.zeros(k),
            self.counts,
            self.policy,
            self.ret[cut],
            self.rcost[cut],
        )


def play_crl_batched(
    learner: CRLSettings,
    env: EpisodicEnv,
    episodes: int,
    scorer: Scorer | None = None,
    progress: bool = False,
    stop_count: int | None = None,
    on_episode: Callable[[int, IntArray, Array], None] | None = None,
    checkpoints: Collection[int] | None = None,
    desc: str = "Online-CRL episodes",
) -> EpisodeLog:
    """Online-CRL's episode loop in compiled batches (module docstring); the same
    [`EpisodeLog`][cmdp_rl.learners.episodes.EpisodeLog] as [`play_episodes`][cmdp_rl.learners.episodes.play_episodes]
    with the learner's planner.

    Args:
        learner: an Online-CRL learner (``known``, ``delta_1``, ``radius_rule``).
        env: the episodic environment (owns the random generator).
        episodes: the budget ``K``.
        scorer: exact scoring on the true model, or ``None``.
        progress: show a progress bar.
        stop_count: end the run once every ``n(s, a) >= stop_count`` (theory mode), or ``None``.
        on_episode: called with ``(k, counts, policy)`` after episode ``k``: after every
            episode, or only after the episodes in ``checkpoints`` when given.
        checkpoints: the episodes (1-based) after which ``on_episode`` is called.
        desc: the progress bar's label.
    """
    check_same_problem(learner.known, env, scorer)
    K = check_positive_int("episodes", episodes)
    if stop_count is not None:
        stop_count = check_positive_int("stop_count", stop_count)
    run = _CompiledRun(learner, env, K, scorer, 0 if stop_count is None else int(stop_count))
    marks = None if on_episode is None else (None if checkpoints is None else {int(k) for k in checkpoints})
    clock = time.perf_counter
    # the first batch is one episode: the kernels' first call (cache load or compilation) then
    # lands on episode 1 only, as in the one-by-one loop, not on a whole batch's times
    k, size = 0, 1
    bar = progress_bar(K, desc, "ep", show=progress)
    try:
        while k < K:
            end = min(K, k + size)
            if on_episode is not None:  # the batch ends where on_episode is due
                end = k + 1 if marks is None else min([end, *(m for m in marks if k < m < end)])
            t0 = clock()
            pos, stopped = run.batch(k, end)
            elapsed = clock() - t0
            run.t_plan[k : k + pos] = elapsed / pos
            size = next_batch(pos, elapsed)
            k += pos
            bar.update(pos)
            if on_episode is not None and (marks is None or k in marks):
                on_episode(k, run.counts, run.policy)
            if stopped:
                break
    finally:
        bar.close()
    return run.log(k)
