"""``safe-crl``: a learner that plays only policies certified safe by its data, and learns.

Given a safe baseline ``pi_b`` with known costs ``C_b < c_bar`` (as DOPE and OptPess-LP are),
every episode plays a *mixed policy* (the episode draws one of a few Markov policies at its start
and plays it) whose expected cost is certified at most ``c_bar`` over the confidence set of the
data so far. Each re-plan:

1. **Confidence set.** The certificates' set of the counts
   ([`certificate_box`][cmdp_rl.certificates.certify.certificate_box]: the ``radius`` rule,
   empirical Bernstein by default, at per-entry failure probability ``delta / (2 S^2 A n^2)``:
   adaptive sampling, so it holds at every episode at once with probability ``1 - delta``).
2. **Candidates.** The optimistic plan (the extended LP over the set with thresholds ``c_bar``,
   Online-CRL's planning problem), the plug-in plan (the LP on ``p_hat``), and robust Lagrangian
   policies: robust backward induction of ``r - t w . c`` with the kernel chosen against the
   learner (``w_i = 1 / (c_bar_i - C_b,i)``), at the smallest ``t`` found by bisection whose policy
   is certified, and at the largest ``t`` below it that is not.
3. **Certificates.** Each candidate's largest value ``V^hi`` and largest costs ``U (N,)`` over the
   set (robust backward induction: the bound of [`certify`][cmdp_rl.certificates.certify.certify]).
   The baseline's costs are its known ``C_b``.
4. **Mixture.** The weights ``w`` over the candidates and the baseline that maximize ``sum_j w_j
   V_j`` subject to ``sum_j w_j U_j <= c_bar`` and ``sum_j w_j = 1`` (the master LP of column
   generation, [`solve_master`][cmdp_rl.planning.master.solve_master]): the best value the
   certificates allow. The baseline alone is always feasible; a candidate whose cost is certified
   within ``c_bar`` needs no baseline at all. ``V_j`` is each component's value on ``p_hat``
   (``value="estimate"``, the default) or its largest value over the set (``"optimistic"``).
   Measured (20,000 episodes, 2 runs, the DOPE preset's settings): regret 24,100 against 26,100 on
   1b and 5,200 against 6,100 on media-control: optimistic values are inflated most for the
   least-tried components, whose certified costs are also the loosest, so the mixture pays for
   exploration twice; the optimistic plan stays a candidate either way.

**Guarantee.** With probability at least ``1 - delta`` the true kernel lies in every set the run
builds. Then for every episode the mixture's expected cost is ``sum_j w_j C_j(P) <= sum_j w_j U_j
<= c_bar``: no episode violates. With estimated rewards and costs (a simulator,
[`learn`][cmdp_rl.simulators.learning.learn]) the learner plans with the pessimistic cost
estimates ``c_hat + radius``, so the guarantee also rests on their Hoeffding intervals.

Re-plans follow UCRL2's epochs: at the first episode and whenever some pair's count has grown by
at least its count at the last re-plan (and by at least 1); between them the same mixture is
played (a certificate stays valid for later episodes: it holds for the true kernel). A run has at
most ``S A (1 + log2(K H))`` re-plans.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.certificates.certify import certificate_box, robust_values_batch
from cmdp_rl.certificates.safe import one_hot
from cmdp_rl.confidence.counts import check_counts, pair_counts
from cmdp_rl.confidence.sets import AnyBox, empirical_box
from cmdp_rl.learners.episodes import EpisodePlan, EpisodePlanner
from cmdp_rl.learners.replan import WarmELP
from cmdp_rl.learners.safe import SafeLearner
from cmdp_rl.model.actions import masked
from cmdp_rl.model.cmdp import CMDP, KnownParts
from cmdp_rl.planning.master import solve_master
from cmdp_rl.plumbing.names import RADII
from cmdp_rl.plumbing.validation import CMDPInputError, check_choice

Array = NDArray[np.float64]

#: what the mixture maximizes (``SafeCRL(value=...)``)
VALUES: tuple[str, ...] = ("estimate", "optimistic")
#: bisection steps on the Lagrangian weight ``t`` of the robust candidates, per re-plan
BISECTION_STEPS = 12
#: a new epoch (a re-plan) starts when some pair's count has grown by this fraction of its count at
#: the last re-plan (UCRL2's rule is 1, doubling; measured on 1b over 20,000 episodes, 2 runs: regret
#: 25,300 at 1, 24,100 at 0.5, 23,600 at 0.25 for twice the time)
EPOCH_GROWTH = 0.5
#: a mixture weight below this is dropped (the rest renormalized, the cost checked again)
WEIGHT_FLOOR = 1e-9


def certified_bounds(box: AnyBox, policy: Array, known: KnownParts) -> tuple[float, Array]:
    """``(V^hi, U (N,))``: the largest value and costs of ``policy (H, S, A)`` over ``box`` from ``s0``
    (one robust backward induction for the ``N + 1`` tables)."""
    rewards = np.concatenate([known.r[None], known.c])
    v = robust_values_batch(box, policy, rewards, np.ones(known.N + 1, dtype=bool), known.s0)
    return float(v[0]), v[1:]


def values_of(box: AnyBox, tables: list[Array], known: KnownParts) -> Array:
    """``(K,)`` the largest value from ``s0`` of each ``(H, S, A)`` table over ``box`` (the estimate
    itself on a box of radius 0)."""
    up = np.ones(1, dtype=bool)
    return np.array([float(robust_values_batch(box, pol, known.r[None], up, known.s0)[0]) for pol in tables])


def robust_lagrangian(box: AnyBox, known: KnownParts, weights: Array, t: float) -> Array:
    """The deterministic policy maximizing the smallest value of ``r - t weights . c`` over ``box``
    (robust backward induction, the adversary filling the least valuable next states first), over
    a ragged model's available actions."""
    reward = masked(known.r - t * np.tensordot(weights, known.c, axes=1), known.actions)
    _, actions = box.robust_sweep(reward, known.H, upper=False, maximize=True)
    return one_hot(actions, known.A)


