"""The restricted master LP: the compiled simplex and its HiGHS fallback give the LP's optimum
(checked against scipy's ``linprog``); rows left out of the master get multiplier 0."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy.optimize import linprog

from cmdp_rl.kernels.master_lp import MASTER_FAILED
from cmdp_rl.planning import master


def _lp_value(costs: np.ndarray, values: np.ndarray, b: np.ndarray) -> float:
    K = values.size
    res = linprog(-values, A_ub=costs.T, b_ub=b, A_eq=np.ones((1, K)), b_eq=[1.0], bounds=(0, None), method="highs")
    assert res.status == 0
    return float(-res.fun)


def _instance() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    costs = rng.random((8, 3)) * 4.0
    values = rng.random(8) * 10.0
    b = np.array([2.0, 2.5, 100.0])  # the third row is slack
    return costs, values, b


@pytest.mark.parametrize("compiled", [True, False])
def test_solve_master_reaches_the_lp_optimum(compiled: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    costs, values, b = _instance()
    if not compiled:  # the compiled simplex gives up: HiGHS takes over

        def failing(*args: Any) -> Any:
            return np.zeros(costs.shape[0]), 0.0, np.zeros(b.size + 1), MASTER_FAILED

        monkeypatch.setattr(master, "master_lp", failing)
    w, obj, lam, nu = master.solve_master(costs, values, b, False)
    assert obj == pytest.approx(_lp_value(costs, values, b), abs=1e-9)
    assert w.min() >= -1e-12 and w.sum() == pytest.approx(1.0) and np.all(costs.T @ w <= b + 1e-9)
    assert w @ values == pytest.approx(obj, abs=1e-9)
    assert lam.min() >= 0.0 and lam[2] == 0.0  # a slack row has no price
    assert lam @ b + nu == pytest.approx(obj, abs=1e-9)  # strong duality


def test_rows_left_out_get_multiplier_zero() -> None:
    costs, values, b = _instance()
    rows = np.array([True, False, True])
    w, obj, lam, _ = master.solve_master(costs, values, b, False, rows)
    assert w.sum() == pytest.approx(1.0) and np.all(costs[:, rows].T @ w <= b[rows] + 1e-9)
    assert obj == pytest.approx(_lp_value(costs[:, rows], values, b[rows]), abs=1e-9)
    assert lam[1] == 0.0 and lam.shape == (3,)


def test_phase1_gives_the_least_worst_excess() -> None:
    costs = np.array([[3.0, 0.0], [0.0, 3.0]])
    # the even mix costs (1.5, 1.5): worst excess 0.5 over thresholds (1, 1)
    w, t, lam, _ = master.solve_master(costs, np.zeros(2), np.array([1.0, 1.0]), True)
    assert t == pytest.approx(0.5) and w == pytest.approx([0.5, 0.5]) and lam == pytest.approx([0.5, 0.5])
