"""Confidence sets from sparse transition counts, and robust sweeps over them.

Counts on the sparse path are a ``(S*A, S)`` CSR matrix whose row ``s*A + a`` holds
``n(s, a, .)`` (the flat pair index of the sparse kernels). Memory stays ``O(nnz + S*A)``: the
``(S, A, S)`` box of [`Box`][cmdp_rl.confidence.box.Box] is never built.

**The structural fact.** For one pair ``p = (s, a)`` with ``n = n(s, a) > 0`` samples, every
successor ``s2`` that is not listed in the pair's row has the same empirical probability
``p0`` (``0`` for ordinary counts), hence the same radius ``beta0`` (a radius depends only on
``p_hat``, ``n`` and the pair's ``delta'``), the same lower bound ``lower0 = clip(p0 - beta0)``
and the same room ``room0 = clip(p0 + beta0) - lower0``. A ``SparseBox`` therefore stores

* for every listed entry (CSR-aligned with the counts): its ``lower`` bound and ``room``;
* for every pair: the shared ``lower0``, ``room0`` of its unlisted states, and the ``spare``
  mass ``1 - sum of all lower bounds``.

A pair without samples allows every distribution (``lower0 = 0``, ``room0 = 1``, ``spare = 1``),
exactly the dense convention (``p_hat = 1/S``, ``beta = 1``). ``p0 > 0`` arises only from the
optional ``background`` counts (every unlisted state of a pair counted ``background[p]`` times),
which [`solve_safe`][cmdp_rl.certificates.safe.solve_safe] uses to scale an empirical kernel whose unvisited rows are
uniform.

The compiled greedy fill over this set (its robust sweeps) is in
[`cmdp_rl.kernels.sparse_fill`][cmdp_rl.kernels.sparse_fill]; the counts' validation and statistics in
[`cmdp_rl.confidence.counts`][cmdp_rl.confidence.counts].
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numba as nb
import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from cmdp_rl.confidence.box import Box, robust_inputs, sweep_inputs
from cmdp_rl.confidence.counts import pair_samples
from cmdp_rl.confidence.counts import validate_sparse_counts as validate_sparse_counts  # its home: counts
from cmdp_rl.confidence.radii import entry_radius, radius_log
from cmdp_rl.kernels.sparse_fill import fill_all, robust_eval, robust_opt
from cmdp_rl.model.sparse import MAX_DENSE_BYTES, dense_bytes
from cmdp_rl.plumbing.names import RADII
from cmdp_rl.plumbing.validation import CMDPInputError, check_choice

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]

# -- the box ----------------------------------------------------------------------------------------


@nb.njit(cache=True)
def _build(
    S: int, indptr: np.ndarray, data: np.ndarray, background: np.ndarray, L: np.ndarray, valid: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Bounds of every listed entry (``lower``, ``room``: ``(nnz,)``) and the shared bounds of each
    pair's unlisted states (``lower0``, ``room0``) and ``spare`` (each ``(S*A,)``); see the module
    docstring. Radii by ``cmdp_rl.confidence.radii.entry_radius``, as on the dense path."""
    SA = indptr.size - 1
    lower = np.empty(data.size)
    room = np.empty(data.size)
    lower0 = np.empty(SA)
    room0 = np.empty(SA)
    spare = np.empty(SA)
    for p in range(SA):
        start, end = indptr[p], indptr[p + 1]
        others = S - (end - start)
        total = background[p] * others
        for k in range(start, end):
            total += data[k]
        n = np.int64(round(total))
        if n <= 0:  # every distribution is plausible (the dense p_hat = 1/S, beta = 1)
            lower0[p] = 0.0
            room0[p] = 1.0
            spare[p] = 1.0
            for k in range(start, end):
                lower[k] = 0.0
                room[k] = 1.0
            continue
        nf = float(n)
        low_sum = 0.0
        for k in range(start, end):
            ph = data[k] / nf
            beta = entry_radius(ph, n, L[p], valid)
            lo = min(max(ph - beta, 0.0), 1.0)
            hi = min(max(ph + beta, 0.0), 1.0)
            lower[k] = lo
            room[k] = hi - lo
            low_sum += lo
        p0 = background[p] / nf
        beta0 = entry_radius(p0, n, L[p], valid)
        lo0 = min(max(p0 - beta0, 0.0), 1.0)
        hi0 = min(max(p0 + beta0, 0.0), 1.0)
        lower0[p] = lo0
        room0[p] = hi0 - lo0
        spare[p] = 1.0 - (low_sum + lo0 * others)
    return lower, room, lower0, room0, spare


