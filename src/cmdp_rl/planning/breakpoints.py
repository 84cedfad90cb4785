"""Breakpoints of a concave piecewise-linear curve known to a tolerance: which to keep.

The threshold frontier ([`frontier`][cmdp_rl.planning.frontier.frontier]) finds points of the
exact curve ``V*(x)`` and, per segment between two of them, a certificate ``g`` with
``V*(x) <= chord(x) + g`` there. A vertex whose slope change is too small to show at the
tolerance asked for is merged into the chord of its neighbours, so that the breakpoints
reported are one answer for a model and a tolerance.
"""

from __future__ import annotations

import heapq
import math

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.plumbing.validation import CMDPInputError, as_float, as_float_array, check_shape

Array = NDArray[np.float64]


def merge_breakpoints(points: Array, certificates: Array, tol: float) -> tuple[Array, Array]:
    """Merge the breakpoints of a certified piecewise-linear concave curve that stay within ``tol``.

    ``points`` ``(B, 2)`` rows ``(x, V)`` sorted by ``x`` and ``certificates`` ``(B - 1,)``
    describe a curve with ``V*(x) <= chord(x) + certificates[j]`` on segment ``j``. A breakpoint
    ``p`` between neighbours ``a`` and ``b`` is merged (dropped) when the chord from ``a`` to ``b``
    is still certified within ``tol``: ``h_p + max(g_a, g_b) <= tol``, ``h_p`` its height above
    that chord and ``g_a``, ``g_b`` the certificates of its two segments, which becomes the merged
    segment's certificate (the curve lies below the chord plus ``h_p`` there). The cheapest
    breakpoint goes first, then its neighbours' costs are recomputed, until none is within
    ``tol``. The ends are kept; the inputs are not modified. Returns the kept ``(points,
    certificates)``: every kept segment still certified within ``max(tol, its certificate
    before)``.

    Raises:
        CMDPInputError: ``points`` not ``(B, 2)`` with ``B >= 2`` and increasing ``x``,
            ``certificates`` not ``(B - 1,)`` and ``>= 0``, or ``tol`` negative (all finite).
    """
    pts = as_float_array("points", points, 2)
    if pts.shape[0] < 2 or pts.shape[1] != 2:
        raise CMDPInputError(f"points: expected shape (B, 2) with B >= 2 rows (x, V), got {pts.shape}")
    if np.any(np.diff(pts[:, 0]) <= 0):
        raise CMDPInputError("points: the x column must be strictly increasing")
    g = as_float_array("certificates", certificates, 1)
    check_shape("certificates", g, (pts.shape[0] - 1,))
    if np.any(g < 0):
        raise CMDPInputError("certificates: must be >= 0 (bounds V* - chord on each segment)")
    tol = as_float("tol", tol)
    if tol < 0:
        raise CMDPInputError(f"tol: must be >= 0, got {tol!r}")
    x, v = pts[:, 0], pts[:, 1]
    n = len(x)
    prev, nxt = list(range(-1, n - 1)), list(range(1, n + 1))
    cert = [*g.tolist(), math.inf]  # cert[i]: the segment from i to nxt[i]
    alive = [True] * n

    def cost(i: int) -> float:
        a, b = prev[i], nxt[i]
        h = v[i] - (v[a] + (x[i] - x[a]) / (x[b] - x[a]) * (v[b] - v[a]))
        return float(max(h, 0.0) + max(cert[a], cert[i]))

    heap = [(cost(i), i) for i in range(1, n - 1)]
    heapq.heapify(heap)
    while heap:
        k, i = heapq.heappop(heap)
        if k > tol:
            break
        if not alive[i] or k != cost(i):  # stale: a neighbour was merged since
            continue
        a, b = prev[i], nxt[i]
        cert[a], alive[i], nxt[a], prev[b] = k, False, b, a
        for j in (a, b):
            if 0 < j < n - 1:
                heapq.heappush(heap, (cost(j), j))
    keep = np.flatnonzero(alive)
    return pts[keep], np.array([cert[i] for i in keep[:-1]])


def count_vertices(points: list[tuple[float, float]], tol: float) -> int:
    """How many of ``points`` (sorted, on the concave envelope) lie more than ``tol`` above the
    chord of their neighbours, the two ends included: breakpoints the enumeration will find."""
    xy = as_float_array("points", points, 2) if len(points) else np.empty((0, 2))
    if len(xy) < 3:
        return len(xy)
    x, v = xy[:, 0], xy[:, 1]
    h = v[1:-1] - (v[:-2] + (x[1:-1] - x[:-2]) / (x[2:] - x[:-2]) * (v[2:] - v[:-2]))
    return 2 + int(np.count_nonzero(h > tol))


__all__ = ["count_vertices", "merge_breakpoints"]
