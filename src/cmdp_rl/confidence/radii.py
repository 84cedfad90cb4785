"""Confidence sets of transition kernels (paper eqs. "bernstein-hoeffding", "transition-class-k").

For every ``(s, a, s2)`` with ``n = n(s, a) > 0`` and ``L = log(4 / delta')``::

    beta = min( sqrt(2 phat (1 - phat) L / n) + 2 L / (3 n),  sqrt(L / (2 n)) )

and a kernel ``P'`` is plausible when ``|P'(s2|s,a) - phat(s2|s,a)| <= beta`` for all
entries (rows of ``P'`` are distributions). With ``n(s, a) = 0`` every distribution
is plausible: ``phat`` is then uniform and ``beta = 1``.

That is the paper's Lemma 1 (``rule="paper"``). It is not a valid bound (the plug-in
variance and ``2L/(3n)`` undercover; see the docs page 'How it works'). ``rule="empirical-bernstein"``
is a radius with a proof (Maurer and Pontil 2009, Theorem 4, unbiased variance
``V_n = n phat (1 - phat) / (n - 1)``, intersected with Hoeffding, each side of each at
``delta' / 4``, so ``L = log(8 / delta')``)::

    beta = min( sqrt(2 V_n L / n) + 7 L / (3 (n - 1)),  sqrt(L / (2 n)) )   (n >= 2)

with Hoeffding alone for ``n = 1`` and ``beta = 1`` for ``n = 0`` (see the docs page 'Certificates, the math').
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba as nb
import numpy as np
from numpy.typing import NDArray

from cmdp_rl.confidence.counts import empirical_kernel as empirical_kernel  # its home: counts
from cmdp_rl.confidence.counts import validate_counts as validate_counts
from cmdp_rl.plumbing.names import RADII as RADII  # the radius rules' names, defined without imports
from cmdp_rl.plumbing.validation import (
    CMDPInputError,
    as_float,
    as_float_array,
    check_choice,
    check_derived_probability,
    check_open_unit,
    check_positive_int,
    check_probability,
    log_ratio,
    plain,
)

Array = NDArray[np.float64]


#: slack when checking membership, for kernels computed in floating point
CONTAINS_TOL = 1e-12


def delta_p(delta: float, S: int, A: int, H: int, N: int) -> float:
    """Optimistic-GMBL's per-entry failure probability ``delta / (12 (N+2) |S|^2 |A| H)`` (Algorithm 1).

    Raises:
        CMDPInputError: naming ``delta`` when the result would fall below 2.2e-308, the smallest
            normal float (its logarithm sets the radii), with the smallest ``delta`` that works.
    """
    delta = check_probability("delta", delta)
    S, A, H = check_positive_int("S", S), check_positive_int("A", A), check_positive_int("H", H)
    N = check_positive_int("N", N, 0)
    return check_derived_probability("delta", delta, 12 * (N + 2) * S**2 * A * H, "delta / (12 (N+2) S^2 A H)")


def delta_1(delta: float, S: int, N: int, U: float) -> float:
    """Online-CRL's per-entry failure probability ``delta / (4 (N+1) |S| U)`` (Algorithm 2).

    ``U`` is the number of model updates in the union bound: ``U_max = |S|^2 |A| m``
    in theory mode, the number of planned episodes in budget mode.
    """
    delta = check_probability("delta", delta)
    S, N = check_positive_int("S", S), check_positive_int("N", N, 0)
    U = as_float("U", U, finite=False)
    if not U >= 1:
        raise CMDPInputError(f"U: the number of model updates must be >= 1, got {plain(U)}")
    return check_derived_probability("delta", delta, 4.0 * (N + 1) * S * U, "delta / (4 (N+1) S U)")


def radius(p_hat: Array, n: NDArray[np.integer] | Array, delta_prime: float) -> Array:
    """The combined Bernstein/Hoeffding radius ``beta`` (paper eq. "bernstein-hoeffding").

    Args:
        p_hat: ``(S, A, S)`` empirical kernel.
        n: ``(S, A)`` sample counts ``n(s, a)``; entries with ``n = 0`` get ``beta = 1``.
        delta_prime: per-entry failure probability in (0, 1).

    Returns:
        ``(S, A, S)`` radii.
    """
    delta_prime = check_open_unit("delta_prime", delta_prime)
    p_hat = as_float_array("p_hat", p_hat, 3)
    n_arr = np.asarray(n)
    if n_arr.shape != p_hat.shape[:2]:
        raise CMDPInputError(f"n: expected shape {p_hat.shape[:2]} to match p_hat {p_hat.shape}, got {n_arr.shape}")
    return rule_radius(p_hat, n_arr, delta_prime, "paper")


def empirical_bernstein_radius(p_hat: Array, n: NDArray[np.integer], delta_prime: float | Array) -> Array:
    """Maurer-Pontil empirical Bernstein radius intersected with Hoeffding (module docstring).

    Args:
        p_hat: ``(S, A, S)`` empirical kernel.
        n: ``(S, A)`` sample counts.
        delta_prime: per-entry failure probability, a number or ``(S, A)`` (one per pair).

    Returns:
        ``(S, A, S)`` radii; ``1`` where ``n = 0``.
    """
    return rule_radius(p_hat, n, delta_prime, "empirical-bernstein")


@nb.njit(cache=True, inline="always")
def entry_radius(p: float, n: int, L: float, valid: bool) -> float:
    """The radius of one entry ``p`` with ``n = n(s, a)`` samples and ``L = log(k / delta')``:
    the paper's Lemma 1 (``valid=False``, ``k = 4``) or the empirical Bernstein rule
    (``valid=True``, ``k = 8``); see the module docstring. 1 for ``n = 0``."""
    if n <= 0:
        return 1.0
    nn = float(n)
    hoef = math.sqrt(L / (2.0 * nn))
    if not valid:
        bern = math.sqrt(2.0 * p * (1.0 - p) * L / nn) + 2.0 * L / (3.0 * nn)
        return min(bern, hoef)
    if n < 2:
        return hoef
    var = nn * p * (1.0 - p) / (nn - 1.0)
    bern = math.sqrt(2.0 * var * L / nn) + 7.0 * L / (3.0 * (nn - 1.0))
    return min(bern, hoef)


@nb.njit(cache=True)
def _radii(p_hat: np.ndarray, n: np.ndarray, L: np.ndarray, valid: bool) -> np.ndarray:
    """``(S, A, S)`` radii of ``entry_radius`` (``n``, ``L``: ``(S, A)``)."""
    S, A, S2 = p_hat.shape
    out = np.empty((S, A, S2))
    for s in range(S):
        for a in range(A):
            for j in range(S2):
                out[s, a, j] = entry_radius(p_hat[s, a, j], n[s, a], L[s, a], valid)
    return out


@nb.njit(cache=True)
def box_bounds(counts: np.ndarray, L: np.ndarray, valid: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The plausible set of the counts in one pass: ``lower = clip(p_hat - beta, 0, 1)``,
    ``upper = clip(p_hat + beta, 0, 1)``, ``room = upper - lower`` (each ``(S, A, S)``) and
    ``spare = 1 - sum lower`` ``(S, A)``, with [`empirical_kernel`][cmdp_rl.confidence.counts.empirical_kernel]'s
    ``p_hat`` and
    the radii of ``entry_radius`` (``counts`` int64 ``(S, A, S)``, ``L`` ``(S, A)``).
    The learners' per-episode confidence set ([`Box.from_counts`][cmdp_rl.confidence.box.Box.from_counts])."""
    S, A, S2 = counts.shape
    lower = np.empty((S, A, S2))
    upper = np.empty((S, A, S2))
    room = np.empty((S, A, S2))
    spare = np.empty((S, A))
    for s in range(S):
        for a in range(A):
            n = 0
            for j in range(S2):
                n += counts[s, a, j]
            total = 0.0
            for j in range(S2):
                p = counts[s, a, j] / n if n > 0 else 1.0 / S2
                beta = entry_radius(p, n, L[s, a], valid)
                lo = min(max(p - beta, 0.0), 1.0)
                hi = min(max(p + beta, 0.0), 1.0)
                lower[s, a, j] = lo
                upper[s, a, j] = hi
                room[s, a, j] = hi - lo
                total += lo
            spare[s, a] = 1.0 - total
    return lower, upper, room, spare


def radius_log(delta_prime: float | Array, shape: tuple[int, int], rule: str) -> Array:
    """``(S, A)`` logarithms ``L = log(k / delta')`` of ``rule`` (``k = 4`` for ``"paper"``,
    ``8`` for ``"empirical-bernstein"``) at per-entry ``delta_prime`` (a number or ``(S, A)``).

    Raises:
        CMDPInputError: ``rule`` unknown, or a ``delta_prime`` outside (0, 1) or not of shape ``(S, A)``.
    """
    k = 8.0 if check_choice("rule", rule, RADII) == "empirical-bernstein" else 4.0
    # log(k) - log(delta'), never log(k / delta'): k / delta' overflows to inf for delta' < k / 1.8e308
    # (an infinite L makes 0 * inf = nan radii)
    if np.ndim(delta_prime) == 0:  # the common case, without broadcasting machinery
        return np.full(shape, log_ratio(k, check_open_unit("delta_prime", delta_prime)))  # type: ignore[arg-type]
    d = np.asarray(delta_prime, dtype=np.float64)
    if d.shape != shape or not bool(np.all((d > 0.0) & (d < 1.0))):
        raise CMDPInputError(f"delta_prime: expected a number or shape {shape} with entries in (0, 1), got {d.shape}")
    with np.errstate(over="ignore"):
        ratio = k / d
    return np.ascontiguousarray(np.where(np.isfinite(ratio), np.log(ratio), np.log(k) - np.log(d)))


def rule_radius(p_hat: Array, n: NDArray[np.integer], delta_prime: float | Array, rule: str) -> Array:
    """``(S, A, S)`` radii of ``rule`` (``"paper"`` or ``"empirical-bernstein"``) at per-entry
    ``delta_prime`` (a number or ``(S, A)``)."""
    nn = np.ascontiguousarray(n, dtype=np.int64)
    L = radius_log(delta_prime, nn.shape, rule)
    out: Array = _radii(np.ascontiguousarray(p_hat, dtype=np.float64), nn, L, rule == "empirical-bernstein")
    return out


@dataclass(frozen=True)
class ConfidenceSet:
    """The plausible kernels around an empirical model.

    Attributes:
        p_hat: ``(S, A, S)`` empirical kernel (uniform rows where ``n(s, a) = 0``).
        beta: ``(S, A, S)`` radii.
        n: ``(S, A)`` sample counts.
        delta_prime: the per-entry failure probability used.
    """

    p_hat: Array
    beta: Array
    n: NDArray[np.int64]
    delta_prime: float

    @property
    def lower(self) -> Array:
        """``(S, A, S)`` lower bounds ``max(phat - beta, 0)``."""
        return np.clip(self.p_hat - self.beta, 0.0, 1.0)

    @property
    def upper(self) -> Array:
        """``(S, A, S)`` upper bounds ``min(phat + beta, 1)``."""
        return np.clip(self.p_hat + self.beta, 0.0, 1.0)

    def contains(self, P: Array, tol: float = CONTAINS_TOL) -> bool:
        """Whether the kernel ``P`` (``(S, A, S)`` or ``(H, S, A, S)``) lies in the set."""
        return bool(np.all(np.abs(np.asarray(P) - self.p_hat) <= self.beta + tol))


def confidence_set(counts: object, delta_prime: float, rule: str = "paper") -> ConfidenceSet:
    """The plausible set of paper eq. "transition-class-k" from transition counts.

    Args:
        counts: ``(S, A, S)`` transition counts ``n(s, a, s2)``.
        delta_prime: per-entry failure probability (``delta_P`` or ``delta_1``).
        rule: the radius rule, ``"paper"`` (eq. "bernstein-hoeffding") or ``"empirical-bernstein"``.
    """
    cnt = validate_counts(counts)
    delta_prime = check_open_unit("delta_prime", delta_prime)
    p_hat, n = empirical_kernel(cnt)
    return ConfidenceSet(p_hat, rule_radius(p_hat, n, delta_prime, rule), n, float(delta_prime))
