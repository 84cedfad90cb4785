"""Measure the README's two set-up commands on fresh clones: ``make demo`` and ``make test``.

Each command runs in its own fresh ``git clone`` of this repository (so the virtual environment,
the install and the first compilation of the numerical kernels are all included), one after the
other, never side by side. With ``--cold-cache`` pip starts from an empty download cache, as on
a new machine (every wheel is downloaded again); ``--repeat N`` measures each command N times.
Every run's wall time and exit code, the minimum, median and maximum per command, the commit,
whether pip's cache was cold, and the machine (CPU count, load average before each run,
platform, Python) are written to ``docs/setup-times.json``. The README quotes that file's range.
Run it on an otherwise idle machine: the times are what a new user waits.

``--only test-fast`` measures the inner loop instead (``make test-fast``, docs/development.md):
in a fresh clone, ``make test-fast`` once untimed (the install and the kernels' compilation, which
a developer's checkout has done), then timed; it is recorded under ``test-fast`` and the README
is left as is.

    python scripts/measure_setup.py [--only demo|test|test-fast] [--cold-cache] [--repeat N] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "setup-times.json"
README = ROOT / "README.md"
TARGETS = ("demo", "test")
#: measured on request only (``--only``): the inner loop, after an untimed first run in the clone
WARM_TARGETS = ("test-fast",)


def _commit() -> str:
    proc = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return proc.stdout.strip()


def _human(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes} min {secs:02d} s"


def measure(target: str, keep: bool, cold_cache: bool) -> dict[str, Any]:
    """Clone, then time ``make TARGET`` in the clone (with an empty pip cache if ``cold_cache``);
    returns the record of that run."""
    work = Path(tempfile.mkdtemp(prefix=f"cmdp-rl-{target}-"))
    clone = work / "cmdp-rl"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    env = dict(os.environ)
    if cold_cache:
        env["PIP_CACHE_DIR"] = str(work / "pip-cache")  # empty: every wheel is downloaded
    if target in WARM_TARGETS:  # what a developer's checkout has done: the install, the kernels compiled
        subprocess.run(["make", target], cwd=clone, stdin=subprocess.DEVNULL, capture_output=True, env=env)
    load = os.getloadavg()[0]
    start = time.perf_counter()
    log = work / f"make-{target}.log"
    with log.open("w") as out:  # stdout and stderr interleaved, as a terminal shows them
        proc = subprocess.run(["make", target], cwd=clone, stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=env)
    seconds = time.perf_counter() - start
    output = log.read_text(errors="replace")
    if proc.returncode != 0:  # kept for reading: a failed run is the one whose output matters
        kept = Path(tempfile.gettempdir()) / f"measure-setup-{target}-failed.log"
        shutil.copy(log, kept)
        print(f"  make {target} failed: its output is in {kept}", flush=True)
    if not keep:
        shutil.rmtree(work, ignore_errors=True)
    tail = output.strip().splitlines()[-3:]
    return {
        "seconds": round(seconds, 1),
        "exit_code": proc.returncode,
        "load_before": round(load, 2),
        "last_lines": tail,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=TARGETS + WARM_TARGETS, help="measure one command only")
    ap.add_argument("--keep", action="store_true", help="keep the clones (their paths are printed)")
    ap.add_argument("--cold-cache", action="store_true", help="pip starts from an empty download cache")
    ap.add_argument("--repeat", type=int, default=1, metavar="N", help="runs per command (default 1)")
    args = ap.parse_args()
    record: dict[str, Any] = json.loads(OUT.read_text()) if OUT.exists() else {}
    for target in (args.only,) if args.only else TARGETS:
        runs = []
        for i in range(args.repeat):
            print(f"make {target} on a fresh clone ({i + 1}/{args.repeat}) ...", flush=True)
            run = measure(target, args.keep, args.cold_cache)
            print(f"  {_human(run['seconds'])}, exit {run['exit_code']}", flush=True)
            runs.append(run)
        seconds = [r["seconds"] for r in runs]
        record[target] = {
            "min": min(seconds),
            "median": round(statistics.median(seconds), 1),
            "max": max(seconds),
            "text": f"{_human(min(seconds))} to {_human(max(seconds))}" if len(runs) > 1 else _human(seconds[0]),
            "runs": runs,
            "commit": _commit(),
        }
    if args.only not in WARM_TARGETS:  # the README's set-up commands: their cache and commit
        record["cold_pip_cache"] = args.cold_cache
        record["commit"] = _commit()
    record["machine"] = {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }
    measured = (args.only,) if args.only else TARGETS
    failed = [(t, r) for t in measured for r in record[t]["runs"] if r["exit_code"] != 0]
    if failed:
        # a failed run is not a time to quote: nothing is written
        for target, run in failed:
            print(f"make {target} failed (exit {run['exit_code']}):", *run["last_lines"], sep="\n  ")
        raise SystemExit(1)
    OUT.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")
    if args.only not in WARM_TARGETS:  # the inner loop's time is not one of the README's lines
        update_readme(record, tuple(t for t in measured if t in TARGETS))


def update_readme(record: dict[str, Any], targets: tuple[str, ...]) -> None:
    """Put each command's measured range into the README's set-up line for it
    (``make TARGET ... (RANGE on a fresh clone``)."""
    text = README.read_text()
    for target in targets:
        pattern = rf"^(make {target} .*?\()[^()]*?( on a fresh clone)"
        text = re.sub(pattern, rf"\g<1>{record[target]['text']}\g<2>", text, count=1, flags=re.M)
    cache = "empty, as on a new machine" if record["cold_pip_cache"] else "warm"
    text = re.sub(r"pip's download cache (empty, as on a new machine|warm)", f"pip's download cache {cache}", text)
    README.write_text(text)
    print(f"updated {README.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
