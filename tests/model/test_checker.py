"""A model checker's raw model as a CMDP (no stormpy needed): ragged choices as unavailable actions,
rewards and thresholds in the model's units, the start, label rewards, and the way back (raw_of_cmdp)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from cmdp_rl import solve
from cmdp_rl.model.checker import checker_cmdp, raw_of_cmdp
from cmdp_rl.model.umb import CheckerModel
from cmdp_rl.plumbing.errors import CMDPInputError


def small() -> CheckerModel:
    """State 0: choices go (to 1) and stay; state 1: one choice to 2; state 2 absorbing. Two
    initial states (0 and 1); reward 'gain' 4 for go, 2 for stay; 'risk' -1..3."""
    kernel = sp.csr_array(np.array([[0, 1, 0], [1, 0, 0], [0, 0, 1], [0, 0, 1.0]]))
    return CheckerModel(
        choices=np.array([0, 2, 3, 4]),
        kernel=kernel,
        rewards={"gain": np.array([4.0, 2.0, 0.0, 0.0]), "risk": np.array([3.0, -1.0, 0.0, 0.0])},
        labels={"init": np.array([True, True, False]), "end": np.array([False, False, True])},
        initial=np.array([True, True, False]),
        action_names=np.array(["go", "stay", "", ""]),
    )


def test_fewer_choices_are_unavailable_actions_not_padding() -> None:
    m = checker_cmdp(small(), "gain", ["risk"], H=2, c_bar=[1.0])
    assert (m.S, m.A) == (3, 2)
    assert m.actions is not None and m.actions.tolist() == [[True, True], [True, False], [True, False]]
    assert m.nnz == 4  # one kernel row per choice: the unavailable pairs' rows are empty
    assert np.array_equal(m.K.toarray()[[2, 3]], [[0, 0, 1], [0, 0, 0]])  # state 1: its one choice
    assert m.action_names.tolist() == [["go", "stay"], ["", ""], ["", ""]]
    assert "choices" not in m.meta
    assert m.rho.tolist() == [0.5, 0.5, 0.0]


def test_rewards_costs_and_thresholds_stay_in_the_models_units() -> None:
    m = checker_cmdp(small(), "gain", ["risk"], H=2, c_bar=[0.5])
    assert np.allclose(m.r, [[4.0, 2.0], [0.0, 0.0], [0.0, 0.0]])
    assert np.allclose(m.c[0], [[3.0, -1.0], [0.0, 0.0], [0.0, 0.0]])
    assert m.c_bar.tolist() == [0.5]
    # by hand (H = 2, model units): from state 0 the plans are go (value 4, risk 3), stay-go (6, 2)
    # and stay-stay (4, -2); from state 1 everything is 0. The uniform start halves both, so
    # risk <= 0.5 means risk <= 1 from state 0: 3/4 stay-go + 1/4 stay-stay, value 5.5, halved 2.75
    got = solve(m)
    assert got.value == pytest.approx(2.75, abs=1e-9)
    assert got.costs[0] == pytest.approx(0.5, abs=1e-9)
    disc = checker_cmdp(small(), "gain", ["risk"], gamma=0.5, c_bar=[0.0])
    assert disc.c_bar.tolist() == [0.0] and disc.gamma == 0.5


def test_labels_as_rewards_and_the_name_rules() -> None:
    raw = small()
    m = checker_cmdp(raw, "label:end", H=3)
    assert m.r[:, 0].tolist() == [0.0, 0.0, 1.0]
    assert checker_cmdp(raw, "end", H=3).r.tolist() == m.r.tolist()  # not a structure: the label
    with pytest.raises(CMDPInputError, match=r"costs\[0\]: the model has no reward structure or label 'x' "):
        checker_cmdp(raw, "gain", ["x"], H=3, c_bar=[1])
    with pytest.raises(CMDPInputError, match="c_bar: required"):
        checker_cmdp(raw, "gain", ["risk"], H=3)
    with pytest.raises(CMDPInputError, match="c_bar: one threshold per cost"):
        checker_cmdp(raw, "gain", ["risk"], H=3, c_bar=[1, 2])
    with pytest.raises(CMDPInputError, match="H, gamma: give exactly one"):
        checker_cmdp(raw, "gain")


def test_one_initial_state_is_an_index_and_the_way_back_is_the_raw_model() -> None:
    raw = small()
    one = CheckerModel(
        raw.choices, raw.kernel, raw.rewards, raw.labels, np.array([True, False, False]), raw.action_names
    )
    m = checker_cmdp(one, "gain", ["risk"], H=2, c_bar=[0.5])
    assert m.s0 == 0
    back = raw_of_cmdp(m)
    assert np.array_equal(back.choices, raw.choices) and (back.kernel != raw.kernel).nnz == 0
    assert np.allclose(back.rewards["reward"], raw.rewards["gain"])
    assert np.allclose(back.rewards["cost_0"], raw.rewards["risk"])
    assert back.action_names.tolist() == raw.action_names.tolist()
    assert back.initial.tolist() == [True, False, False]
    with pytest.raises(CMDPInputError, match="not uniform on its support"):
        raw_of_cmdp(m.replace(s0=np.array([0.25, 0.75, 0.0])))
