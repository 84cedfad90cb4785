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
  the whole segment. Grid points are read off the envelope, each with that certificate, and
  only the segments holding a grid point need refining. Large models have many breakpoints
  (measured: 13,653 at S = 2,000, A = 4, H = 50), so by default the others are enumerated
  only within a budget of sweeps.
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
    pool: ColumnPool,
    left: tuple[float, float],
    right: tuple[float, float],
    tol: float,
    grid: Array,
    budget: int | None,
) -> tuple[Array, Array, bool]:
    """The upper concave envelope of the pool's model between two of its points (``N = 1``).

    Segments holding a grid point (ends included) are refined first, until each is certified
    within ``tol``: this is all the grid needs. The other segments are refined afterwards
    while at most ``budget`` further pricing sweeps can still suffice (``None``: no limit;
    it stops as soon as the open segments, a sweep each at least, outnumber what is left). Bisection
    splits a segment the same way whatever the order, so the grid's segments are a subset of
    the full enumeration's and no sweep is wasted when it goes on to every breakpoint.

    Returns ``(points, certs, complete)``: the envelope points found as a ``(B, 3)`` array of
    rows ``(x, V, gap)``, the ``(B - 1,)`` certificates of the segments between consecutive
    points (``V*(x) <= chord(x) + cert`` on the segment; ``inf`` for a segment left unpriced),
    and whether every segment was certified (then the points are the exact breakpoints). A
    point's ``gap`` is the smaller certificate of its two segments.
    """
    certified: dict[float, float] = {}  # left end -> certificate of the segment
    ends: dict[float, float] = {left[0]: left[1], right[0]: right[1]}
    urgent = [(left, right)]
    later: list[tuple[tuple[float, float], tuple[float, float]]] = []
    spent_later = 0
    while urgent or later:
        if urgent:
            (x1, v1), (x2, v2) = urgent.pop()
        else:
            # each later segment costs a sweep at least: do not start what cannot finish
            if budget is not None and spent_later + len(later) > budget:
                break
            (x1, v1), (x2, v2) = later.pop()
            spent_later += 1
        lam = max((v2 - v1) / (x2 - x1), 0.0)
        best, acts = pool.price(1.0, np.array([lam]))
        excess = best - (v1 - lam * x1)  # V*(x) <= chord(x) + excess on [x1, x2]
        if excess > tol:
            idx, new = pool.add(acts)
            st = pool.stats[idx]
            x3, v3 = float(st.costs[0]), st.value
            if new and x1 < x3 < x2:
                ends[x3] = v3
                for part in (((x3, v3), (x2, v2)), ((x1, v1), (x3, v3))):
                    holds = bool(np.any((grid >= part[0][0]) & (grid <= part[1][0])))
                    (urgent if holds else later).append(part)
                continue
        certified[x1] = max(excess, 0.0)
    xs = np.array(sorted(ends))
    seg = np.array([certified.get(x, math.inf) for x in xs[:-1]])
    gaps = np.minimum(np.append(seg, math.inf), np.insert(seg, 0, math.inf))
    complete = bool(np.all(np.isfinite(seg)))
    return np.column_stack([xs, [ends[x] for x in xs], gaps]), seg, complete


def _single(cmdp: CMDP, points: int, tol: float, breakpoints: bool | None) -> Frontier:
    """``N = 1``: the envelope between the least-cost and the unconstrained optimum (lexicographic DP).

    The grid points are read off the envelope's segments that hold them, each certified by
    bisection (:func:`_envelope`). The remaining breakpoints are enumerated too within
    ``max(200, 4 * points)`` further pricing sweeps (``breakpoints=None``), without limit
    (``True``) or not at all (``False``); ``Frontier.breakpoints`` is set only when the
    enumeration completed.
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
    x = np.linspace(lo, hi, points)
    budget = {None: max(200, 4 * points), True: None, False: 0}[breakpoints]
    env, seg, complete = _envelope(pool, (lo, v_lo), (hi, v_hi), tol, x, budget)
    k = np.clip(np.searchsorted(env[:, 0], x, side="right") - 1, 0, len(env) - 2)
    x1, x2 = env[k, 0], env[k + 1, 0]
    value = env[k, 1] + (x - x1) / (x2 - x1) * (env[k + 1, 1] - env[k, 1])
    gap = seg[k]  # a grid point on an envelope point: the better of that point's two segments
    gap = np.where(x == x1, env[k, 2], np.where(x == x2, env[k + 1, 2], gap))
    return Frontier(0, x, value, gap, env if complete else None, lo, hi, pool.sweeps)


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
        breakpoints: ``N = 1`` only: besides the envelope segments that hold grid points
            (always refined), enumerate the other breakpoints always (``True``), never
            (``False``), or when it takes at most ``max(200, 4 * points)`` further pricing
            sweeps (``None``, default: a model of thousands of states can have thousands of
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
