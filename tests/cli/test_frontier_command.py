"""``cmdp-rl frontier``: a constraint index out of range is the library's refusal (the CLI no
longer repeats the check), still exit 2, one line, before any file is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from cmdp_rl.cli import main


def test_constraint_out_of_range_is_the_librarys_refusal(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "front"
    assert main(["frontier", "1a", "--constraint", "3", "--points", "3", "--out", str(out)]) == 2
    # scenario 1a has one constraint: the index must be 0 (planning.frontier's own message)
    assert capsys.readouterr().err == "cmdp-rl frontier: error: constraint: must be an index in [0, 0], got 3\n"
    assert not out.exists()


def test_a_model_without_constraints_is_refused_naming_it(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from cmdp_rl import random_cmdp

    random_cmdp(3, 2, 2, 0, seed=0).save(tmp_path / "m.npz")
    out = tmp_path / "front"
    assert main(["frontier", str(tmp_path / "m.npz"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert (
        err
        == f"cmdp-rl frontier: error: model {tmp_path / 'm.npz'}: has no constraints (N = 0): no threshold to vary\n"
    )
    assert not out.exists()
