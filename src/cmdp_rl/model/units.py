"""Rewards and costs in the user's units: their bounds, the affine map onto the unit scale and the
tolerance rule (the docs page 'Models', section 'Units').

A [`CMDP`][cmdp_rl.model.cmdp.CMDP] takes any finite rewards and costs (times, energy, counts,
negative ones too). The exact planners' tolerances (HiGHS' absolute ones among them) and the
learners' confidence bonuses (the paper's Assumption 1) are calibrated on ``[0, 1]``, so those
entry points work on the model's affine image on the unit scale and report every number back in
the user's units. The rule, one for every entry point:

* **Scale interval.** The rewards' scale interval is the smallest interval holding both ``[0, 1]``
  and every reward: ``[a_r, a_r + w_r]`` with ``a_r = min(0, min r)`` and
  ``w_r = max(1, max r) - a_r``; each cost ``c_i`` has its own, ``[a_i, a_i + w_i]``. A model whose
  rewards and costs lie in ``[0, 1]`` has ``a = 0, w = 1`` (the identity: nothing is mapped and
  every number is what it was before units), and a constant reward or cost still has a width of
  at least 1.
* **The unit image.** ``r' = (r - a_r) / w_r``, ``c_i' = (c_i - a_i) / w_i`` and
  ``c_bar_i' = (c_bar_i - T a_i) / w_i``, with ``T`` the steps a return adds up (``H``, or
  ``1 / (1 - gamma)``: the initial distribution has mass 1, so ``T`` holds for a start
  distribution too). Values and costs are linear in ``r`` and ``c``, so every policy has
  ``V = T a_r + w_r V'`` and ``C_i = T a_i + w_i C_i'``: the image has the same feasible policies
  and the same optima.
* **Back in the user's units.** Values, bounds and thresholds ``T a + w x'``; gaps, excesses
  and violations ``w x'``; a Lagrange multiplier (the slope ``dV*/dc_bar_i``)
  ``lambda_i = lambda_i' w_r / w_i``.
* **Tolerances.** Each tolerance of the unit scale times the width of the range it measures:
  the certified value gap ``gap_tol`` (default ``1e-9 T``) times ``w_r``; the feasibility
  tolerance of constraint ``i`` (``1e-7``) and a learner's violation tolerance (``1e-9``) times
  ``w_i``. A worst excess over several constraints (phase 1 of the exact planner, an infeasible
  problem's least-excess policy) is measured on the unit scale, ``max_i (C_i - c_bar_i) / w_i``,
  so it does not depend on the units either.

[`pair_bounds`][cmdp_rl.model.units.pair_bounds] is the one place the bounds are computed (the
model's [`reward_bounds`][cmdp_rl.model.cmdp.CMDP.reward_bounds] and
[`cost_bounds`][cmdp_rl.model.cmdp.CMDP.cost_bounds] come from it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.plumbing.validation import CMDPInputError

Array = NDArray[np.float64]


class Scalable(Protocol):
    """What the maps below read of a [`CMDP`][cmdp_rl.model.cmdp.CMDP] or its
    [`KnownParts`][cmdp_rl.model.cmdp.KnownParts] (typed by what they provide: the model imports this module)."""

    @property
    def r(self) -> Array: ...

    @property
    def c(self) -> Array: ...

    @property
    def c_bar(self) -> Array: ...

    def replace(self, **changes: Any) -> Any: ...


M = TypeVar("M", bound=Scalable)


def pair_bounds(x: Array) -> tuple[Array, Array]:
    """``(lo (K,), hi (K,))``: the smallest and largest entry of each ``(S, A)`` table of ``x (K, S, A)``
    over the state-action pairs (``0, 0`` for a model without pairs)."""
    K = x.shape[0]
    if x.size == 0:
        return np.zeros(K), np.zeros(K)
    flat = x.reshape(K, -1)
    return flat.min(axis=1), flat.max(axis=1)


def scale_interval(lo: Array, hi: Array) -> tuple[Array, Array]:
    """``(offset, width)`` of the scale interval (module docstring) of data spanning ``[lo, hi]``:
    ``offset = min(0, lo)``, ``width = max(1, hi) - offset`` (``>= 1``)."""
    offset = np.minimum(lo, 0.0)
    return offset, np.maximum(hi, 1.0) - offset


@dataclass(frozen=True)
class Units:
    """The affine map between a model's units and the unit scale (module docstring).

    Attributes:
        r_offset, r_width: ``a_r``, ``w_r`` of the rewards' scale interval.
        c_offset, c_width: ``(N,)`` ``a_i``, ``w_i`` of each cost's.
        steps: ``T``, the steps a return adds up (``H``, or ``1 / (1 - gamma)``).
    """

    r_offset: float
    r_width: float
    c_offset: Array
    c_width: Array
    steps: float

    @classmethod
    def of(cls, r: Array, c: Array, steps: float) -> Units:
        """The units of rewards ``r (S, A)`` and costs ``c (N, S, A)`` over returns of ``steps`` steps.

        Raises:
            CMDPInputError: a return on the scale interval overflows float64 (one line naming
                ``r`` or ``c``).
        """
        lo, hi = pair_bounds(r[None])
        a_r, w_r = scale_interval(lo, hi)
        a_c, w_c = scale_interval(*pair_bounds(c))
        for name, a, w, span in (("r", a_r, w_r, (lo, hi)), ("c", a_c, w_c, pair_bounds(c))):
            with np.errstate(over="ignore"):
                bad = ~np.isfinite(steps * (np.abs(a) + w))
            if bad.any():
                j = int(np.argmax(bad))
                where = "" if name == "r" else f"[{j}]"
                raise CMDPInputError(
                    f"{name}{where}: values in [{span[0][j]:g}, {span[1][j]:g}] over {steps:g} steps overflow "
                    "float64; rescale them"
                )
        for arr in (a_c, w_c):
            arr.setflags(write=False)
        return cls(float(a_r[0]), float(w_r[0]), a_c, w_c, float(steps))

    @classmethod
    def of_ranges(cls, r_lo: float, r_hi: float, c_lo: Array, c_hi: Array, steps: float) -> Units:
        """The map of given ranges, not of data: rewards in ``[r_lo, r_hi]``, cost ``i`` in
        ``[c_lo[i], c_hi[i]]`` (``(N,)`` each, ``lo < hi``) mapped onto ``[0, 1]`` as they are
        (``a = lo``, ``w = hi - lo``: no scale interval around ``[0, 1]``), over returns of ``steps``
        steps (a simulator's ``reward_range`` and ``cost_range``,
        [`run_units`][cmdp_rl.simulators.ranges.run_units])."""
        a_c = np.array(c_lo, dtype=np.float64)
        w_c = np.array(c_hi, dtype=np.float64) - a_c
        for arr in (a_c, w_c):
            arr.setflags(write=False)
        return cls(float(r_lo), float(r_hi) - float(r_lo), a_c, w_c, float(steps))

    @property
    def identity(self) -> bool:
        """Whether the unit scale is the model's own (rewards and costs in ``[0, 1]``)."""
        return (
            self.r_offset == 0.0
            and self.r_width == 1.0
            and bool(np.all(self.c_offset == 0.0))
            and bool(np.all(self.c_width == 1.0))
        )

    # -- onto the unit scale -------------------------------------------------------------------
    def unit_r(self, r: Array) -> Array:
        """``(r - a_r) / w_r``, any shape."""
        out: Array = (np.asarray(r, dtype=np.float64) - self.r_offset) / self.r_width
        return out

    def unit_c(self, c: Array) -> Array:
        """``(c_i - a_i) / w_i`` of ``c (N, ...)``."""
        c = np.asarray(c, dtype=np.float64)
        shape = (-1,) + (1,) * (c.ndim - 1)
        out: Array = (c - self.c_offset.reshape(shape)) / self.c_width.reshape(shape)
        return out

    def unit_thresholds(self, c_bar: Array) -> Array:
        """``(c_bar_i - T a_i) / w_i`` of ``(N,)`` thresholds (or returns) in the user's units."""
        out: Array = (np.asarray(c_bar, dtype=np.float64) - self.steps * self.c_offset) / self.c_width
        return out

    def unit_gap(self, gap: float) -> float:
        """A value gap (or tolerance) in the user's units on the unit scale: ``gap / w_r``."""
        return float(gap) / self.r_width

    # -- back in the user's units --------------------------------------------------------------
    def value(self, v: Any) -> Any:
        """A return of the unit rewards (scalar or array) in the user's units: ``T a_r + w_r v``."""
        return self.steps * self.r_offset + self.r_width * np.asarray(v, dtype=np.float64)

    def costs(self, C: Any, i: Any = slice(None)) -> Any:
        """Returns of the unit costs ``C (..., N)`` (or of cost ``i`` alone) in the user's units:
        ``T a_i + w_i C_i``."""
        return self.steps * self.c_offset[i] + self.c_width[i] * np.asarray(C, dtype=np.float64)

    def gap(self, g: Any) -> Any:
        """A value difference (gap, bound minus value) in the user's units: ``w_r g``."""
        return self.r_width * np.asarray(g, dtype=np.float64)

    def multipliers(self, lam: Array) -> Array:
        """Lagrange multipliers ``(N,)`` of the unit scale in the user's units: ``lam_i w_r / w_i``."""
        out: Array = np.asarray(lam, dtype=np.float64) * self.r_width / self.c_width
        return out

    def cost_tolerance(self, tol: float) -> Array:
        """``(N,)`` a cost tolerance of the unit scale (feasibility, violation) in the user's units: ``tol w_i``."""
        out: Array = tol * self.c_width
        return out


