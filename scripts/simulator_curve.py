"""What learning from a black box costs: Online-CRL with everything unknown against the model path.

A hidden random CMDP (20 states, 3 actions, 3 successors per pair, H = 8, a start distribution
over 4 states, one binding constraint: the threshold halfway between the least cost and the
unconstrained optimum's cost) is played two ways, with the same seeds:

* **black box**: ``cmdp_rl.learn`` on a Gymnasium environment that only answers ``reset`` and
  ``step`` (start distribution, rewards and costs unknown);
* **known model**: ``OnlineCRL`` on the true CMDP (rewards, costs and the start distribution
  known: the start distribution as an added start state), the library's model path.

Both final policies are scored exactly on the hidden model. Writes
``docs/simulator-curve.json`` (raw numbers, each run's seconds, and the machine, its load before
the run, the commit and whether the tree was clean) and ``docs/figures/fig_simulator.png`` (running
means of the realized return and cost per episode, threshold drawn), and prints a table.

    python scripts/simulator_curve.py [--episodes 300 3000 10000] [--seeds 3]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray
from provenance import provenance

from cmdp_rl import CMDP, EpisodicEnv, OnlineCRL, evaluate, learn, random_cmdp, solve

Array = NDArray[np.float64]
ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "simulator-curve.json"
FIG = ROOT / "docs" / "figures" / "fig_simulator.png"
S, A, H, SEED = 20, 3, 8, 3


class Hidden(gym.Env[int, int]):
    """A tabular CMDP behind ``reset`` and ``step`` (start drawn from ``init``, cost in ``info``)."""

    def __init__(self, m: CMDP, init: Array) -> None:
        self._m, self._init = m, init
        self.observation_space, self.action_space = gym.spaces.Discrete(m.S), gym.spaces.Discrete(m.A)

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[int, dict[str, Any]]:
        super().reset(seed=seed)
        self._s = int(self.np_random.choice(self._m.S, p=self._init))
        return self._s, {}

    def step(self, a: int) -> tuple[int, float, bool, bool, dict[str, Any]]:
        m, s = self._m, self._s
        self._s = int(self.np_random.choice(m.S, p=m.P[s, a]))
        return self._s, float(m.r[s, a]), False, False, {"cost": float(m.c[0, s, a])}


def problem() -> tuple[CMDP, Array, CMDP]:
    """The simulator's model, its start distribution and the true CMDP (start state ``S`` added)."""
    m = random_cmdp(S, A, H, 1, seed=SEED, support=3)
    init = np.zeros(S)
    init[:4] = 0.25
    P = np.zeros((S + 1, A, S + 1))
    P[:S, :, :S] = m.P
    P[S, :, :S] = init
    r, c = np.zeros((S + 1, A)), np.zeros((1, S + 1, A))
    r[:S], c[:, :S] = m.r, m.c
    free = solve(CMDP(P, r, c, [100.0], S, H + 1))
    least = solve(CMDP(P, 1.0 - c[0], c, [100.0], S, H + 1))
    return m, init, CMDP(P, r, c, (least.costs + free.costs) / 2, S, H + 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, nargs="+", default=[300, 3000, 10000])
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    measured = provenance()
    m, init, true = problem()
    v_star = solve(true).value
    rows: list[dict[str, Any]] = []
    curves: dict[str, Any] = {}
    for K in args.episodes:
        for seed in range(args.seeds):
            for way in ("black box", "known model"):
                t0 = time.perf_counter()
                if way == "black box":
                    rec = learn(Hidden(m, init), H=H, c_bar=true.c_bar, episodes=K, seed=seed)
                    pol = np.full((H + 1, S + 1, A), 1.0 / A)
                    pol[1:, :S] = rec.policy
                else:
                    rec = OnlineCRL(true, 0.1, episodes=K).fit(EpisodicEnv(true, np.random.default_rng(seed)))
                    pol = rec.policy
                seconds = time.perf_counter() - t0
                ev = evaluate(true, pol)
                rows.append(
                    {
                        "way": way,
                        "episodes": K,
                        "seed": seed,
                        "value_gap": v_star - ev.value,
                        "violation": max(float(ev.costs[0] - true.c_bar[0]), 0.0),
                        "mean_realized_return": float(rec.mean_realized_return[-1]),
                        "mean_realized_costs": float(rec.mean_realized_costs[-1, 0]),
                        "seconds": seconds,
                    }
                )
                if K == max(args.episodes) and seed == 0:
                    curves[way] = (rec.mean_realized_return, rec.mean_realized_costs[:, 0])
                print(f"{way:<12} K={K:<6} seed={seed} gap {rows[-1]['value_gap']:+.3f} "
                      f"violation {rows[-1]['violation']:.3f} ({seconds:.1f} s)")  # fmt: skip
    OUT.write_text(json.dumps({"S": S, "A": A, "H": H, "c_bar": float(true.c_bar[0]), "v_star": v_star,
                               "rows": rows, **measured}, indent=1) + "\n")  # fmt: skip
    print("\n| episodes | way | value gap | violation |\n|---|---|---|---|")
    for K in args.episodes:
        for way in ("black box", "known model"):
            sel = [r for r in rows if r["episodes"] == K and r["way"] == way]
            g, v = [r["value_gap"] for r in sel], [r["violation"] for r in sel]
            print(f"| {K:,} | {way} | {min(g):.2f} to {max(g):.2f} | {min(v):.2f} to {max(v):.2f} |")
    _plot(curves, float(true.c_bar[0]), v_star)


def _plot(curves: dict[str, Any], c_bar: float, v_star: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_r, ax_c) = plt.subplots(1, 2, figsize=(9, 3.4))
    for i, (way, (ret, cost)) in enumerate(curves.items()):
        k = np.arange(1, ret.size + 1)
        ax_r.plot(k, ret, color=f"C{i}", label=way)
        ax_c.plot(k, cost, color=f"C{i}", label=way)
    ax_r.axhline(v_star, color="0.4", ls=":", lw=1, label="V* (optimum)")
    ax_c.axhline(c_bar, color="C3", ls="--", lw=1, label="threshold c_bar")
    for ax, title in ((ax_r, "running mean of the realized return"), (ax_c, "running mean of the realized cost")):
        ax.set_xscale("log")
        ax.set_xlabel("episode")
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    FIG.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIG, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
