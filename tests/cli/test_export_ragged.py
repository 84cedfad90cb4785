"""``cmdp-rl export`` and ``solve`` on a ragged model (a table whose states have different numbers of
actions): the mask is kept, and the optimum is the padded model's (issue 'real models', item 1)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cmdp_rl import CMDP
from cmdp_rl.cli import main

# state 0: actions 0 (stay, reward 0) and 1 (to state 1, reward 1, cost 1); state 1: action 0 only
TABLE = """state,action,next_state,prob,reward,cost_0
0,0,0,1,0,0
0,1,1,1,1,1
1,0,0,1,0.5,0
"""


def test_export_keeps_the_mask_of_a_table_and_of_a_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = tmp_path / "t.csv"
    table.write_text(TABLE)
    out = tmp_path / "m.npz"
    assert main(["export", str(table), str(out), "--horizon", "2", "--c-bar", "0.5", "--s0", "0"]) == 0
    assert "3 of 4 pairs available" in capsys.readouterr().out
    m = CMDP.load(out)
    assert m.actions.tolist() == [[True, True], [True, False]] and m.nnz == 3
    copy = tmp_path / "copy.npz"
    assert main(["export", str(out), str(copy)]) == 0
    assert np.array_equal(CMDP.load(copy).actions, m.actions)


def test_solve_on_a_ragged_table_gives_the_padded_optimum(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # by hand: x = P(go at step 0), y = P(stay, then go at step 1); value 1.5 x + y (going pays 1,
    # then state 1 pays 0.5), cost x + y <= 0.5: the optimum is x = 0.5, y = 0, value 0.75
    table = tmp_path / "t.csv"
    table.write_text(TABLE)
    code = main(["solve", str(table), "--horizon", "2", "--c-bar", "0.5", "--s0", "0", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["value"] == pytest.approx(0.75, abs=1e-9)
