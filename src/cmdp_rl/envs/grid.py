"""Grid-world CMDPs with the slip model of the paper's scenarios (see the docs page 'Scenarios').

Layout: a ``width x height`` grid of cells ``(x, y)``, ``x`` the column from the
left (``0 .. width-1``) and ``y`` the row from the bottom (``0 .. height-1``);
state index ``s = y * width + x``, so ``S = width * height``. Actions
(``A = 4``): ``0 = up`` (``y + 1``), ``1 = right`` (``x + 1``), ``2 = down``
(``y - 1``), ``3 = left`` (``x - 1``).

Slip model: from a cell other than the goal, action ``a`` moves in direction
``a`` with probability ``p_int``, stays put with ``p_stay``, and moves in each of
the three other directions with ``p_other / 3``; a move off the grid leaves the
agent where it is. The goal is absorbing (every action stays). Reward: 1 for
every step spent in the goal (any action), 0 elsewhere.

Constraints are described by [`GridConstraint`][cmdp_rl.envs.grid.GridConstraint] records: a cost per choice
of given actions (anywhere, the goal included) plus a cost per step spent in
given cells (any action). Every function here is pure: inputs are read, never
modified, and the returned arrays are new.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.model.sparse import SPARSE_ABOVE_BYTES, dense_bytes
from cmdp_rl.plumbing.validation import ROW_SUM_TOL, CMDPInputError, as_float_array, as_int, plain

Array = NDArray[np.float64]
Cell = tuple[int, int]

UP, RIGHT, DOWN, LEFT = 0, 1, 2, 3
#: number of actions of every grid world
N_ACTIONS = 4
#: action names, indexed by action
ACTION_NAMES: tuple[str, ...] = ("up", "right", "down", "left")
#: ``(dx, dy)`` displacement of each action, indexed by action
MOVES: tuple[Cell, ...] = ((0, 1), (1, 0), (0, -1), (-1, 0))


@dataclass(frozen=True)
class GridConstraint:
    """One constraint ``C_i <= c_bar`` of a grid world.

    The per-step cost is ``c(s, a) = action_costs.get(a, 0) + cell_costs.get((x, y), 0)``
    where ``(x, y)`` is the cell of ``s``; it must lie in [0, 1] (Assumption 1).

    Attributes:
        c_bar: threshold of the expected total cost over the horizon.
        action_costs: cost per step of choosing action ``a`` (anywhere), keyed by
            action index ``0 .. 3``.
        cell_costs: cost per step spent in cell ``(x, y)`` (any action).
    """

    c_bar: float
    action_costs: Mapping[int, float] = field(default_factory=dict)
    cell_costs: Mapping[Cell, float] = field(default_factory=dict)


def _check_dims(width: int, height: int | None) -> tuple[int, int]:
    w = as_int("width", width)
    h = w if height is None else as_int("height", height)
    if w < 1:
        raise CMDPInputError(f"width: must be an integer >= 1, got {plain(width)}")
    if h < 1:
        raise CMDPInputError(f"height: must be an integer >= 1, got {plain(height)}")
    return w, h


def _check_cell(name: str, cell: Any, width: int, height: int) -> Cell:
    try:
        x_raw, y_raw = cell
    except (TypeError, ValueError):
        raise CMDPInputError(f"{name}: must be a cell (x, y), got {plain(cell)}") from None
    x, y = as_int(f"{name} x", x_raw), as_int(f"{name} y", y_raw)
    if not (0 <= x < width and 0 <= y < height):
        raise CMDPInputError(
            f"{name}: cell {plain(cell)} lies outside the {width}x{height} grid "
            f"(need 0 <= x < {width}, 0 <= y < {height})"
        )
    return x, y


def state_index(x: int, y: int, width: int, height: int | None = None) -> int:
    """State index ``s = y * width + x`` of cell ``(x, y)`` (``height`` defaults to ``width``)."""
    w, h = _check_dims(width, height)
    cx, cy = _check_cell("cell", (x, y), w, h)
    return cy * w + cx


def cell_of(s: int, width: int, height: int | None = None) -> Cell:
    """Cell ``(x, y)`` of state ``s``: ``x = s % width``, ``y = s // width``."""
    w, h = _check_dims(width, height)
    si = as_int("s", s)
    if not 0 <= si < w * h:
        raise CMDPInputError(f"s: must be a state index in [0, {w * h - 1}], got {plain(s)}")
    return si % w, si // w


