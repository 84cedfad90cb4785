"""The N-constraints family: how sample complexity grows with the number of constraints N.

Both generators share one base problem, scenario 1's grid (see the docs page 'Scenarios'): a
``size x size`` grid, start ``(0, 0)``, absorbing goal ``(size-1, size-1)``, slip
``p_int = 0.8``, ``p_stay = 0.1``, ``p_other = 0.1``, reward 1 per step spent at the goal,
horizon ``H``; the defaults ``size = 3``, ``H = 10`` are scenario ``1a``'s dynamics and
reward (``S = 9``, ``A = 4``, unconstrained optimum 4.908).

Cost rows are random prices on the two moves that lead to the goal: for constraint ``i``,
``c_i(s, a) = w_i(s, a)`` with ``w_i(s, a)`` uniform in ``(0, 1]`` when ``a`` is ``up`` or
``right`` and ``s`` is not the goal, and 0 otherwise (a multi-budget version of scenario 1's
"cost per right"). Row ``i`` is drawn from its own stream ``SeedSequence(seed).spawn(N)[i]``,
so it depends only on ``(seed, i)``: the rows of ``distinct(n, seed)`` are the first ``n``
rows of ``distinct(m, seed)`` for every ``m >= n``.

Thresholds are placed as for Garnet (see the docs page 'Environments'):
``c_bar_i = (1 - f) C_i(pi_s) + f C_i(pi_u)``, with
``pi_s`` the policy minimizing the worst cost ``max_i C_i`` (an LP) and ``pi_u`` the
unconstrained optimum of least total cost ``sum_i C_i`` among ties. Pressing ``left`` or
``down`` costs nothing, so ``C_i(pi_s) = 0`` and ``c_bar_i = f C_i(pi_u)``; every
unconstrained optimum must press ``up`` or ``right`` at the start, whose prices are
positive, so ``C_i(pi_u) > 0``. Hence ``pi_s`` meets every threshold with margin
``c_bar_i = f C_i(pi_u)`` and, costs being non-negative, the thresholds are jointly feasible with
joint Slater gap exactly ``min_i c_bar_i > 0``, for every N. And ``V*`` is strictly below the
unconstrained optimum: every unconstrained optimum has total cost
``sum_i C_i >= sum_i C_i(pi_u) > f sum_i C_i(pi_u) = sum_i c_bar_i``, so it violates at least one threshold.

* [`copies`][cmdp_rl.envs.n_constraints.copies]: one cost row repeated N times (identical rows of ``c`` and ``c_bar``);
  it is ``distinct(1, seed)``'s constraint, so both families coincide at ``N = 1`` and the copies'
  optimum does not depend on N.
* [`distinct`][cmdp_rl.envs.n_constraints.distinct]: N different rows; with ``f = 0.5`` the constrained optimum is far
  below the unconstrained one and several constraints bind at the LP optimum for ``N >= 2`` (seeds 0-29:
  at ``N = 2`` both bind in 25 seeds, one dominates in 5; at ``N >= 4`` at least 2 bind in all).

``meta`` records the family (``"copies"`` or ``"distinct"``), ``N``, ``seed``, ``f``, the grid,
the constrained and unconstrained optima, the joint Slater gap, the active constraints (tight
to ``ACTIVE_TOL`` at the LP optimum) and the individually binding ones (removing one
raises ``V*`` by more than ``BINDING_TOL``; with identical copies no single copy is).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.envs.grid import N_ACTIONS, RIGHT, UP, grid_world
from cmdp_rl.evaluation.evaluate import evaluate, expected_next, optimal_values, q_values
from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.planning import solve
from cmdp_rl.planning.lp import min_worst_excess
from cmdp_rl.planning.solve import unconstrained_value
from cmdp_rl.plumbing.validation import CMDPInputError, check_open_unit, check_positive_int

Array = NDArray[np.float64]

#: tolerance for a constraint to count as active: ``c_bar_i - C_i <= ACTIVE_TOL`` at the LP optimum
ACTIVE_TOL = 1e-7
#: a constraint is binding when removing it raises ``V*`` by more than this (the LP optimum is a
#: simplex vertex, exact to about 1e-13; real raises as small as 8e-8 occur at N = 64)
BINDING_TOL = 1e-9
#: tolerance on ``Q`` values for an action to count as unconstrained-optimal
Q_TIE_TOL = 1e-9
#: the priced moves: the two that lead towards the goal
PRICED_ACTIONS = (UP, RIGHT)

SOURCE = (
    "cmdp_rl.envs.n_constraints (scenario 1's grid, thresholds at fraction f of the way to the unconstrained "
    "optimum's costs)"
)


def _check_args(n_constraints: Any, seed: Any, f: Any, size: Any, H: Any) -> tuple[int, int, float, int, int]:
    """Validated ``(n_constraints, seed, f, size, H)``; every failure names the argument and its rule."""
    n = check_positive_int("n_constraints", n_constraints)
    sd = check_positive_int("seed", seed, 0)
    fr = check_open_unit("f", f)
    w = check_positive_int("size", size, 2)
    h = check_positive_int("H", H)
    reach = 2 * (w - 1) + 1
    if h < reach:
        raise CMDPInputError(
            f"H: must be at least 2 * (size - 1) + 1 = {reach} so that the goal can be reached "
            f"(and the constraints can bind) within the horizon, got {h}"
        )
    return n, sd, fr, w, h


def family_sizes(
    n_constraints: Any, seed: Any = 0, f: Any = 0.5, size: Any = 3, H: Any = 10
) -> tuple[int, int, int, int]:
    """``(S, A, H, N)`` of ``copies`` or ``distinct`` with these arguments, checked as they check them,
    without building the model (its thresholds come from exact plans): what a sweep counts first."""
    n, _, _, w, h = _check_args(n_constraints, seed, f, size, H)
    return w * w, 4, h, n


def _base(size: int, H: int) -> CMDP:
    """Scenario 1's grid without constraints: ``P (S, 4, S)``, ``r (S, 4)``, ``S = size**2``."""
    return grid_world(size, size, H=H, start=(0, 0), goal=(size - 1, size - 1), p_int=0.8, p_stay=0.1, p_other=0.1)


