"""A plan's Markov tables, held or mixed on demand: the ``(H, S, A)`` policy and occupancy of a
[`PlanResult`][cmdp_rl.planning.result.PlanResult].

A plan of column generation is a mixture of deterministic policies (its ``columns`` and
``weights``); its randomized Markov table mixes them by occupancy, ``mu = sum_k w_k mu_k`` and
``policy = mu / sum_a mu`` (uniform on unreachable states; the paper's eq. "occupancy-measure",
Altman 1999 Thm. 3.1), two ``8 H S A``-byte arrays: 800 MB each at ``H = 100``, ``S = 10^5``,
``A = 10``, against ``K H S`` bytes for the columns. The planner therefore keeps only the
columns and a [`PlanTables`][cmdp_rl.planning.mixing.PlanTables] that mixes the tables the first
time ``plan.policy`` or ``plan.occupancy`` is read (then keeps them), after checking the memory
this takes against a limit ([`table_bytes`][cmdp_rl.planning.mixing.table_bytes]); the planners that
compute the tables anyway (``method="lp"``, the extended LP) hand them over as they are.

The limit: ``cmdp_rl.plumbing.limits.DEFAULT_MAX_MEMORY`` (8 GiB), read when the table is built,
or the ``max_memory`` argument of ``plan.markov_policy(max_memory=...)`` and
``plan.occupancy_table(max_memory=...)``. Most uses need no table: ``evaluate(model, plan)``
evaluates the columns exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from cmdp_rl.evaluation.stationary import PolicySystem, policy_kernel, small_solves
from cmdp_rl.kernels.colgen_loop import mix_column, policy_of_mix
from cmdp_rl.kernels.csr import column_distribution
from cmdp_rl.model.actions import Mask, restrict_policy
from cmdp_rl.plumbing import limits
from cmdp_rl.plumbing.errors import CMDPInputError

Array = NDArray[np.float64]
#: builds ``(policy, occupancy)``
Mixer = Callable[[], tuple[Array, Array]]


def table_bytes(shape: tuple[int, ...], ragged: bool) -> float:
    """Peak bytes of mixing a plan's tables of ``shape`` (``(H, S, A)``, or ``(S, A)`` for a
    discounted plan): the occupancy and the policy (``8 H S A`` bytes each), one column's
    ``(H, S)`` state distribution, and for a ``ragged`` model (some actions unavailable) three
    more ``(H, S, A)`` temporaries of [`restrict_policy`][cmdp_rl.model.actions.restrict_policy]."""
    cells = float(np.prod([float(n) for n in shape]))
    return 8.0 * cells * (2 + (3 if ragged else 0)) + 8.0 * cells / max(float(shape[-1]), 1.0)


class PlanTables:
    """Where a plan's policy and occupancy come from: arrays given (``policy``, ``occupancy``), or
    a ``mixer`` that builds them on demand (needing ``nbytes`` bytes at its peak), kept once built.

    Args:
        shape: the policy's shape, ``(H, S, A)`` or ``(S, A)`` (read without building it).
        policy: the policy table, or ``None`` (then ``mixer`` is required).
        occupancy: the occupancy table (same shape).
        mixer: ``() -> (policy, occupancy)``.
        nbytes: the mixer's peak memory, bytes.
    """

    def __init__(
        self,
        shape: tuple[int, ...],
        policy: Array | None = None,
        occupancy: Array | None = None,
        mixer: Mixer | None = None,
        nbytes: float = 0.0,
    ) -> None:
        if policy is None and mixer is None:
            raise AssertionError("PlanTables: needs a policy table or a mixer")
        self.shape = tuple(int(n) for n in shape)
        self.policy, self.occupancy = policy, occupancy
        self.mixer, self.nbytes = mixer, float(nbytes)

    @classmethod
    def of(cls, policy: Array, occupancy: Array) -> PlanTables:
        """Tables given as arrays."""
        return cls(tuple(np.shape(policy)), policy, occupancy)

    @property
    def built(self) -> bool:
        """Whether the tables are at hand (given, or mixed already)."""
        return self.policy is not None

    def get(self, what: str, max_memory: float | None = None) -> tuple[Array, Any]:
        """``(policy, occupancy)``, mixed now if they are not at hand: refused first when the mixing
        needs more than ``max_memory`` bytes (``None``: ``limits.DEFAULT_MAX_MEMORY`` as it is now),
        naming ``what`` and the estimate.

        Raises:
            CMDPInputError: the estimate exceeds the limit.
        """
        if self.policy is None:
            assert self.mixer is not None
            limit = float(limits.DEFAULT_MAX_MEMORY if max_memory is None else max_memory)
            if not self.nbytes <= limit:
                shape = ", ".join(map(str, self.shape))
                raise CMDPInputError(
                    f"{what}: the ({shape}) Markov table of this plan needs about {limits.human_bytes(self.nbytes)} "
                    f"of memory to build, above the limit of {limits.human_bytes(limit)}; use the plan's columns "
                    "and weights instead (evaluate(model, plan), MixturePolicy.of_plan(plan)), or raise the limit "
                    "with plan.markov_policy(max_memory=...) / plan.occupancy_table(max_memory=...) "
                    "(e.g. max_memory=64 * 2**30; on the command line --max-memory)"
                )
            self.policy, self.occupancy = self.mixer()
            self.mixer = None  # the model's arrays are no longer needed
        return self.policy, self.occupancy


class MarkovMix:
    """Mixes a finite-horizon plan's tables (a picklable callable, so a plan crosses processes):
    [`markov_mixer`][cmdp_rl.planning.mixing.markov_mixer]'s arrays, held by reference."""

    def __init__(self, *arrays: Any, reach_tol: float) -> None:
        self.arrays, self.reach_tol = arrays, reach_tol

    def __call__(self) -> tuple[Array, Array]:
        indptr, indices, data, rho, available, columns, weights = self.arrays
        K, H, S = columns.shape
        A = (len(indptr) - 1) // S
        mu = np.zeros((H, S, A))
        for k in range(K):
            if weights[k] > 0.0:
                dist = column_distribution(indptr, indices, data, columns[k], A, rho)
                mix_column(mu, columns[k], dist, float(weights[k]))
        return restrict_policy(policy_of_mix(mu, self.reach_tol), available), mu


