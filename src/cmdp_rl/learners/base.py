"""The interface every online CMDP learner implements (the run record they all return is
[`records`][cmdp_rl.learners.records]).

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
[`LearnerRecord`][cmdp_rl.learners.records.LearnerRecord], with the policy it hands over
([`deploy`][cmdp_rl.learners.deploy]). Where the rewards and costs are estimated as
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

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from cmdp_rl.evaluation.mixture import MixturePolicy
from cmdp_rl.learners.deploy import DEPLOY_DELTA, check_deploy, deployed
from cmdp_rl.learners.environment import EpisodicEnv
from cmdp_rl.learners.episodes import EpisodeLog, EpisodePlanner, Played, play_episodes
from cmdp_rl.learners.metrics import Scorer
from cmdp_rl.learners.records import EPISODE_STATUSES as EPISODE_STATUSES
from cmdp_rl.learners.records import RECORD_STATUS as RECORD_STATUS
from cmdp_rl.learners.records import STATUSES as STATUSES
from cmdp_rl.learners.records import VIOLATION_TOL as VIOLATION_TOL
from cmdp_rl.learners.records import LearnerRecord
from cmdp_rl.model.cmdp import CMDP, KnownParts
from cmdp_rl.model.sparse import check_dense_statistics, dense_bytes
from cmdp_rl.model.units import Units, unit_known
from cmdp_rl.planning.result import PlanResult
from cmdp_rl.plumbing.limits import DEFAULT_MAX_MEMORY, check_allocation
from cmdp_rl.plumbing.names import PLAY
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
R = TypeVar("R", bound=LearnerRecord)

#: how a learner keeps its transition counts (``OnlineLearner(statistics=...)``)
STATISTICS: tuple[str, ...] = ("dense", "sparse")
#: the ``(H, S, A)`` float tables a learner playing Markov tables keeps at once (the plan's policy
#: and occupancy, the policy played, the scorer's pass), what ``play="auto"`` weighs
LEARNER_TABLES = 4


def tables_fit(H: int, S: int, A: int, max_memory: float) -> bool:
    """Whether a learner's ``LEARNER_TABLES`` ``(H, S, A)`` float tables fit in ``max_memory`` bytes
    (``play="auto"`` plays tables then, mixtures of columns beyond)."""
    return LEARNER_TABLES * 8.0 * H * S * A <= max_memory


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
        on_episode: Callable[[int, NDArray[np.int64], Played], None] | None = None,
    ) -> LearnerRecord:
        """Play the learner's episodes in ``env``; score each played policy with ``scorer``."""
        ...


def record_from_log(
    name: str,
    log: EpisodeLog,
    known: KnownParts,
    settings: Mapping[str, Any],
    info: Mapping[str, Any] | None = None,
    units: Units | None = None,
) -> LearnerRecord:
    """The [`LearnerRecord`][cmdp_rl.learners.records.LearnerRecord] of one
    [`play_episodes`][cmdp_rl.learners.episodes.play_episodes] log."""
    return LearnerRecord(**record_fields(name, log, known, settings, info, units))


def log_in_units(log: EpisodeLog, units: Units, c_bar: Array) -> EpisodeLog:
    """A log of a learner that planned on the unit image (``units``) in the model's units: the
    planner's values mapped back, the violations measured against the thresholds ``c_bar (N,)`` in
    the model's units (the exact scores and the realized sums already are)."""
    if units.identity:
        return log
    viol = np.maximum(np.max(log.costs - c_bar, axis=1, initial=0.0), 0.0)
    viol = np.where(np.isnan(log.violation), np.nan, viol)
    return dataclasses.replace(log, violation=viol, planned_value=units.value(log.planned_value))


