"""The restricted master LP of column generation, compiled: an exact dense revised simplex for
``N + 1`` rows and a handful of columns (numba).

[`master_lp`][cmdp_rl.kernels.master_lp.master_lp] is the master of every column-generation loop
([`run_colgen`][cmdp_rl.planning.colgen.run_colgen] and the dense extended LP's compiled loop
[`colgen_loop`][cmdp_rl.kernels.colgen_loop.colgen_loop]); HiGHS
([`MasterLP`][cmdp_rl.planning.master.MasterLP]) is its fallback when it gives up.
"""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(cache=True)
def _solve_small(M: np.ndarray, rhs: np.ndarray, out: np.ndarray) -> bool:
    """``M x = rhs`` for a small dense ``M`` by Gaussian elimination with partial pivoting,
    into ``out``; False when ``M`` is (numerically) singular."""
    m = rhs.size
    T = np.empty((m, m + 1))
    for i in range(m):
        for j in range(m):
            T[i, j] = M[i, j]
        T[i, m] = rhs[i]
    for col in range(m):
        p = col
        big = abs(T[col, col])
        for i in range(col + 1, m):
            if abs(T[i, col]) > big:
                big = abs(T[i, col])
                p = i
        if big < 1e-13:
            return False
        if p != col:
            for j in range(col, m + 1):
                tmp = T[col, j]
                T[col, j] = T[p, j]
                T[p, j] = tmp
        for i in range(col + 1, m):
            f = T[i, col] / T[col, col]
            if f != 0.0:
                for j in range(col, m + 1):
                    T[i, j] -= f * T[col, j]
    for i in range(m - 1, -1, -1):
        acc = T[i, m]
        for j in range(i + 1, m):
            acc -= T[i, j] * out[j]
        out[i] = acc / T[i, i]
    return True


#: master-LP outcomes of ``master_lp``
MASTER_OK, MASTER_FAILED = 0, 1