def _cost_rows(n: int, seed: int, size: int) -> Array:
    """``(n, S, 4)`` random move prices; row ``i`` from the stream ``SeedSequence(seed).spawn(n)[i]``.

    ``c[i, s, a]`` is uniform in ``(0, 1]`` for ``a`` in ``PRICED_ACTIONS`` and ``s`` not the
    goal (the last state), 0 otherwise.
    """
    S = size * size
    c = np.zeros((n, S, N_ACTIONS))
    for i, child in enumerate(np.random.SeedSequence(seed).spawn(n)):
        rng = np.random.default_rng(child)
        c[i][:, list(PRICED_ACTIONS)] = 1.0 - rng.random((S, len(PRICED_ACTIONS)))  # in (0, 1]
    c[:, S - 1, :] = 0.0  # the goal (size-1, size-1) is free
    return c


def _cheapest_unconstrained_optimum(model: CMDP) -> Array:
    """``(H, S, A)`` deterministic unconstrained optimum of least total cost ``sum_i C_i`` among ties.

    Actions whose ``Q_h(s, a)`` lies within ``Q_TIE_TOL`` of the best are optimal; among them,
    backward induction on the summed cost picks the cheapest.
    """
    H, S = model.horizon("the cheapest unconstrained optimum"), model.S
    V = optimal_values(model.kernel, model.r, H)
    Q = q_values(model.kernel, model.r, V)  # (H, S, A)
    allowed = Q >= Q.max(axis=-1, keepdims=True) - Q_TIE_TOL
    total = model.c.sum(axis=0)  # (S, A)
    policy = np.zeros((H, S, model.A))
    C = np.zeros(S)
    for h in range(H - 1, -1, -1):
        q = np.where(allowed[h], total + expected_next(model.kernel, h, C), np.inf)
        policy[h, np.arange(S), q.argmin(axis=1)] = 1.0
        C = q.min(axis=1)
    return policy


def _thresholds(model: CMDP, f: float) -> Array:
    """``(N,)`` thresholds ``(1 - f) C_i(pi_s) + f C_i(pi_u)`` (``model.c_bar`` unused)."""
    C_s = evaluate(model, min_worst_excess(model.replace(c_bar=np.zeros(model.N))).policy).costs
    C_u = evaluate(model, _cheapest_unconstrained_optimum(model)).costs
    c_bar: Array = (1.0 - f) * C_s + f * C_u
    return c_bar


def _facts(model: CMDP) -> dict[str, Any]:
    """The optimum, the unconstrained optimum, the joint Slater gap, the active and the binding constraints."""
    res = solve(model)
    if not res.feasible:  # pragma: no cover - impossible by construction (module docstring)
        raise RuntimeError("n_constraints: the generated thresholds are infeasible; please report this")
    active = [int(i) for i in np.flatnonzero(model.c_bar - res.costs <= ACTIVE_TOL)]
    binding = []
    for i in active:
        others = np.arange(model.N) != i
        duplicate = bool(
            np.any(np.all(model.c[others] == model.c[i], axis=(1, 2)) & (model.c_bar[others] == model.c_bar[i]))
        )
        if duplicate:  # an identical row stays: removing this one cannot change the problem
            continue
        relaxed = solve(model.replace(c=model.c[others], c_bar=model.c_bar[others]))
        if relaxed.value > res.value + BINDING_TOL:
            binding.append(i)
    return {
        "v_star": float(res.value),
        "v_unconstrained": unconstrained_value(model),
        "slater_gap": float(-min_worst_excess(model).max_excess),
        "n_active": len(active),
        "active": active,
        "n_binding": len(binding),
        "binding": binding,
    }


