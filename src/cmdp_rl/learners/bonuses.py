"""Confidence radii and exploration bonuses of the CMDP baselines (see the docs page 'Baselines').

Pure, vectorized functions of the transition counts ``counts`` (``(S, A, S)``, pooled
over the steps ``h``; ``n(s, a) = counts.sum(-1)``), the horizon ``H``, the number of
episodes ``K`` and the failure probability ``delta``. The learners built on them
(plugin, optcmdp, optcmdp-bonus, optdual, optpess, dope) and the sources of every
formula, with what could and could not be checked in the papers, are in
``docs/baselines.md``.

Bernstein radius of Efroni, Mannor and Pirotta (2020), also the radius DOPE uses,
for ``n = n(s, a) > 0``::

    beta_p(s, a, s2) = min( sqrt(4 p_hat (1 - p_hat) L / n) + 14 L / (3 n),  1 )

with ``beta_p = 1`` (every distribution is plausible) for ``n = 0``. The logarithm is
``L = log(2 S A H K / delta)`` for Efroni's algorithms and for DOPE by default (the paper's);
``log_term="code"`` gives DOPE's ``L = log(6 S^2 H K / delta)`` (the authors' code). The
aggregate radius of a pair is
``beta_bar(s, a) = sum_s2 beta_p(s, a, s2)``.

Bonuses (maximization convention: rewards are raised, costs raised too where the
algorithm is pessimistic about the constraint; ``gamma = c_bar - C_b > 0`` is the safety
gap of the known safe policy)::

    optcmdp-bonus:  b = H beta_bar                       (reward + b, cost - b)
    optpess:        beta = sqrt(L / max(n, 1)),  L = log(32 S^2 H K / delta)
                    reward bonus (1 + S H + 4 H (1 + S H) / gamma) beta,  cost bonus (1 + S H) beta
    dope:           reward bonus (H^2 / gamma) beta_bar,  cost bonus H beta_bar

Every bonus is multiplied by ``bonus_scale`` (default 1; 0 switches the bonuses off);
``bonus_scale`` never changes a confidence radius. Inputs are validated and
never modified.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.confidence.radii import empirical_kernel, validate_counts
from cmdp_rl.plumbing.validation import (
    CMDPInputError,
    as_float,
    as_int,
    check_choice,
    check_positive_int,
    check_probability,
    log_ratio,
    plain,
)

Array = NDArray[np.float64]

#: relative tolerance under which ``dope_k0``'s bound counts as the nearby integer
K0_INTEGER_RTOL = 1e-9


def _counts(counts: object) -> tuple[Array, NDArray[np.int64]]:
    """Validated ``(p_hat, n)`` from ``(S, A, S)`` non-negative integer counts."""
    cnt = validate_counts(counts)
    if cnt.size == 0:
        raise CMDPInputError(f"counts: needs at least one state and one action, got shape {cnt.shape}")
    return empirical_kernel(cnt)


def _scale(bonus_scale: float) -> float:
    """``bonus_scale`` as a finite float >= 0."""
    v = as_float("bonus_scale", bonus_scale)
    if v < 0.0:
        raise CMDPInputError(f"bonus_scale: must be >= 0 (0 switches the bonuses off), got {plain(bonus_scale)}")
    return v


def _gap(gamma: float) -> float:
    """The safety gap ``gamma = c_bar - C_b`` as a finite float > 0."""
    v = as_float("gamma", gamma)
    if not v > 0.0:
        raise CMDPInputError(
            f"gamma: the safety gap c_bar - C_b of the safe policy must be > 0, got {plain(gamma)}; "
            "with several constraints pass min_i (c_bar_i - C_b,i)"
        )
    return v


def _horizon_episodes(H: int, K: int) -> tuple[int, int]:
    return check_positive_int("H", H), check_positive_int("K", K)


def _inputs(counts: object, H: int, K: int, delta: float) -> tuple[Array, NDArray[np.int64], int, int, float]:
    """Validated ``(p_hat, n, H, K, delta)``."""
    p_hat, n = _counts(counts)
    H, K = _horizon_episodes(H, K)
    return p_hat, n, H, K, check_probability("delta", delta)


def efroni_radius_of_estimates(p_hat: Array, n: NDArray[np.int64], H: int, K: int, delta: float) -> Array:
    S, A = n.shape
    return _bernstein(p_hat, n, log_ratio(2 * S * A * H * K, delta))


def _optpess(n: NDArray[np.int64], H: int, K: int, delta: float) -> Array:
    L = optpess_log(n.shape[0], H, K, delta)
    out: Array = np.sqrt(L / np.maximum(n, 1).astype(np.float64))
    return out


#: DOPE's logarithm: ``"paper"`` ``log(2 S A H K / delta)`` (Efroni's, as the paper restates
#: it) or ``"code"`` ``log(6 S^2 H K / delta)`` (the DOPE authors' scripts)
DOPE_LOG_TERMS: tuple[str, ...] = ("paper", "code")


def dope_radius_of_estimates(
    p_hat: Array, n: NDArray[np.int64], H: int, K: int, delta: float, log_term: str = "paper"
) -> Array:
    if log_term == "paper":
        return efroni_radius_of_estimates(p_hat, n, H, K, delta)
    S = n.shape[0]
    return _bernstein(p_hat, n, log_ratio(6 * S * S * H * K, delta))


def _bernstein(p_hat: Array, n: NDArray[np.int64], L: float) -> Array:
    """``min(sqrt(4 p_hat (1 - p_hat) L / n) + 14 L / (3 n), 1)``; ``1`` where ``n = 0``."""
    return bernstein_entry(p_hat, n[..., None], L)


def bernstein_entry(p_hat: Array, n: NDArray[np.int64], L: float) -> Array:
    """``_bernstein`` entry by entry: ``p_hat`` and ``n`` of the same (broadcast) shape, e.g. the
    listed entries of sparse counts (the sparse statistics' radii)."""
    nn = np.maximum(n, 1).astype(np.float64)
    beta = np.sqrt(4.0 * p_hat * (1.0 - p_hat) * L / nn) + 14.0 * L / (3.0 * nn)
    out: Array = np.where(n > 0, np.minimum(beta, 1.0), 1.0)
    return out


def efroni_log(S: int, A: int, H: int, K: int, delta: float) -> float:
    """Efroni et al.'s ``L = log(2 S A H K / delta)`` (``efroni_radius``)."""
    return log_ratio(2 * S * A * H * K, delta)


def dope_log(S: int, A: int, H: int, K: int, delta: float, log_term: str = "paper") -> float:
    """DOPE's logarithm (``DOPE_LOG_TERMS``): Efroni's, or ``log(6 S^2 H K / delta)`` (``"code"``)."""
    return efroni_log(S, A, H, K, delta) if log_term == "paper" else log_ratio(6 * S * S * H * K, delta)


def empirical_p(counts: object) -> Array:
    """The empirical kernel ``p_hat = n(s, a, s2) / n(s, a)`` of the baselines.

    Unvisited pairs (``n(s, a) = 0``) get the uniform row ``1 / S``, the choice of the DOPE
    authors' code (``update_empirical_model``). The radii of this module are 1 there (every
    distribution plausible); the row matters to the planners on ``p_hat`` (plugin,
    optcmdp-bonus, optpess).

    Args:
        counts: ``(S, A, S)`` non-negative integer transition counts.

    Returns:
        ``(S, A, S)`` kernel whose rows sum to 1.
    """
    p_hat, _ = _counts(counts)
    return p_hat


def efroni_radius(counts: object, H: int, K: int, delta: float) -> Array:
    """Per-entry Bernstein radius ``beta_p`` of Efroni, Mannor and Pirotta (2020).

    ``beta_p(s, a, s2) = min(sqrt(4 p_hat (1 - p_hat) L / n) + 14 L / (3 n), 1)`` with
    ``L = log(2 S A H K / delta)`` and ``n = n(s, a)``; ``beta_p = 1`` (no constraint on
    ``P'(s2 | s, a)``) where ``n = 0``. Source: arXiv 2003.02189, the transition confidence
    set of OptCMDP, in the form restated by the DOPE paper (arXiv 2112.00885) and coded in
    the DOPE authors' ``compute_confidence_intervals`` (mode 1); the equation number in
    Efroni et al. was not checked (``docs/baselines.md``). The cap at 1 is cmdp-rl's:
    a radius of 1 already admits every probability.

    Args:
        counts: ``(S, A, S)`` non-negative integer transition counts.
        H: horizon (>= 1).
        K: number of episodes of the run (>= 1).
        delta: failure probability in (0, 1).

    Returns:
        ``(S, A, S)`` radii in ``(0, 1]``.
    """
    return efroni_radius_of_estimates(*_inputs(counts, H, K, delta))


def efroni_bonus(counts: object, H: int, K: int, delta: float, bonus_scale: float = 1.0) -> Array:
    """OptCMDP-bonus's exploration bonus ``b(s, a) = bonus_scale * H * sum_s2 beta_p(s, a, s2)``.

    ``beta_p`` is ``efroni_radius``. The planner adds ``b`` to the reward and subtracts
    it from every cost, on ``p_hat``. Source: Efroni, Mannor and Pirotta
    (2020), arXiv 2003.02189, OptCMDP-bonus; the bonus form ``H * beta_bar`` is cmdp-rl's and
    could not be checked against the paper, which may use an L1 radius
    ``~ sqrt(S L / n)`` instead (``docs/baselines.md``).

    Args:
        counts: ``(S, A, S)`` non-negative integer transition counts.
        H: horizon (>= 1).
        K: number of episodes of the run (>= 1).
        delta: failure probability in (0, 1).
        bonus_scale: factor on the bonus (>= 0).

    Returns:
        ``(S, A)`` bonuses; ``bonus_scale * H * S`` at unvisited pairs.
    """
    p_hat, n, H, K, delta = _inputs(counts, H, K, delta)
    scale = _scale(bonus_scale)
    out: Array = scale * H * efroni_radius_of_estimates(p_hat, n, H, K, delta).sum(axis=-1)
    return out


def optpess_log(S: int, H: int, K: int, delta: float) -> float:
    """OptPess-LP's ``L = log(32 S^2 H K / delta)`` (``optpess_radius``)."""
    return log_ratio(32 * S * S * H * K, delta)


def optpess_radius(counts: object, H: int, K: int, delta: float) -> Array:
    """OptPess-LP's per-pair radius ``beta(s, a) = sqrt(L / max(n(s, a), 1))``, ``L = log(32 S^2 H K / delta)``.

    Unvisited pairs get ``sqrt(L)`` (the ``max(n, 1)``), not 0. Source: Liu, Zhou,
    Kalathil, Kumar and Tian (2021), arXiv 2106.02684, OptPess-LP, as coded by the DOPE
    authors (``OptPessLP-queue.py``, ``compute_confidence_intervals`` mode 3); not checked
    in the paper (``docs/baselines.md``).

    Args:
        counts: ``(S, A, S)`` non-negative integer transition counts.
        H: horizon (>= 1).
        K: number of episodes of the run (>= 1).
        delta: failure probability in (0, 1).

    Returns:
        ``(S, A)`` radii.
    """
    _, n, H, K, delta = _inputs(counts, H, K, delta)
    return _optpess(n, H, K, delta)


def optpess_bonuses(
    counts: object, H: int, K: int, delta: float, gamma: float, bonus_scale: float = 1.0
) -> tuple[Array, Array]:
    """OptPess-LP's reward and cost bonuses on ``p_hat``.

    With ``beta = optpess_radius(counts, H, K, delta)`` and the safety gap ``gamma``::

        reward_bonus = bonus_scale * (1 + S H + 4 H (1 + S H) / gamma) * beta
        cost_bonus   = bonus_scale * (1 + S H) * beta

    The planner maximizes ``r + reward_bonus`` subject to ``c + cost_bonus <= c_bar`` on
    ``p_hat``. Source: Liu et al. (2021), arXiv 2106.02684, OptPess-LP, in the form of the
    DOPE authors' MediaControl code (``compute_LP_Tao``); the paper's constants were not
    checked, and the authors' other two scripts use different ones (``docs/baselines.md``).

    Args:
        counts: ``(S, A, S)`` non-negative integer transition counts.
        H: horizon (>= 1).
        K: number of episodes of the run (>= 1).
        delta: failure probability in (0, 1).
        gamma: safety gap ``c_bar - C_0 > 0`` of the safe policy (with several constraints,
            ``min_i (c_bar_i - C_0,i)``).
        bonus_scale: factor on both bonuses (>= 0).

    Returns:
        ``(reward_bonus, cost_bonus)``, each ``(S, A)``.
    """
    _, n, H, K, delta = _inputs(counts, H, K, delta)
    gamma, scale = _gap(gamma), _scale(bonus_scale)
    beta = _optpess(n, H, K, delta)
    SH = float(n.shape[0] * H)
    reward: Array = scale * (1.0 + SH + 4.0 * H * (1.0 + SH) / gamma) * beta
    cost: Array = scale * (1.0 + SH) * beta
    return reward, cost


def dope_radius(counts: object, H: int, K: int, delta: float, log_term: str = "paper") -> Array:
    """DOPE's per-entry Bernstein radius.

    ``beta_p(s, a, s2) = min(sqrt(4 p_hat (1 - p_hat) L / n) + 14 L / (3 n), 1)``; ``1`` where
    ``n(s, a) = 0``. The form is Efroni et al.'s (``efroni_radius``). The DOPE paper (Bura
    et al. 2022, arXiv 2112.00885) restates it with ``L = log(2 S A H K / delta)`` according to
    a secondary summary (``log_term="paper"``, the default: then this is exactly
    ``efroni_radius``, OptCMDP's set); the authors' code (``DOPE-queue.py``) uses
    ``L = log(6 S^2 H K / delta)`` (``log_term="code"``); see ``docs/baselines.md``.

    Args:
        counts: ``(S, A, S)`` non-negative integer transition counts.
        H: horizon (>= 1).
        K: number of episodes of the run (>= 1).
        delta: failure probability in (0, 1).
        log_term: ``"paper"`` or ``"code"`` (``DOPE_LOG_TERMS``).

    Returns:
        ``(S, A, S)`` radii in ``(0, 1]``.
    """
    log_term = check_choice("log_term", log_term, DOPE_LOG_TERMS)
    return dope_radius_of_estimates(*_inputs(counts, H, K, delta), log_term)


def dope_bonuses(
    counts: object, H: int, K: int, delta: float, gamma: float, bonus_scale: float = 1.0, log_term: str = "paper"
) -> tuple[Array, Array]:
    """DOPE's reward bonus (optimism) and cost bonus (pessimism).

    With ``beta_bar(s, a) = sum_s2 dope_radius(counts, H, K, delta)[s, a, s2]``::

        reward_bonus = bonus_scale * (H^2 / gamma) * beta_bar
        cost_bonus   = bonus_scale * H * beta_bar

    The planner solves the extended LP over the ``dope_radius`` set, maximizing
    ``r + reward_bonus`` subject to ``c + cost_bonus <= c_bar``. Source: Bura et al. (2022),
    arXiv 2112.00885, DOPE, with known rewards and costs, as coded by the authors
    (``compute_extended_LP`` of the MediaControl and Factored scripts); the paper's
    equations were not checked (``docs/baselines.md``).

    Args:
        counts: ``(S, A, S)`` non-negative integer transition counts.
        H: horizon (>= 1).
        K: number of episodes of the run (>= 1).
        delta: failure probability in (0, 1).
        gamma: safety gap ``c_bar - C_b > 0`` of the safe policy (with several constraints,
            ``min_i (c_bar_i - C_b,i)``).
        bonus_scale: factor on both bonuses (>= 0).
        log_term: the radius' logarithm, ``"paper"`` or ``"code"`` (``dope_radius``).

    Returns:
        ``(reward_bonus, cost_bonus)``, each ``(S, A)``.
    """
    log_term = check_choice("log_term", log_term, DOPE_LOG_TERMS)
    p_hat, n, H, K, delta = _inputs(counts, H, K, delta)
    gamma, scale = _gap(gamma), _scale(bonus_scale)
    beta_bar = dope_radius_of_estimates(p_hat, n, H, K, delta, log_term).sum(axis=-1)
    reward: Array = scale * (H * H / gamma) * beta_bar
    cost: Array = scale * H * beta_bar
    return reward, cost


def dope_k0(S: int, A: int, H: int, gamma: float, horizon_power: int = 3) -> int:
    """Number of initial episodes DOPE plays the safe policy: ``ceil(S^2 A H^3 / gamma^2)``
    (``H^horizon_power``: DOPE+'s phase, ``dope_plus_k0``, has one ``H`` less).

    The DOPE authors' MediaControl and Factored scripts use ``K0 = S^2 A H^3 / gamma^2``
    (and play the safe policy while ``k <= K0``, counting from ``k = 0``: one episode
    more); the paper's Theorem 1 value was not checked (``docs/baselines.md``). A bound
    within a relative ``K0_INTEGER_RTOL`` of an integer counts as that integer, so that
    rounding in ``gamma`` does not add an episode.

    Args:
        S: number of states (>= 1).
        A: number of actions (>= 1).
        H: horizon (>= 1).
        gamma: safety gap ``c_bar - C_b > 0`` of the safe policy.
        horizon_power: the power of ``H`` (3, DOPE's).

    Returns:
        ``K0 >= 1``.
    """
    S, A, H = check_positive_int("S", S), check_positive_int("A", A), check_positive_int("H", H)
    gamma = _gap(gamma)
    try:
        bound = float(S * S * A * H**horizon_power) / gamma / gamma
    except OverflowError:  # S^2 A H^3 itself beyond the float range
        bound = math.inf
    if not math.isfinite(bound):
        raise CMDPInputError(
            f"gamma: too small for S={S}, A={A}, H={H}: S^2 A H^{horizon_power} / gamma^2 overflows "
            f"(gamma = {plain(gamma)})"
        )
    nearest = round(bound)
    if abs(bound - nearest) <= K0_INTEGER_RTOL * max(1.0, bound):
        return max(int(nearest), 1)
    return max(math.ceil(bound), 1)


def check_k0(k0: object, default: int) -> int:
    """A baseline phase's length ``k0`` (DOPE's, DOPE+'s): an integer >= 0, or ``default`` for ``None``."""
    if k0 is None:
        return default
    if isinstance(k0, bool):
        raise CMDPInputError(f"k0: must be an integer >= 0, got {plain(k0)}")
    value = as_int("k0", k0)
    if value < 0:
        raise CMDPInputError(f"k0: must be an integer >= 0, got {plain(k0)}")
    return value


def check_bonus_size(bonus_scale: float, largest: float, H: int, what: str, gap: float | None = None) -> None:
    """Before a learner's first episode: ``largest``, the largest ``what`` bonus one step can get
    (at an unvisited pair, ``bonus_scale`` included), summed over ``H`` steps must be a finite
    float, else the planner's rewards or costs overflow to ``inf`` mid-run. Raises naming
    ``bonus_scale``, and ``baseline_costs`` when the bonus divides by the safety gap
    ``gap = c_bar - C_b`` that the baseline's costs set."""
    if not math.isfinite(largest * H):
        names = "bonus_scale" if gap is None else "bonus_scale, baseline_costs"
        given = f"bonus_scale = {plain(bonus_scale)}" + ("" if gap is None else f" with the safety gap {gap:.3g}")
        raise CMDPInputError(
            f"{names}: the {what} bonus overflows: {given} gives up to {largest:.3g} per step, beyond the float64 "
            f"range over H = {H} steps; use a smaller bonus_scale" + ("" if gap is None else " or a larger gap")
        )


def optdual_step(H: int, K: int) -> float:
    """OptDual-CMDP's dual step size ``t = 1 / (H sqrt(K))``.

    The dual update is ``lambda_i <- max(0, lambda_i + t (C_i(pi_k; P_k) - c_bar_i))`` from
    ``lambda = 0``. Source: Efroni, Mannor and Pirotta (2020), arXiv 2003.02189, OptDual-CMDP;
    the order ``1 / (H sqrt(K))`` is cmdp-rl's and its constant could not be
    checked in the paper (``docs/baselines.md``).

    Args:
        H: horizon (>= 1).
        K: number of episodes of the run (>= 1).

    Returns:
        The step size, > 0.
    """
    H, K = _horizon_episodes(H, K)
    return 1.0 / (H * math.sqrt(K))


__all__ = [
    "DOPE_LOG_TERMS",
    "K0_INTEGER_RTOL",
    "check_bonus_size",
    "dope_bonuses",
    "dope_k0",
    "dope_radius",
    "efroni_bonus",
    "efroni_radius",
    "empirical_p",
    "optdual_step",
    "optpess_bonuses",
    "optpess_log",
    "optpess_radius",
]
