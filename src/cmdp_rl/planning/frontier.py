"""The threshold frontier: the exact optimal value as a function of one constraint's threshold.

``V*(x) = max_pi V(pi)`` s.t. ``C_i(pi) <= x`` and ``C_j(pi) <= c_bar_j`` for ``j != i`` is
concave and non-decreasing in ``x`` (a parametric LP). It is computed on
``[lo, hi]``: ``lo`` the smallest cost of constraint ``i`` among policies meeting the other
thresholds (below it the problem is infeasible), ``hi`` constraint ``i``'s cost at the
optimum without constraint ``i`` (the smallest among tied optima; above it the constraint is
slack and ``V*`` is flat).

* ``N = 1``: ``V*`` is the upper concave envelope of the points ``(C(pi), V(pi))`` of the
  deterministic Markov policies, piecewise linear. Every pricing sweep with a multiplier
  ``lambda`` returns a point where a line of slope ``lambda`` touches the envelope and, by
  weak duality, a line above it. Each grid point is bracketed by the points found and certified
  when the chord below and the best line above meet within ``gap_tol``; the multipliers are
  chosen by regula falsi on the slope (``_tangents``), 6 to 8 sweeps per point on
  Garnet models of 2,000 to 10,000 states. The breakpoints are then found by bisecting the
  envelope from its two ends (Eisner and Severance's method, ``_envelope``), to ``gap_tol``: a
  segment is split only at a point more than ``gap_tol`` above its chord, and breakpoints whose
  removal keeps the curve certified within ``gap_tol`` are merged
  ([`merge_breakpoints`][cmdp_rl.planning.breakpoints.merge_breakpoints]). Neither step looks at
  the grid, so the breakpoints depend on the model and ``gap_tol``, not on ``points``. Large
  models have many (measured: 13,653 at S = 2,000, A = 4, H = 50), so by default only within a
  budget of ``BREAKPOINT_SWEEPS`` sweeps.
* ``N > 1``: every grid point is one column-generation solve ([`exact`][cmdp_rl.planning.solve]) sharing one
  column pool, so each point starts from the columns of all the points before it.
"""

from __future__ import annotations

import bisect
import collections
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.kernels.csr import lex_sweep
from cmdp_rl.model.actions import masked
from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.model.units import unit_model
from cmdp_rl.planning.breakpoints import count_vertices, merge_breakpoints
from cmdp_rl.planning.colgen import check_gap_tol, run_colgen
from cmdp_rl.planning.solve import ColumnPool
from cmdp_rl.plumbing.limits import check_allocation
from cmdp_rl.plumbing.validation import CMDPInputError, CMDPTypeError, as_index, check_positive_int

Array = NDArray[np.float64]


@dataclass(frozen=True)
class Frontier:
    """The optimal value against one constraint's threshold.

    Attributes:
        constraint: the constraint ``i`` whose threshold varies.
        c_bar: ``(K,)`` thresholds, increasing from ``lo`` to ``hi``.
        value: ``(K,)`` the optimal value at each threshold.
        gap: ``(K,)`` a certified bound on ``V*(x) - value`` at each threshold.
        breakpoints: for ``N = 1``, the breakpoints of the piecewise-linear curve, exact to
            ``gap_tol`` (merged within it, the same for every ``points``), as a ``(B, 3)`` array
            of rows ``(c_bar, value, gap)``, ``gap`` the smaller certificate of the point's two
            segments; ``None`` for ``N > 1`` and when they were not enumerated (see
            [`frontier`][cmdp_rl.planning.frontier.frontier]).
        lo: the smallest feasible threshold.
        hi: the threshold above which constraint ``i`` is slack.
        sweeps: DP sweeps used for the whole curve.
        gap_tol: the certified gap each grid point was asked for.
        status: (property) ``"optimal"`` when every grid point's ``gap`` is within ``gap_tol``,
            else ``"uncertified"`` (the one vocabulary of every result type,
            [`RESULT_STATUSES`][cmdp_rl.plumbing.names.RESULT_STATUSES]).
    """

    constraint: int
    c_bar: Array
    value: Array
    gap: Array
    breakpoints: Array | None
    lo: float
    hi: float
    sweeps: int
    gap_tol: float = math.nan

    def __repr__(self) -> str:
        """A short summary: the sizes and ranges, not every grid point and breakpoint."""

        def span(x: Array) -> str:
            return f"[{float(x[0]):.6g} .. {float(x[-1]):.6g}]" if x.size else "[]"

        bps = "None" if self.breakpoints is None else str(len(self.breakpoints))
        gap = f"{float(np.max(self.gap)):.3g}" if self.gap.size else "nan"
        return (
            f"Frontier(constraint={self.constraint}, status={self.status!r}, points={self.c_bar.size}, "
            f"c_bar={span(self.c_bar)}, value={span(self.value)}, max_gap={gap}, breakpoints={bps}, "
            f"lo={self.lo:.6g}, hi={self.hi:.6g}, sweeps={self.sweeps})"
        )

    @property
    def status(self) -> str:
        """``"optimal"`` when every grid point is certified within ``gap_tol``, else ``"uncertified"``."""
        return "optimal" if bool(np.all(self.gap <= self.gap_tol)) else "uncertified"

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