def cell_field(width: int, height: int | None, default: float, overrides: Mapping[Cell, float] | None = None) -> Array:
    """An ``(S,)`` per-cell array equal to ``default`` except at the ``overrides`` cells.

    Handy for per-cell slip probabilities, e.g.
    ``cell_field(3, 3, 0.7, {(1, 0): 0.95})``.
    """
    w, h = _check_dims(width, height)
    out = np.full(w * h, float(default))
    for cell, value in (overrides or {}).items():
        x, y = _check_cell(f"overrides[{plain(cell)}]", cell, w, h)
        out[y * w + x] = float(value)
    return out


def neighbours(width: int, height: int | None = None) -> NDArray[np.int64]:
    """``(4, S)`` index of the state reached by moving in each direction (walls: stay put).

    ``neighbours(w, h)[d, s]`` is the state one step from ``s`` in direction
    ``d`` (``0 = up, 1 = right, 2 = down, 3 = left``), or ``s`` itself when that
    move would leave the grid.
    """
    w, h = _check_dims(width, height)
    ys, xs = np.divmod(np.arange(w * h), w)
    dx = np.array([m[0] for m in MOVES])[:, None]
    dy = np.array([m[1] for m in MOVES])[:, None]
    nx, ny = xs[None, :] + dx, ys[None, :] + dy
    inside = (nx >= 0) & (nx < w) & (ny >= 0) & (ny < h)
    return np.where(inside, ny * w + nx, np.arange(w * h)[None, :]).astype(np.int64)


def _slip_probs(name: str, value: ArrayLike, S: int) -> Array:
    ndim = np.ndim(value)
    if ndim not in (0, 1):
        raise CMDPInputError(f"{name}: expected a scalar or shape ({S},) (one entry per state), got {ndim} dimensions")
    arr = as_float_array(name, value, ndim)
    if arr.ndim == 0:
        arr = np.full(S, float(arr))
    elif arr.shape != (S,):
        raise CMDPInputError(f"{name}: expected a scalar or shape ({S},) (one entry per state), got shape {arr.shape}")
    neg = np.flatnonzero(arr < 0)
    if neg.size:
        raise CMDPInputError(f"{name}[{int(neg[0])}]: slip probabilities must be >= 0, got {arr[neg[0]]}")
    return arr


