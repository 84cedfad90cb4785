"""``cmdp-rl solve --policy-out FILE``: the plan's policy as a ``.npy`` array, (H, S, A) for a finite
horizon and (S, A) for a discounted model, refused over an existing file without ``--force``
(issue 'real models', item 6)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cmdp_rl import CMDP
from cmdp_rl.cli import main


def _one_state(tmp_path: Path, name: str, cost_of_rest: float = 0.0, c_bar: float = 1.0, **length: float) -> str:
    """One state, two actions: ``work`` pays 1 and costs 1 per step, ``rest`` pays 0 and costs
    ``cost_of_rest``. With ``c_bar = 1`` the best plan works exactly one expected step's worth: for
    H = 2, ``p_0 + p_1 = 1`` (the work probabilities of the two steps), value 1; for gamma = 1/2 and a
    stationary plan, ``p (1 + 1/2 + 1/4 + ...) = 2 p = 1``, so ``p = 1/2``, value 1."""
    P = np.ones((1, 2, 1))
    r = np.array([[1.0, 0.0]])
    c = np.array([[[1.0, cost_of_rest]]])
    path = str(tmp_path / name)
    CMDP(P, r, c, [c_bar], 0, **length).save(path)
    return path


def _solve(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict, str]:
    code = main(["solve", *argv, "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out else {}), err


def test_the_finite_horizon_plan_is_written_as_h_s_a(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = _one_state(tmp_path, "m.npz", H=2)
    out_file = tmp_path / "pol.npy"
    code, out, _ = _solve(capsys, model, "--policy-out", str(out_file))
    assert code == 0 and out["policy_out"] == str(out_file) and out["value"] == pytest.approx(1.0, abs=1e-9)
    policy = np.load(out_file)
    assert policy.shape == (2, 1, 2) and policy.dtype == np.float64
    np.testing.assert_allclose(policy.sum(-1), 1.0, atol=1e-12)
    assert policy[:, 0, 0].sum() == pytest.approx(1.0, abs=1e-9)  # one expected step of work: value 1, cost 1


def test_the_discounted_plan_is_written_as_s_a(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = _one_state(tmp_path, "d.npz", gamma=0.5)
    code, out, _ = _solve(capsys, model, "--policy-out", str(tmp_path / "d.npy"))
    assert code == 0 and out["value"] == pytest.approx(1.0, abs=1e-9)
    np.testing.assert_allclose(np.load(tmp_path / "d.npy"), [[0.5, 0.5]], atol=1e-9)


def test_an_existing_file_needs_force_and_force_needs_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _one_state(tmp_path, "m.npz", H=2)
    target = tmp_path / "pol.npy"
    target.write_bytes(b"old")
    code, out, err = _solve(capsys, model, "--policy-out", str(target))
    assert code == 2 and out == {} and target.read_bytes() == b"old"
    assert err.count("\n") == 1 and "policy-out" in err and "--force" in err
    code, out, _ = _solve(capsys, model, "--policy-out", str(target), "--force")
    assert code == 0 and np.load(target).shape == (2, 1, 2)
    code, _, err = _solve(capsys, model, "--force")
    assert code == 2 and err.startswith("cmdp-rl solve: error: --force: no output file to replace")
    code, _, err = _solve(capsys, model, "--policy-out", model)
    assert code == 2 and "MODEL file" in err and CMDP.load(model).S == 1  # the model is not overwritten


def test_an_infeasible_model_writes_no_policy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Both actions cost 1 per step: every plan costs 2 over H = 2, above the threshold 1/2."""
    model = _one_state(tmp_path, "bad.npz", cost_of_rest=1.0, c_bar=0.5, H=2)
    code, out, _ = _solve(capsys, model, "--policy-out", str(tmp_path / "pol.npy"))
    assert code == 1 and out["status"] == "infeasible" and "policy_out" not in out
    assert not (tmp_path / "pol.npy").exists()
    assert main(["solve", model, "--policy-out", str(tmp_path / "pol.npy")]) == 1
    assert "not written: no feasible plan" in capsys.readouterr().out
