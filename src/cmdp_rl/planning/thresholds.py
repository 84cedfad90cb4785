"""Thresholds brought onto the scale of the achievable costs, so that no planner sees a number
far outside the range of its data.

A threshold far above every achievable cost (``c_bar = 1e14`` on costs of a few units) leaves a
master LP whose right-hand side dwarfs its coefficients: its tolerances, relative to the largest
entry, then accept a wrong basis, and a planner that trusts the LP reports a wrong optimum.
HiGHS itself treats ``|b| >= 1e20`` as infinite. Both ends are settled exactly from the range of
each constraint's achievable cost, ``lo_i <= C_i(pi) <= hi_i`` for every policy (the pool's
seeding sweeps, or the trivial ``H * min c_i``, ``H * max c_i``):

* ``c_bar_i >= hi_i`` (to within ``SLACK_RTOL``): constraint ``i`` holds for every policy. It is *slack*: dropped from
  the master LP (its multiplier is exactly 0), and its threshold is replaced by ``hi_i`` wherever
  a bound needs a number (an equivalent problem).
* ``max_i (lo_i - c_bar_i) = T0 > FEAS_TOL``: no policy meets constraint ``i``; the problem is
  infeasible. Minimizing the worst excess ``max_i (C_i - c_bar_i)`` is unchanged by moving every
  threshold by the same amount, so the thresholds are translated by ``T0 - 2 FEAS_TOL`` (the
  constraint attaining ``T0`` then sits ``2 FEAS_TOL`` below its least cost) and clamped to
  ``hi`` (a clamped row's excess stays at most 0, below the minimum worst excess): phase 1 finds
  the same minimizer on numbers of the costs' scale, and the true worst excess is the
  translated one plus the translation.

Between the two ends the thresholds are used as given.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

#: worst excess at or below which a problem counts as feasible (HiGHS' primal tolerance)
FEAS_TOL = 1e-7
#: a threshold within this (relative to ``max(1, |hi|)``) below a constraint's largest cost counts
#: as at it: the largest cost comes from a sweep, whose last bits another computation of the same
#: number (an LP, a different summation order) need not share
SLACK_RTOL = 1e-12

Array = NDArray[np.float64]
Mask = NDArray[np.bool_]


@dataclass(frozen=True)
class Thresholds:
    """The thresholds a planner works with.

    Attributes:
        b: ``(N,)`` thresholds on the costs' scale (``lo - 2 FEAS_TOL <= b <= hi``).
        shift: what was added to every threshold: ``0``, or ``T0 - 2 FEAS_TOL > 0`` when the
            problem is infeasible by range (then ``t_true = t_b + shift``).
        active: ``(N,)`` the constraints that some policy can violate (``b < hi``); the others
            are slack and get multiplier 0.
        infeasible: some constraint cannot be met by any policy (``T0 > FEAS_TOL``).
        worst: the constraint attaining ``T0`` (the one whose unit multiplier proves infeasibility).
    """

    b: Array
    shift: float
    active: Mask
    infeasible: bool
    worst: int


def on_scale(c_bar: Array, lo: Array, hi: Array) -> Thresholds:
    """``c_bar (N,)`` brought onto the range ``[lo, hi] (N,)`` of the achievable costs (module docstring).

    Args:
        c_bar: the thresholds (finite, any size).
        lo: a lower bound of each constraint's achievable cost (``<= min_pi C_i(pi)``).
        hi: an upper bound of each constraint's achievable cost (``>= max_pi C_i(pi)``).
    """
    c_bar = np.asarray(c_bar, dtype=np.float64)
    N = c_bar.size
    if N == 0:
        return Thresholds(np.zeros(0), 0.0, np.zeros(0, dtype=bool), False, -1)
    j = int(np.argmax(lo - c_bar))
    if float(lo[j] - c_bar[j]) > FEAS_TOL:
        b, shift, keep, j = translated(c_bar, lo, hi, 2.0 * FEAS_TOL)
        return Thresholds(b, shift, keep, True, j)
    slack = c_bar >= hi - SLACK_RTOL * np.maximum(1.0, np.abs(hi))
    return Thresholds(np.where(slack, hi, np.minimum(c_bar, hi)), 0.0, ~slack, False, j)


def top_unneeded(c_bar: Array, lo: Array, known: Array) -> bool:
    """Whether [`on_scale`][cmdp_rl.planning.thresholds.on_scale]``(c_bar, lo, hi)`` is the same for
    every ``hi >= known (N,)`` (costs some policies have): every threshold lies below ``known`` by
    more than twice the slack tolerance (no constraint slack, none clamped) and none below its
    least cost by more than ``FEAS_TOL`` (no translation, the one use of ``hi`` beyond those). Then
    the sweeps that find each constraint's largest cost can be skipped."""
    c_bar = np.asarray(c_bar, dtype=np.float64)
    if c_bar.size and float(np.max(lo - c_bar)) > FEAS_TOL:
        return False
    return bool(np.all(c_bar < known - 2.0 * SLACK_RTOL * np.maximum(1.0, np.abs(known))))


def translated(c_bar: Array, lo: Array, hi: Array, below: float = 0.0) -> tuple[Array, float, Mask, int]:
    """Every threshold moved by the same amount, so that the constraint ``j`` with the largest
    ``lo_j - c_bar_j`` sits ``below`` under its least cost: the worst excess
    ``max_i (C_i - c_bar_i)`` of every policy moves by that amount and its minimizers do not
    change, whatever the size of ``c_bar`` (a Slater gap of thresholds at ``1e14``, the excess of
    thresholds at ``-1e300``). Rows that cannot reach the maximum (``b_i >= hi_i``: their excess
    stays below constraint ``j``'s) are clamped to ``hi`` and left out (``keep`` false).

    Returns ``(b (N,), shift, keep (N,), j)``: ``t_true = t_b + shift``.
    """
    j = int(np.argmax(lo - c_bar))
    # differences first: c_bar_i - c_bar_j is exact when they are close (Sterbenz), and the
    # translation never adds a huge number to a small one
    b = (c_bar - c_bar[j]) + (lo[j] - below)
    b[j] = lo[j] - below
    keep = b < hi
    keep[j] = True
    b = np.where(keep, b, hi)
    return b, float(lo[j] - c_bar[j]) - below, keep, j


def trivial_range(c: Array, steps: float) -> tuple[Array, Array]:
    """``(lo, hi)``, each ``(N,)``: ``steps * min c_i`` and ``steps * max c_i``, bounds of every
    policy's cost under any kernel (``steps``: the horizon, or ``1 / (1 - gamma)``).

    Args:
        c: ``(N, S, A)`` costs per step.
        steps: how many steps' costs a return adds up.
    """
    N = c.shape[0]
    flat = c.reshape(N, -1)
    if flat.shape[1] == 0:
        return np.zeros(N), np.zeros(N)
    return steps * flat.min(axis=1), steps * flat.max(axis=1)


__all__ = ["FEAS_TOL", "SLACK_RTOL", "Thresholds", "on_scale", "top_unneeded", "translated", "trivial_range"]