class _Pricer:
    """Pricing sweeps of a one-constraint model that return the touching point itself:
    ``price(lambda) -> (D0, C, V, new)`` with ``D0 = max_pi V - lambda C``, ``(C, V)`` of the
    greedy policy (a forward pass of [`ColumnPool`][cmdp_rl.planning.solve.ColumnPool], about a third of a sweep) and
    whether that policy is new to the pool."""

    def __init__(self, pool: ColumnPool) -> None:
        self.pool = pool

    def price(self, lam: float) -> tuple[float, float, float, bool]:
        best, acts = self.pool.price(1.0, np.array([lam]))
        idx, new = self.pool.add(acts)
        st = self.pool.stats[idx]
        return best, float(st.costs[0]), st.value, new


#: pricing sweeps the default enumeration of the breakpoints may spend (``breakpoints=None``): a
#: curve of ``B`` breakpoints takes ``2 B - 3``, so up to about 200 breakpoints are enumerated
BREAKPOINT_SWEEPS = 400


def _envelope(
    pricer: _Pricer, lo: tuple[float, float], hi: tuple[float, float], tol: float, budget: int | None
) -> tuple[Array, Array, bool]:
    """The upper concave envelope of the model between its ends ``lo`` and ``hi`` (``N = 1``),
    by Eisner and Severance's bisection.

    Each segment between two envelope points is priced at its chord's slope: either the touching
    point lies more than ``tol`` above the chord and splits it, or the sweep's value proves
    ``V*(x) <= chord(x) + excess`` on it, ``excess <= tol``. The bisection starts from the two
    ends only, never from points found for the grid, so the points it finds depend on the model
    and ``tol`` alone, not on the grid. At most ``budget`` pricing sweeps are spent (``None``: no
    limit); none is started once the open segments, a sweep each at least, outnumber what is
    left (they are split breadth first, so a curve of many pieces is given up early; the points
    found do not depend on the order).

    Returns ``(points, certificates, complete)``: the envelope points found sorted by cost,
    ``(B, 2)`` rows ``(x, V)``, the ``(B - 1,)`` certificate ``excess`` of each segment between
    them (``inf`` for a segment left unpriced), and whether every segment was certified.
    """
    certified: dict[float, float] = {}  # left end -> certificate of the segment
    ends: dict[float, float] = dict([lo, hi])
    stack = collections.deque([(lo, hi)])  # breadth first: the open segments show early how many are left
    spent = 0
    while stack:
        if budget is not None and spent + len(stack) > budget:
            break
        (x1, v1), (x2, v2) = stack.popleft()
        spent += 1
        lam = max((v2 - v1) / (x2 - x1), 0.0)
        best, x3, v3, _ = pricer.price(lam)
        excess = best - (v1 - lam * x1)  # V*(x) <= chord(x) + excess on [x1, x2]
        if excess > tol and x1 < x3 < x2 and x3 not in ends:
            ends[x3] = v3
            stack.append(((x3, v3), (x2, v2)))
            stack.append(((x1, v1), (x3, v3)))
            continue
        certified[x1] = max(excess, 0.0)
    xs = np.array(sorted(ends))
    seg = np.array([certified.get(x, math.inf) for x in xs[:-1]])
    return np.column_stack([xs, [ends[x] for x in xs]]), seg, bool(np.all(np.isfinite(seg)))


