"""One confidence-set type with two layouts, built from counts of either layout.

A confidence set of transition kernels is a box-and-simplex set per pair ``(s, a)``:
``{p : lower <= p <= upper, sum p = 1}``. [`ConfidenceBox`][cmdp_rl.confidence.sets.ConfidenceBox] is
what every caller may use of one: its sizes, the greedy fill, robust evaluation and the robust
optimal sweep. It has two layouts:

* [`Box`][cmdp_rl.confidence.box.Box]: dense ``(S, A, S)`` bounds (extended value iteration and the
  dense extended LP's columns run on it);
* [`SparseBox`][cmdp_rl.confidence.sparse_box.SparseBox]: the bounds of the listed entries of
  ``(S*A, S)`` sparse counts plus one shared bound per pair, memory ``O(nnz + S A)``.

The constructors below pick the layout from the counts (dense ``(S, A, S)`` arrays give a ``Box``,
``scipy.sparse`` ``(S*A, S)`` counts a ``SparseBox``), so their callers need not branch. On the
same counts both layouts hold the same set (entry by entry), and their sweeps agree to rounding.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeAlias

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from cmdp_rl.confidence.box import Box, IntArray
from cmdp_rl.confidence.counts import Counts, check_counts, empirical_kernel, validate_sparse_counts
from cmdp_rl.confidence.radii import rule_radius
from cmdp_rl.confidence.sparse_box import SparseBox, entry_radius_sums
from cmdp_rl.model.sparse import is_sparse_input

Array = NDArray[np.float64]
#: an entry radius rule ``beta = radius(p_hat, n)``, elementwise over arrays of the same shape
EntryRadius: TypeAlias = Callable[[Array, IntArray], Array]


class ConfidenceBox(Protocol):
    """A box-and-simplex confidence set over kernels, in either layout (module docstring)."""

    @property
    def S(self) -> int:
        """Number of states."""

    @property
    def A(self) -> int:
        """Number of actions."""

    @property
    def nbytes(self) -> int:
        """Bytes held by the set's arrays."""

    def to_box(self) -> Box:
        """The dense layout of the set (a sparse one refuses a large model)."""

    def fill(self, V: Array, upper: bool = True) -> Array:
        """``(S, A)`` the largest (``upper``) or smallest ``p . V`` over each pair's plausible rows."""

    def robust_values(self, policy: Array, rewards: Array, upper: NDArray[np.bool_]) -> Array:
        """``(R, S)`` the robust values ``V_0`` of ``rewards (R, S, A)`` under ``policy (H, S, A)``."""

    def robust_sweep(self, reward: Array, H: int, upper: bool = True, maximize: bool = True) -> tuple[Array, IntArray]:
        """Robust optimal backward induction: ``values (H + 1, S)`` and ``actions (H, S)``."""


#: either layout, as a concrete type (what ``isinstance`` and the planners dispatch on)
AnyBox: TypeAlias = Box | SparseBox


def confidence_box(counts: object, delta_prime: float | Array, rule: str) -> AnyBox:
    """The learners' per-episode confidence set of ``rule`` (``"paper"`` or
    ``"empirical-bernstein"``) around the empirical kernel of ``counts``, at per-entry failure
    probability ``delta_prime`` (a number or ``(S, A)``): [`Box.from_counts`][cmdp_rl.confidence.box.Box.from_counts]
    for dense ``(S, A, S)`` counts (one compiled pass),
    [`SparseBox.from_counts`][cmdp_rl.confidence.sparse_box.SparseBox.from_counts] for sparse ``(S*A, S)`` ones.

    Raises:
        CMDPInputError: counts that break [`check_counts`][cmdp_rl.confidence.counts.check_counts]'s rules,
            ``rule`` unknown, ``delta_prime`` outside (0, 1).
    """
    if is_sparse_input(counts):
        return SparseBox.from_counts(counts, delta_prime, rule)
    return Box.from_counts(counts, delta_prime, rule)


