"""The compiled master-LP simplex against HiGHS (scipy's ``linprog``) on random, often degenerate
masters, and on small cases solved by hand."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy.optimize import linprog

from cmdp_rl.kernels.master_lp import MASTER_FAILED, MASTER_OK, master_lp


def _random_master(rng: np.random.Generator, N: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(costs (K, N), values (K,), b (N,))``, often degenerate: integer ties, duplicated
    columns, values linear in the costs (a face of dual optima), thresholds equal to a column."""
    K = int(rng.integers(1, 25))
    kind = int(rng.integers(0, 5))
    if kind == 0:
        C = rng.random((K, N)) * 10
        v = rng.random(K) * 10
    elif kind == 1:
        C = rng.integers(0, 4, (K, N)).astype(float)
        v = rng.integers(0, 4, K).astype(float)
    elif kind == 2:
        base = rng.random((max(1, K // 3), N))
        idx = rng.integers(0, base.shape[0], K)
        C, v = base[idx], rng.random(base.shape[0])[idx]
    elif kind == 3:
        C = rng.random((K, N))
        v = C @ rng.random(N)
    else:  # one column repeated: every basis is degenerate
        C = np.tile(rng.random(N), (K, 1))
        v = np.full(K, rng.random())
    b = C[rng.integers(0, K)].copy() if rng.random() < 0.3 else rng.random(N) * C.max() * 1.2 - 0.1
    return C, v, b


def _reference(C: np.ndarray, v: np.ndarray, b: np.ndarray, phase1: bool) -> Any:
    K, N = C.shape
    if phase1:  # min t  s.t.  C w - t <= b, sum w = 1
        return linprog(
            np.r_[np.zeros(K), 1.0],
            A_ub=np.c_[C.T, -np.ones(N)],
            b_ub=b,
            A_eq=np.r_[np.ones(K), 0.0][None],
            b_eq=[1.0],
            bounds=[(0, None)] * K + [(None, None)],
            method="highs",
        )
    return linprog(-v, A_ub=C.T, b_ub=b, A_eq=np.ones((1, K)), b_eq=[1.0], bounds=(0, None), method="highs")


def _check_certificate(C: np.ndarray, v: np.ndarray, b: np.ndarray, phase1: bool, w: Any, obj: float, y: Any) -> None:
    """Primal feasibility, dual feasibility and a zero duality gap (to 1e-9 relative)."""
    K, N = C.shape
    sc = 1.0 + np.abs(C).max() + np.abs(v).max() + np.abs(b).max()
    lam, nu = y[:N], y[N]
    assert lam.min() >= -1e-9
    assert w.min() >= -1e-10 and abs(w.sum() - 1.0) <= 1e-9
    t = -obj if phase1 else 0.0
    assert np.all(C.T @ w <= b + t + 1e-9 * sc)
    gain = np.zeros(K) if phase1 else v
    assert np.all(gain - C @ lam - nu <= 1e-9 * sc)  # no column prices out
    assert abs(lam @ b + nu - obj) <= 1e-9 * sc  # dual objective = primal objective
    if phase1:
        assert abs(lam.sum() - 1.0) <= 1e-9


@pytest.mark.slow
@pytest.mark.parametrize("N", [1, 2, 3])
def test_dense_master_matches_highs_on_random_masters(N: int) -> None:
    rng = np.random.default_rng(100 + N)
    checked = infeasible = 0
    for _ in range(1000):
        C, v, b = _random_master(rng, N)
        phase1 = bool(rng.random() < 0.3)
        ref = _reference(C, v, b, phase1)
        w, obj, y, status = master_lp(C, v, b, phase1)
        if ref.status == 2:  # phase 2 with no feasible mixture: the dense solver must not claim one
            assert not phase1 and status == MASTER_FAILED
            infeasible += 1
            continue
        assert ref.status == 0 and status == MASTER_OK
        sc = 1.0 + np.abs(C).max() + np.abs(v).max() + np.abs(b).max()
        assert obj == pytest.approx(-ref.fun, abs=1e-9 * sc)
        _check_certificate(C, v, b, phase1, w, obj, y)
        checked += 1
    assert checked > 500 and infeasible > 20


def test_dense_master_small_cases() -> None:
    # N = 1, two columns straddling the threshold: the optimum mixes them
    C = np.array([[0.0], [2.0]])
    v = np.array([1.0, 3.0])
    w, obj, y, status = master_lp(C, v, np.array([1.0]), False)
    assert status == MASTER_OK and np.allclose(w, [0.5, 0.5]) and obj == pytest.approx(2.0)
    assert y[0] == pytest.approx(1.0) and y[1] == pytest.approx(1.0)
    # a single infeasible column: phase 1 returns its excess, phase 2 reports failure
    C1 = np.array([[3.0, 1.0]])
    w, obj, y, status = master_lp(C1, np.array([1.0]), np.array([1.0, 2.0]), True)
    assert status == MASTER_OK and obj == pytest.approx(-2.0) and w[0] == pytest.approx(1.0)
    assert np.allclose(y[:2], [1.0, 0.0])
    assert master_lp(C1, np.array([1.0]), np.array([1.0, 2.0]), False)[3] == MASTER_FAILED
    # many identical columns and a tight threshold (fully degenerate)
    C = np.ones((12, 3))
    w, obj, y, status = master_lp(C, np.ones(12), np.ones(3), False)
    assert status == MASTER_OK and obj == pytest.approx(1.0) and w.sum() == pytest.approx(1.0)
