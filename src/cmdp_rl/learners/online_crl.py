"""Online-CRL (paper Algorithm 2): re-plan optimistically before every episode, act, count."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from ..confidence import RADII, delta_1, empirical_kernel, rule_radius
from ..model import CMDP
from ..planning.colgen import ELPWorkspace
from ..planning.elp import METHODS, solve_elp
from ..planning.result import PlanResult
from ..theory import online_crl_bounds
from ..validation import CMDPInputError, check_choice, check_open_unit, check_positive_int
from .environment import EpisodicEnv, check_cmdp
from .episodes import EpisodePlan, EpisodePlanner, play_episodes
from .metrics import Scorer

Array = NDArray[np.float64]


@dataclass(frozen=True)
class OnlineCRLResult:
    """Per-episode record of one Online-CRL run (arrays have one entry per episode).

    Attributes:
        value_gap: ``(K,)`` exact ``V* - V^{pi_k}(s0)`` of the policy played in episode k.
        violation: ``(K,)`` exact ``max_i max(C_i^{pi_k} - c_bar_i, 0)``.
        optimistic_value: ``(K,)`` the ELP's optimistic value.
        infeasible: ``(K,)`` whether the ELP was infeasible before episode k.
        min_visits: ``(K,)`` ``min_{s,a} n(s, a)`` after episode k.
        counts: ``(S, A, S)`` final transition counts.
        policy: ``(H, S, A)`` the last policy played.
        H: episode length (samples after k episodes are ``k * H``).
        delta_1, U: the per-entry failure probability and union-bound count used.
        stopped: ``"budget"``, ``"theory"`` (every ``n(s,a) >= |S| m H``) or ``"max_episodes"``.
        replan_iterations: ``(K,)`` column-generation (or LP) iterations of each re-plan.
        plan_seconds, act_seconds, score_seconds: ``(K,)`` wall time of each episode's
            re-plan, rollout and counting, and exact scoring (informational).
    """

    value_gap: Array
    violation: Array
    optimistic_value: Array
    infeasible: NDArray[np.bool_]
    min_visits: NDArray[np.int64]
    counts: NDArray[np.int64]
    policy: Array
    H: int
    delta_1: float
    U: float
    stopped: str
    replan_iterations: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))
    plan_seconds: Array = field(default_factory=lambda: np.zeros(0))
    act_seconds: Array = field(default_factory=lambda: np.zeros(0))
    score_seconds: Array = field(default_factory=lambda: np.zeros(0))

    @property
    def episodes(self) -> int:
        return int(self.value_gap.size)

    @property
    def samples(self) -> NDArray[np.int64]:
        """``(K,)`` samples drawn after each episode, ``k * H``."""
        return np.arange(1, self.episodes + 1) * self.H

    def bad_episodes(self, eps: float) -> int:
        """Episodes whose policy was not eps-optimal or not eps-feasible (Theorem 2's count)."""
        return int(np.sum((self.value_gap > eps) | (self.violation > eps)))


class OnlineCRL:
    """Online Constrained RL.

    The learner knows ``r``, ``c``, ``c_bar``, ``s0`` and ``H`` from ``cmdp`` and
    never reads ``cmdp.P``; it learns from episodes of an :class:`EpisodicEnv`.

    Args:
        cmdp: the known parts of the problem.
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
            :func:`cmdp_rl.confidence.empirical_bernstein_radius`).
    """

    def __init__(
        self,
        cmdp: CMDP,
        delta: float = 0.1,
        *,
        episodes: int | None = None,
        eps: float | None = None,
        max_episodes: int | None = None,
        method: str = "fast",
        warm_start: bool = True,
        radius: str = "paper",
    ) -> None:
        self.cmdp = check_cmdp("cmdp", cmdp)
        self.radius_rule = check_choice("radius", radius, RADII)
        self.delta = check_open_unit("delta", delta)
        if (episodes is None) == (eps is None):
            raise CMDPInputError("episodes/eps: give exactly one (budget mode or theory mode)")
        check_choice("method", method, METHODS)
        if not isinstance(warm_start, (bool, np.bool_)):
            raise TypeError(f"warm_start: must be True or False, got {type(warm_start).__name__}")
        self.method, self.warm_start = method, bool(warm_start)
        if eps is not None:
            b = online_crl_bounds(cmdp.S, cmdp.A, cmdp.H, cmdp.N, eps, self.delta)
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
        self.delta_1 = delta_1(self.delta, cmdp.S, cmdp.N, self.U)

    def radius(self, p_hat: Array, n: NDArray[np.int64]) -> Array:
        """The ``(S, A, S)`` confidence radii of the set Online-CRL plans over (eq.
        "bernstein-hoeffding" with ``delta_1``, or the valid rule chosen by ``radius=``)."""
        return rule_radius(p_hat, n, self.delta_1, self.radius_rule)

    def replan(
        self, counts: NDArray[np.int64], previous: PlanResult | None, workspace: ELPWorkspace | None = None
    ) -> PlanResult:
        """Lines 6-8 of Algorithm 2: empirical model, confidence set, ELP (through :func:`solve_elp`)."""
        p_hat, n = empirical_kernel(counts)
        beta = self.radius(p_hat, n)
        warm = previous if (self.method == "fast" and self.warm_start) else None
        return solve_elp(
            self.cmdp,
            p_hat,
            beta,
            method=self.method,
            warm_start=warm,
            want_kernel=self.method == "lp",
            workspace=workspace,
        )

    def planner(self) -> EpisodePlanner:
        """Algorithm 2's planner for :func:`~cmdp_rl.learners.episodes.play_episodes`: each call
        re-plans from the counts, warm-started from its previous plan, with its own master-LP
        workspace (one planner per run; :meth:`fit` makes one)."""
        workspace = ELPWorkspace()  # this run's own master-LP solver (thread-safe by ownership)
        state: dict[str, PlanResult | None] = {"plan": None}

        def plan_next(counts: NDArray[np.int64]) -> EpisodePlan:
            plan = self.replan(counts, state["plan"], workspace)
            state["plan"] = plan
            return EpisodePlan(plan.policy, plan.status, plan.value, plan.iterations)

        return plan_next

    def fit(
        self,
        env: EpisodicEnv,
        scorer: Scorer | None = None,
        progress: bool = False,
        on_episode: Callable[[int, NDArray[np.int64], Array], None] | None = None,
    ) -> OnlineCRLResult:
        """Run Algorithm 2; score every episode's policy exactly when ``scorer`` is given.

        ``on_episode(k, counts, policy)`` is called after every episode (see
        :func:`~cmdp_rl.learners.episodes.play_episodes`).

        Raises:
            ValueError: ``env`` or ``scorer`` describe a problem of other sizes than the learner's.
        """
        plan_next = self.planner()
        stop_count = self.stop_count
        stop = None if stop_count is None else (lambda counts: bool(counts.sum(-1).min() >= stop_count))
        log = play_episodes(
            self.cmdp,
            plan_next,
            env,
            self.max_episodes,
            scorer,
            progress,
            stop,
            desc="Online-CRL episodes",
            on_episode=on_episode,
        )
        stopped = "budget" if stop_count is None else "max_episodes"
        if stop_count is not None and log.min_visits[-1] >= stop_count:
            stopped = "theory"
        return OnlineCRLResult(
            log.value_gap,
            log.violation,
            log.planned_value,
            log.status == "infeasible",
            log.min_visits,
            log.counts,
            log.policy,
            self.cmdp.H,
            self.delta_1,
            self.U,
            stopped,
            log.iterations,
            log.plan_seconds,
            log.act_seconds,
            log.score_seconds,
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
    grid = np.unique(np.round(np.logspace(0, np.log10(K), points)).astype(np.int64))
    grid = np.clip(grid, 1, K)
    return np.unique(np.append(grid, K))


__all__: Sequence[str] = ["OnlineCRL", "OnlineCRLResult", "checkpoints"]
