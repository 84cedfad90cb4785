"""``reproduce``: wall time and peak memory of ``cmdp-rl reproduce`` (the paper's experiments).

Runs ``cmdp-rl reproduce --out <tmpdir>`` (with ``--quick`` under ``--quick``)
with the venv's ``cmdp-rl`` and reports its wall time (:func:`time.perf_counter`),
peak resident memory (``getrusage(RUSAGE_CHILDREN).ru_maxrss``: the largest
single process among reproduce and the worker processes it waited for, not
their sum) and CPU times. When ``cmdp-rl reproduce --help`` fails the benchmark
prints ``reproduce not available yet`` and skips. With the environment variable
``CMDP_RL_BENCH_KEEP=DIR`` the output folder is ``DIR`` and kept (the figures and tables
of the timed run, to publish), else a temporary folder.

The command runs under a minimal launcher (``python -c`` importing only the
standard library) that measures it: on Linux a process's ``ru_maxrss`` starts
at its parent's peak RSS at fork time (it survives ``exec``), so measuring from
the benchmark process itself, whose RSS may be hundreds of MB after the other
benchmarks, would report that instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .common import Col, Table, banner, fmt_mb, fmt_time


def cli_path() -> str:
    """The ``cmdp-rl`` script next to this interpreter (the venv's), else the one on ``PATH``."""
    candidate = Path(sys.executable).with_name("cmdp-rl")
    return str(candidate) if candidate.exists() else "cmdp-rl"


def available(cli: str) -> bool:
    """Whether ``cmdp-rl reproduce --help`` succeeds."""
    try:
        done = subprocess.run([cli, "reproduce", "--help"], capture_output=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


#: measures the command in its argv; its own RSS (~10 MB) is the floor of ``ru_maxrss``
_LAUNCHER = """
import json, resource, subprocess, sys, time
t0 = time.perf_counter()
code = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL)
wall = time.perf_counter() - t0
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"exit_code": code, "wall": wall, "maxrss_kb": u.ru_maxrss,
                  "cpu_user": u.ru_utime, "cpu_sys": u.ru_stime}))
"""


def run_reproduce(cli: str, quick: bool, out: Path) -> dict[str, Any]:
    """Run ``cmdp-rl reproduce`` once; return wall time, peak RSS, CPU times and exit code."""
    cmd = [cli, "reproduce", *(["--quick"] if quick else []), "--out", str(out)]
    print("  $ " + " ".join(cmd), flush=True)
    done = subprocess.run([sys.executable, "-c", _LAUNCHER, *cmd], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"reproduce launcher failed: {done.stderr.strip()}")
    stats = json.loads(done.stdout.strip().splitlines()[-1])
    files = [p for p in out.rglob("*") if p.is_file()]
    return {
        "command": " ".join([*cmd[1:-1], "<tmpdir>"]),
        "exit_code": stats["exit_code"],
        "wall": stats["wall"],
        "peak_rss": stats["maxrss_kb"] * 1024,
        "cpu_user": stats["cpu_user"],
        "cpu_sys": stats["cpu_sys"],
        "output_files": len(files),
        "output_bytes": sum(p.stat().st_size for p in files),
        "stderr_tail": done.stderr.strip().splitlines()[-5:],
    }


def run(quick: bool = False) -> Table | None:
    """Run the ``reproduce`` benchmark, print and save its table (``None`` when unavailable)."""
    banner("reproduce: cmdp-rl reproduce" + (" --quick" if quick else ""))
    cli = cli_path()
    if not available(cli):
        print("reproduce not available yet\n", flush=True)
        return None
    keep = os.environ.get("CMDP_RL_BENCH_KEEP")
    if keep:
        row = run_reproduce(cli, quick, Path(keep))
    else:
        with tempfile.TemporaryDirectory(prefix="cmdp-rl-reproduce-") as tmp:
            row = run_reproduce(cli, quick, Path(tmp) / "out")
    table = Table(
        "reproduce",
        "cmdp-rl reproduce: one run",
        [
            Col("command", "command"),
            Col("exit_code", "exit"),
            Col("wall", "wall time", fmt_time),
            Col("cpu_user", "CPU user", fmt_time),
            Col("cpu_sys", "CPU sys", fmt_time),
            Col("peak_rss", "peak RSS", fmt_mb),
            Col("output_files", "files"),
            Col("output_bytes", "output", fmt_mb),
        ],
        notes=[
            "peak RSS: RUSAGE_CHILDREN ru_maxrss (largest single process among reproduce and "
            "the workers it waited for); CPU: RUSAGE_CHILDREN user/system time"
        ],
    )
    table.add(**row)
    table.print()
    if row["exit_code"] != 0:
        print("  reproduce failed:\n    " + "\n    ".join(row["stderr_tail"]) + "\n", flush=True)
    table.save(quick, params={"quick": quick})
    return table
