"""``--avoid SET:P`` and ``--reach SET`` on the commands that take a MODEL (``cmdp_rl.cli.reach``).

The model: start 0, ``bad`` 1 and ``good`` 2 (both absorbing). In state 0, ``risky`` pays 1 and moves
to ``bad`` or ``good`` with probability 1/2 each; ``wait`` pays 0 and stays. Playing ``risky`` with
probability ``x`` in state 0:
- H = 1: value ``x``, P(enter bad) = P(enter good) = ``x / 2`` (entries at ``s_1``, the last state);
  so ``--avoid bad:0.2`` gives ``x = 0.4``, value 0.4, and ``--reach good --avoid bad:0.2`` gives 0.2;
- gamma = 1/2, stationary ``x``: value ``x / (1 - gamma (1 - x))``, discounted entry into bad
  ``gamma x / 2 / (1 - gamma (1 - x)) = x / (2 (1 + x))``; at most 0.2 for ``x <= 2/3``: value 0.8.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

from cmdp_rl import CMDP, reach_constraint
from cmdp_rl.cli import main
from cmdp_rl.cli.reach import apply_reach, parse_avoid
from cmdp_rl.plumbing.errors import CMDPInputError


def _model(tmp_path: Path, **length: float) -> str:
    P = np.zeros((3, 2, 3))
    P[0, 0, 1] = P[0, 0, 2] = 0.5
    P[0, 1, 0] = 1.0
    P[1, :, 1] = P[2, :, 2] = 1.0
    r = np.zeros((3, 2))
    r[0, 0] = 1.0
    path = str(tmp_path / "risky.npz")
    CMDP(P, r, None, None, 0, **length, labels={"bad": [1], "good": [2]}).save(path)
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict, str]:
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else {}), err


def test_an_avoid_constraint_binds_and_counts_the_last_state(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _model(tmp_path, H=1)
    code, out, _ = _run(capsys, "solve", model, "--avoid", "bad:0.2")
    assert code == 0 and out["value"] == pytest.approx(0.4, abs=1e-9)
    assert out["costs"] == pytest.approx([0.2], abs=1e-9)
    code, by_index, _ = _run(capsys, "solve", model, "--avoid", "1:0.2")  # state indices: the same set
    assert by_index["value"] == pytest.approx(0.4, abs=1e-9)
    code, out, _ = _run(capsys, "solve", model, "--reach", "good", "--avoid", "bad:0.2")
    assert code == 0 and out["value"] == pytest.approx(0.2, abs=1e-9)
    code, out, _ = _run(capsys, "solve", model, "--reach", "good")
    assert out["value"] == pytest.approx(0.5, abs=1e-9)


def test_a_discounted_avoid_constraint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "solve", _model(tmp_path, gamma=0.5), "--avoid", "bad:0.2")
    assert code == 0 and out["value"] == pytest.approx(0.8, abs=1e-8)
    assert out["costs"] == pytest.approx([0.2], abs=1e-8)


def test_export_writes_the_product_and_indices_cover_every_copy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _model(tmp_path, H=2)
    out_file = tmp_path / "product.npz"
    assert main(["export", model, str(out_file), "--avoid", "1:0.3", "--avoid", "2:0.9"]) == 0
    capsys.readouterr()
    got = CMDP.load(out_file)
    base = CMDP.load(model)
    # the second set, typed as the model's state 2, is state 2 on both copies of the first product
    first = reach_constraint(base, [1], 0.3)
    want = reach_constraint(first, [2, 5], 0.9)
    assert got.S == 12 and got.N == 2
    np.testing.assert_array_equal(got.P, want.P)
    np.testing.assert_array_equal(got.c, want.c)
    np.testing.assert_array_equal(got.labels["bad"], np.tile([False, True, False], 4))
    assert list(got.labels) == ["bad", "good", "flag1.reached", "flag2.reached"]


def test_refusals_are_one_line_naming_the_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = _model(tmp_path, H=2)
    cases = [
        (["solve", model, "--avoid", "hole:0.1"], "--avoid: the model has no label 'hole' (its labels: bad, good)"),
        (["solve", "1a", "--reach", "goal"], "--reach: the model has no label 'goal' (its labels: none)"),
        (["solve", model, "--avoid", "bad"], "--avoid: expected SET:P"),
        (["solve", model, "--avoid", "bad:1.5"], "--avoid: bad: P must be a probability in [0, 1], got '1.5'"),
        (["solve", model, "--avoid", "bad:nan"], "--avoid: bad: P must be a probability in [0, 1]"),
        (["solve", model, "--reach", "3"], "--reach: state 3 is out of range: the model has S = 3 states"),
        (["learn", "--env", "cmdp_rl/1a-v0", "-H", "3", "--c-bar", "1", "--episodes", "2", "--reach", "1"], "--reach:"),
        (["learn", model, "--from-log", "log.csv", "--reach", "good"], "--reach: a transition log holds"),
        (
            ["certify", model, "--avoid", "bad:0.1", "--policy", "p.npy", "--log", "log.csv"],
            "--avoid: a transition log holds the model's states",
        ),
    ]
    for argv, message in cases:
        code = main(argv)
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1, (argv, err)
        assert message in err[0], (argv, err[0])


def test_parse_avoid_and_no_options() -> None:
    assert parse_avoid("a:b:0.5") == ("a:b", 0.5)  # the last colon splits: a label may hold one
    assert parse_avoid("3,7:-0") == ("3,7", 0.0)
    with pytest.raises(CMDPInputError, match=r"^--avoid: expected SET:P"):
        parse_avoid(":0.5")
    m = CMDP(np.ones((1, 1, 1)), np.zeros((1, 1)), None, None, 0, 1)
    assert apply_reach(m, argparse.Namespace()) is m
    assert apply_reach(m, argparse.Namespace(avoid=None, reach=None)) is m
