"""``cmdp-rl learn``'s returned policy: ``--deploy last`` (default with MODEL), ``--deploy certified``
(default with ``--env``), ``--deploy-delta``, ``--safe`` as the deprecated alias, the stderr note when
the returned policy is not certified, and the exit codes (issue 'safe learning', item 4)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cmdp_rl import CMDP, evaluate, random_cmdp, scenario_cmdp, solve
from cmdp_rl.certificates.certify import certify
from cmdp_rl.cli import main

NOTE = "cmdp-rl learn: note: the returned policy"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict, str]:
    code = main(["learn", *argv, "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def test_model_default_is_last_and_says_when_it_is_not_certified(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    code, out, err = _run(capsys, "1a", "--episodes", "20", "--counts-out", str(tmp_path / "n.npy"))
    assert code == 0 and out["deploy"] == "last" and out["deploy_delta"] == 0.05
    m = scenario_cmdp("1a")
    counts = np.load(tmp_path / "n.npy")
    # the verdict, recomputed independently from the saved counts (last policy: the learner's own)
    assert out["certified"] in (True, False)
    if not out["certified"]:
        assert err.count("\n") == 1 and err.startswith(NOTE) and "--deploy certified" in err
    else:
        assert err == ""
    code2, out2, err2 = _run(capsys, "1a", "--episodes", "20", "--deploy", "certified")
    assert out2["deploy"] == "certified"
    assert code2 == (0 if out2["safe_status"] == "certified" else 1)
    if code2 == 0:  # certified: recheck its certificate from the counts with certify
        assert out2["certified"] and err2 == ""
    else:
        assert "value" not in out2  # no policy returned
    assert counts.shape == (m.S, m.A, m.S)


def _tight_model(path) -> CMDP:
    """A random model whose threshold is 0.1 above the least expected cost: with a few episodes no
    policy's certified upper cost can meet it (the confidence set is wide), yet a strictly safe
    baseline exists."""
    m = random_cmdp(6, 3, 5, 1, seed=0)
    least = solve(m.replace(c_bar=np.zeros(1)))  # infeasible: the least-excess plan, the least cost
    tight = m.replace(c_bar=evaluate(m, least.policy).costs + 0.1)
    tight.save(path)
    return tight


def test_certified_falls_back_to_the_safe_baseline_with_exit_0(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    """DOPE with 5 episodes on a tight threshold: nothing is certifiable from so little data, so the
    learner's safe baseline is returned (exit 0), and the note says it is not certified by the data;
    a learner without a baseline exits 1 with no policy."""
    pol = tmp_path / "p.npy"
    m = _tight_model(tmp_path / "m.npz")
    model = str(tmp_path / "m.npz")
    code, out, err = _run(
        capsys, model, "--algo", "dope", "--episodes", "5", "--deploy", "certified", "--policy-out", str(pol)
    )
    assert code == 0 and out["safe_status"] == "baseline" and not out["certified"]
    assert err.count("\n") == 1 and err.startswith(NOTE) and "baseline" in err
    code, out, err = _run(capsys, model, "--algo", "plugin", "--episodes", "5", "--deploy", "certified")
    assert code == 1 and out["safe_status"] == "uncertified" and "value" not in out and err == ""

    from cmdp_rl.planning.baseline import safe_baseline

    np.testing.assert_array_equal(np.load(pol), safe_baseline(m).policy)


def test_safe_is_the_deprecated_alias(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "1a", "--episodes", "200", "--safe")
    code2, out2, err2 = _run(capsys, "1a", "--episodes", "200", "--deploy", "certified")
    untimed = [{k: v for k, v in o.items() if "seconds" not in k} for o in (out, out2)]
    assert code == code2 and untimed[0] == untimed[1]
    assert "--safe is deprecated, use --deploy certified" in err and "deprecated" not in err2
    assert main(["learn", "1a", "--episodes", "2", "--safe", "--deploy", "last"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_deploy_delta_sets_the_certificates_failure_probability(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    counts = tmp_path / "n.npy"
    _, out, _ = _run(
        capsys, "1a", "--episodes", "300", "--deploy-delta", "0.2", "--counts-out", str(counts), "--policy-out",
        str(tmp_path / "p.npy"),
    )  # fmt: skip
    m = scenario_cmdp("1a")
    cert = certify(np.load(tmp_path / "p.npy"), np.load(counts), m.r, m.c, m.c_bar, m.s0, m.H, delta=0.2)
    assert out["deploy_delta"] == 0.2 and out["certified"] == bool(cert.safe)
    for bad in ("0", "1", "nan"):
        assert main(["learn", "1a", "--episodes", "2", "--deploy-delta", bad]) == 2
        assert "--deploy-delta" in capsys.readouterr().err


def test_env_default_is_certified(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    env = ["--env", "cmdp_rl/1a-v0", "--horizon", "5", "--c-bar", "1", "--seed", "0"]
    code, out, err = _run(capsys, *env, "--episodes", "10", "--policy-out", str(tmp_path / "p.npy"))
    assert out["deploy"] == "certified" and out["deploy_delta"] == 0.05
    if out["status"] == "uncertified":  # no policy certified and no baseline: exit 1, no policy, no note
        assert code == 1 and not out["certified"] and not (tmp_path / "p.npy").exists()
    else:
        assert code == 0 and out["status"] == "certified" and out["certified"] and err == ""
    code, out, err = _run(capsys, *env, "--episodes", "10", "--deploy", "last")
    assert code == 0 and out["deploy"] == "last"
    if not out["certified"]:
        assert err.count("\n") == 1 and err.startswith(NOTE) and "--deploy certified" in err
