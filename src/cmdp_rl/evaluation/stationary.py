"""Stationary policies of a discounted CMDP: the linear system ``(I - gamma P_pi) V = r_pi`` of one
policy, solved (see the docs page 'Discounted CMDPs, NPG-PD, CRPO').

Small systems (``S <= DENSE_SOLVE_MAX``) are solved by a dense LU factorization; larger banded
ones (bandwidth at most ``BAND_MAX``) by a sparse LU; the others iteratively on the sparse
matrix: BiCGSTAB, then restarted GMRES, from a first guess ``x0`` when the caller has one (a
column that differs from the last in a few states starts from the last one's values), with a
sparse LU as the last resort. The spectrum of ``gamma P_pi`` lies in the disc of radius ``gamma``.

Where a dense LU pays (``benchmarks/discounted.py``, results in
``benchmarks/results/discounted.json``: one BLAS thread, Garnet kernels with 3 successors, one
column's work, that is the reward and a cost as right-hand sides and the transpose solve of its
occupancy, cold; measured at commit 7ab26c3): dense time over iterative time at S = 100, 200,
300, 400, 500, 1,000, 2,000 was 0.09, 0.17, 0.52, 0.96, 1.47, 4.8, 24 at gamma 0.95 and 0.09,
0.15, 0.25, 0.45, 0.73, 3.8, 21 at gamma 0.99 (at S = 1,000: 27 ms dense, 6 ms iterative). The
dense LU is faster up to 400 states at both: ``DENSE_SOLVE_MAX = 400`` (it was 1,000, where one
dense solve costs about 4 iterative ones).

Accuracy. An iterative solve stops on the residual it computes explicitly at the end,
``r = b - (I - gamma P_pi) x``, not on the Krylov method's own estimate: ``||r||_inf <= target``
(``||r||_1`` for a transpose solve) with ``target = ||b|| (tol + ROUNDING / (1 - gamma))``,
``tol = RESIDUAL_TOL`` unless the caller asks for less (the inexact rounds of policy iteration).
Since ``||(I - gamma P_pi)^{-1}||_inf = ||(I - gamma P_pi)^{-T}||_1 = 1 / (1 - gamma)``,

    ||x - x*||_inf <= ||r||_inf / (1 - gamma)        (transpose: ||x - x*||_1 <= ||r||_1 / (1 - gamma)),

so a value ``rho . x`` is within ``||r||_inf / (1 - gamma)`` of the exact one. With rewards in
[0, 1] and the default ``tol`` that is at most ``(1e-13 + 3.6e-15 / (1 - gamma)) / (1 - gamma)``:
``5e-4`` of the planner's default ``gap_tol = 1e-9 / (1 - gamma)`` at gamma 0.99 (``4e-3`` at 0.999).
[`PolicySystem.error`][cmdp_rl.evaluation.stationary.PolicySystem] holds that bound for the last
solve (dense solves included: their residual is computed the same way).

Every iterative solve runs on one BLAS thread: at S = 100,000 on 2 busy cores, GMRES took 95 ms
per iteration with OpenBLAS' threads and 2.8 ms on one (measured once, while writing this).
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


#: states up to which a policy's system is solved by a dense LU factorization (module docstring)
DENSE_SOLVE_MAX = 400
#: residual an iterative solve must reach, relative to ``||b||`` (module docstring)
RESIDUAL_TOL = 1e-13
#: rounding allowance of the residual, times ``||b|| / (1 - gamma)`` (``16`` machine epsilons): the
#: computed residual of the exact solution is about ``eps ||b|| / (1 - gamma)``
ROUNDING = 16.0 * float(np.finfo(np.float64).eps)
#: iterations per call of BiCGSTAB or GMRES before the next method takes over
KRYLOV_MAXITER = 2000
#: a sparse system whose non-zeros all lie within this distance of the diagonal (a queue, a chain, a
#: narrow grid numbered row by row) is solved by a sparse LU in the natural order instead: its
#: factors stay in the band (at most ``2 BAND_MAX + 1`` entries a row), while the Krylov methods
#: need many iterations on such slowly mixing kernels (measured on ``boost-queue:size=2000,
#: gamma=0.999``, bandwidth 1: 0.8 ms for the LU and a solve against 25 ms and 413 iterations)
BAND_MAX = 32
#: GMRES restart length (measured at S = 100,000: 20 beat 10 and 40)
GMRES_RESTART = 20
#: below this many states the dense solves run on one BLAS thread: measured on 2 busy cores,
#: OpenBLAS' threads made 300 NPG-PD iterations at S = 20 take 0.06 to 1.3 s instead of 0.02 s
ONE_THREAD_BELOW = 200


@cache
def _controller() -> Any:
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def one_thread() -> AbstractContextManager[Any]:
    """A context in which BLAS runs on one thread (about 10 us to enter)."""
    limit: AbstractContextManager[Any] = _controller().limit(limits=1, user_api="blas")
    return limit


def small_solves(S: int) -> AbstractContextManager[Any]:
    """A context in which the tiny dense solves of an ``S``-state model use one BLAS thread
    (``S < ONE_THREAD_BELOW``); a no-op for larger models (whose iterative solves limit
    themselves)."""
    return one_thread() if S < ONE_THREAD_BELOW else nullcontext()


def bandwidth(M: sp.csr_array) -> int:
    """``max |s - t|`` over the non-zeros ``(s, t)`` of a square CSR matrix (0 when diagonal)."""
    rows = np.repeat(np.arange(M.shape[0]), np.diff(M.indptr))
    return int(np.abs(rows - M.indices).max(initial=0))


def residual_target(scale: float, gamma: float, tol: float = RESIDUAL_TOL) -> float:
    """The residual an iterative solve stops at: ``scale * (tol + ROUNDING / (1 - gamma))`` with
    ``scale`` the right-hand side's norm (``inf``-norm; ``1``-norm for a transpose solve)."""
    return scale * (tol + ROUNDING / (1.0 - gamma))


