"""Compact policies: a plan's columns and weights, evaluated without an (H, S, A) table."""

from __future__ import annotations

import numpy as np
import pytest

from cmdp_rl import CMDP, evaluate, random_cmdp, solve
from cmdp_rl.evaluation.mixture import (
    MixtureEvaluation,
    MixturePolicy,
    action_dtype,
    check_columns,
    evaluate_mixture,
    mixture_policy,
)
from cmdp_rl.plumbing.validation import CMDPInputError


def _one_hot(columns: np.ndarray, A: int) -> np.ndarray:
    """The deterministic table (..., S, A) of an action table (..., S)."""
    return np.eye(A)[columns.astype(np.int64)]


def _discounted(seed: int, S: int = 12, A: int = 3, N: int = 2) -> CMDP:
    """A dense discounted model whose thresholds sit half-way between the least-cost policy's costs
    and the unconstrained optimum's (Altman's LP): feasible, and usually binding."""
    base = random_cmdp(S, A, 5, N, seed, support=3).replace(gamma=0.9, c_bar=np.full(N, 10.0))
    free = solve(base, method="lp").costs
    least = solve(base.replace(r=1.0 - base.c.mean(axis=0)), method="lp").costs
    return base.replace(c_bar=least + 0.5 * (free - least))


def test_hand_solved_one_state_mixture() -> None:
    """One state, two actions, H = 2: action 0 earns reward 1, action 1 costs 1 per step. Always 0
    (weight 1/4) and always 1 (weight 3/4): value 1/4 * 2 = 0.5, cost 3/4 * 2 = 1.5."""
    m = CMDP(np.ones((1, 2, 1)), np.array([[1.0, 0.0]]), np.array([[[0.0, 1.0]]]), [2.0], 0, H=2)
    mix = mixture_policy(np.array([[[0], [0]], [[1], [1]]]), [0.25, 0.75], 2)
    ev = evaluate(m, mix)
    assert isinstance(ev, MixtureEvaluation)
    assert ev.value == pytest.approx(0.5, abs=1e-15)
    np.testing.assert_allclose(ev.costs, [1.5], atol=1e-15)
    np.testing.assert_allclose(ev.column_values, [2.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(ev.column_costs, [[0.0], [2.0]], atol=1e-15)


@pytest.mark.parametrize("layout", ["dense", "sparse"])
@pytest.mark.parametrize("seed", [2, 3, 4, 7])
def test_plan_mixture_equals_its_markov_table(layout: str, seed: int) -> None:
    """On the model it was solved for, the mixture of a fast plan has the value and costs of the
    randomized Markov table mixed by occupancy (the same occupancy), and of each column's own
    dense evaluation weighted (a second formulation)."""
    m = random_cmdp(15, 3, 6, 2, seed, support=4)
    m = m.to_sparse() if layout == "sparse" else m
    plan = solve(m, method="fast")
    assert plan.columns is not None and plan.weights is not None
    assert plan.columns.shape[0] >= 2  # a real mixture (these seeds' constraints bind)
    table = evaluate(m, plan.policy)
    ev = evaluate(m, plan)
    assert isinstance(ev, MixtureEvaluation)
    assert ev.value == pytest.approx(table.value, abs=1e-12)
    np.testing.assert_allclose(ev.costs, table.costs, atol=1e-12)
    one_by_one = [evaluate(m, _one_hot(col, m.A)) for col in plan.columns]
    assert ev.value == pytest.approx(sum(w * e.value for w, e in zip(plan.weights, one_by_one, strict=True)), abs=1e-12)
    assert ev.value == pytest.approx(plan.value, abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_discounted_plan_mixture_equals_its_stationary_table(seed: int) -> None:
    """Discounted: stationary (K, S) columns; the mixture's value and costs are those of the
    stationary table mixed by (normalized discounted) occupancy."""
    m = _discounted(seed)
    plan = solve(m, method="fast")
    assert plan.columns is not None and plan.columns.ndim == 2 and plan.columns.shape[0] >= 2
    mix = MixturePolicy.of_plan(plan)
    assert mix.stationary and mix.columns.dtype == np.uint8
    table = evaluate(m, plan.policy)
    ev = evaluate(m, mix)
    assert ev.value == pytest.approx(table.value, rel=1e-9)
    np.testing.assert_allclose(ev.costs, table.costs, rtol=1e-9)
    assert evaluate(m.to_sparse(), mix).value == pytest.approx(table.value, rel=1e-9)


def test_action_dtype_is_the_smallest_unsigned_fit() -> None:
    assert action_dtype(1) == np.uint8 and action_dtype(256) == np.uint8
    assert action_dtype(257) == np.uint16 and action_dtype(65536) == np.uint16
    assert action_dtype(65537) == np.uint32


def test_mixture_keeps_its_inputs_and_normalizes_the_weights() -> None:
    cols = np.array([[[0, 1]], [[1, 1]]], dtype=np.int64)
    w = np.array([0.5, 0.5 + 5e-10])
    mix = mixture_policy(cols, w, 2)
    assert mix.columns.dtype == np.uint8 and mix.weights.sum() == pytest.approx(1.0, abs=1e-15)
    assert cols.dtype == np.int64 and w[1] == 0.5 + 5e-10
    assert "K=2" in repr(mix) and mix.nbytes == 4 + 16


@pytest.mark.parametrize(
    ("columns", "weights", "A", "match"),
    [
        ([[[0.0]]], [1.0], 2, "columns: must hold integer actions"),
        ([0, 1], [1.0], 2, r"columns: expected shape \(K, H, S\)"),
        ([[[2]]], [1.0], 2, r"columns\[0, 0, 0\]: an action must be in 0 .. 1"),
        ([[[-1]]], [1.0], None, r"columns\[0, 0, 0\]: an action must be >= 0"),
        ([[[0]], [[1]]], [1.0], 2, r"weights: expected shape \(2,\)"),
        ([[[0]], [[1]]], [1.5, -0.5], 2, r"weights\[1\]: must be non-negative"),
        ([[[0]], [[1]]], [0.5, 0.6], 2, "weights: must sum to 1"),
        ([[[0]]], [1.0], 0, "A: the number of actions"),
    ],
)
def test_bad_mixtures_are_refused(columns: object, weights: object, A: int | None, match: str) -> None:
    with pytest.raises(CMDPInputError, match=match):
        mixture_policy(columns, weights, A)


def test_a_mixture_that_does_not_fit_the_model_is_refused() -> None:
    m = random_cmdp(4, 2, 3, 1, 0)
    with pytest.raises(CMDPInputError, match=r"policy.columns\[0, 1, 2\]: plays action 2, the model has A = 2"):
        evaluate(m, mixture_policy(np.array([[[0] * 4, [0, 0, 2, 0], [0] * 4]]), [1.0]))
    with pytest.raises(CMDPInputError, match=r"expected columns of shape \(K, 3, 4\)"):
        evaluate(m, mixture_policy(np.zeros((1, 2, 4), dtype=int), [1.0]))
    with pytest.raises(CMDPInputError, match="must be stationary"):
        evaluate_mixture(m.replace(gamma=0.9), mixture_policy(np.zeros((1, 3, 4), dtype=int), [1.0]))
    with pytest.raises(CMDPInputError, match="kernel: a mixture"):
        evaluate(m, mixture_policy(np.zeros((1, 3, 4), dtype=int), [1.0]), kernel=m.P)


def test_a_plan_without_columns_is_evaluated_by_its_table() -> None:
    m = random_cmdp(6, 2, 4, 1, 5)
    plan = solve(m, method="lp")
    assert plan.columns is None
    ev = evaluate(m, plan)
    assert ev.value == pytest.approx(evaluate(m, plan.policy).value, abs=1e-15)
    with pytest.raises(CMDPInputError, match="holds no columns"):
        MixturePolicy.of_plan(plan)


def test_check_columns_names_the_rule_broken() -> None:
    """Columns (K, H = 2, S = 3) checked against A = 2 and a mask forbidding action 1 in state 2."""
    ok = mixture_policy(np.zeros((1, 2, 3), dtype=np.uint8), [1.0])
    check_columns("b", ok, (2, 3), 2, None)
    with pytest.raises(CMDPInputError, match=r"b: expected columns of shape \(K, 3, 3\), got \(1, 2, 3\)"):
        check_columns("b", ok, (3, 3), 2, None)
    high = mixture_policy(np.full((1, 2, 3), 2, dtype=np.uint8), [1.0])
    with pytest.raises(CMDPInputError, match=r"b.columns\[0, 0, 0\]: plays action 2, the model has A = 2"):
        check_columns("b", high, (2, 3), 2, None)
    mask = np.ones((3, 2), dtype=bool)
    mask[2, 1] = False
    cols = np.zeros((1, 2, 3), dtype=np.uint8)
    cols[0, 1, 2] = 1
    with pytest.raises(CMDPInputError, match="action 1 is not available in state 2"):
        check_columns("b", mixture_policy(cols, [1.0]), (2, 3), 2, mask)