def rule_box(counts: Counts, delta_prime: float | Array, rule: str, background: Array | None = None) -> AnyBox:
    """The confidence set of ``rule`` at ``delta_prime`` (a number or per pair ``(S, A)``) around validated counts
    (from [`check_counts`][cmdp_rl.confidence.counts.check_counts]): dense,
    ``Box.from_radius(p_hat, rule_radius(p_hat, n, delta_prime, rule))`` in plain NumPy; sparse,
    [`SparseBox.from_valid_counts`][cmdp_rl.confidence.sparse_box.SparseBox.from_valid_counts] with the
    optional ``background (S*A,)`` count of every unlisted state of each pair. The certificates'
    set."""
    if isinstance(counts, np.ndarray):
        p_hat, n = empirical_kernel(counts)
        return Box.from_radius(p_hat, rule_radius(p_hat, n, delta_prime, rule))
    csr = counts if isinstance(counts, sp.csr_array) else validate_sparse_counts(counts)
    return SparseBox.from_valid_counts(csr, delta_prime, rule, background)


def radius_box(counts: object, radius: EntryRadius) -> AnyBox:
    """The box ``|P - p_hat| <= beta`` (clipped to [0, 1]) of an entry radius rule
    ``beta = radius(p_hat, n)`` around the empirical kernel of counts of either layout; a pair
    without samples allows every distribution. Dense: ``Box.from_radius(p_hat, radius(p_hat,
    n[..., None]))``; sparse:
    [`SparseBox.from_entry_radius`][cmdp_rl.confidence.sparse_box.SparseBox.from_entry_radius].
    The baselines' sets (e.g. Efroni et al.'s Bernstein radii)."""
    cnt, _, _ = check_counts(counts)
    if isinstance(cnt, np.ndarray):
        p_hat, n = empirical_kernel(cnt)
        return Box.from_radius(p_hat, radius(p_hat, n[..., None]))
    return SparseBox.from_entry_radius(cnt, radius)


def empirical_box(counts: object) -> AnyBox:
    """The single kernel ``p_hat`` (radius 0) of counts of either layout: ``n(s, a, s2) / n(s, a)``,
    the uniform row ``1 / S`` for an unvisited pair (the plug-in baselines' model)."""
    cnt, _, _ = check_counts(counts)
    if isinstance(cnt, np.ndarray):
        p_hat, _ = empirical_kernel(cnt)
        return Box.from_radius(p_hat, np.zeros_like(p_hat))
    return SparseBox.empirical(cnt)


def empirical_box_and_sums(counts: object, radius: EntryRadius) -> tuple[AnyBox, Array]:
    """[`empirical_box`][cmdp_rl.confidence.sets.empirical_box] and
    [`radius_sums`][cmdp_rl.confidence.sets.radius_sums] of the same counts, validated and
    estimated once (the bonus baselines' per-episode step): the same numbers as the two calls."""
    cnt, _, _ = check_counts(counts)
    if isinstance(cnt, np.ndarray):
        p_hat, n = empirical_kernel(cnt)
        sums: Array = radius(p_hat, n[..., None]).sum(axis=-1)
        return Box.from_radius(p_hat, np.zeros_like(p_hat)), sums
    return SparseBox.empirical(cnt), entry_radius_sums(cnt, radius)


def radius_sums(counts: object, radius: EntryRadius) -> Array:
    """``(S, A)`` a pair's bonus ``sum_s2 radius(p_hat, n)(s, a, s2)`` over all ``S`` next states, from
    counts of either layout (sparse: without an ``(S, A, S)`` array,
    [`entry_radius_sums`][cmdp_rl.confidence.sparse_box.entry_radius_sums])."""
    cnt, _, _ = check_counts(counts)
    if isinstance(cnt, np.ndarray):
        p_hat, n = empirical_kernel(cnt)
        out: Array = radius(p_hat, n[..., None]).sum(axis=-1)
        return out
    return entry_radius_sums(cnt, radius)


__all__ = [
    "AnyBox",
    "ConfidenceBox",
    "EntryRadius",
    "confidence_box",
    "empirical_box",
    "empirical_box_and_sums",
    "radius_box",
    "radius_sums",
    "rule_box",
]
