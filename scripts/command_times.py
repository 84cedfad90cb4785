"""Time the short commands whose durations the docs quote, each in a fresh ``cmdp-rl`` process.

Targets (``--only``, repeatable; all by default):

* ``first-solve``: ``cmdp-rl solve 1a`` with an empty compilation cache (``NUMBA_CACHE_DIR`` set
  to a new folder, so the numerical kernels are compiled as on a new install), then the same
  command again with that cache filled (the README's "the first solve compiles the kernels");
* ``interrupt``: ``cmdp-rl learn`` (the batched Online-CRL, 200,000 episodes) sent SIGINT or
  SIGTERM a few seconds after it started, alternately; how soon it exits after the signal and
  with which code (docs/reliability.md). Its kernels are compiled first by a short run;
* ``study-quick``: ``cmdp-rl study n-constraints --quick`` with the kernels compiled by a first
  run (docs/log-n-study.md).

A compiling first run's time is recorded apart (``warmup_run``).

Every run records its wall time and the 1-minute load average before it. The results are merged
into ``docs/command-times.json`` (one entry per target, replaced when the target is measured
again) with the machine (CPU count, platform, Python), the commit and whether the tree was
clean (``--allow-dirty`` to measure a modified tree; it is recorded). Run it on an otherwise
idle machine for the times a user sees; a busy machine's times are recorded as such::

    python scripts/command_times.py [--only first-solve|interrupt|study-quick] [--trials N]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "command-times.json"
CLI = [sys.executable, "-m", "cmdp_rl"]
#: the long run of the fault suite's interrupt class (tests/faults/test_faults_interrupts.py)
LEARN = ["learn", "garnet:S=60,A=4,H=20,seed=1", "--episodes", "200000", "--max-time", "1h"]


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _env(cache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["NUMBA_CACHE_DIR"] = str(cache)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH", "")]))
    return env


def _timed(argv: list[str], cwd: Path, env: dict[str, str]) -> dict[str, Any]:
    """Run ``cmdp-rl ARGV`` to its end; its wall time, exit code and the load average before it."""
    load = _load()
    start = time.perf_counter()
    proc = subprocess.run([*CLI, *argv], cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"cmdp-rl {' '.join(argv)}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    return {"seconds": round(seconds, 2), "exit_code": proc.returncode, "load_before": load}


def first_solve(work: Path, trials: int) -> dict[str, Any]:
    runs: list[dict[str, Any]] = []
    for _ in range(trials):
        cache = Path(tempfile.mkdtemp(prefix="numba-cache-", dir=work))
        env = _env(cache)
        cold = _timed(["solve", "1a"], work, env)
        warm = _timed(["solve", "1a"], work, env)
        runs.append({"cold_cache": cold, "warm_cache": warm})
        print(f"  solve 1a: {cold['seconds']} s with an empty cache, then {warm['seconds']} s", flush=True)
    return {
        "command": "cmdp-rl solve 1a (a fresh process; NUMBA_CACHE_DIR empty, then filled)",
        "runs": runs,
        "cold_seconds": _summary([r["cold_cache"]["seconds"] for r in runs]),
        "warm_seconds": _summary([r["warm_cache"]["seconds"] for r in runs]),
    }


def interrupt(work: Path, trials: int) -> dict[str, Any]:
    env = _env(Path(tempfile.mkdtemp(prefix="numba-cache-", dir=work)))
    warmup = _timed([*LEARN[:2], "--episodes", "300"], work, env)  # compiles the kernels
    runs: list[dict[str, Any]] = []
    for k in range(trials):
        sig = signal.SIGINT if k % 2 == 0 else signal.SIGTERM
        after = 3.0 + (k % 3)
        load = _load()
        proc = subprocess.Popen([*CLI, *LEARN], cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            time.sleep(after)
            if proc.poll() is not None:
                raise SystemExit(f"cmdp-rl {' '.join(LEARN)} ended before the signal: {proc.communicate()[1][-500:]!r}")
            t0 = time.perf_counter()
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=120)
            latency = time.perf_counter() - t0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        text = err.decode(errors="replace")
        last = text.strip().splitlines()[-1:] or [""]
        runs.append(
            {
                "signal": sig.name,
                "after_seconds": after,
                # its announcement of a long run, printed once the model is built and the episodes begin
                "learning_started": "more than a minute of work" in text,
                "exit_code": proc.returncode,
                "seconds_to_exit": round(latency, 3),
                "last_stderr_line": last[0][-200:],
                "load_before": load,
            }
        )
        started = "learning" if runs[-1]["learning_started"] else "before learning"
        print(f"  {sig.name} after {after} s ({started}): exit {proc.returncode} {latency:.3f} s later", flush=True)
    return {
        "command": "cmdp-rl " + " ".join(LEARN),
        "warmup_run": warmup,  # compiles the kernels; timed, not part of the measurement
        "runs": runs,
        "seconds_to_exit": _summary([r["seconds_to_exit"] for r in runs]),
    }


def study_quick(work: Path, trials: int) -> dict[str, Any]:
    env = _env(Path(tempfile.mkdtemp(prefix="numba-cache-", dir=work)))
    argv = ["study", "n-constraints", "--quick", "--no-progress"]
    warmup = _timed([*argv, "--out", str(work / "study-warmup")], work, env)  # compiles the kernels
    runs = [_timed([*argv, "--out", str(work / f"study-{k}")], work, env) for k in range(trials)]
    for run in runs:
        print(f"  study n-constraints --quick: {run['seconds']} s", flush=True)
    return {
        "command": "cmdp-rl study n-constraints --quick --out DIR (kernels compiled by a first run)",
        "warmup_run": warmup,  # compiles the kernels; timed, not part of the measurement
        "runs": runs,
        "seconds": _summary([r["seconds"] for r in runs]),
    }


def _summary(values: list[float]) -> dict[str, float]:
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


TARGETS: dict[str, Callable[[Path, int], dict[str, Any]]] = {
    "first-solve": first_solve,
    "interrupt": interrupt,
    "study-quick": study_quick,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", action="append", choices=list(TARGETS), help="measure only this target (repeatable)")
    ap.add_argument("--trials", type=int, default=None, help="runs per target (default: 3; interrupt 6)")
    ap.add_argument("--allow-dirty", action="store_true", help="measure a tree with uncommitted changes")
    args = ap.parse_args()
    dirty = bool(_git("status", "--porcelain", "--untracked-files=no"))
    if dirty and not args.allow_dirty:
        raise SystemExit("the tree has uncommitted changes: commit them (or --allow-dirty)")
    data: dict[str, Any] = json.loads(OUT.read_text()) if OUT.exists() else {}
    work = Path(tempfile.mkdtemp(prefix="cmdp-rl-times-"))
    try:
        for name in args.only or list(TARGETS):
            print(f"{name} ...", flush=True)
            trials = args.trials or (6 if name == "interrupt" else 3)
            entry = TARGETS[name](work, trials)
            entry.update(
                {
                    "commit": _git("rev-parse", "--short", "HEAD"),
                    "clean_tree": not dirty,
                    "date": time.strftime("%Y-%m-%dT%H:%M:%S"),
                    "machine": {
                        "cpus": os.cpu_count(),
                        "platform": platform.platform(),
                        "python": platform.python_version(),
                    },
                }
            )
            data[name] = entry
            OUT.write_text(json.dumps(dict(sorted(data.items())), indent=1) + "\n")
        print(f"wrote {OUT.relative_to(ROOT)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
