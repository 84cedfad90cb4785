"""``episode``: where an Online-CRL episode's time goes, on each scenario.

A loop mirroring :meth:`cmdp_rl.learners.OnlineCRL.fit` (fast method, warm
starts) calls the pieces itself and times each with :func:`time.perf_counter`:

* ``replan``: :meth:`OnlineCRL.replan` (empirical model, radii, extended LP);
* ``act``: :meth:`EpisodicEnv.rollout` of the plan's policy;
* ``count``: adding the episode's transitions to the counts;
* ``score``: :meth:`Scorer.__call__` (exact value gap and violation on the true model).

After ``WARMUP`` episodes (untimed, so the counts and the column pool are those
of a running learner), ``EPISODES`` episodes are timed; the table reports the
median (and mean) per episode of each piece.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from cmdp_rl.envs.scenarios import scenario_cmdp
from cmdp_rl.learners import EpisodicEnv, OnlineCRL, Scorer
from cmdp_rl.planning.result import PlanResult

from .common import BUDGET_EPISODES, DELTA, SCENARIOS, Col, Table, banner, fmt_float, fmt_time

WARMUP, EPISODES = 100, 300
QUICK_WARMUP, QUICK_EPISODES = 20, 50
PIECES = ("replan", "act", "count", "score")


def time_episodes(name: str, warmup: int, episodes: int, seed: int = 0) -> dict[str, Any]:
    """Run Online-CRL on scenario ``name`` and return per-piece times of the timed episodes."""
    cmdp = scenario_cmdp(name)
    learner = OnlineCRL(cmdp, DELTA, episodes=BUDGET_EPISODES)
    env = EpisodicEnv(cmdp, np.random.default_rng(seed))
    scorer = Scorer.for_model(cmdp)
    counts = np.zeros((cmdp.S, cmdp.A, cmdp.S), dtype=np.int64)
    plan: PlanResult | None = None
    times = {piece: np.zeros(episodes) for piece in (*PIECES, "total")}
    iterations = np.zeros(episodes, dtype=np.int64)
    clock = time.perf_counter
    for k in range(warmup + episodes):
        t0 = clock()
        plan = learner.replan(counts, plan)
        t1 = clock()
        states, actions, nexts = env.rollout(plan.policy)
        t2 = clock()
        np.add.at(counts, (states, actions, nexts), 1)
        t3 = clock()
        scorer(plan.policy)
        t4 = clock()
        if k >= warmup:
            i = k - warmup
            for piece, dt in zip(PIECES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
                times[piece][i] = dt
            times["total"][i] = t4 - t0
            iterations[i] = plan.iterations
    row: dict[str, Any] = {
        "scenario": name,
        "S": cmdp.S,
        "A": cmdp.A,
        "H": cmdp.H,
        "episodes": episodes,
        "warmup": warmup,
    }
    for piece, arr in times.items():
        row[piece] = float(np.median(arr))
        row[f"{piece}_mean"] = float(arr.mean())
        row[f"{piece}_p95"] = float(np.percentile(arr, 95))
    row["replan_share"] = float(times["replan"].sum() / times["total"].sum())
    row["iterations"] = float(np.median(iterations))
    row["episodes_per_s"] = float(episodes / times["total"].sum())
    return row


def run(quick: bool = False) -> Table:
    """Run the ``episode`` benchmark, print and save its table."""
    banner("episode: Online-CRL episode breakdown" + (" (quick)" if quick else ""))
    warmup, episodes = (QUICK_WARMUP, QUICK_EPISODES) if quick else (WARMUP, EPISODES)
    table = Table(
        "episode",
        "Online-CRL episode: median time per episode (fast ELP, warm starts)",
        [
            Col("scenario", "scenario"),
            Col("S", "S"),
            Col("H", "H"),
            Col("replan", "replan", fmt_time),
            Col("replan_mean", "replan mean", fmt_time),
            Col("replan_p95", "replan p95", fmt_time),
            Col("act", "act (rollout)", fmt_time),
            Col("count", "count", fmt_time),
            Col("score", "score", fmt_time),
            Col("total", "total", fmt_time),
            Col("total_mean", "total mean", fmt_time),
            Col("replan_share", "replan share", lambda v: f"{100 * v:.0f}%"),
            Col("iterations", "CG iters", lambda v: fmt_float(v, 3)),
            Col("episodes_per_s", "episodes/s", lambda v: f"{v:.0f}"),
        ],
        notes=[
            f"{episodes} timed episodes after {warmup} untimed ones; seed 0; delta 0.1, U = {BUDGET_EPISODES}",
            "replan share: summed replan time over summed episode time; CG iters: median master/pricing rounds",
        ],
    )
    for name in SCENARIOS:
        row = time_episodes(name, warmup, episodes)
        print(f"  {name}: replan {fmt_time(row['replan'])}, total {fmt_time(row['total'])}", flush=True)
        table.add(**row)
    table.print()
    table.save(quick, params={"warmup": warmup, "episodes": episodes})
    return table
