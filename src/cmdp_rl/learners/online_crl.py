"""Online-CRL (paper Algorithm 2): re-plan optimistically before every episode, act, count."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from cmdp_rl.confidence.counts import check_counts
from cmdp_rl.confidence.radii import delta_1, rule_radius
from cmdp_rl.confidence.sample_size import online_crl_bounds
from cmdp_rl.confidence.sets import confidence_box, rule_box
from cmdp_rl.learners.base import LearnerRecord, OnlineLearner, check_bonus_scale, record_fields
from cmdp_rl.learners.batched import play_crl_batched
from cmdp_rl.learners.environment import EpisodicEnv
from cmdp_rl.learners.episodes import EpisodePlan, EpisodePlanner, Played, play_episodes
from cmdp_rl.learners.metrics import Scorer
from cmdp_rl.learners.replan import plan_status
from cmdp_rl.model.cmdp import CMDP, KnownParts
from cmdp_rl.planning.elp import plan_on_box
from cmdp_rl.planning.elp_dense import ELPWorkspace
from cmdp_rl.planning.result import PlanResult
from cmdp_rl.plumbing.limits import check_allocation, grid_covers_integers
from cmdp_rl.plumbing.names import METHODS, RADII
from cmdp_rl.plumbing.validation import (
    CMDPInputError,
    CMDPTypeError,
    check_choice,
    check_positive_int,
)

Array = NDArray[np.float64]


@dataclass(frozen=True, kw_only=True)
class OnlineCRLResult(LearnerRecord):
    """Per-episode record of one Online-CRL run: a
    [`LearnerRecord`][cmdp_rl.learners.records.LearnerRecord] (arrays have one entry per episode)
    with Algorithm 2's own quantities.

    Attributes:
        delta_1, U: the per-entry failure probability and union-bound count used.
        stopped: ``"budget"``, ``"theory"`` (every ``n(s,a) >= |S| m H``) or ``"max_episodes"``.
    """

    delta_1: float
    U: float
    stopped: str

    @property
    def optimistic_value(self) -> Array:
        """``(K,)`` the ELP's optimistic value (``planned_value``)."""
        return self.planned_value

    @property
    def infeasible(self) -> NDArray[np.bool_]:
        """``(K,)`` whether the ELP was infeasible before episode k."""
        out: NDArray[np.bool_] = self.episode_status == "infeasible"
        return out

    @property
    def replan_iterations(self) -> NDArray[np.int64]:
        """``(K,)`` column-generation (or LP) iterations of each re-plan (``iterations``)."""
        return self.iterations


