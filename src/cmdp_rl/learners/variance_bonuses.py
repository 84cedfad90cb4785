"""DOPE+'s cost pessimism and reward optimism: a variance (law of total variance) bound on an episode's
kernel error, made linear for the extended LP (see the docs page 'Baselines', section dope-plus).

Pure, vectorized functions of transition counts of either layout (dense ``(S, A, S)`` or sparse
``(S*A, S)``; pooled over the steps ``h``), the horizon ``H``, the budget ``K`` and ``delta``.

The bound. Let ``P~`` be the kernel the extended LP picks from DOPE's Bernstein set (``dope_radius``,
``L = log(2 S A H K / delta)``), ``q`` the occupancy of the policy under ``P~``, and ``V`` the true
cost-to-go (values in ``[0, H]``). The simulation lemma gives the episode's cost error
``C(P) - C(P~) = sum_h E_q[(P - P~) V_{h+1}]``. Per pair, with ``|P - P~| <= 2 beta`` entrywise and
Cauchy-Schwarz over the ``S_+(s, a)`` next states seen so far::

    |(P - P~) V| <= sqrt(psi Var(V_{h+1})) + xi,
    psi(s, a) = 16 (S_+ - 1) L / n,        xi(s, a) = (28 / 3) S H L / n        (n = n(s, a) > 0)

and Cauchy-Schwarz over the steps, with the law of total variance bounding the expected sum of the
variances by ``W`` (``variance_budget``: ``H^2 / 4`` for an episode's total in ``[0, H]``, the paper's
order; ``"span"``: ``sum_h (H - h - 1)^2 / 4``, which needs no law of total variance)::

    C(P) <= C(P~) + sqrt(W sum_h E_q[psi]) + sum_h E_q[xi]

The square root is concave in ``q``; its tangent at any ``mu > 0``,
``sqrt(W y) <= (W y / mu + mu) / 2``, is a linear upper bound, i.e. a per-step bonus
``W psi / (2 mu) + mu / (2 H)`` (the occupancy sums to ``H``). A pair may use DOPE's per-step bound
``H min(beta_bar, 1)`` instead (unvisited pairs always do); each pair takes the smaller. So every
per-step cost bonus here is at most DOPE's plus ``mu / (2 H)``, and the reward bonus is ``H / gamma``
times the cost bonus, DOPE's ratio (``H^2 / gamma`` against ``H``). Every bonus is multiplied by
``bonus_scale``. Inputs are validated and never modified.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.confidence.counts import check_counts, pair_counts
from cmdp_rl.confidence.sets import radius_sums
from cmdp_rl.learners.bonuses import bernstein_entry, efroni_log
from cmdp_rl.plumbing.validation import (
    CMDPInputError,
    as_float,
    as_float_array,
    check_choice,
    check_positive_int,
    check_probability,
    plain,
)

Array = NDArray[np.float64]

#: the bound ``W`` on an episode's expected sum of the cost-to-go's variances: ``"ltv"`` (law of total
#: variance, ``H^2 / 4``, the paper's) or ``"span"`` (``sum_h (H - h - 1)^2 / 4``, step by step)
VARIANCE_BOUNDS: tuple[str, ...] = ("ltv", "span")

#: the constant of ``psi``: ``(2 * 2)^2``, twice the Bernstein radius' ``sqrt(4 p (1 - p) L / n)``
PSI_FACTOR = 16.0
#: the constant of ``xi``: twice the Bernstein radius' ``14 L / (3 n)``
XI_FACTOR = 28.0 / 3.0


def variance_budget(H: int, variance: str = "ltv") -> float:
    """``W``, the bound on ``sum_h E[Var(V_{h+1})]`` of a cost-to-go with values in ``[0, H]``.

    ``"ltv"``: ``H^2 / 4``, the variance of an episode's total cost (in ``[0, H]``), which the law of
    total variance makes the expected sum of the step variances (the paper's order: abstract of
    arXiv 2410.10158; its exact lemma was not read). ``"span"``: ``sum_{h < H} (H - h - 1)^2 / 4 =
    (H - 1) H (2 H - 1) / 24``, each step's variance bounded by its span (no law of total variance).

    Args:
        H: horizon (>= 1).
        variance: ``"ltv"`` or ``"span"`` (``VARIANCE_BOUNDS``).

    Returns:
        ``W >= 0``.
    """
    H = check_positive_int("H", H)
    variance = check_choice("variance", variance, VARIANCE_BOUNDS)
    if variance == "ltv":
        return H * H / 4.0
    return (H - 1) * H * (2 * H - 1) / 24.0


def dope_plus_terms(counts: object, H: int, K: int, delta: float) -> tuple[Array, Array, Array]:
    """The per-pair pieces of DOPE+'s bound (module docstring), from counts of either layout.

    With ``n = n(s, a)``, ``S_+(s, a)`` the number of next states seen from the pair,
    ``L = log(2 S A H K / delta)`` and ``beta_bar = sum_s2 dope_radius(...)``::

        psi      = 16 (S_+ - 1) L / n          (0 where n = 0)
        xi       = (28 / 3) S H L / n          (inf where n = 0)
        fallback = H min(beta_bar, 1)          (DOPE's per-step bound, capped at the span; H where n = 0)

    Args:
        counts: ``(S, A, S)`` or sparse ``(S*A, S)`` non-negative integer transition counts.
        H: horizon (>= 1).
        K: number of episodes of the run (>= 1).
        delta: failure probability in (0, 1).

    Returns:
        ``(psi, xi, fallback)``, each ``(S, A)``.
    """
    cnt, S, A = check_counts(counts)
    if S == 0 or A == 0:
        raise CMDPInputError(f"counts: needs at least one state and one action, got S = {S}, A = {A}")
    H, K = check_positive_int("H", H), check_positive_int("K", K)
    L = efroni_log(S, A, H, K, check_probability("delta", delta))
    beta_bar = radius_sums(cnt, lambda p, m: bernstein_entry(p, m, L))
    n = pair_counts(cnt).astype(np.float64)
    seen = radius_sums(cnt, lambda p, m: np.where(m > 0, p > 0, False).astype(np.float64))
    visited = n > 0
    inv = np.divide(L, n, out=np.zeros_like(n), where=visited)
    psi: Array = PSI_FACTOR * np.maximum(seen - 1.0, 0.0) * inv
    xi: Array = np.where(visited, XI_FACTOR * S * H * inv, np.inf)
    fallback: Array = H * np.minimum(beta_bar, 1.0)
    return psi, xi, fallback


def dope_plus_scale(occupancy: object, psi: object, variance: float) -> float:
    """The tangent point ``mu = sqrt(W sum_{h, s, a} q[h, s, a] psi[s, a])``: where the linear bonus
    of ``dope_plus_cost_bonus`` equals the square-root bound for the occupancy ``q`` (DOPE+ takes the
    previous plan's; any ``mu >= 0`` keeps the bound valid).

    Args:
        occupancy: ``(H, S, A)`` non-negative state-action occupancy ``q``.
        psi: ``(S, A)`` the variance term of ``dope_plus_terms``.
        variance: ``W`` (``variance_budget``), >= 0.

    Returns:
        ``mu >= 0``.
    """
    q = as_float_array("occupancy", occupancy, 3)
    ps = as_float_array("psi", psi, 2)
    if q.shape[1:] != ps.shape:
        raise CMDPInputError(f"occupancy: expected shape (H, {ps.shape[0]}, {ps.shape[1]}), got {q.shape}")
    if (q < 0).any() or (ps < 0).any():
        raise CMDPInputError("occupancy, psi: must be non-negative")
    W = as_float("variance", variance)
    if W < 0:
        raise CMDPInputError(f"variance: the budget W must be >= 0, got {plain(variance)}")
    return math.sqrt(W * float(np.einsum("hsa,sa->", q, ps)))


def dope_plus_cost_bonus(psi: Array, xi: Array, fallback: Array, H: int, variance: float, mu: float) -> Array:
    """``(S, A)`` DOPE+'s per-step cost bonus at the tangent point ``mu`` (no ``bonus_scale``).

    Each pair takes the variance route ``W psi / (2 mu) + xi`` where it is below DOPE's
    ``fallback`` (the set ``A``), else the fallback; when some pair of ``A`` has ``psi > 0``, every
    pair also pays the tangent's constant ``mu / (2 H)``::

        b = where(A, W psi / (2 mu) + xi, fallback) + (mu / (2 H) if any(A & (psi > 0)) else 0)

    (``W psi / (2 mu)`` is ``inf`` at ``mu = 0`` where ``psi > 0``, 0 where ``psi = 0``). Unvalidated:
    the pieces of ``dope_plus_terms``, ``W = variance_budget(H, ...)`` and ``mu >= 0``; the planner's
    per-episode step (``dope_plus_bonuses`` validates)."""
    lin = _variance_route(psi, xi, variance, mu)
    route = lin < fallback
    constant = mu / (2.0 * H) if bool(np.any(route & (psi > 0))) else 0.0
    out: Array = np.where(route, lin, fallback) + constant
    return out


def dope_plus_routes(psi: Array, xi: Array, fallback: Array, variance: float, mu: float) -> NDArray[np.bool_]:
    """``(S, A)`` the pairs ``A`` that take the variance route in ``dope_plus_cost_bonus`` at ``mu``
    (unvalidated, as there)."""
    out: NDArray[np.bool_] = _variance_route(psi, xi, variance, mu) < fallback
    return out


def _variance_route(psi: Array, xi: Array, variance: float, mu: float) -> Array:
    """``W psi / (2 mu) + xi``, with ``W psi / (2 mu) = inf`` at ``mu = 0`` where ``psi > 0``."""
    if mu > 0:
        out: Array = variance * psi / (2.0 * mu) + xi
        return out
    return np.where(psi > 0, np.inf, xi)


def dope_plus_bonuses(
    counts: object,
    H: int,
    K: int,
    delta: float,
    gamma: float,
    mu: float,
    bonus_scale: float = 1.0,
    variance: str = "ltv",
) -> tuple[Array, Array]:
    """DOPE+'s reward bonus (optimism) and cost bonus (pessimism) at the tangent point ``mu``.

    With ``(psi, xi, fallback) = dope_plus_terms(counts, H, K, delta)`` and
    ``W = variance_budget(H, variance)``::

        cost_bonus   = bonus_scale * (min(fallback, W psi / (2 mu) + xi) + mu / (2 H))
        reward_bonus = (H / gamma) * cost_bonus

    The planner solves the extended LP over DOPE's Bernstein set maximizing ``r + reward_bonus``
    subject to ``c_i + cost_bonus <= c_bar_i``. Source: the structure (a kernel-error bound from the
    law of total variance, a function of the estimated kernel, optimism ``~ 1 / gamma`` times the
    pessimism) is the abstract's of Yu, Lee, Overman and Lee (RLC 2025, arXiv 2410.10158); the
    paper's body was not read, so the constants, the linearization and the per-pair fallback are
    cmdp-rl's (docs page 'Baselines').

    Args:
        counts: ``(S, A, S)`` or sparse ``(S*A, S)`` non-negative integer transition counts.
        H: horizon (>= 1).
        K: number of episodes of the run (>= 1).
        delta: failure probability in (0, 1).
        gamma: safety gap ``c_bar - C_b > 0`` of the safe policy (``min_i`` with several constraints).
        mu: the tangent point (>= 0; ``dope_plus_scale``).
        bonus_scale: factor on both bonuses (>= 0).
        variance: ``"ltv"`` or ``"span"`` (``variance_budget``).

    Returns:
        ``(reward_bonus, cost_bonus)``, each ``(S, A)``.
    """
    psi, xi, fallback = dope_plus_terms(counts, H, K, delta)
    W = variance_budget(H, variance)
    g = as_float("gamma", gamma)
    if not g > 0.0:
        raise CMDPInputError(f"gamma: the safety gap c_bar - C_b of the safe policy must be > 0, got {plain(gamma)}")
    m, scale = as_float("mu", mu), as_float("bonus_scale", bonus_scale)
    if m < 0.0:
        raise CMDPInputError(f"mu: the tangent point must be >= 0, got {plain(mu)}")
    if scale < 0.0:
        raise CMDPInputError(f"bonus_scale: must be >= 0 (0 switches the bonuses off), got {plain(bonus_scale)}")
    cost = scale * dope_plus_cost_bonus(psi, xi, fallback, H, W, m)
    return (H / g) * cost, cost


__all__ = [
    "PSI_FACTOR",
    "VARIANCE_BOUNDS",
    "XI_FACTOR",
    "dope_plus_bonuses",
    "dope_plus_cost_bonus",
    "dope_plus_routes",
    "dope_plus_scale",
    "dope_plus_terms",
    "variance_budget",
]
