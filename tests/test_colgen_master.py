"""The closed-form one-constraint master LP of column generation, against HiGHS."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

from cmdp_rl.planning.colgen import solve_one_row_master
from cmdp_rl.planning.result import SolverError


def _random_master(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, float]:
    K = int(rng.integers(1, 15))
    scale = float(rng.choice([1.0, 10.0, 100.0]))
    v = rng.random(K) * scale
    c = rng.random(K) * float(rng.choice([1.0, 5.0]))
    if rng.random() < 0.3:  # ties and duplicate columns, as degenerate column pools produce
        v[rng.integers(K)] = v[0]
        c[rng.integers(K)] = c[0]
    if rng.random() < 0.2:  # columns on a common line (non-unique optimum)
        c = np.round(c, 1)
        v = 2.0 * c + 1.0
    if rng.random() < 0.3:  # the threshold exactly at a column's cost
        b = float(c[rng.integers(K)])
    else:
        b = float(rng.uniform(c.min() - 0.2, c.max() + 0.5))
    return v, c, b


def test_one_row_master_equals_highs_on_random_masters() -> None:
    rng = np.random.default_rng(2026)
    checked = infeasible = 0
    for _ in range(4000):
        v, c, b = _random_master(rng)
        K = v.size
        lp = linprog(-v, A_ub=[c], b_ub=[b], A_eq=[np.ones(K)], b_eq=[1.0], method="highs")
        if lp.status == 2:
            with pytest.raises(SolverError):
                solve_one_row_master(v, c, b)
            infeasible += 1
            continue
        assert lp.status == 0
        w, obj, lam, nu = solve_one_row_master(v, c, b)
        z = -lp.fun
        tol = 1e-9 * (1.0 + abs(z))
        assert obj == pytest.approx(z, abs=tol)
        # primal: a distribution meeting the threshold with that value
        assert (w >= 0).all() and w.sum() == pytest.approx(1.0, abs=1e-12)
        assert w @ c <= b + 1e-10 and w @ v == pytest.approx(obj, abs=tol)
        assert np.count_nonzero(w) <= 2
        # dual: feasible (every column on or below the line) and no duality gap
        assert lam >= 0.0
        assert np.all(v - lam * c - nu <= tol)
        assert nu + lam * b == pytest.approx(obj, abs=tol)
        # HiGHS' multiplier of the cost row gives the same objective bound
        lam_h = -float(lp.ineqlin.marginals[0])
        assert np.max(v - lam_h * c) + lam_h * b == pytest.approx(z, abs=tol)
        checked += 1
    assert checked > 3000 and infeasible > 10


def test_one_row_master_by_hand() -> None:
    # columns (cost, value): (0, 1), (2, 3), (4, 4); threshold 1: mix the first two half-half
    w, obj, lam, nu = solve_one_row_master(np.array([1.0, 3.0, 4.0]), np.array([0.0, 2.0, 4.0]), 1.0)
    np.testing.assert_allclose(w, [0.5, 0.5, 0.0])
    assert obj == pytest.approx(2.0) and lam == pytest.approx(1.0) and nu == pytest.approx(1.0)
    # a slack constraint: the best column, multiplier 0
    w, obj, lam, nu = solve_one_row_master(np.array([1.0, 3.0]), np.array([0.0, 2.0]), 5.0)
    np.testing.assert_array_equal(w, [0.0, 1.0])
    assert obj == 3.0 and lam == 0.0 and nu == 3.0
