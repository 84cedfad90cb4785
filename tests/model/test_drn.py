"""DRN text written with NumPy: exactly the lines Storm's format has, for a hand-made model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_checker import small

from cmdp_rl.model.checker import checker_cmdp
from cmdp_rl.model.drn import drn_text, to_drn
from cmdp_rl.model.umb import CheckerModel
from cmdp_rl.plumbing.errors import CMDPInputError


def test_the_text_of_a_small_model() -> None:
    raw = small()
    assert drn_text(raw).splitlines() == [
        "// Exported by cmdp-rl",
        "@type: MDP",
        "@value_type: double",
        "@parameters",
        "",
        "@reward_models",
        "gain risk",
        "@nr_states",
        "3",
        "@nr_choices",
        "4",
        "@model",
        "state 0 [0, 0] init",
        "\taction go [4.0, 3.0]",
        "\t\t1 : 1.0",
        "\taction stay [2.0, -1.0]",
        "\t\t0 : 1.0",
        "state 1 [0, 0] init",
        "\taction __NOLABEL__ [0.0, 0.0]",
        "\t\t2 : 1.0",
        "state 2 [0, 0] end",
        "\taction __NOLABEL__ [0.0, 0.0]",
        "\t\t2 : 1.0",
    ]


def test_to_drn_writes_the_imported_model_in_its_own_units(tmp_path: Path) -> None:
    m = checker_cmdp(small(), "gain", ["risk"], H=2, c_bar=[0.5])
    to_drn(m, tmp_path / "m.drn")
    lines = (tmp_path / "m.drn").read_text().splitlines()
    assert lines[6] == "reward cost_0" and "\taction go [4.0, 3.0]" in lines and lines[10] == "4"


def test_names_that_are_not_one_token_are_refused() -> None:
    raw = small()
    spaced = CheckerModel(
        raw.choices, raw.kernel, raw.rewards, {"two words": raw.initial}, raw.initial, raw.action_names
    )
    with pytest.raises(CMDPInputError, match="label 'two words' cannot be written in DRN"):
        drn_text(spaced)
    named = CheckerModel(
        raw.choices, raw.kernel, raw.rewards, raw.labels, raw.initial, np.array(["go", "st ay", "", ""])
    )
    with pytest.raises(CMDPInputError, match="action name 'st ay'"):
        drn_text(named)
