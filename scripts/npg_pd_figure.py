"""NPG-PD on the NPG-PD paper's own instance: the paper's update against the authors' script's step.

The instance is ``ding-random:seed=10`` (|S| = 20, |A| = 10, gamma = 0.8, b = 3, uniform start),
built exactly as the authors' tabular script builds it; ``V*`` comes from the library's LP
(Altman's occupation-measure LP, HiGHS). Three runs of 300 iterations with exact gradients:

* **paper**: the paper's natural-gradient update from the uniform policy, with the paper's
  constant steps ``eta1 = eta2 = 1`` (given explicitly: the library's default schedule differs);
* **script step**: the script's ``1e3 x`` policy-gradient step from the uniform policy;
* **script**: the script as published, its step from its random ``theta0``, with its running
  average over the policies *before* each update (the initial policy and iterations 1..t-1).

The first two average the policies *after* iterations 1..t, as ``cmdp-rl pg`` does. Writes
``docs/npg-pd-curve.json`` (the curves, the final numbers, V*, the machine) and
``docs/figures/fig_npg_pd.png`` (running-average optimality gap, log scale, and running-average
signed constraint violation ``V_c - c_bar``, i.e. the paper's ``b - V_g``), and prints a table.

    python scripts/npg_pd_figure.py [--iterations 300]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

import cmdp_rl
from cmdp_rl import make, solve

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "npg-pd-curve.json"
FIG = ROOT / "docs" / "figures" / "fig_npg_pd.png"
SPEC = "ding-random:seed=10"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=300)
    args = parser.parse_args()
    T = args.iterations
    m = make(SPEC)
    v_star = solve(m, "lp").value
    c_bar = m.c_bar
    # the paper's experiment takes eta1 = eta2 = 1 (constant steps), not the library's default schedule
    paper_steps = {"eta1": 1.0, "eta2": 1.0}
    variants: list[tuple[str, dict[str, Any], bool]] = [
        ("paper (uniform start; after each update)", paper_steps, False),
        ("script step (uniform start; after each update)", {"update": "script"}, False),
        ("script as published (its theta0; before each update)", {"update": "script", "init": "script"}, True),
    ]
    curves: dict[str, Any] = {}
    for label, options, before in variants:
        start = time.perf_counter()
        res = cmdp_rl.pg.methods.run(m, "npg-pd", T, **options)
        seconds = time.perf_counter() - start
        gap = res.avg_value_gap(v_star, before=before)
        costs = np.concatenate([res.initial_costs[None], res.costs[:-1]]) if before else res.costs
        signed = (costs - c_bar[None]).max(axis=1)
        viol = np.cumsum(signed) / np.arange(1, T + 1)
        curves[label] = {
            "options": options,
            "average": "before each update" if before else "after each update",
            "avg_value_gap": gap.tolist(),
            "avg_signed_violation": viol.tolist(),
            "final_value_gap": float(v_star - res.values[-1]),
            "final_multiplier": float(res.multipliers[-1, 0]),
            "seconds": seconds,
        }
        print(f"{label:55s} avg gap at {T}: {gap[-1]:.4f}   avg violation: {viol[-1]:+.4f}   ({seconds:.2f} s)")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    x = np.arange(1, T + 1)
    for k, (label, c) in enumerate(curves.items()):
        axes[0].plot(x, c["avg_value_gap"], color=f"C{k}", label=label)
        axes[1].plot(x, c["avg_signed_violation"], color=f"C{k}", label=label)
    axes[0].set_yscale("log")
    axes[0].set_ylabel("average optimality gap  V* - V_r")
    axes[1].axhline(0.0, color="0.5", lw=0.8, ls=":")
    axes[1].set_ylabel("average violation  V_c - c_bar  (= b - V_g)")
    for ax in axes:
        ax.set_xlabel("iteration")
    axes[0].legend(fontsize=7)
    fig.suptitle(f"NPG-PD on {SPEC} (exact gradients, V* = {v_star:.6f} from the LP)", fontsize=10)
    fig.tight_layout()
    FIG.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIG, dpi=120)
    record = {
        "spec": SPEC,
        "iterations": T,
        "v_star_lp": v_star,
        "curves": curves,
        "machine": {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()},
        "cmdp_rl": cmdp_rl.__version__,
    }
    OUT.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)} and {FIG.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
