"""Certified-safe planning on the paper's scenarios: how the certified policy improves with data.

For 1a and 1b and n samples per pair from a generative model (``sampling="fixed"``,
``delta = 0.05``, the valid radius), runs :func:`cmdp_rl.solve_safe` over ``seeds``
independent draws and reports how often a policy was certified, its certified value
lower bound, its exact value and cost on the true model, and ``V*``. Writes
``docs/safe-planning.json`` (with the machine, its load before the run, the commit and whether
the tree was clean) and prints the README's table.

    python scripts/safe_planning.py [--seeds 5]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from provenance import provenance

from cmdp_rl import GenerativeModel, Scorer, evaluate, scenario_cmdp, solve_safe

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "safe-planning.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--delta", type=float, default=0.05)
    args = ap.parse_args()
    measured = provenance()
    rows = []
    for sc in ("1a", "1b"):
        m = scenario_cmdp(sc)
        v_star = Scorer.for_model(m).v_star
        for n in (50, 200, 1000, 10_000):
            certified, lo, val, cost, secs = 0, [], [], [], []
            for seed in range(args.seeds):
                counts = GenerativeModel(m, np.random.default_rng([seed, n])).sample_counts(n)
                t0 = time.perf_counter()
                plan = solve_safe(counts, m.r, m.c, m.c_bar, m.s0, m.H, delta=args.delta, sampling="fixed")
                secs.append(time.perf_counter() - t0)
                if plan.policy is not None:
                    certified += 1
                    ev = evaluate(m, plan.policy)
                    lo.append(plan.certificate.value_lo)
                    val.append(ev.value)
                    cost.append(float(np.max(ev.costs - m.c_bar)))
            rows.append(
                {
                    "scenario": sc,
                    "n_per_pair": n,
                    "seeds": args.seeds,
                    "certified": certified,
                    "value_lo": lo,
                    "value": val,
                    "worst_cost_minus_threshold": cost,
                    "v_star": v_star,
                    "seconds": float(np.median(secs)),
                }
            )
    OUT.write_text(json.dumps({"delta": args.delta, "rows": rows, **measured}, indent=1))
    print(
        "| scenario | n per pair | certified | certified value lower bound | true value | V* | "
        "largest true cost - threshold | time (median) |"
    )
    print("|---|--:|--:|--:|--:|--:|--:|--:|")
    for r in rows:
        print(
            f"| {r['scenario']} | {r['n_per_pair']:,} | {r['certified']}/{r['seeds']} | {np.mean(r['value_lo']):.3f} | "
            f"{np.mean(r['value']):.3f} | {r['v_star']:.3f} | {np.max(r['worst_cost_minus_threshold']):+.3f} | "
            f"{r['seconds']:.2f} s |"
        )


if __name__ == "__main__":
    main()
