"""Models on the command line (``cmdp_rl.cli.common.load_model``): a CSV/Parquet transition table is a
MODEL for every command that takes one, with ``--horizon``/``--gamma``, ``--c-bar`` and ``--s0`` for
what a table does not carry; a missing one is a one-line refusal naming it, and a model that
carries them refuses them (issue 'real models', item 6)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from cmdp_rl import CMDP, solve
from cmdp_rl.cli import main

#: two states, two actions; ``run`` in state 0 pays 1, stays with probability 0.9 and costs nothing,
#: ``fix`` costs 1 and stays; state 1 (broken) pays nothing, ``fix`` there returns to 0 and costs 1
TABLE = """state,action,next_state,prob,reward,cost_0
0,0,0,0.9,1,0
0,0,1,0.1,1,0
0,1,0,1,0,1
1,0,1,1,0,0
1,1,0,1,0,1
"""


def _by_hand(c_bar: float, s0: int, **length: float) -> CMDP:
    """The table's model written out as arrays (not read from the table)."""
    P = np.zeros((2, 2, 2))
    P[0, 0] = [0.9, 0.1]
    P[0, 1, 0] = P[1, 0, 1] = P[1, 1, 0] = 1.0
    r = np.array([[1.0, 0.0], [0.0, 0.0]])
    c = np.array([[[0.0, 1.0], [0.0, 1.0]]])
    return CMDP(P, r, c, [c_bar], s0, **length)


@pytest.fixture()
def table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "maint.csv").write_text(TABLE)
    return tmp_path / "maint.csv"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("length", "fill"), [({"H": 6}, ["--horizon", "6"]), ({"gamma": 0.8}, ["--gamma", "0.8"])], ids=["H", "gamma"]
)
def test_solve_and_export_read_a_table_with_the_options(
    table: Path, capsys: pytest.CaptureFixture[str], length: dict, fill: list[str]
) -> None:
    code, out, err = _run(capsys, "solve", "maint.csv", *fill, "--c-bar", "0.5", "--s0", "1", "--json")
    want = solve(_by_hand(0.5, 1, **length))
    assert code == 0 and err == "", err
    assert json.loads(out)["value"] == pytest.approx(want.value, abs=1e-9)
    code, _, _ = _run(capsys, "export", "maint.csv", "m.npz", *fill, "--c-bar", "0.5", "--s0", "1")
    exported, hand = CMDP.load("m.npz"), _by_hand(0.5, 1, **length)
    assert code == 0 and (exported.H, exported.gamma, exported.s0) == (hand.H, hand.gamma, 1)
    np.testing.assert_array_equal(exported.P, hand.P)
    np.testing.assert_array_equal(exported.c_bar, [0.5])


def test_every_model_command_takes_a_table(table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fill = ["--horizon", "4", "--c-bar", "1", "--s0", "0"]
    np.save("policy.npy", np.full((4, 2, 2), 0.5))
    np.save("counts.npy", np.full((2, 2, 2), 50, dtype=np.int64))
    runs = [
        ["certify", "maint.csv", *fill, "--policy", "policy.npy", "--counts", "counts.npy"],
        ["frontier", "maint.csv", *fill, "--points", "3", "--out", "front"],
        ["learn", "maint.csv", *fill, "--episodes", "3"],
        ["pg", "maint.csv", "--gamma", "0.8", "--c-bar", "1", "--s0", "0", "--iterations", "2", "--out", "pg"],
    ]
    for argv in runs:
        code, out, err = _run(capsys, *argv)
        assert code in (0, 1) and "error" not in err, (argv, err)
        if argv[0] != "certify":
            assert "maint.csv: S=2 A=2" in out or argv[0] == "learn", (argv, out)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["solve", "maint.csv"],
            "model: maint.csv is a transition table, which carries no horizon, thresholds or start state: "
            "give --horizon H (or --gamma G), --c-bar X (one threshold per cost column) and --s0 S",
        ),
        (["solve", "maint.csv", "--gamma", "0.5", "--c-bar", "1"], "start state: give --s0 S"),
        (["pg", "maint.csv", "--s0", "0", "--out", "pg"], "start state: give --gamma G and --c-bar X (one"),
        (["certify", "maint.csv", "--c-bar", "1", "--policy", "p.npy", "--counts", "c.npy"], "give --horizon H and"),
        (["learn", "maint.csv", "--horizon", "3", "--c-bar", "1", "--episodes", "2"], "start state: give --s0 S"),
        (["export", "maint.csv", "m.npz", "--horizon", "3", "--gamma", "0.5"], "--horizon/--gamma: give one"),
        (
            ["solve", "maint.csv", "--horizon", "3", "--c-bar", "1/1", "--s0", "0"],
            "--c-bar: maint.csv has 1 cost column, so 1 threshold X; got 2",
        ),
        (["solve", "maint.csv", "--horizon", "3", "--c-bar", "1", "--s0", "2"], "--s0: maint.csv has S = 2 states"),
        (["solve", "maint.csv", "--horizon", "3", "--c-bar", "x", "--s0", "0"], "c-bar: expected numbers"),
        (["solve", "1a", "--s0", "0"], "--s0: the registered problem 1a carries its own start"),
        (["frontier", "1a", "--horizon", "3", "--out", "f"], "--horizon: the registered problem 1a carries its own"),
        (["learn", "1a", "--c-bar", "1", "--episodes", "2"], "--c-bar: the registered problem 1a carries its own"),
    ],
)
def test_a_missing_or_misfit_option_is_one_line_naming_it(
    table: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = _run(capsys, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert message in err, err
    assert sorted(p.name for p in table.parent.iterdir()) == ["maint.csv"]  # nothing written


def test_a_model_file_refuses_the_table_options(table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _by_hand(1.0, 0, H=3).save("m.npz")
    code, _, err = _run(capsys, "solve", "m.npz", "--gamma", "0.5")
    assert code == 2 and err.startswith("cmdp-rl solve: error: --gamma: the model file m.npz carries its own")


def test_a_table_without_costs_needs_no_thresholds(table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No cost column: N = 0, the unconstrained optimum; from state 0 over H = 2, ``run`` twice pays 2."""
    Path("free.csv").write_text("state,action,next_state,prob,reward\n0,0,0,1,1\n0,1,0,1,0\n")
    code, out, _ = _run(capsys, "solve", "free.csv", "--horizon", "2", "--s0", "0", "--json")
    assert code == 0 and json.loads(out)["value"] == pytest.approx(2.0)
    code, _, err = _run(capsys, "solve", "free.csv", "--horizon", "2", "--s0", "0", "--c-bar", "1")
    assert code == 2 and "--c-bar: free.csv has 0 cost columns" in err


def test_a_parquet_table(table: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With pandas and pyarrow: the same model as the CSV table; without: one line saying what to install."""
    fill = ["--horizon", "5", "--c-bar", "0.5", "--s0", "0", "--json"]
    if importlib.util.find_spec("pandas") is None or importlib.util.find_spec("pyarrow") is None:
        Path("maint.parquet").write_bytes(b"PAR1")
        code, _, err = _run(capsys, "solve", "maint.parquet", *fill)
        assert code == 2 and err.count("\n") == 1 and "pip install pandas pyarrow" in err
        return
    import pandas as pd

    pd.read_csv(table).to_parquet("maint.parquet")
    code, out, _ = _run(capsys, "solve", "maint.parquet", *fill)
    assert code == 0 and json.loads(out)["value"] == pytest.approx(solve(_by_hand(0.5, 0, H=5)).value, abs=1e-9)