def slip_kernel(
    width: int,
    height: int | None,
    goal: Cell,
    p_int: ArrayLike = 0.8,
    p_stay: ArrayLike = 0.1,
    p_other: ArrayLike = 0.1,
    *,
    sparse: bool = False,
) -> Array | sp.csr_array:
    """The ``(S, 4, S)`` transition kernel of the slip model (module docstring).

    Args:
        width: grid width (columns).
        height: grid height (rows); ``None`` means square.
        goal: absorbing goal cell ``(x, y)``.
        p_int: probability of moving as intended; a scalar or an ``(S,)`` per-state array.
        p_stay: probability of staying put (same form); ``p_int + p_stay + p_other == 1``
            (tolerance 1e-8), entries >= 0.
        p_other: probability of moving in one of the other three directions (same form).
            The goal's entries are ignored (it is absorbing).
        sparse: return the ``(S*4, S)`` CSR kernel instead (row ``s*4 + a``; at most 5 entries
            per row, built from the same moves without an ``(S, 4, S)`` array).

    Returns:
        ``P`` with ``P[s, a, s2] = P(s2 | s, a)``, or its CSR form.
    """
    w, h = _check_dims(width, height)
    S = w * h
    gx, gy = _check_cell("goal", goal, w, h)
    pi, ps, po = (_slip_probs(n, v, S) for n, v in (("p_int", p_int), ("p_stay", p_stay), ("p_other", p_other)))
    total = pi + ps + po
    off = np.flatnonzero(np.abs(total - 1.0) > ROW_SUM_TOL)
    if off.size:
        s = int(off[0])
        raise CMDPInputError(
            f"p_int, p_stay, p_other: must sum to 1 in every state (tolerance {ROW_SUM_TOL:g}); "
            f"in state {s} (cell {cell_of(s, w, h)}) they sum to {plain(total[s])}"
        )
    nbr = neighbours(w, h)
    states = np.arange(S)
    actions = np.arange(N_ACTIONS)
    goal_s = gy * w + gx
    if sparse:
        rows, cols, vals = [], [], []
        for d in range(N_ACTIONS):
            weight = np.where(actions[None, :] == d, pi[:, None], po[:, None] / 3.0)  # (S, 4)
            rows.append(states[:, None] * N_ACTIONS + actions[None, :])
            cols.append(np.broadcast_to(nbr[d][:, None], (S, N_ACTIONS)))
            vals.append(weight)
        rows.append(states[:, None] * N_ACTIONS + actions[None, :])
        cols.append(np.broadcast_to(states[:, None], (S, N_ACTIONS)))
        vals.append(np.broadcast_to(ps[:, None], (S, N_ACTIONS)))
        r_ = np.concatenate([x.ravel() for x in rows])
        c_ = np.concatenate([x.ravel() for x in cols])
        v_ = np.concatenate([x.ravel() for x in vals])
        keep = r_ // N_ACTIONS != goal_s
        r_ = np.concatenate([r_[keep], goal_s * N_ACTIONS + actions])
        c_ = np.concatenate([c_[keep], np.full(N_ACTIONS, goal_s)])
        v_ = np.concatenate([v_[keep], np.ones(N_ACTIONS)])
        K = sp.csr_array((v_, (r_, c_)), shape=(S * N_ACTIONS, S))  # sums repeated moves (walls: stay)
        K.sum_duplicates()
        K.eliminate_zeros()
        return K
    P = np.zeros((S, N_ACTIONS, S))
    for d in range(N_ACTIONS):
        # weight of moving in direction d for every (s, a): p_int if a == d else p_other / 3
        weight = np.where(actions[None, :] == d, pi[:, None], po[:, None] / 3.0)
        np.add.at(P, (states[:, None], actions[None, :], nbr[d][:, None]), weight)
    P[states, :, states] += ps[:, None]
    P[goal_s] = 0.0
    P[goal_s, :, goal_s] = 1.0
    return P


def constraint_costs(
    constraint: GridConstraint, width: int, height: int | None = None, name: str = "constraint"
) -> Array:
    """The ``(S, 4)`` per-step cost table of one [`GridConstraint`][cmdp_rl.envs.grid.GridConstraint]."""
    w, h = _check_dims(width, height)
    S = w * h
    cost = np.zeros((S, N_ACTIONS))
    for a, value in dict(constraint.action_costs).items():
        act = as_int(f"{name}.action_costs key", a)
        if not 0 <= act < N_ACTIONS:
            raise CMDPInputError(
                f"{name}.action_costs: action must be in 0..{N_ACTIONS - 1} ({', '.join(ACTION_NAMES)}), got {plain(a)}"
            )
        cost[:, act] += _cost_value(f"{name}.action_costs[{act}]", value)
    for cell, value in dict(constraint.cell_costs).items():
        x, y = _check_cell(f"{name}.cell_costs key", cell, w, h)
        cost[y * w + x, :] += _cost_value(f"{name}.cell_costs[{(x, y)}]", value)
    bad = np.argwhere(cost > 1.0)
    if bad.size:
        s, a = (int(i) for i in bad[0])
        raise CMDPInputError(
            f"{name}: cost at state {s}, action {a} sums to {cost[s, a]}, "
            f"must lie in [0, 1] (Assumption 1 of the paper); rescale the "
            f"costs and the threshold"
        )
    return cost


