"""The certificate rule shared by every column-generation loop, and the loop's phases on a small
model whose optimum is worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from cmdp_rl.planning.colgen import Outcome, certified, plan_of, run_colgen
from cmdp_rl.planning.solve import ColumnPool


def _outcome(status: str, bound: float, gap_tol: float = 1e-6) -> Outcome:
    return Outcome(status, np.ones(1), np.zeros(1), math.nan, bound, 0.0, 3, gap_tol)


def test_certified_gap_and_status() -> None:
    assert certified(_outcome("optimal", 2.0 + 5e-7), 2.0) == ("optimal", pytest.approx(5e-7))
    status, gap = certified(_outcome("optimal", 2.0 + 2e-6), 2.0)
    assert status == "uncertified" and gap == pytest.approx(2e-6)
    assert certified(_outcome("optimal", 1.5), 2.0) == ("optimal", 0.0)  # a bound below the value: gap 0
    status, gap = certified(_outcome("infeasible", math.nan), 2.0)
    assert status == "infeasible" and math.isnan(gap)


def _two_arm_pool() -> ColumnPool:
    """One state, two actions, H = 1: action 0 earns 1 at cost 0, action 1 earns 3 at cost 2."""
    K = sp.csr_array(np.ones((2, 1)))
    return ColumnPool(K, np.array([[1.0, 3.0]]), np.array([[[0.0, 2.0]]]), 0, 1)


@pytest.mark.parametrize(("c_bar", "value"), [(1.0, 2.0), (0.5, 1.5), (2.0, 3.0)])
def test_run_colgen_mixes_the_two_arms(c_bar: float, value: float) -> None:
    # max w0 + 3 w1 s.t. 2 w1 <= c_bar, w0 + w1 = 1: w1 = min(c_bar / 2, 1), value 1 + 2 w1
    pool = _two_arm_pool()
    out = run_colgen(pool, np.array([c_bar]), 1e-9)
    plan = plan_of(pool, out, np.array([c_bar]))
    assert plan.status == "optimal" and plan.value == pytest.approx(value, abs=1e-12)
    assert plan.policy[0, 0] == pytest.approx([1.0 - (value - 1.0) / 2.0, (value - 1.0) / 2.0], abs=1e-12)
    assert plan.gap <= 1e-9


def test_run_colgen_says_infeasible_below_the_least_cost() -> None:
    # every policy costs at least 0: a negative threshold cannot be met; the plan of least excess
    # plays the free arm
    pool = _two_arm_pool()
    out = run_colgen(pool, np.array([-0.5]), 1e-9)
    plan = plan_of(pool, out, np.array([-0.5]))
    assert plan.status == "infeasible" and math.isnan(plan.gap)
    assert plan.costs == pytest.approx([0.0]) and plan.max_excess == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("c_bar", "skipped", "status"),
    [(1.0, True, "optimal"), (0.5, True, "optimal"), (2.0, False, "optimal"), (5.0, False, "optimal"),
     (-1.0, False, "infeasible")],
)  # fmt: skip
def test_the_largest_cost_sweep_runs_only_when_a_threshold_may_reach_it(
    c_bar: float, skipped: bool, status: str
) -> None:
    """The two arms cost 0 and 2 (the seed columns): a threshold below 2 binds whatever the largest
    cost is, so its sweep is skipped; at or above 2 (slack) or below the least cost (infeasible,
    the thresholds are translated within the range) it runs. Either way the outcome is that of a
    pool seeded with the largest cost first, one sweep apart."""
    lazy = _two_arm_pool()
    out = run_colgen(lazy, np.array([c_bar]), 1e-9)
    eager = _two_arm_pool()
    eager.seed()
    assert eager.max_costs is not None and eager.max_costs.tolist() == [2.0]
    ref = run_colgen(eager, np.array([c_bar]), 1e-9)
    assert (lazy.max_costs is None) == skipped and eager.sweeps - lazy.sweeps == int(skipped)
    assert out.status == ref.status == status
    for a, b in [(out.w, ref.w), (out.lam, ref.lam), ([out.gap, out.bound, out.t], [ref.gap, ref.bound, ref.t])]:
        assert np.array_equal(a, b, equal_nan=True)
