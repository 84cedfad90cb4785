"""``episode``: where an Online-CRL episode's time goes, on each scenario.

Runs :meth:`cmdp_rl.learners.OnlineCRL.fit` (fast method, warm starts) one episode at a
time (``batched=False``; the compiled batches of the default path time whole batches, see
the ``floor`` benchmark): the library's one episode loop times every episode's parts itself (``plan_seconds``,
``act_seconds``, ``score_seconds`` of the result), and this benchmark only reads them:

* ``replan``: :meth:`OnlineCRL.replan` (empirical model, radii, extended LP);
* ``act``: :meth:`EpisodicEnv.rollout` of the plan's policy and adding the episode's
  transitions to the counts;
* ``score``: :meth:`Scorer.__call__` (exact value gap and violation on the true model).

The first ``WARMUP`` episodes are left out (so the counts and the column pool are those
of a running learner); the table reports the median (and mean) of the next ``EPISODES``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pytest_benchmark.stats import Stats

from cmdp_rl.envs.scenarios import scenario_cmdp
from cmdp_rl.learners import EpisodicEnv, OnlineCRL, Scorer

from .common import DELTA, SCENARIOS, Col, Table, banner, fmt_float, fmt_time

WARMUP, EPISODES = 100, 300
QUICK_WARMUP, QUICK_EPISODES = 20, 50
PIECES = ("replan", "act", "score")  # act = rollout + counting, as the library's loop times it


def time_episodes(name: str, warmup: int, episodes: int, seed: int = 0) -> dict[str, Any]:
    """Online-CRL on scenario ``name`` through the library's own loop (``OnlineCRL.fit``): per-part
    medians of the episodes after ``warmup``, from the per-episode timings the loop records."""
    cmdp = scenario_cmdp(name)
    learner = OnlineCRL(cmdp, DELTA, episodes=warmup + episodes)
    scorer = Scorer.for_model(cmdp)
    res = learner.fit(EpisodicEnv(cmdp, np.random.default_rng(seed)), scorer, batched=False)
    cut = slice(warmup, warmup + episodes)
    times = {"replan": res.plan_seconds[cut], "act": res.act_seconds[cut], "score": res.score_seconds[cut]}
    times["total"] = times["replan"] + times["act"] + times["score"]
    row: dict[str, Any] = {
        "scenario": name,
        "S": cmdp.S,
        "A": cmdp.A,
        "H": cmdp.H,
        "episodes": episodes,
        "warmup": warmup,
    }
    for piece, arr in times.items():
        stats = Stats()
        for v in arr:
            stats.update(float(v))
        row[piece] = float(stats.median)
        row[f"{piece}_mean"] = float(stats.mean)
        row[f"{piece}_p95"] = float(np.percentile(arr, 95))
    row["replan_share"] = float(times["replan"].sum() / times["total"].sum())
    row["iterations"] = float(np.median(res.replan_iterations[cut]))
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
            Col("act", "act (rollout + count)", fmt_time),
            Col("score", "score", fmt_time),
            Col("total", "total", fmt_time),
            Col("total_mean", "total mean", fmt_time),
            Col("replan_share", "replan share", lambda v: f"{100 * v:.0f}%"),
            Col("iterations", "CG iters", lambda v: fmt_float(v, 3)),
            Col("episodes_per_s", "episodes/s", lambda v: f"{v:.0f}"),
        ],
        notes=[
            f"{episodes} timed episodes after {warmup} untimed ones; seed 0; delta 0.1, U = {warmup + episodes}",
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
