"""Stationary policies of a discounted CMDP: the linear system ``(I - gamma P_pi) V = r_pi`` of one
policy, solved (see the docs page 'Discounted CMDPs, NPG-PD, CRPO').

Small systems (``S <= DENSE_SOLVE_MAX``) are solved by a dense LU factorization; larger ones by
restarted GMRES on the sparse matrix (the spectrum of ``gamma P_pi`` lies in the disc of radius
``gamma``; measured: about 0.5 ms at S = 10,000 on a Garnet kernel, where a sparse LU takes
9 s of fill-in), with a sparse LU as the fallback when GMRES does not converge.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from functools import cache
from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from numpy.typing import NDArray

from cmdp_rl.model.cmdp import CMDP

Array = NDArray[np.float64]


#: states up to which a policy's system is solved by a dense LU factorization
DENSE_SOLVE_MAX = 1000
#: relative residual GMRES must reach (``||b - M x|| <= GMRES_RTOL ||b||``)
GMRES_RTOL = 1e-13
#: below this many states the dense solves run on one BLAS thread: measured on 2 busy cores,
#: OpenBLAS' threads made 300 NPG-PD iterations at S = 20 take 0.06 to 1.3 s instead of 0.02 s
ONE_THREAD_BELOW = 200


@cache
def _controller() -> Any:
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def small_solves(S: int) -> AbstractContextManager[Any]:
    """A context in which the tiny dense solves of an ``S``-state model use one BLAS thread
    (``S < ONE_THREAD_BELOW``; about 20 us to enter); a no-op for larger models."""
    if S >= ONE_THREAD_BELOW:
        return nullcontext()
    limit: AbstractContextManager[Any] = _controller().limit(limits=1, user_api="blas")
    return limit


class PolicySystem:
    """The linear system ``(I - gamma P_pi) x = b`` of one stationary policy, ready to solve.

    Args:
        P_pi: ``(S, S)`` the kernel under the policy, dense or sparse.
        gamma: discount factor in ``(0, 1)``.
    """

    def __init__(self, P_pi: Array | sp.csr_array, gamma: float) -> None:
        S = P_pi.shape[0]
        self.S, self.gamma = S, gamma
        self._lu: Any = None
        self._M: sp.csr_array | None = None
        if S <= DENSE_SOLVE_MAX:
            dense = sp.csr_array(P_pi).toarray() if sp.issparse(P_pi) else np.asarray(P_pi)
            self._lu = sla.lu_factor(np.eye(S) - gamma * dense, check_finite=False)
        else:
            self._M = sp.csr_array(sp.identity(S, format="csr") - gamma * sp.csr_array(P_pi))

    def solve(self, b: Array, transpose: bool = False, x0: Array | None = None) -> Array:
        """``x`` with ``(I - gamma P_pi) x = b`` (``transpose``: ``(I - gamma P_pi)^T x = b``);
        ``b (S,)`` or ``(S, m)``; ``x0`` an optional first guess for the iterative solver."""
        if self._lu is not None:
            out: Array = sla.lu_solve(self._lu, b, trans=1 if transpose else 0, check_finite=False)
            return out
        assert self._M is not None
        M = self._M.T.tocsr() if transpose else self._M
        cols = b.reshape(self.S, -1)
        guess = None if x0 is None else x0.reshape(self.S, -1)
        x = np.empty_like(cols)
        for j in range(cols.shape[1]):
            start = None if guess is None else guess[:, j]
            xj, info = spla.gmres(M, cols[:, j], x0=start, rtol=GMRES_RTOL, atol=0.0, restart=min(self.S, 60))
            if info != 0:  # not converged: the direct (exact, slower) solve
                xj = spla.splu(M.tocsc()).solve(cols[:, j])
            x[:, j] = xj
        return x.reshape(b.shape)


def policy_kernel(kernel: Array | sp.csr_array, policy: Array) -> Array | sp.csr_array:
    """``P_pi (S, S)``: the kernel under a stationary policy.

    Args:
        kernel: dense ``(S, A, S)`` or the sparse ``(S*A, S)`` CSR kernel.
        policy: ``(S, A)`` action probabilities, or ``(S,)`` integer actions (deterministic).
    """
    if sp.issparse(kernel):
        S = kernel.shape[1]
        A = kernel.shape[0] // S
        if policy.ndim == 1:
            return sp.csr_array(kernel[np.arange(S) * A + policy])
        Pi = sp.csr_array((policy.ravel(), np.arange(S * A), np.arange(0, S * A + 1, A)), shape=(S, S * A))
        return sp.csr_array(Pi @ kernel)
    if policy.ndim == 1:
        out: Array = kernel[np.arange(kernel.shape[0]), policy]
        return out
    return np.einsum("sa,sat->st", policy, kernel)


def policy_system(cmdp: CMDP, policy: Array) -> PolicySystem:
    """The [`PolicySystem`][cmdp_rl.evaluation.stationary.PolicySystem] of ``policy`` (``(S, A)`` or ``(S,)`` actions)
    on
    ``cmdp``'s kernel."""
    assert cmdp.gamma is not None
    return PolicySystem(policy_kernel(cmdp.kernel, policy), cmdp.gamma)


