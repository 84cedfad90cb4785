"""The threshold frontier: the exact optimal value as a function of one constraint's threshold.

``V*(x) = max_pi V(pi)`` s.t. ``C_i(pi) <= x`` and ``C_j(pi) <= c_bar_j`` for ``j != i`` is
concave and non-decreasing in ``x`` (a parametric LP). It is computed on
``[lo, hi]``: ``lo`` the smallest cost of constraint ``i`` among policies meeting the other
thresholds (below it the problem is infeasible), ``hi`` constraint ``i``'s cost at the
optimum without constraint ``i`` (the smallest among tied optima; above it the constraint is
slack and ``V*`` is flat).

* ``N = 1``: ``V*`` is the upper concave envelope of the points ``(C(pi), V(pi))`` of the
  deterministic Markov policies, piecewise linear; its breakpoints are found exactly by
  bisecting the envelope (Eisner and Severance's method): between two envelope points the
  pricing sweep with multiplier ``lambda`` = the chord's slope either returns a point above
  the chord (a new breakpoint) or proves, by weak duality, ``V*(x) <= chord(x) + excess`` on
  the whole segment. Grid points are read off the envelope, each with that certificate. Large
  models have many breakpoints (measured: 13,653 at S = 2,000, A = 4, H = 50), so by default
  they are enumerated only within a budget of sweeps, and otherwise the grid points are solved
  as for ``N > 1``.
* ``N > 1``: every grid point is one column-generation solve (:mod:`.exact`) sharing one
  column pool, so each point starts from the columns of all the points before it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..model import CMDP
from ..sweeps import lex_sweep
from ..validation import CMDPInputError, as_index, check_positive_int
from .exact import ColumnPool, check_gap_tol, run_colgen

Array = NDArray[np.float64]


@dataclass(frozen=True)
class Frontier:
    """The optimal value against one constraint's threshold.

    Attributes:
        constraint: the constraint ``i`` whose threshold varies.
        c_bar: ``(K,)`` thresholds, increasing from ``lo`` to ``hi``.
        value: ``(K,)`` the optimal value at each threshold.
        gap: ``(K,)`` a certified bound on ``V*(x) - value`` at each threshold.
        breakpoints: for ``N = 1``, the exact breakpoints of the piecewise-linear curve as a
            ``(B, 3)`` array of rows ``(c_bar, value, gap)``; ``None`` for ``N > 1`` and when
            they were not enumerated (see :func:`frontier`).
        lo: the smallest feasible threshold.
        hi: the threshold above which constraint ``i`` is slack.
        sweeps: DP sweeps used for the whole curve.
    """

    constraint: int
    c_bar: Array
    value: Array
    gap: Array
    breakpoints: Array | None
    lo: float
    hi: float
    sweeps: int

    def rows(self) -> list[tuple[float, float, float]]:
        """``(c_bar, value, gap)`` per grid point and breakpoint, sorted by threshold (what
        ``frontier.csv`` holds)."""
        pts = np.column_stack([self.c_bar, self.value, self.gap])
        if self.breakpoints is not None:
            pts = np.vstack([pts, self.breakpoints])
        pts = pts[np.lexsort((pts[:, 1], pts[:, 0]))]
        keep = np.ones(len(pts), dtype=bool)
        keep[1:] = np.diff(pts[:, 0]) > 0
        return [(float(a), float(b), float(c)) for a, b, c in pts[keep]]


def _envelope(
    pool: ColumnPool, left: tuple[float, float], right: tuple[float, float], tol: float, budget: int | None
) -> tuple[Array, Array] | None:
    """The upper concave envelope of the pool's model between two of its points (``N = 1``).

    Returns the breakpoints ``(B, 3)``, rows ``(x, V, gap)``, and the ``(B - 1,)`` certificates
    of the segments between them (``V*(x) <= chord(x) + gap`` on the segment); a breakpoint's
    ``gap`` is the smaller one of its two segments. ``None`` when more than ``budget`` pricing
    sweeps would be needed (large models can have thousands of breakpoints)."""
    done: list[tuple[float, float, float, float]] = []  # segments (x1, v1, x2, excess) ...
    ends: dict[float, float] = {left[0]: left[1], right[0]: right[1]}
    stack = [(left, right)]
    spent = 0
    while stack:
        (x1, v1), (x2, v2) = stack.pop()
        if not x2 > x1:
            continue
        if budget is not None and spent >= budget:
            return None
        spent += 1
        lam = max((v2 - v1) / (x2 - x1), 0.0)
        best, acts = pool.price(1.0, np.array([lam]))
        excess = best - (v1 - lam * x1)  # V*(x) <= chord(x) + excess on [x1, x2]
        if excess > tol:
            idx, new = pool.add(acts)
            st = pool.stats[idx]
            x3, v3 = float(st.costs[0]), st.value
            if new and x1 < x3 < x2:
                ends[x3] = v3
                stack.append(((x3, v3), (x2, v2)))
                stack.append(((x1, v1), (x3, v3)))
                continue
        done.append((x1, v1, x2, max(excess, 0.0)))
    xs = np.array(sorted(ends))
    by_left = {x1: g for x1, _, _, g in done}
    seg = np.array([by_left[x] for x in xs[:-1]])
    gaps = np.minimum(np.append(seg, math.inf), np.insert(seg, 0, math.inf))
    return np.column_stack([xs, [ends[x] for x in xs], gaps]), seg


def _single(cmdp: CMDP, points: int, tol: float, breakpoints: bool | None) -> Frontier:
    """``N = 1``: the envelope between the least-cost and the unconstrained optimum (lexicographic DP).

    The exact breakpoints are enumerated within a budget of ``max(200, 4 * points)`` pricing
    sweeps (``breakpoints=None``), without one (``True``) or not at all (``False``); when
    they are not all found, the grid points are warm column-generation solves (as for
    ``N > 1``) on the same pool, which the enumeration has already filled with envelope columns.
    """
    pool = ColumnPool(cmdp.K, cmdp.r, cmdp.c, cmdp.s0, cmdp.H)
    c0 = np.ascontiguousarray(cmdp.c[0])
    ends = []
    ties = 1e-12 * max(1.0, float(cmdp.H))
    for first, second in ((-c0, pool.r), (pool.r, -c0)):  # least cost (then most value); optimum (then least cost)
        _, _, acts = lex_sweep(pool.indptr, pool.indices, pool.data, first, second, cmdp.H, ties)
        pool.sweeps += 1
        st = pool.stats[pool.add(acts)[0]]
        ends.append((float(st.costs[0]), st.value))
    (lo, v_lo), (hi, v_hi) = ends
    if hi <= lo:  # the optimum costs the least: the curve is one point
        bp = np.array([[lo, v_lo, 0.0]])
        return Frontier(0, np.array([lo]), np.array([v_lo]), np.zeros(1), bp, lo, lo, pool.sweeps)
    found = None
    if breakpoints is not False:
        budget = None if breakpoints else max(200, 4 * points)
        found = _envelope(pool, (lo, v_lo), (hi, v_hi), tol, budget)
    x = np.linspace(lo, hi, points)
    if found is None:
        value, gap = _grid(pool, x, cmdp.c_bar, 0, tol)
        return Frontier(0, x, value, gap, None, lo, hi, pool.sweeps)
    bp, seg = found
    k = np.clip(np.searchsorted(bp[:, 0], x, side="right") - 1, 0, len(bp) - 2)
    x1, x2 = bp[k, 0], bp[k + 1, 0]
    frac = (x - x1) / (x2 - x1)
    value = bp[k, 1] + frac * (bp[k + 1, 1] - bp[k, 1])
    return Frontier(0, x, value, seg[k], bp, lo, hi, pool.sweeps)


def _grid(pool: ColumnPool, x: Array, c_bar: Array, i: int, tol: float) -> tuple[Array, Array]:
    """``(value, gap)`` at each threshold ``x`` of constraint ``i`` by warm solves on one pool."""
    value, gap = np.empty(x.size), np.empty(x.size)
    cb = c_bar.copy()
    for k, xk in enumerate(x):
        cb[i] = xk
        value[k], gap[k] = _bound_of(pool, cb, tol, "constraint")
    return value, gap


def _bound_of(pool: ColumnPool, c_bar: Array, tol: float, what: str) -> tuple[float, float]:
    """``(value, gap)`` of one solve on ``pool`` (the master's mixed value, no policy built)."""
    out = run_colgen(pool, c_bar, tol)
    if out.status != "optimal":
        raise CMDPInputError(f"{what}: the other constraints' thresholds cannot be met together (infeasible)")
    w = np.maximum(out.w, 0.0)  # weights of the pool's first w.size columns (the master's)
    value = float(w @ pool.values()[: w.size]) / float(w.sum())
    return value, max(out.bound - value, 0.0)


def _multi(cmdp: CMDP, i: int, points: int, tol: float) -> Frontier:
    """``N > 1``: ``lo`` and ``hi`` by two auxiliary solves, then one warm solve per grid point."""
    others = [j for j in range(cmdp.N) if j != i]
    c_o, cb_o = cmdp.c[others], cmdp.c_bar[others]
    # lo: minimize C_i subject to the other thresholds
    aux = ColumnPool(cmdp.K, -cmdp.c[i], c_o, cmdp.s0, cmdp.H)
    neg_lo, _ = _bound_of(aux, cb_o, tol, "constraint")
    lo = -neg_lo
    # hi: the optimum without constraint i, then the least C_i among policies reaching it
    free = ColumnPool(cmdp.K, cmdp.r, c_o, cmdp.s0, cmdp.H)
    v_free, g_free = _bound_of(free, cb_o, tol, "constraint")
    tie = ColumnPool(cmdp.K, -cmdp.c[i], np.concatenate([c_o, -cmdp.r[None]]), cmdp.s0, cmdp.H)
    neg_hi, _ = _bound_of(tie, np.append(cb_o, -(v_free - g_free - tol)), tol, "constraint")
    hi = max(-neg_hi, lo)
    pool = ColumnPool(cmdp.K, cmdp.r, cmdp.c, cmdp.s0, cmdp.H)
    x = np.linspace(lo, hi, points) if hi > lo else np.array([lo])
    value, gap = _grid(pool, x, cmdp.c_bar, i, tol)
    sweeps = aux.sweeps + free.sweeps + tie.sweeps + pool.sweeps
    return Frontier(i, x, value, gap, None, lo, hi, sweeps)


def frontier(
    cmdp: CMDP,
    constraint: int = 0,
    points: int = 50,
    *,
    gap_tol: float | None = None,
    breakpoints: bool | None = None,
) -> Frontier:
    """The exact optimal value as a function of constraint ``constraint``'s threshold.

    Args:
        cmdp: the model (dense or sparse), with ``N >= 1`` constraints.
        constraint: the index ``i`` of the constraint whose threshold varies (the others stay
            at ``cmdp.c_bar``).
        points: grid points from ``lo`` to ``hi`` (``>= 2``).
        gap_tol: certified gap per point (default ``1e-9 * H``).
        breakpoints: ``N = 1`` only: enumerate the exact breakpoints always (``True``), never
            (``False``), or when it takes at most ``max(200, 4 * points)`` pricing sweeps
            (``None``, default: a model of thousands of states can have thousands of
            breakpoints, each one sweep or two).

    Returns:
        A :class:`Frontier`: ``c_bar``, ``value``, ``gap`` per grid point, and for ``N = 1``
        the exact breakpoints (``None`` when not enumerated).

    Raises:
        CMDPInputError: no constraints, a bad ``constraint`` or ``points``, or other
            thresholds that cannot be met together.
    """
    if not isinstance(cmdp, CMDP):
        raise TypeError(f"cmdp: must be a cmdp_rl.CMDP, got {type(cmdp).__name__}")
    if cmdp.N == 0:
        raise CMDPInputError("cmdp: has no constraints (N = 0): no threshold to vary")
    i = as_index("constraint", constraint, cmdp.N)
    points = check_positive_int("points", points, 2)
    tol = check_gap_tol(gap_tol, cmdp.H)
    if breakpoints is not None and not isinstance(breakpoints, bool):
        raise CMDPInputError(f"breakpoints: must be True, False or None, got {breakpoints!r}")
    if cmdp.N == 1:
        return _single(cmdp, points, tol, breakpoints)
    return _multi(cmdp, i, points, tol)


def write_frontier(fr: Frontier, folder: str, label: str = "") -> list[str]:
    """Write ``frontier.csv`` (columns ``c_bar, value, gap``; grid points and, for ``N = 1``,
    breakpoints), ``breakpoints.csv`` (``N = 1``) and ``frontier.png`` into ``folder``
    (atomically, each file complete or absent). Returns the paths written."""
    import csv
    import io
    import os

    from ..atomic import atomic_path

    os.makedirs(folder, exist_ok=True)
    written = []

    def table(name: str, rows: list[tuple[float, float, float]]) -> None:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["c_bar", "value", "gap"])
        w.writerows([(repr(a), repr(b), repr(c)) for a, b, c in rows])
        path = os.path.join(folder, name)
        with atomic_path(path) as tmp:
            tmp.write_text(buf.getvalue())
        written.append(path)

    table("frontier.csv", fr.rows())
    if fr.breakpoints is not None:
        table("breakpoints.csv", [(float(a), float(b), float(c)) for a, b, c in fr.breakpoints])
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    ax.plot(fr.c_bar, fr.value, "-", color="C0", label="optimal value")
    if fr.breakpoints is not None:
        ax.plot(fr.breakpoints[:, 0], fr.breakpoints[:, 1], "o", color="C1", ms=4, label="breakpoints")
    ax.set_xlabel(f"threshold of constraint {fr.constraint}")
    ax.set_ylabel("optimal value V*")
    ax.set_title(f"Threshold frontier{(' of ' + label) if label else ''}", fontsize=10)
    ax.axvline(fr.lo, color="0.6", lw=0.8, ls=":")
    ax.axvline(fr.hi, color="0.6", lw=0.8, ls=":")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    path = os.path.join(folder, "frontier.png")
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)
    written.append(path)
    return written


__all__ = ["Frontier", "frontier", "write_frontier"]