def unit_image(x: M, units: Units) -> M:
    """The image of a model or its known parts under ``units`` (module docstring): ``x`` itself for
    the identity."""
    if units.identity:
        return x
    image: M = x.replace(r=units.unit_r(x.r), c=units.unit_c(x.c), c_bar=units.unit_thresholds(x.c_bar))
    return image


def unit_model(cmdp: M) -> tuple[M, Units]:
    """``(image, units)`` of a [`CMDP`][cmdp_rl.model.cmdp.CMDP]: its image on the unit scale (module
    docstring) and the map (``cmdp.units``); the model itself when its rewards and costs lie in ``[0, 1]``."""
    units: Units = getattr(cmdp, "units")  # noqa: B009 (a CMDP's, computed at construction)
    return unit_image(cmdp, units), units


def unit_known(known: M) -> tuple[M, Units]:
    """``(image, units)`` of a learner's [`KnownParts`][cmdp_rl.model.cmdp.KnownParts] (``T = H``); the
    parts themselves in ``[0, 1]``."""
    units = Units.of(known.r, known.c, float(getattr(known, "H")))  # noqa: B009
    return unit_image(known, units), units


__all__ = ["Scalable", "Units", "pair_bounds", "scale_interval", "unit_image", "unit_known", "unit_model"]
