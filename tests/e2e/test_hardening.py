"""Hardening: one test (or more) per defect class of the hardening issue.

Known answers come from independent computations: the literal extended LP for the
fast one, serial runs for threaded ones, the sampler's definition for the draws.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from faultkit import cli_batch, run_main
from hypothesis import given, settings
from hypothesis import strategies as st

from cmdp_rl import CMDP, EpisodicEnv, GenerativeModel, OnlineCRL, OptimisticGMBL, Scorer, checkpoints, random_cmdp
from cmdp_rl.confidence.box import Box
from cmdp_rl.confidence.box import min_costs as optimistic_min_costs
from cmdp_rl.confidence.radii import confidence_set, delta_p
from cmdp_rl.kernels.sampling import categorical, cumulative, sample_many
from cmdp_rl.planning.elp import solve_elp

ROOT = Path(__file__).resolve().parents[2]


def _cli(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``cmdp-rl ARGV`` in this process (``faultkit.run_main``); the process itself (signals, a
    broken pipe) is tested below with real ones."""
    return run_main(*argv, cwd=cwd)


# -- 2. sizes are checked before compiled kernels --------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(
    st.tuples(st.integers(1, 6), st.integers(1, 4), st.integers(1, 5)),
    st.tuples(st.integers(1, 6), st.integers(1, 4), st.integers(1, 5)),
)
def test_mismatched_learner_environment_scorer_is_a_value_error(a, b) -> None:
    if a == b:  # same sizes are fine: make them differ in the state count
        b = (b[0] + 1, b[1], b[2])
    m1 = random_cmdp(*a, N=1, seed=0)
    m2 = random_cmdp(*b, N=1, seed=1)
    rng = np.random.default_rng(0)
    size = re.compile(r"S=\d+, A=\d+, H=\d+")
    with pytest.raises(ValueError, match="env") as ex:
        OnlineCRL(m1, episodes=2).fit(EpisodicEnv(m2, rng))
    assert len(size.findall(str(ex.value))) == 2  # names both sizes
    with pytest.raises(ValueError, match="scorer"):
        OnlineCRL(m1, episodes=2).fit(EpisodicEnv(m1, rng), Scorer(m2, 0.0))
    with pytest.raises(ValueError, match="model"):
        OptimisticGMBL(m1, samples_per_pair=3).fit(GenerativeModel(m2, rng))
    with pytest.raises(ValueError, match="policy"):
        EpisodicEnv(m2, rng).rollout(np.full((m1.H, m1.S, m1.A), 1.0 / m1.A))


# -- 3. thread safety ----------------------------------------------------------------------------------