class OnlineCRL(OnlineLearner):
    """Online Constrained RL, an [`OnlineLearner`][cmdp_rl.learners.base.OnlineLearner].

    The learner keeps ``r``, ``c``, ``c_bar``, ``s0`` and ``H`` (``known``) and never reads a
    kernel; it learns from episodes of an
    [`EpisodicEnv`][cmdp_rl.learners.environment.EpisodicEnv] (or from the counts
    [`learn`][cmdp_rl.simulators.learning.learn] gives its planner).

    Args:
        cmdp: what is known of the problem (``KnownParts``), or a ``CMDP`` whose known parts are
            kept (``P`` is never read).
        delta: failure probability; the radii use ``delta_1`` (Algorithm 2).
        episodes: budget mode: play ``K`` episodes; the union bound counts
            ``U = K`` model updates.
        eps: theory mode: ``m`` from eq. "m", ``U = U_max``, stop when every
            ``n(s, a) >= |S| m H`` (or after ``max_episodes``, which is then required
            because the theory's count is astronomically large).
        method: extended-LP method, ``"fast"`` (warm-started) or ``"lp"``.
        warm_start: re-use the previous episode's columns (``"fast"`` only).
        radius: the radius rule at ``delta_1``: ``"paper"`` (eq. "bernstein-hoeffding", the
            default, for reproduction) or ``"empirical-bernstein"`` (a valid bound,
            [`empirical_bernstein_radius`][cmdp_rl.confidence.radii.empirical_bernstein_radius]).
        statistics: ``"dense"`` (``(S, A, S)`` counts, the model path's) or ``"sparse"``: the
            planner takes ``(S*A, S)`` CSR counts of the visited transitions only and plans on
            their sparse confidence set ([`solve_sparse_elp`][cmdp_rl.planning.elp_sparse.solve_sparse_elp]),
            so no ``(S, A, S)`` array exists (what [`learn`][cmdp_rl.simulators.learning.learn] uses on large
            simulators).
        bonus_scale: accepted as by every learner and ignored: Online-CRL has no bonus (its
            optimism is the confidence set); it must still be a number >= 0.
    """

    name: ClassVar[str] = "online-crl"
    column_plans: ClassVar[bool] = True

    def __init__(
        self,
        cmdp: CMDP | KnownParts,
        delta: float = 0.1,
        *,
        episodes: int | None = None,
        eps: float | None = None,
        max_episodes: int | None = None,
        method: str = "fast",
        warm_start: bool = True,
        radius: str = "paper",
        statistics: str = "dense",
        bonus_scale: float = 1.0,
    ) -> None:
        # the base's steps, with Online-CRL's own budget: K episodes, or eps and max_episodes
        self._take_problem(cmdp, delta, statistics, "Online-CRL")
        self.radius_rule = check_choice("radius", radius, RADII)
        if (episodes is None) == (eps is None):
            raise CMDPInputError("episodes/eps: give exactly one (budget mode or theory mode)")
        check_choice("method", method, METHODS)
        if not isinstance(warm_start, (bool, np.bool_)):
            raise CMDPTypeError(f"warm_start: must be True or False, got {type(warm_start).__name__}")
        self.method, self.warm_start = method, bool(warm_start)
        if eps is not None:
            k = self.known
            b = online_crl_bounds(k.S, k.A, k.H, k.N, eps, self.delta)
            if max_episodes is None:
                raise CMDPInputError(
                    f"max_episodes: required in theory mode (the stopping rule needs "
                    f"every n(s,a) >= |S| m H = {b.stop_count:.3g})"
                )
            self.max_episodes = check_positive_int("max_episodes", max_episodes)
            self.U: float = float(b.U_max)
            self.stop_count: int | None = b.stop_count
        else:
            self.max_episodes = check_positive_int("episodes", episodes)
            self.U = float(self.max_episodes)
            self.stop_count = None
        self.episodes = self.max_episodes
        self.bonus_scale = check_bonus_scale(bonus_scale)
        self.delta_1 = delta_1(self.delta, self.known.S, self.known.N, self.U)

    def settings(self) -> dict[str, Any]:
        """The parameters recorded with every run: ``delta``, ``episodes`` (the budget, or
        ``max_episodes`` in theory mode) and ``radius`` (no ``bonus_scale``: there is no bonus)."""
        return {"delta": self.delta, "episodes": self.max_episodes, "radius": self.radius_rule}

    def radius(self, p_hat: Array, n: NDArray[np.int64]) -> Array:
        """The ``(S, A, S)`` confidence radii of the set Online-CRL plans over (eq.
        "bernstein-hoeffding" with ``delta_1``, or the valid rule chosen by ``radius=``)."""
        return rule_radius(p_hat, n, self.delta_1, self.radius_rule)

    def replan(
        self,
        counts: NDArray[np.int64] | sp.csr_array,
        previous: PlanResult | None,
        workspace: ELPWorkspace | None = None,
    ) -> PlanResult:
        """Lines 6-8 of Algorithm 2: empirical model, confidence set, ELP.

        ``counts``: ``(S, A, S)`` dense, or ``(S*A, S)`` CSR (visited transitions only: the
        sparse confidence set and extended LP, [`cmdp_rl.planning.elp_sparse`][cmdp_rl.planning.elp_sparse]).
        [`plan_on_box`][cmdp_rl.planning.elp.plan_on_box] plans on the set of either layout.

        ``method="fast"``: column generation over the box, warm-started from ``previous`` (this
        learner's last plan); ``"lp"``: the literal ELP (dense counts; sparse ones are planned by
        column generation).
        """
        if self.method == "lp":  # the literal ELP's box: from_radius(p_hat, radius(p_hat, n)) (sparse: the same set)
            box = rule_box(check_counts(counts)[0], self.delta_1, self.radius_rule)
        else:  # one compiled pass (sparse: the visited transitions' set)
            box = confidence_box(counts, self.delta_1, self.radius_rule)
        warm = previous if self.warm_start else None
        return plan_on_box(self.known, box, warm, method=self.method, workspace=workspace, want_kernel=False)

    def planner(self) -> EpisodePlanner:
        """Algorithm 2's planner for [`play_episodes`][cmdp_rl.learners.episodes.play_episodes]: each call
        re-plans from the counts, warm-started from its previous plan, with its own master-LP
        workspace (one planner per run; [`fit`][cmdp_rl.learners.online_crl.OnlineCRL.fit] makes one)."""
        workspace = ELPWorkspace()  # this run's own master-LP solver (thread-safe by ownership)
        state: dict[str, PlanResult | None] = {"plan": None}

        def plan_next(counts: NDArray[np.int64]) -> EpisodePlan:
            plan = self.replan(counts, state["plan"], workspace)
            state["plan"] = plan
            return EpisodePlan(self.played(plan), plan_status(plan), plan.value, plan.iterations)

        return plan_next

    def fit(
        self,
        env: EpisodicEnv,
        scorer: Scorer | None = None,
        progress: bool = False,
        on_episode: Callable[[int, NDArray[np.int64], Played], None] | None = None,
        checkpoints: Collection[int] | None = None,
        batched: bool | None = None,
    ) -> OnlineCRLResult:
        """Run Algorithm 2; score every episode's policy exactly when ``scorer`` is given.

        Args:
            env: the episodic environment.
            scorer: exact scoring on the true model, or ``None``.
            progress: show a progress bar.
            on_episode: ``on_episode(k, counts, policy)`` is called after episode ``k``:
                after every episode, or only after those in ``checkpoints``.
            checkpoints: the episodes (1-based) after which ``on_episode`` is called.
            batched: play the episodes in compiled batches ([`batched`][cmdp_rl.learners.batched]; the same numbers
                as one by one, tested) or one by one through
                [`play_episodes`][cmdp_rl.learners.episodes.play_episodes]. Default: batched for the
                fast method with warm starts playing tables (the other settings, and mixtures
                played, ``configure_play``, always go one by one).
                Batches time whole batches, not the plan/act/score parts of each episode.

        Raises:
            ValueError: ``env`` or ``scorer`` describe a problem of other sizes than the learner's.
        """
        self.check_fit()
        stop_count = self.stop_count
        can_batch = self.method == "fast" and self.warm_start and not self.plays_mixtures
        if batched is not None and not isinstance(batched, (bool, np.bool_)):
            raise CMDPTypeError(f"batched: must be True, False or None, got {type(batched).__name__}")
        if batched and not can_batch:
            raise CMDPInputError(
                "batched: needs method='fast', warm_start=True (the compiled re-plan) and Markov tables played "
                "(configure_play: the compiled batch plays tables)"
            )
        if checkpoints is not None:
            checkpoints = {check_positive_int("checkpoints", k) for k in checkpoints}
        if can_batch and batched is not False:
            log = play_crl_batched(self, env, self.max_episodes, scorer, progress, stop_count, on_episode, checkpoints)
        else:
            marks = checkpoints
            call = on_episode
            if on_episode is not None and marks is not None:

                def call(k: int, counts: NDArray[np.int64], policy: Played) -> None:
                    if k in marks:
                        on_episode(k, counts, policy)

            stop = None if stop_count is None else (lambda counts: bool(counts.sum(-1).min() >= stop_count))
            log = play_episodes(
                self.known,
                self.planner(),
                env,
                self.max_episodes,
                scorer,
                progress,
                stop,
                desc="Online-CRL episodes",
                on_episode=call,
            )
        stopped = "budget" if stop_count is None else "max_episodes"
        if stop_count is not None and log.min_visits[-1] >= stop_count:
            stopped = "theory"
        return self.hand_over(
            OnlineCRLResult(
                **record_fields(self.name, log, self.reported(), self.settings(), None, self.units),
                delta_1=self.delta_1,
                U=self.U,
                stopped=stopped,
            )
        )


def checkpoints(K: int, points: int = 30) -> NDArray[np.int64]:
    """Log-spaced episode indices ``1 .. K`` (unique, increasing, always ending at ``K``).

    Args:
        K: the last episode (>= 1).
        points: how many log-spaced points to aim for (>= 1; rounding may merge some,
            ``points = 1`` gives ``[K]``).
    """
    K = check_positive_int("K", K)
    points = check_positive_int("points", points)
    if points == 1:
        return np.array([K], dtype=np.int64)
    if grid_covers_integers(1, K, points):  # every episode: no grid of ``points`` values needed
        check_allocation("points", 8.0 * K, f"recording every one of K = {K} episodes")
        return np.arange(1, K + 1, dtype=np.int64)
    check_allocation("points", 8.0 * points, f"a grid of {points} checkpoints")
    grid = np.unique(np.round(np.logspace(0, np.log10(K), points)).astype(np.int64))
    grid = np.clip(grid, 1, K)
    return np.unique(np.append(grid, K))


__all__: Sequence[str] = ["OnlineCRL", "OnlineCRLResult", "checkpoints"]