def next_expectation(cmdp: CMDP, V: Array) -> Array:
    """``E[V(s') | s, a]`` on ``cmdp``'s stationary kernel, dense or sparse: ``(S, A)`` for ``V (S,)``,
    ``(S, A, m)`` for ``m`` value tables ``V (S, m)``."""
    if cmdp.is_sparse:
        out: Array = (cmdp.K @ V).reshape(cmdp.S, cmdp.A, *V.shape[1:])
    elif V.ndim == 1:
        out = cmdp.P @ V
    else:
        out = np.einsum("sat,tm->sam", cmdp.P, V)
    return out


def q_from_values(cmdp: CMDP, reward: Array, V: Array) -> Array:
    """``Q (S, A) = reward + gamma * E[V(s') | s, a]`` for ``reward (S, A)`` and ``V (S,)``."""
    assert cmdp.gamma is not None
    out: Array = reward + cmdp.gamma * next_expectation(cmdp, V)
    return out


def discounted_occupancy(system: PolicySystem, rho: Array, policy: Array) -> Array:
    """Altman's normalized occupancy ``mu (S, A)`` of a policy (sums to 1): the discounted state
    distribution ``d = (1 - gamma) rho^T (I - gamma P_pi)^{-1}`` times ``policy (S, A)``."""
    d = (1.0 - system.gamma) * system.solve(rho, transpose=True)
    out: Array = np.maximum(d, 0.0)[:, None] * policy
    return out


def stationary_values(cmdp: CMDP, policy: Array) -> tuple[Array, Array, Array]:
    """Exact values of a stationary ``(S, A)`` policy (validated by the caller) on a discounted
    model: ``X (S, 1 + N)`` (the reward's and every cost's values, one solve with every right-hand
    side), the local variances ``(S, 1 + N)`` of ``X(s')`` given ``s``, and Altman's normalized
    occupancy ``mu (S, A)`` (its transpose solve)."""
    with small_solves(cmdp.S):
        system = policy_system(cmdp, policy)
        tables = np.concatenate([cmdp.r[None], cmdp.c])  # (N + 1, S, A)
        B = np.einsum("sa,msa->sm", policy, tables)
        X = system.solve(B).reshape(cmdp.S, cmdp.N + 1)
        P_pi = policy_kernel(cmdp.kernel, policy)
        mean = P_pi @ X
        var = np.maximum(P_pi @ (X * X) - mean * mean, 0.0)
        mu = discounted_occupancy(system, cmdp.rho, policy)
    return X, var, mu


__all__ = [
    "DENSE_SOLVE_MAX",
    "ONE_THREAD_BELOW",
    "PolicySystem",
    "discounted_occupancy",
    "next_expectation",
    "policy_kernel",
    "policy_system",
    "q_from_values",
    "small_solves",
    "stationary_values",
]
