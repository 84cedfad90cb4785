"""Safety certificates from data alone: how good and how safe a policy is, for every plausible kernel.

[`certify`][cmdp_rl.certificates.certify.certify] bounds a fixed policy's value and costs over **every** kernel of the
confidence set built from transition counts, per-step kernels allowed (as in the paper's
extended LP). The set is a product of box-and-simplex sets, one per ``(h, s, a)``, so the
extremes are exact by robust backward induction (see the docs page 'Certificates, the math')::

    V_h(s) = sum_a pi_h(a|s) (r(s, a) + max_{p in B(s, a)} p . V_{h+1})

where the inner maximum is the greedy fill of extended value iteration (most valuable next
states first; for the minimum, least valuable first). Pairs with no samples allow every
distribution.

Radii (per entry, ``n = n(s, a)``, ``phat = counts / n``, per-entry failure ``delta'``):

* ``"empirical-bernstein"`` (default, valid): Maurer and Pontil (2009, Theorem 4) with the
  unbiased variance ``V_n = n phat (1 - phat) / (n - 1)`` and ``7L / (3 (n - 1))``,
  intersected with Hoeffding, each side of each at ``delta' / 4``, so ``L = log(8 / delta')``:
  ``beta = min(sqrt(2 V_n L / n) + 7 L / (3 (n - 1)), sqrt(L / (2 n)))``; ``n = 1``: Hoeffding
  only; ``n = 0``: everything plausible.
* ``"paper"``: the paper's Lemma 1 exactly, ``L = log(4 / delta')``,
  ``beta = min(sqrt(2 phat (1 - phat) L / n) + 2 L / (3 n), sqrt(L / (2 n)))`` (kept for
  reproduction: it is not a valid bound, see the docs page 'How it works' and docs/scenario2-gap.md).

The per-entry ``delta'`` (both radii): with ``S^2 A`` entries and a two-sided bound per
entry, ``sampling="fixed"`` (every ``n(s, a)`` fixed before sampling, e.g. a generative
model) uses ``delta' = delta / (S^2 A)``; ``sampling="adaptive"`` (default: data gathered by
a learner or logged from a running system, whose sample sizes depend on the data) takes a
union over sample sizes too, ``delta'(n) = delta / (2 S^2 A n^2)`` for an entry whose pair has
``n`` samples (``sum_{n >= 1} 1 / (2 n^2) < 1``).

Counts may be dense ``(S, A, S)`` or a ``scipy.sparse`` ``(S*A, S)`` matrix (row ``s*A + a`` holds
``n(s, a, .)``). Sparse counts are certified through
[`SparseBox`][cmdp_rl.confidence.sparse_box.SparseBox] (every unvisited successor of a pair shares one radius), in
memory ``O(nnz + S A N + H S A)``, with the same results as the same counts given dense.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from cmdp_rl.confidence.counts import Counts, check_counts, pair_counts
from cmdp_rl.confidence.radii import rule_radius
from cmdp_rl.confidence.sets import AnyBox, ConfidenceBox, rule_box
from cmdp_rl.evaluation.evaluate import validate_policy
from cmdp_rl.evaluation.mixture import MixturePolicy, is_plan, mixture_policy
from cmdp_rl.model.actions import Mask, available_count, check_action_table, check_actions, check_policy_support
from cmdp_rl.model.sparse import is_sparse_input
from cmdp_rl.model.units import Units
from cmdp_rl.plumbing.limits import MAX_EXACT_COUNT
from cmdp_rl.plumbing.names import RADII, SAMPLING
from cmdp_rl.plumbing.validation import (
    CMDPInputError,
    as_float_array,
    as_int,
    check_choice,
    check_derived_probability,
    check_probability,
    check_shape,
)

Array = NDArray[np.float64]


@dataclass(frozen=True)
class Certificate:
    """What the data certify about one policy.

    Attributes:
        value_lo, value_hi: the smallest and largest value ``V^pi(s0)`` over the confidence set.
        cost_lo, cost_hi: ``(N,)`` the same for each constraint's cost.
        safe: ``all(cost_hi <= c_bar)``: every plausible kernel keeps the policy within budget.
        status: (property) ``"certified"`` when ``safe``, else ``"uncertified"`` (the one
            vocabulary of every result type, [`RESULT_STATUSES`][cmdp_rl.plumbing.names.RESULT_STATUSES]).
        delta_prime: ``(S, A)`` the per-entry failure probability used for each pair's entries.
        radius: the radius rule, ``"empirical-bernstein"`` or ``"paper"``.
        sampling: ``"adaptive"`` or ``"fixed"``.
        samples: the number of transitions in the counts.
        delta: the overall failure probability.
    """

    value_lo: float
    value_hi: float
    cost_lo: Array
    cost_hi: Array
    safe: bool
    delta_prime: Array
    radius: str
    sampling: str
    samples: int
    delta: float

    @property
    def status(self) -> str:
        """``"certified"`` (every plausible kernel keeps the policy within budget) or ``"uncertified"``."""
        return "certified" if self.safe else "uncertified"


def per_entry_delta(delta: float, n: NDArray[np.int64], sampling: str, pairs: int | None = None) -> Array:
    """``(S, A)`` per-entry failure probabilities (module docstring): fixed or adaptive union bound
    over the ``S^2 A`` entries, or over ``S^2 pairs`` for a ragged model's ``pairs`` available pairs
    (an unavailable pair has no interval)."""
    S, A = n.shape
    base = delta / (S * (S * A if pairs is None else pairs))  # S next states per pair
    if sampling == "fixed":
        return np.full((S, A), base)
    out: Array = base / (2.0 * np.maximum(n, 1).astype(np.float64) ** 2)
    return out


def check_certificate_delta(delta: float, S: int, A: int, sampling: str) -> None:
    """``delta`` must leave every per-entry failure probability a normal float (at least 2.2e-308)
    for ANY counts of ``S`` states and ``A`` actions: ``delta / (S^2 A)`` for fixed sampling,
    ``delta / (2 S^2 A n^2)`` up to ``n = 2**53`` samples per pair (the most counts hold) for
    adaptive sampling. The rule depends on the sizes only, not on the data, so
    [`certify`][cmdp_rl.certificates.certify.certify] and [`solve_safe`][cmdp_rl.certificates.safe.solve_safe] (whose
    sample-size search scales the counts up) accept exactly the same ``delta``, before any work.

    Raises:
        CMDPInputError: naming ``delta``, with the smallest value accepted.
    """
    if sampling == "fixed":
        check_derived_probability("delta", delta, S * S * A, "delta / (S^2 A)")
    else:
        check_derived_probability(
            "delta",
            delta,
            2 * S * S * A * MAX_EXACT_COUNT**2,
            "delta / (2 S^2 A n^2) with n = 2**53 (the most samples a pair may hold)",
        )


def check_per_entry_delta(delta: float, delta_prime: Array) -> None:
    """The per-entry failure probabilities must not underflow to 0 (their logarithms set the radii)."""
    if not delta_prime.min(initial=1.0) > 0.0:
        raise CMDPInputError(
            f"delta: {delta:g} is too small for these counts: the per-entry failure probability delta / "
            f"(S^2 A) (divided by 2 n^2 for adaptive sampling) underflows to 0; use a larger delta"
        )


def certificate_radius(p_hat: Array, n: NDArray[np.int64], delta_prime: Array, rule: str) -> Array:
    """``(S, A, S)`` radii of ``rule`` with per-pair ``delta_prime (S, A)`` (module docstring)."""
    return rule_radius(p_hat, n, delta_prime, rule)


def robust_values(box: ConfidenceBox, policy: Array, reward: Array, s0: int, upper: bool) -> float:
    """The largest (``upper``) or smallest value of ``reward (S, A)`` under ``policy (H, S, A)``
    over every per-step kernel in ``box``: robust backward induction with the greedy fill."""
    return float(robust_values_batch(box, policy, reward[None], np.array([upper]), s0)[0])


def robust_values_batch(box: ConfidenceBox, policy: Array, rewards: Array, upper: NDArray[np.bool_], s0: int) -> Array:
    """[`robust_values`][cmdp_rl.certificates.certify.robust_values] for ``R`` rewards at once: ``rewards (R, S, A)``,
    ``upper (R,)``; returns ``(R,)``: the box's own
    [`robust_values`][cmdp_rl.confidence.sets.ConfidenceBox.robust_values] from ``s0`` (a certificate with
    ``N`` constraints costs ``H`` fills, not ``(2 N + 2) H``; a sparse box sweeps in memory
    ``O(nnz + R S)``, no ``(S, A, S)`` row).
    """
    out: Array = box.robust_values(policy, rewards, upper)[:, s0]
    return out


def certificate_box(
    counts: Counts,
    delta: float,
    radius: str,
    sampling: str,
    background: Array | None = None,
    actions: Mask | None = None,
) -> tuple[AnyBox, Array]:
    """The confidence set of validated counts and the ``(S, A)`` per-entry ``delta'`` it uses.

    ``counts``: dense ``(S, A, S)`` (a [`Box`][cmdp_rl.confidence.box.Box]) or ``(S*A, S)`` sparse
    (a [`SparseBox`][cmdp_rl.confidence.sparse_box.SparseBox], the same set stored in ``O(nnz + S A)``),
    as [`check_counts`][cmdp_rl.confidence.counts.check_counts] gives them; optional ``background (S*A,)``:
    the count of every unlisted state of each pair, sparse only
    ([`rule_box`][cmdp_rl.confidence.sets.rule_box]); ``actions``: a ragged model's ``(S, A)`` mask
    (the union bound runs over the available pairs only).
    """
    if not isinstance(counts, (np.ndarray, sp.csr_array)):  # another sparse format: its canonical CSR
        counts = check_counts(counts)[0]
    n = pair_counts(counts, background)
    d = per_entry_delta(delta, n, sampling, None if actions is None else available_count(actions, *n.shape))
    check_per_entry_delta(delta, d)
    return rule_box(counts, d, radius, background), d


def check_available_counts(counts: Counts, actions: Any, S: int, A: int) -> Mask | None:
    """The validated mask ``actions`` ([`check_actions`][cmdp_rl.model.actions.check_actions]); counts
    of an unavailable pair (data the model says cannot exist) are refused, naming the state."""
    mask = check_actions(actions, S, A)
    if mask is not None:
        bad = np.argwhere((pair_counts(counts) > 0) & ~mask)
        if bad.size:
            s, a = (int(v) for v in bad[0])
            raise CMDPInputError(
                f"counts: hold transitions of state {s}, action {a}, which is not available in state {s} "
                f"(actions[{s}, {a}] is False)"
            )
    return mask


def check_reward_shape(counts: Any, r: Any) -> None:
    """Before the counts are read: ``r``'s shape must be the ``(S, A)`` that the counts' shape
    implies (dense ``(S, A, S)``, sparse ``(S*A, S)``), so that sparse counts whose shape names
    billions of states are refused before an array of that many rows is allocated. Counts of
    another shape are left to their own validation."""
    sparse = is_sparse_input(counts)
    try:
        shape = tuple(int(x) for x in (counts.shape if sparse else np.shape(counts)))
        r_shape = np.shape(r)
    except (TypeError, ValueError):  # ragged or odd input: its own validation names it
        return
    sizes = None
    if len(shape) == 3 and shape[0] == shape[2] and min(shape) >= 1:
        sizes = (shape[0], shape[1])
    elif len(shape) == 2 and sparse and min(shape) >= 1 and shape[0] % shape[1] == 0:
        sizes = (shape[1], shape[0] // shape[1])
    if sizes is not None and r_shape != sizes:
        raise CMDPInputError(f"r: expected shape {sizes} (S, A of the counts), got {r_shape}")


def count_total(counts: Counts) -> int:
    """The number of transitions in validated counts (dense or CSR)."""
    return int(counts.data.sum()) if isinstance(counts, sp.csr_array) else int(counts.sum())


def check_radius(name: str, value: object, shape: tuple[int, ...]) -> Array | None:
    """``r_radius`` or ``c_radius``: ``None`` (the rewards or costs are known), or finite entries
    ``>= 0`` of ``shape`` (an ``(S, A)`` radius is used for every constraint of ``c_radius``)."""
    if value is None:
        return None
    one_for_all = name == "c_radius" and len(shape) == 3 and getattr(value, "ndim", None) == 2
    arr = as_float_array(name, value, 2 if one_for_all else len(shape))
    if one_for_all:  # one (S, A) radius for every constraint
        arr = np.broadcast_to(arr, shape)
    check_shape(name, arr, shape)
    if not np.all(arr >= 0.0):
        raise CMDPInputError(f"{name}: must be >= 0 (the half-width of each entry's interval)")
    return np.ascontiguousarray(arr, dtype=np.float64)


def widened(x: Array, radius: Array | None) -> tuple[Array, Array]:
    """``(x - radius, x + radius)`` for estimates ``x (K, S, A)`` with half-widths ``radius (K, S, A)``
    (``(x, x)`` without); a table whose estimates lie in ``[0, 1]`` (the unit scale, where the
    paper's Assumption 1 holds) is clipped to ``[0, 1]``, one in other units is not (nothing bounds
    its true values but the intervals themselves)."""
    if radius is None:
        return x, x
    flat = x.reshape(x.shape[0], -1)
    unit = ((flat >= 0.0) & (flat <= 1.0)).all(axis=1).reshape((-1,) + (1,) * (x.ndim - 1))
    lo, hi = x - radius, x + radius
    return np.where(unit, np.clip(lo, 0.0, 1.0), lo), np.where(unit, np.clip(hi, 0.0, 1.0), hi)


def certificate_on_box(
    box: ConfidenceBox,
    delta_prime: Array,
    policy: Array,
    r: Array,
    c: Array,
    c_bar: Array,
    s0: int,
    info: tuple[str, str, int, float],
    r_radius: Array | None = None,
    c_radius: Array | None = None,
) -> Certificate:
    """The [`Certificate`][cmdp_rl.certificates.certify.Certificate] of a validated policy over ``box`` (``info``:
    radius, sampling, samples, delta). Estimated rewards or costs (``r_radius (S, A)``, ``c_radius
    (N, S, A)``: the half-widths of their intervals) widen the bounds: the lower bounds use ``r -
    r_radius`` and ``c - c_radius``, the upper ones ``r + r_radius`` and ``c + c_radius``
    ([`widened`][cmdp_rl.certificates.certify.widened])."""
    rewards, upper = bound_tables(r, c, r_radius, c_radius)
    return certificate_of(robust_values_batch(box, policy, rewards, upper, s0), c_bar, delta_prime, info)


def bound_tables(r: Array, c: Array, r_radius: Array | None, c_radius: Array | None) -> tuple[Array, NDArray[np.bool_]]:
    """The ``2 N + 2`` reward tables ``(2N + 2, S, A)`` a certificate bounds and which bound of each
    (``upper (2N + 2,)``): the value's lower and upper, each cost's lower, each cost's upper, the
    tables [`widened`][cmdp_rl.certificates.certify.widened] by their radii."""
    N = c.shape[0]
    r_lo, r_hi = widened(r[None], None if r_radius is None else r_radius[None])
    c_lo, c_up = widened(c, c_radius)
    rewards = np.concatenate([r_lo, r_hi, c_lo, c_up])  # value lo, value hi, costs lo, costs hi
    return rewards, np.array([False, True] + [False] * N + [True] * N)


def certificate_of(v: Array, c_bar: Array, delta_prime: Array, info: tuple[str, str, int, float]) -> Certificate:
    """The [`Certificate`][cmdp_rl.certificates.certify.Certificate] of the ``2 N + 2`` bounds ``v`` in
    the order of [`bound_tables`][cmdp_rl.certificates.certify.bound_tables]."""
    N = c_bar.shape[0]
    c_lo, c_hi = v[2 : 2 + N].copy(), v[2 + N :].copy()
    radius, sampling, samples, delta = info
    return Certificate(
        float(v[0]), float(v[1]), c_lo, c_hi, bool(np.all(c_hi <= c_bar)), delta_prime, radius, sampling, samples, delta
    )


def column_bounds(
    box: ConfidenceBox, columns: NDArray[Any], rewards: Array, upper: NDArray[np.bool_], s0: int
) -> Array:
    """``(K, R)`` the robust value from ``s0`` of each deterministic Markov policy ``columns (K, H, S)``
    for each table of ``rewards (R, S, A)``: the largest (``upper[r]``) or smallest over every
    per-step kernel of ``box``, by robust backward induction
    ``V_h(s) = rew(s, a_h(s)) + ext_{p in B(s, a_h(s))} p . V_{h+1}`` (exact on the box's rectangular sets), one
    ``(S, A)`` greedy fill per step ([`fill`][cmdp_rl.confidence.sets.ConfidenceBox.fill]): memory
    ``O(S A)``, no ``(H, S, A)`` table."""
    K, H, S = columns.shape
    out = np.empty((K, rewards.shape[0]))
    rows = np.arange(S)
    for k in range(K):
        acts = columns[k].astype(np.intp)
        for j in range(rewards.shape[0]):
            V = np.zeros(S)
            for h in range(H - 1, -1, -1):
                V = rewards[j, rows, acts[h]] + box.fill(V, bool(upper[j]))[rows, acts[h]]
            out[k, j] = V[s0]
    return out


def mixture_certificate(
    box: ConfidenceBox,
    delta_prime: Array,
    mix: MixturePolicy,
    tables: tuple[Array, Array, Array],
    s0: int,
    info: tuple[str, str, int, float],
    radii: tuple[Array | None, Array | None] = (None, None),
) -> Certificate:
    """The certificate of a mixture of deterministic policies (one drawn per episode with its
    weight): each bound is the weighted sum ``sum_k w_k b_k`` of the columns' bounds
    ([`column_bounds`][cmdp_rl.certificates.certify.column_bounds]; ``tables``: ``r (S, A)``,
    ``c (N, S, A)``, ``c_bar (N,)``; ``radii``: ``r_radius``, ``c_radius``).

    Valid at the same level ``1 - delta``: every column's bound holds simultaneously on the one
    event that the true kernel lies in the confidence set (and the rewards and costs in their
    intervals), and on that event the mixture's value ``sum_k w_k V^{pi_k}`` (it is linear in
    the occupancy, the paper's eq. "occupancy-measure") lies between the weighted lower and upper
    bounds. It may be wider than one robust evaluation of the whole mixture (each column meets
    its own worst kernel); the robust bound of the mixture's Markov table is another quantity
    (that table has the mixture's values only on the model the plan was solved for).
    """
    r, c, c_bar = tables
    rewards, upper = bound_tables(r, c, *radii)
    v = mix.weights @ column_bounds(box, mix.columns, rewards, upper, s0)
    return certificate_of(v, c_bar, delta_prime, info)


def certify(
    policy: object,
    counts: object,
    r: object,
    c: object,
    c_bar: object,
    s0: int,
    H: int,
    delta: float = 0.05,
    radius: str = "empirical-bernstein",
    sampling: str = "adaptive",
    r_radius: object = None,
    c_radius: object = None,
    actions: object = None,
) -> Certificate:
    """Certify ``policy`` from ``counts`` alone: value and cost intervals over the confidence set.

    Args:
        policy: ``(H, S, A)`` the policy to certify, or a compact one: a
            [`MixturePolicy`][cmdp_rl.evaluation.mixture.MixturePolicy] (columns ``(K, H, S)``) or a
            plan with columns, certified by the weighted sum of its columns' bounds
            ([`mixture_certificate`][cmdp_rl.certificates.certify.mixture_certificate]: valid since every
            column's bound holds on the same confidence event).
        counts: ``(S, A, S)`` transition counts ``n(s, a, s2)``, or a ``scipy.sparse`` ``(S*A, S)``
            matrix/array whose row ``s*A + a`` holds ``n(s, a, .)`` (any format; memory then
            ``O(nnz + S A N + H S A)``, never an ``(S, A, S)`` array; same results).
        r: ``(S, A)`` rewards, any finite numbers (the bounds are in their units).
        c: ``(N, S, A)`` costs, any finite numbers.
        c_bar: ``(N,)`` thresholds.
        s0: initial state.
        H: horizon.
        delta: overall failure probability in (0, 1).
        radius: ``"empirical-bernstein"`` (valid, default) or ``"paper"`` (Lemma 1, for reproduction).
        sampling: ``"adaptive"`` (default) or ``"fixed"`` sample sizes (the union bound of ``delta'``).
        r_radius: ``(S, A)`` half-widths of the rewards' intervals when ``r`` is an estimate (e.g.
            a simulator's Hoeffding radii), or ``None`` (known rewards).
        c_radius: ``(N, S, A)`` (or one ``(S, A)`` for every constraint) half-widths of the costs'
            intervals when ``c`` is an estimate, or ``None``. The bounds then hold when the
            kernel's set and these intervals all hold (their failure probabilities add up).
        actions: a ragged model's ``(S, A)`` bool mask of the available actions (``None``: all):
            the policy may not play another, the counts hold none of another, and the union bound
            of ``delta'`` runs over the available pairs.

    Returns:
        A [`Certificate`][cmdp_rl.certificates.certify.Certificate]; the intervals are exact for the set (robust
        backward induction).
    """
    check_choice("radius", radius, RADII)
    check_choice("sampling", sampling, SAMPLING)
    delta = check_probability("delta", delta)
    check_reward_shape(counts, r)
    cnt, S, A = check_counts(counts)
    check_certificate_delta(delta, S, A, sampling)
    H = as_int("H", H)
    if H < 1:
        raise CMDPInputError(f"H: horizon must be >= 1, got {H}")
    mix = _mixture_of(policy, A)
    pol = validate_policy(policy, H, S, A) if mix is None else None
    rew = as_float_array("r", r, 2)
    check_shape("r", rew, (S, A))
    cost = as_float_array("c", np.zeros((0, S, A)) if c is None else c, 3)
    if cost.shape[1:] != (S, A):
        raise CMDPInputError(f"c: expected shape (N, {S}, {A}), got {cost.shape}")
    cb = as_float_array("c_bar", np.zeros(0) if c_bar is None else np.atleast_1d(np.asarray(c_bar, dtype=object)), 1)
    check_shape("c_bar", cb, (cost.shape[0],))
    s0 = as_int("s0", s0)
    if not 0 <= s0 < S:
        raise CMDPInputError(f"s0: must be a state index in [0, {S - 1}], got {s0}")
    Units.of(rew, cost, H)  # returns of these rewards and costs must not overflow
    rr = check_radius("r_radius", r_radius, (S, A))
    cr = check_radius("c_radius", c_radius, cost.shape)
    mask = check_available_counts(cnt, actions, S, A)
    if mix is not None:
        _check_columns(mix, H, S, A, mask)
    else:
        assert pol is not None
        check_policy_support("policy", pol, mask)
    box, d = certificate_box(cnt, delta, radius, sampling, actions=mask)
    info = (radius, sampling, count_total(cnt), delta)
    if mix is not None:
        return mixture_certificate(box, d, mix, (rew, cost, cb), s0, info, (rr, cr))
    assert pol is not None
    return certificate_on_box(box, d, pol, rew, cost, cb, s0, info, rr, cr)


def _mixture_of(policy: object, A: int) -> MixturePolicy | None:
    """A compact policy: a [`MixturePolicy`][cmdp_rl.evaluation.mixture.MixturePolicy] as given, a plan
    with columns as its mixture (its columns and weights, no dense table), else ``None`` (a table)."""
    if isinstance(policy, MixturePolicy):
        return policy
    if is_plan(policy) and getattr(policy, "columns", None) is not None:
        return mixture_policy(getattr(policy, "columns"), getattr(policy, "weights"), A)  # noqa: B009
    return None


def _check_columns(mix: MixturePolicy, H: int, S: int, A: int, mask: Mask | None) -> None:
    """The columns of a certified mixture: ``(K, H, S)`` (finite horizon), actions the model has (and,
    on a ragged model, available ones)."""
    if mix.columns.ndim != 3 or mix.columns.shape[1:] != (H, S):
        raise CMDPInputError(f"policy: expected columns of shape (K, {H}, {S}), got {mix.columns.shape}")
    if int(mix.columns.max()) >= A:
        idx = [int(i) for i in np.argwhere(mix.columns >= A)[0]]
        raise CMDPInputError(f"policy.columns{idx}: plays action {int(mix.columns[tuple(idx)])}, there are A = {A}")
    check_action_table("policy.columns", mix.columns, mask)


__all__ = [
    "RADII",
    "SAMPLING",
    "Certificate",
    "bound_tables",
    "certificate_box",
    "certificate_of",
    "certificate_on_box",
    "certificate_radius",
    "certify",
    "check_available_counts",
    "check_certificate_delta",
    "check_per_entry_delta",
    "check_radius",
    "check_reward_shape",
    "column_bounds",
    "count_total",
    "mixture_certificate",
    "per_entry_delta",
    "robust_values",
    "robust_values_batch",
    "widened",
]