def record_fields(
    name: str,
    log: EpisodeLog,
    known: KnownParts,
    settings: Mapping[str, Any],
    info: Mapping[str, Any] | None,
    units: Units | None = None,
) -> dict[str, Any]:
    """The [`LearnerRecord`][cmdp_rl.learners.records.LearnerRecord] fields of one log (``H`` and
    ``c_bar`` from ``known``, the model's units; ``units``: the learner's map onto the unit scale, whose
    planned values the log holds; the log's ``(S, A, S)`` counts as the ``(S*A, S)`` CSR matrix of the
    sparse layout)."""
    H, c_bar = known.H, np.array(known.c_bar)
    if units is not None:
        log = log_in_units(log, units, c_bar)
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
        cost_scale=None if units is None or units.identity else np.array(units.c_width),
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
        known = KnownParts.checked(cmdp.r, cmdp.c, cmdp.c_bar, cmdp.s0, cmdp.H, cmdp.actions)
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
    #: whether the learner's plans are mixtures of deterministic columns (the extended LP's, which
    #: it can play compactly); the others' policy is a Markov table by construction (its state)
    column_plans: ClassVar[bool] = False
    #: what ``fit`` hands over ([`configure_deploy`][cmdp_rl.learners.base.OnlineLearner.configure_deploy])
    deploy: str = "last"
    deploy_delta: float = DEPLOY_DELTA
    #: how it plays its plans ([`configure_play`][cmdp_rl.learners.base.OnlineLearner.configure_play])
    play: str = "auto"
    play_memory: float = float(DEFAULT_MAX_MEMORY)

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
        self.problem = known_parts(cmdp, self.statistics, what)
        self._known, self.units = unit_known(self.problem)
        self.delta = check_probability("delta", delta)

    @property
    def known(self) -> KnownParts:
        """What the learner knows of the problem and plans with: ``r, c`` (or their current
        estimates), ``c_bar``, ``s0``, ``H``, on the unit scale
        ([`update_known`][cmdp_rl.learners.base.OnlineLearner.update_known] replaces them). For a
        problem whose rewards or costs leave ``[0, 1]`` these are its image under ``units``
        ([`unit_known`][cmdp_rl.model.units.unit_known]); ``problem`` keeps them in the model's
        units, which the run's record reports."""
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

    def configure_deploy(self, deploy: str = "last", deploy_delta: float = DEPLOY_DELTA) -> None:
        """What [`fit`][cmdp_rl.learners.base.OnlineLearner.fit] hands over: ``"last"`` (the last policy
        played, with its certificate) or ``"certified"`` (the best policy certified safe from the
        run's counts at ``deploy_delta``, else the baseline, else ``status`` ``"uncertified"``;
        [`deployed`][cmdp_rl.learners.deploy.deployed])."""
        self.deploy, self.deploy_delta = check_deploy(deploy, deploy_delta)

    def configure_play(self, play: str = "auto", max_memory: float | None = None) -> None:
        """How the learner plays its plans (``PLAY``): ``"table"``, the plan's randomized Markov
        ``(H, S, A)`` table (the papers' ``pi_h(a|s) = q_h(s, a) / sum_a q_h(s, a)``); ``"mixture"``,
        the plan's deterministic columns, one drawn per episode with its master-LP weight and
        followed throughout (a [`MixturePolicy`][cmdp_rl.evaluation.mixture.MixturePolicy]: no table is
        built; on the plan's own optimistic kernels it has the table's value and costs, the same
        occupancy); ``"auto"`` (default), tables while ``LEARNER_TABLES`` of them fit in
        ``max_memory`` bytes (``None``: ``DEFAULT_MAX_MEMORY``), else mixtures. A learner whose policy
        is a Markov table by construction (``column_plans`` false: OptDual, OptPess-PD, RPD,
        Safe-CRL) plays tables; ``"mixture"`` is refused for it.

        Raises:
            CMDPInputError: an unknown ``play``, ``"mixture"`` for a table learner, a bad ``max_memory``.
        """
        play = check_choice("play", play, PLAY)
        limit = float(DEFAULT_MAX_MEMORY) if max_memory is None else as_float("max_memory", max_memory)
        if not limit > 0.0:
            raise CMDPInputError(f"max_memory: must be a number of bytes > 0, got {plain(max_memory)}")
        if play == "mixture" and not self.column_plans:
            raise CMDPInputError(
                f"play: {self.name or type(self).__name__}'s policy is a Markov table by construction, not a "
                "mixture of deterministic columns; use 'table' or 'auto'"
            )
        self.play, self.play_memory = play, limit

    @property
    def plays_mixtures(self) -> bool:
        """Whether the episodes play the plans' columns as mixtures (``configure_play``)."""
        if not self.column_plans or self.play == "table":
            return False
        return self.play == "mixture" or not tables_fit(self.known.H, self.known.S, self.known.A, self.play_memory)

    def played(self, plan: PlanResult) -> Array | MixturePolicy:
        """What an episode plays of a solved ``plan``: its columns as a mixture when the learner
        plays mixtures and the plan has columns, else its ``(H, S, A)`` Markov table."""
        if self.plays_mixtures and plan.columns is not None:
            return MixturePolicy.of_plan(plan)
        return plan.policy

    def hand_over(self, record: R) -> R:
        """``record`` with the policy ``deploy`` hands over ([`deployed`][cmdp_rl.learners.deploy.deployed]);
        a learner playing mixtures hands over compact policies and records ``settings["play"]``."""
        compact = self.plays_mixtures
        if compact:
            rec: Any = record
            record = dataclasses.replace(rec, settings={**rec.settings, "play": "mixture"})
        baseline = getattr(self, "baseline", None)
        return deployed(record, self.reported(), self.deploy, self.deploy_delta, baseline, compact=compact)

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
        on_episode: Callable[[int, NDArray[np.int64], Played], None] | None = None,
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
        record = record_from_log(self.name, log, self.reported(), self.settings(), self._info(), self.units)
        return self.hand_over(record)

    def reported(self) -> KnownParts:
        """The known parts a record reports: the problem in its own units, or the current
        estimates (the simulator path, whose estimates are on the unit scale already)."""
        return self.problem if not self.units.identity else self.known


__all__ = [
    "LEARNER_TABLES",
    "STATUSES",
    "VIOLATION_TOL",
    "Learner",
    "LearnerRecord",
    "OnlineLearner",
    "check_bonus_scale",
    "known_parts",
    "log_in_units",
    "record_fields",
    "record_from_log",
    "tables_fit",
]
