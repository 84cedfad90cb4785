"""Measure how long each kind of run of the paper's protocol takes: what a sweep's progress bar
weighs its runs by (``cmdp_rl.experiments.backends.run_cost``).

Runs ``cmdp-rl reproduce --runs R --jobs 1`` (the full protocol's budgets, every run inline in one
process, after a warm-up run that compiles the kernels) into a scratch folder, reads each run's
wall seconds from its run file, and writes ``docs/sweep-run-times.json``: per (scenario,
algorithm) the median seconds and, per episode of an online learner, the seconds per unit of
``S^2 A H (N + 1)`` (the constant ``EPISODE_SECONDS_PER_UNIT``), with the machine, its load and
the commit::

    python scripts/sweep_run_times.py [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "sweep-run-times.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    from cmdp_rl.envs.registry import problem_sizes

    cli = [sys.executable, "-m", "cmdp_rl", "reproduce", "--jobs", "1", "--no-progress"]
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([*cli, "--quick", "--runs", "1", "--out", f"{tmp}/warm"], check=True, capture_output=True)
        subprocess.run([*cli, "--runs", str(args.runs), "--out", f"{tmp}/full"], check=True, capture_output=True)
        runs = [json.loads(p.read_text()) for p in sorted(Path(tmp, "full", "runs").glob("*.json"))]
    groups: dict[tuple[str, str], list[dict]] = {}
    for run in runs:
        groups.setdefault((run["spec"]["scenario"], run["spec"]["algorithm"]), []).append(run)
    rows = []
    for (scenario, algorithm), members in sorted(groups.items()):
        S, A, H, N = problem_sizes(scenario)
        median = statistics.median(r["seconds"] for r in members)
        row = {"scenario": scenario, "algorithm": algorithm, "runs": len(members), "median_seconds": round(median, 4)}
        episodes = members[0]["spec"]["episodes"]
        if episodes:
            row["seconds_per_episode_unit"] = float(f"{median / episodes / (S * S * A * H * (N + 1)):.3g}")
        rows.append(row)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    result = {
        "command": f"cmdp-rl reproduce --runs {args.runs} --jobs 1 (after a compiling warm-up run)",
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "load_average_1min_before": round(load, 2),
        "commit": commit,
        "rows": rows,
    }
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