def _tangents(
    pricer: _Pricer, lo: tuple[float, float], hi: tuple[float, float], x: Array, tol: float
) -> tuple[Array, Array, list[tuple[float, float]]]:
    """``(value, gap, points)``: the envelope at each grid point ``x`` (``N = 1``), each certified
    within ``tol``, and the envelope points found on the way, sorted.

    Every pricing sweep at a multiplier ``lambda`` gives a point of the envelope (the greedy
    policy's ``(C, V)``, where a line of slope ``lambda`` touches it) and a cut
    ``V*(y) <= D0(lambda) + lambda y`` valid for every ``y``. A grid point between two known
    points ``a < x < b`` is bounded below by their chord and above by the best cut; while the two
    differ by more than ``tol``, the next multiplier interpolates the slopes of the points around
    it (regula falsi on ``x(lambda) = x`` with the Illinois rule, which lands next to ``x`` on a
    curve of many small pieces), or is the chord's slope (Eisner and Severance's step, which
    either splits the bracket or certifies it) after a step that did not narrow it. Each grid
    point's first multiplier is extrapolated linearly from the two before it (the grid is even).
    At ``lo`` the value is exact by the lexicographic DP; the unconstrained optimum is the cut at
    ``lambda = 0``.
    """
    pts: dict[float, tuple[float, float]] = {lo[0]: (lo[1], math.inf), hi[0]: (hi[1], 0.0)}
    xs = [lo[0], hi[0]]  # sorted keys of pts
    cut_d0, cut_lam = [hi[1]], [0.0]
    value, gap = np.empty(x.size), np.empty(x.size)
    solved: list[float] = []  # the multiplier of the best cut at each certified grid point
    for k, xk in enumerate(x):
        chord_next = False
        scale_a = scale_b = 1.0  # the Illinois rule: halve the weight of an end kept twice in a row
        last_side = 0
        guess = 2.0 * solved[-1] - solved[-2] if len(solved) >= 2 else math.nan
        while True:
            j = bisect.bisect_right(xs, xk)
            xa = xs[j - 1]
            va, la = pts[xa]
            if xa == xk:  # on a found point: its own value
                lower = va
                xb, (vb, lb) = xa, (va, la)
            else:
                xb = xs[j]
                vb, lb = pts[xb]
                lower = va + (xk - xa) / (xb - xa) * (vb - va)
            upper = min(d + lam * xk for d, lam in zip(cut_d0, cut_lam, strict=True))
            if xk == lo[0]:
                upper = lower  # V*(lo) is the lexicographic DP's value
            if upper - lower <= tol or xa == xb:
                value[k], gap[k] = lower, max(upper - lower, 0.0)
                solved.append(_best_lam(cut_d0, cut_lam, xk))
                break
            chord = max((vb - va) / (xb - xa), 0.0)
            if lb < guess < la:  # first, the slope extrapolated from the previous grid points
                lam, guess = guess, math.nan
            elif chord_next or not math.isfinite(la):
                lam = chord
            else:  # regula falsi on x(lambda) = xk: x(la) = xa < xk < xb = x(lb)
                fa, fb = (xa - xk) * scale_a, (xb - xk) * scale_b
                lam = (la * fb - lb * fa) / (fb - fa)
            best, x3, v3, new = pricer.price(lam)
            cut_d0.append(best)
            cut_lam.append(lam)
            if new and xa < x3 < xb:
                pts[x3] = (v3, lam)
                bisect.insort(xs, x3)
                chord_next = False
                side = -1 if x3 < xk else 1  # which end the new point replaces
                if side == last_side:
                    scale_a, scale_b = (scale_a, scale_b / 2) if side < 0 else (scale_a / 2, scale_b)
                else:
                    scale_a = scale_b = 1.0
                last_side = side
            elif lam == chord:  # nothing above the chord: the cut certifies the bracket
                excess = best - (va - lam * xa)
                value[k], gap[k] = lower, max(excess, 0.0)
                solved.append(lam)
                break
            else:
                chord_next = True
    return value, gap, [(xv, pts[xv][0]) for xv in xs]


def _best_lam(cut_d0: list[float], cut_lam: list[float], x: float) -> float:
    """The multiplier of the lowest cut ``D0 + lambda x`` at ``x``."""
    return cut_lam[int(np.argmin(np.asarray(cut_d0) + np.asarray(cut_lam) * x))]


