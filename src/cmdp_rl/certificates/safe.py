"""Certified-safe planning: the best policy the data can certify safe
([`solve_safe`][cmdp_rl.certificates.safe.solve_safe]).

Every candidate is an exact LP optimum on the empirical kernel ``p_hat`` with tightened
thresholds ``c_bar - m`` (``m >= 0``, one margin per constraint), and every candidate is
checked by the certificate of [`certify`][cmdp_rl.certificates.certify.certify] on the same data (its
confidence set built once per call); among the candidates that it certifies safe, the
one with the highest certified value lower bound is returned.

The margins are ``m = t c_bar``: ``t = 0`` (the plain LP on ``p_hat``) first, then the
smallest ``t`` in [0, 1] whose LP policy is certified safe, by bisection (tighter
thresholds make the policy more conservative; the search keeps every certified
candidate, so it does not rely on that being monotone). Ties in the certified value
lower bound (e.g. all 0 when the data are few) go to the larger value on ``p_hat``. Two
more candidates are always tried: the LP's most conservative policy
(the one minimizing the worst cost on ``p_hat``) and the robust minimum-cost policy, by
robust backward induction over the confidence set (the greedy fill, highest cost first)
of ``sum_i c_i / c_bar_i``. With one constraint the latter is exact: it minimizes the
certified upper bound ``cost_hi`` over all policies, so when it is not certified safe
**no policy can be certified with these data** (for ``N > 1`` the report says "none
found" unless the first check below proves it). Then it estimates, with the same radius rule, how many
samples per pair would make the robust minimum-cost policy certifiable if the empirical
kernel stayed as it is.

**A proof first.** Before any LP, each constraint's robust minimizer of ``c_i`` alone is
certified: its ``cost_hi_i`` is the smallest any policy can have over this confidence set
(robust backward induction is exact for its rectangular sets). When one of them exceeds its
threshold no policy can be certified, for any ``N``: the result is ``"uncertified"`` with
``exact`` set and only the robust minimum-cost candidate certified, and the empirical model
(whose unvisited pairs hold ``S`` entries each) is never built. This is what keeps a deployment
check on a large simulator with little data cheap (``cmdp_rl.learn``'s ``deploy="certified"``).

**Solver failures.** Each candidate's LP is solved with ``method`` (column generation,
``"fast"``, by default); when the solver stops without an optimum (a
[`SolverError`][cmdp_rl.plumbing.errors.SolverError]: a HiGHS status other than optimal or infeasible
after its own retries with a cold start, the primal simplex, the interior point method and
presolve), the LP is solved again with the other method (``"lp"``, the occupation-measure LP
by HiGHS, itself retried with its interior point and dual simplex solvers). A candidate
that both methods fail on is skipped (counted in ``SafePlan.skipped``); the robust
minimum-cost candidate needs no LP, so it is always certified. The result is then the best
certified candidate among those solved, or status ``"uncertified"`` (the command line's exit 1)
when none is certified; never an exception. Every returned policy passed the certificate,
whichever candidates were skipped, and the ``exact`` verdict (one constraint) rests on the
robust candidate alone, so it stays valid.

Counts may be dense ``(S, A, S)`` or a ``scipy.sparse`` ``(S*A, S)`` matrix (row ``s*A + a`` holds
``n(s, a, .)``). Sparse counts never build an ``(S, A, S)`` array: the confidence set is a
[`SparseBox`][cmdp_rl.confidence.sparse_box.SparseBox], the LPs run on the CSR empirical kernel (a pair without
samples keeps the dense convention, a uniform row: ``S`` entries each), and the sample-size
estimate scales the counts with the uniform rows kept implicit. Results equal those of the same
counts given dense.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from cmdp_rl.certificates.certify import (
    Certificate,
    certificate_box,
    certificate_on_box,
    check_available_counts,
    check_certificate_delta,
    check_radius,
    check_reward_shape,
    count_total,
    mixture_certificate,
    widened,
)
from cmdp_rl.confidence.counts import Counts, check_counts, kernel_estimate, pair_counts, scaled_counts
from cmdp_rl.confidence.sets import ConfidenceBox
from cmdp_rl.evaluation.mixture import MixturePolicy
from cmdp_rl.model.actions import Mask, masked
from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.planning import PlanResult, SolverError, solve
from cmdp_rl.planning.mixture_table import table_mixture
from cmdp_rl.plumbing.names import METHODS, RADII, SAMPLING
from cmdp_rl.plumbing.validation import (
    CMDPInputError,
    as_float_array,
    as_int,
    check_choice,
    check_positive_int,
    check_probability,
)

Array = NDArray[np.float64]


@dataclass(frozen=True)
class SafePlan:
    """What [`solve_safe`][cmdp_rl.certificates.safe.solve_safe] found.

    Attributes:
        policy: ``(H, S, A)`` the certified-safe policy with the highest certified value lower
            bound among the candidates, or ``None`` when no candidate was certified safe; with
            ``compact``, a [`MixturePolicy`][cmdp_rl.evaluation.mixture.MixturePolicy] (the candidate
            plan's columns and weights, or the robust candidate's one column).
        certificate: that policy's certificate (for ``None``, the certificate of the candidate
            with the smallest certified worst excess).
        status: ``"certified"`` (``policy`` passed the certificate) or ``"uncertified"`` (no
            candidate was certified safe; formerly ``"uncertifiable"``); the one
            vocabulary of every result type ([`RESULT_STATUSES`][cmdp_rl.plumbing.names.RESULT_STATUSES]).
        margin: ``(N,)`` the threshold tightening ``m = t c_bar`` of the returned policy's LP
            (``nan`` for the robust minimum-cost candidate).
        candidates: number of candidate policies certified.
        exact: for ``"uncertified"``: whether that verdict is proven (some constraint's smallest
            ``cost_hi`` over all policies, its robust minimizer's, exceeds its threshold; with one
            constraint every uncertified verdict is).
        samples_per_pair: when uncertified, the estimated samples per pair that would make
            the robust minimum-cost policy certifiable with the same empirical kernel
            (``None`` if even ``10^12`` per pair do not, or when certified).
        skipped: candidate LPs that neither method could solve (skipped; module docstring).
        method: the LP method that solved the candidates (``"fast"`` or ``"lp"``;
            ``"fast+lp"`` when some needed the other method; ``"none"`` when every candidate LP
            failed and the robust minimum-cost candidate was the only one).
    """

    policy: Array | MixturePolicy | None
    certificate: Certificate
    status: str
    margin: Array
    candidates: int
    exact: bool = False
    samples_per_pair: int | None = None
    skipped: int = 0
    method: str = "fast"

    @property
    def safe(self) -> bool:
        """Whether a certified-safe policy was found."""
        return self.policy is not None


def robust_min_cost_policy(box: ConfidenceBox, cost: Array, H: int, actions: Mask | None = None) -> Array:
    """``(H, S, A)`` deterministic policy minimizing the largest value of ``cost (S, A)`` over every
    per-step kernel in ``box`` (robust backward induction, the box's
    [`robust_sweep`][cmdp_rl.confidence.sets.ConfidenceBox.robust_sweep]: the adversary fills the costliest
    next states first; optimal for rectangular sets; the first best action on ties); only the
    ``actions`` available (a ragged model's mask; ``None``: all)."""
    _, acts = box.robust_sweep(masked(cost, actions, np.inf), H, upper=True, maximize=False)
    return one_hot(acts, cost.shape[1])


def one_hot(actions: NDArray[np.int64], A: int) -> Array:
    """``(H, S, A)`` table of the deterministic policy ``actions (H, S)``."""
    out = np.zeros((*actions.shape, A))
    np.put_along_axis(out, actions[..., None], 1.0, axis=-1)
    return out


def candidate_policy(res: PlanResult, compact: bool) -> Array | MixturePolicy:
    """A candidate plan's policy: its columns as a mixture with ``compact`` (when it has them), else
    its ``(H, S, A)`` table."""
    return MixturePolicy.of_plan(res) if compact and res.columns is not None else res.policy


def any_certificate(
    box: ConfidenceBox,
    d: Array,
    policy: Array | MixturePolicy,
    tables: tuple[Array, Array, Array],
    s0: int,
    info: tuple[str, str, int, float],
    radii: tuple[Array | None, Array | None],
) -> Certificate:
    """The certificate of a table ([`certificate_on_box`][cmdp_rl.certificates.certify.certificate_on_box])
    or of a mixture ([`mixture_certificate`][cmdp_rl.certificates.certify.mixture_certificate]) over
    ``box`` (``tables``: ``r, c, c_bar``; ``radii``: ``r_radius, c_radius``)."""
    if isinstance(policy, MixturePolicy):
        return mixture_certificate(box, d, policy, tables, s0, info, radii)
    return certificate_on_box(box, d, policy, *tables, s0, info, *radii)


def _candidate(model: CMDP, method: str, used: set[str]) -> PlanResult | None:
    """The LP optimum of ``model`` (the empirical one with a candidate's thresholds): ``method``,
    then the other method on a solver failure (the method that solved it added to ``used``);
    ``None`` (the candidate is skipped) when both fail."""
    for m in (method, *(x for x in METHODS if x != method)):
        try:
            res = solve(model, m)
        except SolverError:
            continue
        used.add(m)
        return res
    return None


def _least_upper_costs(
    box: ConfidenceBox,
    d: Array,
    c_up: Array,
    checked: CMDP,
    info: tuple[str, str, int, float],
    r_radius: Array | None,
    c_radius: Array | None,
) -> Array:
    """``(N,)`` the smallest certified upper bound ``cost_hi_i`` any policy can have, constraint by
    constraint: the certificate of the robust minimizer of ``c_up[i]`` alone (robust backward induction
    is exact for the box's rectangular sets: it minimizes the worst case over every policy). A
    threshold below its entry proves that no policy can be certified safe."""
    s0, H = checked.episodic("solve_safe")
    out = np.empty(checked.N)
    for i in range(checked.N):
        policy = robust_min_cost_policy(box, c_up[i], H, checked.actions)
        cert = certificate_on_box(box, d, policy, checked.r, checked.c, checked.c_bar, s0, info, r_radius, c_radius)
        out[i] = cert.cost_hi[i]
    return out


def _worst_excess(cert: Certificate, c_bar: Array) -> float:
    return float(np.max(cert.cost_hi - c_bar, initial=-np.inf))


def _samples_needed(
    counts: Counts, weighted: Array, base: CMDP, delta: float, radius: str, sampling: str, limit: float = 1e12
) -> int | None:
    """Samples per pair that would certify the robust minimum-cost policy (bisection, log scale).

    Every (available) pair gets ``m`` samples spread as its empirical kernel (uniform where
    unvisited); returns the smallest such ``m`` (to 2%) or ``None`` if ``limit`` is not enough.
    Sparse counts keep the uniform rows implicit
    ([`scaled_counts`][cmdp_rl.confidence.counts.scaled_counts]). A ragged model's union bound and
    robust policy run over its available pairs (``base.actions``), as every certificate's.
    """
    base_s0, base_H = base.episodic("solve_safe")
    mask = base.actions

    def ok(m: float) -> bool:
        scaled, background = scaled_counts(counts, m)
        box, d = certificate_box(scaled, delta, radius, sampling, background, actions=mask)
        n = pair_counts(scaled, background)
        samples = int(n.sum() if mask is None else n[mask].sum())
        pol = robust_min_cost_policy(box, weighted, base_H, mask)
        info = (radius, sampling, samples, delta)
        return certificate_on_box(box, d, pol, base.r, base.c, base.c_bar, base_s0, info).safe

    if not ok(limit):
        return None
    lo, hi = 1.0, limit
    if ok(lo):
        return 1
    while hi / lo > 1.02:
        mid = float(np.sqrt(lo * hi))
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return int(np.ceil(hi))


def _checked_inputs(
    counts: object,
    r: object,
    c: object,
    c_bar: object,
    s0: int,
    H: int,
    delta: float,
    radius: str,
    sampling: str,
    iterations: int,
    method: str,
    radii: tuple[object, object] = (None, None),
    actions: object = None,
) -> tuple[Counts, CMDP, int, float, int, Array | None, Array | None]:
    """Every check of [`solve_safe`][cmdp_rl.certificates.safe.solve_safe]'s arguments, before any work:
    ``(counts, checked, H, delta, iterations, r_radius, c_radius)`` (``counts`` in its own layout;
    ``checked``: ``r, c, c_bar, s0, H`` validated as a model on a self-loop kernel, whose ``P`` is
    not the data's; ``radii``: ``(r_radius, c_radius)``)."""
    check_choice("radius", radius, RADII)
    check_choice("sampling", sampling, SAMPLING)
    check_choice("method", method, METHODS)
    delta = check_probability("delta", delta)
    iterations = check_positive_int("iterations", iterations)
    check_reward_shape(counts, r)
    cnt, S, A = check_counts(counts)
    check_certificate_delta(delta, S, A, sampling)
    H = as_int("H", H)
    rew = as_float_array("r", r, 2)
    for name, value in (("c", c), ("c_bar", c_bar)):
        if value is None:
            raise CMDPInputError(
                f"{name}: solve_safe needs at least one constraint (N >= 1: c of shape (N, S, A) and c_bar of "
                f"shape (N,)), got None"
            )
    cost = as_float_array("c", c, 3)
    if cost.shape[0] < 1:
        raise CMDPInputError("c: solve_safe needs at least one constraint (N >= 1)")
    cb = as_float_array("c_bar", np.atleast_1d(np.asarray(c_bar, dtype=object)), 1)
    # validate r, c, c_bar, s0 and H first, on a self-loop kernel (O(S A)): the same checks and
    # messages as the empirical model's, before the empirical kernel is built
    mask = check_available_counts(cnt, actions, S, A)
    keep = np.ones(S * A, dtype=bool) if mask is None else mask.reshape(-1)  # a ragged model: no unavailable row
    indptr = np.concatenate([[0], np.cumsum(keep)])
    loops = sp.csr_array((np.ones(int(keep.sum())), np.repeat(np.arange(S), A)[keep], indptr), shape=(S * A, S))
    checked = CMDP(loops, rew, cost, cb, s0, H, actions=mask)
    rr, cr = check_radius("r_radius", radii[0], rew.shape), check_radius("c_radius", radii[1], cost.shape)
    return cnt, checked, H, delta, iterations, rr, cr


def solve_safe(
    counts: object,
    r: object,
    c: object,
    c_bar: object,
    s0: int,
    H: int,
    delta: float = 0.05,
    radius: str = "empirical-bernstein",
    sampling: str = "adaptive",
    iterations: int = 30,
    method: str = "fast",
    r_radius: object = None,
    c_radius: object = None,
    actions: object = None,
    compact: bool = False,
) -> SafePlan:
    """The policy with the highest certified value lower bound among certified-safe candidates.

    Args:
        counts: ``(S, A, S)`` transition counts, or a ``scipy.sparse`` ``(S*A, S)`` matrix/array whose
            row ``s*A + a`` holds ``n(s, a, .)``: the confidence set is then a ``SparseBox`` and the LPs
            run on the sparse empirical kernel (module docstring); the same results as dense counts.
        r: ``(S, A)`` rewards.
        c: ``(N, S, A)`` costs, ``N >= 1``.
        c_bar: ``(N,)`` thresholds.
        s0: initial state.
        H: horizon.
        delta: overall failure probability of the certificate every candidate must pass.
        radius: the certificate's radius rule ([`certify`][cmdp_rl.certificates.certify.certify]).
        sampling: ``"adaptive"`` or ``"fixed"`` sample sizes ([`certify`][cmdp_rl.certificates.certify.certify]).
        iterations: largest number of bisection steps on the margin (module docstring).
        method: the candidates' LP method (``"fast"`` or ``"lp"``, as for
            [`solve`][cmdp_rl.planning.solve.solve]); a candidate it fails on is solved with the
            other one, and skipped if that fails too (module docstring, "Solver failures").
        r_radius: half-widths of estimated rewards' intervals, as for [`certify`][cmdp_rl.certificates.certify.certify].
        c_radius: the same for the costs (``None``: known); every candidate's certificate uses both.
        actions: a ragged model's ``(S, A)`` mask (``None``: all available), as for ``certify``.
        compact: candidates as their plans' columns, certified as mixtures (``candidate_policy``,
            ``any_certificate``; no ``(H, S, A)`` table), what a learner playing mixtures hands over.

    Returns:
        A [`SafePlan`][cmdp_rl.certificates.safe.SafePlan]; every returned policy was certified safe by
        [`certify`][cmdp_rl.certificates.certify.certify]. A solver failure never raises: it skips a candidate.
    """
    cnt, checked, H, delta, iterations, rr, cr = _checked_inputs(
        counts, r, c, c_bar, s0, H, delta, radius, sampling, iterations, method, (r_radius, c_radius), actions
    )
    box, d = certificate_box(cnt, delta, radius, sampling, actions=checked.actions)  # one set for every candidate
    info = (radius, sampling, count_total(cnt), delta)
    N = checked.N
    weights = 1.0 / np.maximum(checked.c_bar, 1e-12)
    c_up = widened(checked.c, cr)[1]  # the costs the certificates bound
    weighted = np.tensordot(weights, c_up, axes=1)  # (S, A)
    if np.any(_least_upper_costs(box, d, c_up, checked, info, rr, cr) > checked.c_bar):
        # proven: no policy's cost_hi meets that threshold; no LP is solved
        robust = robust_min_cost_policy(box, weighted, H, checked.actions)
        cert = certificate_on_box(box, d, robust, checked.r, checked.c, checked.c_bar, s0, info, rr, cr)
        need = _samples_needed(cnt, weighted, checked, delta, radius, sampling)
        return SafePlan(None, cert, "uncertified", np.full(N, np.nan), 1, True, need, method="none")
    # the candidates' LPs run on the empirical model (same r, c, c_bar, s0, H as checked)
    base = checked.replace(P=kernel_estimate(cnt, checked.actions))
    best: tuple[tuple[float, float], Array | MixturePolicy, Certificate, Array] | None = None
    fallback: tuple[float, Certificate] | None = None
    tried = skipped = 0
    used: set[str] = set()

    def plan(thresholds: Array) -> PlanResult | None:
        nonlocal skipped
        res = _candidate(base.replace(c_bar=thresholds), method, used)
        skipped += res is None
        return res

    def consider(policy: Array | MixturePolicy, margin: Array, planned: float) -> Certificate:
        """Certify a candidate; keep the best certified one by (value lower bound, value on p_hat)."""
        nonlocal best, fallback, tried
        cert = any_certificate(box, d, policy, (base.r, base.c, base.c_bar), s0, info, (rr, cr))
        tried += 1
        key = (round(cert.value_lo, 9), planned)
        if cert.safe and (best is None or key > best[0]):
            best = (key, policy, cert, margin)
        excess = _worst_excess(cert, base.c_bar)
        if fallback is None or excess < fallback[0]:
            fallback = (excess, cert)
        return cert

    def at(t: float) -> bool:
        """Candidate with thresholds ``(1 - t) c_bar``; whether it is certified safe."""
        margin = t * base.c_bar
        res = plan(base.c_bar - margin)
        return res is not None and consider(candidate_policy(res, compact), margin, res.value).safe and res.feasible

    lo, hi = 0.0, 1.0
    if not at(lo):
        for _ in range(iterations):
            mid = 0.5 * (lo + hi)
            lo, hi = (lo, mid) if at(mid) else (mid, hi)
            if hi - lo < 1e-6:
                break
    res = plan(np.zeros(N))  # the LP's most conservative policy
    if res is not None:
        consider(candidate_policy(res, compact), base.c_bar.copy(), res.value)
    robust, nan_m = robust_min_cost_policy(box, weighted, H, checked.actions), np.full(N, np.nan)
    consider(table_mixture(robust) if compact else robust, nan_m, -np.inf)
    how = "+".join(m for m in METHODS if m in used) or "none"
    if best is not None:
        return SafePlan(best[1], best[2], "certified", best[3], tried, skipped=skipped, method=how)
    assert fallback is not None
    need = _samples_needed(cnt, weighted, base, delta, radius, sampling)
    return SafePlan(
        None,
        fallback[1],
        "uncertified",
        np.full(N, np.nan),
        tried,
        exact=N == 1,
        samples_per_pair=need,
        skipped=skipped,
        method=how,
    )


__all__ = ["SafePlan", "any_certificate", "candidate_policy", "one_hot", "robust_min_cost_policy", "solve_safe"]
