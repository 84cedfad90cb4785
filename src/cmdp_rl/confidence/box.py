"""Extended value iteration (EVI) over a box-and-simplex set of kernels.

The plausible next-state distributions of ``(s, a)`` are
``{p : lower <= p <= upper, sum p = 1}``. For a linear objective the inner
maximum of ``sum_s2 p(s2) V(s2)`` over this set is a greedy fill: every entry
starts at its lower bound and the remaining mass goes to next states in
decreasing order of ``V``, each up to its upper bound. One sort of ``V_{h+1}``
per step serves every ``(s, a)``; the loops are compiled (``_kernels``).

An EVI sweep returns a deterministic policy and an extreme kernel: a vertex of
the extended LP's feasible set, used as a column by [`colgen`][cmdp_rl.planning.elp_dense]. A column
is stored as its ``actions (H, S)`` and next-state ``order (H, S)``; from those
and the bounds the kernel is re-derived, so columns stay valid (plausible)
when the bounds change between episodes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.confidence.counts import plain_integer_counts, validate_counts
from cmdp_rl.confidence.radii import box_bounds, radius_log
from cmdp_rl.kernels.evi import column_rows, column_values, evi_sweep, fill_rows
from cmdp_rl.model.actions import Mask, masked
from cmdp_rl.plumbing.threads import apply_threads
from cmdp_rl.plumbing.validation import CMDPInputError, plain

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]


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
    def from_bounds(cls, lower: Array, upper: Array) -> Box:
        """Build from ``(S, A, S)`` bounds (assumed consistent)."""
        lower = np.ascontiguousarray(lower, dtype=np.float64)
        upper = np.ascontiguousarray(upper, dtype=np.float64)
        if lower.ndim != 3 or lower.shape[0] != lower.shape[2] or upper.shape != lower.shape:
            raise CMDPInputError(
                f"box: lower and upper bounds must both be (S, A, S), got shapes {lower.shape} and {upper.shape}"
            )
        return cls(lower, upper, upper - lower, 1.0 - lower.sum(axis=-1))

    @classmethod
    def from_radius(cls, p_hat: Array, beta: Array) -> Box:
        """The box ``|p - p_hat| <= beta`` intersected with [0, 1] (paper eq. "bernstein-hoeffding")."""
        return cls.from_bounds(np.clip(p_hat - beta, 0.0, 1.0), np.clip(p_hat + beta, 0.0, 1.0))

    @classmethod
    def from_counts(cls, counts: object, delta_prime: float | Array, rule: str = "paper") -> Box:
        """The box of [`confidence_set`][cmdp_rl.confidence.radii.confidence_set] (``p_hat`` and radii of ``rule``)
        straight from ``(S, A, S)`` non-negative integer transition counts, in one compiled pass:
        the learners' per-episode confidence set. Equal to ``from_radius(p_hat, rule_radius(p_hat,
        n, delta_prime, rule))`` to rounding (its ``spare`` sums run in another order).

        Raises:
            CMDPInputError: ``counts`` not ``(S, A, S)`` non-negative integers (the rules of
                [`validate_counts`][cmdp_rl.confidence.counts.validate_counts]), ``rule`` unknown
                or ``delta_prime`` outside (0, 1).
        """
        arr = counts if isinstance(counts, np.ndarray) and plain_integer_counts(counts) else None
        if arr is None:  # the one validator names the entry and the rule (integral floats pass it)
            arr = validate_counts(counts)
            if arr.size == 0:
                raise CMDPInputError(f"counts: expected shape (S, A, S), got {arr.shape}")
        cnt = np.ascontiguousarray(arr, dtype=np.int64)
        L = radius_log(delta_prime, cnt.shape[:2], rule)
        return cls(*box_bounds(cnt, L, rule == "empirical-bernstein"))

    @property
    def nbytes(self) -> int:
        """Bytes held by the box's arrays."""
        return int(self.lower.nbytes + self.upper.nbytes + self.room.nbytes + self.spare.nbytes)

    def to_box(self) -> Box:
        """This box (the dense layout of [`ConfidenceBox`][cmdp_rl.confidence.sets.ConfidenceBox])."""
        return self

    def fill(self, V: Array, upper: bool = True) -> Array:
        """``(S, A)`` the largest (``upper``) or smallest ``p . V`` over each pair's plausible rows
        (the greedy fill along the stable order of ``V``), for next-state values ``V (S,)``."""
        v = np.ascontiguousarray(V, dtype=np.float64)
        if v.shape != (self.S,) or not bool(np.all(np.isfinite(v))):
            raise CMDPInputError(f"V: expected {self.S} finite values, got shape {v.shape}")
        order = np.argsort(-v if upper else v, kind="stable")
        out: Array = greedy_rows(self, order[None, :])[0] @ v
        return out

    def robust_values(self, policy: Array, rewards: Array, upper: NDArray[np.bool_]) -> Array:
        """Robust policy evaluation of ``R`` reward tables at once: ``(R, S)`` the values ``V_0`` of
        ``rewards (R, S, A)`` under ``policy (H, S, A)``, the largest (``upper[r]``) or smallest over
        every per-step kernel of the box (backward induction with the greedy fill; exact because
        the set is rectangular over ``(h, s, a)``). Every step fills the rows of all ``R`` passes
        in one call, each pass with its own order of next states."""
        pol, rew, up = robust_inputs(self.S, self.A, policy, rewards, upper)
        H, S, _ = pol.shape
        V = np.zeros((rew.shape[0], S))
        sign = np.where(up, -1.0, 1.0)[:, None]  # upper: most valuable next states first
        for h in range(H - 1, -1, -1):
            order = np.argsort(sign * V, axis=1, kind="stable")
            rows = greedy_rows(self, order)  # (R, S, A, S): the extreme row of every pair, per pass
            V = (pol[h] * (rew + np.einsum("rsat,rt->rsa", rows, V))).sum(axis=-1)
        return V

    def robust_sweep(self, reward: Array, H: int, upper: bool = True, maximize: bool = True) -> tuple[Array, IntArray]:
        """Robust optimal backward induction over deterministic Markov policies,
        ``V_h(s) = opt_a reward(s, a) + ext_{p in B(s, a)} p . V_{h+1}`` (``opt``: max when
        ``maximize``, else min; ``ext``: max when ``upper``, else min), as
        [`SparseBox.robust_sweep`][cmdp_rl.confidence.sparse_box.SparseBox.robust_sweep]: ``values (H + 1, S)``
        and ``actions (H, S)`` (the first best action on ties)."""
        rew, H = sweep_inputs(self.S, self.A, reward, H)
        S = self.S
        V = np.zeros((H + 1, S))
        actions = np.zeros((H, S), dtype=np.int64)
        for h in range(H - 1, -1, -1):
            nxt = V[h + 1]
            order = np.argsort(-nxt if upper else nxt, kind="stable")
            Q = rew + greedy_rows(self, order[None, :])[0] @ nxt  # (S, A)
            actions[h] = np.argmax(Q, axis=1) if maximize else np.argmin(Q, axis=1)
            V[h] = Q[np.arange(S), actions[h]]
        return V, actions

    @property
    def S(self) -> int:
        """Number of states."""
        return int(self.lower.shape[0])

    @property
    def A(self) -> int:
        """Number of actions."""
        return int(self.lower.shape[1])


