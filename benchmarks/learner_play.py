"""``learner_play``: a learner on a large simulator playing Markov tables or its plans' columns.

Issue 37, item 1 (the learners' side): a learner whose ``(H, S, A)`` tables do not fit plays its
plans' deterministic columns as mixtures (``play="mixture"``, no table). Side by side, each in its
own fresh process (compilation done on a 30-state model first): ``cmdp_rl.learn`` on a Garnet
simulator (S = 100,000, A = 4, 3 successors, one constraint, H = 20; quick: S = 20,000) for a few
episodes with ``play="table"`` and ``play="mixture"``: the learning time, the peak resident
memory (``VmHWM``) and the growth of the virtual memory while learning, and the exact value and
cost of the last policy played (the two policies differ: the table mixes the plan's columns by the
occupancy of its optimistic kernels). Ratios mixture / table in one run.

Run: ``python -m benchmarks --only learner_play [--quick]``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

from .common import Col, Table, banner, fmt_float, fmt_time

S, QUICK_S, A, B, H, EPISODES = 100_000, 20_000, 4, 3, 20, 3
ALGORITHMS = ("online-crl", "optcmdp")

CHILD = textwrap.dedent(
    """
    import json, sys, time

    from cmdp_rl import learn
    from cmdp_rl.envs.generators import garnet
    from cmdp_rl.envs.gym_env import CMDPEnv

    algo, play, S, A, B, H, K = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:8])


    def vm(key):
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) / 1024 for line in fh if line.startswith(key + ":"))


    learn(CMDPEnv(garnet(30, A, B, 1, 0.5, 5, 0)), H=5, c_bar=[2.0], episodes=2, algorithm=algo, play=play)
    g = garnet(S, A, B, 1, 0.5, H, 0).to_sparse()
    before = vm("VmSize")
    t0 = time.perf_counter()
    rec = learn(CMDPEnv(g), H=H, c_bar=g.c_bar, episodes=K, algorithm=algo, seed=0, play=play, deploy="last")
    seconds = time.perf_counter() - t0
    print(json.dumps({
        "algorithm": algo, "play": play, "seconds": seconds, "vm_growth_mb": vm("VmSize") - before,
        "peak_rss_mb": vm("VmHWM"), "value": float(rec.value[-1]), "cost": float(rec.costs[-1][0]),
        "policy": type(rec.policy).__name__,
    }))
    """
)


def point(algo: str, play: str, size: int) -> dict[str, Any]:
    """One learner and play mode in a fresh process."""
    argv = [sys.executable, "-c", CHILD, algo, play, str(size), str(A), str(B), str(H), str(EPISODES)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        return {"algorithm": algo, "play": play, "status": f"failed: {done.stderr.strip().splitlines()[-1:]}"}
    row: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    row["status"] = "ok"
    return row


def run(quick: bool = False) -> Table:
    """Run the ``learner_play`` benchmark, print and save its table."""
    size = QUICK_S if quick else S
    banner(f"learner_play: tables against mixtures on a {size:,}-state simulator, {EPISODES} episodes")
    table = Table(
        "learner_play",
        f"cmdp_rl.learn on a {size:,}-state Garnet simulator, {EPISODES} episodes of H = {H}: play='table' "
        "against play='mixture'",
        [
            Col("algorithm", "algorithm", left=True),
            Col("play", "play", left=True),
            Col("seconds", "learn", fmt_time),
            Col("peak_rss_mb", "peak RSS", lambda x: f"{x:.0f} MB"),
            Col("vm_growth_mb", "VM growth", lambda x: f"{x:.0f} MB"),
            Col("rss_ratio", "RSS mixture / table", lambda x: fmt_float(x, 3)),
            Col("time_ratio", "time mixture / table", lambda x: fmt_float(x, 3)),
            Col("value", "last value", lambda x: fmt_float(x, 4)),
            Col("cost", "last cost", lambda x: fmt_float(x, 4)),
            Col("status", "status", left=True),
        ],
        notes=[
            f"Garnet S={size}, A={A}, b={B}, N=1, H={H}, seed 0 (sparse), the CMDPEnv simulator; each row in a fresh "
            "process after compiling on a 30-state model; value and cost: the exact ones of the last policy played",
            "play='mixture': one column of the plan drawn per episode and followed (no (H, S, A) table); the ratios "
            "compare it with play='table' for the same learner in the same run",
        ],
    )
    for algo in ALGORITHMS:
        rows = {play: point(algo, play, size) for play in ("table", "mixture")}
        base = rows["table"]
        for play, row in rows.items():
            if row.get("status") == "ok" and base.get("status") == "ok":
                row["rss_ratio"] = row["peak_rss_mb"] / base["peak_rss_mb"]
                row["time_ratio"] = row["seconds"] / base["seconds"]
            table.add(**row)
            print(f"  {algo:<12} {play:<8} {row.get('status')}", flush=True)
    table.print()
    table.save(quick, params={"S": size, "episodes": EPISODES, "H": H})
    return table


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
