"""Extended value iteration (EVI) over a box-and-simplex set of kernels.

The plausible next-state distributions of ``(s, a)`` are
``{p : lower <= p <= upper, sum p = 1}``. For a linear objective the inner
maximum of ``sum_s2 p(s2) V(s2)`` over this set is a greedy fill: every entry
starts at its lower bound and the remaining mass goes to next states in
decreasing order of ``V``, each up to its upper bound. One sort of ``V_{h+1}``
per step serves every ``(s, a)``, so a sweep is a handful of array operations
per step.

An EVI sweep returns a deterministic policy and an extreme kernel: a vertex of
the extended LP's feasible set, used as a column by :mod:`.colgen`. A column
is stored as its ``actions (H, S)`` and next-state ``order (H, S)``; from those
and the bounds the kernel is re-derived, so columns stay valid (plausible)
when the bounds change between episodes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]
IntArray = NDArray[np.intp]


@dataclass(frozen=True)
class Box:
    """Per-entry bounds on plausible kernels, with what the greedy fill reuses.

    Attributes:
        lower: ``(S, A, S)`` lower bounds (>= 0, rows sum to <= 1).
        upper: ``(S, A, S)`` upper bounds (<= 1, rows sum to >= 1).
        room: ``(S, A, S)`` ``upper - lower``.
        spare: ``(S, A)`` mass left after the lower bounds, ``1 - sum lower``.
    """

    lower: Array
    upper: Array
    room: Array
    spare: Array

    @classmethod
    def from_bounds(cls, lower: Array, upper: Array) -> "Box":
        """Build from ``(S, A, S)`` bounds (assumed consistent)."""
        return cls(lower, upper, upper - lower, 1.0 - lower.sum(axis=-1))

    @classmethod
    def from_radius(cls, p_hat: Array, beta: Array) -> "Box":
        """The box ``|p - p_hat| <= beta`` intersected with [0, 1] (paper eq. "bernstein-hoeffding")."""
        return cls.from_bounds(np.clip(p_hat - beta, 0.0, 1.0), np.clip(p_hat + beta, 0.0, 1.0))

    @property
    def S(self) -> int:
        return int(self.lower.shape[0])


def greedy_rows(lower: Array, room: Array, spare: Array, order: IntArray) -> Array:
    """Greedy-fill distributions for a batch of rows sharing one next-state ``order``.

    Args:
        lower, room: ``(..., S)`` lower bounds and ``upper - lower``.
        spare: ``(...)`` mass ``1 - sum lower`` to distribute.
        order: ``(S,)`` next states, most valuable first.

    Returns:
        ``(..., S)`` the distribution putting as much mass as the bounds allow
        on the earliest states of ``order``.
    """
    out = lower.copy()
    out[..., order] += _fill(room[..., order], spare)
    return out


def _fill(room_o: Array, spare: Array) -> Array:
    """Mass ``(..., S)`` given to each slot of an ordered row: ``spare`` poured in slot order."""
    before = np.cumsum(room_o, axis=-1) - room_o          # mass handed out before each slot
    return np.clip(spare[..., None] - before, 0.0, room_o)


def evi(box: Box, reward: Array, H: int) -> tuple[Array, IntArray, IntArray]:
    """One EVI sweep: the optimistic values of ``reward`` over all policies and plausible kernels.

    Args:
        box: bounds of the plausible set.
        reward: ``(S, A)`` per-step reward (may be negative: Lagrangian rewards).
        H: horizon.

    Returns:
        ``values (H+1, S)``, greedy ``actions (H, S)`` and the next-state ``order (H, S)``
        used at each step (states sorted by decreasing ``V_{h+1}``, ties by index).
    """
    S = box.S
    V = np.zeros((H + 1, S))
    actions = np.zeros((H, S), dtype=np.intp)
    orders = np.zeros((H, S), dtype=np.intp)
    for h in range(H - 1, -1, -1):
        order = np.argsort(-V[h + 1], kind="stable")
        v_o = V[h + 1][order]
        alloc = _fill(box.room[..., order], box.spare)
        Q = reward + box.lower @ V[h + 1] + alloc @ v_o          # (S, A)
        a = Q.argmax(axis=1)
        actions[h], orders[h] = a, order
        V[h] = Q[np.arange(S), a]
    return V, actions, orders


@dataclass(frozen=True)
class Column:
    """One vertex of the extended-LP polytope: a deterministic policy and an extreme kernel.

    Attributes:
        actions: ``(H, S)`` action taken in each state and step.
        order: ``(H, S)`` next-state preference order defining the kernel at each step.
        dist: ``(H, S)`` state distribution ``P(s_h = s)`` from ``s0``.
        rows: ``(H, S, S)`` kernel rows ``P'_h(. | s, actions[h, s])``.
        value: expected total reward.
        costs: ``(N,)`` expected total costs.
    """

    actions: IntArray
    order: IntArray
    dist: Array
    rows: Array
    value: float
    costs: Array

    def key(self) -> bytes:
        """Identity of the vertex (same actions and order give the same occupancy)."""
        return self.actions.tobytes() + self.order.tobytes()


def make_column(box: Box, actions: IntArray, order: IntArray, r: Array, c: Array, s0: int
                ) -> Column:
    """Evaluate the vertex ``(actions, order)`` under ``box``: forward pass of its extended occupancy.

    Args:
        box: plausible-set bounds.
        actions, order: ``(H, S)`` as returned by :func:`evi`.
        r: ``(S, A)`` rewards; c: ``(N, S, A)`` costs; s0: initial state.
    """
    H, S = actions.shape
    idx = np.arange(S)
    rows = np.empty((H, S, S))
    dist = np.zeros((H, S))
    dist[0, s0] = 1.0
    for h in range(H):
        a = actions[h]
        rows[h] = greedy_rows(box.lower[idx, a], box.room[idx, a], box.spare[idx, a], order[h])
        if h + 1 < H:
            dist[h + 1] = dist[h] @ rows[h]
    r_pi = r[idx[None, :], actions]                    # (H, S)
    c_pi = c[:, idx[None, :], actions]                 # (N, H, S)
    value = float((dist * r_pi).sum())
    costs = np.einsum("hs,nhs->n", dist, c_pi)
    return Column(actions, order, dist, rows, value, costs)
