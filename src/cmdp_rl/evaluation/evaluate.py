"""Exact policy evaluation by backward induction (paper eqs. "value", "cost_i",
"v-local-variance") and finite-horizon dynamic programming.

Kernels may be stationary ``(S, A, S)`` or step-dependent ``(H, S, A, S)`` (the
optimistic kernel of the extended LP differs by step).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union, overload

import numba as nb
import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from cmdp_rl.evaluation.mixture import ColumnsPlan, MixtureEvaluation, MixturePolicy, evaluate_mixture, is_plan
from cmdp_rl.evaluation.stationary import stationary_values
from cmdp_rl.kernels.forward import forward_chunks, policy_serial, policy_threaded
from cmdp_rl.kernels.spmv import csr_dot
from cmdp_rl.model.actions import check_policy_support
from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.plumbing.threads import apply_threads
from cmdp_rl.plumbing.validation import CMDPInputError, CMDPTypeError, as_float_array, check_shape, distribution_rows

Array = NDArray[np.float64]


@dataclass(frozen=True)
class Evaluation:
    """Exact values of one policy on one kernel.

    Shapes are those of a finite-horizon model; a discounted model's (stationary policy) drop
    the step axis: ``values (S,)``, ``cost_values (N, S)``, ``occupancy (S, A)`` (Altman's
    normalized ``mu``, summing to 1), ``local_variance (S,)``, ``cost_local_variance (N, S)``.

    Attributes:
        value: ``V_0(s0)`` (``rho . V_0`` for an initial distribution).
        costs: ``(N,)`` ``C_{i,0}(s0)``.
        values: ``(H+1, S)`` ``V_h(s)``; row ``H`` is zero.
        cost_values: ``(N, H+1, S)`` ``C_{i,h}(s)``.
        occupancy: ``(H, S, A)`` ``mu[h, s, a] = P(s_h = s, a_h = a)`` from ``s0``.
        local_variance: ``(H, S)`` ``sigma_h^2(s)`` of eq. "v-local-variance":
            the variance of ``V_{h+1}(s_{h+1})`` given ``s_h = s`` (``a ~ policy``).
        cost_local_variance: ``(N, H, S)`` the same for each cost function.
    """

    value: float
    costs: Array
    values: Array
    cost_values: Array
    occupancy: Array
    local_variance: Array
    cost_local_variance: Array


Kernel = Union[Array, sp.csr_array]  # noqa: UP007 (a runtime alias: Python 3.10 has no | on classes here)


def kernel_at(kernel: Array, h: int) -> Array:
    """The ``(S, A, S)`` kernel used at step ``h`` of a stationary or step-dependent kernel."""
    return kernel[h] if kernel.ndim == 4 else kernel


def expected_next(kernel: Kernel, h: int, V: Array) -> Array:
    """``(S, A)`` ``E[V(s') | s, a]`` under the kernel of step ``h``: dense ``(S, A, S)`` /
    ``(H, S, A, S)``, or the sparse ``(S*A, S)`` CSR kernel (``O(nnz)``; a vector ``V`` on every
    thread, [`csr_dot`][cmdp_rl.kernels.spmv.csr_dot]: the same bits for any count)."""
    if sp.issparse(kernel):
        S = kernel.shape[1]
        KV = csr_dot(kernel, V) if V.ndim == 1 else kernel @ V
        out: Array = KV.reshape(S, kernel.shape[0] // S, *V.shape[1:])
        return out
    return kernel_at(kernel, h) @ V


def q_values(P: Kernel, reward: Array, V: Array) -> Array:
    """``(H, S, A)`` ``Q_h(s, a) = reward(s, a) + E[V_{h+1}(s') | s, a]`` from the values ``V (H+1, S)``
    of [`optimal_values`][cmdp_rl.evaluation.evaluate.optimal_values], for a stationary dense ``(S, A, S)`` or sparse
    ``(S*A, S)``
    kernel."""
    if sp.issparse(P):
        S = P.shape[1]
        nxt = (P @ V[1:].T).T.reshape(V.shape[0] - 1, S, P.shape[0] // S)
        out: Array = reward[None] + nxt
        return out
    dense: Array = reward[None] + np.einsum("sat,ht->hsa", P, V[1:])
    return dense


def optimal_values(P: Kernel, reward: Array, H: int) -> Array:
    """Unconstrained finite-horizon DP: ``(H+1, S)`` optimal values of ``reward (S, A)``.

    ``V_h(s) = max_a reward(s, a) + sum_s2 P[s, a, s2] V_{h+1}(s2)``, ``V_H = 0``.
    ``P`` is ``(S, A, S)``, ``(H, S, A, S)`` or the sparse ``(S*A, S)`` CSR kernel.
    """
    S = reward.shape[0]
    V = np.zeros((H + 1, S))
    for h in range(H - 1, -1, -1):
        V[h] = (reward + expected_next(P, h, V[h + 1])).max(axis=1)
    return V


def validate_policy(policy: object, H: int, S: int, A: int) -> Array:
    """A validated float copy of a ``(H, S, A)`` randomized policy."""
    pol = as_float_array("policy", policy, 3)
    check_shape("policy", pol, (H, S, A))
    distribution_rows("policy", policy, pol, "each action distribution policy[h, s, :]")
    return pol


def validate_kernel(kernel: Any, H: int, S: int, A: int, name: str = "kernel") -> Array:
    """A validated float copy of a ``(S, A, S)`` or ``(H, S, A, S)`` kernel, called ``name`` in errors."""
    ker = as_float_array(name, kernel, 4 if np.ndim(kernel) == 4 else 3)
    check_shape(name, ker, (H, S, A, S) if ker.ndim == 4 else (S, A, S))
    distribution_rows(name, kernel, ker, f"each row of {name}")
    return ker


def _backward(kernel: Kernel, policy: Array, reward: Array) -> tuple[Array, Array]:
    """Values ``(H+1, S)`` and local variances ``(H, S)`` of one reward table ``(S, A)``."""
    H, S, _ = policy.shape
    V = np.zeros((H + 1, S))
    var = np.zeros((H, S))
    for h in range(H - 1, -1, -1):
        nxt = expected_next(kernel, h, V[h + 1])  # (S, A): E[V_{h+1}(s') | s, a]
        nxt2 = expected_next(kernel, h, V[h + 1] ** 2)  # (S, A): E[V_{h+1}(s')^2 | s, a]
        pi = policy[h]
        mean = (pi * nxt).sum(axis=1)  # P_pi V_{h+1}(s)
        V[h] = (pi * reward).sum(axis=1) + mean
        var[h] = np.maximum((pi * nxt2).sum(axis=1) - mean**2, 0.0)
    return V, var


def occupancy(kernel: Kernel, policy: Array, s0: int | Array) -> Array:
    """Forward state-action occupancy ``(H, S, A)`` of ``policy`` from ``s0`` (a state, or an
    ``(S,)`` initial distribution; eq. "occupancy-measure"); the kernel dense ``(S, A, S)`` /
    ``(H, S, A, S)`` or sparse ``(S*A, S)`` CSR (pushed through its transpose on every thread)."""
    H, S, A = policy.shape
    mu = np.zeros((H, S, A))
    if isinstance(s0, (int, np.integer)):
        d = np.zeros(S)
        d[s0] = 1.0
    else:
        d = np.array(s0, dtype=np.float64)
    if sp.issparse(kernel):
        KT = kernel.T.tocsr()  # (S, S*A): d_{h+1} = K^T mu_h
        flat = None
    else:
        flat = kernel.reshape(*kernel.shape[:-3], S * A, S)
    for h in range(H):
        np.multiply(d[:, None], policy[h], out=mu[h])
        if h + 1 < H:
            if flat is None:
                d = csr_dot(KT, mu[h].reshape(-1))
            else:
                d = mu[h].reshape(-1) @ (flat[h] if kernel.ndim == 4 else flat)
    return mu


@overload
def evaluate(cmdp: CMDP, policy: MixturePolicy, kernel: None = None) -> MixtureEvaluation: ...  # type: ignore[overload-overlap]


@overload
def evaluate(cmdp: CMDP, policy: ColumnsPlan, kernel: object | None = None) -> Evaluation | MixtureEvaluation: ...  # type: ignore[overload-overlap]


@overload
def evaluate(cmdp: CMDP, policy: object, kernel: object | None = None) -> Evaluation: ...


def evaluate(cmdp: CMDP, policy: object, kernel: object | None = None) -> Evaluation | MixtureEvaluation:
    """Exactly evaluate a policy on ``cmdp`` (or on another ``kernel``), from ``s0`` or the initial
    distribution ``cmdp.rho``.

    A compact policy (a [`MixturePolicy`][cmdp_rl.evaluation.mixture.MixturePolicy], e.g. from
    [`load_policy`][cmdp_rl.evaluation.policy_files.load_policy], or a ``PlanResult`` with columns:
    ``method="fast"``) gives a [`MixtureEvaluation`][cmdp_rl.evaluation.mixture.MixtureEvaluation]:
    the weighted sum of each column's exact value and costs, no ``(H, S, A)`` table built
    ([`evaluate_mixture`][cmdp_rl.evaluation.mixture.evaluate_mixture]); a plan without columns is
    evaluated by its ``policy`` table.

    Args:
        cmdp: the model (rewards, costs, ``s0``, ``H`` or ``gamma`` and, by default, the kernel).
        policy: ``(H, S, A)``, ``policy[h, s]`` a distribution over actions (none of its mass on an
            action a ragged model's state lacks: refused, naming the state and action); for a discounted
            model a stationary ``(S, A)`` policy, evaluated by one linear solve
            ``(I - gamma P_pi) V = r_pi`` (sparse when the kernel is).
        kernel: optional ``(S, A, S)`` or ``(H, S, A, S)`` kernel to use instead of
            the model's (e.g. the optimistic kernel of the extended LP; finite-horizon models
            only). A sparse model is evaluated on its ``(S*A, S)`` CSR kernel in ``O(H * nnz)``
            per table.

    Returns:
        An [`Evaluation`][cmdp_rl.evaluation.evaluate.Evaluation] with values, costs, occupancy and local variances.
    """
    if not isinstance(cmdp, CMDP):
        raise CMDPTypeError(f"cmdp: must be a cmdp_rl.CMDP, got {type(cmdp).__name__}")
    if is_plan(policy) and getattr(policy, "columns", None) is not None and kernel is None:
        policy = MixturePolicy.of_plan(policy)
    elif is_plan(policy):
        policy = getattr(policy, "policy")  # noqa: B009 (an object typed by the check above)
    if isinstance(policy, MixturePolicy):
        if kernel is not None:
            raise CMDPInputError("kernel: a mixture is evaluated on the model's own kernel; give a policy table")
        return evaluate_mixture(cmdp, policy)
    S, A = cmdp.S, cmdp.A
    if cmdp.is_discounted:
        if kernel is not None:
            raise CMDPInputError("kernel: another kernel is for finite-horizon models; this model is discounted")
        given: Any = policy
        if np.ndim(given) != 2:
            raise CMDPInputError(
                f"policy: this model is discounted (gamma = {cmdp.gamma:g}): give a stationary (S, A) = {(S, A)} "
                f"policy, got shape {np.shape(given)}"
            )
        stat = as_float_array("policy", policy, 2)
        check_shape("policy", stat, (S, A))
        distribution_rows("policy", policy, stat, "each action distribution policy[s, :]")
        check_policy_support("policy", stat, cmdp.actions)
        X, var, mu = stationary_values(cmdp, stat)
        return Evaluation(
            value=float(cmdp.rho @ X[:, 0]),
            costs=np.array(cmdp.rho @ X[:, 1:], dtype=np.float64),
            values=X[:, 0].copy(),
            cost_values=np.ascontiguousarray(X[:, 1:].T),
            occupancy=mu,
            local_variance=var[:, 0].copy(),
            cost_local_variance=np.ascontiguousarray(var[:, 1:].T),
        )
    H = cmdp.horizon("evaluate")
    pol = validate_policy(policy, H, S, A)
    check_policy_support("policy", pol, cmdp.actions)
    ker = cmdp.kernel if kernel is None else validate_kernel(kernel, H, S, A)
    V, var = _backward(ker, pol, cmdp.r)
    CV = np.zeros((cmdp.N, H + 1, S))
    cvar = np.zeros((cmdp.N, H, S))
    for i in range(cmdp.N):
        CV[i], cvar[i] = _backward(ker, pol, cmdp.c[i])
    rho = cmdp.rho
    return Evaluation(
        value=float(V[0] @ rho),
        costs=CV[:, 0] @ rho,
        values=V,
        cost_values=CV,
        occupancy=occupancy(ker, pol, rho),
        local_variance=var,
        cost_local_variance=cvar,
    )


def value_and_costs(cmdp: CMDP, policy: Array) -> tuple[float, Array]:
    """``(V_0(s0), C_0(s0) (N,))`` of a trusted ``(H, S, A)`` policy on the true kernel (no validation).

    One compiled forward pass of the state distribution
    ([`forward_value_costs`][cmdp_rl.evaluation.evaluate.forward_value_costs]): the exact scoring the learners'
    episode loop runs after every episode.
    """
    if not isinstance(cmdp.s0, int) or cmdp.is_discounted:  # a distribution, or a stationary policy
        ev = evaluate(cmdp, policy)
        return ev.value, ev.costs
    pol = np.ascontiguousarray(policy, dtype=np.float64)
    return forward_value_costs(cmdp.kernel, pol, cmdp.r, cmdp.c, cmdp.s0)


def forward_value_costs(kernel: Kernel, policy: Array, r: Array, c: Array, s0: int) -> tuple[float, Array]:
    """The one forward evaluation: ``(V_0(s0), C_0(s0) (N,))`` of a trusted contiguous float64
    ``policy (H, S, A)`` with ``r (S, A)``, ``c (N, S, A)``, the state distribution pushed forward
    from ``s0`` through a dense ``(S, A, S)`` kernel
    ([`dense_forward_value_costs`][cmdp_rl.evaluation.evaluate.dense_forward_value_costs], ``O(H S^2 A)``) or
    the sparse ``(S*A, S)`` CSR one
    ([`csr_forward_value_costs`][cmdp_rl.evaluation.evaluate.csr_forward_value_costs], ``O(H nnz)``): the layout
    is read from the kernel (eq. "occupancy-measure")."""
    if isinstance(kernel, np.ndarray):
        value, costs = dense_forward_value_costs(kernel, policy, r, c, s0)
    else:
        value, costs = csr_forward_value_costs(kernel.indptr, kernel.indices, kernel.data, policy, r, c, s0)
    return float(value), costs


@nb.njit(cache=True)
def dense_forward_value_costs(
    P: np.ndarray, policy: np.ndarray, r: np.ndarray, c: np.ndarray, s0: int
) -> tuple[float, np.ndarray]:
    """``sum_h sum_{s,a} d_h(s) pi_h(a|s) r(s, a)`` and the same for every cost, with the state
    distribution ``d_h`` pushed forward through ``P (S, A, S)`` (eq. "occupancy-measure")."""
    H, S, A = policy.shape
    N = c.shape[0]
    d = np.zeros(S)
    d[s0] = 1.0
    nxt = np.zeros(S)
    value = 0.0
    costs = np.zeros(N)
    for h in range(H):
        nxt[:] = 0.0
        for s in range(S):
            ds = d[s]
            if ds == 0.0:
                continue
            for a in range(A):
                m = ds * policy[h, s, a]
                if m == 0.0:
                    continue
                value += m * r[s, a]
                for i in range(N):
                    costs[i] += m * c[i, s, a]
                if h + 1 < H:
                    for j in range(S):
                        nxt[j] += m * P[s, a, j]
        d, nxt = nxt, d
    return value, costs


def csr_forward_value_costs(
    indptr: NDArray[np.integer],
    indices: NDArray[np.integer],
    data: Array,
    policy: Array,
    r: Array,
    c: Array,
    s0: int,
) -> tuple[float, Array]:
    """[`dense_forward_value_costs`][cmdp_rl.evaluation.evaluate.dense_forward_value_costs] through the CSR
    kernel ``(indptr, indices, data)`` of shape ``(S*A, S)``: ``O(H nnz)`` (eq. "occupancy-measure").
    The source states in [`forward_chunks`][cmdp_rl.kernels.forward.forward_chunks]``(S)`` fixed
    chunks ([`policy_threaded`][cmdp_rl.kernels.forward.policy_threaded]): on
    [`get_threads`][cmdp_rl.plumbing.threads.get_threads] threads from
    ``kernels.csr.PARALLEL_MIN_ENTRIES`` entries on, the same bits for any thread count."""
    from cmdp_rl.kernels import csr  # its threshold read on each call (tests lower it)

    chunks = forward_chunks(policy.shape[1])
    if chunks < 2 or int(indptr[-1]) < csr.PARALLEL_MIN_ENTRIES:
        out = policy_serial(indptr, indices, data, policy, r, c, s0, chunks)
    else:
        apply_threads()
        out = policy_threaded(indptr, indices, data, policy, r, c, s0, chunks)
    return float(out[0]), out[1:]


def gap_and_violation(cmdp: CMDP, policy: Array, v_star: float) -> tuple[float, float]:
    """Signed value gap ``V* - V^pi(s0)`` and violation ``max_i max(C_i - c_bar_i, 0)``."""
    v, costs = value_and_costs(cmdp, policy)
    viol = float(np.max(costs - cmdp.c_bar, initial=0.0))
    return v_star - v, max(viol, 0.0)


__all__ = [
    "CMDPInputError",
    "Evaluation",
    "MixtureEvaluation",
    "MixturePolicy",
    "csr_forward_value_costs",
    "dense_forward_value_costs",
    "evaluate",
    "expected_next",
    "forward_value_costs",
    "gap_and_violation",
    "kernel_at",
    "occupancy",
    "optimal_values",
    "q_values",
    "validate_kernel",
    "validate_policy",
    "value_and_costs",
]
