"""Round 3, class 6: interrupts outside the work, and workers.

From the package's first lines to the exit, SIGINT ends the command line with 130 and SIGTERM
with 143, with its one line (``cmdp-rl CMD: interrupted`` / ``terminated``) as the whole of
stderr beyond what the command printed before, its outputs complete or absent, and no worker
left computing. Before this class was fixed: a signal in the first ~0.4 s printed a traceback and
killed the process (SIGTERM: silently); one raised inside a callback whose exceptions CPython
ignores was lost ("Exception ignored in ...", and the command ran on to exit 0); one after the
result was printed killed the process or printed a ``threading._shutdown`` traceback with exit
0; a Ctrl-C to the whole process group printed a worker's ``spawn_main`` traceback; and the
workers of a driver killed with ``SIGKILL`` went on computing as orphans.

The signals are sent by the process to itself at chosen moments (``inject/sitecustomize.py``:
at the K-th import from that of ``cmdp_rl`` on, walking through the start-up and the lazy imports
of the work; inside a garbage-collector or weakref callback; from the last exit function), and
from outside at random moments (``make faults``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from faultkit import EXIT_OK, EXIT_SIGINT, EXIT_SIGTERM, FULL, cases, cli, popen

CLASS = "Round 3: 6. Interrupts outside the work"

INJECT = Path(__file__).parent / "inject"
CODES = {"SIGINT": (EXIT_SIGINT, "interrupted"), "SIGTERM": (EXIT_SIGTERM, "terminated")}

#: short commands whose whole life (start-up, work, exit) the injected signals walk through
COMMANDS = {
    "solve": ["solve", "1a", "--json"],
    "learn": ["learn", "1a", "--episodes", "300", "--json", "--policy-out", "pi.npy"],
    "compare": ["compare", "1a", "--algos", "online-crl", "--episodes", "200", "--runs", "2", "--jobs", "2",
                "--out", "cmp", "--no-progress"],
}  # fmt: skip


def _injected(argv: list[str], spec: str, cwd: Path) -> tuple[subprocess.CompletedProcess[str], str]:
    """Run ``cmdp-rl ARGV`` with the signal of ``spec`` injected; the process and what the injector logged."""
    log = cwd / "inject.log"
    env = {"PYTHONPATH": os.pathsep.join([str(INJECT), os.environ.get("PYTHONPATH", "")]), "CMDP_RL_INJECT": spec,
           "CMDP_RL_INJECT_LOG": str(log)}  # fmt: skip
    proc = cli(*argv, cwd=cwd, env=env, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    return proc, log.read_text() if log.exists() else ""


def _check_stderr(err: str, command: str, word: str) -> None:
    """The interrupt's one line last, said once; before it only the command's own notes (a
    sweep's "finished runs are kept"), no traceback or error from the process or a worker."""
    lines = err.splitlines()
    assert lines and lines[-1] == f"cmdp-rl {command}: {word}", err[-2000:]
    assert sum(word in line for line in lines) == 1, err[-2000:]
    assert all(line.startswith(f"cmdp-rl {command}: ") for line in lines), err[-2000:]
    for bad in ("Traceback", "Exception ignored", "Fatal Python error", "KeyboardInterrupt", "error"):
        assert bad not in err, err[-2000:]


def _check(proc: subprocess.CompletedProcess[str], command: str, name: str, cwd: Path) -> None:
    """The documented ending: 130 / 143, the one line, outputs complete or absent."""
    code, word = CODES[name]
    assert proc.returncode == code, (proc.returncode, proc.stderr[-2000:])
    _check_stderr(proc.stderr, command, word)
    if proc.stdout.strip() and "--json" in proc.args:  # printed before the signal: the whole result
        json.loads(proc.stdout)
    if (cwd / "pi.npy").exists():  # written whole or not at all: a policy, each row a distribution
        pi = np.load(cwd / "pi.npy")
        assert pi.ndim == 3 and np.allclose(pi.sum(axis=-1), 1.0)
    left = [p.name for p in cwd.rglob("*") if p.name.startswith(".tmp-") or p.name.endswith(".lock")]
    assert not left, left


def _count_imports(argv: list[str], cwd: Path) -> int:
    """How many imports a run of ``cmdp-rl ARGV`` makes from that of ``cmdp_rl`` on (no signal)."""
    log = cwd / "imports.log"
    code = (  # counted in the command's process only (its workers inherit PYTHONPATH)
        "import os, sys, atexit\nn = [None]\ndef h(e, a):\n    if e == 'import':\n"
        "        if n[0] is None and a[0] == 'cmdp_rl': n[0] = 0\n        elif n[0] is not None: n[0] += 1\n"
        "if os.environ.setdefault('COUNT_PID', str(os.getpid())) == str(os.getpid()):\n"
        f"    sys.addaudithook(h)\n    atexit.register(lambda: open({str(log)!r}, 'w').write(str(n[0])))\n"
    )
    site = cwd / "count_site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(code)
    proc = cli(*argv, cwd=cwd, env={"PYTHONPATH": str(site)})
    assert proc.returncode == EXIT_OK, proc.stderr[-2000:]
    return int(log.read_text())


@pytest.mark.parametrize("command", ["solve"] if not FULL else sorted(COMMANDS))
def test_a_signal_at_any_import_ends_with_the_documented_line(command: str, tmp_path: Path, tally) -> None:
    """The K-th import from that of ``cmdp_rl`` on: the start-up (the package, the parser), the
    command's lazy imports (NumPy, SciPy, numba, its modules) and the imports while it works."""
    argv = COMMANDS[command]
    (tmp_path / "count").mkdir()
    total = _count_imports(argv, tmp_path / "count")
    rng = np.random.default_rng(len(command))
    n = cases(3, 24)
    # the injector's own imports come before cmdp_rl's: a run with it makes a few fewer after it
    ks = sorted({1, 2, *rng.integers(3, total - 20, size=n - 2).tolist()})
    for i, k in enumerate(ks):
        name = ("SIGINT", "SIGTERM")[i % 2]
        work = tmp_path / f"k{k}"
        work.mkdir()
        proc, log = _injected(argv, f"{name}:import:{k}", work)
        assert log, f"import {k} of {total}: no signal sent"
        _check(proc, command, name, work)
    tally(len(ks))


@pytest.mark.parametrize("where", ["gc", "weakref"])
def test_a_signal_inside_a_callback_whose_exceptions_are_ignored_is_not_lost(where: str, tmp_path: Path, tally) -> None:
    """Raised inside a garbage-collector or weakref callback (CPython prints "Exception ignored"
    and goes on): the command still ends with 130 / 143 and only its line, never 0."""
    n = cases(1, 8)
    for i in range(n):
        command = ("learn", "solve")[i % 2]
        argv = COMMANDS[command]
        name = ("SIGINT", "SIGTERM")[(i // 2) % 2]
        k = (500, 300, 900, 250, 700, 400, 800, 600)[i]  # in the command's work (its imports from about the 150th)
        work = tmp_path / f"case{i}"
        work.mkdir()
        proc, log = _injected(argv, f"{name}:{where}:{k}", work)
        assert log, "no signal sent"
        assert "Exception ignored" not in proc.stderr, proc.stderr[-2000:]
        _check(proc, command, name, work)
    tally(n)


@pytest.mark.parametrize("command", ["compare"] if not FULL else sorted(COMMANDS))
def test_a_signal_after_the_result_is_printed(command: str, tmp_path: Path, tally) -> None:
    """From the last exit function: the result is printed (complete), the workers are stopped,
    and the process ends with 130 / 143 and the one line, not by the signal, not with 0."""
    n = cases(1, 4)
    for i in range(n):
        name = ("SIGINT", "SIGTERM")[i % 2]
        work = tmp_path / f"case{i}"
        work.mkdir()
        proc, log = _injected(COMMANDS[command], f"{name}:atexit", work)
        assert log, "no signal sent"
        _check(proc, command, name, work)
        if command == "compare":
            assert (work / "cmp" / "COMPLETE").exists()  # the work had ended: the folder is whole
        elif command == "solve":
            assert json.loads(proc.stdout)["status"] == "optimal"
    tally(n)


def _children(pid: int) -> set[int]:
    """The process ids whose parent is ``pid`` (Linux ``/proc``)."""
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.add(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


LONG_COMPARE = ["compare", "1b", "--algos", "online-crl", "--episodes", "200000", "--runs", "2", "--jobs", "2",
                "--out", "cmp", "--no-progress"]  # fmt: skip


def _wait_for_workers(proc: subprocess.Popen[str], want: int) -> set[int]:
    for _ in range(600):  # a guard against a hang, not a bound: the workers start in seconds
        kids = {p for p in _children(proc.pid) if _alive(p)}
        workers = {p for p in kids if "spawn_main" in Path(f"/proc/{p}/cmdline").read_text(errors="replace")}
        if len(workers) >= want:
            return workers
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        time.sleep(0.1)
    raise AssertionError("the workers did not start")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_driver_killed_with_sigkill_leaves_no_worker(tmp_path: Path, tally) -> None:
    n = cases(1, 3)
    for i in range(n):
        work = tmp_path / f"case{i}"
        work.mkdir()
        proc = popen(*LONG_COMPARE, cwd=work)
        try:
            workers = _wait_for_workers(proc, 2)
        finally:
            proc.kill()
            proc.communicate()
        for _ in range(600):  # PR_SET_PDEATHSIG ends them at once, the watchdog within a second
            if not any(_alive(p) for p in workers):
                break
            time.sleep(0.1)
        assert not any(_alive(p) for p in workers), "orphan workers are still running"
    tally(n)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_ctrl_c_to_the_process_group_is_the_drivers(tmp_path: Path, tally) -> None:
    """SIGINT to the whole group (a terminal's Ctrl-C), while the workers start or compute: the
    driver's line only, no worker traceback (``spawn_main``), no worker left."""
    rng = np.random.default_rng(11)
    n = cases(1, 4)
    for i in range(n):
        work = tmp_path / f"case{i}"
        work.mkdir()
        proc = subprocess.Popen(
            [sys.executable, "-m", "cmdp_rl", *LONG_COMPARE],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=work,
            env={**os.environ, "MPLBACKEND": "Agg"},
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
            start_new_session=True,
        )
        try:
            if i % 2 == 0:
                workers = _wait_for_workers(proc, 1)  # as the first worker is starting
            else:
                workers = _wait_for_workers(proc, 2)
                time.sleep(float(rng.uniform(0.0, 2.0)))
            os.killpg(proc.pid, signal.SIGINT)
            _, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        assert proc.returncode == EXIT_SIGINT, err[-2000:]
        _check_stderr(err, "compare", "interrupted")
        assert not any(_alive(p) for p in workers)
    tally(n)


@pytest.mark.skipif(not FULL, reason="make faults: signals from outside at random moments")
@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM"])
def test_signals_from_outside_at_random_moments(name: str, tmp_path: Path, tally) -> None:
    """``solve`` signalled from 0.1 s after its start (the interpreter's own start-up, before the
    package, is not the package's) to its exit: 130 / 143 and the one line; or, when the process
    had already ended, 0 with the whole result."""
    rng = np.random.default_rng(ord(name[3]))
    n = 40
    for i in range(n):
        work = tmp_path / f"case{i}"
        work.mkdir()
        proc = popen("solve", "1a", "--json", cwd=work)
        time.sleep(float(rng.uniform(0.1, 1.5)))
        proc.send_signal(getattr(signal, name))
        out, err = proc.communicate(timeout=60)
        if proc.returncode == EXIT_OK:
            assert err == "" and json.loads(out)["status"] == "optimal"
            continue
        _check(subprocess.CompletedProcess(proc.args, proc.returncode, out, err), "solve", name, work)
    tally(n)
