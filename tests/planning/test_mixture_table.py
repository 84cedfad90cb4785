"""The dense Markov table of a compact policy."""

from __future__ import annotations

import numpy as np
import pytest

from cmdp_rl import evaluate, random_cmdp, solve
from cmdp_rl.evaluation.mixture import mixture_policy
from cmdp_rl.planning.mixture_table import deterministic_table, markov_table, table_mixture
from cmdp_rl.plumbing.validation import CMDPInputError


@pytest.mark.parametrize("sparse", [False, True])
def test_markov_table_is_the_plans_table(sparse: bool) -> None:
    """The table mixed by occupancy equals the plan's own policy (mix_plan's, a second
    implementation) and has the mixture's value and costs on the model."""
    m = random_cmdp(12, 3, 5, 2, 3, support=3)
    m = m.to_sparse() if sparse else m
    plan = solve(m, method="fast")
    mix = mixture_policy(plan.columns, plan.weights, m.A)
    table = markov_table(m, mix)
    np.testing.assert_allclose(table, plan.policy, atol=1e-12)
    ev = evaluate(m, table)
    assert ev.value == pytest.approx(evaluate(m, mix).value, abs=1e-12)
    np.testing.assert_allclose(ev.costs, evaluate(m, mix).costs, atol=1e-12)


def test_deterministic_table_by_hand() -> None:
    """Columns 0 (weight 1) and 1 (weight 0): the one-hot table of column 0; two columns of
    positive weight that differ have no model-free table."""
    cols = np.array([[[1, 0]], [[0, 0]]])
    got = deterministic_table(mixture_policy(cols, [1.0, 0.0]), 3)
    np.testing.assert_array_equal(got, [[[0, 1, 0], [1, 0, 0]]])
    with pytest.raises(CMDPInputError, match="baseline: a mixture of 2 different deterministic policies"):
        deterministic_table(mixture_policy(cols, [0.5, 0.5]), 3, "baseline")
    with pytest.raises(CMDPInputError, match="A = 1"):
        deterministic_table(mixture_policy(cols, [1.0, 0.0]), 1)


def test_refused_above_the_memory_limit_before_building() -> None:
    m = random_cmdp(6, 2, 4, 1, 0)
    mix = mixture_policy(np.zeros((1, 4, 6), dtype=np.int64), [1.0], 2)
    with pytest.raises(CMDPInputError, match=r"needs about .* above the limit of 100 B"):
        markov_table(m, mix, max_memory=100)
    with pytest.raises(CMDPInputError, match="policy: expected columns of shape"):
        markov_table(m, mixture_policy(np.zeros((1, 3, 6), dtype=np.int64), [1.0], 2))


def test_a_deterministic_table_is_its_one_column() -> None:
    """The one-hot table of known actions (H = 2, S = 3, A = 3) gives back those actions as the one
    column of weight 1, and ``deterministic_table`` gives back the table; a randomized row is refused."""
    actions = np.array([[0, 2, 1], [1, 1, 0]])
    table = np.zeros((2, 3, 3))
    np.put_along_axis(table, actions[..., None], 1.0, axis=-1)
    mix = table_mixture(table)
    assert mix.columns.dtype == np.uint8 and mix.columns.tolist() == [actions.tolist()]
    np.testing.assert_array_equal(mix.weights, [1.0])
    np.testing.assert_array_equal(deterministic_table(mix, 3), table)
    table[1, 2] = [0.5, 0.5, 0.0]
    with pytest.raises(CMDPInputError, match="pol: a randomized Markov table"):
        table_mixture(table, "pol")
    with pytest.raises(CMDPInputError, match=r"expected an \(H, S, A\) or \(S, A\) table"):
        table_mixture(np.ones(3))