class PolicySystem:
    """The linear system ``(I - gamma P_pi) x = b`` of one stationary policy, ready to solve.

    Dense LU up to ``DENSE_SOLVE_MAX`` states (``dense`` overrides), above that a sparse LU
    when banded (``banded`` overrides), else iterative (module docstring). After each ``solve``:
    ``residual``, the largest residual norm over its columns (``inf``-norm; ``1``-norm for a
    transpose solve), and ``error = residual / (1 - gamma)``, the bound on ``||x - x*||`` in the
    same norm; ``iterations`` counts Krylov iterations so far.

    Args:
        P_pi: ``(S, S)`` the kernel under the policy, dense or sparse.
        gamma: discount factor in ``(0, 1)``.
        dense: ``True``/``False`` force the dense path or a sparse one; ``None`` by size
            (the attribute ``dense`` says which).
        banded: on a sparse path, ``True``/``False`` force the sparse LU or the iterative
            solve; ``None`` by bandwidth (the attribute ``banded`` says which).
    """

    def __init__(
        self, P_pi: Array | sp.csr_array, gamma: float, dense: bool | None = None, banded: bool | None = None
    ) -> None:
        S = P_pi.shape[0]
        self.S, self.gamma = S, gamma
        self.dense = bool(S <= DENSE_SOLVE_MAX if dense is None else dense)
        self.banded = False
        self.residual, self.error, self.iterations = 0.0, 0.0, 0
        self._lu: Any = None
        self._dense: Array | None = None
        self._M: sp.csr_array | None = None
        self._MT: sp.csr_array | None = None
        self._splu: Any = None
        if self.dense:
            P = sp.csr_array(P_pi).toarray() if sp.issparse(P_pi) else np.asarray(P_pi, dtype=np.float64)
            self._dense = np.eye(S) - gamma * P
            self._lu = sla.lu_factor(self._dense, check_finite=False)
        else:
            self._M = sp.csr_array(sp.identity(S, format="csr") - gamma * sp.csr_array(P_pi))
            self.banded = bool(bandwidth(self._M) <= BAND_MAX if banded is None else banded)
            if self.banded:  # a queue, a chain: a sparse LU is cheap
                self._splu = spla.splu(sp.csc_matrix(self._M), permc_spec="NATURAL")

    def matrix(self, transpose: bool = False) -> Array | sp.csr_array:
        """``I - gamma P_pi`` (or its transpose): dense ``(S, S)`` on the dense path, else CSR."""
        if self._dense is not None:
            return self._dense.T if transpose else self._dense
        assert self._M is not None
        if not transpose:
            return self._M
        if self._MT is None:
            self._MT = sp.csr_array(self._M.T)
        return self._MT

    def solve(self, b: Array, transpose: bool = False, x0: Array | None = None, tol: float = RESIDUAL_TOL) -> Array:
        """``x`` with ``(I - gamma P_pi) x = b`` (``transpose``: ``(I - gamma P_pi)^T x = b``);
        ``b (S,)`` or ``(S, m)``; ``x0`` a first guess of the same shape for the iterative path;
        ``tol`` the relative residual it stops at (module docstring; the dense path is exact)."""
        M = self.matrix(transpose)
        cols = np.asarray(b, dtype=np.float64).reshape(self.S, -1)
        order = 1 if transpose else np.inf
        if self._lu is not None:
            x = sla.lu_solve(self._lu, cols, trans=1 if transpose else 0, check_finite=False)
            res = [float(np.linalg.norm(cols[:, j] - M @ x[:, j], order)) for j in range(cols.shape[1])]
        elif self._splu is not None:
            x = self._splu.solve(cols, trans="T" if transpose else "N")
            res = [float(np.linalg.norm(cols[:, j] - M @ x[:, j], order)) for j in range(cols.shape[1])]
        else:
            guess = None if x0 is None else np.asarray(x0, dtype=np.float64).reshape(self.S, -1)
            x = np.empty_like(cols)
            res = []
            with one_thread():
                for j in range(cols.shape[1]):
                    scale = float(np.linalg.norm(cols[:, j], order))
                    if scale == 0.0:  # b = 0: x = 0 exactly
                        x[:, j] = 0.0
                        res.append(0.0)
                        continue
                    target = residual_target(scale, self.gamma, tol)
                    start = np.zeros(self.S) if guess is None else guess[:, j].copy()
                    x[:, j], rj = self._iterate(M, cols[:, j], start, target, order)
                    res.append(rj)
        self.residual = max(res, default=0.0)
        self.error = self.residual / (1.0 - self.gamma)
        out: Array = x.reshape(np.shape(b))
        return out

    def _iterate(self, M: Any, b: Array, x: Array, target: float, order: float) -> tuple[Array, float]:
        """One column: BiCGSTAB (asked for a 2-norm residual that usually gives ``target``, then
        one that guarantees it), GMRES, and a sparse LU, each from the best ``x`` so far, until the
        explicit residual (norm ``order``) is at most ``target``. Returns ``(x, residual)``."""
        rn = float(np.linalg.norm(b - M @ x, order))
        root = float(np.sqrt(self.S))
        # ||r||_inf <= ||r||_2 and ||r||_1 <= sqrt(S) ||r||_2: the sufficient 2-norm target, and a
        # looser one that a spread-out residual meets first
        sure = target if order == np.inf else target / root
        typical = sure * (root / 16.0 if order == np.inf else 4.0)
        count = [0]

        def tick(_: Any) -> None:
            count[0] += 1

        for method, atol in ((spla.bicgstab, typical), (spla.bicgstab, sure), (spla.gmres, sure)):
            if rn <= target:
                break
            if method is spla.gmres:
                kw: dict[str, Any] = {"restart": GMRES_RESTART, "callback_type": "pr_norm"}
            else:
                kw = {}
            xt, _ = method(M, b, x0=x, rtol=0.0, atol=max(atol, 1e-300), maxiter=KRYLOV_MAXITER, callback=tick, **kw)
            rt = float(np.linalg.norm(b - M @ xt, order))
            if np.isfinite(rt) and rt < rn:
                x, rn = xt, rt
        self.iterations += count[0]
        if rn > target:  # the Krylov methods stalled: the direct (exact, slower) solve
            x = spla.splu(sp.csc_matrix(M)).solve(b)
            rn = float(np.linalg.norm(b - M @ x, order))
        return x, rn


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
    "BAND_MAX",
    "DENSE_SOLVE_MAX",
    "ONE_THREAD_BELOW",
    "RESIDUAL_TOL",
    "PolicySystem",
    "bandwidth",
    "discounted_occupancy",
    "next_expectation",
    "one_thread",
    "policy_kernel",
    "policy_system",
    "q_from_values",
    "residual_target",
    "small_solves",
    "stationary_values",
]
