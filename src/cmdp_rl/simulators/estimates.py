"""The learner's side of a simulator run: estimates, counts and the learner that plans from them.

[`learn`][cmdp_rl.simulators.learning.learn] sees only what the environment returns. From it a
[`LearnerRun`][cmdp_rl.simulators.estimates.LearnerRun] keeps the transition counts over the
planner's states and the reward and cost [`Estimates`][cmdp_rl.simulators.estimates.Estimates], builds
the learner from what is known ([`KnownParts`][cmdp_rl.model.cmdp.KnownParts]: the estimates, the
thresholds, the start and the horizon; no model) and, before every plan, hands it the current
estimates ([`update_known`][cmdp_rl.learners.base.OnlineLearner.update_known]).

The planner's states are the environment's ``0 .. S-1``, then the absorbing state (index ``S``)
once the environment has terminated an episode, then the virtual start state when the start is
unknown. Until a termination is seen the planner is the model path's (the same states), so on an
environment that never terminates, with ``r``, ``c`` and ``s0`` given, the learner plans as on a
model; at the first termination the run is rebuilt with the absorbing state and the episodes so
far are re-planned ([`replay`][cmdp_rl.simulators.estimates.LearnerRun.replay]), so the learner's own
state (warm starts, multipliers, episode counts) follows the same history. The absorbing state's
self-loop is known: its row is pinned by ``PIN`` virtual counts (a radius below ``1e-7``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from cmdp_rl.confidence.radii import delta_1
from cmdp_rl.evaluation.mixture import MixturePolicy, check_columns
from cmdp_rl.learners.catalog import make_learner
from cmdp_rl.learners.deploy import deployed
from cmdp_rl.learners.episodes import EpisodePlan, Played
from cmdp_rl.learners.records import LearnerRecord
from cmdp_rl.model.cmdp import KnownParts
from cmdp_rl.model.sparse import SPARSE_ABOVE_BYTES, dense_bytes
from cmdp_rl.plumbing.validation import CMDPInputError, as_float_array, distribution_rows, log_ratio
from cmdp_rl.simulators.run_log import Steps

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
        rad = np.zeros_like(self.r_sum) if mode == "plugin" else self.hoeffding()
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

    def hoeffding(self) -> Array:
        """``(S, A)`` the Hoeffding radius ``sqrt(log(2 / delta1) / (2 n))`` of each pair's means
        (``inf`` where a pair is unvisited)."""
        out: Array = np.where(self.n > 0, np.sqrt(self.log_term / (2.0 * np.maximum(self.n, 1))), np.inf)
        return out

    def radii(self) -> tuple[Array | None, Array | None]:
        """The half-widths of the plug-in estimates' intervals (``parts("plugin")``) on the planner's
        states: ``r_radius (S', A)`` and ``c_radius (N, S', A)``, the Hoeffding radius of ``parts``
        (1 at an unvisited pair: anything in ``[0, 1]``; 0 on the planner's own states), ``None``
        for what is known."""
        full = np.zeros((self.planner_S, self.A))
        full[: self.S] = np.minimum(self.hoeffding(), 1.0)
        r_rad = None if self.r_known is not None else full
        c_rad = None if self.c_known is not None else np.repeat(full[None], self.N, axis=0)
        return r_rad, c_rad


@dataclass(frozen=True)
class RunSpec:
    """What a simulator run's learner is built from ([`LearnerRun`][cmdp_rl.simulators.estimates.LearnerRun]):
    the learner ``algorithm`` with ``delta``, ``K`` episodes and its ``options``; the environment's
    sizes ``S, A, N``; the horizon ``H``, thresholds ``c_bar`` and known start ``s0`` (``None``:
    the virtual start); the safe learners' ``baseline``; the known ``r``, ``c`` (``None``:
    estimated) and how the estimates are made optimistic (``mode``,
    [`Estimates.parts`][cmdp_rl.simulators.estimates.Estimates.parts])."""

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
    play: str = "auto"
    max_memory: float | None = None


class LearnerRun:
    """The learner on the planner's states, its counts and the reward and cost estimates
    (module docstring): ``absorbing`` says whether the absorbing state is among the planner's states.

    Raises:
        CMDPInputError: the learner's options or the baseline are bad (the learner is built here).
    """

    def __init__(self, spec: RunSpec, absorbing: bool) -> None:
        self.spec, self.absorbing = spec, absorbing
        S, A = spec.S, spec.A
        virtual = spec.s0 is None
        self.n_states = S + int(absorbing) + int(virtual)
        self.start = S + int(absorbing) if spec.s0 is None else spec.s0
        self.H = spec.H + int(virtual)
        base = None
        if spec.baseline is not None:
            base = planner_baseline(spec.baseline, spec.H, S, A, spec.N, self.n_states, self.H, virtual)
        delta1 = delta_1(spec.delta, self.n_states, spec.N, float(spec.K))
        self.est = Estimates(S, A, spec.N, self.n_states, delta1, spec.r, spec.c)
        # visited-only (S'*A, S') counts where the dense (S', A, S') ones would be large
        self.sparse = dense_bytes(self.n_states, A) > SPARSE_ABOVE_BYTES
        options = {**spec.options, "statistics": "sparse"} if self.sparse else dict(spec.options)
        known = self._known()
        self.learner = make_learner(
            spec.algorithm,
            known,
            spec.delta,
            episodes=spec.K,
            baseline=base,
            play=spec.play,
            max_memory=spec.max_memory,
            **options,
        )
        self.plan_next = self.learner.planner()
        self.counts = np.zeros((0, 0, 0) if self.sparse else (self.n_states, A, self.n_states), dtype=np.int64)
        self.entries: dict[int, int] = {}  # sparse: (s*A + a) * S' + s2 -> count
        if absorbing:
            for a in range(A):
                self._count(S, a, S, PIN)

    def _known(self) -> KnownParts:
        """What the learner knows now: the current estimates (or the known ``r``, ``c``) on the
        planner's states, the thresholds, the start and the horizon."""
        r, c = self.est.parts(self.spec.mode)
        return KnownParts(r, c, self.spec.c_bar, self.start, self.H)

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
        self.learner.update_known(self._known())
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

    def replay(self, history: list[Steps]) -> LearnerRun:
        """Re-plan through the episodes played so far (their plans are not played again)."""
        for steps in history:
            self.plan()
            self.add(steps)
        return self

    def hand_over(self, record: LearnerRecord, table: Played, deploy: str, deploy_delta: float) -> LearnerRecord:
        """``record`` with the policy ``deploy`` hands over ([`deployed`][cmdp_rl.learners.deploy.deployed]):
        certified on the planner's states from the run's counts and the plug-in estimates with
        their intervals (``table``: the last episode's policy there, a table or a mixture; a learner
        playing mixtures hands over its certified plan's columns), then cut to the environment's
        states and steps like the played policies."""
        r, c = self.est.parts("plugin")
        r_rad, c_rad = self.est.radii()
        known = KnownParts(r, c, self.spec.c_bar, self.start, self.H)
        on_planner = dataclasses.replace(record, counts=self.planner_counts(), policy=table)
        base = getattr(self.learner, "baseline", None)
        compact = self.learner.plays_mixtures
        done = deployed(on_planner, known, deploy, deploy_delta, base, r_rad, c_rad, compact=compact)
        return dataclasses.replace(done, counts=record.counts, policy=self.on_env(done.policy))

    def on_env(self, policy: Played) -> Played:
        """A policy on the planner's states and steps cut to the environment's: ``(H, S, A)``, or a
        mixture's columns ``(K, H, S)`` (the virtual start's step and the extra states dropped)."""
        first, S = int(self.spec.s0 is None), self.spec.S
        if isinstance(policy, MixturePolicy):
            return MixturePolicy(np.ascontiguousarray(policy.columns[:, first:, :S]), policy.weights)
        return np.ascontiguousarray(policy[first:, :S])

    def public_counts(self) -> sp.csr_array:
        """``(S'*A, S')`` CSR counts in the documented layout (absorbing state ``S``, virtual start
        ``S + 1`` when the start is unknown), whether or not the run needed them; the pin removed."""
        S, A, n = self.spec.S, self.spec.A, self.n_states
        size = S + 1 + int(self.spec.s0 is None)
        counts = self.planner_counts()
        if not self.sparse:
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