def robust_inputs(
    S: int, A: int, policy: Array, rewards: Array, upper: NDArray[np.bool_]
) -> tuple[Array, Array, NDArray[np.bool_]]:
    """Contiguous ``policy (H, S, A)``, ``rewards (R, S, A)`` and ``upper (R,)`` of a robust
    evaluation, checked against the set's ``S`` and ``A`` (either layout)."""
    pol = np.ascontiguousarray(policy, dtype=np.float64)
    rew = np.ascontiguousarray(rewards, dtype=np.float64)
    up = np.ascontiguousarray(upper, dtype=np.bool_)
    if pol.ndim != 3 or pol.shape[1:] != (S, A) or pol.shape[0] < 1:
        raise CMDPInputError(f"policy: expected shape (H, {S}, {A}), got {pol.shape}")
    if rew.ndim != 3 or rew.shape[1:] != (S, A):
        raise CMDPInputError(f"rewards: expected shape (R, {S}, {A}), got {rew.shape}")
    if up.shape != (rew.shape[0],):
        raise CMDPInputError(f"upper: expected shape ({rew.shape[0]},), got {up.shape}")
    return pol, rew, up


def sweep_inputs(S: int, A: int, reward: Array, H: int) -> tuple[Array, int]:
    """A contiguous ``reward (S, A)`` and the horizon ``H >= 1`` of a robust sweep (either layout)."""
    rew = np.ascontiguousarray(reward, dtype=np.float64)
    if rew.shape != (S, A):
        raise CMDPInputError(f"reward: expected shape ({S}, {A}), got {rew.shape}")
    return rew, check_horizon_steps(H)