def mix(values: Array, costs: Array, c_bar: Array, anchor: int) -> Array:
    """``(K,)`` weights maximizing ``values @ w`` subject to ``w @ costs <= c_bar``, ``sum w = 1``,
    ``w >= 0`` (``costs (K, N)``); column ``anchor`` (the baseline, strictly within ``c_bar``) is
    feasible alone. Weights below ``WEIGHT_FLOOR`` are dropped and any excess the LP's rounding
    leaves is moved onto the anchor, so the returned mixture meets ``c_bar`` exactly."""
    K = values.shape[0]
    if values.ndim != 1 or costs.shape != (K, c_bar.size):
        raise CMDPInputError(f"costs: expected shape ({K}, {c_bar.size}) for values {values.shape}, got {costs.shape}")
    if not 0 <= anchor < K or not np.all(costs[anchor] < c_bar):
        raise CMDPInputError(f"anchor: must index a column strictly within c_bar (the baseline), got {anchor}")
    w, _, _, _ = solve_master(np.ascontiguousarray(costs), np.ascontiguousarray(values), c_bar, False)
    w = np.where(w < WEIGHT_FLOOR, 0.0, np.maximum(w, 0.0))
    w = w / w.sum() if w.sum() > 0 else np.eye(len(values))[anchor]
    excess = w @ costs - c_bar
    if np.any(excess > 0.0):  # theta of the way to the anchor: (1 - theta) excess + theta (C_b - c_bar) <= 0
        room = c_bar - costs[anchor]
        theta = float(np.max(np.where(excess > 0.0, excess / (excess + room), 0.0)))
        w = (1.0 - theta) * w
        w[anchor] += theta
    out: Array = w
    return out