def planner_baseline(
    baseline: tuple[Any, Any], H: int, S: int, A: int, N: int, planner_S: int, planner_H: int, virtual: bool
) -> tuple[Array | MixturePolicy, Array]:
    """The user's ``(H, S, A)`` safe policy on the planner's ``planner_S`` states and ``planner_H``
    steps (uniform elsewhere), or its compact [`MixturePolicy`][cmdp_rl.evaluation.mixture.MixturePolicy]
    (columns ``(K, H, S)``, action 0 elsewhere), and its ``(N,)`` costs, checked."""
    try:
        pol, costs = baseline
    except (TypeError, ValueError):
        raise CMDPInputError("baseline: must be a pair (policy (H, S, A), costs (N,))") from None
    cost = as_float_array("baseline", np.atleast_1d(np.asarray(costs, dtype=object)), 1)  # not "0.5", None
    if cost.shape != (N,):
        raise CMDPInputError(f"baseline: its costs must have shape ({N},), got {cost.shape}")
    if isinstance(pol, MixturePolicy):  # its columns on the planner's states: action 0 on the added ones
        check_columns("baseline", pol, (H, S), A, None)
        columns = np.zeros((pol.K, planner_H, planner_S), dtype=pol.columns.dtype)
        columns[:, int(virtual) :, :S] = pol.columns
        return MixturePolicy(columns, pol.weights), cost
    p = as_float_array("baseline", pol, 3)
    if p.shape != (H, S, A):
        raise CMDPInputError(f"baseline: expected an (H, S, A) = {(H, S, A)} policy, got {p.shape}")
    distribution_rows("baseline", pol, p, "each action distribution baseline[h, s, :]")  # float32: widened
    out = np.full((planner_H, planner_S, A), 1.0 / A)
    out[int(virtual) :, :S] = p
    return out, cost


__all__ = ["PIN", "Estimates", "LearnerRun", "RunSpec", "planner_baseline"]
