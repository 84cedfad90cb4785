"""Every learner on a 5,000-state black box without an ``(S, A, S)`` array (simulator issue, item 5).

A child process builds a Garnet simulator (5,000 states, 4 actions, 3 successors per pair,
H = 20; its own kernel is sparse) and runs each online learner on it through
:func:`cmdp_rl.learn` for a few episodes, reading its virtual memory (``VmSize``) before and
after each run and its peak resident memory (``VmHWM``) at the end. One dense ``(S', A, S')``
float array of the planner's 5,001 states would be 800 MB: the virtual memory would grow by
that much. The hand-over (``deploy``) does not depend on the learner: the first learner's run
hands over the certified-safe plan (``solve_safe`` on its sparse counts, the default), the others
certify their last policy (``deploy="last"``; the certified plan took 80% of each run). The time
of the full 200-episode runs is measured by hand in docs/simulators.md.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

EPISODES = 2  # the second episode plans from the first one's data

CHILD = textwrap.dedent(
    """
    import json

    import numpy as np

    from cmdp_rl import evaluate, learn, solve
    from cmdp_rl.envs.gym_env import CMDPEnv
    from cmdp_rl.envs.generators import garnet
    from cmdp_rl.learners import ONLINE_ALGORITHMS, SAFE_ALGORITHMS


    def vm(key):
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) // 1024 for line in fh if line.startswith(key + ":"))


    g = garnet(5000, 4, 3, 1, 0.5, 20, 0).to_sparse()
    least = solve(g.replace(c_bar=g.c_bar / 5))  # infeasible: the least-cost policy, a safe baseline
    baseline = (least.policy, evaluate(g, least.policy).costs)
    small = garnet(30, 4, 3, 1, 0.5, 5, 0)
    out = {}
    for algo in ONLINE_ALGORITHMS:
        extra = {"baseline": (np.full((5, 30, 4), 0.25), np.array([1.0]))} if algo in SAFE_ALGORITHMS else {}
        learn(CMDPEnv(small), H=5, c_bar=[2.0], episodes=2, algorithm=algo, **extra)  # compile before measuring
        before = vm("VmSize")
        kw = {"baseline": baseline} if algo in SAFE_ALGORITHMS else {}
        deploy = "certified" if algo == ONLINE_ALGORITHMS[0] else "last"
        rec = learn(CMDPEnv(g), H=20, c_bar=g.c_bar, episodes=EPISODES, algorithm=algo, seed=0, deploy=deploy, **kw)
        out[algo] = {"growth_mb": vm("VmSize") - before, "nnz": int(rec.counts.nnz), "episodes": rec.episodes}
    out["hwm_mb"] = vm("VmHWM")
    print(json.dumps(out))
    """
)


@pytest.mark.slow
def test_every_learner_learns_a_5000_state_simulator_without_dense_statistics() -> None:
    done = subprocess.run(
        [sys.executable, "-c", f"EPISODES = {EPISODES}\n" + CHILD], capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["hwm_mb"] < 1536, report
    for algo, row in report.items():
        if algo == "hwm_mb":
            continue
        assert row["episodes"] == EPISODES and row["nnz"] > 0, (algo, row)
        assert row["growth_mb"] < 350, (algo, row)
