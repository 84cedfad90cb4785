"""The one run record every online learner returns ([`LearnerRecord`][cmdp_rl.learners.records.LearnerRecord]):
per-episode arrays, the exact scores of the played policies, the metrics derived from them
(regret, violation, strong violation, first departure) and the policy the run hands over.

Episode statuses (``LearnerRecord.episode_status``, one per episode, ``EPISODE_STATUSES``):
``"optimistic"`` (the learner's own plan was solved and played; for ``plugin`` the
certainty-equivalent plan), ``"baseline"`` (a safe learner played its safe baseline by rule) and
``"infeasible"`` (the planning problem had no feasible policy). The record's own ``status`` is in
the one vocabulary of every result type
([`RESULT_STATUSES`][cmdp_rl.plumbing.names.RESULT_STATUSES]).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from cmdp_rl.certificates.certify import Certificate
from cmdp_rl.evaluation.mixture import MixturePolicy
from cmdp_rl.plumbing.validation import CMDPInputError

Array = NDArray[np.float64]


#: planning statuses of an episode (module docstring; ``LearnerRecord.episode_status``)
EPISODE_STATUSES: tuple[str, ...] = ("optimistic", "baseline", "infeasible")
#: the former name of ``EPISODE_STATUSES``
STATUSES = EPISODE_STATUSES
#: the record's own status (``LearnerRecord.status``) for its last episode's status
RECORD_STATUS: dict[str, str] = {"optimistic": "optimal", "baseline": "baseline", "infeasible": "infeasible"}
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
            episode drew; ``value`` and ``costs`` are always the played mixture's expectations), or,
            for a learner playing its plans' columns (``configure_play``), the compact
            [`MixturePolicy`][cmdp_rl.evaluation.mixture.MixturePolicy] it played (or hands over).
        H: episode length (samples after ``k`` episodes are ``k H``).
        settings: the learner's parameters (``delta``, ``bonus_scale``, ``K0``, ...), JSON-ready.
        info: learner-specific per-episode arrays (e.g. OptDual's ``multipliers (K, N)``).
        realized_return: ``(K,)`` the sum of the rewards the environment returned in episode ``k``.
        realized_costs: ``(K, N)`` the sums of the step costs it returned.
        c_bar: ``(N,)`` the thresholds (for
            [`cost_exceedances`][cmdp_rl.learners.records.LearnerRecord.cost_exceedances]).
        mixture: the last episode's mixed policy ``(policies (J, H, S, A), weights (J,))`` (``safe-crl``),
            or ``None`` when it played one table (``policy``).
        certified: whether ``policy`` (the policy the run hands over: the learner's ``deploy``,
            [`deployed`][cmdp_rl.learners.deploy.deployed]) is certified safe by the run's counts.
        certificate: its [`Certificate`][cmdp_rl.certificates.certify.Certificate] (at ``deploy_delta``), or
            ``None`` (a record not handed over by a learner's ``fit``).
        deploy_status: with ``deploy="certified"``, the record's ``status``; else ``None``.
        cost_scale: ``(N,)`` the widths ``w_i`` of the costs' scale intervals
            ([`Units`][cmdp_rl.model.units.Units]): an excess counts as a violation above
            ``VIOLATION_TOL * w_i``; ``None`` for costs in ``[0, 1]`` (every width 1).

    Every number is in the model's units (a learner on a model outside ``[0, 1]`` plans on its
    unit image and reports back: ``planned_value`` too).

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
    policy: Array | MixturePolicy
    H: int
    settings: Mapping[str, Any] = field(default_factory=dict)
    info: Mapping[str, Any] = field(default_factory=dict)
    realized_return: Array = field(default_factory=lambda: np.zeros(0))
    realized_costs: Array = field(default_factory=lambda: np.zeros((0, 0)))
    c_bar: Array = field(default_factory=lambda: np.zeros(0))
    mixture: tuple[Array, Array] | None = None
    certified: bool = False
    certificate: Certificate | None = None
    deploy_status: str | None = None
    cost_scale: Array | None = None

    @property
    def status(self) -> str:
        """The record's own status: with ``deploy="certified"`` what was handed over
        (``"certified"``, ``"baseline"`` or ``"uncertified"``: [`deployed`][cmdp_rl.learners.deploy.deployed]);
        else its last episode's, ``"optimal"``, ``"baseline"`` or ``"infeasible"`` (class docstring;
        ``"uncertified"`` for a record of no episode)."""
        if self.deploy_status is not None:
            return self.deploy_status
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
        [`violation_tol`][cmdp_rl.learners.records.LearnerRecord.violation_tol] counts 0)."""
        excess = self.scored()[3] - self.c_bar
        excess = np.where(excess > self.violation_tol, excess, 0.0)
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
        [`violation_tol`][cmdp_rl.learners.records.LearnerRecord.violation_tol]."""
        if self.cost_scale is None:
            out: NDArray[np.bool_] = self.scored()[1] > VIOLATION_TOL
            return out
        excess = self.scored()[3] - self.c_bar
        return np.asarray(np.any(excess > self.violation_tol, axis=1), dtype=bool)

    @property
    def violation_tol(self) -> Array:
        """``(N,)`` the excess of each constraint above which it counts as violated:
        ``VIOLATION_TOL * w_i`` ([`cost_scale`][cmdp_rl.learners.records.LearnerRecord])."""
        scale = np.ones(self.c_bar.size) if self.cost_scale is None else np.asarray(self.cost_scale)
        out: Array = VIOLATION_TOL * scale
        return out

    @property
    def violating_episodes(self) -> int:
        """Number of violating episodes ([`violating`][cmdp_rl.learners.records.LearnerRecord.violating])."""
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


__all__ = ["EPISODE_STATUSES", "RECORD_STATUS", "STATUSES", "VIOLATION_TOL", "LearnerRecord"]
