"""Policy files on the command line: FILE.npy the dense table, FILE.npz the compact mixture."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import mixture_by_tables

from cmdp_rl import CMDP, certify, load_policy, make, save_policy, solve
from cmdp_rl.certificates.safe import one_hot
from cmdp_rl.cli import main
from cmdp_rl.cli.policy_io import learned_play, write_learned_policy, write_plan_policy
from cmdp_rl.evaluation.mixture import MixturePolicy
from cmdp_rl.plumbing.validation import CMDPInputError


def _one_state(tmp_path: Path, **length: float) -> str:
    """One state, two actions: work (0) pays 1 and costs 1 per step, rest (1) nothing; c_bar = 1.
    Every optimal plan works one expected step (H = 2: value 1), or half the time (gamma = 1/2:
    ``2 p = 1``)."""
    path = str(tmp_path / "m.npz")
    CMDP(np.ones((1, 2, 1)), np.array([[1.0, 0.0]]), np.array([[[1.0, 0.0]]]), [1.0], 0, **length).save(path)
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code, _, err = _run(capsys, *argv)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    return err


def test_solve_writes_the_compact_mixture(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """H = 2: the columns (K, 2, 1) in uint8 and weights summing to 1 work one expected step
    (sum_k w_k #work_k = 1); discounted (gamma 1/2): stationary columns (K, 1) working half the time."""
    model = _one_state(tmp_path, H=2)
    code, out, _ = _run(capsys, "solve", model, "--policy-out", str(tmp_path / "p.npz"), "--json")
    assert code == 0 and json.loads(out)["policy_out"] == str(tmp_path / "p.npz")
    with np.load(tmp_path / "p.npz") as z:
        assert sorted(z.files) == ["columns", "kind", "weights"] and str(z["kind"]) == "mixture"
        cols, w = z["columns"], z["weights"]
    assert cols.dtype == np.uint8 and cols.shape[1:] == (2, 1) and w.sum() == pytest.approx(1.0, abs=1e-12)
    assert float(w @ (cols == 0).sum(axis=(1, 2))) == pytest.approx(1.0, abs=1e-9)
    d = tmp_path / "d"
    d.mkdir()
    model = _one_state(d, gamma=0.5)
    assert _run(capsys, "solve", model, "--policy-out", str(d / "p.npz"))[0] == 0
    mix = load_policy(d / "p.npz")
    assert isinstance(mix, MixturePolicy) and mix.columns.shape[1:] == (1,)
    assert float(mix.weights @ (mix.columns[:, 0] == 0)) == pytest.approx(0.5, abs=1e-9)


def test_certify_reads_the_compact_mixture(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One next state: the confidence set is one kernel, so the certificate is exact: value 1,
    cost 1 <= c_bar (certified); the same as the library's certify of the loaded mixture."""
    model = _one_state(tmp_path, H=2)
    _run(capsys, "solve", model, "--policy-out", str(tmp_path / "p.npz"))
    np.save(tmp_path / "n.npy", np.full((1, 2, 1), 5, dtype=np.int64))
    argv = ("certify", model, "--policy", str(tmp_path / "p.npz"), "--counts", str(tmp_path / "n.npy"), "--json")
    code, out, _ = _run(capsys, *argv)
    got = json.loads(out)
    assert code == 0 and got["safe"] and got["value"] == pytest.approx([1.0, 1.0], abs=1e-9)
    assert got["costs"] == [pytest.approx([1.0, 1.0], abs=1e-9)]
    m = CMDP.load(model)
    cert = certify(load_policy(tmp_path / "p.npz"), np.full((1, 2, 1), 5), m.r, m.c, m.c_bar, 0, 2)
    assert got["value"] == [cert.value_lo, cert.value_hi]


def test_refusals_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = _one_state(tmp_path, H=2)
    assert "got .txt" in _refused(capsys, "solve", model, "--policy-out", str(tmp_path / "p.txt"))
    assert "LP's plan is a randomized Markov table" in _refused(
        capsys, "solve", model, "--method", "lp", "--policy-out", str(tmp_path / "q.npz")
    )
    assert not (tmp_path / "q.npz").exists()
    assert "--play: table" in _refused(
        capsys, "learn", model, "--play", "table", "--episodes", "2", "--policy-out", str(tmp_path / "l.npz")
    )
    np.save(tmp_path / "n.npy", np.full((1, 2, 1), 5, dtype=np.int64))
    cert = ("--counts", str(tmp_path / "n.npy"))
    np.savez(tmp_path / "nokind.npz", columns=np.zeros((1, 2, 1), dtype=np.uint8), weights=np.ones(1))
    assert "no key 'kind'" in _refused(capsys, "certify", model, "--policy", str(tmp_path / "nokind.npz"), *cert)
    np.savez(tmp_path / "long.npz", columns=np.zeros((1, 3, 1), dtype=np.uint8), weights=np.ones(1), kind="mixture")
    err = _refused(capsys, "certify", model, "--policy", str(tmp_path / "long.npz"), *cert)
    assert err.startswith(f"cmdp-rl certify: error: policy: {tmp_path / 'long.npz'}") and "(K, 2, 1)" in err
    np.savez(tmp_path / "a5.npz", columns=np.full((1, 2, 1), 5, dtype=np.uint8), weights=np.ones(1), kind="mixture")
    assert "plays action 5" in _refused(capsys, "certify", model, "--policy", str(tmp_path / "a5.npz"), *cert)
    assert "FILE.npz (the compact" in _refused(capsys, "certify", model, "--policy", str(tmp_path / "n.pol"), *cert)


def test_dense_table_of_a_mixture_is_refused_above_max_memory(tmp_path: Path) -> None:
    """``--policy-out FILE.npy`` of a plan of columns builds its dense table: refused with the
    estimate before building when above --max-memory; written below it."""
    m = CMDP.load(_one_state(tmp_path, H=2))
    plan = solve(m)
    limits = argparse.Namespace(max_memory=10.0, max_time=60.0)
    with pytest.raises(CMDPInputError, match=r"--policy-out .*p\.npy .* needs about 80 B of memory"):
        write_plan_policy(tmp_path / "p.npy", plan, m, limits)
    assert not (tmp_path / "p.npy").exists()
    write_plan_policy(tmp_path / "p.npy", plan, m, argparse.Namespace(max_memory=1e6, max_time=60.0))
    np.testing.assert_allclose(np.load(tmp_path / "p.npy"), plan.policy, atol=0)


@pytest.mark.parametrize(
    "extra", [["--algo", "online-crl"], ["--algo", "dope", "--deploy", "certified"], ["--algo", "gmbl"]]
)
def test_learn_writes_the_compact_mixture_it_hands_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    budget = ["--samples-per-pair", "3"] if "gmbl" in extra else ["--episodes", "8"]
    path = tmp_path / "p.npz"
    code, out, _ = _run(capsys, "learn", "1a", *extra, *budget, "--policy-out", str(path), "--json")
    assert code == 0
    res, mix = json.loads(out), load_policy(path)
    assert isinstance(mix, MixturePolicy) and mix.columns.shape[1:] == (10, 9)
    value, costs = mixture_by_tables(make("1a"), mix)
    assert res["value"] == pytest.approx(value, abs=1e-9)
    np.testing.assert_allclose(res["costs"], costs, atol=1e-9)


def test_learn_policy_files_refuse_what_they_cannot_hold(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    npz, npy = str(tmp_path / "p.npz"), str(tmp_path / "p.npy")
    assert "--play: table" in _refused(capsys, "learn", "1a", "--episodes", "2", "--play", "table", "--policy-out", npz)
    assert "Markov table by construction" in _refused(
        capsys, "learn", "1a", "--algo", "rpd", "--episodes", "2", "--policy-out", npz
    )
    assert "--play: mixture" in _refused(
        capsys, "learn", "1a", "--episodes", "2", "--play", "mixture", "--policy-out", npy
    )
    assert list(tmp_path.iterdir()) == []
    det = one_hot(np.zeros((2, 3), dtype=np.intp), 2)
    write_learned_policy(tmp_path / "d.npz", det)  # a deterministic table: its one column
    np.testing.assert_array_equal(load_policy(tmp_path / "d.npz").columns, np.zeros((1, 2, 3)))
    with pytest.raises(CMDPInputError, match="randomized Markov table"):
        write_learned_policy(tmp_path / "r.npz", np.full((2, 3, 2), 0.5))
    with pytest.raises(CMDPInputError, match=r"write FILE\.npz"):
        write_learned_policy(tmp_path / "m.npy", load_policy(tmp_path / "d.npz"))


def test_learn_env_takes_a_mixture_baseline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A safe learner on a simulator given a true mixture (two deterministic policies, what solve
    writes) plays it in its baseline episodes and hands it over when nothing is certified."""
    m = make("1a")
    base = tmp_path / "b.npz"
    save_policy(base, MixturePolicy.of_plan(solve(m.replace(c_bar=m.c_bar / 5))))
    mix = load_policy(base)
    assert mix.K == 2
    cost = mixture_by_tables(m, mix)[1]
    out_path = tmp_path / "p.npz"
    code, out, _ = _run(
        capsys, "learn", "--env", "cmdp_rl/Scenario1a-v0", "--horizon", "10", "--c-bar", "2", "--episodes", "4",
        "--algo", "dope", "--baseline", str(base), "--baseline-costs", f"{cost[0]:.12g}", "--policy-out",
        str(out_path), "--json",
    )  # fmt: skip
    assert code == 0 and json.loads(out)["status"] == "baseline"
    np.testing.assert_array_equal(load_policy(out_path).columns, mix.columns)


def test_learn_from_a_log_writes_the_plans_columns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--from-log`` with FILE.npz: the certified-safe planner's (or the extended LP's) plan as its
    columns, certified as that mixture: the printed bounds contain the mixture's true cost."""
    from cmdp_rl.learners import EpisodicEnv

    m = make("1a")
    env, rows = EpisodicEnv(m, np.random.default_rng(0)), ["episode,step,state,action,next_state"]
    for e in range(300):
        s, a, n = env.rollout(np.full((m.H, m.S, m.A), 1.0 / m.A))
        rows += [f"{e},{h},{s[h]},{a[h]},{n[h]}" for h in range(m.H)]
    (tmp_path / "log.csv").write_text("\n".join(rows) + "\n")
    for extra in (["--deploy", "certified"], ["--algo", "online-crl"]):
        out_path = tmp_path / f"{extra[-1]}.npz"
        code, out, _ = _run(
            capsys,
            "learn",
            "1a",
            "--from-log",
            str(tmp_path / "log.csv"),
            *extra,
            "--policy-out",
            str(out_path),
            "--json",
        )
        cert, mix = json.loads(out)["certificate"], load_policy(out_path)
        assert code == 0 and isinstance(mix, MixturePolicy)
        cost = mixture_by_tables(m, mix)[1][0]
        assert cert["costs"][0][0] - 1e-9 <= cost <= cert["costs"][0][1] + 1e-9


def test_a_table_file_makes_the_learner_play_tables(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--policy-out FILE.npy``: the learner plays tables (a run whose tables do not fit is refused
    before any step, not after it); a true mixture baseline with FILE.npy is refused before any work."""
    args = argparse.Namespace(policy_out=str(tmp_path / "p.npy"), play=None, algorithm="online-crl")
    assert learned_play(args) == "table"
    args.policy_out = None
    assert learned_play(args) == "auto"
    m = make("1a")
    base = tmp_path / "b.npz"
    save_policy(base, MixturePolicy.of_plan(solve(m.replace(c_bar=m.c_bar / 5))))
    err = _refused(
        capsys, "learn", "--env", "cmdp_rl/Scenario1a-v0", "--horizon", "10", "--c-bar", "2", "--episodes", "2",
        "--algo", "dope", "--baseline", str(base), "--baseline-costs", "0.4", "--policy-out", str(tmp_path / "p.npy"),
    )  # fmt: skip
    assert "--baseline mixture of 2 deterministic policies" in err and not (tmp_path / "p.npy").exists()
