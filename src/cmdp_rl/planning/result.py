"""The result object every planner returns, in the spirit of ``scipy.optimize.OptimizeResult``."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.model.actions import Mask, restrict_policy
from cmdp_rl.model.units import Units
from cmdp_rl.plumbing.errors import SolverError as SolverError  # defined without imports for the command line

Array = NDArray[np.float64]

#: occupancy mass below which a state counts as unreachable (policy set uniform there)
REACH_TOL = 1e-12


@dataclass(frozen=True)
class PlanResult:
    """Outcome of a planner (exact LP, literal extended LP, or column generation).

    Attributes:
        status: ``"optimal"`` (the certified ``gap`` is within the planner's ``gap_tol``),
            ``"uncertified"`` (a feasible plan whose gap could not be closed to ``gap_tol``:
            ``gap`` says how far from optimal it may be) or ``"infeasible"``.
        value: objective ``sum mu * r`` of the returned solution (the optimistic
            value for the extended LP).
        costs: ``(N,)`` expected costs of the returned solution (same kernel as ``value``).
        policy: ``(H, S, A)`` randomized policy; uniform on unreachable states.
        occupancy: ``(H, S, A)`` state-action occupancy ``mu``.
        kernel: ``(H, S, A, S)`` optimistic kernel (extended LP only, else ``None``).
        min_costs: ``(N,)`` smallest achievable expected cost of each constraint
            (only when infeasible, else ``None``).
        max_excess: ``max_i (costs_i - c_bar_i)`` of the returned solution; when
            infeasible the solution minimizes it.
        method: which planner produced it.
        iterations: LP/pricing iterations used.
        info: planner-specific extras (e.g. the column pool for warm starts).
        multipliers: ``(N,)`` non-negative cost multipliers ``lambda`` (exact planners). When
            optimal, the ones of the certificate ``D(lambda) = D0 + lambda . (c_bar + t) >= V*``
            (``"lp"``: the LP's duals); when infeasible, the certificate of infeasibility:
            ``sum lambda = 1`` and ``max_pi sum_i lambda_i (c_bar_i - C_i(pi)) < 0``.
        gap: a certified upper bound on ``V* - value`` (the LP's from its duals and an exact
            evaluation of its policy), ``nan`` when infeasible or when the planner gives none
            (the extended LP's plans).
        sweeps: backward DP sweeps the planner used (every pricing sweep, the seeding ones
            included); column generation also runs one forward evaluation pass per column
            (``info["evaluations"]``, each cheaper than a sweep).
        columns: ``(K, H, S)`` int action tables of the deterministic Markov policies the plan
            mixes (column generation), else ``None``.
        weights: ``(K,)`` their master-LP weights (summing to 1), else ``None``.
    """

    status: str
    value: float
    costs: Array
    policy: Array
    occupancy: Array
    kernel: Array | None = None
    min_costs: Array | None = None
    max_excess: float = 0.0
    method: str = ""
    iterations: int = 0
    info: dict[str, Any] = field(default_factory=dict)
    multipliers: Array | None = None
    gap: float = float("nan")
    sweeps: int = 0
    columns: NDArray[np.int64] | None = None
    weights: Array | None = None

    def __repr__(self) -> str:
        """A short summary (the arrays are large), in the spirit of ``OptimizeResult``."""
        parts = [
            f"status={self.status!r}",
            f"value={self.value:.6g}",
            f"costs={[round(float(c), 6) for c in self.costs]}",
        ]
        if self.min_costs is not None:
            parts.append(f"min_costs={[round(float(c), 6) for c in self.min_costs]}")
        parts += [
            f"policy=<{tuple(self.policy.shape)} array>",
            f"kernel={'None' if self.kernel is None else '<array>'}",
            f"method={self.method!r}",
            f"iterations={self.iterations}",
        ]
        if not np.isnan(self.gap):
            parts.append(f"gap={self.gap:.3g}")
        if self.multipliers is not None:
            parts.append(f"multipliers={[round(float(v), 6) for v in self.multipliers]}")
        return f"PlanResult({', '.join(parts)})"

    @property
    def feasible(self) -> bool:
        """True when the plan meets the thresholds: ``status`` ``"optimal"`` or ``"uncertified"``."""
        return self.status in ("optimal", "uncertified")


def policy_from_occupancy(mu: Array, actions: Mask | None = None) -> Array:
    """``policy[h, s, a] = mu[h, s, a] / sum_b mu[h, s, b]``; uniform where the mass is ~0 (over the
    available actions of a ragged model: [`restrict_policy`][cmdp_rl.model.actions.restrict_policy]).

    Args:
        mu: ``(H, S, A)`` occupancy (tiny negative solver noise is clipped to 0).
        actions: ``(S, A)`` mask of the available actions, or ``None`` (all available).
    """
    mu = np.maximum(mu, 0.0)
    tot = mu.sum(axis=-1, keepdims=True)
    A = mu.shape[-1]
    reach = tot > REACH_TOL
    return restrict_policy(np.where(reach, mu / np.where(reach, tot, 1.0), 1.0 / A), actions)


def plan_in_units(plan: PlanResult, units: Units, c_bar: Array) -> PlanResult:
    """A plan computed on a model's unit image ([`unit_model`][cmdp_rl.model.units.unit_model]) in the
    model's own units (thresholds ``c_bar (N,)``): ``value``, ``costs``, ``min_costs`` and
    ``info["bound"]`` as returns (``T a + w x'``), ``gap`` and ``max_excess`` as differences, the
    multipliers of an optimal plan ``lambda_i' w_r / w_i`` (the slopes ``dV*/dc_bar_i``) and those
    of an infeasible one (a certificate of infeasibility) ``lambda_i' / w_i``, normalized to sum 1;
    the policy, occupancy, columns and weights are the same. ``info["t"]`` stays on the unit scale."""
    if units.identity:
        return plan
    costs = units.costs(plan.costs)
    lam = plan.multipliers
    if lam is not None and plan.status == "infeasible":
        scaled = lam / units.c_width
        lam = scaled / scaled.sum() if scaled.sum() > 0 else scaled
    elif lam is not None:
        lam = units.multipliers(lam)
    info = dict(plan.info)
    if "bound" in info:
        info["bound"] = float(units.value(info["bound"]))
    return replace(
        plan,
        value=float(units.value(plan.value)),
        costs=costs,
        min_costs=None if plan.min_costs is None else units.costs(plan.min_costs),
        max_excess=float(np.max(costs - c_bar)) if c_bar.size else 0.0,
        gap=float(units.gap(plan.gap)),
        multipliers=lam,
        info=info,
    )