def _cost_value(name: str, value: Any) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise CMDPInputError(f"{name}: must be a number in [0, 1], got {plain(value)}") from None
    if not (np.isfinite(v) and 0.0 <= v <= 1.0):
        raise CMDPInputError(f"{name}: must lie in [0, 1] (Assumption 1 of the paper), got {plain(value)}")
    return v


def grid_world(
    width: int,
    height: int | None = None,
    *,
    H: int,
    goal: Cell,
    start: Cell = (0, 0),
    p_int: ArrayLike = 0.8,
    p_stay: ArrayLike = 0.1,
    p_other: ArrayLike = 0.1,
    constraints: Sequence[GridConstraint] = (),
    names: str = "",
) -> CMDP:
    """A grid-world CMDP with this module's slip model.

    Args:
        width: grid width; ``S = width * height``.
        height: grid height (``None``: square).
        H: horizon.
        goal: absorbing goal cell ``(x, y)``; reward 1 per step spent there.
        start: initial cell ``(x, y)``; ``s0 = y * width + x``.
        p_int: probability of the intended move, a scalar or an ``(S,)`` array (see
            [`slip_kernel`][cmdp_rl.envs.grid.slip_kernel]).
        p_stay: probability of staying put (same form).
        p_other: probability of a move in another direction (same form).
        constraints: ``N`` [`GridConstraint`][cmdp_rl.envs.grid.GridConstraint] records.
        names: metadata stored on the CMDP.

    Returns:
        A [`CMDP`][cmdp_rl.model.cmdp.CMDP] with ``P (S, 4, S)``, ``r (S, 4)``,
        ``c (N, S, 4)`` and ``c_bar (N,)``.
    """
    w, h = _check_dims(width, height)
    S = w * h
    P = slip_kernel(w, h, goal, p_int, p_stay, p_other, sparse=dense_bytes(S, N_ACTIONS) > SPARSE_ABOVE_BYTES)
    gx, gy = _check_cell("goal", goal, w, h)
    sx, sy = _check_cell("start", start, w, h)
    r = np.zeros((S, N_ACTIONS))
    r[gy * w + gx, :] = 1.0
    if isinstance(constraints, GridConstraint):
        raise CMDPInputError(
            "constraints: must be a sequence of GridConstraint, got a single GridConstraint (wrap it in a list)"
        )
    specs = list(constraints)
    for i, spec in enumerate(specs):
        if not isinstance(spec, GridConstraint):
            raise CMDPInputError(f"constraints[{i}]: must be a GridConstraint, got {plain(spec)}")
    c = np.zeros((len(specs), S, N_ACTIONS))
    for i, spec in enumerate(specs):
        c[i] = constraint_costs(spec, w, h, name=f"constraints[{i}]")
    c_bar = np.array([_threshold(f"constraints[{i}].c_bar", s.c_bar) for i, s in enumerate(specs)])
    return CMDP(P, r, c, c_bar, sy * w + sx, H, names=names)


def _threshold(name: str, value: Any) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise CMDPInputError(f"{name}: must be a finite number, got {plain(value)}") from None
    if not np.isfinite(v):
        raise CMDPInputError(f"{name}: must be finite, got {plain(value)}")
    return v


__all__ = [
    "ACTION_NAMES",
    "DOWN",
    "LEFT",
    "MOVES",
    "N_ACTIONS",
    "RIGHT",
    "UP",
    "GridConstraint",
    "cell_field",
    "cell_of",
    "constraint_costs",
    "grid_world",
    "neighbours",
    "slip_kernel",
    "state_index",
]
