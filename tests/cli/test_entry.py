"""The command line: output, JSON, exit codes, bad input without tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from conftest import dense_reference_lp

from cmdp_rl import random_cmdp
from cmdp_rl.cli import main


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize(
    "S, A, H, N, slack, seed",
    [
        (5, 2, 3, 1, 0.5, 0),
        (12, 4, 10, 2, 0.3, 1),
        (30, 5, 20, 3, 0.4, 2),
        (8, 3, 6, 1, -0.2, 3),
        (20, 5, 15, 3, -0.05, 4),
        (9, 2, 8, 0, 0.5, 5),
    ],
)
def test_solve_json_matches_independent_lp(tmp_path, capsys, S, A, H, N, slack, seed) -> None:
    m = random_cmdp(S, A, H, N, seed=seed, slack=slack)
    path = tmp_path / "m.npz"
    m.save(path)
    code, out, _ = _run(capsys, "solve", str(path), "--json")
    got = json.loads(out)
    status, ref = dense_reference_lp(m)
    if status == 0:
        assert code == 0 and got["status"] == "optimal"
        assert got["value"] == pytest.approx(ref, rel=1e-6)
        assert set(got) == {"status", "value", "costs", "gap", "multipliers"}
        assert 0.0 <= got["gap"] <= 1e-9 * H
    else:
        assert status == 2
        assert code == 1 and got["status"] == "infeasible"
        assert len(got["min_costs"]) == N


def test_solve_human_readable(capsys) -> None:
    code, out, _ = _run(capsys, "solve", "examples/two_state.npz")
    assert code == 0
    assert "value     0.750000" in out and "a mixture of 2 deterministic policies" in out


def _bad_inputs(tmp_path) -> list[list[str]]:
    notnpz = tmp_path / "x.npz"
    notnpz.write_text("hello")
    badr = tmp_path / "badr.npz"
    m = random_cmdp(3, 2, 2, 1, seed=0)
    np.savez(badr, P=m.P, r=np.where(m.r > 0.5, np.nan, m.r), c=m.c, c_bar=m.c_bar, s0=0, H=2)
    miss = tmp_path / "miss.npz"
    np.savez(miss, P=m.P)
    return [
        ["solve", str(tmp_path / "nope.npz")],
        ["solve", str(notnpz)],
        ["solve", str(badr)],
        ["solve", str(miss)],
        ["solve"],
        ["frobnicate"],
        [],
    ]


@pytest.mark.slow
def test_bad_input_exits_2_without_traceback(tmp_path) -> None:
    for argv in _bad_inputs(tmp_path):
        proc = subprocess.run([sys.executable, "-m", "cmdp_rl.cli", *argv], capture_output=True, text=True)
        assert proc.returncode == 2, (argv, proc.stderr)
        assert "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_help_texts(capsys) -> None:
    assert main(["--help"]) == 0
    assert "solve" in capsys.readouterr().out
    assert main(["solve", "--help"]) == 0
    assert "Exit code" in capsys.readouterr().out
    for cmd in ("learn", "reproduce", "bounds", "export"):  # every option has help, defaults shown
        assert main([cmd, "--help"]) == 0
        out = capsys.readouterr().out
        assert "default" in out or cmd in ("bounds", "export")


@pytest.mark.slow
def test_certify_reads_sparse_counts_like_dense(tmp_path) -> None:
    import scipy.sparse as sp

    from cmdp_rl import solve

    m = random_cmdp(6, 2, 4, 1, seed=0, support=3)
    m.save(tmp_path / "m.npz")
    rng = np.random.default_rng(0)
    counts = np.stack([rng.multinomial(50, m.P[s, a]) for s in range(6) for a in range(2)]).reshape(6, 2, 6)
    np.save(tmp_path / "c.npy", counts)
    sp.save_npz(tmp_path / "c.npz", sp.csr_array(counts.reshape(12, 6)))
    np.save(tmp_path / "pol.npy", solve(m).policy)
    outs = []
    for c in ("c.npy", "c.npz"):
        argv = ["certify", "m.npz", "--policy", "pol.npy", "--counts", c, "--json"]
        proc = subprocess.run([sys.executable, "-m", "cmdp_rl", *argv], cwd=tmp_path, capture_output=True, text=True)
        assert proc.returncode in (0, 1), proc.stderr
        outs.append(json.loads(proc.stdout))
    assert outs[0] == outs[1]
    sp.save_npz(tmp_path / "bad.npz", sp.csr_array(np.ones((5, 6))))
    argv = ["certify", "m.npz", "--policy", "pol.npy", "--counts", "bad.npz"]
    proc = subprocess.run([sys.executable, "-m", "cmdp_rl", *argv], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 2 and "expected a sparse (S*A, S) = (12, 6) matrix" in proc.stderr


def test_threads_is_in_effect_while_the_command_runs_then_restored(capsys, monkeypatch) -> None:
    """``--threads N`` (issue 37, item 2): the count the kernels see inside the command, the previous
    one after it; past the cores a one-line refusal (exit 2) before the command starts."""
    import cmdp_rl.cli
    from cmdp_rl.plumbing.threads import ENV_VAR, get_threads, max_threads, set_threads

    monkeypatch.delenv(ENV_VAR, raising=False)
    set_threads(None)
    seen: list[int] = []
    monkeypatch.setattr(cmdp_rl.cli, "_cmd_solve", lambda args: seen.append(get_threads()) or 0, raising=False)
    assert main(["solve", "1a", "--threads", "1"]) == 0
    assert seen == [1] and get_threads() == max_threads()
    code, _, err = _run(capsys, "solve", "1a", "--threads", str(max_threads() + 1))
    assert code == 2 and seen == [1]  # refused before the command
    assert err.count("\n") == 1 and err.startswith(
        f"cmdp-rl solve: error: --threads: must be a number of threads in [1, {max_threads()}]"
    )
