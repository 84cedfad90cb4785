"""Class 3: repeated and concurrent runs into one results folder (and one run log).

Every command that writes a folder (``compare``, ``reproduce``, ``study``, ``pg``, ``frontier``)
goes through one helper (``cmdp_rl.plumbing.results_folder``): the folder's ``config.toml`` owns it, a run
of another configuration is refused naming the differing settings (exit 2, nothing changed)
unless ``--force``; ``OUT/.lock`` makes a second concurrent run refuse with exit 2 (a stale lock
of a dead process on this host is taken over with a warning); ``OUT/COMPLETE`` is written last.
``learn --run-log F`` follows the same rules through ``F.lock``. Before this class was fixed,
``compare`` into a folder of another configuration overwrote its results, and two runs into one
folder interleaved.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from faultkit import EXIT_BAD_INPUT, FULL, assert_one_line_refusal, cases, cli, popen, run_main, tree, work_done

from cmdp_rl.cli import main
from cmdp_rl.plumbing.results_folder import Lock

CLASS = "3. Concurrent and repeated runs"

TINY_TOML = """\
preset = "quick"
runs = 1
scenarios = ["1a"]
gmbl_n_min = 5
gmbl_points = 2
gmbl_n_max = 50
episodes = 20
checkpoints = 3
eps = [0.5]
jobs = 1
"""

#: per command: a small run into OUT, and the same with one setting changed (the settings named)
COMMANDS: dict[str, tuple[list[str], list[str], str]] = {
    "compare": (
        ["compare", "1a", "--algos", "plugin", "--episodes", "30", "--runs", "1", "--jobs", "1", "--no-progress"],
        ["compare", "1a", "--algos", "plugin", "--episodes", "40", "--runs", "1", "--jobs", "1", "--no-progress"],
        "episodes 30 -> 40",
    ),
    "reproduce": (
        ["reproduce", "--config", "tiny.toml", "--no-progress"],
        ["reproduce", "--config", "tiny.toml", "--seed", "5", "--no-progress"],
        "seed 0 -> 5",
    ),
    "pg": (
        ["pg", "ding-random:seed=10", "--iterations", "5"],
        ["pg", "ding-random:seed=10", "--iterations", "6"],
        "iterations 5 -> 6",
    ),
    "frontier": (
        ["frontier", "1a", "--points", "3"],
        ["frontier", "1a", "--points", "4"],
        "points 3 -> 4",
    ),
}


def _setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "tiny.toml").write_text(TINY_TOML)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("command", sorted(COMMANDS) if FULL else ("compare", "frontier", "pg"))
def test_another_configuration_is_refused_then_forced(command: str, tmp_path: Path, monkeypatch, tally) -> None:
    work = _setup(tmp_path, monkeypatch)
    first, other, differs = COMMANDS[command]
    done = run_main(*first, "--out", "out")
    assert done.returncode == 0, done.stderr[-2000:]
    out = work / "out"
    assert (out / "COMPLETE").is_file() and (out / "config.toml").is_file() and not (out / ".lock").exists()
    before = tree(out)
    refused = run_main(*other, "--out", "out")
    line = assert_one_line_refusal(refused)
    assert "another configuration" in line and differs in line and "--force" in line, line
    assert tree(out) == before  # nothing written, nothing removed
    again = run_main(*first, "--out", "out")  # the same configuration: a rerun is fine
    assert again.returncode == 0, again.stderr[-2000:]
    forced = run_main(*other, "--out", "out", "--force")
    assert forced.returncode == 0, forced.stderr[-2000:]
    assert (out / "COMPLETE").is_file() and not (out / ".lock").exists()
    assert differs.split(" -> ")[1] in (out / "config.toml").read_text()
    tally(4)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_held_folder_is_refused(command: str, tmp_path: Path, monkeypatch, tally) -> None:
    """While another run holds OUT/.lock, the command refuses at once and writes nothing (the
    holder is this test; a real second process is in the test of two runs at once)."""
    work = _setup(tmp_path, monkeypatch)
    out = work / "out"
    out.mkdir()
    holder = Lock(out / ".lock", "cmdp-rl compare", f"--out {out}")  # this test process holds it
    try:
        before = tree(work)
        refused = run_main(*COMMANDS[command][0], "--out", "out")
        line = assert_one_line_refusal(refused)
        assert "in use by another run" in line and f"pid {os.getpid()}" in line, line
        assert tree(work) == before
    finally:
        holder.release()
    assert not (out / ".lock").exists()
    tally(1)


def test_two_runs_at_once_one_refused_the_other_complete(tmp_path: Path, tally) -> None:
    """Two compare runs started together into one folder: one runs, the other is refused; the
    results equal those of a run alone, byte for byte (nothing interleaved)."""
    argv = ["compare", "1a", "--algos", "online-crl", "--episodes", "2000", "--runs", "2", "--jobs", "1"]
    argv.append("--no-progress")
    alone = run_main(*argv, "--out", str(tmp_path / "alone"))  # alone: no process of its own needed
    assert alone.returncode == 0, alone.stderr[-2000:]
    n = cases(1, 5)
    for i in range(n):
        out = tmp_path / f"both{i}"
        procs = [popen(*argv, "--out", str(out)) for _ in range(2)]
        results = [(p.wait(timeout=600), p.communicate()[1]) for p in procs]
        codes = sorted(code for code, _ in results)
        assert codes == [0, EXIT_BAD_INPUT], [(c, e[-500:]) for c, e in results]
        refused = next(err for code, err in results if code == EXIT_BAD_INPUT)
        assert "in use by another run" in refused.strip().splitlines()[-1]
        assert (out / "COMPLETE").is_file() and not (out / ".lock").exists()
        assert (out / "results.csv").read_bytes() == (tmp_path / "alone" / "results.csv").read_bytes()
    tally(n)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_dead_run_s_lock_is_taken_over_with_a_warning(tmp_path: Path, tally) -> None:
    out = tmp_path / "out"
    out.mkdir()
    info = {"pid": _dead_pid(), "host": socket.gethostname(), "started": "2026-01-01T00:00:00+00:00"}
    (out / ".lock").write_text(json.dumps({**info, "command": "cmdp-rl frontier"}))
    done = run_main("frontier", "1a", "--points", "3", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "taking over the lock" in done.stderr and f"pid {info['pid']}" in done.stderr
    assert (out / "COMPLETE").is_file() and not (out / ".lock").exists()
    tally(1)


def test_another_host_s_lock_is_never_taken_over(tmp_path: Path, tally) -> None:
    out = tmp_path / "out"
    out.mkdir()
    lock = json.dumps({"pid": 1, "host": "elsewhere.example", "started": "2026-01-01T00:00:00+00:00"})
    (out / ".lock").write_text(lock)
    refused = run_main("frontier", "1a", "--points", "3", "--out", str(out))
    line = assert_one_line_refusal(refused)
    assert "another machine" in line and "elsewhere.example" in line
    assert (out / ".lock").read_text() == lock and sorted(p.name for p in out.iterdir()) == [".lock"]
    tally(1)


def test_study_refuses_another_configuration_before_any_work(tmp_path: Path, tally) -> None:
    out = tmp_path / "study"
    out.mkdir()
    (out / "config.toml").write_text("# cmdp-rl study n-constraints settings\nruns = 99\n")
    before = tree(out)
    refused = cli("study", "n-constraints", "--quick", "--out", str(out))
    line = assert_one_line_refusal(refused)
    assert "another configuration" in line and "runs 99 -> 2" in line, line
    assert tree(out) == before
    # before any work: in this process, no run (no episode, no runner), no model designed (no
    # planner, no kernel), nothing allocated, nothing written
    code, done = work_done(lambda: main(["study", "n-constraints", "--quick", "--out", str(out)]))
    assert code == EXIT_BAD_INPUT
    done.assert_none("study into another configuration's folder")
    assert tree(out) == before
    tally(1)


def test_a_folder_of_another_command_is_refused(tmp_path: Path, tally) -> None:
    done = run_main("frontier", "1a", "--points", "3", "--out", str(tmp_path / "out"))
    assert done.returncode == 0
    before = tree(tmp_path / "out")
    refused = run_main("pg", "ding-random:seed=10", "--iterations", "3", "--out", str(tmp_path / "out"))
    line = assert_one_line_refusal(refused)
    assert "command frontier -> pg" in line
    assert tree(tmp_path / "out") == before
    tally(1)


def test_run_log_is_held_by_its_lock(tmp_path: Path, tally) -> None:
    """learn --run-log F while F.lock is held: refused, the log untouched; afterwards it runs,
    writes its header, episodes and the final complete line, and removes F.lock."""
    log = tmp_path / "run.jsonl"
    argv = ["learn", "--env", "cmdp_rl/1a-v0", "--horizon", "10", "--c-bar", "2", "--episodes", "5", "--deploy", "last"]
    holder = Lock(Path(f"{log}.lock"), "cmdp-rl learn", f"--run-log {log}")
    try:
        refused = cli(*argv, "--run-log", str(log))
        line = assert_one_line_refusal(refused)
        assert "in use by another run" in line
        assert not log.exists()
    finally:
        holder.release()
    done = cli(*argv, "--run-log", str(log))
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [json.loads(x) for x in log.read_text().splitlines()]
    assert "config" in rows[0] and rows[-1] == {"complete": True} and len(rows) == 7
    assert not Path(f"{log}.lock").exists()
    tally(2)


def test_lock_records_who_holds_it(tmp_path: Path, tally) -> None:
    lock = Lock(tmp_path / ".lock", "cmdp-rl compare", "--out x")
    try:
        info = json.loads((tmp_path / ".lock").read_text())
        assert info["pid"] == os.getpid() and info["host"] == socket.gethostname()
        assert info["command"] == "cmdp-rl compare" and np.datetime64(info["started"][:19]) is not None
    finally:
        lock.release()
    assert not (tmp_path / ".lock").exists()
    tally(1)
