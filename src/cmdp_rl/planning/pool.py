"""What column generation needs of a pool of columns ([`PoolBase`][cmdp_rl.planning.pool.PoolBase]), whatever the
columns are: deterministic Markov policies ([`ColumnPool`][cmdp_rl.planning.solve.ColumnPool]), deterministic
stationary policies ([`StationaryPool`][cmdp_rl.planning.discounted.StationaryPool]), or the extended LP's
columns ([`DenseBoxPool`][cmdp_rl.planning.elp_dense.DenseBoxPool] over a dense confidence set,
[`BoxPool`][cmdp_rl.planning.elp_sparse.BoxPool] over a sparse one)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.kernels.colgen_loop import mix_column, policy_of_mix
from cmdp_rl.model.actions import Mask, masked, restrict_policy
from cmdp_rl.planning.mixing import PlanTables
from cmdp_rl.planning.result import REACH_TOL

Array = NDArray[np.float64]


@dataclass
class ColumnStat:
    """Value and ``(N,)`` costs from ``s0`` of one column."""

    value: float
    costs: Array


class PoolBase:
    #: whether ``seed`` finds each constraint's largest cost by a sweep (``max_costs`` exact); a pool
    #: that re-plans every episode (the learners' extended LP) takes ``H * max c_i`` instead, which
    #: puts the thresholds on the costs' scale as well, one sweep per constraint cheaper
    exact_max_costs = True

    """What column generation ([`run_colgen`][cmdp_rl.planning.colgen.run_colgen],
    [`plan_of`][cmdp_rl.planning.colgen.plan_of]) needs of a pool of columns.

    A pool prices (``price(weight_r, lam) -> (D0, column)``: one sweep on ``weight_r * r - lam .
    c``, its optimal value at ``s0`` and the column it found), adds a column once
    (``add(column) -> (index, new)``, evaluating its value and costs) and gives a column's state
    distribution (``distribution(index) -> (H, S)``, for mixing). This class keeps the rest: the
    columns' statistics, every pricing sweep's Lagrangian cut, the seed columns.
    [`ColumnPool`][cmdp_rl.planning.solve.ColumnPool] is the model's pool (deterministic Markov policies on a known
    kernel); [`BoxPool`][cmdp_rl.planning.elp_sparse.BoxPool] the extended LP's over a sparse confidence set.
    """

    def _init_pool(self, r: Array, c: Array, s0: int | Array, H: int, actions: Mask | None = None) -> None:
        # the (S, A) mask of the available actions (None: all): pricing puts -inf on the others
        self.available = actions
        self.r = np.ascontiguousarray(r, dtype=np.float64)
        self.c = np.ascontiguousarray(c, dtype=np.float64)
        self.S, self.A = self.r.shape
        self.N = self.c.shape[0]
        self.H = int(H)
        # the start: a state index (self.s0) or a distribution; rho is always the (S,) distribution
        if isinstance(s0, (int, np.integer)):
            self.s0 = int(s0)
            self.rho = np.zeros(self.S)
            self.rho[self.s0] = 1.0
        else:
            self.s0 = -1
            self.rho = np.ascontiguousarray(s0, dtype=np.float64)
        # (S, A, N + 1): the reward and every cost, one right-hand side each
        self.tables = np.ascontiguousarray(np.concatenate([self.r[..., None], np.moveaxis(self.c, 0, -1)], axis=-1))
        # columns are stored in the smallest integer type that holds an action (int8 below 128
        # actions: an (H, S) table of 100 x 100,000 is 10 MB), and found again by a digest
        self.dtype = np.dtype(np.int8 if self.A <= 127 else np.int16 if self.A <= 32767 else np.int32)
        self.actions: list[NDArray[np.integer]] = []
        self.stats: list[ColumnStat] = []
        self._keys: dict[bytes, list[int]] = {}
        self.sweeps = 0
        self.evaluations = 0
        # every pricing sweep's (lambda, D0): phase 1 (reward weight 0) and phase 2 (weight 1)
        self.cuts: tuple[list[tuple[Array, float]], list[tuple[Array, float]]] = ([], [])
        self.unconstrained: float | None = None  # D(0): the unconstrained optimum
        self.min_costs: Array | None = None
        self.max_costs: Array | None = None

    def _reward(self, weight_r: float, lam: Array) -> Array:
        """``weight_r * r - lam . c``, ``(S, A)`` contiguous; ``-inf`` on unavailable pairs (no sweep's
        maximum picks one)."""
        reward = weight_r * self.r
        if self.N == 1 and lam[0] != 0.0:  # the same bits as the product below, without a BLAS call
            reward = reward - lam[0] * self.c[0]
        elif self.N and np.any(lam != 0.0):
            reward = reward - np.tensordot(lam, self.c, axes=1)
        return np.ascontiguousarray(masked(reward, self.available))

    def _cut(self, weight_r: float, lam: Array, best: float) -> None:
        # a cut of the Lagrangian dual, valid for every threshold (a sweep with a negative multiplier,
        # such as the one that finds a constraint's largest cost, is none)
        if weight_r in (0.0, 1.0) and bool(np.all(lam >= 0.0)):
            self.cuts[int(weight_r)].append((np.array(lam, dtype=np.float64), best))

    def price(self, weight_r: float, lam: Array) -> tuple[float, Any]:
        raise NotImplementedError

    def add(self, column: Any) -> tuple[int, bool]:
        raise NotImplementedError

    def distribution(self, index: int) -> Array:
        raise NotImplementedError

    def markov_tables(self, columns: NDArray[Any], weights: Array, index: NDArray[np.intp]) -> PlanTables:
        """The Markov policy and occupancy of the plan mixing ``columns`` (the pool's columns
        ``index``) with the normalized ``weights (K,)``: here mixed now from each column's
        ``distribution`` ([`mix_column`][cmdp_rl.kernels.colgen_loop.mix_column],
        [`policy_of_mix`][cmdp_rl.kernels.colgen_loop.policy_of_mix]: the extended LP's pools, whose
        columns each have their own kernel); the model's pools mix them on demand instead."""
        dist = [self.distribution(int(j)) for j in index]
        stationary = dist[0].ndim == 1
        H, S = (1, self.S) if stationary else dist[0].shape
        mu = np.zeros((H, S, self.A))
        for k, d in enumerate(dist):
            if weights[k] > 0.0:
                acts = columns[k][None] if stationary else columns[k]
                mix_column(mu, acts, d[None] if stationary else d, float(weights[k]))
        policy = restrict_policy(policy_of_mix(mu, REACH_TOL), self.available)
        return PlanTables.of(policy[0], mu[0]) if stationary else PlanTables.of(policy, mu)

    def best_cut(self, weight_r: int, b: Array) -> tuple[float, Array] | None:
        """The best bound the recorded pricing sweeps give for thresholds ``b``: ``weight_r = 1``:
        ``min_k D0_k + lambda_k . b >= V*(b)``; ``weight_r = 0`` (phase 1, ``sum lambda = 1``):
        ``max_k -D0_k - lambda_k . b <= t*(b)``. Returns ``(bound, lambda)``, ``None`` without cuts."""
        cuts = self.cuts[weight_r]
        if not cuts:
            return None
        lams = np.array([lam for lam, _ in cuts]).reshape(len(cuts), self.N)
        d0 = np.array([d for _, d in cuts])
        if weight_r == 1:
            vals = d0 + lams @ b
            k = int(np.argmin(vals))
        else:
            vals = -d0 - lams @ b
            k = int(np.argmax(vals))
        return float(vals[k]), lams[k]

    def seed(self, max_costs: bool = True) -> None:
        """The columns every solve starts from (once per pool): the unconstrained optimum (its value
        is the bound ``D(0)``), each constraint's minimizer (their values are ``min_costs``) and,
        with several constraints, the minimizer of the total cost; one more sweep per constraint
        finds its largest achievable cost (``max_costs``). Together they bound every policy's
        cost (the range [`on_scale`][cmdp_rl.planning.thresholds.on_scale] reads).
        ``max_costs=False`` leaves those last sweeps to a later ``seed()`` (``max_costs`` stays
        ``None`` until then): [`run_colgen`][cmdp_rl.planning.colgen.run_colgen] needs them only
        when some threshold is not below a cost the columns already have."""
        if self.unconstrained is None:
            value, acts = self.price(1.0, np.zeros(self.N))
            self.add(acts)
            mins = np.empty(self.N)
            for i in range(self.N):
                e = np.zeros(self.N)
                e[i] = 1.0
                best, acts = self.price(0.0, e)
                mins[i] = 0.0 - best  # 0.0 - 0.0 is 0.0, not -0.0
                self.add(acts)
            if self.N > 1:
                self.add(self.price(0.0, np.full(self.N, 1.0 / self.N))[1])
            self.unconstrained, self.min_costs = value, mins
        if self.max_costs is None and (max_costs or not self.exact_max_costs):
            maxs = np.empty(self.N)
            for i in range(self.N):
                if not self.exact_max_costs:
                    maxs[i] = self.H * float(self.c[i].max())
                    continue
                e = np.zeros(self.N)
                e[i] = -1.0
                maxs[i] = self.price(0.0, e)[0]
            assert self.min_costs is not None
            self.max_costs = np.maximum(maxs, self.min_costs)

    def values(self) -> Array:
        return np.array([st.value for st in self.stats])

    def costs(self) -> Array:
        """``(K, N)`` one row per column."""
        return np.array([st.costs for st in self.stats]).reshape(len(self.stats), self.N)


__all__ = ["PoolBase"]