class SafeCRL(SafeLearner):
    """``safe-crl`` (module docstring): certified-safe mixed policies, optimistic in the value.

    Args:
        cmdp: what is known (``KnownParts``), or a ``CMDP`` whose known parts are kept (never ``P``).
        delta: failure probability of the guarantee (every confidence set of the run at once).
        episodes: the budget ``K``.
        baseline: ``(H, S, A)`` the safe policy ``pi_b``.
        baseline_costs: ``(N,)`` its exact costs ``C_b``, each below its threshold.
        bonus_scale: checked and recorded; the learner has no bonus.
        radius: the confidence set's radius rule (``"empirical-bernstein"``, a valid bound, or
            ``"paper"``, Lemma 1's, which is not one: docs page 'How it works'), at per-entry
            failure probability ``delta / (2 S^2 A n^2)``.
        value: what the mixture maximizes: ``"estimate"`` (default), each component's value on
            ``p_hat``; ``"optimistic"``, its largest value over the confidence set (module docstring).
        statistics: ``"dense"`` or ``"sparse"`` counts ([`OnlineLearner`][cmdp_rl.learners.base.OnlineLearner]).
    """

    name: ClassVar[str] = "safe-crl"

    def __init__(
        self,
        cmdp: CMDP | KnownParts,
        delta: float = 0.1,
        *,
        episodes: int,
        baseline: Any,
        baseline_costs: Any,
        bonus_scale: float = 1.0,
        radius: str = "empirical-bernstein",
        value: str = "estimate",
        statistics: str = "dense",
    ) -> None:
        super().__init__(
            cmdp,
            delta,
            episodes=episodes,
            baseline=baseline,
            baseline_costs=baseline_costs,
            bonus_scale=bonus_scale,
            statistics=statistics,
        )
        self.radius = check_choice("radius", radius, RADII)
        self.value = check_choice("value", value, VALUES)

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "radius": self.radius, "sampling": "adaptive", "value": self.value}

    def planner(self) -> EpisodePlanner:
        """Each call: the last mixture, or at an epoch's start a new one (module docstring)."""
        optimistic, plugin = WarmELP(), WarmELP()
        C_b = self.baseline_costs
        base_tables, base_w = self.baseline_components()  # a mixture baseline: its columns' one-hot tables
        weights = 1.0 / (self.known.c_bar - C_b)
        state: dict[str, Any] = {"n": None, "plan": None}

        def replan(counts: Any) -> EpisodePlan:
            known = self.known
            box = certificate_box(counts, self.delta, self.radius, "adaptive", actions=known.actions)[0]
            p_box = empirical_box(counts)
            tables = [plan.policy for plan in (optimistic(known, box), plugin(known, p_box))]
            bounds = [certified_bounds(box, pol, known) for pol in tables]
            for pol, bound in self._robust_candidates(box, known, weights):  # certified once, in the bisection
                tables.append(pol)
                bounds.append(bound)
            costs = np.array([u for _, u in bounds] + [C_b])
            if self.value == "optimistic":  # each candidate's largest value is its certificate's
                base_value = float(base_w @ values_of(box, list(base_tables), known))
                values = np.array([v for v, _ in bounds] + [base_value])
            else:
                n_tab = len(tables)
                both = values_of(p_box, [*tables, *base_tables], known)
                values = np.append(both[:n_tab], base_w @ both[n_tab:])
            w = mix(values, costs, known.c_bar, len(values) - 1)
            used = np.flatnonzero(w > 0.0)
            on_baseline = used.tolist() == [len(values) - 1]
            parts = [
                ([tables[j]], [w[j]]) if j < len(tables) else (list(base_tables), list(w[j] * base_w)) for j in used
            ]
            policies = np.stack([pol for pols, _ in parts for pol in pols])
            mix_w = np.array([x for _, ws in parts for x in ws])
            heaviest = policies[int(np.argmax(mix_w))]
            status = "baseline" if on_baseline else "optimistic"
            mixture = None if len(mix_w) == 1 else (policies, mix_w)
            return EpisodePlan(heaviest, status, float(w @ values), len(tables), baseline=on_baseline, mixture=mixture)

        def plan_next(counts: NDArray[np.int64]) -> EpisodePlan:
            cnt, _, _ = check_counts(counts)
            n = pair_counts(cnt)
            last = state["n"]
            if last is None or np.any(n - last >= np.maximum(EPOCH_GROWTH * last, 1)):
                state["n"], state["plan"] = n, replan(cnt)
            plan: EpisodePlan = state["plan"]
            return plan

        return plan_next

    def _robust_candidates(
        self, box: AnyBox, known: KnownParts, weights: Array
    ) -> list[tuple[Array, tuple[float, Array]]]:
        """The robust Lagrangian policies around the certification boundary, each with its bounds
        ``(V^hi, U)``: the one at the smallest ``t`` (by bisection, doubling first from 1) whose
        largest costs over ``box`` meet ``c_bar``, and the one at the largest ``t`` below it that does
        not (none certified: the most conservative one tried)."""
        Candidate = tuple[Array, tuple[float, Array]]

        def certified(t: float) -> tuple[bool, Candidate]:
            pol = robust_lagrangian(box, known, weights, t)
            bound = certified_bounds(box, pol, known)
            return bool(np.all(bound[1] <= known.c_bar)), (pol, bound)

        ok0, at0 = certified(0.0)
        if ok0:
            return [at0]
        lo, hi, below = 0.0, 1.0, at0
        ok_hi, above = certified(hi)
        while not ok_hi and hi < 2.0**20:
            lo, below = hi, above
            hi *= 4.0
            ok_hi, above = certified(hi)
        if not ok_hi:
            return [above]
        for _ in range(BISECTION_STEPS):
            mid = 0.5 * (lo + hi)
            ok, at = certified(mid)
            if ok:
                hi, above = mid, at
            else:
                lo, below = mid, at
        return [below, above]


__all__ = [
    "BISECTION_STEPS",
    "EPOCH_GROWTH",
    "VALUES",
    "WEIGHT_FLOOR",
    "SafeCRL",
    "certified_bounds",
    "mix",
    "robust_lagrangian",
    "values_of",
]
