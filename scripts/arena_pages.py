"""Regenerate the arena's result files in ``docs/arena/`` from the installed ``cmdp-rl`` command.

Runs, one after the other, the two comparisons ``docs/the-arena.md`` quotes:

* ``cmdp-rl compare --preset dope`` (media-control, DOPE / OptPess-LP / OptCMDP / Online-CRL,
  20,000 episodes, 5 runs): ``results.csv``, ``summary.md``, ``config.toml``, ``timings.csv`` and
  the two figures;
* ``cmdp-rl compare --preset dope --algos dope,optpess --episodes 100000`` (the DOPE authors'
  horizon): ``summary-100000-episodes.md`` and ``fig_cum_value_gap_100000.png``;

and writes ``docs/arena/provenance.json``: the commit (the tree must be clean unless
``--allow-dirty``), each command's wall time and peak resident memory (its process and its
workers), the machine and its load, and the facts the page's text quotes that are not in the
summary tables (OptCMDP's per-episode violation at the last episode, the last violating
episode of each Online-CRL run). About 2 minutes on 2 cores::

    python scripts/arena_pages.py [--allow-dirty]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "arena"
CLI = [sys.executable, "-m", "cmdp_rl"]
RUNS: dict[str, list[str]] = {
    "preset": ["compare", "--preset", "dope"],
    "preset-100000": ["compare", "--preset", "dope", "--algos", "dope,optpess", "--episodes", "100000"],
}


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


def _run(name: str, out: Path) -> dict[str, Any]:
    """Run one comparison into ``out``; its wall time and the peak RSS of it and its workers."""
    argv = [*CLI, *RUNS[name], "--out", str(out), "--no-progress"]
    load = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{' '.join(argv)}: exit {code}")
    return {
        "command": "cmdp-rl " + " ".join(RUNS[name]) + " --out DIR",
        "seconds": round(seconds, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024),  # kB on Linux; the largest of it and its reaped workers
        "load_before": round(load, 2),
    }


def _facts(results: Path) -> dict[str, Any]:
    """What the page's text quotes beyond the summary tables, from ``results.csv``."""
    rows = list(csv.DictReader(results.open()))
    last = max(int(r["episodes"]) for r in rows)
    optcmdp = [float(r["violation"]) for r in rows if r["algorithm"] == "optcmdp" and int(r["episodes"]) == last]
    marks: dict[str, list[tuple[int, int]]] = {}
    for r in rows:
        if r["algorithm"] == "online-crl":
            marks.setdefault(r["run"], []).append((int(r["episodes"]), int(r["violating_episodes"])))
    # per run, the first recorded episode from which the count of violating episodes no longer grows
    crl_last_violating = {run: next(e for e, v in sorted(m) if v == max(m)[1]) for run, m in marks.items()}
    return {
        "episodes": last,
        "optcmdp_violation_at_last_episode": {"min": min(optcmdp), "max": max(optcmdp)},
        "online_crl_violating_episodes_final_from_episode": crl_last_violating,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--allow-dirty", action="store_true", help="run from a tree with uncommitted changes")
    args = ap.parse_args()
    dirty = bool(_git("status", "--porcelain", "--untracked-files=no"))
    if dirty and not args.allow_dirty:
        raise SystemExit("the tree has uncommitted changes: commit them (or --allow-dirty)")
    work = Path(tempfile.mkdtemp(prefix="cmdp-rl-arena-"))
    try:
        record: dict[str, Any] = {"commit": _git("rev-parse", "--short", "HEAD"), "clean_tree": not dirty, "runs": {}}
        for name in RUNS:
            print(f"cmdp-rl {' '.join(RUNS[name])} ...", flush=True)
            run = record["runs"][name] = _run(name, work / name)
            print(f"  {run['seconds']} s, peak RSS {run['peak_rss_mb']} MB", flush=True)
        full, long = work / "preset", work / "preset-100000"
        for name in ("results.csv", "summary.md", "config.toml", "timings.csv"):
            shutil.copyfile(full / name, DOCS / name)
        for name in ("fig_cum_value_gap.png", "fig_cum_violation.png"):
            shutil.copyfile(full / "figures" / name, DOCS / name)
        shutil.copyfile(long / "summary.md", DOCS / "summary-100000-episodes.md")
        shutil.copyfile(long / "figures" / "fig_cum_value_gap.png", DOCS / "fig_cum_value_gap_100000.png")
        record["facts"] = _facts(full / "results.csv")
        record["machine"] = {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "max_rss_unit": "MB (ru_maxrss)",
        }
        (DOCS / "provenance.json").write_text(json.dumps(record, indent=1) + "\n")
        print(f"wrote {DOCS.relative_to(ROOT)}/ (provenance.json: commit {record['commit']})")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
