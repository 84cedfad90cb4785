"""Policy files: FILE.npy the dense table, FILE.npz the compact mixture."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import cmdp_rl
from cmdp_rl import evaluate, random_cmdp, solve
from cmdp_rl.evaluation.mixture import MixturePolicy, mixture_policy
from cmdp_rl.evaluation.policy_files import load_policy, save_policy
from cmdp_rl.plumbing.validation import CMDPInputError


def test_a_plan_round_trips_compact_and_dense(tmp_path: Path) -> None:
    m = random_cmdp(15, 3, 6, 2, 3, support=4)
    plan = solve(m, method="fast")
    save_policy(tmp_path / "p.npz", plan)
    save_policy(tmp_path / "p.npy", plan)
    with np.load(tmp_path / "p.npz", allow_pickle=False) as raw:
        assert sorted(raw.files) == ["columns", "kind", "weights"]
        assert raw["columns"].dtype == np.uint8 and raw["columns"].shape == plan.columns.shape
        assert str(raw["kind"]) == "mixture"
    mix = load_policy(tmp_path / "p.npz")
    assert isinstance(mix, MixturePolicy)
    np.testing.assert_array_equal(mix.columns, plan.columns)
    np.testing.assert_allclose(mix.weights, plan.weights, atol=1e-15)
    dense = load_policy(tmp_path / "p.npy")
    np.testing.assert_array_equal(dense, plan.policy)
    assert evaluate(m, mix).value == pytest.approx(evaluate(m, dense).value, abs=1e-12)
    assert cmdp_rl.save_policy is save_policy and cmdp_rl.load_policy is load_policy


def test_a_dense_table_and_a_mixture_are_saved_by_extension(tmp_path: Path) -> None:
    table = np.full((2, 3, 2), 0.5)
    save_policy(str(tmp_path / "t.npy"), table)
    np.testing.assert_array_equal(np.load(tmp_path / "t.npy"), table)
    mix = mixture_policy([[1, 0, 1]], [1.0], 2)  # a stationary column
    save_policy(tmp_path / "m.npz", mix)
    back = load_policy(tmp_path / "m.npz")
    assert isinstance(back, MixturePolicy) and back.stationary
    np.testing.assert_array_equal(back.columns, [[1, 0, 1]])
    with pytest.raises(CMDPInputError, match=r"m.npy: a MixturePolicy is saved compact, as FILE.npz"):
        save_policy(tmp_path / "m.npy", mix)
    with pytest.raises(CMDPInputError, match=r"t.npz: FILE.npz holds a compact mixture .* got ndarray"):
        save_policy(tmp_path / "t.npz", table)
    with pytest.raises(CMDPInputError, match=r"p.txt: a policy file is FILE.npy .* got .txt"):
        save_policy(tmp_path / "p.txt", table)
    assert not (tmp_path / "m.npy").exists() and not (tmp_path / "t.npz").exists()


def test_bad_policy_files_are_refused_naming_file_and_key(tmp_path: Path) -> None:
    np.savez(tmp_path / "nokind.npz", columns=np.zeros((1, 2, 3), np.uint8), weights=np.ones(1))
    with pytest.raises(CMDPInputError, match=r"policy: .*nokind.npz: no key 'kind'"):
        load_policy(tmp_path / "nokind.npz")
    np.savez(tmp_path / "kind.npz", columns=np.zeros((1, 2, 3), np.uint8), weights=np.ones(1), kind=np.array("x"))
    with pytest.raises(CMDPInputError, match=r"kind.npz: key 'kind': must be the string 'mixture'"):
        load_policy(tmp_path / "kind.npz")
    np.savez(tmp_path / "w.npz", columns=np.zeros((2, 2, 3), np.uint8), weights=[0.5, 0.6], kind=np.array("mixture"))
    with pytest.raises(CMDPInputError, match=r"w.npz: weights: must sum to 1"):
        load_policy(tmp_path / "w.npz")
    np.savez(tmp_path / "f.npz", columns=np.zeros((1, 2, 3)), weights=[1.0], kind=np.array("mixture"))
    with pytest.raises(CMDPInputError, match=r"f.npz: key 'columns': must be a non-empty integer array"):
        load_policy(tmp_path / "f.npz")
    np.save(tmp_path / "arr.npy", np.zeros(3))
    (tmp_path / "arr.npz").write_bytes((tmp_path / "arr.npy").read_bytes())
    with pytest.raises(CMDPInputError, match=r"arr.npz: an .npy array, not an .npz archive"):
        load_policy(tmp_path / "arr.npz")
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(CMDPInputError, match=r"bad.npz: not a readable .npz file"):
        load_policy(tmp_path / "bad.npz")
    with pytest.raises(CMDPInputError, match=r"missing.npy: no such file"):
        load_policy(tmp_path / "missing.npy")
