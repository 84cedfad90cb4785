"""The interface every online CMDP learner implements, and the one run record they all return.

A learner is built from what is known about the problem, its
[`KnownParts`][cmdp_rl.model.cmdp.KnownParts] (``r, c, c_bar, s0, H``: the rewards and costs or
their estimates, the thresholds, the start and the horizon, never ``P``), and learns the kernel
from counts: ``OnlineCRL(known, delta, episodes=K, ...)``, or ``OnlineCRL(model, ...)`` with a
[`CMDP`][cmdp_rl.model.cmdp.CMDP], whose known parts it takes. Every online learner is an
[`OnlineLearner`][cmdp_rl.learners.base.OnlineLearner] (Online-CRL included). It supplies one thing,
its planner ("the next episode's policy from the counts and the learner's own state",
[`EpisodePlanner`][cmdp_rl.learners.episodes.EpisodePlanner]); the library's one episode loop
([`play_episodes`][cmdp_rl.learners.episodes.play_episodes]) does the rest, the same way for every learner,
and [`OnlineLearner.fit`][cmdp_rl.learners.base.OnlineLearner.fit] turns its log into a
[`LearnerRecord`][cmdp_rl.learners.base.LearnerRecord]. Where the rewards and costs are estimated as
the learner goes (a simulator, [`learn`][cmdp_rl.simulators.learning.learn]), the estimates are handed
to it before each plan by [`OnlineLearner.update_known`][cmdp_rl.learners.base.OnlineLearner.update_known];
its planner reads ``known`` when it plans.

Episode statuses (``LearnerRecord.episode_status``, one per episode, ``EPISODE_STATUSES``):
``"optimistic"`` (the learner's own plan was solved and played; for ``plugin`` the
certainty-equivalent plan), ``"baseline"`` (a safe learner played its safe baseline by rule:
DOPE's first ``K0`` episodes, OptPess-LP's failed safety test) and ``"infeasible"`` (the
planning problem had no feasible policy: the safe learners then play the baseline, the others
the plan of least worst excess). The record's own ``status`` is the last episode's, in the one
vocabulary of every result type ([`RESULT_STATUSES`][cmdp_rl.plumbing.names.RESULT_STATUSES]):
``"optimal"`` for ``"optimistic"``, else ``"baseline"`` or ``"infeasible"``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from cmdp_rl.learners.environment import EpisodicEnv
from cmdp_rl.learners.episodes import EpisodeLog, EpisodePlanner, play_episodes
from cmdp_rl.learners.metrics import Scorer
from cmdp_rl.model.cmdp import CMDP, KnownParts
from cmdp_rl.model.sparse import check_dense_statistics, dense_bytes
from cmdp_rl.plumbing.limits import check_allocation
from cmdp_rl.plumbing.validation import (
    CMDPInputError,
    CMDPTypeError,
    as_float,
    check_choice,
    check_positive_int,
    check_probability,
    plain,
)

Array = NDArray[np.float64]

#: planning statuses of an episode (module docstring; ``LearnerRecord.episode_status``)
EPISODE_STATUSES: tuple[str, ...] = ("optimistic", "baseline", "infeasible")
#: the former name of ``EPISODE_STATUSES``
STATUSES = EPISODE_STATUSES
#: the record's own status (``LearnerRecord.status``) for its last episode's status
RECORD_STATUS: dict[str, str] = {"optimistic": "optimal", "baseline": "baseline", "infeasible": "infeasible"}
#: how a learner keeps its transition counts (``OnlineLearner(statistics=...)``)
STATISTICS: tuple[str, ...] = ("dense", "sparse")
#: a played policy violates when a true cost exceeds its threshold by more than this
VIOLATION_TOL = 1e-9


@dataclass(frozen=True, kw_only=True)
class LearnerRecord:
    """One run of an online learner: per-episode arrays (length ``K``) and the final state.

    Attributes:
        algorithm: the learner's name (``"online-crl"``, ``"plugin"``, ``"dope"``, ...).
        value_gap: ``(K,)`` exact ``V* - V^{pi_k}(s0)`` of the policy played in episode ``k``
            (``nan`` without a scorer).
        violation: ``(K,)`` exact ``max_i max(C_i^{pi_k} - c_bar_i, 0)``.
        value: ``(K,)`` exact ``V^{pi_k}(s0)`` on the true model.
        costs: ``(K, N)`` exact ``C_i^{pi_k}(s0)`` on the true model.
        baseline: ``(K,)`` whether episode ``k`` played the safe baseline (alone: a mixed policy
            that gives it weight below 1 has departed from it).
        episode_status: ``(K,)`` planning status of each episode (``EPISODE_STATUSES``; the
            array was called ``status`` before issue 34).
        status: (property) the record's own status, its last episode's in the one vocabulary of
            every result type: ``"optimal"`` (the last episode played the learner's own solved
            plan), ``"baseline"`` (it played the safe baseline by rule) or ``"infeasible"`` (its
            planning problem had no feasible policy) (module docstring).
        planned_value: ``(K,)`` the planner's own value of its policy (e.g. optimistic).
        iterations: ``(K,)`` solver iterations of each plan.
        min_visits: ``(K,)`` ``min_{s,a} n(s, a)`` after episode ``k``.
        plan_seconds, act_seconds, score_seconds: ``(K,)`` wall time of each part of an episode
            (Online-CRL's compiled batches: the batch's whole time per episode, scoring
            included, in ``plan_seconds`` and zeros in the others).
        counts: final transition counts, the ``(S*A, S)`` CSR matrix whose row ``s*A + a`` holds
            ``n(s, a, .)`` (from [`learn`][cmdp_rl.simulators.learning.learn]: over the planner's states, absorbing
            ``S``, start ``S + 1``).
        policy: ``(H, S, A)`` the last policy played (of a mixed policy, the component the last
            episode drew; ``value`` and ``costs`` are always the played mixture's expectations).
        H: episode length (samples after ``k`` episodes are ``k H``).
        settings: the learner's parameters (``delta``, ``bonus_scale``, ``K0``, ...), JSON-ready.
        info: learner-specific per-episode arrays (e.g. OptDual's ``multipliers (K, N)``).
        realized_return: ``(K,)`` the sum of the rewards the environment returned in episode ``k``.
        realized_costs: ``(K, N)`` the sums of the step costs it returned.
        c_bar: ``(N,)`` the thresholds (for [`cost_exceedances`][cmdp_rl.learners.base.LearnerRecord.cost_exceedances]).
        mixture: the last episode's mixed policy ``(policies (J, H, S, A), weights (J,))`` (``safe-crl``),
            or ``None`` when it played one table (``policy``).

    ``value_gap``, ``violation``, ``value`` and ``costs`` are ``None`` when there was no model
    to score against (a black-box simulator, [`learn`][cmdp_rl.simulators.learning.learn]); never made-up numbers.
    """

    algorithm: str
    value_gap: Array | None
    violation: Array | None
    value: Array | None
    costs: Array | None
    baseline: NDArray[np.bool_]
    episode_status: NDArray[np.str_]
    planned_value: Array
    iterations: NDArray[np.int64]
    min_visits: NDArray[np.int64]
    plan_seconds: Array
    act_seconds: Array
    score_seconds: Array
    counts: sp.csr_array
    policy: Array
    H: int
    settings: Mapping[str, Any] = field(default_factory=dict)
    info: Mapping[str, Any] = field(default_factory=dict)
    realized_return: Array = field(default_factory=lambda: np.zeros(0))
    realized_costs: Array = field(default_factory=lambda: np.zeros((0, 0)))
    c_bar: Array = field(default_factory=lambda: np.zeros(0))
    mixture: tuple[Array, Array] | None = None

    @property
    def status(self) -> str:
        """The record's own status: its last episode's, ``"optimal"``, ``"baseline"`` or
        ``"infeasible"`` (class docstring; ``"uncertified"`` for a record of no episode)."""
        if self.episode_status.size == 0:
            return "uncertified"
        return RECORD_STATUS[str(self.episode_status[-1])]

    @property
    def episodes(self) -> int:
        """Episodes played ``K`` (``realized_return.size``, one planning status each)."""
        return int(self.episode_status.size)

    @property
    def mean_realized_return(self) -> Array:
        """``(K,)`` running mean of ``realized_return`` over episodes ``0..k``."""
        out: Array = np.cumsum(self.realized_return) / np.arange(1, self.episodes + 1)
        return out

    @property
    def mean_realized_costs(self) -> Array:
        """``(K, N)`` running means of ``realized_costs``."""
        out: Array = np.cumsum(self.realized_costs, axis=0) / np.arange(1, self.episodes + 1)[:, None]
        return out

    @property
    def cost_exceedances(self) -> NDArray[np.bool_]:
        """``(K,)`` episodes whose realized cost sum exceeded ``c_bar`` in some constraint."""
        if self.c_bar.size == 0:
            return np.zeros(self.episodes, dtype=bool)
        out: NDArray[np.bool_] = np.any(self.realized_costs > self.c_bar, axis=1)
        return out

    def scored(self) -> tuple[Array, Array, Array, Array]:
        """``(value_gap, violation, value, costs)``, the exact scores of a run on a model.

        Raises:
            CMDPInputError: the run had no model to score against (a black-box simulator).
        """
        if self.value_gap is None or self.violation is None or self.value is None or self.costs is None:
            raise CMDPInputError(
                "record: this run was not scored (a black-box simulator has no model): "
                "value_gap, violation, value and costs are None; use realized_return and realized_costs"
            )
        return self.value_gap, self.violation, self.value, self.costs

    @property
    def samples(self) -> NDArray[np.int64]:
        """``(K,)`` samples drawn after each episode, ``k * H``."""
        return np.arange(1, self.episodes + 1) * self.H

    @property
    def cum_value_gap(self) -> Array:
        """``(K,)`` the regret ``sum_{j <= k} (V* - V^{pi_j})``."""
        out: Array = np.cumsum(self.scored()[0])
        return out

    @property
    def cum_abs_value_gap(self) -> Array:
        """``(K,)`` the DOPE code's regret ``sum_{j <= k} |V* - V^{pi_j}|``."""
        out: Array = np.cumsum(np.abs(self.scored()[0]))
        return out

    @property
    def cum_violation(self) -> Array:
        """``(K,)`` ``sum_{j <= k} max_i max(C_i^{pi_j} - c_bar_i, 0)``."""
        out: Array = np.cumsum(self.scored()[1])
        return out

    @property
    def strong_violation(self) -> Array:
        """``(K,)`` ``sum_{j <= k} sum_i max(C_i^{pi_j} - c_bar_i, 0)``: every constraint's excess
        counted, none cancelled by another constraint's or episode's slack (an excess within
        ``VIOLATION_TOL`` counts 0)."""
        excess = self.scored()[3] - self.c_bar
        excess = np.where(excess > VIOLATION_TOL, excess, 0.0)
        out: Array = np.cumsum(excess.sum(axis=1)) if excess.size else np.zeros(self.episodes)
        return out

    @property
    def first_departure(self) -> int | None:
        """The 1-based number of the first episode not played on the safe baseline (a mixture that
        gives the baseline weight below 1 has departed); ``None`` while every episode played it, or
        for a learner without a baseline."""
        if "baseline_costs" not in self.settings:
            return None
        off = np.flatnonzero(~self.baseline)
        return int(off[0]) + 1 if off.size else None

    @property
    def violating(self) -> NDArray[np.bool_]:
        """``(K,)`` episodes whose played policy's true cost exceeds a threshold by more than
        ``VIOLATION_TOL``."""
        out: NDArray[np.bool_] = self.scored()[1] > VIOLATION_TOL
        return out

    @property
    def violating_episodes(self) -> int:
        """Number of violating episodes ([`violating`][cmdp_rl.learners.base.LearnerRecord.violating])."""
        return int(self.violating.sum())

    @property
    def baseline_episodes(self) -> int:
        """Number of episodes that played the safe baseline."""
        return int(self.baseline.sum())

    def bad_episodes(self, eps: float) -> int:
        """Episodes whose policy was not eps-optimal or not eps-feasible (Theorem 2's count)."""
        gap, viol = self.scored()[:2]
        return int(np.sum((gap > eps) | (viol > eps)))

    def status_counts(self) -> dict[str, int]:
        """``{episode status: episodes}`` over ``EPISODE_STATUSES``."""
        return {s: int(np.sum(self.episode_status == s)) for s in EPISODE_STATUSES}


@runtime_checkable
class Learner(Protocol):
    """What the library needs from an online learner (Online-CRL and every baseline)."""

    name: ClassVar[str]

    @property
    def known(self) -> KnownParts:
        """What the learner knows of the problem (it plans with these ``r, c``)."""
        ...

    def update_known(self, known: KnownParts) -> None:
        """Plan with these rewards and costs (new estimates) from the next plan on."""
        ...

    def planner(self) -> EpisodePlanner:
        """A fresh planner for one run (it keeps the run's own state)."""
        ...

    def fit(
        self,
        env: EpisodicEnv,
        scorer: Scorer | None = None,
        progress: bool = False,
        on_episode: Callable[[int, NDArray[np.int64], Array], None] | None = None,
    ) -> LearnerRecord:
        """Play the learner's episodes in ``env``; score each played policy with ``scorer``."""
        ...


def record_from_log(
    name: str,
    log: EpisodeLog,
    known: KnownParts,
    settings: Mapping[str, Any],
    info: Mapping[str, Any] | None = None,
) -> LearnerRecord:
    """The [`LearnerRecord`][cmdp_rl.learners.base.LearnerRecord] of one
    [`play_episodes`][cmdp_rl.learners.episodes.play_episodes] log."""
    return LearnerRecord(**record_fields(name, log, known, settings, info))


def record_fields(
    name: str, log: EpisodeLog, known: KnownParts, settings: Mapping[str, Any], info: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The [`LearnerRecord`][cmdp_rl.learners.base.LearnerRecord] fields of one log (``H`` and ``c_bar`` from ``known``;
    the log's ``(S, A, S)`` counts as the ``(S*A, S)`` CSR matrix of the sparse layout)."""
    H, c_bar = known.H, np.array(known.c_bar)
    counts = sp.csr_array(np.asarray(log.counts).reshape(known.S * known.A, known.S))
    return dict(
        algorithm=name,
        value_gap=log.value_gap,
        violation=log.violation,
        value=log.value,
        costs=log.costs,
        baseline=log.baseline,
        episode_status=log.status,
        planned_value=log.planned_value,
        iterations=log.iterations,
        min_visits=log.min_visits,
        plan_seconds=log.plan_seconds,
        act_seconds=log.act_seconds,
        score_seconds=log.score_seconds,
        counts=counts,
        policy=log.policy,
        H=H,
        settings=dict(settings),
        info=dict(info or {}),
        realized_return=log.realized_return,
        realized_costs=log.realized_costs,
        c_bar=c_bar,
        mixture=log.mixture,
    )


def known_parts(cmdp: CMDP | KnownParts, statistics: str, what: str) -> KnownParts:
    """What a learner built for ``what`` keeps of its problem: the known parts of a
    [`CMDP`][cmdp_rl.model.cmdp.CMDP] (``P`` is not read; a discounted model or a start distribution is
    refused), or validated read-only copies of given [`KnownParts`][cmdp_rl.model.cmdp.KnownParts].

    Dense ``statistics`` (``(S, A, S)`` counts and estimates) are refused before anything is
    allocated where they would not fit: for a sparse model above
    [`check_dense_statistics`][cmdp_rl.model.sparse.check_dense_statistics]'s bound, for known parts
    (no kernel at all) above this machine's memory.
    """
    if isinstance(cmdp, KnownParts):
        known = KnownParts.checked(cmdp.r, cmdp.c, cmdp.c_bar, cmdp.s0, cmdp.H)
        if statistics == "dense":
            S, A = known.S, known.A
            check_allocation("statistics", float(dense_bytes(S, A)), f"{what}'s dense (S, A, S) counts for S = {S:,}")
        return known
    if not isinstance(cmdp, CMDP):
        raise CMDPTypeError(f"cmdp: must be a cmdp_rl.CMDP or its KnownParts, got {type(cmdp).__name__}")
    if statistics == "dense":
        check_dense_statistics(cmdp, what)
    return KnownParts.of(cmdp)


def check_bonus_scale(bonus_scale: Any) -> float:
    """``bonus_scale`` as a float >= 0 (1 = the papers' constants, 0 = no bonus)."""
    scale = as_float("bonus_scale", bonus_scale)
    if scale < 0.0:
        raise CMDPInputError(
            f"bonus_scale: must be >= 0 (1 = the papers' constants, 0 = no bonus), got {plain(bonus_scale)}"
        )
    return scale


class OnlineLearner:
    """Base of every online learner (Online-CRL and the baselines): what is known, the budget,
    ``bonus_scale`` and the shared [`fit`][cmdp_rl.learners.base.OnlineLearner.fit].

    Subclasses set ``name`` and implement ``planner``, whose plans read
    [`known`][cmdp_rl.learners.base.OnlineLearner.known] when they plan; they may add per-episode
    arrays to the record through ``_info``.

    Args:
        cmdp: what is known of the problem: [`KnownParts`][cmdp_rl.model.cmdp.KnownParts] (``r, c`` or
            their estimates, ``c_bar``, ``s0``, ``H``), or a [`CMDP`][cmdp_rl.model.cmdp.CMDP], whose
            known parts are kept (``P`` is never read).
        delta: failure probability in (0, 1) of the confidence sets.
        episodes: the budget ``K`` (the radii's logarithms use it, as in the papers).
        bonus_scale: factor (>= 0) on the reward and cost bonuses, never on a confidence
            radius (1 = the papers' constants, 0 = no bonus).
        statistics: ``"dense"`` (the planner takes ``(S, A, S)`` counts) or ``"sparse"``
            (``(S*A, S)`` CSR counts of the visited transitions: the same radii and bonuses on
            a ``SparseBox``, what [`learn`][cmdp_rl.simulators.learning.learn] uses on large
            simulators; [`fit`][cmdp_rl.learners.base.OnlineLearner.fit] keeps dense counts and needs ``"dense"``).
    """

    name: ClassVar[str] = ""

    def __init__(
        self,
        cmdp: CMDP | KnownParts,
        delta: float = 0.1,
        *,
        episodes: int,
        bonus_scale: float = 1.0,
        statistics: str = "dense",
    ) -> None:
        self._take_problem(cmdp, delta, statistics, type(self).name or type(self).__name__)
        self.episodes = check_positive_int("episodes", episodes)
        self.bonus_scale = check_bonus_scale(bonus_scale)

    def _take_problem(self, cmdp: CMDP | KnownParts, delta: float, statistics: str, what: str) -> None:
        """The first step of every learner's construction: ``statistics``, the known parts
        ([`known_parts`][cmdp_rl.learners.base.known_parts]) and ``delta``."""
        self.statistics = check_choice("statistics", statistics, STATISTICS)
        self._known = known_parts(cmdp, self.statistics, what)
        self.delta = check_probability("delta", delta)

    @property
    def known(self) -> KnownParts:
        """What the learner knows of the problem: ``r, c`` (or their current estimates), ``c_bar``,
        ``s0``, ``H`` ([`update_known`][cmdp_rl.learners.base.OnlineLearner.update_known] replaces them)."""
        return self._known

    def update_known(self, known: KnownParts) -> None:
        """Plan with ``known``'s rewards and costs from the next plan on.

        The simulator path ([`learn`][cmdp_rl.simulators.learning.learn]) estimates ``r`` and ``c``
        from what the environment returns and hands the learner its estimates (with their radii
        folded in) before every plan. The thresholds, the start, the horizon and the sizes are
        the problem's: they stay. The arrays are taken as they are (not copied, not validated
        beyond their shapes: the caller's estimates, built once per episode).

        Raises:
            CMDPTypeError: ``known`` is not a [`KnownParts`][cmdp_rl.model.cmdp.KnownParts].
            CMDPInputError: it describes another problem (sizes, ``c_bar``, ``s0`` or ``H``).
        """
        if not isinstance(known, KnownParts):
            raise CMDPTypeError(f"known: must be a cmdp_rl.model.cmdp.KnownParts, got {type(known).__name__}")
        k = self._known
        if (
            known.r.shape != k.r.shape
            or known.c.shape != k.c.shape
            or (known.s0, known.H) != (k.s0, k.H)
            or not np.array_equal(known.c_bar, k.c_bar)
        ):
            raise CMDPInputError(
                f"known: only r and c may change; the learner's problem has S={k.S}, A={k.A}, N={k.N}, "
                f"H={k.H}, s0={k.s0}, c_bar={k.c_bar.tolist()}, got r {known.r.shape}, c {known.c.shape}, "
                f"H={known.H}, s0={known.s0}, c_bar={np.asarray(known.c_bar).tolist()}"
            )
        self._known = known

    def __repr__(self) -> str:
        k = self.known
        return f"{type(self).__name__}(S={k.S}, A={k.A}, H={k.H}, N={k.N}, episodes={self.episodes})"

    def settings(self) -> dict[str, Any]:
        """The parameters recorded with every run (JSON-ready)."""
        return {"delta": self.delta, "episodes": self.episodes, "bonus_scale": self.bonus_scale}

    def planner(self) -> EpisodePlanner:
        raise NotImplementedError

    def _info(self) -> dict[str, Any]:
        """Per-episode extras of the run that just ended (the planner's state)."""
        return {}

    def check_fit(self) -> None:
        """Refuse [`fit`][cmdp_rl.learners.base.OnlineLearner.fit] with sparse statistics (it keeps dense counts)."""
        if self.statistics == "sparse":
            raise CMDPInputError(
                "statistics: 'sparse' plans from CSR counts (cmdp_rl.learn on a simulator); fit() keeps dense "
                "(S, A, S) counts, use statistics='dense'"
            )

    def fit(
        self,
        env: EpisodicEnv,
        scorer: Scorer | None = None,
        progress: bool = False,
        on_episode: Callable[[int, NDArray[np.int64], Array], None] | None = None,
    ) -> LearnerRecord:
        """Play ``episodes`` episodes in ``env`` through the library's episode loop.

        Raises:
            ValueError: ``env`` or ``scorer`` describe a problem of other sizes than the learner's.
        """
        self.check_fit()
        plan_next = self.planner()
        log = play_episodes(
            self.known,
            plan_next,
            env,
            self.episodes,
            scorer,
            progress,
            desc=f"{self.name} episodes",
            on_episode=on_episode,
        )
        return record_from_log(self.name, log, self.known, self.settings(), self._info())


__all__ = [
    "STATUSES",
    "VIOLATION_TOL",
    "Learner",
    "LearnerRecord",
    "OnlineLearner",
    "check_bonus_scale",
    "known_parts",
    "record_fields",
    "record_from_log",
]
