"""The paper's sample-size and episode bounds (Theorems 1 and 2, eqs. "m1", "m2", "m").

Logarithms: ``log`` is natural, ``log2`` base 2, as written in the paper.
"""

from __future__ import annotations

import math
import sys
from dataclasses import asdict, dataclass
from typing import Any

from cmdp_rl.confidence.radii import delta_1, delta_p
from cmdp_rl.plumbing.validation import CMDPInputError, check_positive_int, check_probability


@dataclass(frozen=True)
class GMBLBounds:
    """Optimistic-GMBL (Algorithm 1, Theorem 1).

    Attributes:
        n_per_pair: ``ceil(256 / eps^2 |S| H^3 log(12 (N+2) |S| |A| H / delta))``.
        total_samples: ``|S| |A| n_per_pair``.
        delta_P: ``delta / (12 (N+2) |S|^2 |A| H)``.
        eps_max: the theorem needs ``eps < (2/9) sqrt(H / |S|)``.
        eps_valid: whether ``eps`` is in that range.
    """

    n_per_pair: int
    total_samples: int
    delta_P: float
    eps_max: float
    eps_valid: bool


@dataclass(frozen=True)
class OnlineCRLBounds:
    """Online-CRL (Algorithm 2, Theorem 2).

    Attributes:
        m: the paper's final choice, eq. "m" (rounded up).
        m1_lower: eq. "m1", ``6 H^2 / eps log(2 (N+1) E_max / delta)`` (``m`` must exceed it).
        w_min: ``eps / (4 H |S|)``.
        U_max: ``|S|^2 |A| m``.
        delta_1: ``delta / (4 (N+1) |S| U_max)``.
        stop_count: the loop runs while some ``n(s, a) < |S| m H``.
        E_max: ``log2|S| log2(4 |S| H^2 / eps)``.
        bad_episodes: ``6 E_max |S| |A| m``, Theorem 2's bound on episodes that are
            not eps-optimal or not eps-feasible.
    """

    m: int
    m1_lower: float
    w_min: float
    U_max: int
    delta_1: float
    stop_count: int
    E_max: float
    bad_episodes: float


def _check(S: int, A: int, H: int, N: int, eps: float, delta: float) -> tuple[int, int, int, int, float, float]:
    return (
        check_positive_int("states", S),
        check_positive_int("actions", A),
        check_positive_int("horizon", H),
        check_positive_int("constraints", N, minimum=0),
        check_probability("eps", eps),
        check_probability("delta", delta),
    )


def _overflow(eps: float, delta: float) -> CMDPInputError:
    return CMDPInputError(
        f"eps/delta: the bounds for eps={eps:g}, delta={delta:g} do not fit in float64 (a sample size "
        f"beyond 1.8e308 or a failure probability below 1e-308); use a larger eps or delta"
    )


def _finite(eps: float, delta: float, *values: float) -> None:
    """Every computed quantity must be a finite, positive number (else the inputs are too extreme)."""
    for v in values:
        if not (math.isfinite(v) and v >= sys.float_info.min):  # no inf, no subnormal probabilities
            raise _overflow(eps, delta)


def gmbl_bounds(S: int, A: int, H: int, N: int, eps: float, delta: float) -> GMBLBounds:
    """Theorem 1's per-pair sample size and total budget for Optimistic-GMBL.

    Raises:
        CMDPInputError: a bad argument, or ``eps``/``delta`` so small that the bounds overflow.
    """
    S, A, H, N, eps, delta = _check(S, A, H, N, eps, delta)
    try:
        return _gmbl_bounds(S, A, H, N, eps, delta)
    except (OverflowError, ZeroDivisionError, ValueError):
        raise _overflow(eps, delta) from None


def _gmbl_bounds(S: int, A: int, H: int, N: int, eps: float, delta: float) -> GMBLBounds:
    n = math.ceil(256.0 / eps**2 * S * H**3 * math.log(12.0 * (N + 2) * S * A * H / delta))
    eps_max = 2.0 / 9.0 * math.sqrt(H / S)
    d_p = delta_p(delta, S, A, H, N)
    _finite(eps, delta, float(n), float(S * A * n), d_p)
    return GMBLBounds(n, S * A * n, d_p, eps_max, eps < eps_max)


def online_crl_bounds(S: int, A: int, H: int, N: int, eps: float, delta: float) -> OnlineCRLBounds:
    """Algorithm 2's ``m`` (eq. "m"), its derived quantities and Theorem 2's episode bound.

    Raises:
        CMDPInputError: ``H < 3``: the paper's factor ``(log2 log2 H)^2`` is 0 for
            ``H = 2`` (and undefined for ``H = 1``), so eq. "m" gives no sample size.
    """
    S, A, H, N, eps, delta = _check(S, A, H, N, eps, delta)
    if H < 3:
        raise CMDPInputError(
            f'horizon: the paper\'s eq. "m" needs H >= 3 (its factor (log2 log2 H)^2 vanishes at H = 2), got {H}'
        )
    try:
        return _online_crl_bounds(S, A, H, N, eps, delta)
    except (OverflowError, ZeroDivisionError, ValueError):
        raise _overflow(eps, delta) from None


def _online_crl_bounds(S: int, A: int, H: int, N: int, eps: float, delta: float) -> OnlineCRLBounds:
    loglog = math.log2(math.log2(H)) ** 2
    l8 = math.log2(8.0 * H**2 * S**2 / eps) ** 2
    inner = 2048.0 * (N + 1) * S**4 * A * H**2 / (eps**2 * delta) * loglog * l8
    m = math.ceil(2560.0 * S * H**2 / eps**2 * loglog * l8 * math.log(inner))
    E_max = math.log2(S) * math.log2(4.0 * S * H**2 / eps)
    m1 = 6.0 * H**2 / eps * math.log(2.0 * (N + 1) * max(E_max, 1.0) / delta)
    U_max = S**2 * A * m
    d_1 = delta_1(delta, S, N, U_max)
    _finite(eps, delta, float(m), m1, float(U_max), d_1, float(S * m * H), 6.0 * E_max * S * A * m)
    return OnlineCRLBounds(
        m=m,
        m1_lower=m1,
        w_min=eps / (4.0 * H * S),
        U_max=U_max,
        delta_1=d_1,
        stop_count=S * m * H,
        E_max=E_max,
        bad_episodes=6.0 * E_max * S * A * m,
    )


def bounds_report(S: int, A: int, H: int, N: int, eps: float, delta: float) -> dict[str, Any]:
    """Both algorithms' theory quantities as one JSON-ready dictionary."""
    return {
        "inputs": {"states": S, "actions": A, "horizon": H, "constraints": N, "eps": eps, "delta": delta},
        "optimistic_gmbl": asdict(gmbl_bounds(S, A, H, N, eps, delta)),
        "online_crl": asdict(online_crl_bounds(S, A, H, N, eps, delta)),
    }
