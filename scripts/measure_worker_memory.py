"""Measure the resident memory of one sweep worker: what ``cmdp_rl.plumbing.limits.WORKER_BYTES`` counts.

Each case starts one worker process as the local backend starts them (``multiprocessing``'s
"spawn" context, the pool's initializer), lets it do one tiny run (scenario 1a) and reads the
child's peak resident set size (``getrusage(RUSAGE_CHILDREN).ru_maxrss``); every case runs in
its own fresh interpreter, so the peaks do not mix. ``--cold`` points numba at an empty cache
folder (the kernels are compiled in the worker, as on the first run after an install).

    python scripts/measure_worker_memory.py [--cold] [--case COMMAND:ALGO]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

#: the learners measured: (command, algorithm)
CASES = (
    ("compare", "plugin"),
    ("compare", "optcmdp"),
    ("compare", "optpess"),
    ("compare", "dope"),
    ("compare", "online-crl"),
    ("reproduce", "gmbl"),
    ("reproduce", "online-crl"),
)

CHILD = """
import multiprocessing, resource, sys
from cmdp_rl.experiments.backends import _init_worker
from cmdp_rl.experiments.compare import CompareConfig
from cmdp_rl.experiments.config import ExperimentConfig
from cmdp_rl.experiments.runner import execute_run, run_specs

command, algo = sys.argv[1], sys.argv[2]
if command == "compare":
    spec = CompareConfig("1a", algorithms=(algo,), episodes=20, runs=1, checkpoints=3, jobs=1).run_specs()[0]
else:
    spec = run_specs(ExperimentConfig.quick(runs=1, scenarios=("1a",), algorithms=(algo,)))[0]
if __name__ == "__main__":
    with multiprocessing.get_context("spawn").Pool(1, initializer=_init_worker) as pool:
        pool.map(execute_run, [spec])
    print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold", action="store_true", help="an empty numba cache (the kernels compile in the worker)")
    parser.add_argument("--case", metavar="COMMAND:ALGO", help="one case only, e.g. compare:plugin")
    args = parser.parse_args()
    chosen = [tuple(args.case.split(":", 1))] if args.case else list(CASES)
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "child.py")
        with open(script, "w", encoding="utf-8") as fh:
            fh.write(CHILD)
        for i, (command, algo) in enumerate(chosen):
            env = dict(os.environ)
            if args.cold:
                env["NUMBA_CACHE_DIR"] = os.path.join(tmp, f"numba-{i}")
            out = subprocess.run(
                [sys.executable, script, command, algo], capture_output=True, text=True, env=env, check=True
            )
            peak = int(out.stdout.strip().splitlines()[-1])
            print(f"{command:<10} {algo:<11} {peak / 2**20:7.1f} MiB")


if __name__ == "__main__":
    main()
