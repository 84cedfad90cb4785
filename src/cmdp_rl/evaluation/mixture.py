"""Compact policies: a mixture of deterministic policies (columns) with their weights, evaluated
exactly without building an ``(H, S, A)`` table.

A plan of column generation ([`plan_of`][cmdp_rl.planning.colgen.plan_of]) is a convex combination
of deterministic Markov policies; played as a mixture (one column drawn per episode with its
weight, then followed for the whole episode) it has the occupancy ``mu = sum_k w_k mu_k``, the
occupancy of the randomized Markov table ``mu / sum_a mu`` that ``PlanResult.policy`` holds
(Altman 1999, Thm. 3.1 / the paper's eq. "occupancy-measure": a policy's value and costs are
linear in its occupancy), so both have the same value and costs on the model the plan was solved
for. Its memory is ``K * H * S`` small integers against ``H * S * A`` floats.

Shapes: a finite-horizon mixture holds ``columns (K, H, S)``; a discounted one (the stationary
columns of ``method="fast"`` on a discounted model) ``columns (K, S)``, no step axis, as
``PlanResult.columns`` does. Actions are stored in the smallest unsigned integer type that holds
``A - 1`` ([`action_dtype`][cmdp_rl.evaluation.mixture.action_dtype]).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.evaluation.stationary import PolicySystem, policy_kernel, small_solves
from cmdp_rl.kernels.csr import columns_stats
from cmdp_rl.model.actions import check_action_table
from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.plumbing.validation import CMDPInputError, CMDPTypeError, as_float_array, plain

Array = NDArray[np.float64]

#: the ``kind`` of a mixture of deterministic policies (the ``kind`` key of a compact ``.npz`` file)
MIXTURE_KIND = "mixture"
#: how far the weights of a mixture may sum from 1
WEIGHT_SUM_TOL = 1e-9


def action_dtype(A: int) -> np.dtype[Any]:
    """The smallest unsigned integer type holding the actions ``0 .. A - 1``: ``uint8`` up to 256
    actions, ``uint16`` up to 65,536, else ``uint32``."""
    if A > 2**32:
        raise CMDPInputError(f"A: at most 2**32 actions, got {A}")
    for dtype in (np.uint8, np.uint16):
        if A - 1 <= np.iinfo(dtype).max:
            return np.dtype(dtype)
    return np.dtype(np.uint32)


@dataclass(frozen=True, eq=False)
class MixturePolicy:
    """A mixture of deterministic policies: draw column ``k`` with probability ``weights[k]`` at the
    start of an episode and play it throughout.

    Build one with [`mixture_policy`][cmdp_rl.evaluation.mixture.mixture_policy] (validated), from a
    plan with [`MixturePolicy.of_plan`][cmdp_rl.evaluation.mixture.MixturePolicy.of_plan], or read
    one with [`load_policy`][cmdp_rl.evaluation.policy_files.load_policy].

    Attributes:
        columns: ``(K, H, S)`` action tables of deterministic Markov policies (finite horizon) or
            ``(K, S)`` of deterministic stationary ones (discounted), unsigned integers.
        weights: ``(K,)`` non-negative, summing to 1.
        kind: ``"mixture"``.
    """

    columns: NDArray[np.unsignedinteger[Any]]
    weights: Array
    kind: str = MIXTURE_KIND

    @property
    def K(self) -> int:
        """Number of columns."""
        return int(self.columns.shape[0])

    @property
    def stationary(self) -> bool:
        """Whether the columns are stationary ``(K, S)`` tables (a discounted plan's)."""
        return self.columns.ndim == 2

    @property
    def nbytes(self) -> int:
        """Bytes of the columns and weights (the dense ``(H, S, A)`` table would take ``8 H S A``)."""
        return int(self.columns.nbytes + self.weights.nbytes)

    def __repr__(self) -> str:
        """A short summary (the columns are large)."""
        return f"MixturePolicy(K={self.K}, columns=<{tuple(self.columns.shape)} {self.columns.dtype}>)"

    @classmethod
    def of_plan(cls, plan: Any) -> MixturePolicy:
        """The mixture a plan of column generation holds (``plan.columns``, ``plan.weights``, the
        number of actions from ``plan.table_shape``, which sets the dtype: the Markov table is
        not built); refused for a plan without columns (the LP's)."""
        columns, weights = getattr(plan, "columns", None), getattr(plan, "weights", None)
        if columns is None or weights is None:
            raise CMDPInputError(
                f"plan: a {getattr(plan, 'method', '') or 'plan'!s} plan holds no columns (only method='fast' mixes "
                "deterministic policies); use its policy table"
            )
        shape = getattr(plan, "table_shape", None)
        return mixture_policy(columns, weights, int((shape if shape is not None else np.shape(plan.policy))[-1]))


def mixture_policy(columns: Any, weights: Any, A: int | None = None) -> MixturePolicy:
    """A validated [`MixturePolicy`][cmdp_rl.evaluation.mixture.MixturePolicy] (copies of the inputs).

    Args:
        columns: ``(K, H, S)`` or ``(K, S)`` integer action tables, each entry in ``0 .. A - 1``.
        weights: ``(K,)`` non-negative weights summing to 1 (within ``WEIGHT_SUM_TOL``); they are
            renormalized to sum to 1 exactly.
        A: the number of actions (at least 1), or ``None``: any action ``>= 0``, the dtype fitting
            the largest (a file's columns: the model is checked when evaluating).
    """
    if A is not None and (isinstance(A, bool) or not isinstance(A, (int, np.integer)) or A < 1):
        raise CMDPInputError(f"A: the number of actions must be an integer >= 1, got {plain(A)}")
    raw = np.asarray(columns)
    if raw.dtype.kind not in "iu":
        raise CMDPInputError(f"columns: must hold integer actions, not {raw.dtype.name} data")
    if raw.ndim not in (2, 3) or raw.shape[0] < 1:
        raise CMDPInputError(f"columns: expected shape (K, H, S) or (K, S) with K >= 1, got {raw.shape}")
    top = np.iinfo(np.uint32).max if A is None else int(A) - 1
    if raw.size and (raw.min() < 0 or raw.max() > top):
        bad = (raw < 0) | (raw > top)
        idx = [int(i) for i in np.argwhere(bad)[0]]
        rule = ">= 0" if A is None else f"in 0 .. {top} (A = {A})"
        raise CMDPInputError(f"columns{idx}: an action must be {rule}, got {raw[tuple(idx)]}")
    w = as_float_array("weights", weights, 1)
    if w.shape != (raw.shape[0],):
        raise CMDPInputError(f"weights: expected shape ({raw.shape[0]},) (one per column), got {w.shape}")
    if (w < 0).any():
        k = int(np.argmax(w < 0))
        raise CMDPInputError(f"weights[{k}]: must be non-negative, got {plain(w[k])}")
    if abs(w.sum() - 1.0) > WEIGHT_SUM_TOL:
        raise CMDPInputError(f"weights: must sum to 1 (tolerance {WEIGHT_SUM_TOL:g}), sums to {plain(w.sum())}")
    fits = (int(raw.max()) + 1 if raw.size else 1) if A is None else int(A)
    return MixturePolicy(np.array(raw, dtype=action_dtype(fits)), w / w.sum())


class ColumnsPlan(Protocol):
    """What [`evaluate`][cmdp_rl.evaluation.evaluate.evaluate] reads of a plan (a ``PlanResult``,
    defined a floor above): its columns and weights (``None`` for a plan without columns) and its
    randomized table."""

    @property
    def columns(self) -> NDArray[np.integer[Any]] | None: ...

    @property
    def weights(self) -> Array | None: ...

    @property
    def policy(self) -> Array: ...


def is_plan(policy: object) -> bool:
    """Whether ``policy`` is a plan (has ``columns``, ``weights`` and ``policy``), not a table; looked
    up statically, so a plan's ``policy`` property is not evaluated (its table not built)."""
    missing = object()
    return all(inspect.getattr_static(policy, key, missing) is not missing for key in ("columns", "weights", "policy"))


@dataclass(frozen=True)
class MixtureEvaluation:
    """Exact value and costs of a [`MixturePolicy`][cmdp_rl.evaluation.mixture.MixturePolicy].

    Attributes:
        value: ``sum_k w_k V^{pi_k}`` from ``s0`` (``rho``).
        costs: ``(N,)`` ``sum_k w_k C_i^{pi_k}``.
        column_values: ``(K,)`` each column's value.
        column_costs: ``(K, N)`` each column's costs.
        weights: ``(K,)`` the mixture's weights.
    """

    value: float
    costs: Array
    column_values: Array
    column_costs: Array
    weights: Array


def check_columns(
    name: str, mix: MixturePolicy, shape: tuple[int, ...], A: int, mask: NDArray[np.bool_] | None
) -> None:
    """Refuse a mixture whose columns play an action outside ``0 .. A - 1``, do not have the shape
    ``(K, *shape)`` (``(H, S)``, or ``(S,)`` stationary), or play an action ``mask (S, A)`` does not
    allow (one line naming ``name``)."""
    if mix.columns.size and int(mix.columns.max()) >= A:
        idx = [int(i) for i in np.argwhere(mix.columns >= A)[0]]
        a = int(mix.columns[tuple(idx)])
        raise CMDPInputError(f"{name}.columns{idx}: plays action {a}, the model has A = {A} actions")
    if mix.columns.shape[1:] != shape:
        raise CMDPInputError(
            f"{name}: expected columns of shape (K, {', '.join(map(str, shape))}), got {mix.columns.shape}"
        )
    check_action_table(f"{name}.columns", mix.columns, mask)


def check_mixture_fits(name: str, mix: MixturePolicy, cmdp: CMDP) -> None:
    """Refuse a mixture whose shape or actions do not fit ``cmdp`` (one line naming ``name``;
    [`check_columns`][cmdp_rl.evaluation.mixture.check_columns])."""
    if cmdp.is_discounted and not mix.stationary:
        raise CMDPInputError(
            f"{name}: this model is discounted (gamma = {cmdp.gamma:g}): its columns must be stationary "
            f"(K, S) = (K, {cmdp.S}) tables, got shape {mix.columns.shape}"
        )
    want = (cmdp.S,) if cmdp.is_discounted else (cmdp.horizon("evaluate"), cmdp.S)
    check_columns(name, mix, want, cmdp.A, cmdp.actions)


def column_returns(cmdp: CMDP, mix: MixturePolicy) -> Array:
    """``(K, N + 1)``: each column's value (first entry) and costs from ``rho``, exactly.

    Finite horizon: one forward pass of the state distribution per column through the CSR kernel
    (``O(H nnz)``, eq. "occupancy-measure"), the columns over the threads
    ([`columns_stats`][cmdp_rl.kernels.csr.columns_stats]: the same bits for any thread count).
    Discounted: one solve ``(I - gamma P_k) X = [r_k, c_k]`` per column (the stationary systems of
    [`PolicySystem`][cmdp_rl.evaluation.stationary.PolicySystem]).
    """
    tables = np.ascontiguousarray(np.concatenate([cmdp.r[..., None], np.moveaxis(cmdp.c, 0, -1)], axis=-1))
    rho = np.ascontiguousarray(cmdp.rho, dtype=np.float64)
    out = np.empty((mix.K, cmdp.N + 1))
    if not mix.stationary:
        K = cmdp.K
        indptr = np.ascontiguousarray(K.indptr, dtype=np.int64)
        indices = np.ascontiguousarray(K.indices, dtype=np.int64)
        data = np.ascontiguousarray(K.data, dtype=np.float64)
        # the columns on every thread, each column's pass on one (its own small dtype: no int64 copy)
        return columns_stats(indptr, indices, data, np.ascontiguousarray(mix.columns), tables, rho)
    assert cmdp.gamma is not None
    rows = np.arange(cmdp.S)
    with small_solves(cmdp.S):
        for k in range(mix.K):
            acts = mix.columns[k].astype(np.int64)
            system = PolicySystem(policy_kernel(cmdp.kernel, acts), cmdp.gamma)
            X = system.solve(np.ascontiguousarray(tables[rows, acts]))
            out[k] = rho @ X.reshape(cmdp.S, cmdp.N + 1)
    return out


def evaluate_mixture(cmdp: CMDP, mix: MixturePolicy, name: str = "policy") -> MixtureEvaluation:
    """Exact value and costs of a mixture on ``cmdp``: the weighted sum of each column's exact
    evaluation ([`column_returns`][cmdp_rl.evaluation.mixture.column_returns]), never an
    ``(H, S, A)`` table. A mixture that does not fit the model is refused naming ``name``."""
    if not isinstance(cmdp, CMDP):
        raise CMDPTypeError(f"cmdp: must be a cmdp_rl.CMDP, got {type(cmdp).__name__}")
    check_mixture_fits(name, mix, cmdp)
    X = column_returns(cmdp, mix)
    mixed = mix.weights @ X
    return MixtureEvaluation(
        value=float(mixed[0]),
        costs=np.array(mixed[1:], dtype=np.float64),
        column_values=X[:, 0].copy(),
        column_costs=np.ascontiguousarray(X[:, 1:]),
        weights=mix.weights.copy(),
    )


__all__ = [
    "MIXTURE_KIND",
    "WEIGHT_SUM_TOL",
    "ColumnsPlan",
    "MixtureEvaluation",
    "MixturePolicy",
    "action_dtype",
    "check_columns",
    "check_mixture_fits",
    "column_returns",
    "evaluate_mixture",
    "is_plan",
    "mixture_policy",
]
