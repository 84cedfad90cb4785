"""Optimistic-GMBL (paper Algorithm 1): generative sampling, confidence set, extended LP."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.confidence.radii import ConfidenceSet, confidence_set, delta_p
from cmdp_rl.confidence.sample_size import gmbl_bounds
from cmdp_rl.learners.environment import GenerativeModel, check_cmdp
from cmdp_rl.learners.metrics import Scorer
from cmdp_rl.model.actions import available_count
from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.model.sparse import check_dense_statistics, dense_counts
from cmdp_rl.planning.elp import solve_elp
from cmdp_rl.planning.result import PlanResult
from cmdp_rl.plumbing.names import METHODS, RADII
from cmdp_rl.plumbing.validation import (
    CMDPInputError,
    CMDPTypeError,
    check_choice,
    check_positive_int,
    check_probability,
)

Array = NDArray[np.float64]


@dataclass(frozen=True)
class GMBLResult:
    """What one Optimistic-GMBL run produced.

    Attributes:
        policy: ``(H, S, A)`` the optimistic policy (ELP solution).
        plan: the extended-LP result (optimistic value, costs, kernel, status).
        counts: ``(S, A, S)`` transition counts.
        n_per_pair: samples drawn for every available ``(s, a)``.
        samples: total samples ``|S| |A| n`` (a ragged model: ``n`` times its available pairs).
        confidence: the plausible set used.
        value_gap, violation: exact metrics on the true model (``nan`` without a scorer).
        status: (property) the extended LP's: ``"optimal"``, ``"uncertified"`` or ``"infeasible"``
            ([`PlanResult`][cmdp_rl.planning.result.PlanResult]).
        value, costs: (properties) the extended LP's optimistic value and ``(N,)`` costs.
    """

    policy: Array
    plan: PlanResult
    counts: NDArray[np.int64]
    n_per_pair: int
    samples: int
    confidence: ConfidenceSet
    value_gap: float
    violation: float

    @property
    def status(self) -> str:
        """The extended LP's status (``plan.status``)."""
        return self.plan.status

    @property
    def value(self) -> float:
        """The extended LP's optimistic value (``plan.value``)."""
        return self.plan.value

    @property
    def costs(self) -> Array:
        """``(N,)`` the extended LP's optimistic costs (``plan.costs``)."""
        return self.plan.costs


