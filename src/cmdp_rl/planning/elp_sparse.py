"""The extended LP over a sparse confidence set, by column generation.

The learners' optimistic planning problem (the paper's eq. "ELP"): the best occupancy of a
policy and a kernel chosen jointly from the confidence set, subject to the cost thresholds.
Its vertices are pairs (deterministic Markov policy, a kernel that at every step is a greedy
fill of the box along one ordering of the next states). Pricing with multipliers ``lambda`` is
extended value iteration on ``r - lambda . c`` (``cmdp_rl.confidence.sparse_box.SparseBox.robust_sweep``),
whose greedy fills order the next states by the sweep's own values ``V_{h+1}``: the column is
``(actions (H, S), V (H + 1, S))``. A column's value and costs come from one forward pass under
its kernel (``_column_forward``, which spreads each chosen pair's mass along the same fill).

The master problem, the stabilized pricing loop, the certificate and the mixing of columns
into one policy are the exact planner's ([`run_colgen`][cmdp_rl.planning.colgen.run_colgen],
[`plan_of`][cmdp_rl.planning.colgen.plan_of]) with [`BoxPool`][cmdp_rl.planning.elp_sparse.BoxPool] as the pool, so the
memory is ``O(nnz + S*A*(N + 2))`` plus ``O(H S)`` per column: no ``(S, A, S)`` array anywhere.

The docs page 'How it works' explains the extended LP; 'Learn from a simulator' says when the learners
plan on the sparse set.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numba as nb
import numpy as np
from numpy.typing import NDArray

from cmdp_rl.confidence.sparse_box import SparseBox
from cmdp_rl.kernels.sparse_fill import fill_order, robust_opt, sweep_scratch
from cmdp_rl.model.actions import Mask, check_actions
from cmdp_rl.planning.colgen import check_gap_tol, plan_of, run_colgen
from cmdp_rl.planning.pool import ColumnStat, PoolBase
from cmdp_rl.planning.result import PlanResult
from cmdp_rl.plumbing.validation import CMDPInputError

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]


@nb.njit(cache=True)
def _pair_spread(
    p: int,
    S: int,
    indptr: np.ndarray,
    indices: np.ndarray,
    lower: np.ndarray,
    room: np.ndarray,
    lower0: np.ndarray,
    room0: np.ndarray,
    spare: np.ndarray,
    rank: np.ndarray,
    order: np.ndarray,
    kbuf: np.ndarray,
    ebuf: np.ndarray,
    weight: float,
    out: np.ndarray,
) -> float:
    """Add ``weight`` times pair ``p``'s greedy-fill distribution to ``out (S,)``: every state at its
    lower bound, then the spare mass along the ranks (``order[k]`` the state of rank ``k``), each up
    to its room; the same fill, in the same order, as ``cmdp_rl.kernels.sparse_fill.pair_fill``.

    Returns the mass every state receives from the pair's shared lower bound ``lower0`` (the
    uniform row of an unvisited pair on the plug-in kernel), which the caller adds to all states
    once per step instead of once per pair (already subtracted here from the listed entries)."""
    start, end = indptr[p], indptr[p + 1]
    m = end - start
    for t in range(m):
        k = start + t
        out[indices[k]] += weight * lower[k]
        r = rank[indices[k]]
        i = t
        while i > 0 and kbuf[i - 1] > r:  # insertion sort of the listed entries by rank
            kbuf[i] = kbuf[i - 1]
            ebuf[i] = ebuf[i - 1]
            i -= 1
        kbuf[i] = r
        ebuf[i] = k
    lo0 = lower0[p]
    uniform: float = weight * lo0
    if lo0 != 0.0:
        for k in range(start, end):
            out[indices[k]] -= uniform
    left = spare[p]
    r0 = room0[p]
    prev = 0
    for t in range(m + 1):
        stop = kbuf[t] if t < m else S  # the run of unlisted ranks prev .. stop - 1, then the listed entry
        j = prev
        while j < stop and left > 0.0 and r0 > 0.0:
            give = r0 if r0 <= left else left
            out[order[j]] += weight * give
            left -= give
            j += 1
        if left <= 0.0 or t == m:
            break
        k = ebuf[t]
        give = room[k] if room[k] <= left else left
        out[indices[k]] += weight * give
        left -= give
        prev = stop + 1
    return uniform


@nb.njit(cache=True)
def _column_forward(
    S: int,
    indptr: np.ndarray,
    indices: np.ndarray,
    lower: np.ndarray,
    room: np.ndarray,
    lower0: np.ndarray,
    room0: np.ndarray,
    spare: np.ndarray,
    actions: np.ndarray,
    V: np.ndarray,
    tables: np.ndarray,
    s0: int,
) -> tuple[np.ndarray, np.ndarray]:
    """State distribution ``(H, S)`` and ``(N + 1,)`` totals of ``tables (S, A, N + 1)`` of the column
    ``(actions (H, S), V (H + 1, S))``: the policy under the kernel that fills each step's pairs
    along decreasing ``V_{h+1}``."""
    H = actions.shape[0]
    A = tables.shape[1]
    R = tables.shape[2]
    dist = np.zeros((H, S))
    totals = np.zeros(R)
    dist[0, s0] = 1.0
    rank, vs, prefix, kbuf, ebuf = sweep_scratch(indptr, S)
    order = np.empty(S, dtype=np.int64)
    for h in range(H):
        last = h == H - 1
        if not last:
            fill_order(V[h + 1], True, rank, vs, prefix)
            for j in range(S):
                order[rank[j]] = j
        uniform = 0.0
        for s in range(S):
            d = dist[h, s]
            if d == 0.0:
                continue
            a = actions[h, s]
            for i in range(R):
                totals[i] += d * tables[s, a, i]
            if not last:
                uniform += _pair_spread(
                    s * A + a, S, indptr, indices, lower, room, lower0, room0, spare, rank, order, kbuf, ebuf, d,
                    dist[h + 1],
                )  # fmt: skip
        if uniform != 0.0:
            for j in range(S):
                dist[h + 1, j] += uniform
    return dist, totals


class BoxPool(PoolBase):
    """The extended LP's columns over a ``SparseBox`` (module docstring).

    Args:
        box: the confidence set.
        r: ``(S, A)`` rewards.
        c: ``(N, S, A)`` costs.
        s0: the start state.
        H: the horizon.
        actions: ``(S, A)`` mask of the available actions (``None``: all); no column plays another.
    """

    exact_max_costs = False

    def __init__(self, box: SparseBox, r: Array, c: Array, s0: int, H: int, actions: Mask | None = None) -> None:
        self.box = box
        self._arrays = box._arrays()
        self._init_pool(r, c, s0, H, actions)
        self.values_of: list[Array] = []  # each column's V (H + 1, S): its fill orders

    def price(self, weight_r: float, lam: Array) -> tuple[float, tuple[IntArray, Array]]:
        """Extended value iteration on ``weight_r * r - lam . c``: ``D0`` and the column ``(actions, V)``."""
        V, actions = robust_opt(self.S, *self._arrays, self._reward(weight_r, lam), self.H, True, True)
        self.sweeps += 1
        best = float(V[0, self.s0])
        self._cut(weight_r, lam, best)
        return best, (actions, V)

    def add(self, column: tuple[NDArray[np.integer], Array]) -> tuple[int, bool]:
        """Add the column ``(actions (H, S), V (H + 1, S))`` unless held: ``(index, new)``."""
        actions, V = column
        stored = np.ascontiguousarray(actions, dtype=self.dtype)
        values = np.ascontiguousarray(V, dtype=np.float64)
        h = hashlib.blake2b(stored.data, digest_size=16)
        h.update(values.data)
        key = h.digest()
        for idx in self._keys.get(key, ()):
            if np.array_equal(self.actions[idx], stored) and np.array_equal(self.values_of[idx], values):
                return idx, False
        _, totals = _column_forward(self.S, *self._arrays, stored, values, self.tables, self.s0)
        self.evaluations += 1
        self._keys.setdefault(key, []).append(len(self.actions))
        self.actions.append(stored)
        self.values_of.append(values)
        self.stats.append(ColumnStat(float(totals[0]), totals[1:].copy()))
        return len(self.actions) - 1, True

    def distribution(self, index: int) -> Array:
        """``(H, S)`` state distribution of column ``index`` under its own kernel."""
        dist, _ = _column_forward(
            self.S, *self._arrays, self.actions[index], self.values_of[index], self.tables, self.s0
        )
        out: Array = dist
        return out


def solve_sparse_elp(
    r: Array,
    c: Array,
    c_bar: Array,
    s0: int,
    H: int,
    box: SparseBox,
    *,
    gap_tol: float | None = None,
    warm_start: Sequence[tuple[NDArray[np.integer], Array]] = (),
    max_iter: int = 1000,
    actions: Mask | None = None,
) -> PlanResult:
    """The extended LP over ``box`` by column generation, with a certified gap.

    Args:
        r: ``(S, A)`` rewards (any sign: bonuses allowed).
        c: ``(N, S, A)`` costs (any sign).
        c_bar: ``(N,)`` thresholds.
        s0: the start state.
        H: the horizon.
        box: the confidence set (``SparseBox``).
        gap_tol: stop once the certified gap is at most this (default ``1e-9 * H``).
        warm_start: columns ``(actions (H, S), V (H + 1, S))`` to start from (a previous plan's
            ``info["warm_columns"]``): valid for any box, re-evaluated under this one.
        max_iter: cap on master iterations per phase.
        actions: ``(S, A)`` mask of the available actions (``None``: all).

    Returns:
        A [`PlanResult`][cmdp_rl.planning.result.PlanResult]: the optimistic ``value``, its ``costs``,
        the mixed ``policy (H, S, A)``, ``multipliers``, ``gap``; ``info["warm_columns"]`` the
        columns with positive weight. ``occupancy`` is the mixture's under the columns' own
        kernels. An infeasible problem has ``status="infeasible"`` and the plan of least worst
        excess, as [`solve`][cmdp_rl.planning.solve.solve].
    """
    r, c = np.asarray(r, dtype=np.float64), np.asarray(c, dtype=np.float64)
    c_bar = np.asarray(c_bar, dtype=np.float64)
    if not isinstance(box, SparseBox):
        raise CMDPInputError(f"box: must be a cmdp_rl.confidence.sparse_box.SparseBox, got {type(box).__name__}")
    if r.shape != (box.S, box.A):
        raise CMDPInputError(f"r: expected shape ({box.S}, {box.A}) for the box, got {r.shape}")
    if c.ndim != 3 or c.shape[1:] != (box.S, box.A) or c_bar.shape != (c.shape[0],):
        raise CMDPInputError(f"c, c_bar: expected (N, {box.S}, {box.A}) and (N,), got {c.shape} and {c_bar.shape}")
    if not 0 <= int(s0) < box.S or int(H) < 1:
        raise CMDPInputError(f"s0, H: need a state in [0, {box.S - 1}] and H >= 1, got {s0} and {H}")
    pool = BoxPool(box, r, c, int(s0), int(H), check_actions(actions, box.S, box.A))
    for column in warm_start:
        pool.add(column)
    out = run_colgen(pool, c_bar, check_gap_tol(gap_tol, H), max_iter)
    plan = plan_of(pool, out, c_bar)
    active = [j for j in np.flatnonzero(np.maximum(out.w, 0.0) > 0.0)]
    warm: list[tuple[Any, Any]] = [(pool.actions[j], pool.values_of[j]) for j in active]
    plan.info["warm_columns"] = warm
    return plan


__all__ = ["BoxPool", "solve_sparse_elp"]
