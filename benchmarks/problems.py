"""``problems``: the exact planner (``solve``) and one Online-CRL episode on every registered problem.

For each problem of ``cmdp-rl envs`` at its defaults: the median time of
:func:`cmdp_rl.solve` (the occupation-measure LP) and the median time of one
Online-CRL episode (re-plan + play + count, read from ``OnlineCRL.fit``'s own
per-episode timings, after one untimed first episode), measured with
pytest-benchmark's timer and statistics (:func:`.common.measure`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pytest_benchmark.stats import Stats

from cmdp_rl import EpisodicEnv, OnlineCRL, solve
from cmdp_rl.envs.registry import PROBLEMS, make

from .common import DELTA, Col, Table, banner, fmt_time, measure

EPISODES, QUICK_EPISODES = 6, 3


def _episode_median(name: str, episodes: int) -> float:
    m = make(name)
    # one by one: the compiled batches time whole batches (the first one with its cache load)
    res = OnlineCRL(m, DELTA, episodes=episodes + 1).fit(EpisodicEnv(m, np.random.default_rng(0)), batched=False)
    stats = Stats()
    for t in (res.plan_seconds + res.act_seconds)[1:]:
        stats.update(float(t))
    return float(stats.median)


def run(quick: bool = False) -> Table:
    """Run the ``problems`` benchmark, print and save its table."""
    banner("problems: exact solve and one Online-CRL episode per registered problem" + (" (quick)" if quick else ""))
    table = Table(
        "problems",
        "Registered problems: solve (default: certified column generation) and one Online-CRL episode, medians",
        [
            Col("name", "problem"),
            Col("S", "S"),
            Col("A", "A"),
            Col("H", "H"),
            Col("N", "N"),
            Col("solve", "solve", fmt_time),
            Col("episode", "Online-CRL episode", fmt_time),
        ],
        notes=[
            f"solve: median of up to 5 calls; episode: median of {QUICK_EPISODES if quick else EPISODES} "
            "episodes after an untimed first one (re-plan + act), from OnlineCRL.fit's timings"
        ],
    )
    for name in PROBLEMS:
        m = make(name)
        row: dict[str, Any] = {"name": name, "S": m.S, "A": m.A, "H": m.H, "N": m.N}
        row["solve"] = measure(lambda m=m: solve(m), 5, min_reps=1, budget=10.0).median
        row["episode"] = _episode_median(name, QUICK_EPISODES if quick else EPISODES)
        table.add(**row)
        print(f"  {name}: solve {fmt_time(row['solve'])}, episode {fmt_time(row['episode'])}", flush=True)
    table.print()
    table.save(quick)
    return table