def _single(cmdp: CMDP, points: int, tol: float, breakpoints: bool | None) -> Frontier:
    """``N = 1``: the envelope between the least-cost and the unconstrained optimum (lexicographic DP).

    The grid points are certified by ``_tangents``. The breakpoints are then enumerated from the
    two ends (``_envelope``) within ``BREAKPOINT_SWEEPS`` pricing sweeps (``breakpoints=None``;
    skipped at once when the points the grid found already hold more vertices than that
    enumerates), without limit (``True``) or not at all (``False``), and merged within ``tol``
    ([`merge_breakpoints`][cmdp_rl.planning.breakpoints.merge_breakpoints]);
    ``Frontier.breakpoints`` is set only when the enumeration completed.
    """
    H = cmdp.horizon("frontier")
    pool = ColumnPool(cmdp.K, cmdp.r, cmdp.c, cmdp.s0, H, cmdp.actions)
    c0 = np.ascontiguousarray(cmdp.c[0])
    ends = []
    ties = 1e-12 * max(1.0, float(H))
    for first, second in ((-c0, pool.r), (pool.r, -c0)):  # least cost (then most value); optimum (then least cost)
        first = np.ascontiguousarray(masked(first, cmdp.actions))  # never an unavailable action
        _, _, acts = lex_sweep(pool.indptr, pool.indices, pool.data, first, second, H, ties)
        pool.sweeps += 1
        st = pool.stats[pool.add(acts)[0]]
        ends.append((float(st.costs[0]), st.value))
    (lo, v_lo), (hi, v_hi) = ends
    if hi <= lo:  # the optimum costs the least: the curve is one point
        bp = np.array([[lo, v_lo, 0.0]])
        return Frontier(0, np.array([lo]), np.array([v_lo]), np.zeros(1), bp, lo, lo, pool.sweeps, tol)
    x = np.linspace(lo, hi, points)
    pricer = _Pricer(pool)
    value, gap, found = _tangents(pricer, (lo, v_lo), (hi, v_hi), x, tol)
    budget = {None: BREAKPOINT_SWEEPS, True: None, False: 0}[breakpoints]
    if budget is not None and 2 * count_vertices(found, tol) - 3 > budget:
        return Frontier(0, x, value, gap, None, lo, hi, pool.sweeps, tol)
    env, seg, complete = _envelope(pricer, (lo, v_lo), (hi, v_hi), tol, budget)
    if not complete:
        return Frontier(0, x, value, gap, None, lo, hi, pool.sweeps, tol)
    env, seg = merge_breakpoints(env, seg, tol)
    # a breakpoint's gap: the smaller certificate of its two segments
    bp_gap = np.minimum(np.append(seg, math.inf), np.insert(seg, 0, math.inf))
    return Frontier(0, x, value, gap, np.column_stack([env, bp_gap]), lo, hi, pool.sweeps, tol)


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
    H = cmdp.horizon("frontier")
    others = [j for j in range(cmdp.N) if j != i]
    c_o, cb_o = cmdp.c[others], cmdp.c_bar[others]
    # lo: minimize C_i subject to the other thresholds
    aux = ColumnPool(cmdp.K, -cmdp.c[i], c_o, cmdp.s0, H, cmdp.actions)
    neg_lo, _ = _bound_of(aux, cb_o, tol, "constraint")
    lo = -neg_lo
    # hi: the optimum without constraint i, then the least C_i among policies reaching it
    free = ColumnPool(cmdp.K, cmdp.r, c_o, cmdp.s0, H, cmdp.actions)
    v_free, g_free = _bound_of(free, cb_o, tol, "constraint")
    tie = ColumnPool(cmdp.K, -cmdp.c[i], np.concatenate([c_o, -cmdp.r[None]]), cmdp.s0, H, cmdp.actions)
    neg_hi, _ = _bound_of(tie, np.append(cb_o, -(v_free - g_free - tol)), tol, "constraint")
    hi = max(-neg_hi, lo)
    pool = ColumnPool(cmdp.K, cmdp.r, cmdp.c, cmdp.s0, H, cmdp.actions)
    x = np.linspace(lo, hi, points) if hi > lo else np.array([lo])
    value, gap = _grid(pool, x, cmdp.c_bar, i, tol)
    sweeps = aux.sweeps + free.sweeps + tie.sweeps + pool.sweeps
    return Frontier(i, x, value, gap, None, lo, hi, sweeps, tol)


