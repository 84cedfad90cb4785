"""The result object every planner returns, in the spirit of ``scipy.optimize.OptimizeResult``."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.model.actions import Mask, restrict_policy
from cmdp_rl.model.units import Units
from cmdp_rl.planning.mixing import PlanTables
from cmdp_rl.plumbing.errors import SolverError as SolverError  # defined without imports for the command line

Array = NDArray[np.float64]

#: occupancy mass below which a state counts as unreachable (policy set uniform there)
REACH_TOL = 1e-12


@dataclass(frozen=True, init=False)
class PlanResult:
    """Outcome of a planner (exact LP, literal extended LP, or column generation).

    Attributes:
        status: ``"optimal"`` (the certified ``gap`` is within the planner's ``gap_tol``),
            ``"uncertified"`` (a feasible plan whose gap could not be closed to ``gap_tol``:
            ``gap`` says how far from optimal it may be) or ``"infeasible"``.
        value: objective ``sum mu * r`` of the returned solution (the optimistic
            value for the extended LP).
        costs: ``(N,)`` expected costs of the returned solution (same kernel as ``value``).
        policy: ``(H, S, A)`` randomized Markov policy ``mu / sum_a mu``; uniform on unreachable
            states (a discounted plan's: ``(S, A)``). A plan of column generation builds it on
            first use from its columns (mixed by occupancy, [`cmdp_rl.planning.mixing`][cmdp_rl.planning.mixing]),
            refused above ``limits.DEFAULT_MAX_MEMORY`` with the estimate:
            [`markov_policy`][cmdp_rl.planning.result.PlanResult.markov_policy] takes another limit.
        occupancy: ``(H, S, A)`` state-action occupancy ``mu`` (built likewise:
            [`occupancy_table`][cmdp_rl.planning.result.PlanResult.occupancy_table]).
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
        columns: ``(K, H, S)`` action tables of the deterministic Markov policies the plan mixes
            (column generation; ``(K, S)`` stationary ones for a discounted model), in the smallest
            unsigned integer type that holds ``A - 1``
            ([`action_dtype`][cmdp_rl.evaluation.mixture.action_dtype]: ``uint8`` up to 256 actions),
            else ``None``.
        weights: ``(K,)`` their master-LP weights (positive, summing to 1), else ``None``.
        tables: where ``policy`` and ``occupancy`` come from
            ([`PlanTables`][cmdp_rl.planning.mixing.PlanTables]: given, or mixed on demand).

    ``PlanResult(status, value, costs, policy, occupancy, ...)`` takes the tables as arrays (the
    LP's, the extended LP's) or ``tables=`` instead; ``dataclasses.replace`` keeps them.
    """

    status: str
    value: float
    costs: Array
    kernel: Array | None = None
    min_costs: Array | None = None
    max_excess: float = 0.0
    method: str = ""
    iterations: int = 0
    info: dict[str, Any] = field(default_factory=dict)
    multipliers: Array | None = None
    gap: float = float("nan")
    sweeps: int = 0
    columns: NDArray[np.unsignedinteger[Any]] | None = None
    weights: Array | None = None
    tables: PlanTables = field(default=None, repr=False, compare=False)  # type: ignore[assignment]

    def __init__(
        self,
        status: str,
        value: float,
        costs: Array,
        policy: Array | None = None,
        occupancy: Array | None = None,
        kernel: Array | None = None,
        min_costs: Array | None = None,
        max_excess: float = 0.0,
        method: str = "",
        iterations: int = 0,
        info: dict[str, Any] | None = None,
        multipliers: Array | None = None,
        gap: float = math.nan,
        sweeps: int = 0,
        columns: NDArray[np.unsignedinteger[Any]] | None = None,
        weights: Array | None = None,
        tables: PlanTables | None = None,
    ) -> None:
        if policy is not None:  # arrays given (a new policy replaces the tables: dataclasses.replace)
            if occupancy is None and tables is not None and tables.built:
                occupancy = tables.occupancy
            tables = PlanTables.of(policy, occupancy)  # type: ignore[arg-type]
        elif tables is None:
            raise TypeError("PlanResult: give the policy (and occupancy) tables, or tables=")
        fields = {
            "status": status,
            "value": value,
            "costs": costs,
            "kernel": kernel,
            "min_costs": min_costs,
            "max_excess": max_excess,
            "method": method,
            "iterations": iterations,
            "info": {} if info is None else info,
            "multipliers": multipliers,
            "gap": gap,
            "sweeps": sweeps,
            "columns": columns,
            "weights": weights,
            "tables": tables,
        }
        for name, v in fields.items():
            object.__setattr__(self, name, v)

    @property
    def policy(self) -> Array:
        """The ``(H, S, A)`` randomized Markov policy (``(S, A)`` discounted), built on first use for a
        plan of columns, within ``limits.DEFAULT_MAX_MEMORY`` (class docstring)."""
        return self.markov_policy()

    @property
    def occupancy(self) -> Array:
        """The ``(H, S, A)`` occupancy ``mu`` (``(S, A)`` discounted), built as ``policy`` is."""
        return self.occupancy_table()

    def markov_policy(self, max_memory: float | None = None) -> Array:
        """``policy``, built (once) within ``max_memory`` bytes (``None``: ``limits.DEFAULT_MAX_MEMORY``).

        Raises:
            CMDPInputError: building it would need more memory than the limit (the message gives
                the estimate).
        """
        policy, _ = self.tables.get("plan.policy", max_memory)
        return policy

    def occupancy_table(self, max_memory: float | None = None) -> Array:
        """``occupancy``, built (once) within ``max_memory`` bytes, as
        [`markov_policy`][cmdp_rl.planning.result.PlanResult.markov_policy]."""
        _, occupancy = self.tables.get("plan.occupancy", max_memory)
        out: Array = occupancy
        return out

    @property
    def table_shape(self) -> tuple[int, ...]:
        """The shape of ``policy`` (``(H, S, A)``, or ``(S, A)`` discounted), without building it."""
        return self.tables.shape

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
            f"policy=<{self.table_shape} {'array' if self.tables.built else 'table, mixed on use'}>",
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
