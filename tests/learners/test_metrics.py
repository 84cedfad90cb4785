"""The exact scoring of a policy against the optimal plan, compact policies included."""

from __future__ import annotations

import numpy as np
import pytest

from cmdp_rl import random_cmdp, solve
from cmdp_rl.evaluation.mixture import mixture_policy
from cmdp_rl.learners import Scorer


def test_compact_plan_scores_as_its_table() -> None:
    """The optimal plan scores gap 0 and violation 0 given as its plan, its mixture or its Markov
    table (the table: the learners' path, numbers unchanged)."""
    m = random_cmdp(10, 3, 5, 2, 2, support=3)
    plan = solve(m, method="fast")
    scorer = Scorer.for_model(m)
    mix = mixture_policy(plan.columns, plan.weights, m.A)
    for given in (plan, mix):
        gap, viol = scorer(given)
        assert gap == pytest.approx(0.0, abs=1e-9) and viol == pytest.approx(0.0, abs=1e-9)
        value, costs = scorer.values(given)
        table_value, table_costs = scorer.values(plan.policy)
        assert value == pytest.approx(table_value, abs=1e-12)
        np.testing.assert_allclose(costs, table_costs, atol=1e-12)
