"""``simulator``: every learner on a 5,000-state black box (simulator issue, item 5).

A Garnet simulator (5,000 states, 4 actions, 3 successors per pair, one constraint, H = 20;
:class:`cmdp_rl.envs.gym_env.CMDPEnv` of a sparse model) is learned by each online learner
through :func:`cmdp_rl.learn` for 200 episodes, each learner in its own fresh process
(compilation done on a small model first, so the run times what learning costs). Beside it, in
the same process: the environment's own 200 x H steps (``reset`` and ``step`` alone) and one
sparse DP sweep of the simulator's model (:func:`cmdp_rl.kernels.csr.dp_sweep`). The issue's target:
``learn`` in at most 50 x (the environment's steps + 200 sweeps), peak resident memory under
1.5 GB, virtual memory growing by less than 350 MB while learning (no ``(S, A, S)`` array).

The safe learners get the least-cost policy (the plan of the thresholds divided by 5, which are
infeasible: the minimum-worst-excess policy) and its exact costs as their baseline.

Run: ``python -m benchmarks --only simulator [--quick]`` (quick: 1,000 states, 50 episodes).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

from .common import Col, Table, banner, fmt_float, fmt_time

S, EPISODES, QUICK_S, QUICK_EPISODES = 5000, 200, 1000, 50
A, B, H = 4, 3, 20
TARGET_RATIO, TARGET_RSS_MB, TARGET_VM_MB = 50.0, 1536, 350

CHILD = textwrap.dedent(
    """
    import json, sys, time

    import numpy as np

    from cmdp_rl import evaluate, learn, solve
    from cmdp_rl.envs.gym_env import CMDPEnv
    from cmdp_rl.envs.generators import garnet
    from cmdp_rl.learners import SAFE_ALGORITHMS
    from cmdp_rl.kernels.csr import dp_sweep

    algo, S, A, B, H, K = sys.argv[1], *map(int, sys.argv[2:7])


    def vm(key):
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) / 1024 for line in fh if line.startswith(key + ":"))


    g = garnet(S, A, B, 1, 0.5, H, 0).to_sparse()
    kw = {}
    small_kw = {}
    if algo in SAFE_ALGORITHMS:
        least = solve(g.replace(c_bar=g.c_bar / 5))
        kw["baseline"] = (least.policy, evaluate(g, least.policy).costs)
        small_kw["baseline"] = (np.full((5, 30, A), 1.0 / A), np.array([1.0]))
    learn(CMDPEnv(garnet(30, A, B, 1, 0.5, 5, 0)), H=5, c_bar=[2.0], episodes=2, algorithm=algo, **small_kw)
    env = CMDPEnv(g)
    before = vm("VmSize")
    t0 = time.perf_counter()
    rec = learn(env, H=H, c_bar=g.c_bar, episodes=K, algorithm=algo, seed=0, **kw)
    seconds = time.perf_counter() - t0
    growth = vm("VmSize") - before
    t0 = time.perf_counter()
    for k in range(K):
        env.reset(seed=k)
        for t in range(H):
            env.step(t % A)
    env_seconds = time.perf_counter() - t0
    K_ = g.K
    ip, ix = K_.indptr.astype(np.int64), K_.indices.astype(np.int64)
    r = np.ascontiguousarray(g.r)
    dp_sweep(ip, ix, K_.data, r, H)
    t0 = time.perf_counter()
    for _ in range(20):
        dp_sweep(ip, ix, K_.data, r, H)
    sweep = (time.perf_counter() - t0) / 20
    print(json.dumps({
        "algorithm": algo, "seconds": seconds, "env_seconds": env_seconds, "sweep": sweep,
        "ratio": seconds / (env_seconds + K * sweep), "vm_growth_mb": growth, "peak_rss_mb": vm("VmHWM"),
        "statuses": rec.status_counts(), "visited": int(rec.counts.nnz),
    }))
    """
)


def point(algo: str, quick: bool) -> dict[str, Any]:
    """One learner in a fresh process."""
    size, episodes = (QUICK_S, QUICK_EPISODES) if quick else (S, EPISODES)
    argv = [sys.executable, "-c", CHILD, algo, str(size), str(A), str(B), str(H), str(episodes)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        return {"algorithm": algo, "status": f"failed: {done.stderr.strip().splitlines()[-1:]}"}
    row: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    row["statuses"] = ", ".join(f"{k} {v}" for k, v in row["statuses"].items() if v)
    held = row["ratio"] <= TARGET_RATIO and row["peak_rss_mb"] < TARGET_RSS_MB and row["vm_growth_mb"] < TARGET_VM_MB
    row["status"] = "holds" if held else "misses"
    return row


def run(quick: bool = False) -> Table:
    """Run the ``simulator`` benchmark, print and save its table."""
    from cmdp_rl.learners import ONLINE_ALGORITHMS

    size, episodes = (QUICK_S, QUICK_EPISODES) if quick else (S, EPISODES)
    quick_note = " (quick)" if quick else ""
    banner(f"simulator: every learner on a {size:,}-state black box, {episodes} episodes{quick_note}")
    table = Table(
        "simulator",
        f"Every learner through cmdp_rl.learn on a {size:,}-state Garnet simulator, {episodes} episodes of H = {H}",
        [
            Col("algorithm", "algorithm", left=True),
            Col("seconds", "learn", fmt_time),
            Col("env_seconds", "env steps", fmt_time),
            Col("sweep", "one sweep", fmt_time),
            Col("ratio", "learn / (env steps + K sweeps)", lambda x: fmt_float(x, 3)),
            Col("peak_rss_mb", "peak RSS", lambda x: f"{x:.0f} MB"),
            Col("vm_growth_mb", "VM growth", lambda x: f"{x:.0f} MB"),
            Col("visited", "visited transitions"),
            Col("statuses", "episodes", left=True),
            Col("status", "status", left=True),
        ],
        notes=[
            f"Garnet S={size}, A={A}, b={B}, N=1, H={H}, seed 0 (sparse), the CMDPEnv simulator; each learner in a "
            "fresh process after compiling on a 30-state model; env steps: the simulator's own "
            f"{episodes} x H steps; one sweep: cmdp_rl.kernels.csr.dp_sweep of its model (median of 20)",
            f"targets: learn <= {TARGET_RATIO:.0f} x (env steps + {episodes} sweeps), peak RSS < 1.5 GB, VM growth "
            f"< {TARGET_VM_MB} MB; the safe learners' baseline: the least-cost policy and its exact costs",
        ],
    )
    for algo in ONLINE_ALGORITHMS:
        row = point(algo, quick)
        table.add(**row)
        print(f"  {algo:<14} {row.get('status')}", flush=True)
    table.print()
    table.save(quick, params={"S": size, "episodes": episodes, "H": H})
    return table


if __name__ == "__main__":
    run(quick="--quick" in sys.argv)
