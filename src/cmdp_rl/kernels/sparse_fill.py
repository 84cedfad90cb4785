"""Compiled greedy fills over a sparse box-and-simplex set: the robust sweeps of
[`SparseBox`][cmdp_rl.confidence.sparse_box.SparseBox] and the sparse extended LP's pricing.

The set is passed as its arrays (see [`SparseBox`][cmdp_rl.confidence.sparse_box.SparseBox]): ``indptr (S*A + 1,)``,
``indices (nnz,)`` of the listed entries with their ``lower`` and ``room`` ``(nnz,)``, and per pair
the shared ``lower0``, ``room0`` of its unlisted states and its ``spare`` mass ``(S*A,)``.

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

import numba as nb
import numpy as np

#: runs of at most this many unlisted states are filled state by state (longer runs by prefix sums)
WALK_LIMIT = 64
#: listed entries per pair up to which the per-pair rank sort is an insertion sort
_INSERTION_SORT_MAX = 32


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
def pair_fill(
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
def fill_all(
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
        out[p] = pair_fill(p, S, indptr, indices, lower, room, lower0, room0, spare, V, rank, vs, prefix, kbuf, ebuf)
    return out


@nb.njit(cache=True)
def robust_eval(
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
                    q = pair_fill(
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
                q = reward[s, a] + pair_fill(
                    s * A + a, S, indptr, indices, lower, room, lower0, room0, spare, Vn, rank, vs, prefix, kbuf, ebuf
                )
                if a == 0 or (q > best if maximize else q < best):
                    best = q
                    best_a = a
            actions[h, s] = best_a
            V[h, s] = best
    return V, actions


__all__ = ["WALK_LIMIT", "fill_all", "fill_order", "pair_fill", "robust_eval", "robust_opt", "sweep_scratch"]
