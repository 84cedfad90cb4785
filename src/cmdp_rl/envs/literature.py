"""Constrained benchmarks of the follow-up CMDP-learning papers, defined exactly (docs/environments.md).

Read from the DOPE authors' public code (Bura, HasanzadeZonuzy, Kalathil, Shakkottai,
Chamberland, "DOPE: Doubly Optimistic and Pessimistic Exploration for Safe Reinforcement
Learning", NeurIPS 2022; repository ``archanabura/DOPE-DoublyOptimisticPessimisticExploration``,
``Codes/<problem>/model-*.py``), which the DOPE paper's experiments run, and converted to
this library's conventions: a reward to maximize in [0, 1] (the code's objective costs
become ``reward = 1 - cost`` or ``-cost``, an affine change that keeps the optimal
policies), the code's thresholds ``c_bar = H / 2``, its horizons and its initial state 0.

* ``media_control``: the media-streaming control problem (``Codes/MediaControl``);
* ``inventory_control``: the inventory-control CMDP (``Codes/InventoryControl``);
* ``factored_cmdp``: the three-state "factored" example (``Codes/FactoredCMDP``);
* ``cliff_grid``: a safe-exploration grid with a cliff (Sutton and Barto's cliff walk,
  Example 6.6, with the cliff as a cost instead of a -100 reward).

Each takes its threshold as ``c_bar`` (``threshold``: its deprecated name, for one release).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from cmdp_rl.envs.grid import GridConstraint, grid_world
from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.plumbing.validation import (
    CMDPInputError,
    as_float,
    as_float_array,
    check_positive_int,
    distribution_rows,
    renamed_arguments,
)

DOPE_SOURCE = "Bura et al. 2022 (DOPE), code archanabura/DOPE-DoublyOptimisticPessimisticExploration"


def _prob(name: str, value: Any) -> float:
    v = as_float(name, value)
    if not 0.0 <= v <= 1.0:
        raise CMDPInputError(f"{name}: must be a probability in [0, 1], got {v}")
    return v


@renamed_arguments(threshold="c_bar")
def media_control(
    H: int = 10,
    c_bar: float | None = None,
    buffer: int = 10,
    fast: float = 0.9,
    slow: float = 0.1,
    arrival: float = 0.8,
) -> CMDP:
    """DOPE's media-streaming control (``Codes/MediaControl/model-queue.py``).

    States: buffer levels ``0 .. buffer-1`` (the code's 0.0, 0.1, ..., 0.9), start empty
    (``s0 = 0``). Actions: 0 = fast service (rate ``fast`` = 0.9), 1 = slow (``slow`` = 0.1);
    with arrival rate ``arrival`` = 0.8 and the chosen rate ``mu``, the buffer stays with
    probability ``mu * arrival + (1 - mu)(1 - arrival)``, grows by one with ``mu (1 - arrival)``
    and shrinks by one with ``(1 - mu) arrival`` (clipped at both ends). The code minimizes
    the number of steps with an empty buffer; here ``r(s, a) = 1`` when ``s > 0`` (so
    ``V = H - `` the code's objective). Cost 1 per fast step, ``c_bar = H / 2`` (default).
    """
    H = check_positive_int("H", H)
    n = check_positive_int("buffer", buffer, 2)
    mu = np.array([_prob("fast", fast), _prob("slow", slow)])
    lam = _prob("arrival", arrival)
    stay, up, down = mu * lam + (1 - mu) * (1 - lam), mu * (1 - lam), (1 - mu) * lam
    P = np.zeros((n, 2, n))
    s = np.arange(n)
    for a in range(2):
        np.add.at(P[:, a], (s, s), stay[a])
        np.add.at(P[:, a], (s, np.minimum(s + 1, n - 1)), up[a])
        np.add.at(P[:, a], (s, np.maximum(s - 1, 0)), down[a])
    r = np.repeat((s > 0).astype(float)[:, None], 2, axis=1)
    c = np.zeros((1, n, 2))
    c[0, :, 0] = 1.0
    c_bar = H / 2 if c_bar is None else as_float("c_bar", c_bar)
    return CMDP(
        P,
        r,
        c,
        np.array([c_bar]),
        0,
        H,
        names="media-control",
        meta={"source": DOPE_SOURCE + ", Codes/MediaControl/model-queue.py"},
    )


@renamed_arguments(threshold="c_bar")
def inventory_control(
    H: int = 7,
    c_bar: float | None = None,
    capacity: int = 5,
    fixed_cost: float = 4.0,
    demand: tuple[float, ...] = (0.3, 0.2, 0.2, 0.2, 0.05, 0.05),
) -> CMDP:
    """DOPE's inventory control (``Codes/InventoryControl/model-in.py``).

    States: stock ``0 .. capacity`` (6), ``s0 = 0``. Action ``a``: order ``a`` units; the code
    allows ``a <= capacity - s`` only, so here an order beyond that is clipped to
    ``capacity - s`` (a duplicate of the largest allowed order; the optimum is unchanged).
    Demand ``d`` with probabilities ``demand``; next stock ``min(max(s + a - d, 0), capacity)``.
    Reward: the code's revenue ``sum_d P[s, a, s + a - d] f(d)`` over ``d <= s + a`` with
    ``f(d) = 8 d / 100`` (note: it weighs ``d = s + a`` by the whole stock-out probability,
    as the code does), divided by its largest value. Cost: ordering ``K + 2a`` (``K = 4``,
    when ``a > 0``) plus holding ``s + a``, divided by its largest value. ``c_bar = H / 2``.
    """
    H = check_positive_int("H", H)
    cap = check_positive_int("capacity", capacity)
    K = as_float("fixed_cost", fixed_cost)
    dem = as_float_array("demand", demand, 1)
    if dem.size != cap + 1:
        raise CMDPInputError(f"demand: must be {cap + 1} probabilities summing to 1 (demand 0 .. capacity)")
    distribution_rows("demand", demand, dem, "the demand distribution (demand 0 .. capacity)")
    S = A = cap + 1
    s, a = np.meshgrid(np.arange(S), np.arange(A), indexing="ij")
    order = np.minimum(a, cap - s)  # the code's state-dependent action set
    P = np.zeros((S, A, S))
    R = np.zeros((S, A))
    for d in range(S):
        nxt = np.clip(s + order - d, 0, cap)
        np.add.at(P, (s, a, nxt), dem[d])
    for d in range(S):
        ok = s + order - d >= 0
        nxt = np.clip(s + order - d, 0, cap)
        R += np.where(ok, P[s, a, nxt] * 8.0 * d / 100.0, 0.0)
    cost = np.where(order > 0, K + 2.0 * order, 0.0) + (s + order)
    r = R / R.max()
    c = (cost / cost.max())[None]
    c_bar = H / 2 if c_bar is None else as_float("c_bar", c_bar)
    return CMDP(
        P,
        r,
        c,
        np.array([c_bar]),
        0,
        H,
        names="inventory",
        meta={"source": DOPE_SOURCE + ", Codes/InventoryControl/model-in.py"},
    )


@renamed_arguments(threshold="c_bar")
def factored_cmdp(H: int = 6, c_bar: float | None = None) -> CMDP:
    """DOPE's three-state example (``Codes/FactoredCMDP/model_factored.py``).

    States 0, 1, 2, ``s0 = 0``. Action 0 stays (reward 0, cost 0); action 1 moves to
    ``s + 1`` (from 2 back to 0) with cost 1 and reward ``(s + 1) / 3`` (the code minimizes
    ``-(s + 1) / 3``). ``c_bar = H / 2``.
    """
    H = check_positive_int("H", H)
    P = np.zeros((3, 2, 3))
    s = np.arange(3)
    P[s, 0, s] = 1.0
    P[s, 1, (s + 1) % 3] = 1.0
    r = np.zeros((3, 2))
    r[:, 1] = (s + 1) / 3.0
    c = np.zeros((1, 3, 2))
    c[0, :, 1] = 1.0
    c_bar = H / 2 if c_bar is None else as_float("c_bar", c_bar)
    return CMDP(
        P,
        r,
        c,
        np.array([c_bar]),
        0,
        H,
        names="factored",
        meta={"source": DOPE_SOURCE + ", Codes/FactoredCMDP/model_factored.py"},
    )


@renamed_arguments(threshold="c_bar")
def cliff_grid(H: int = 25, c_bar: float = 0.1, width: int = 6, height: int = 3, slip: float = 0.1) -> CMDP:
    """A safe-exploration grid with a cliff: Sutton and Barto's cliff walk (Example 6.6) as a CMDP.

    A ``width x height`` grid (cell ``(x, y)``, ``y = 0`` the bottom row); start ``(0, 0)``,
    absorbing goal ``(width - 1, 0)``; the cliff is the bottom row between them. A move goes
    where intended with probability ``1 - slip`` and to each other direction with ``slip / 3``
    (off the grid: stay). Reward 1 per step at the goal. Instead of Sutton and Barto's -100
    and reset, each step spent on a cliff cell costs 1 (the agent may walk on), and the
    expected number of cliff steps must stay below ``c_bar``: the short path along the
    cliff is fast but risky, the detour through the upper rows is safe but slower.
    """
    H = check_positive_int("H", H)
    w = check_positive_int("width", width, 3)
    h = check_positive_int("height", height, 2)
    p = _prob("slip", slip)
    cliff = {(x, 0): 1.0 for x in range(1, w - 1)}
    return grid_world(
        w,
        h,
        goal=(w - 1, 0),
        H=H,
        start=(0, 0),
        p_int=1 - p,
        p_stay=0.0,
        p_other=p,
        constraints=[GridConstraint(c_bar=as_float("c_bar", c_bar), cell_costs=cliff)],
    ).replace(
        names="cliff-grid",
        meta={"source": "Sutton and Barto 2018, Example 6.6 (cliff walking), the cliff as a constraint"},
    )


#: name -> (factory, defaults, description, source), read by ``cmdp_rl.envs.registry``
LITERATURE: dict[str, tuple[Callable[..., CMDP], dict[str, Any], str, str]] = {
    "media-control": (
        media_control,
        {"H": 10, "c_bar": 5.0},
        "DOPE's media streaming: buffer 10, fast/slow service, cost = fast steps, c_bar = H/2",
        DOPE_SOURCE,
    ),
    "inventory": (
        inventory_control,
        {"H": 7, "c_bar": 3.5},
        "DOPE's inventory control: stock 0..5, orders, normalized order+holding cost, c_bar = H/2",
        DOPE_SOURCE,
    ),
    "factored": (
        factored_cmdp,
        {"H": 6, "c_bar": 3.0},
        "DOPE's 3-state example: moving pays (s+1)/3 and costs 1, c_bar = H/2",
        DOPE_SOURCE,
    ),
    "cliff-grid": (
        cliff_grid,
        {"H": 25, "c_bar": 0.1, "width": 6, "height": 3, "slip": 0.1},
        "safe-exploration cliff grid: cost = steps on the cliff, the short path is risky",
        "Sutton and Barto 2018, Example 6.6",
    ),
}

__all__ = ["LITERATURE", "cliff_grid", "factored_cmdp", "inventory_control", "media_control"]