@nb.njit(cache=True)
def _standard_form(
    costs: np.ndarray, v: np.ndarray, b: np.ndarray, phase1: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """The master in standard form: ``(Amat (m, ntot), cost (ntot,), rhs (m,), scale)``, columns
    ``K`` structural, ``N`` slacks, phase 1's ``t+, t-``, then one artificial per row (zero here:
    the crash basis fills the ones it needs); ``scale`` the largest entry of the data, at least 1."""
    K, N = costs.shape
    m = N + 1
    n = K + N + (2 if phase1 else 0)  # structural + slack (+ t+, t-) columns
    ntot = n + m  # + one artificial per row
    Amat = np.zeros((m, ntot))
    cost = np.zeros(ntot)
    rhs = np.empty(m)
    scale = 1.0
    for i in range(N):
        rhs[i] = b[i]
        scale = max(scale, abs(b[i]))
    rhs[N] = 1.0
    for j in range(K):
        for i in range(N):
            Amat[i, j] = costs[j, i]
            scale = max(scale, abs(costs[j, i]))
        Amat[N, j] = 1.0
        if not phase1:
            cost[j] = v[j]
            scale = max(scale, abs(v[j]))
    for i in range(N):
        Amat[i, K + i] = 1.0
    if phase1:
        for i in range(N):
            Amat[i, K + N] = -1.0
            Amat[i, K + N + 1] = 1.0
        cost[K + N] = -1.0
        cost[K + N + 1] = 1.0
    return Amat, cost, rhs, scale


@nb.njit(cache=True)
def _crash_basis(Amat: np.ndarray, costs: np.ndarray, b: np.ndarray, phase1: bool, n: int) -> tuple[np.ndarray, int]:
    """The starting basis ``(m,)`` around the column of least worst excess and the number of
    artificials it needs (their columns of ``Amat`` are set here)."""
    K, N = costs.shape
    j0 = 0
    e0 = np.inf
    i0 = 0
    for j in range(K):
        e = -np.inf
        ie = 0
        for i in range(N):
            if costs[j, i] - b[i] > e:
                e = costs[j, i] - b[i]
                ie = i
        if e < e0:
            e0, j0, i0 = e, j, ie
    basis = np.empty(N + 1, dtype=np.int64)
    basis[N] = j0
    n_art = 0
    for i in range(N):
        basis[i] = K + i
    if phase1:  # t = e0 makes row i0 tight and every other row feasible
        basis[i0] = K + N if e0 >= 0.0 else K + N + 1
    else:
        for i in range(N):
            if b[i] - costs[j0, i] < 0.0:
                Amat[i, n + i] = -1.0
                basis[i] = n + i
                n_art += 1
    return basis, n_art


@nb.njit(cache=True)
def _basis_matrix(Amat: np.ndarray, basis: np.ndarray, B: np.ndarray) -> None:
    """``B[:, k] = Amat[:, basis[k]]``."""
    m = basis.size
    for i in range(m):
        for k in range(m):
            B[i, k] = Amat[i, basis[k]]


@nb.njit(cache=True)
def _entering(
    Amat: np.ndarray, phase_cost: np.ndarray, y: np.ndarray, is_basic: np.ndarray, n: int, dtol: float
) -> int:
    """Bland's rule: the first non-basic column (artificials never enter) whose reduced cost
    exceeds ``dtol``, or -1."""
    m = y.size
    for j in range(n):
        if is_basic[j]:
            continue
        d = phase_cost[j]
        for i in range(m):
            d -= y[i] * Amat[i, j]
        if d > dtol:
            return j
    return -1


@nb.njit(cache=True)
def _drive_out_artificials(
    Amat: np.ndarray,
    basis: np.ndarray,
    is_basic: np.ndarray,
    B: np.ndarray,
    xB: np.ndarray,
    n: int,
    scale: float,
    col: np.ndarray,
    u: np.ndarray,
) -> bool:
    """End of phase I: the artificials must be (numerically) zero, then leave the basis (each
    replaced by a non-basic column with a nonzero entry in its row). False when they cannot."""
    m = basis.size
    art = 0.0
    for i in range(m):
        if basis[i] >= n:
            art += abs(xB[i])
    if art > 1e-9 * scale:
        return False
    for r in range(m):
        if basis[r] < n:
            continue
        swapped = False
        for j in range(n):
            if is_basic[j]:
                continue
            for i in range(m):
                col[i] = Amat[i, j]
            if not _solve_small(B, col, u):
                return False
            if abs(u[r]) > 1e-9:
                is_basic[basis[r]] = False
                basis[r] = j
                is_basic[j] = True
                _basis_matrix(Amat, basis, B)
                swapped = True
                break
        if not swapped:
            return False
    return True


@nb.njit(cache=True)
def _leaving(u: np.ndarray, xB: np.ndarray, basis: np.ndarray, ptol: float) -> int:
    """The ratio test with Bland's tie-break (the smallest basic index): the leaving row, or -1
    (unbounded)."""
    leave = -1
    best = np.inf
    for i in range(u.size):
        if u[i] > ptol:
            ratio = max(xB[i], 0.0) / u[i]
            if leave < 0 or ratio < best or (ratio == best and basis[i] < basis[leave]):
                best = ratio
                leave = i
    return leave


@nb.njit(cache=True)
def _is_optimal(
    Amat: np.ndarray,
    cost: np.ndarray,
    basis: np.ndarray,
    is_basic: np.ndarray,
    xB: np.ndarray,
    y: np.ndarray,
    n: int,
    scale: float,
) -> bool:
    """The independent optimality check of a final basis: no artificial, the re-solved basic
    solution ``xB`` feasible, every reduced cost at most ``1e-9 scale`` at the duals ``y``."""
    m = basis.size
    for i in range(m):
        if basis[i] >= n or xB[i] < -1e-10:
            return False
    for j in range(n):
        if is_basic[j]:
            continue
        d = cost[j]
        for i in range(m):
            d -= y[i] * Amat[i, j]
        if d > 1e-9 * scale:
            return False
    return True


@nb.njit(cache=True)
def _simplex(
    Amat: np.ndarray, cost: np.ndarray, rhs: np.ndarray, scale: float, basis: np.ndarray, n_art: int, n: int
) -> tuple[bool, np.ndarray, np.ndarray, np.ndarray]:
    """The revised simplex from ``basis`` (phase I first when ``n_art > 0``), one fresh ``m x m``
    elimination per basis solve. Returns ``(ok, is_basic, xB, y)`` of the final basis."""
    m = rhs.size
    ntot = cost.size
    dtol = 1e-12 * scale  # reduced cost counted as positive
    ptol = 1e-11  # pivot entry counted as positive
    is_basic = np.zeros(ntot, dtype=np.bool_)
    for i in range(m):
        is_basic[basis[i]] = True
    B = np.empty((m, m))
    Bt = np.empty((m, m))
    xB = np.empty(m)
    y = np.empty(m)
    u = np.empty(m)
    cB = np.empty(m)
    col = np.empty(m)
    phase_cost = np.zeros(ntot)
    stage = 0 if n_art > 0 else 1  # 0: phase I (artificials), 1: real objective
    if stage == 0:
        for i in range(m - 1):
            phase_cost[n + i] = -1.0
    else:
        for j in range(ntot):
            phase_cost[j] = cost[j]
    max_it = 50 * (ntot + m) + 100
    for _ in range(max_it):
        for i in range(m):
            for k in range(m):
                B[i, k] = Amat[i, basis[k]]
                Bt[k, i] = B[i, k]
            cB[i] = phase_cost[basis[i]]
        if not _solve_small(B, rhs, xB) or not _solve_small(Bt, cB, y):
            return False, is_basic, xB, y
        enter = _entering(Amat, phase_cost, y, is_basic, n, dtol)
        if enter < 0:
            if stage == 1:
                return True, is_basic, xB, y
            if not _drive_out_artificials(Amat, basis, is_basic, B, xB, n, scale, col, u):
                return False, is_basic, xB, y
            stage = 1
            for j in range(ntot):
                phase_cost[j] = cost[j] if j < n else 0.0
            continue
        for i in range(m):
            col[i] = Amat[i, enter]
        if not _solve_small(B, col, u):
            return False, is_basic, xB, y
        leave = _leaving(u, xB, basis, ptol)
        if leave < 0:  # unbounded: impossible for these masters (sum w = 1, t >= least excess)
            return False, is_basic, xB, y
        is_basic[basis[leave]] = False
        basis[leave] = enter
        is_basic[enter] = True
    return False, is_basic, xB, y


@nb.njit(cache=True)
def master_lp(
    costs: np.ndarray, v: np.ndarray, b: np.ndarray, phase1: bool
) -> tuple[np.ndarray, float, np.ndarray, int]:
    """The restricted master LP of column generation, solved exactly by a dense revised simplex.

    Phase 2 (``phase1=False``): ``max v.w  s.t.  C w <= b,  sum w = 1,  w >= 0``.
    Phase 1: ``max -t  s.t.  C w - t <= b,  sum w = 1,  w >= 0`` (``t`` free, written
    ``t = tp - tm``), whose objective is minus the worst excess.

    ``C`` is ``costs.T``: ``costs`` is ``(K, N)`` (one row per column), ``v`` ``(K,)``,
    ``b`` ``(N,)``. Standard form with slacks, rows
    ``C_i w (- t) + s_i = b_i`` and ``sum w = 1``; ``m = N + 1`` rows, so every basis
    solve is an ``m x m`` Gaussian elimination done afresh (no accumulated round-off).
    Start: the column of least worst excess carries the convexity row, the slacks of
    the rows it meets are basic (phase 1: ``t`` replaces the tightest row's slack); the
    rows it violates get artificial variables, driven to zero by a textbook phase I and
    pivoted out before the real objective is optimized. Entering and leaving variables
    follow Bland's rule, so degenerate (tied, parallel) columns cannot make it cycle.

    Returns ``(w (K,), objective, duals (N + 1,), status)``: ``duals[:N]`` are the cost
    multipliers ``lambda >= 0`` and ``duals[N]`` the convexity dual ``nu``. ``status`` is
    ``MASTER_OK`` only when the final basis passes an independent optimality check
    (primal feasibility of the re-solved basic solution, every reduced cost
    ``<= 1e-9 scale``, ``scale`` the largest entry of the data and at least 1);
    otherwise ``MASTER_FAILED`` and the caller falls back to HiGHS. Where the
    optimum is not unique (tied or parallel columns) it is one of the optimal vertices,
    not necessarily the one HiGHS would return.
    """
    K, N = costs.shape
    m = N + 1
    n = K + N + (2 if phase1 else 0)  # structural + slack (+ t+, t-) columns
    Amat, cost, rhs, scale = _standard_form(costs, v, b, phase1)
    basis, n_art = _crash_basis(Amat, costs, b, phase1, n)
    ok, is_basic, xB, y = _simplex(Amat, cost, rhs, scale, basis, n_art, n)
    if not ok or not _is_optimal(Amat, cost, basis, is_basic, xB, y, n, scale):
        return np.zeros(K), 0.0, np.zeros(m), MASTER_FAILED
    w = np.zeros(K)
    obj = 0.0
    for i in range(m):
        j = basis[i]
        obj += cost[j] * xB[i]
        if j < K:
            w[j] = xB[i]
    return w, obj, y, MASTER_OK


__all__ = ["MASTER_FAILED", "MASTER_OK", "master_lp"]