class OptimisticGMBL:
    """Optimistic Generative-Model-Based Learning.

    The learner knows ``r``, ``c``, ``c_bar``, ``s0`` and ``H`` from ``cmdp`` and
    never reads ``cmdp.P``; transitions come from a [`GenerativeModel`][cmdp_rl.learners.environment.GenerativeModel].

    Args:
        cmdp: the known parts of the problem.
        delta: failure probability; the radii use ``delta_P`` (Algorithm 1).
        samples_per_pair: budget mode, ``n`` samples per ``(s, a)``.
        eps: theory mode, ``n`` from Theorem 1 for accuracy ``eps``.
        method: extended-LP method, ``"fast"`` or ``"lp"``.
        radius: the radius rule at ``delta_P``: ``"paper"`` (eq. "bernstein-hoeffding", the
            default, for reproduction) or ``"empirical-bernstein"`` (a valid bound).
    """

    def __init__(
        self,
        cmdp: CMDP,
        delta: float = 0.1,
        *,
        samples_per_pair: int | None = None,
        eps: float | None = None,
        method: str = "fast",
        radius: str = "paper",
    ) -> None:
        self.cmdp = check_cmdp("cmdp", cmdp)
        cmdp.episodic("OptimisticGMBL")  # a discounted model or a start distribution: refused here
        check_dense_statistics(cmdp, "Optimistic-GMBL")
        self.radius_rule = check_choice("radius", radius, RADII)
        self.delta = check_probability("delta", delta)
        if (samples_per_pair is None) == (eps is None):
            raise CMDPInputError("samples_per_pair/eps: give exactly one (budget mode or theory mode)")
        check_choice("method", method, METHODS)
        self.method = method
        if eps is not None:
            b = gmbl_bounds(cmdp.S, cmdp.A, cmdp.episodic("OptimisticGMBL")[1], cmdp.N, eps, self.delta)
            if not b.eps_valid:
                raise CMDPInputError(f"eps: Theorem 1 needs eps < (2/9) sqrt(H/|S|) = {b.eps_max:.4g}, got {eps}")
            self.n = b.n_per_pair
        else:
            self.n = check_positive_int("samples_per_pair", samples_per_pair)
        self.delta_P = delta_p(self.delta, cmdp.S, cmdp.A, cmdp.horizon("OptimisticGMBL"), cmdp.N)

    def plan(self, counts: NDArray[np.int64], n: int, scorer: Scorer | None) -> GMBLResult:
        """Build the confidence set from ``counts`` (``n`` per pair) and solve the ELP."""
        m = self.cmdp
        counts = dense_counts(counts, m.S, m.A)
        if np.shape(counts) != (m.S, m.A, m.S):
            raise CMDPInputError(
                f"counts: expected shape {(m.S, m.A, m.S)} for the learner's model, got {np.shape(counts)}"
            )
        cs = confidence_set(counts, self.delta_P, self.radius_rule)
        plan = solve_elp(self.cmdp, cs.p_hat, cs.beta, method=self.method)
        gap, viol = scorer(plan.policy) if scorer is not None else (float("nan"), float("nan"))
        pairs = available_count(m.actions, m.S, m.A)  # a ragged model samples its available pairs only
        return GMBLResult(plan.policy, plan, counts, n, n * pairs, cs, gap, viol)

    def fit(self, model: GenerativeModel, scorer: Scorer | None = None) -> GMBLResult:
        """Sample every ``(s, a)`` ``n`` times, then plan optimistically (Algorithm 1)."""
        self._check_sources(model, scorer)
        return self.plan(model.sample_counts(self.n), self.n, scorer)

    def _check_sources(self, model: object, scorer: object) -> None:
        """The generative model and scorer must describe a problem of the learner's sizes."""
        if not isinstance(model, GenerativeModel):
            raise CMDPTypeError(f"model: must be a GenerativeModel, got {type(model).__name__}")
        if scorer is not None and not isinstance(scorer, Scorer):
            raise CMDPTypeError(f"scorer: must be a Scorer or None, got {type(scorer).__name__}")
        m = self.cmdp
        for name, other in (("model", model.cmdp), ("scorer", None if scorer is None else scorer.cmdp)):
            if other is not None and (other.S, other.A, other.H, other.N) != (m.S, m.A, m.H, m.N):
                raise CMDPInputError(
                    f"{name}: its model has S={other.S}, A={other.A}, H={other.H}, N={other.N} but the "
                    f"learner was built for S={m.S}, A={m.A}, H={m.H}, N={m.N}"
                )

    def fit_path(
        self, model: GenerativeModel, budgets: Sequence[int], scorer: Scorer | None = None
    ) -> list[GMBLResult]:
        """Runs for increasing per-pair budgets on one nested sample path.

        The counts for budget ``n_k`` extend those of ``n_{k-1}`` with fresh draws,
        so each entry is exactly a run of Algorithm 1 with ``n_k`` samples per pair
        (the runs share samples; the last one costs ``max(budgets)`` per pair).
        """
        self._check_sources(model, scorer)
        ns = [check_positive_int("budgets", b) for b in budgets]
        if any(b2 <= b1 for b1, b2 in itertools.pairwise(ns)):
            raise CMDPInputError(f"budgets: must be strictly increasing, got {list(budgets)}")
        counts = np.zeros((self.cmdp.S, self.cmdp.A, self.cmdp.S), dtype=np.int64)
        out, prev = [], 0
        for n in ns:
            counts = counts + dense_counts(model.sample_counts(n - prev), self.cmdp.S, self.cmdp.A)
            prev = n
            out.append(self.plan(counts, n, scorer))
        return out
