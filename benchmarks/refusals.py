"""``refusals``: how long a far-too-large job takes to be refused (goal: under a second).

The fault suite (``tests/faults/test_faults_limits.py``) checks that such a job is refused before
any work, by what the refusal did (no model built, no planner, learner or run entered, nothing
allocated or written); how long it takes is a time, and lives here. Each row is one command line
of that suite, timed two ways: in this process with the imports done (``cmdp_rl.cli.main``: the
refusal itself), and in a fresh interpreter (``python -m cmdp_rl ARGS``, as a user's shell runs
it) above ``cmdp-rl --version`` in a fresh interpreter (the interpreter's start and the imports,
which no refusal can avoid). Medians after one warm-up run.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .common import Col, Table, banner, fmt_ratio, fmt_time, measure

#: command lines of the fault suite's class 1 (``OUT`` becomes a path in a scratch folder)
CASES: tuple[list[str], ...] = (
    ["export", "garnet:S=10000000", "OUT.npz"],
    ["export", "distinct:n=100000", "OUT.npz"],
    ["solve", "garnet:S=200000", "--max-time", "1s"],
    ["learn", "1a", "--episodes", str(10**12)],
    ["learn", "--env", "cmdp_rl/1a-v0", "--horizon", str(10**9), "--c-bar", "1", "--episodes", "2"],
    ["pg", "ding-random", "--iterations", str(10**12), "--out", "OUT"],
    ["frontier", "1a", "--points", str(10**9), "--out", "OUT"],
    ["compare", "1a", "--algos", "plugin", "--runs", str(10**9), "--out", "OUT"],
    ["reproduce", "--quick", "--runs", str(10**9), "--out", "OUT"],
)
REPS, QUICK_REPS = 9, 3
SUBPROCESS_REPS, QUICK_SUBPROCESS_REPS = 5, 2
#: the goal for a refusal's own time (in process), seconds
GOAL_SECONDS = 1.0


def _argv(argv: list[str], work: Path) -> list[str]:
    return [str(work / a) if a.startswith("OUT") else a for a in argv]


def _in_process(argv: list[str], reps: int) -> float:
    from cmdp_rl.cli import main

    def call() -> None:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            code = main(argv)
        if code != 2:
            raise SystemExit(f"cmdp-rl {' '.join(argv)}: exit {code}, not a refusal (2)")

    return float(measure(call, reps, warmup=1).stats.median)


def _subprocess(argv: list[str], reps: int, code: int = 2) -> float:
    def call() -> None:
        proc = subprocess.run([sys.executable, "-m", "cmdp_rl", *argv], capture_output=True, text=True)
        if proc.returncode != code:
            raise SystemExit(f"cmdp-rl {' '.join(argv)}: exit {proc.returncode}\n{proc.stderr[-1000:]}")

    return float(measure(call, reps, warmup=1).stats.median)


def run(quick: bool = False) -> Table:
    """Run the ``refusals`` benchmark, print and save its table."""
    banner(
        "refusals: a far-too-large job refused, in process and in a fresh interpreter" + (" (quick)" if quick else "")
    )
    reps = QUICK_REPS if quick else REPS
    sub_reps = QUICK_SUBPROCESS_REPS if quick else SUBPROCESS_REPS
    baseline = _subprocess(["--version"], sub_reps, code=0)
    table = Table(
        "refusals",
        "Time to refuse a far-too-large job (median, after one warm-up run)",
        [
            Col("command", "command line", left=True),
            Col("in_process", "in process", fmt_time),
            Col("over_version", "fresh interpreter, above --version", fmt_time),
            Col("over_goal", "in process, of the 1 s goal", fmt_ratio),
        ],
        notes=[
            f"in process: cmdp_rl.cli.main, imports done, {reps} runs; fresh interpreter: python -m cmdp_rl, "
            f"{sub_reps} runs, minus `cmdp-rl --version` ({fmt_time(baseline)})",
        ],
    )
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for case in CASES:
            argv = _argv(case, work)
            own = _in_process(argv, reps)
            wall = _subprocess(argv, sub_reps)
            name = " ".join(case)
            row: dict[str, Any] = {
                "command": name,
                "in_process": own,
                "over_version": wall - baseline,
                "over_goal": own / GOAL_SECONDS,
            }
            print(f"  {name}: {fmt_time(own)} in process, {fmt_time(wall - baseline)} above --version", flush=True)
            table.add(**row)
    table.print()
    table.save(quick, params={"reps": reps, "subprocess_reps": sub_reps, "goal_seconds": GOAL_SECONDS})
    return table
