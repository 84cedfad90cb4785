"""What the paper's (invalid) radius buys and costs: both learners on 1a and 1b under both radii.

For each scenario, learner and radius rule (``paper``, ``empirical-bernstein``), ``runs``
independent runs with common random numbers across the two rules (the same seed per
run index). Records the final policy's exact value gap and violation, Online-CRL's
cumulative violation per episode, and how often the true kernel was outside the
learner's own confidence set (Optimistic-GMBL: at the final budget; Online-CRL: the
fraction of re-plans whose set excluded it). Writes ``docs/radius-comparison.json`` and
prints the README's markdown table.

    python scripts/radius_comparison.py [--runs 5] [--episodes 3000] [--samples-per-pair 1000]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from tqdm import tqdm

from cmdp_rl import EpisodicEnv, GenerativeModel, OnlineCRL, OptimisticGMBL, Scorer, scenario_cmdp
from cmdp_rl.confidence.radii import RADII, empirical_kernel

OUT = Path(__file__).resolve().parents[1] / "docs" / "radius-comparison.json"


def mean_pm(xs: list[float]) -> str:
    a = np.asarray(xs, dtype=float)
    half = 1.96 * a.std(ddof=1) / np.sqrt(a.size) if a.size > 1 else float("nan")
    return f"{a.mean():.3g} ± {half:.2g}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--episodes", type=int, default=3000)
    ap.add_argument("--samples-per-pair", type=int, default=1000)
    ap.add_argument("--delta", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rows = []
    jobs = [(sc, algo, rule) for sc in ("1a", "1b") for algo in ("gmbl", "online-crl") for rule in RADII]
    for sc, algo, rule in tqdm(jobs, desc="configurations"):
        m = scenario_cmdp(sc)
        scorer = Scorer.for_model(m)
        gaps, viols, outside, cum = [], [], [], []
        for run in range(args.runs):
            rng = np.random.default_rng(np.random.SeedSequence(args.seed, spawn_key=(len(sc), run)))
            if algo == "gmbl":
                g = OptimisticGMBL(m, args.delta, samples_per_pair=args.samples_per_pair, radius=rule)
                res = g.fit(GenerativeModel(m, rng), scorer)
                gaps.append(res.value_gap)
                viols.append(res.violation)
                outside.append(float(not res.confidence.contains(m.P)))
            else:
                learner = OnlineCRL(m, args.delta, episodes=args.episodes, radius=rule)
                misses = [0]

                def check(
                    k: int,
                    counts: NDArray[np.int64],
                    policy: NDArray[np.float64],
                    learner: OnlineCRL = learner,
                    misses: list[int] = misses,
                    P: NDArray[np.float64] = m.P,
                ) -> None:
                    p_hat, n = empirical_kernel(counts)
                    beta = learner.radius(p_hat, n)
                    misses[0] += bool(np.any(np.abs(P - p_hat) > beta + 1e-12))

                r = learner.fit(EpisodicEnv(m, rng), scorer, on_episode=check)
                gaps.append(float(r.value_gap[-1]))
                viols.append(float(r.violation[-1]))
                cum.append(float(r.violation.sum() / r.episodes))
                outside.append(misses[0] / r.episodes)
        rows.append(
            {
                "scenario": sc,
                "algorithm": algo,
                "radius": rule,
                "runs": args.runs,
                "budget": args.samples_per_pair if algo == "gmbl" else args.episodes,
                "value_gap": gaps,
                "violation": viols,
                "mean_violation_per_episode": cum,
                "kernel_outside": outside,
            }
        )
    OUT.write_text(json.dumps({"args": vars(args), "rows": rows}, indent=1))
    print(
        "| scenario | algorithm | budget | radius | final value gap | final violation | "
        "mean violation per episode | true kernel outside the set |"
    )
    print("|---|---|--:|---|--:|--:|--:|--:|")
    for r in rows:
        budget = f"{r['budget']:,} per pair" if r["algorithm"] == "gmbl" else f"{r['budget']:,} episodes"
        cum = mean_pm(r["mean_violation_per_episode"]) if r["mean_violation_per_episode"] else "-"
        out = np.mean(r["kernel_outside"])
        what = "of runs" if r["algorithm"] == "gmbl" else "of re-plans"
        print(
            f"| {r['scenario']} | {r['algorithm']} | {budget} | {r['radius']} | {mean_pm(r['value_gap'])} | "
            f"{mean_pm(r['violation'])} | {cum} | {out:.3f} {what} |"
        )


if __name__ == "__main__":
    main()
