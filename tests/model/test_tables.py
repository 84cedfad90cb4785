"""Transition tables: round trip, averaging of per-outcome rewards and costs, one-line errors."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from cmdp_rl import CMDP, CMDPInputError, random_cmdp, solve


def test_round_trip_equals_the_model(tmp_path) -> None:
    m = random_cmdp(7, 3, 5, 2, seed=4, support=3)
    m.to_table(tmp_path / "t.csv")
    back = CMDP.from_table(tmp_path / "t.csv", c_bar=m.c_bar, s0=m.s0, H=m.H)
    assert np.array_equal(back.P, m.P)  # probabilities are written exactly (repr of floats)
    assert np.allclose(back.r, m.r, rtol=1e-14, atol=0) and np.allclose(back.c, m.c, rtol=1e-14, atol=0)
    assert solve(back).value == pytest.approx(solve(m).value, rel=1e-12)


def test_per_outcome_values_are_averaged_by_hand(tmp_path) -> None:
    # pair (0, 0): next 0 w.p. 0.25 (reward 1, cost 0.2) and next 1 w.p. 0.75 (reward 0, cost 1)
    rows = [
        "state,action,next_state,prob,reward,cost_0",
        "0,0,0,0.25,1,0.2",
        "0,0,1,0.75,0,1",
        "0,1,1,1,0.5,0",
        "1,0,1,1,0,0",
        "1,1,0,0.5,0,0",
        "1,1,1,0.5,0,0",
    ]
    path = tmp_path / "t.csv"
    path.write_text("\n".join(rows) + "\n")
    m = CMDP.from_table(path, c_bar=[0.5], s0=0, H=3)
    assert m.P[0, 0].tolist() == [0.25, 0.75] and m.P[1, 1].tolist() == [0.5, 0.5]
    assert m.r[0, 0] == pytest.approx(0.25) and m.r[0, 1] == pytest.approx(0.5)
    assert m.c[0, 0, 0] == pytest.approx(0.25 * 0.2 + 0.75)


@pytest.mark.parametrize(
    "rows, match",
    [
        (["state,action,next_state", "0,0,0"], r"missing column\(s\) \['prob'\]"),
        (["state,action,next_state,prob", "0,0,0,0.5", "0,0,1,0.4", "1,0,1,1"], r"\(state 0, action 0\) sum to"),
        (["state,action,next_state,prob", "0,0,2,1", "2,1,2,1"], r"state 1 has no rows, so no available action"),
        (["state,action,next_state,prob", "0,0,x,1"], "non-number 'x'"),
        (["state,action,next_state,prob,bonus", "0,0,0,1,1"], r"unknown column\(s\) \['bonus'\]"),
        (["state,action,next_state,prob", "-1,0,0,1"], "non-negative integer"),
    ],
)
def test_malformed_tables_are_one_line_errors(tmp_path, rows, match) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(CMDPInputError, match=match) as ex:
        CMDP.from_table(path, H=2)
    assert "\n" not in str(ex.value)


def test_table_cli_solve_of_a_written_table_model(tmp_path) -> None:
    m = random_cmdp(5, 2, 4, 1, seed=1)
    m.to_table(tmp_path / "t.csv")
    CMDP.from_table(tmp_path / "t.csv", c_bar=m.c_bar, s0=m.s0, H=4).save(tmp_path / "t.npz")
    out = subprocess.run(
        [sys.executable, "-m", "cmdp_rl", "solve", str(tmp_path / "t.npz"), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode in (0, 1) and "status" in out.stdout