class StationaryMix:
    """Mixes a discounted plan's tables (picklable): [`stationary_mixer`][cmdp_rl.planning.mixing.stationary_mixer]'s
    arrays, held by reference."""

    def __init__(self, *arrays: Any, reach_tol: float) -> None:
        self.arrays, self.reach_tol = arrays, reach_tol

    def __call__(self) -> tuple[Array, Array]:
        kernel, gamma, rho, available, columns, weights = self.arrays
        K, S = columns.shape
        mu = np.zeros((1, S, kernel.shape[0] // S))
        last: Array | None = None
        with small_solves(S):
            for k in range(K):
                if weights[k] > 0.0:
                    system = PolicySystem(policy_kernel(kernel, columns[k].astype(np.int64)), gamma)
                    x0 = None if last is None else last / (1.0 - gamma)
                    dist = np.maximum((1.0 - gamma) * system.solve(rho, transpose=True, x0=x0), 0.0)
                    last = dist
                    mix_column(mu, columns[k][None], dist[None], float(weights[k]))
        policy: Array = restrict_policy(policy_of_mix(mu, self.reach_tol), available)[0]
        return policy, mu[0]


def markov_mixer(
    indptr: NDArray[Any],
    indices: NDArray[Any],
    data: Array,
    rho: Array,
    available: Mask | None,
    columns: NDArray[Any],
    weights: Array,
    reach_tol: float,
) -> PlanTables:
    """The tables of a finite-horizon plan, mixed on demand: ``columns (K, H, S)`` with normalized
    ``weights (K,)`` over the ``(S*A, S)`` CSR kernel (``indptr, indices, data``) from ``rho (S,)``.
    Each column's ``(H, S)`` distribution is computed in turn
    ([`column_distribution`][cmdp_rl.kernels.csr.column_distribution]) and added to the occupancy
    ([`mix_column`][cmdp_rl.kernels.colgen_loop.mix_column]), so one is held at a time; the policy is
    [`policy_of_mix`][cmdp_rl.kernels.colgen_loop.policy_of_mix] restricted to the available actions.
    The same arithmetic in the same order as [`mix_plan`][cmdp_rl.kernels.colgen_loop.mix_plan]."""
    _, H, S = columns.shape
    A = (len(indptr) - 1) // S
    mix = MarkovMix(indptr, indices, data, rho, available, columns, weights, reach_tol=reach_tol)
    return PlanTables((H, S, A), mixer=mix, nbytes=table_bytes((H, S, A), available is not None))


def stationary_mixer(
    kernel: sp.csr_array,
    gamma: float,
    rho: Array,
    available: Mask | None,
    columns: NDArray[Any],
    weights: Array,
    reach_tol: float,
) -> PlanTables:
    """The ``(S, A)`` tables of a discounted plan, mixed on demand: ``columns (K, S)`` of stationary
    actions, each column's normalized discounted state distribution ``(1 - gamma) d``,
    ``(I - gamma P_k)^T d = rho`` (one solve each, from the previous column's: the warm start of
    the planner's pool), mixed as [`markov_mixer`][cmdp_rl.planning.mixing.markov_mixer] does."""
    S = columns.shape[1]
    A = kernel.shape[0] // S
    mix = StationaryMix(kernel, gamma, rho, available, columns, weights, reach_tol=reach_tol)
    return PlanTables((S, A), mixer=mix, nbytes=table_bytes((S, A), available is not None))


__all__ = ["MarkovMix", "Mixer", "PlanTables", "StationaryMix", "markov_mixer", "stationary_mixer", "table_bytes"]