def check_horizon_steps(H: object) -> int:
    """``H`` as an integer >= 1 (the sweeps' horizon), or a one-line error naming ``H``."""
    if isinstance(H, bool) or not isinstance(H, (int, np.integer)) or H < 1:
        raise CMDPInputError(f"H: horizon must be an integer >= 1, got {plain(H)}")
    return int(H)


def _check_table(name: str, arr: Array, box: Box) -> Array:
    """A contiguous float64 ``(S, A)`` table matching ``box`` (checked before a compiled kernel)."""
    out = np.ascontiguousarray(arr, dtype=np.float64)
    if out.shape != (box.S, box.A):
        raise CMDPInputError(
            f"{name}: expected shape {(box.S, box.A)} (S={box.S}, A={box.A} of the confidence set), got {out.shape}"
        )
    return out


def _check_steps(name: str, arr: IntArray, H: int | None, S: int, hi: int) -> IntArray:
    """A contiguous int64 ``(H, S)`` table with entries in ``[0, hi)`` (checked before a compiled kernel)."""
    out = np.ascontiguousarray(arr, dtype=np.int64)
    if out.ndim != 2 or out.shape[1] != S or (H is not None and out.shape[0] != H) or out.shape[0] < 1:
        want = f"({H if H is not None else 'H'}, {S})"
        raise CMDPInputError(f"{name}: expected shape {want}, got {out.shape}")
    if out.min() < 0 or out.max() >= hi:
        raise CMDPInputError(
            f"{name}: entries must lie in [0, {hi - 1}], got values in [{int(out.min())}, {int(out.max())}]"
        )
    return out


def greedy_rows(box: Box, orders: IntArray) -> Array:
    """Greedy-fill rows ``(H, S, A, S)``: for every step ``h`` and ``(s, a)``, the
    plausible distribution putting as much mass as the bounds allow on the
    earliest states of ``orders[h]`` (``orders`` is ``(H, S)``)."""
    return fill_rows(box.lower, box.room, box.spare, _check_steps("orders", orders, None, box.S, box.S))


def evi(box: Box, reward: Array, H: int) -> tuple[Array, IntArray, IntArray]:
    """One EVI sweep: the optimistic values of ``reward`` over all policies and plausible kernels.

    ``V_h(s) = max_a reward(s, a) + max_{p plausible for (s, a)} sum_s2 p(s2) V_{h+1}(s2)``,
    the inner maximum being the greedy fill in decreasing order of ``V_{h+1}``.

    Args:
        box: bounds of the plausible set.
        reward: ``(S, A)`` per-step reward (may be negative: Lagrangian rewards).
        H: horizon.

    Returns:
        ``values (H+1, S)``, greedy ``actions (H, S)`` (first best action on ties) and
        the next-state ``order (H, S)`` used at each step (states sorted by
        decreasing ``V_{h+1}``, ties by index).
    """
    H = check_horizon_steps(H)
    apply_threads(launch=True)  # the states of each step over the threads from EVI_PARALLEL_MIN_ENTRIES entries on
    return evi_sweep(box.lower, box.room, box.spare, _check_table("reward", reward, box), H)


