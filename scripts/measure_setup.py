"""Measure the README's two set-up commands on fresh clones: ``make demo`` and ``make test``.

Each command runs in its own fresh ``git clone`` of this repository (so the virtual environment,
the install and the first compilation of the numerical kernels are all included), one after the
other, never side by side. The wall times, the exit codes, the commit and the machine (CPU count,
load average before each run, platform, Python) are written to ``docs/setup-times.json``. The
README quotes that file. Run it on an otherwise idle machine: the times are what a new user waits.

    python scripts/measure_setup.py [--only demo|test] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "setup-times.json"
TARGETS = ("demo", "test")


def _commit() -> str:
    proc = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return proc.stdout.strip()


def measure(target: str, keep: bool) -> dict[str, Any]:
    """Clone, then time ``make TARGET`` in the clone; returns the record of that run."""
    work = Path(tempfile.mkdtemp(prefix=f"cmdp-rl-{target}-"))
    clone = work / "cmdp-rl"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    load = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.run(["make", target], cwd=clone, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if not keep:
        shutil.rmtree(work, ignore_errors=True)
    tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
    return {
        "seconds": round(seconds, 1),
        "exit_code": proc.returncode,
        "load_before": round(load, 2),
        "last_lines": tail,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=TARGETS, help="measure one command only")
    ap.add_argument("--keep", action="store_true", help="keep the clones (their paths are printed)")
    args = ap.parse_args()
    record: dict[str, Any] = json.loads(OUT.read_text()) if OUT.exists() else {}
    for target in (args.only,) if args.only else TARGETS:
        print(f"make {target} on a fresh clone ...", flush=True)
        run = measure(target, args.keep)
        minutes, secs = divmod(round(run["seconds"]), 60)
        print(f"  {minutes} min {secs:02d} s, exit {run['exit_code']}", flush=True)
        record[target] = run
    record["commit"] = _commit()
    record["machine"] = {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }
    OUT.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
