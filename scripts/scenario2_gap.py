"""Why Online-CRL keeps a constant value gap on scenario 2 (hardening issue, item 22).

Runs Online-CRL (the library's learner, delta = 0.1, budget mode) on scenario 2 with the
paper's radius and with variants that change only the radius rule (``radius="empirical-bernstein"``, or a
subclass overriding ``OnlineCRL.radius``), then inspects the last plan's optimistic kernel. Writes
``docs/scenario2-gap.json`` (raw numbers) and prints a markdown table.

    python scripts/scenario2_gap.py [--episodes 10000] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from cmdp_rl import EpisodicEnv, OnlineCRL, Scorer, scenario_cmdp, solve, solve_elp
from cmdp_rl.confidence.radii import empirical_kernel

Array = NDArray[np.float64]
OUT = Path(__file__).resolve().parents[1] / "docs" / "scenario2-gap.json"


class NoMassToUnseen(OnlineCRL):
    """The paper's radius, except 0 on entries never observed (p_hat = 0) of visited pairs."""

    def radius(self, p_hat: Array, n: NDArray[np.int64]) -> Array:
        beta = super().radius(p_hat, n)
        return np.where((p_hat == 0) & (n[..., None] > 0), 0.0, beta)


VARIANTS: dict[str, tuple[type[OnlineCRL], str]] = {
    "paper": (OnlineCRL, "paper"),
    "paper, radius 0 where p_hat = 0": (NoMassToUnseen, "paper"),
    # the library's valid radius (Maurer and Pontil 2009 with Hoeffding, DESIGN section 13)
    "Maurer-Pontil (valid)": (OnlineCRL, "empirical-bernstein"),
}


def mechanism(model, learner: OnlineCRL, counts: NDArray[np.int64]) -> dict[str, object]:
    """Where the last optimistic kernel puts mass that the true kernel does not have."""
    p_hat, n = empirical_kernel(counts)
    plan = solve_elp(model, p_hat, learner.radius(p_hat, n))
    ghost = (plan.kernel > 1e-12) & (model.P[None] == 0) & (plan.occupancy[..., None] > 1e-9)
    entries = []
    for h, s, a, s2 in zip(*np.nonzero(ghost), strict=True):
        entries.append(
            {
                "h": int(h),
                "s": int(s),
                "a": int(a),
                "s2": int(s2),
                "optimistic_prob": float(plan.kernel[h, s, a, s2]),
                "beta": float(learner.radius(p_hat, n)[s, a, s2]),
                "n": int(n[s, a]),
                "visit_prob": float(plan.occupancy[h, s, a]),
            }
        )
    entries.sort(key=lambda e: -e["visit_prob"] * e["optimistic_prob"])
    return {"optimistic_value": plan.value, "ghost_entries": entries[:8], "n_ghost_entries": len(entries)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    model = scenario_cmdp("2")
    scorer = Scorer.for_model(model)
    opt = solve(model)
    result: dict[str, object] = {"episodes": args.episodes, "runs": args.runs, "v_star": scorer.v_star, "variants": {}}
    seeds = np.random.SeedSequence(2024).spawn(args.runs)
    for label, (cls, rule) in VARIANTS.items():
        gaps, viols, mech = [], [], None
        for i in range(args.runs):
            learner = cls(model, 0.1, episodes=args.episodes, radius=rule)
            run = learner.fit(EpisodicEnv(model, np.random.default_rng(seeds[i])), scorer)
            gaps.append(float(run.value_gap[-1]))
            viols.append(float(run.violation[-1]))
            if i == 0:
                mech = mechanism(model, learner, run.counts)
                diff = np.abs(run.policy - opt.policy).max(axis=-1)
                mech["policy_differs_at_h_s"] = [
                    [int(h), int(s)] for h, s in zip(*np.nonzero(diff > 1e-6), strict=True)
                ][:10]
        g = np.array(gaps)
        half = float(stats.t.ppf(0.975, len(g) - 1) * g.std(ddof=1) / math.sqrt(len(g))) if len(g) > 1 else float("nan")
        result["variants"][label] = {
            "gaps": gaps,
            "violations": viols,
            "gap_mean": float(g.mean()),
            "gap_half_width": half,
            "mechanism": mech,
        }
        print(
            f"| {label} | {args.runs} | {args.episodes:,} | {g.mean():.4g} ± {half:.2g} | {max(viols):.3g} | "
            f"{mech['n_ghost_entries'] if mech else '-'} |",
            flush=True,
        )
    OUT.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
