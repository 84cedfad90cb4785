"""``learners``: time per episode of every online learner of the arena on scenarios 1a and 1b.

For each learner (:data:`cmdp_rl.learners.ONLINE_ALGORITHMS`) and scenario, one whole
:meth:`fit` of ``EPISODES`` episodes without a scorer (plan + play ``H`` steps + counting,
first episodes included) is timed after one untimed warm-up run, and the median of 3 runs
is divided by ``EPISODES``. The safe learners get the problem's safe baseline
(:func:`cmdp_rl.planning.baseline.safe_baseline`); the share of their episodes that played it is
reported, because a baseline episode costs almost nothing to plan (DOPE's ``K0`` is far beyond
the budget on both scenarios, so its time is that of its baseline phase). Side by side in the
same process: one plain NumPy EVI sweep (:func:`cmdp_rl.confidence.box.evi_numpy`) on the counts of
a running Online-CRL, the floor benchmark's yardstick.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cmdp_rl import EpisodicEnv
from cmdp_rl.confidence.box import Box, evi_numpy
from cmdp_rl.envs.scenarios import scenario_cmdp
from cmdp_rl.learners import LABELS, ONLINE_ALGORITHMS, SAFE_ALGORITHMS, make_learner
from cmdp_rl.planning.baseline import safe_baseline

from .common import DELTA, Col, Table, banner, fmt_ratio, fmt_time, measure, ratio, scenario_instance

EPISODES, QUICK_EPISODES = 1000, 100


def bench(name: str, algo: str, episodes: int, sweep: float) -> dict[str, Any]:
    cmdp = scenario_cmdp(name)
    base = safe_baseline(cmdp) if algo in SAFE_ALGORITHMS else None
    baseline = None if base is None else (base.policy, base.costs)
    played: list[float] = []

    def one() -> None:
        learner = make_learner(algo, cmdp, DELTA, episodes=episodes, baseline=baseline)
        rec = learner.fit(EpisodicEnv(cmdp, np.random.default_rng(0)))
        played.append(rec.baseline_episodes / rec.episodes)

    m = measure(one, 3, warmup=1)
    ep = float(m.stats.median) / episodes
    return {
        "scenario": name,
        "algorithm": LABELS[algo],
        "episode": ep,
        "episode_over_numpy": ratio(ep, sweep),
        "baseline_share": played[-1],
    }


def numpy_sweep_seconds(name: str) -> float:
    """Median time of one plain NumPy EVI sweep on the counts of a running Online-CRL on ``name``."""
    inst = scenario_instance(name)
    box = Box.from_radius(inst.p_hat, inst.beta)
    r, H = inst.cmdp.r, inst.cmdp.H
    return float(measure(lambda: evi_numpy(box, r, H), 50, warmup=3).stats.median)


def run(quick: bool = False) -> Table:
    """Run the ``learners`` benchmark, print and save its table."""
    banner("learners: time per episode of every online learner" + (" (quick)" if quick else ""))
    episodes = QUICK_EPISODES if quick else EPISODES
    table = Table(
        "learners",
        "Time per episode of every online learner (median of 3 runs, side by side)",
        [
            Col("scenario", "scenario"),
            Col("algorithm", "learner"),
            Col("episode", "episode", fmt_time),
            Col("episode_over_numpy", "episode / NumPy sweep", fmt_ratio),
            Col("baseline_share", "baseline episodes", lambda v: f"{100 * v:.0f}%"),
        ],
        notes=[
            f"episode: a {episodes}-episode run without scoring divided by {episodes} (median of 3 runs after one "
            "warm-up); NumPy sweep: one plain vectorized EVI sweep on the counts of a running Online-CRL",
        ],
    )
    for name in ("1a", "1b"):
        sweep = numpy_sweep_seconds(name)
        for algo in ONLINE_ALGORITHMS:
            row = bench(name, algo, episodes, sweep)
            print(f"  {name} {algo}: {fmt_time(row['episode'])} per episode", flush=True)
            table.add(**row)
    table.print()
    table.save(quick, params={"episodes": episodes})
    return table
