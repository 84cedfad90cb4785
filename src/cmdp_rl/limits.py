"""Resource estimates and limits, checked before any work or allocation.

A command that would exhaust the memory or run for years is refused up front with
the estimate, the limit and the option that raises it. Estimates come from the sizes
``S, A, H, N`` and the budget only (no allocation): they are rough (within a small factor
on this library's benchmarks) and err on the low side, so a refused job really is
out of reach.

Defaults: ``DEFAULT_MAX_MEMORY`` (8 GiB) and ``DEFAULT_MAX_SECONDS`` (one day);
the CLI's ``--max-memory`` and ``--max-time`` override them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from .errors import CMDPInputError

#: memory a single command may plan to use, bytes (override: ``--max-memory``)
DEFAULT_MAX_MEMORY: int = 8 * 2**30
#: wall time a single command may plan to take, seconds (override: ``--max-time``)
DEFAULT_MAX_SECONDS: float = 24 * 3600.0
#: per-pair sample counts beyond this are no longer exact integers in float64
MAX_EXACT_COUNT: int = 2**53

#: bytes of per-episode records an Online-CRL run keeps (ten arrays of 8-16 bytes per episode)
BYTES_PER_EPISODE = 160
#: bytes per non-zero of an LP matrix, counting SciPy's and HiGHS' copies
BYTES_PER_NONZERO = 120

_UNITS = {
    "": 1,
    "b": 1,
    "k": 2**10,
    "kb": 2**10,
    "m": 2**20,
    "mb": 2**20,
    "g": 2**30,
    "gb": 2**30,
    "t": 2**40,
    "tb": 2**40,
}
_SECONDS = {"": 1.0, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


@dataclass(frozen=True)
class Estimate:
    """Planned resources of one job.

    Attributes:
        bytes: peak memory, bytes.
        seconds: wall time on one core, seconds.
    """

    bytes: float
    seconds: float

    def __add__(self, other: Estimate) -> Estimate:
        return Estimate(self.bytes + other.bytes, self.seconds + other.seconds)


def parse_size(text: str) -> int:
    """``"16G"``, ``"500MB"``, ``"1024"`` (bytes) -> bytes."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([a-zA-Z]*)\s*", str(text))
    unit = m.group(2).lower() if m else ""
    if m is None or unit not in _UNITS:
        raise CMDPInputError(f"max-memory: expected a size such as 16G, 500M or 1024 (bytes), got {text!r}")
    value = float(m.group(1)) * _UNITS[unit]
    if not (math.isfinite(value) and value > 0):
        raise CMDPInputError(f"max-memory: must be a positive size, got {text!r}")
    return int(value)


def parse_duration(text: str) -> float:
    """``"2h"``, ``"30min"``, ``"90s"``, ``"3d"``, ``"600"`` (seconds) -> seconds."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([a-zA-Z]*)\s*", str(text))
    unit = m.group(2).lower() if m else ""
    if m is None or unit not in _SECONDS:
        raise CMDPInputError(f"max-time: expected a duration such as 2h, 30min, 90s or 600 (seconds), got {text!r}")
    value = float(m.group(1)) * _SECONDS[unit]
    if not (math.isfinite(value) and value > 0):
        raise CMDPInputError(f"max-time: must be a positive duration, got {text!r}")
    return value


def human_bytes(n: float) -> str:
    """``1.5 GiB`` style."""
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} B"


def human_seconds(s: float) -> str:
    """``3.2 h`` style (years for the absurd)."""
    for unit, size in (("years", 365 * 86400.0), ("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if s >= size:
            return f"{s / size:.3g} {unit}"
    return f"{s:.3g} s"


def lp_estimate(S: int, A: int, H: int, N: int, nnz_per_row: float) -> Estimate:
    """The occupation-measure LP (``H S A`` variables, flow rows with ``nnz_per_row`` kernel entries)."""
    n_var = float(H) * S * A
    nnz = n_var * (1.0 + nnz_per_row + N)
    return Estimate(BYTES_PER_NONZERO * nnz + 80.0 * n_var, 2e-7 * nnz**1.1)


#: kernel passes one discounted policy evaluation costs (GMRES iterations, measured 10 to 30 on
#: Garnet kernels), the stand-in for ``H`` in the estimates of a discounted model
DISCOUNTED_PASSES = 50


def passes(model: Any) -> int:
    """``H`` for a finite-horizon model; ``DISCOUNTED_PASSES`` for a discounted one."""
    return int(model.H) if model.H is not None else DISCOUNTED_PASSES


def exact_estimate(S: int, A: int, H: int, N: int, nnz: float, method: str = "fast") -> Estimate:
    """One exact solve of a model with ``nnz`` kernel entries: column generation (``"fast"``:
    the pool's ``(H, S)`` action tables, the ``(H, S, A)`` policy and occupancy, about 60 DP
    sweeps of ``O(H * nnz)``) or the occupation-measure LP (``"lp"``). From the sizes only,
    never ``S * S * A``."""
    if method == "lp":
        return lp_estimate(S, A, H, N, nnz / max(1.0, float(S) * A))
    sweep = float(H) * (nnz + S * A)
    memory = 16.0 * nnz + 8.0 * S * A * (N + 2) + 4.0 * H * S * 64 + 8.0 * 3 * H * S * A
    return Estimate(memory, 60 * 2e-9 * sweep)


def build_estimate(S: int, A: int, H: int, N: int, nnz: float, solves: int = 3) -> Estimate:
    """Building a generated model of ``nnz`` kernel entries whose thresholds need ``solves`` exact
    solves (a Garnet model: the least-cost unconstrained optimum, the worst-cost minimizer, the
    Slater gap): about 120 bytes per kernel entry while the kernel is drawn and validated, the
    rewards and costs, and the solves' memory and time ([`exact_estimate`][cmdp_rl.limits.exact_estimate])."""
    plan = exact_estimate(S, A, H, N, nnz)
    return Estimate(max(120.0 * nnz, plan.bytes) + 8.0 * S * A * (N + 1), solves * plan.seconds)