def _build(family: str, costs: Array, c_bar: Array, base: CMDP, params: dict[str, Any]) -> CMDP:
    model = base.replace(c=costs, c_bar=c_bar, names=family)
    meta = {
        "name": family,
        "family": family,
        "N": int(costs.shape[0]),
        "seed": params["seed"],
        "f": params["f"],
        "source": SOURCE,
        "parameters": params,
        **_facts(model),
    }
    return model.replace(meta=meta)


def copies(n_constraints: int, seed: int = 0, *, f: float = 0.5, size: int = 3, H: int = 10) -> CMDP:
    """One cost function repeated ``n_constraints`` times on scenario 1's grid (module docstring).

    The row and its threshold are those of ``distinct(1, seed, f=f, size=size, H=H)`` (the two
    families coincide at ``N = 1``); every copy has the same ``c`` row and the same ``c_bar``,
    so the feasible set, the optimum ``V*`` and the set of optimal policies do not depend on N. All N
    copies are active at the optimum; for ``N >= 2`` none is individually binding.

    Args:
        n_constraints: N, the number of copies (integer >= 1).
        seed: integer >= 0, the only source of randomness (the move prices).
        f: threshold fraction in the open interval (0, 1); smaller is tighter.
        size: grid side (>= 2); ``S = size**2``.
        H: horizon, at least ``2 * (size - 1) + 1`` (the goal must be reachable).

    Returns:
        A [`CMDP`][cmdp_rl.model.cmdp.CMDP] with ``P (S, 4, S)``, ``r (S, 4)``, ``c (N, S, 4)`` (identical
        rows), ``c_bar (N,)`` (identical entries), ``s0 = 0``; ``meta`` as in the module docstring.

    Raises:
        CMDPInputError: a bad argument (the message names it and the rule).
    """
    n, sd, fr, w, h = _check_args(n_constraints, seed, f, size, H)
    base = _base(w, h)
    one = base.replace(c=_cost_rows(1, sd, w), c_bar=np.zeros(1))
    c_bar = _thresholds(one, fr)
    params = {"n_constraints": n, "seed": sd, "f": fr, "size": w, "H": h}
    return _build("copies", np.repeat(one.c, n, axis=0), np.repeat(c_bar, n), base, params)


def distinct(n_constraints: int, seed: int = 0, *, f: float = 0.5, size: int = 3, H: int = 10) -> CMDP:
    """``n_constraints`` different random cost functions on scenario 1's grid (module docstring).

    Row ``i`` prices the ``up`` and ``right`` moves of every non-goal cell with independent
    uniform draws in ``(0, 1]`` from its own stream (so the rows are pairwise distinct and nested
    in N); thresholds ``c_bar_i = (1 - f) C_i(pi_s) + f C_i(pi_u) = f C_i(pi_u)``
    are jointly feasible with joint Slater gap ``min_i c_bar_i > 0``. The constrained optimum
    lies strictly below the unconstrained one, and at the default ``f = 0.5`` several constraints
    usually bind at the LP optimum for ``N >= 2`` (always for ``N >= 4`` over seeds 0-29; at
    ``N = 2`` one constraint dominates in 5 of them): see ``meta["n_active"]`` and ``meta["n_binding"]``.

    Args:
        n_constraints: N, the number of different constraints (integer >= 1).
        seed: integer >= 0, the only source of randomness (the move prices).
        f: threshold fraction in the open interval (0, 1); smaller is tighter.
        size: grid side (>= 2); ``S = size**2``.
        H: horizon, at least ``2 * (size - 1) + 1`` (the goal must be reachable).

    Returns:
        A [`CMDP`][cmdp_rl.model.cmdp.CMDP] with ``P (S, 4, S)``, ``r (S, 4)``, ``c (N, S, 4)``,
        ``c_bar (N,)``, ``s0 = 0``; ``meta`` as in the module docstring.

    Raises:
        CMDPInputError: a bad argument (the message names it and the rule).
    """
    n, sd, fr, w, h = _check_args(n_constraints, seed, f, size, H)
    base = _base(w, h)
    model = base.replace(c=_cost_rows(n, sd, w), c_bar=np.zeros(n))
    params = {"n_constraints": n, "seed": sd, "f": fr, "size": w, "H": h}
    return _build("distinct", model.c, _thresholds(model, fr), base, params)


__all__ = ["ACTIVE_TOL", "BINDING_TOL", "PRICED_ACTIONS", "copies", "distinct", "family_sizes"]