def evi_numpy(box: Box, reward: Array, H: int) -> tuple[Array, IntArray, IntArray]:
    """[`evi`][cmdp_rl.confidence.box.evi] in plain vectorized NumPy (no compiled code): the reference it is tested
    against and the floor the speed benchmarks compare an episode with.

    Per step: sort next states by decreasing ``V_{h+1}`` (stable), give each ``(s, a)`` its
    lower bounds plus the spare mass greedily along that order (each state at most its
    ``room``), and take the best action. Same shapes and tie rules as [`evi`][cmdp_rl.confidence.box.evi].
    """
    H = check_horizon_steps(H)
    reward = _check_table("reward", reward, box)
    S = reward.shape[0]
    V = np.zeros((H + 1, S))
    actions = np.zeros((H, S), dtype=np.int64)
    orders = np.zeros((H, S), dtype=np.int64)
    base = box.lower  # (S, A, S)
    for h in range(H - 1, -1, -1):
        order = np.argsort(-V[h + 1], kind="stable")
        room = box.room[:, :, order]  # (S, A, S) in preference order
        before = np.cumsum(room, axis=-1) - room  # mass already given to better states
        give = np.clip(box.spare[..., None] - before, 0.0, room)
        Q = reward + base @ V[h + 1] + give @ V[h + 1][order]  # (S, A)
        actions[h] = np.argmax(Q, axis=1)
        V[h] = Q[np.arange(S), actions[h]]
        orders[h] = order
    return V, actions, orders


def min_costs(box: Box, c: Array, s0: int, H: int, actions: Mask | None = None) -> Array:
    """``(N,)`` smallest expected cost of each constraint over all policies (that play only the
    ``actions`` available, ``None``: all) and plausible kernels (EVI on ``-c_i``): what an
    infeasible extended LP reports as ``min_costs``."""
    return np.array([-evi(box, masked(-c[i], actions), H)[0][0, s0] for i in range(c.shape[0])])


@dataclass(frozen=True)
class Column:
    """One vertex of the extended-LP polytope: a deterministic policy and an extreme kernel.

    Attributes:
        actions: ``(H, S)`` action taken in each state and step.
        order: ``(H, S)`` next-state preference order defining the kernel at each step.
        dist: ``(H, S)`` state distribution ``P(s_h = s)`` from ``s0``.
        value: expected total reward.
        costs: ``(N,)`` expected total costs.
    """

    actions: IntArray
    order: IntArray
    dist: Array
    value: float
    costs: Array

    def rows(self, box: Box) -> Array:
        """``(H, S, S)`` kernel rows ``P'_h(. | s, actions[h, s])`` under ``box`` (computed on demand:
        only the optimistic kernel needs them)."""
        rows, _ = column_rows(box.lower, box.room, box.spare, self.actions, self.order, int(np.argmax(self.dist[0])))
        out: Array = rows
        return out

    def key(self) -> bytes:
        """Identity of the vertex (same actions and order give the same occupancy)."""
        return self.actions.tobytes() + self.order.tobytes()


def make_column(box: Box, actions: IntArray, order: IntArray, r: Array, c: Array, s0: int) -> Column:
    """Evaluate the vertex ``(actions, order)`` under ``box``: forward pass of its extended occupancy.

    Args:
        box: plausible-set bounds.
        actions: ``(H, S)`` as returned by [`evi`][cmdp_rl.confidence.box.evi].
        order: ``(H, S)`` as returned by [`evi`][cmdp_rl.confidence.box.evi].
        r: ``(S, A)`` rewards.
        c: ``(N, S, A)`` costs.
        s0: initial state.
    """
    actions = _check_steps("actions", actions, None, box.S, box.A)
    H, S = actions.shape
    order = _check_steps("order", order, H, S, S)
    r = _check_table("r", r, box)
    c = np.ascontiguousarray(c, dtype=np.float64)
    if c.ndim != 3 or c.shape[1:] != (S, box.A):
        raise CMDPInputError(f"c: expected shape (N, {S}, {box.A}), got {c.shape}")
    if not 0 <= s0 < S:
        raise CMDPInputError(f"s0: must be a state index in [0, {S - 1}], got {s0}")
    return column_of(box, actions, order, r, c, int(s0))


def column_of(box: Box, actions: IntArray, order: IntArray, r: Array, c: Array, s0: int) -> Column:
    """[`make_column`][cmdp_rl.confidence.box.make_column] without its checks, for arrays already known to be valid:
    contiguous int64 ``actions``/``order`` ``(H, S)`` in range (from [`evi`][cmdp_rl.confidence.box.evi] or checked warm
    columns), contiguous float64 ``r (S, A)``, ``c (N, S, A)``, ``0 <= s0 < S``. Column generation's
    inner loop: one compiled pass for the rows, the state distribution, the value and the costs."""
    dist, value, costs = column_values(box.lower, box.room, box.spare, actions, order, s0, r, c)
    return Column(actions, order, dist, float(value), costs)