def elp_estimate(S: int, A: int, H: int, N: int, method: str) -> Estimate:
    """One extended-LP solve: column generation (``"fast"``) or the literal LP (``"lp"``)."""
    sweep = float(H) * S * S * A
    if method == "lp":
        return Estimate(BYTES_PER_NONZERO * 3.0 * sweep, 1.3e-6 * sweep**1.3)
    return Estimate(8.0 * 40 * H * S * S + 8.0 * 4 * S * A * S, 3e-4 + 4e-9 * sweep * (N + 2))


def learn_estimate(
    S: int,
    A: int,
    H: int,
    N: int,
    *,
    episodes: int | None = None,
    samples_per_pair: int | None = None,
    method: str = "fast",
    nnz_per_row: float | None = None,
) -> Estimate:
    """``learn``: the true LP (for ``V*``), then Online-CRL's ``episodes`` or one GMBL plan."""
    base = lp_estimate(S, A, H, N, S if nnz_per_row is None else nnz_per_row)
    plan = elp_estimate(S, A, H, N, method)
    if episodes is not None:
        per_episode = plan.seconds + 2e-6 * H + 2e-9 * H * S * A * S  # plan, act, exact scoring
        return base + Estimate(plan.bytes + BYTES_PER_EPISODE * float(episodes), per_episode * episodes)
    return base + plan + Estimate(8.0 * 3 * S * A * S, 1e-7 * S * A * S)


def check_samples_per_pair(n: int, name: str = "samples-per-pair") -> None:
    """Per-pair counts must stay exact integers in float64 (the confidence set's arithmetic)."""
    if n > MAX_EXACT_COUNT:
        raise CMDPInputError(
            f"{name}: {n} exceeds 2^53 = {MAX_EXACT_COUNT}, beyond which sample counts are "
            f"not exact in float64; the limit is fixed"
        )


def check_estimate(
    est: Estimate, driver: str, max_memory: float = DEFAULT_MAX_MEMORY, max_seconds: float = DEFAULT_MAX_SECONDS
) -> None:
    """Refuse a job whose estimate exceeds a limit; the message names the argument that drives it.

    Raises:
        CMDPInputError: estimate above ``max_memory`` bytes or ``max_seconds`` seconds.
    """
    if est.bytes > max_memory:
        raise CMDPInputError(
            f"{driver}: needs about {human_bytes(est.bytes)} of memory, above the limit of "
            f"{human_bytes(max_memory)}; reduce it, or raise the limit with --max-memory (e.g. --max-memory 64G)"
        )
    if est.seconds > max_seconds:
        raise CMDPInputError(
            f"{driver}: would take about {human_seconds(est.seconds)}, above the limit of "
            f"{human_seconds(max_seconds)}; reduce it, or raise the limit with --max-time (e.g. --max-time 3d)"
        )


__all__ = [
    "DEFAULT_MAX_MEMORY",
    "DEFAULT_MAX_SECONDS",
    "MAX_EXACT_COUNT",
    "Estimate",
    "build_estimate",
    "check_estimate",
    "check_samples_per_pair",
    "elp_estimate",
    "exact_estimate",
    "human_bytes",
    "human_seconds",
    "learn_estimate",
    "lp_estimate",
    "parse_duration",
    "parse_size",
]
