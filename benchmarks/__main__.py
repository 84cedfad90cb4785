"""Command line of the benchmark suite: ``python -m benchmarks [--only NAME ...] [--quick]``."""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Sequence

#: benchmark name -> module (each module has ``run(quick: bool)``), in running order
BENCHMARKS: dict[str, str] = {
    "elp": "benchmarks.elp",
    "episode": "benchmarks.episode",
    "scaling": "benchmarks.scaling",
    "reproduce": "benchmarks.reproduce",
    "problems": "benchmarks.problems",
    "floor": "benchmarks.floor",
    "learners": "benchmarks.learners",
    "large": "benchmarks.large",
    "sparse": "benchmarks.sparse",
    "threads": "benchmarks.threads",
    "discounted": "benchmarks.discounted",
    "simulator": "benchmarks.simulator",
    "learner_play": "benchmarks.learner_play",
    "cli_help": "benchmarks.cli_help",
    "refusals": "benchmarks.refusals",
    "safe_learning": "benchmarks.safe_learning",
    "storm_import": "benchmarks.storm_import",
    "storm": "benchmarks.storm",
}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the suite's options."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Run cmdp-rl's benchmarks; tables are printed and saved to benchmarks/results/.",
    )
    parser.add_argument(
        "--only",
        action="append",
        choices=list(BENCHMARKS),
        metavar="NAME",
        help=f"run only this benchmark (repeatable): {', '.join(BENCHMARKS)}",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="fewer/smaller instances and repeats (results saved as NAME-quick.*)",
    )
    parser.add_argument(
        "--allow-dirty",
        action="store_true",
        help="write results even from a tree with uncommitted changes (recorded as src_modified: true)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the selected benchmarks in order, print the total wall time and record each benchmark's
    in ``benchmarks/results/wall.json``."""
    args = parse_args(argv)
    from . import common

    common.ALLOW_DIRTY = args.allow_dirty
    try:
        common.check_clean_tree()  # before any work, not after 20 minutes of it
    except common.DirtyTree as exc:
        print(f"python -m benchmarks: {exc}", file=sys.stderr)
        return 2
    names = [n for n in BENCHMARKS if not args.only or n in args.only]
    start = time.perf_counter()
    elapsed: dict[str, float] = {}
    for name in names:
        load = common.load_average()
        t0 = time.perf_counter()
        importlib.import_module(BENCHMARKS[name]).run(quick=args.quick)
        elapsed[name] = time.perf_counter() - t0
        common.record_wall_time(name, elapsed[name], args.quick, load)
    total = time.perf_counter() - start
    print("wall time: " + ", ".join(f"{n} {t:.1f} s" for n, t in elapsed.items()) + f"; total {total:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
