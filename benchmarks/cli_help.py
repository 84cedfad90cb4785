"""``cli_help``: how long ``cmdp-rl --help`` and ``cmdp-rl COMMAND --help`` take (goal: under 0.3 s).

Each row times a fresh interpreter running the console script's entry (``python -m cmdp_rl
ARGS``), as a user's shell does, with pytest-benchmark's timer: the median of the runs after one
warm-up run. Beside it, the same interpreter doing nothing (``python -c pass``) and importing
NumPy alone, for scale: the start-up cost no package can avoid, and what loading NumPy alone
would add. The help pages load neither NumPy, SciPy, Numba nor Gymnasium (a test checks it).
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from .common import Col, Table, banner, fmt_ratio, fmt_time, measure

#: the command lines timed (after ``python -m cmdp_rl``); the two baselines run ``python -c``
CASES: tuple[tuple[str, list[str]], ...] = (
    ("cmdp-rl --help", ["-m", "cmdp_rl", "--help"]),
    ("cmdp-rl solve --help", ["-m", "cmdp_rl", "solve", "--help"]),
    ("cmdp-rl learn --help", ["-m", "cmdp_rl", "learn", "--help"]),
    ("cmdp-rl --version", ["-m", "cmdp_rl", "--version"]),
    ("python -c pass", ["-c", "pass"]),
    ("python -c 'import numpy'", ["-c", "import numpy"]),
)
REPS, QUICK_REPS = 15, 5
#: the issue's goal for the help pages
GOAL_SECONDS = 0.3


def _time(args: list[str], reps: int) -> float:
    def call() -> None:
        subprocess.run([sys.executable, *args], check=True, capture_output=True)

    return float(measure(call, reps, warmup=1).stats.median)


def run(quick: bool = False) -> Table:
    """Run the ``cli_help`` benchmark, print and save its table."""
    banner("cli_help: cmdp-rl --help in a fresh interpreter" + (" (quick)" if quick else ""))
    reps = QUICK_REPS if quick else REPS
    baseline = _time(["-c", "pass"], reps)
    table = Table(
        "cli_help",
        "Wall time of a fresh interpreter running each command line (median, after one warm-up run)",
        [
            Col("command", "command line", left=True),
            Col("seconds", "wall time", fmt_time),
            Col("over_python", "over a bare interpreter", fmt_time),
            Col("over_goal", "of the 0.3 s goal", fmt_ratio),
        ],
        notes=[
            f"{reps} runs each of `python ARGS` with the suite's interpreter ({sys.executable}); "
            "'over a bare interpreter' subtracts `python -c pass`",
        ],
    )
    for name, args in CASES:
        seconds = baseline if args == ["-c", "pass"] else _time(args, reps)
        row: dict[str, Any] = {
            "command": name,
            "seconds": seconds,
            "over_python": seconds - baseline,
            "over_goal": seconds / GOAL_SECONDS,
        }
        print(f"  {name}: {fmt_time(seconds)}", flush=True)
        table.add(**row)
    table.print()
    table.save(quick, params={"reps": reps, "goal_seconds": GOAL_SECONDS})
    return table