@dataclass(frozen=True, eq=False)
class SparseBox:
    """A box-and-simplex confidence set over ``(S*A, S)`` kernels, stored sparsely (module docstring).

    Row ``p = s*A + a`` allows ``{P(. | s, a) : lower <= P <= lower + room, sum P = 1}`` where a
    listed entry ``indices[k]`` (``indptr[p] <= k < indptr[p + 1]``) has bounds ``lower[k]``,
    ``lower[k] + room[k]`` and every other state ``lower0[p]``, ``lower0[p] + room0[p]``.

    Attributes:
        S, A: numbers of states and actions.
        indptr: ``(S*A + 1,)`` int64 row pointers of the listed entries (those of the counts).
        indices: ``(nnz,)`` int64 next states of the listed entries, sorted within each row.
        lower: ``(nnz,)`` lower bounds of the listed entries.
        room: ``(nnz,)`` ``upper - lower`` of the listed entries.
        lower0: ``(S*A,)`` the shared lower bound of a pair's unlisted states.
        room0: ``(S*A,)`` their shared room.
        spare: ``(S*A,)`` the mass left after every lower bound, ``1 - sum lower``.
        n: ``(S*A,)`` samples per pair.
    """

    S: int
    A: int
    indptr: IntArray
    indices: IntArray
    lower: Array
    room: Array
    lower0: Array
    room0: Array
    spare: Array
    n: IntArray

    @classmethod
    def from_counts(
        cls,
        counts: Any,
        delta_prime: float | Array,
        rule: str = "empirical-bernstein",
        background: Array | None = None,
    ) -> SparseBox:
        """The confidence set of ``rule`` (``"paper"`` or ``"empirical-bernstein"``, the radii of
        [`cmdp_rl.confidence.radii`][cmdp_rl.confidence.radii]) around the empirical kernel of sparse counts.

        Args:
            counts: ``(S*A, S)`` sparse counts (validated by ``validate_sparse_counts``).
            delta_prime: per-entry failure probability: a number, or one per pair, ``(S*A,)`` or ``(S, A)``.
            rule: the radius rule.
            background: optional ``(S*A,)`` non-negative integer count of every unlisted state of
                each pair (default 0: ordinary counts).

        Equal to the dense [`Box`][cmdp_rl.confidence.box.Box] of the same counts
        (``Box.from_radius(p_hat, rule_radius(p_hat, n, delta_prime, rule))``) entry by entry.
        """
        return cls.from_valid_counts(validate_sparse_counts(counts), delta_prime, rule, background)

    @classmethod
    def from_valid_counts(
        cls,
        counts: sp.csr_array,
        delta_prime: float | Array,
        rule: str = "empirical-bernstein",
        background: Array | None = None,
    ) -> SparseBox:
        """``from_counts`` for counts already validated by ``validate_sparse_counts`` (their
        canonical CSR copy is shared, not copied again)."""
        rule = check_choice("rule", rule, RADII)
        cnt = counts
        SA, S = cnt.shape
        A = SA // S
        if background is None:
            bg = np.zeros(SA)
        else:
            bg = np.asarray(background, dtype=np.float64)
            if bg.shape != (SA,) or not bool(np.all(np.isfinite(bg) & (bg >= 0) & (bg == np.round(bg)))):
                raise CMDPInputError(f"background: expected ({SA},) non-negative integer counts, got shape {bg.shape}")
        d: float | Array = delta_prime
        if np.ndim(delta_prime) != 0:
            d = np.asarray(delta_prime, dtype=np.float64)
            if d.shape == (SA,):
                d = d.reshape(S, A)
        L = radius_log(d, (S, A), rule).reshape(SA)
        lower, room, lower0, room0, spare = _build(
            S, cnt.indptr, cnt.data, np.ascontiguousarray(bg), np.ascontiguousarray(L), rule == "empirical-bernstein"
        )
        return cls(S, A, cnt.indptr, cnt.indices, lower, room, lower0, room0, spare, pair_samples(cnt, bg))

    @classmethod
    def from_entry_radius(cls, counts: Any, radius: Callable[[Array, IntArray], Array]) -> SparseBox:
        """The box ``|P - p_hat| <= beta`` (clipped to [0, 1]) of an entry radius rule
        ``beta = radius(p_hat, n)`` (elementwise; e.g. the baselines' Bernstein radii), around the
        empirical kernel of sparse counts. Unlisted states of a visited pair get
        ``radius(0, n)``; an unvisited pair allows every distribution (the dense convention).
        Equal to the dense ``Box.from_radius(p_hat, beta)`` of the same counts."""
        cnt = validate_sparse_counts(counts)
        SA, S = cnt.shape
        n = pair_samples(cnt)
        rows = np.repeat(np.arange(SA), np.diff(cnt.indptr))
        n_e = n[rows]
        ph = cnt.data / np.maximum(n_e, 1)
        visited = n > 0
        beta = np.asarray(radius(ph, n_e), dtype=np.float64)
        beta0 = np.asarray(radius(np.zeros(SA), n), dtype=np.float64)
        lower = np.where(visited[rows], np.clip(ph - beta, 0.0, 1.0), 0.0)
        room = np.where(visited[rows], np.clip(ph + beta, 0.0, 1.0), 1.0) - lower
        room0 = np.where(visited, np.clip(beta0, 0.0, 1.0), 1.0)
        spare = np.asarray(1.0 - np.bincount(rows, weights=lower, minlength=SA), dtype=np.float64)
        return cls(S, SA // S, cnt.indptr, cnt.indices, lower, room, np.zeros(SA), room0, spare, n)

    @classmethod
    def empirical(cls, counts: Any) -> SparseBox:
        """The single kernel ``p_hat`` (radius 0) of sparse counts: ``n(s, a, s2) / n(s, a)``, the
        uniform row ``1 / S`` for an unvisited pair (the baselines' convention,
        ``cmdp_rl.learners.bonuses.empirical_p``)."""
        cnt = validate_sparse_counts(counts)
        SA, S = cnt.shape
        n = pair_samples(cnt)
        rows = np.repeat(np.arange(SA), np.diff(cnt.indptr))
        lower = cnt.data / np.maximum(n[rows], 1)
        lower0 = np.where(n > 0, 0.0, 1.0 / S)
        zeros = np.zeros(SA)
        return cls(S, SA // S, cnt.indptr, cnt.indices, lower, np.zeros(lower.size), lower0, zeros, zeros, n)

    @property
    def nnz(self) -> int:
        """Number of listed entries."""
        return int(self.indices.size)

    @property
    def nbytes(self) -> int:
        """Bytes held by the box's arrays."""
        arrays = (self.indptr, self.indices, self.lower, self.room, self.lower0, self.room0, self.spare, self.n)
        return int(sum(a.nbytes for a in arrays))

    def to_box(self) -> Box:
        """The dense [`Box`][cmdp_rl.confidence.box.Box] of this set (small models only: refused above
        ``cmdp_rl.model.sparse.MAX_DENSE_BYTES`` per ``(S, A, S)`` array)."""
        S, A = self.S, self.A
        if dense_bytes(S, A) > MAX_DENSE_BYTES:
            raise CMDPInputError(f"SparseBox.to_box: S={S}, A={A} is too large for a dense (S, A, S) box")
        lower = np.repeat(self.lower0[:, None], S, axis=1)
        room = np.repeat(self.room0[:, None], S, axis=1)
        rows = np.repeat(np.arange(S * A), np.diff(self.indptr))
        lower[rows, self.indices] = self.lower
        room[rows, self.indices] = self.room
        return Box(
            lower.reshape(S, A, S), (lower + room).reshape(S, A, S), room.reshape(S, A, S), self.spare.reshape(S, A)
        )

    def _arrays(self) -> tuple[IntArray, IntArray, Array, Array, Array, Array, Array]:
        return self.indptr, self.indices, self.lower, self.room, self.lower0, self.room0, self.spare

    def fill(self, V: Array, upper: bool = True) -> Array:
        """``(S, A)`` the largest (``upper``) or smallest ``p . V`` over each pair's plausible rows
        (the greedy fill), for next-state values ``V (S,)``."""
        v = self._values("V", V)
        out: Array = fill_all(self.S, *self._arrays(), v, upper).reshape(self.S, self.A)
        return out

    def fill_row(self, s: int, a: int, V: Array, upper: bool = True) -> Array:
        """``(S,)`` the extreme distribution of pair ``(s, a)`` for ``V (S,)``: every entry at its lower
        bound, the spare mass poured greedily in decreasing (``upper``) or increasing order of ``V``
        (stable: ties by state index). Plain NumPy, ``O(S)``: a reference for tests and diagnostics."""
        v = self._values("V", V)
        if not (0 <= s < self.S and 0 <= a < self.A):
            raise CMDPInputError(f"(s, a): must index a pair of S={self.S}, A={self.A}, got ({s}, {a})")
        p = s * self.A + a
        lo = np.full(self.S, self.lower0[p])
        room = np.full(self.S, self.room0[p])
        sl = slice(int(self.indptr[p]), int(self.indptr[p + 1]))
        lo[self.indices[sl]] = self.lower[sl]
        room[self.indices[sl]] = self.room[sl]
        row: Array = lo.copy()
        left = float(self.spare[p])
        for j in np.argsort(-v if upper else v, kind="stable"):
            if left <= 0.0:
                break
            give = min(float(room[j]), left)
            row[j] += give
            left -= give
        return row

    def robust_values(self, policy: Array, rewards: Array, upper: NDArray[np.bool_]) -> Array:
        """Robust policy evaluation of ``R`` reward tables at once.

        Args:
            policy: ``(H, S, A)`` randomized policy.
            rewards: ``(R, S, A)`` per-step rewards (any sign).
            upper: ``(R,)`` per table: the largest (``True``) or smallest value over every per-step
                kernel of the set.

        Returns:
            ``(R, S)`` the robust values ``V_0`` of every state (backward induction with the greedy
            fill; exact because the set is rectangular over ``(h, s, a)``).
        """
        pol, rew, up = robust_inputs(self.S, self.A, policy, rewards, upper)
        out: Array = robust_eval(self.S, *self._arrays(), pol, rew, up)
        return out

    def robust_sweep(self, reward: Array, H: int, upper: bool = True, maximize: bool = True) -> tuple[Array, IntArray]:
        """Robust optimal backward induction over deterministic Markov policies.

        ``V_h(s) = opt_a reward(s, a) + ext_{p in B(s, a)} p . V_{h+1}`` with ``opt`` the max
        (``maximize``) or min over actions and ``ext`` the max (``upper``: the adversary, or
        optimism) or min over the set. ``maximize=upper=True`` is extended value iteration;
        ``maximize=False, upper=True`` minimizes a cost's certified upper bound.

        Args:
            reward: ``(S, A)`` per-step reward or cost (any sign).
            H: horizon.

        Returns:
            ``values (H + 1, S)`` and ``actions (H, S)`` (the first best action on ties).
        """
        rew, steps = sweep_inputs(self.S, self.A, reward, H)
        V, actions = robust_opt(self.S, *self._arrays(), rew, steps, bool(upper), bool(maximize))
        return V, actions

    def _values(self, name: str, V: Array) -> Array:
        v = np.ascontiguousarray(V, dtype=np.float64)
        if v.shape != (self.S,):
            raise CMDPInputError(f"{name}: expected shape ({self.S},), got {v.shape}")
        if not bool(np.all(np.isfinite(v))):
            raise CMDPInputError(f"{name}: must be finite")
        return v


def entry_radius_sums(counts: Any, radius: Callable[[Array, IntArray], Array]) -> Array:
    """``(S, A)`` the sum over all ``S`` next states of an entry radius rule ``radius(p_hat, n)``
    (elementwise) on sparse counts: the listed entries' radii plus ``radius(0, n)`` for each
    unlisted state, a pair's bonus ``sum_s2 beta(s, a, s2)`` without an ``(S, A, S)`` array."""
    cnt = validate_sparse_counts(counts)
    SA, S = cnt.shape
    n = pair_samples(cnt)
    m = np.diff(cnt.indptr)
    rows = np.repeat(np.arange(SA), m)
    n_e = n[rows]
    listed = np.bincount(rows, weights=np.asarray(radius(cnt.data / np.maximum(n_e, 1), n_e)), minlength=SA)
    out: Array = (listed + (S - m) * np.asarray(radius(np.zeros(SA), n))).reshape(S, SA // S)
    return out


__all__ = ["SparseBox", "entry_radius_sums"]
