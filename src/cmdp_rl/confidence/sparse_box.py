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

**The greedy fill, sparse.** The inner maximum of ``p . V`` over a pair's box starts every entry
at its lower bound and pours the spare mass into next states in decreasing order of ``V``, each
up to its room (the minimum: increasing order). Sort ``V`` once per step (``O(S log S)``), keep
each state's rank and the prefix sums of the sorted values; for one pair, sort its ``m`` listed
entries by rank and walk them: between two listed entries lies a run of consecutive ranks made
only of unlisted states, each taking ``room0``. A run's share is found in ``O(1)`` from the
prefix sums (``room0 * (prefix[k + t] - prefix[k])`` for the ``t = floor(left / room0)`` states
it fills, plus a partial last one), so a pair costs ``O(m log m)`` whatever ``room0`` is: a
tiny ``room0`` (huge ``n``) does not make the walk long. Short runs (at most
``WALK_LIMIT`` states) are walked state by state, in the dense kernel's order of sums.

The order of next states is the stable argsort the dense path uses, so both paths fill the
same states in the same order; values agree to rounding (the sums are grouped differently).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numba as nb
import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from cmdp_rl.confidence.box import Box
from cmdp_rl.confidence.radii import entry_radius, radius_log
from cmdp_rl.model.sparse import MAX_DENSE_BYTES, dense_bytes
from cmdp_rl.plumbing.limits import MAX_EXACT_COUNT, check_allocation
from cmdp_rl.plumbing.names import RADII
from cmdp_rl.plumbing.validation import CMDPInputError, check_choice, check_real_kind, plain

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: runs of at most this many unlisted states are filled state by state (longer runs by prefix sums)
WALK_LIMIT = 64
#: listed entries per pair up to which the per-pair rank sort is an insertion sort
_INSERTION_SORT_MAX = 32


# -- validation and empirical kernel --------------------------------------------------------------


def _pair(row: int, A: int) -> str:
    return f"state {row // A}, action {row % A}"