def frontier(
    cmdp: CMDP,
    constraint: int = 0,
    points: int = 50,
    *,
    gap_tol: float | None = None,
    breakpoints: bool | None = None,
) -> Frontier:
    """The exact optimal value as a function of constraint ``constraint``'s threshold.

    The breakpoints are the vertices of the piecewise-linear curve found by bisection from
    ``lo`` and ``hi``, to ``gap_tol``: each is a point of the exact curve (its value exact up to
    rounding), the curve through them lies below ``V*`` and within each segment's certificate
    (``<= gap_tol``) of it, and a vertex whose height above the chord of its neighbours, plus
    the larger certificate of its two segments, is at most ``gap_tol`` is merged into that chord
    (a slope change too small to show at ``gap_tol``). They depend on the model and ``gap_tol``
    only, not on ``points``.

    Args:
        cmdp: the model (dense or sparse), with ``N >= 1`` constraints.
        constraint: the index ``i`` of the constraint whose threshold varies (the others stay
            at ``cmdp.c_bar``).
        points: grid points from ``lo`` to ``hi`` (``>= 2``).
        gap_tol: certified gap per point in the model's units (default ``1e-9 * H * w_r``, ``w_r``
            the width of the rewards' scale interval: [`Units`][cmdp_rl.model.units.Units]; the
            curve is computed on the model's unit image and reported in its units).
        breakpoints: ``N = 1`` only: enumerate the breakpoints always (``True``), never
            (``False``), or when it takes at most ``BREAKPOINT_SWEEPS`` (400) pricing sweeps
            (``None``, default: a curve of ``B`` breakpoints takes ``2 B - 3``; a model of
            thousands of states can have thousands).

    Returns:
        A [`Frontier`][cmdp_rl.planning.frontier.Frontier]: ``c_bar``, ``value``, ``gap`` per grid point, and for
        ``N = 1`` the exact breakpoints (``None`` when not enumerated).

    Raises:
        CMDPInputError: no constraints, a bad ``constraint`` or ``points``, or other
            thresholds that cannot be met together.
    """
    if not isinstance(cmdp, CMDP):
        raise CMDPTypeError(f"cmdp: must be a cmdp_rl.CMDP, got {type(cmdp).__name__}")
    check_constraints_to_vary(cmdp)
    i = as_index("constraint", constraint, cmdp.N)
    points = check_positive_int("points", points, 2)
    check_allocation("points", 8.0 * points * (cmdp.N + 4), f"a frontier of {points:,} grid points")
    image, units = unit_model(cmdp)
    user_tol = check_gap_tol(gap_tol, cmdp.horizon("frontier") * units.r_width)
    tol = units.unit_gap(user_tol)
    if breakpoints is not None and not isinstance(breakpoints, bool):
        raise CMDPInputError(f"breakpoints: must be True, False or None, got {breakpoints!r}")
    fr = _single(image, points, tol, breakpoints) if cmdp.N == 1 else _multi(image, i, points, tol)
    if units.identity:
        return fr
    bps = fr.breakpoints
    if bps is not None:
        bps = np.column_stack([units.costs(bps[:, 0], i), units.value(bps[:, 1]), units.gap(bps[:, 2])])
    x = units.costs(fr.c_bar, i)
    lo, hi = float(units.costs(fr.lo, i)), float(units.costs(fr.hi, i))
    return Frontier(i, x, units.value(fr.value), units.gap(fr.gap), bps, lo, hi, fr.sweeps, user_tol)


def write_frontier(fr: Frontier, folder: str, label: str = "") -> list[str]:
    """Write ``frontier.csv`` (columns ``c_bar, value, gap``; grid points and, for ``N = 1``,
    breakpoints), ``breakpoints.csv`` (``N = 1``) and ``frontier.png`` into ``folder``
    (atomically, each file complete or absent). Returns the paths written."""
    import csv
    import io
    import os

    from cmdp_rl.plumbing.atomic import atomic_path

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


def check_constraints_to_vary(cmdp: CMDP, name: str = "cmdp") -> None:
    """A frontier varies a threshold: the model needs a constraint (``N >= 1``). ``name`` is how the
    caller names the model in the message (the CLI: ``model PATH``)."""
    if cmdp.N == 0:
        raise CMDPInputError(f"{name}: has no constraints (N = 0): no threshold to vary")


__all__ = ["BREAKPOINT_SWEEPS", "Frontier", "check_constraints_to_vary", "frontier", "write_frontier"]