def test_eight_concurrent_fast_solves_equal_the_serial_ones() -> None:
    cases = []
    for seed in range(8):
        m = random_cmdp(8, 3, 6, 2, seed=seed, slack=0.3, support=3)
        cs = confidence_set(np.random.default_rng(seed).multinomial(30, m.P), 0.01)
        cases.append((m, cs.p_hat, cs.beta))
    serial = [solve_elp(*case) for case in cases]
    out: list[object] = [None] * 8
    barrier = threading.Barrier(8)

    def work(i: int) -> None:
        barrier.wait()
        for _ in range(5):
            out[i] = solve_elp(*cases[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s, par in zip(serial, out, strict=True):
        assert par.status == s.status and par.value == pytest.approx(s.value, rel=1e-9, abs=1e-12)


# -- 4. near-threshold ELP: a status, never an exception; fast and literal agree -------------------------


@pytest.mark.parametrize("seed", range(3))
def test_thresholds_across_the_optimistic_minimum(seed: int) -> None:
    m = random_cmdp(6, 3, 5, 1, seed=seed, slack=0.3, support=3)
    cs = confidence_set(np.random.default_rng(seed).multinomial(40, m.P), 0.05)
    lo = float(optimistic_min_costs(Box.from_radius(cs.p_hat, cs.beta), m.c, m.s0, m.H)[0])
    for offset in (-1e-5, -1e-6, -5e-8, -2e-8, -1e-8, -1e-9, 0.0, 1e-9, 1e-6):
        mm = m.replace(c_bar=np.array([lo + offset]))
        fast = solve_elp(mm, cs.p_hat, cs.beta, method="fast")
        lit = solve_elp(mm, cs.p_hat, cs.beta, method="lp")
        assert fast.status == lit.status, offset
        assert fast.status == ("infeasible" if offset <= -1e-6 else "optimal"), offset
        if fast.status == "infeasible":
            assert fast.min_costs[0] == pytest.approx(lo, abs=1e-9)
        else:
            assert fast.value == pytest.approx(lit.value, rel=1e-6, abs=1e-8)


# -- 5. one sampler, never a zero-probability outcome -----------------------------------------------------


def test_sampler_never_returns_a_zero_probability_outcome() -> None:
    # rows with zeros at the end whose floating-point sum falls short of 1
    rows = [
        np.array([0.5, 0.5 - 1e-10, 0.0, 0.0]),
        np.array([0.1] * 7 + [0.3, 0.0, 0.0]),
        np.array([0.0, 0.0, 1.0, 0.0]),
        np.array([0.0, 1.0 - 5e-9, 0.0, 0.0, 0.0]),
    ]
    top = np.nextafter(1.0, 0.0)
    for p in rows:
        cum = cumulative(p)
        for u in (0.0, 0.25, 0.5, 0.999999999, 1.0 - 1e-12, top):
            j = categorical(cum, u)
            assert p[j] > 0, (p, u, j)
        draws = sample_many(cum, np.random.default_rng(0).random(20_000))
        assert np.all(p[draws] > 0)


def test_every_sampling_interface_uses_the_one_sampler() -> None:
    P = np.zeros((3, 2, 3))
    P[:, 0] = [0.5, 0.5 - 1e-10, 0.0]
    P[:, 1] = [0.2, 0.0, 0.8]
    m = CMDP(P, np.zeros((3, 2)), None, None, 0, 4)
    cum = cumulative(m.P)
    env = EpisodicEnv(m, np.random.default_rng(7))
    ref = np.random.default_rng(7)
    for a in (0, 1, 1, 0):
        s = env.state
        nxt = env.step(a)[0]
        assert nxt == categorical(cum[s, a], ref.random())
    gen = GenerativeModel(m, np.random.default_rng(3))
    got = gen.sample(1, 1, size=50)
    assert np.array_equal(got, sample_many(cum[1, 1], np.random.default_rng(3).random(50)))
    assert set(got.tolist()) <= {0, 2}


# -- 6. checkpoints ---------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 10**7), st.integers(1, 200))
def test_checkpoints_always_end_at_K(K: int, points: int) -> None:
    cp = checkpoints(K, points)
    assert cp[-1] == K and cp[0] >= 1
    assert np.all(np.diff(cp) > 0)
    assert len(cp) <= points + 1


def test_checkpoints_edge_cases() -> None:
    assert checkpoints(10, 1).tolist() == [10]
    for bad in (0, -3, 2.5, "x"):
        with pytest.raises(ValueError, match="points"):
            checkpoints(10, bad)


# -- 13. public names and plain numbers in API errors -----------------------------------------------------


def test_api_errors_name_the_public_argument() -> None:
    m = random_cmdp(3, 2, 3, 1, seed=0)
    cases = [
        (lambda: solve_elp(m, m.P * 2, np.zeros_like(m.P)), "p_hat"),
        (lambda: m.replace(H=float("inf")), "H"),
        (lambda: m.replace(H=float("nan")), "H"),
        (lambda: m.replace(c_bar=["x"]), "c_bar"),
        (lambda: solve_elp(m, m.P, np.zeros_like(m.P), warm_start="abc"), "warm_start"),
        (lambda: EpisodicEnv(m, np.random.default_rng(0)).step(-1), "a"),
        (lambda: delta_p(0.1, 0, 2, 3, 1), "S"),
        (lambda: OnlineCRL(m, delta=np.float64(1.5), episodes=3), "delta"),
    ]
    for call, name in cases:
        with pytest.raises((ValueError, TypeError)) as ex:
            call()
        msg = str(ex.value)
        assert msg.startswith(name) or f" {name}" in msg, msg
        assert "np.float" not in msg and "np.int" not in msg, msg


def test_float32_inputs_are_accepted_and_inputs_not_modified() -> None:
    m = random_cmdp(4, 2, 3, 1, seed=2)
    P32 = m.P.astype(np.float32)
    P32 /= P32.sum(-1, keepdims=True, dtype=np.float64).astype(np.float32)
    r32 = m.r.astype(np.float32)
    before = r32.copy()
    m32 = CMDP(P32, r32, m.c.astype(np.float32), np.float32(m.c_bar[0]), np.int32(m.s0), 3)
    assert m32.r.dtype == np.float64 and np.array_equal(r32, before)
    res = solve_elp(m, m32.P, np.zeros((4, 2, 4), np.float32))
    assert res.status in ("optimal", "infeasible")


# -- 7-12, 15: the CLI boundary ----------------------------------------------------------------------------


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_cli_user_errors_are_one_line_exit_2_and_write_nothing(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    (tmp_path / "adir").mkdir()
    huge = tmp_path / "huge.npz"
    m = random_cmdp(2, 2, 2, 1, seed=0)
    np.savez(huge, P=m.P, r=m.r, c=m.c, c_bar=m.c_bar, s0=0, H=10**9)
    before = _snapshot(tmp_path)
    cases: list[list[str]] = [
        ["export", "1a", "missing/x.npz"],
        ["export", "1a", "adir"],
        ["export", "1a", "afile"],  # refused overwrite without --force
        ["reproduce", "--quick", "--out", "afile/sub"],
        ["learn", "1a", "--algo", "online-crl", "--episodes", "5", "--seed", "-1"],
        ["learn", "1a", "--algo", "online-crl", "--episodes", "1000000000000"],
        ["learn", "1a", "--algo", "gmbl", "--samples-per-pair", "100000000000000000000"],
        ["solve", str(huge)],
        ["solve", "adir"],
        ["bounds", "--states", "9", "--actions", "4", "--horizon", "10", "--eps", "1e-300", "--delta", "0.1"],
        ["bounds", "--states", "9", "--actions", "4", "--horizon", "10", "--eps", "0.1", "--delta", "1e-320"],
        ["learn", "1a", "--algo", "online-crl", "--episodes", "5", "--delta", "nan"],
    ]
    # one fresh interpreter for all (a refusal that regressed into work stays out of this process)
    procs = cli_batch(cases, cwd=tmp_path)
    assert _snapshot(tmp_path) == before
    for argv, proc in zip(cases, procs, strict=True):
        assert proc.returncode == 2, (argv, proc.stderr)
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, (argv, proc.stderr)
    limit = procs[cases.index(["learn", "1a", "--algo", "online-crl", "--episodes", "1000000000000"])].stderr
    assert "--max-memory" in limit and "TiB" in limit


def test_cli_internal_error_is_exit_3_with_a_traceback_file(monkeypatch: pytest.MonkeyPatch) -> None:
    import cmdp_rl.cli

    def boom(args: object) -> int:
        raise RuntimeError("kaboom")

    monkeypatch.setattr(cmdp_rl.cli, "_cmd_scenarios", boom, raising=False)  # the parser looks it up there
    proc = _cli("scenarios")
    assert proc.returncode == 3
    line = proc.stderr.strip()
    assert len(line.splitlines()) == 1 and "kaboom" in line and "Traceback" not in line
    path = re.search(r"full traceback in (\S+?);", line).group(1)
    assert "RuntimeError: kaboom" in Path(path).read_text()
    os.unlink(path)


def test_broken_pipe_is_not_a_traceback() -> None:
    proc = subprocess.run(
        f"{sys.executable} -m cmdp_rl learn --help | head -c 5", shell=True, capture_output=True, text=True, timeout=60
    )
    assert "Traceback" not in proc.stderr
    proc = subprocess.run(
        f"{sys.executable} -m cmdp_rl bounds --states 9 --actions 4 --horizon 10 --eps 0.1 --delta 0.1 | head -c 3",
        shell=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "Traceback" not in proc.stderr and proc.stdout == "inp"


TINY = """preset = "quick"
scenarios = ["2"]
runs = 2
gmbl_n_max = 40
[episodes]
2 = {episodes}
"""


def test_refused_reproduce_changes_nothing_and_tampering_is_rerun(tmp_path: Path) -> None:
    (tmp_path / "a.toml").write_text(TINY.format(episodes=30))
    (tmp_path / "b.toml").write_text(TINY.format(episodes=40))
    out = tmp_path / "out"
    assert (
        _cli("reproduce", "--config", "a.toml", "--out", "out", "--no-progress", "--jobs", "1", cwd=tmp_path).returncode
        == 0
    )
    before = _snapshot(out)
    proc = _cli("reproduce", "--config", "b.toml", "--out", "out", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 2 and "--force" in proc.stderr
    assert _snapshot(out) == before  # config.toml included
    # tampering: a flipped number is detected by its checksum, reported, rerun, never aggregated
    run = sorted((out / "runs").glob("2__online-crl__*.json"))[0]
    data = json.loads(run.read_text())
    data["columns"]["value_gap"][-1] += 1.0
    run.write_text(json.dumps(data))
    proc = _cli("reproduce", "--config", "a.toml", "--out", "out", "--no-progress", "--jobs", "1", cwd=tmp_path)
    assert proc.returncode == 0 and "checksum" in proc.stderr and "warning" in proc.stderr
    assert (out / "results.csv").read_bytes() == before["results.csv"]
    # --force is the explicit way to replace another configuration's runs
    proc = _cli(
        "reproduce", "--config", "b.toml", "--out", "out", "--no-progress", "--force", "--jobs", "1", cwd=tmp_path
    )
    from cmdp_rl.experiments import load_config

    assert proc.returncode == 0 and load_config(out / "config.toml").episodes["2"] == 40


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "State:\tZ" not in state


@pytest.mark.slow
# SIGINT on a sweep with workers (130, one line, nothing left) is sampled by
# tests/faults/test_faults_interrupts.py (its compare case) in make test, at random points
@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143)])
def test_signal_stops_workers_keeps_finished_runs_and_resumes(tmp_path: Path, sig: int, code: int) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('preset = "quick"\nscenarios = ["1a"]\nruns = 6\ngmbl_n_max = 40\n[episodes]\n1a = 2500\n')
    argv = [
        sys.executable,
        "-m",
        "cmdp_rl",
        "reproduce",
        "--config",
        str(cfg),
        "--out",
        str(tmp_path / "o"),
        "--no-progress",
        "--jobs",
        "2",
    ]
    # a shell starts background jobs with SIGINT ignored, and Python then keeps ignoring it (Unix
    # semantics a user of `cmdp-rl ... &` expects): give the child the default disposition
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    runs = tmp_path / "o" / "runs"
    deadline = time.time() + 120
    workers: list[int] = []
    while time.time() < deadline and not list(runs.glob("*.json")):
        workers = sorted(set(workers) | set(_children(proc.pid)))
        time.sleep(0.05)
    assert list(runs.glob("*.json")), "no run finished in time"
    workers = sorted(set(workers) | set(_children(proc.pid)))
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert "Traceback" not in err
    time.sleep(0.5)
    assert workers and not [w for w in workers if _alive(w)], "worker processes left running"
    kept = len(list(runs.glob("*.json")))
    assert kept < 12
    done = _cli(*argv[3:])  # the rerun: the same command, in this process
    assert done.returncode == 0, done.stderr
    assert f"{kept} reused" in done.stdout


def test_newcomer_first_hour(tmp_path: Path) -> None:
    from cmdp_rl import __version__

    assert _cli("--version").stdout.strip() == f"cmdp-rl {__version__}"
    assert "optimal" in _cli("solve", "1a", "--json").stdout
    # an existing file of a scenario's name wins over the scenario
    m = random_cmdp(3, 2, 2, 1, seed=0, slack=0.5)
    m.save(tmp_path / "1a")
    assert "S=3" in _cli("solve", "1a", cwd=tmp_path).stdout
    proc = _cli(
        "learn", "2", "--algo", "online-crl", "--episodes", "20", "--policy-out", "p.npy", "--json", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    pol = np.load(tmp_path / "p.npy")
    assert pol.shape == (10, 9, 4) and np.allclose(pol.sum(-1), 1.0)


def test_readme_links_stay_in_the_repository() -> None:
    text = (ROOT / "README.md").read_text()
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        assert not target.startswith(("http://", "https://", "../")), target
        assert (ROOT / target).exists(), target
    assert "../shared" not in text
    assert "docs/references.md" in text and re.search(r"^# References", (ROOT / "docs/references.md").read_text())


# -- 19. module layout, exports, short repr ------------------------------------------------------------------


def test_top_level_exports_short_repr_and_no_import_cycle() -> None:
    import ast

    import cmdp_rl

    for name in (
        "OnlineCRL",
        "OptimisticGMBL",
        "EpisodicEnv",
        "GenerativeModel",
        "Scorer",
        "CMDP",
        "solve",
        "solve_elp",
        "random_cmdp",
        "scenario_cmdp",
    ):
        assert hasattr(cmdp_rl, name), name
    res = cmdp_rl.solve(cmdp_rl.scenario_cmdp("1b"))
    text = repr(res)
    assert len(text) < 300 and text.startswith("PlanResult(status='optimal'") and "array([" not in text
    tree = ast.parse((ROOT / "src" / "cmdp_rl" / "model" / "cmdp.py").read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert "cmdp_rl.evaluation.evaluate" not in imported and "cmdp_rl.envs.generators" not in imported
    assert any(m and m.startswith("cmdp_rl.model.") for m in imported)  # the check reads the imports