def validate_sparse_counts(counts: Any, name: str = "counts") -> sp.csr_array:
    """A validated canonical ``(S*A, S)`` CSR copy of sparse transition counts.

    Any ``scipy.sparse`` format is accepted (a 3-d COO array of shape ``(S, A, S)`` is reshaped
    to ``(S*A, S)``). Rules (a broken one is a one-line [`CMDPInputError`][cmdp_rl.plumbing.errors.CMDPInputError]
    naming
    ``name``, the row and column): shape ``(S*A, S)`` with ``S >= 1`` columns and a positive multiple of
    ``S`` rows; finite, non-negative integer entries. Duplicate entries are summed (counts
    add up), explicit zeros dropped, column indices sorted; data float64, indices int64. The
    input is never modified.
    """
    if not sp.issparse(counts):
        raise CMDPInputError(f"{name}: expected a scipy.sparse (S*A, S) matrix or array, got {type(counts).__name__}")
    shape = tuple(int(x) for x in counts.shape)
    coo = counts.tocoo(copy=True)
    if len(shape) == 3 and shape[0] == shape[2]:
        coo = coo.reshape((shape[0] * shape[1], shape[2]))
        shape = (shape[0] * shape[1], shape[2])
    if len(shape) != 2:
        raise CMDPInputError(f"{name}: sparse counts have 2 dimensions (S*A, S), got shape {shape}")
    n_rows, S = shape
    if S < 1 or n_rows < 1 or n_rows % S:
        raise CMDPInputError(
            f"{name}: sparse counts have shape (S*A, S) with S >= 1 and A >= 1, got {shape} "
            f"(rows must be a positive multiple of the {S} columns)"
        )
    A = n_rows // S
    check_allocation(name, 16.0 * (n_rows + 1), f"sparse counts of S*A = {n_rows:,} rows (S = {S:,})")
    check_real_kind(name, coo.data, coo.data[:6])  # the dense rules: no complex, boolean or string entries
    try:
        data = np.asarray(coo.data, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise CMDPInputError(f"{name}: entries cannot be read as numbers ({exc})") from None
    row = np.asarray(coo.coords[0], dtype=np.int64)
    col = np.asarray(coo.coords[1], dtype=np.int64)
    bad = ~np.isfinite(data) | (data < 0) | (data != np.round(data))
    if bad.any():
        k = int(np.argmax(bad))
        raise CMDPInputError(
            f"{name}[{row[k]}, {col[k]}] ({_pair(int(row[k]), A)}, next state {col[k]}): must be a "
            f"non-negative integer, got {plain(data[k])}"
        )
    sums = np.bincount(row, weights=data, minlength=n_rows) if row.size else np.zeros(0)
    if sums.size and sums.max() > MAX_EXACT_COUNT:  # duplicates and a pair's entries add up
        k = int(np.argmax(sums))
        raise CMDPInputError(
            f"{name}[{k}, :] ({_pair(k, A)}): holds {plain(sums[k])} samples, above 2**53 = {MAX_EXACT_COUNT}, "
            "beyond which counts are not exact in float64"
        )
    csr = sp.csr_array((data, (row, col)), shape=(n_rows, S))  # sums duplicates
    csr.sum_duplicates()
    csr.eliminate_zeros()
    csr.sort_indices()
    out = sp.csr_array(
        (
            np.ascontiguousarray(csr.data, dtype=np.float64),
            np.ascontiguousarray(csr.indices, dtype=np.int64),
            np.ascontiguousarray(csr.indptr, dtype=np.int64),
        ),
        shape=(n_rows, S),
    )
    out.has_sorted_indices = True
    return out


def pair_samples(counts: sp.csr_array, background: Array | None = None) -> IntArray:
    """``(S*A,)`` samples per pair ``n(s, a)`` of validated CSR counts (plus ``background[p]``
    for each of the pair's unlisted states, when given)."""
    SA, S = counts.shape
    lengths = np.diff(counts.indptr)
    n = np.bincount(np.repeat(np.arange(SA), lengths), weights=counts.data, minlength=SA)
    if background is not None:
        n = n + background * (S - lengths)
    return np.round(n).astype(np.int64)


def sparse_empirical_kernel(counts: sp.csr_array) -> sp.csr_array:
    """``(S*A, S)`` CSR empirical kernel of validated CSR counts: ``p_hat = n(s, a, s2) / n(s, a)``
    on the listed entries, and the uniform row ``1/S`` for a pair without samples (the dense
    convention of [`empirical_kernel`][cmdp_rl.confidence.radii.empirical_kernel]; such a row has ``S`` entries)."""
    SA, S = counts.shape
    n = pair_samples(counts)
    lengths = np.diff(counts.indptr)
    unvisited = n == 0
    row_len = np.where(unvisited, S, lengths)
    indptr = np.zeros(SA + 1, dtype=np.int64)
    np.cumsum(row_len, out=indptr[1:])
    indices = np.empty(int(indptr[-1]), dtype=np.int64)
    data = np.empty(int(indptr[-1]))
    visited_rows = np.repeat(np.arange(SA), lengths)  # rows of the counts' entries (all visited)
    dst = indptr[visited_rows] + (np.arange(counts.nnz) - counts.indptr[visited_rows])
    indices[dst] = counts.indices
    data[dst] = counts.data / n[visited_rows].astype(np.float64)
    u = np.flatnonzero(unvisited)
    if u.size:
        dst_u = (indptr[u][:, None] + np.arange(S)[None, :]).ravel()
        indices[dst_u] = np.tile(np.arange(S, dtype=np.int64), u.size)
        data[dst_u] = 1.0 / S
    return sp.csr_array((data, indices, indptr), shape=(SA, S))


def scaled_counts(counts: sp.csr_array, m: float) -> tuple[sp.csr_array, Array]:
    """The counts ``round(p_hat * m)`` of ``m`` samples per pair spread as the empirical kernel
    (uniform where unvisited), as CSR counts on the visited pairs' entries plus the ``(S*A,)``
    ``background`` count of every unlisted state (``round(m / S)`` for an unvisited pair, else 0)."""
    SA, S = counts.shape
    n = pair_samples(counts)
    rows = np.repeat(np.arange(SA), np.diff(counts.indptr))
    data = np.round(counts.data / n[rows].astype(np.float64) * m)
    scaled = sp.csr_array((data, counts.indices.copy(), counts.indptr.copy()), shape=(SA, S))
    scaled.eliminate_zeros()
    scaled = sp.csr_array((scaled.data, scaled.indices.astype(np.int64), scaled.indptr.astype(np.int64)), shape=(SA, S))
    background = np.where(n == 0, np.round(1.0 / S * m), 0.0)
    return scaled, background


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
        out: Array = _fill_all(self.S, *self._arrays(), v, upper).reshape(self.S, self.A)
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
        pol = np.ascontiguousarray(policy, dtype=np.float64)
        rew = np.ascontiguousarray(rewards, dtype=np.float64)
        up = np.ascontiguousarray(upper, dtype=np.bool_)
        if pol.ndim != 3 or pol.shape[1:] != (self.S, self.A) or pol.shape[0] < 1:
            raise CMDPInputError(f"policy: expected shape (H, {self.S}, {self.A}), got {pol.shape}")
        if rew.ndim != 3 or rew.shape[1:] != (self.S, self.A):
            raise CMDPInputError(f"rewards: expected shape (R, {self.S}, {self.A}), got {rew.shape}")
        if up.shape != (rew.shape[0],):
            raise CMDPInputError(f"upper: expected shape ({rew.shape[0]},), got {up.shape}")
        out: Array = _robust_eval(self.S, *self._arrays(), pol, rew, up)
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
        rew = np.ascontiguousarray(reward, dtype=np.float64)
        if rew.shape != (self.S, self.A):
            raise CMDPInputError(f"reward: expected shape ({self.S}, {self.A}), got {rew.shape}")
        if isinstance(H, bool) or not isinstance(H, (int, np.integer)) or H < 1:
            raise CMDPInputError(f"H: horizon must be an integer >= 1, got {plain(H)}")
        V, actions = robust_opt(self.S, *self._arrays(), rew, int(H), bool(upper), bool(maximize))
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


# -- compiled greedy fill ---------------------------------------------------------------------------


@nb.njit(cache=True)
def fill_order(V: np.ndarray, upper: bool, rank: np.ndarray, vs: np.ndarray, prefix: np.ndarray) -> None:
    """The fill order of one step: states by decreasing (``upper``) or increasing ``V``, stable (ties by
    index, as the dense path's ``argsort(sign * V, kind="stable")``). Writes each state's ``rank``, the
    sorted values ``vs`` and their prefix sums ``prefix (S + 1,)``."""
    S = V.size
    key = np.empty(S)
    for j in range(S):
        key[j] = -V[j] if upper else V[j]
    order = np.argsort(key, kind="mergesort")
    prefix[0] = 0.0
    for k in range(S):
        j = order[k]
        rank[j] = k
        vs[k] = V[j]
        prefix[k + 1] = prefix[k] + V[j]


@nb.njit(cache=True, inline="always")
def _run(a: int, b: int, r0: float, left: float, vs: np.ndarray, prefix: np.ndarray) -> tuple[float, float]:
    """Pour ``left`` into the unlisted states of ranks ``a .. b - 1`` (each up to ``r0``): ``(value, left)``."""
    q = 0.0
    cnt = b - a
    if cnt <= 0 or r0 <= 0.0 or left <= 0.0:
        return q, left
    if cnt <= WALK_LIMIT or left <= WALK_LIMIT * r0:  # short: state by state, as the dense kernel sums
        for k in range(a, b):
            if left <= 0.0:
                break
            give = r0 if r0 <= left else left
            q += give * vs[k]
            left -= give
        return q, left
    cap = cnt * r0
    if left >= cap:
        return r0 * (prefix[b] - prefix[a]), left - cap
    t = math.floor(left / r0)
    if t >= cnt:  # rounding: left is within an ulp of cap
        return r0 * (prefix[b] - prefix[a]), 0.0
    q = r0 * (prefix[a + t] - prefix[a])
    part = left - t * r0
    if part > r0:
        part = r0
    if part > 0.0:
        q += part * vs[a + t]
    return q, 0.0


@nb.njit(cache=True)
def _pair_fill(
    p: int,
    S: int,
    indptr: np.ndarray,
    indices: np.ndarray,
    lower: np.ndarray,
    room: np.ndarray,
    lower0: np.ndarray,
    room0: np.ndarray,
    spare: np.ndarray,
    V: np.ndarray,
    rank: np.ndarray,
    vs: np.ndarray,
    prefix: np.ndarray,
    kbuf: np.ndarray,
    ebuf: np.ndarray,
) -> float:
    """``ext p . V`` over pair ``p``'s box: the greedy fill along the ranks of ``fill_order`` (module
    docstring). ``kbuf``, ``ebuf``: scratch of at least the longest row's length."""
    start, end = indptr[p], indptr[p + 1]
    m = end - start
    q = 0.0
    listed = 0.0
    for t in range(m):
        k = start + t
        v = V[indices[k]]
        q += lower[k] * v
        listed += v
        # insertion sort of the listed entries by rank (long rows: argsort below)
        r = rank[indices[k]]
        if m <= _INSERTION_SORT_MAX:
            i = t
            while i > 0 and kbuf[i - 1] > r:
                kbuf[i] = kbuf[i - 1]
                ebuf[i] = ebuf[i - 1]
                i -= 1
            kbuf[i] = r
            ebuf[i] = k
        else:
            kbuf[t] = r
            ebuf[t] = k
    if m > _INSERTION_SORT_MAX:
        perm = np.argsort(kbuf[:m])
        ks = kbuf[:m][perm]
        es = ebuf[:m][perm]
        for t in range(m):
            kbuf[t] = ks[t]
            ebuf[t] = es[t]
    lo0 = lower0[p]
    if lo0 != 0.0:
        q += lo0 * (prefix[S] - listed)
    left = spare[p]
    r0 = room0[p]
    prev = 0
    for t in range(m):
        if left <= 0.0:
            break
        kr = kbuf[t]
        add, left = _run(prev, kr, r0, left, vs, prefix)
        q += add
        if left <= 0.0:
            break
        k = ebuf[t]
        give = room[k]
        if give > left:
            give = left
        q += give * vs[kr]
        left -= give
        prev = kr + 1
    if left > 0.0:
        add, left = _run(prev, S, r0, left, vs, prefix)
        q += add
    return q


@nb.njit(cache=True)
def sweep_scratch(indptr: np.ndarray, S: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-step scratch: ``rank (S,)``, sorted values ``(S,)``, prefix sums ``(S + 1,)`` and two row buffers."""
    width = 1
    for p in range(indptr.size - 1):
        if indptr[p + 1] - indptr[p] + 1 > width:
            width = indptr[p + 1] - indptr[p] + 1
    return (
        np.empty(S, dtype=np.int64),
        np.empty(S),
        np.empty(S + 1),
        np.empty(width, dtype=np.int64),
        np.empty(width, dtype=np.int64),
    )


@nb.njit(cache=True)
def _fill_all(
    S: int,
    indptr: np.ndarray,
    indices: np.ndarray,
    lower: np.ndarray,
    room: np.ndarray,
    lower0: np.ndarray,
    room0: np.ndarray,
    spare: np.ndarray,
    V: np.ndarray,
    upper: bool,
) -> np.ndarray:
    """``(S*A,)`` the greedy-fill value of every pair for next-state values ``V (S,)``."""
    rank, vs, prefix, kbuf, ebuf = sweep_scratch(indptr, S)
    fill_order(V, upper, rank, vs, prefix)
    SA = indptr.size - 1
    out = np.empty(SA)
    for p in range(SA):
        out[p] = _pair_fill(p, S, indptr, indices, lower, room, lower0, room0, spare, V, rank, vs, prefix, kbuf, ebuf)
    return out


@nb.njit(cache=True)
def _robust_eval(
    S: int,
    indptr: np.ndarray,
    indices: np.ndarray,
    lower: np.ndarray,
    room: np.ndarray,
    lower0: np.ndarray,
    room0: np.ndarray,
    spare: np.ndarray,
    policy: np.ndarray,
    rewards: np.ndarray,
    upper: np.ndarray,
) -> np.ndarray:
    """``(R, S)`` robust values ``V_0`` of ``rewards (R, S, A)`` under ``policy (H, S, A)``
    (``SparseBox.robust_values``); pairs the policy never chooses are not filled."""
    H, _, A = policy.shape
    R = rewards.shape[0]
    V = np.zeros((R, S))
    nxt = np.empty((R, S))
    rank, vs, prefix, kbuf, ebuf = sweep_scratch(indptr, S)
    for h in range(H - 1, -1, -1):
        for r in range(R):
            Vr = V[r]
            fill_order(Vr, upper[r], rank, vs, prefix)
            for s in range(S):
                acc = 0.0
                for a in range(A):
                    w = policy[h, s, a]
                    if w == 0.0:
                        continue
                    q = _pair_fill(
                        s * A + a,
                        S,
                        indptr,
                        indices,
                        lower,
                        room,
                        lower0,
                        room0,
                        spare,
                        Vr,
                        rank,
                        vs,
                        prefix,
                        kbuf,
                        ebuf,
                    )
                    acc += w * (rewards[r, s, a] + q)
                nxt[r, s] = acc
        V, nxt = nxt, V
    return V


@nb.njit(cache=True)
def robust_opt(
    S: int,
    indptr: np.ndarray,
    indices: np.ndarray,
    lower: np.ndarray,
    room: np.ndarray,
    lower0: np.ndarray,
    room0: np.ndarray,
    spare: np.ndarray,
    reward: np.ndarray,
    H: int,
    upper: bool,
    maximize: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Robust optimal backward induction (``SparseBox.robust_sweep``): ``V (H + 1, S)``, ``actions (H, S)``."""
    A = reward.shape[1]
    V = np.zeros((H + 1, S))
    actions = np.zeros((H, S), dtype=np.int64)
    rank, vs, prefix, kbuf, ebuf = sweep_scratch(indptr, S)
    for h in range(H - 1, -1, -1):
        Vn = V[h + 1]
        fill_order(Vn, upper, rank, vs, prefix)
        for s in range(S):
            best = 0.0
            best_a = 0
            for a in range(A):
                q = reward[s, a] + _pair_fill(
                    s * A + a, S, indptr, indices, lower, room, lower0, room0, spare, Vn, rank, vs, prefix, kbuf, ebuf
                )
                if a == 0 or (q > best if maximize else q < best):
                    best = q
                    best_a = a
            actions[h, s] = best_a
            V[h, s] = best
    return V, actions


__all__ = [
    "WALK_LIMIT",
    "SparseBox",
    "entry_radius_sums",
    "pair_samples",
    "scaled_counts",
    "sparse_empirical_kernel",
    "validate_sparse_counts",
]
