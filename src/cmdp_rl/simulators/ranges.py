"""A simulator's rewards and costs in the environment's units: the ranges ``learn`` maps onto ``[0, 1]``.

The learners' confidence bonuses assume rewards and costs in ``[0, 1]`` (the paper's Assumption 1).
An environment whose rewards or costs lie elsewhere gives their ranges to
[`learn`][cmdp_rl.simulators.learning.learn]: ``reward_range = (lo, hi)``, and ``cost_range`` one
pair ``(lo, hi)`` for every cost or one pair per constraint (``N`` pairs). Everything else is given
and reported in the environment's units; the learner sees the affine image
([`Units.of_ranges`][cmdp_rl.model.units.Units.of_ranges], ``a = lo``, ``w = hi - lo``; docs page
'Models', section 'Units'):

* a step's reward or cost ``x -> (x - lo) / w``, checked to lie in the range (``RANGE_TOL`` of slack
  on the mapped scale, a value outside it is a one-line error naming the range);
* the thresholds ``c_bar`` and a safe baseline's expected costs, sums over ``H`` steps:
  ``c_bar_i' = (c_bar_i - H lo_i) / w_i``; known ``r`` and ``c`` tables ``(x - lo) / w``;
* back in the environment's units: a realized sum over the ``T`` steps the environment took
  ``T lo + w x'`` (``T < H`` when it ended the episode early); a planned value or a certificate's
  bound ``H lo + w x'`` (the planner's absorbing and virtual start steps are ``0`` on the mapped
  scale, i.e. ``lo``); a violation ``w x'``; the violation tolerance ``1e-9 w_i``.

Without a range nothing is mapped: ``lo = 0``, ``w = 1`` is the identity, bit for bit.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.certificates.certify import Certificate
from cmdp_rl.model.units import Units
from cmdp_rl.plumbing.validation import CMDPInputError, as_float, as_float_array, plain

Array = NDArray[np.float64]

#: slack allowed on the [0, 1] range of rewards and costs (float rounding of the affine map)
RANGE_TOL = 1e-9


def check_reward_range(reward_range: Any, name: str = "reward_range") -> tuple[float, float] | None:
    """``reward_range``: ``None`` or a pair ``(lo, hi)`` of numbers with ``lo < hi`` and ``hi - lo``
    finite (the affine map to ``[0, 1]`` must exist); ``name`` is the argument's name in the
    message (the CLI passes ``--reward-range``; a cost range its own)."""
    if reward_range is None:
        return None
    try:
        lo, hi = reward_range
    except (TypeError, ValueError):
        raise CMDPInputError(f"{name}: must be a pair (lo, hi), got {reward_range!r}") from None
    lo_, hi_ = as_float(name, lo), as_float(name, hi)
    if not lo_ < hi_:
        raise CMDPInputError(f"{name}: needs lo < hi, got ({plain(lo_)}, {plain(hi_)})")
    if not math.isfinite(hi_ - lo_):
        raise CMDPInputError(f"{name}: hi - lo must be a finite number, got ({plain(lo_)}, {plain(hi_)})")
    return lo_, hi_


def _number(x: Any) -> bool:
    try:
        return bool(np.ndim(x) == 0)
    except ValueError:  # a ragged sequence
        return False


def check_cost_range(cost_range: Any, N: int, name: str = "cost_range") -> Array | None:
    """``cost_range``: ``None``, one pair ``(lo, hi)`` (or ``[(lo, hi)]``) for every cost, or ``N`` pairs, one per
    constraint (each as ``check_reward_range`` requires). Returns ``(N, 2)`` rows ``(lo_i, hi_i)``.

    Raises:
        CMDPInputError: naming ``name`` (``name[i]`` for the ``i``-th pair).
    """
    if cost_range is None:
        return None
    try:
        items = list(cost_range)
    except TypeError:
        items = None
    if items is None or isinstance(cost_range, (str, bytes)):
        raise CMDPInputError(f"{name}: must be a pair (lo, hi) or N = {N} pairs, got {plain(cost_range)}")
    if all(_number(x) for x in items):  # one pair for every constraint
        pairs = [check_reward_range(items, name)] * N
    elif len(items) == 1:  # [(lo, hi)]: the same
        pairs = [check_reward_range(items[0], name)] * N
    elif len(items) == N:
        pairs = [check_reward_range(x, f"{name}[{i}]") for i, x in enumerate(items)]
    else:
        raise CMDPInputError(
            f"{name}: give one pair (lo, hi) for every cost or one per constraint (N = {N}), got {len(items)} pairs"
        )
    return np.array(pairs, dtype=np.float64).reshape(N, 2)


def run_units(
    reward_range: tuple[float, float] | None,
    cost_range: Array | None,
    N: int,
    H: int,
    names: tuple[str, str] = ("reward_range", "cost_range"),
) -> Units:
    """The map of a run's ranges (module docstring) over returns of ``H`` steps; the identity
    (``lo = 0``, ``w = 1``) for what has no range.

    Raises:
        CMDPInputError: a return of ``H`` steps in a range overflows float64 (naming the range by
            its name in ``names``: the CLI passes its options').
    """
    r_lo, r_hi = (0.0, 1.0) if reward_range is None else reward_range
    c = np.tile([0.0, 1.0], (N, 1)) if cost_range is None else cost_range
    named = [(names[0], r_lo, r_hi)] + [(names[1], float(lo), float(hi)) for lo, hi in c]
    for name, lo, hi in named:
        if not math.isfinite(H * (abs(lo) + (hi - lo))):
            raise CMDPInputError(
                f"{name}: returns of H = {H:,} steps in [{plain(lo)}, {plain(hi)}] overflow float64; rescale them"
            )
    return Units.of_ranges(r_lo, r_hi, c[:, 0], c[:, 1], H)


def unit_c_bar(c_bar: Array, units: Units, ranged: bool, names: tuple[str, str] = ("c_bar", "cost_range")) -> Array:
    """``(N,)`` thresholds in the environment's units on the mapped scale, ``(c_bar_i - H lo_i) / w_i``;
    ``ranged``: whether a ``cost_range`` was given (the message says so, naming them by ``names``).

    Raises:
        CMDPInputError: a threshold below ``H lo_i``, the least an episode's costs can sum to
            (``0`` without a range: costs in ``[0, 1]``).
    """
    mapped: Array = units.unit_thresholds(c_bar)
    if np.any(mapped < 0):
        if not ranged:
            raise CMDPInputError(
                f"{names[0]}: thresholds must be >= 0 (costs are in [0, 1]; give {names[1]} (lo, hi) for costs in "
                f"other units), got {c_bar.tolist()}"
            )
        i = int(np.argmax(mapped < 0))
        lo, hi = float(units.c_offset[i]), float(units.c_offset[i] + units.c_width[i])
        raise CMDPInputError(
            f"{names[0]}[{i}]: must be >= H lo = {plain(units.steps * lo)} ({names[1]} [{plain(lo)}, {plain(hi)}] over "
            f"H = {units.steps:g} steps: no episode's costs sum to less), got {plain(float(c_bar[i]))}"
        )
    return mapped


def known_table(
    name: str, value: Any, shape: tuple[int, ...], offset: Any, width: Any, ranged: str | None
) -> Array | None:
    """A known ``r (S, A)`` or ``c (N, S, A)`` of ``shape`` on the mapped scale, ``(x - offset) /
    width`` (broadcast against it); ``ranged`` names the range when one was given; ``None`` for ``None``.

    Raises:
        CMDPInputError: naming ``name``: not a finite array of ``shape``, or an entry outside the
            range (``[0, 1]`` without one).
    """
    if value is None:
        return None
    arr = as_float_array(name, value, len(shape))
    if arr.shape != shape:
        raise CMDPInputError(f"{name}: expected shape {shape} for this environment, got {arr.shape}")
    mapped: Array = (arr - offset) / width
    if np.any(mapped < -RANGE_TOL) or np.any(mapped > 1.0 + RANGE_TOL):
        raise CMDPInputError(f"{name}: entries must lie in " + ("[0, 1]" if ranged is None else f"its {ranged}"))
    out: Array = np.clip(mapped, 0.0, 1.0)
    return out


def unit_baseline(baseline: Any, units: Units, N: int) -> Any:
    """A safe learner's ``(policy, costs (N,))`` with its costs (expected sums over ``H`` steps, in
    the environment's units) mapped as ``c_bar``; anything malformed is returned as given, for
    [`planner_baseline`][cmdp_rl.simulators.estimates.planner_baseline] to refuse."""
    try:
        policy, costs = baseline
    except (TypeError, ValueError):
        return baseline
    cost = as_float_array("baseline", np.atleast_1d(np.asarray(costs, dtype=object)), 1)  # not "0.5", None
    if cost.shape != (N,):
        return baseline
    return policy, units.unit_thresholds(cost)


def certificate_in_units(cert: Certificate | None, units: Units) -> Certificate | None:
    """A certificate computed on the mapped scale (over ``H`` steps) in the environment's units:
    value bounds ``H lo_r + w_r x'``, cost bounds ``H lo_i + w_i x'`` (``safe`` is unchanged: the
    map is increasing)."""
    if cert is None or units.identity:
        return cert
    return dataclasses.replace(
        cert,
        value_lo=float(units.value(cert.value_lo)),
        value_hi=float(units.value(cert.value_hi)),
        cost_lo=np.asarray(units.costs(cert.cost_lo)),
        cost_hi=np.asarray(units.costs(cert.cost_hi)),
    )


__all__ = [
    "RANGE_TOL",
    "certificate_in_units",
    "check_cost_range",
    "check_reward_range",
    "known_table",
    "run_units",
    "unit_baseline",
    "unit_c_bar",
]
