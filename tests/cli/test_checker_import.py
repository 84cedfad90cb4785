"""``cmdp-rl import-prism``, ``import-jani``, ``import-drn``: the model file they write is the
Python import's model, refusals are one line (exit 2), ``--force`` guards the output, and without
stormpy the one line says what to install."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from faultkit import run_main

from cmdp_rl.model.cmdp import CMDP

RELAY = Path(__file__).resolve().parents[2] / "examples" / "storm" / "relay.nm"


def test_without_stormpy_each_command_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "stormpy", None)
    for command in ("import-prism", "import-jani", "import-drn"):
        proc = run_main(command, str(RELAY), "--horizon", "3", "--out", "m.npz", cwd=tmp_path)
        assert proc.returncode == 2
        assert proc.stderr.strip() == (
            f'cmdp-rl {command}: error: cmdp-rl {command} needs stormpy: pip install "cmdp-rl[storm]"'
        )
    assert not (tmp_path / "m.npz").exists()


def test_thresholds_must_match_the_costs(tmp_path: Path) -> None:
    cases = [
        (["--cost", "energy"], "--c-bar: required with --cost"),
        (["--c-bar", "2"], "--c-bar: thresholds are for the costs"),
        (["--cost", "energy", "--c-bar", "2/3"], "--c-bar: one threshold per --cost: 1 cost(s), got 2"),
    ]
    for extra, want in cases:
        proc = run_main("import-prism", str(RELAY), "-H", "3", "--out", "m.npz", *extra, cwd=tmp_path)
        assert proc.returncode == 2 and want in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


def test_import_prism_writes_the_python_import(tmp_path: Path) -> None:
    pytest.importorskip("stormpy")
    from cmdp_rl.model.storm import from_prism

    argv = ["import-prism", str(RELAY), "--reward", "delivered", "--cost", "energy", "--cost", "label:broken"]
    argv += ["--c-bar", "6/0.2", "--horizon", "6", "--out", "relay.npz"]
    proc = run_main(*argv, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "wrote relay (S=10 A=2 H=6 N=2 s0=distribution over 2 states, 13 choices, 4 labels) to relay.npz",
    ]
    got = CMDP.load(tmp_path / "relay.npz")
    want = from_prism(RELAY, reward="delivered", costs=["energy", "label:broken"], H=6, c_bar=[6.0, 0.2])
    assert (got.K != want.K).nnz == 0
    for key in ("r", "c", "c_bar", "rho"):
        assert np.array_equal(getattr(got, key), getattr(want, key)), key
    assert np.array_equal(got.action_names, want.action_names) and list(got.labels) == list(want.labels)
    assert got.meta == want.meta
    again = run_main(*argv, cwd=tmp_path)
    assert again.returncode == 2 and "--force" in again.stderr
    assert run_main(*argv, "--force", cwd=tmp_path).returncode == 0


def test_import_drn_and_jani_read_what_stormpy_writes(tmp_path: Path) -> None:
    stormpy = pytest.importorskip("stormpy")
    program = stormpy.parse_prism_program(str(RELAY))
    stormpy.io.export_jani_to_file(tmp_path / "relay.jani", program.to_jani())
    options = stormpy.BuilderOptions()
    options.set_build_all_reward_models()
    options.set_build_all_labels()
    options.set_build_choice_labels()
    stormpy.io.export_to_drn(stormpy.build_model(program, options=options), tmp_path / "relay.drn")
    common = ["--reward", "delivered", "--gamma", "0.9"]
    assert run_main("import-jani", "relay.jani", *common, "--out", "j.npz", cwd=tmp_path).returncode == 0
    assert run_main("import-drn", "relay.drn", *common, "--out", "d.npz", cwd=tmp_path).returncode == 0
    jani, drn = CMDP.load(tmp_path / "j.npz"), CMDP.load(tmp_path / "d.npz")
    assert jani.gamma == drn.gamma == 0.9 and jani.S == drn.S == 10
    bad = run_main("import-drn", "relay.jani", *common, "--out", "x.npz", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.startswith("cmdp-rl import-drn: error: DRN file 'relay.jani': ")
    assert bad.stderr.count("\n") == 1
