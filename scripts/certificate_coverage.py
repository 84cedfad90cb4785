"""Coverage of the certificate's confidence set, measured (certificates issue, README table).

For scenario 1a (n = 308 samples per pair, as measured in review) and a random model
(``random`` problem, n = 50 per pair), draws the counts ``trials`` times from the true
kernel (a generative model: ``sampling="fixed"``) and, for each radius rule, records how
often

* the true kernel lies in the confidence set (every entry inside its interval), and
* the certificate's value interval and every cost interval contain the true value and
  costs of the problem's optimal policy.

Both should happen at least ``1 - delta`` of the time for a valid radius. Writes
``docs/certificate-coverage.json`` and prints the markdown table the README quotes.

    python scripts/certificate_coverage.py [--trials 2000] [--delta 0.05]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy import stats
from tqdm import tqdm

from cmdp_rl import certify, evaluate, make, solve
from cmdp_rl.certificates.certify import certificate_radius, per_entry_delta
from cmdp_rl.confidence.radii import RADII, empirical_kernel

OUT = Path(__file__).resolve().parents[1] / "docs" / "certificate-coverage.json"
CASES = (("1a", 308), ("random", 50))


def wilson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a proportion ``k / n``."""
    z = stats.norm.ppf(0.5 + level / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return float(centre - half), float(centre + half)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--delta", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rows = []
    streams = np.random.SeedSequence(args.seed).spawn(len(CASES))
    for (name, n), ss in zip(CASES, streams, strict=True):
        m = make(name)
        policy = solve(m).policy
        ev = evaluate(m, policy)
        rng = np.random.default_rng(ss)
        miss_kernel = dict.fromkeys(RADII, 0)
        miss_entry = dict.fromkeys(RADII, 0)
        miss_interval = dict.fromkeys(RADII, 0)
        for _ in tqdm(range(args.trials), desc=f"{name} (n={n})", mininterval=1):
            counts = rng.multinomial(n, m.P)
            p_hat, nn = empirical_kernel(counts)
            for rule in RADII:
                beta = certificate_radius(p_hat, nn, per_entry_delta(args.delta, nn, "fixed"), rule)
                outside = int(np.count_nonzero(np.abs(m.P - p_hat) > beta + 1e-12))
                miss_kernel[rule] += outside > 0
                miss_entry[rule] += outside
                cert = certify(policy, counts, m.r, m.c, m.c_bar, m.s0, m.H, args.delta, rule, "fixed")
                inside = cert.value_lo - 1e-9 <= ev.value <= cert.value_hi + 1e-9 and bool(
                    np.all((cert.cost_lo - 1e-9 <= ev.costs) & (ev.costs <= cert.cost_hi + 1e-9))
                )
                miss_interval[rule] += not inside
        for rule in RADII:
            k = miss_kernel[rule]
            rows.append(
                {
                    "problem": name,
                    "S": m.S,
                    "A": m.A,
                    "n_per_pair": n,
                    "radius": rule,
                    "delta": args.delta,
                    "trials": args.trials,
                    "kernel_outside": k,
                    "kernel_outside_rate": k / args.trials,
                    "kernel_outside_ci95": wilson(k, args.trials),
                    "delta_prime": args.delta / (m.S * m.S * m.A),
                    "entry_misses": miss_entry[rule],
                    "entry_miss_rate": miss_entry[rule] / (args.trials * m.S * m.S * m.A),
                    "entry_miss_over_delta_prime": miss_entry[rule]
                    / (args.trials * m.S * m.S * m.A)
                    / (args.delta / (m.S * m.S * m.A)),
                    "interval_misses": miss_interval[rule],
                    "interval_miss_rate": miss_interval[rule] / args.trials,
                }
            )
    # one entry on its own, exactly: P(|phat - p| > beta) = sum_k Binomial(k; n, p) [miss at k], the largest
    # over a fine grid of p, at per-entry levels delta' = delta and delta / (S^2 A) of scenario 1a
    entry_rows = []
    grid = np.logspace(-4, np.log10(0.5), 600)
    for n in (50, 308, 1000):
        k = np.arange(n + 1)
        p_hat = (k / n).reshape(-1, 1, 1)
        pmf = stats.binom.pmf(k[:, None], n, grid[None, :])  # (n+1, grid)
        for d in (args.delta, args.delta / (9 * 9 * 4)):
            row: dict[str, object] = {"n": n, "delta_prime": d}
            for rule in RADII:
                beta = certificate_radius(p_hat, np.full((n + 1, 1), n), np.full((n + 1, 1), d), rule)[:, 0, 0]
                miss = (pmf * (np.abs(p_hat[:, 0, 0][:, None] - grid[None, :]) > beta[:, None])).sum(0)
                worst = int(np.argmax(miss))
                row[rule] = {"max_miss_over_delta_prime": float(miss[worst] / d), "at_p": float(grid[worst])}
            entry_rows.append(row)
    OUT.write_text(
        json.dumps(
            {"trials": args.trials, "delta": args.delta, "seed": args.seed, "rows": rows, "entry_rows": entry_rows},
            indent=1,
        )
    )
    print(
        "| problem | n per pair | radius | true kernel outside the set | 95% CI | entries outside / delta' "
        "| value/cost interval misses |"
    )
    print("|---|--:|---|--:|---|--:|--:|")
    for r in rows:
        lo, hi = r["kernel_outside_ci95"]
        print(
            f"| {r['problem']} (S={r['S']}) | {r['n_per_pair']} | {r['radius']} | {r['kernel_outside_rate']:.4f} "
            f"({r['kernel_outside']}/{r['trials']}) | [{lo:.4f}, {hi:.4f}] | {r['entry_miss_over_delta_prime']:.3f} "
            f"| {r['interval_miss_rate']:.4f} |"
        )

    print()
    print("| n | delta' | paper: max_p P(miss) / delta' (at p) | empirical-bernstein: max_p P(miss) / delta' (at p) |")
    print("|--:|--:|--:|--:|")
    for e in entry_rows:
        cells = [f"{e[r]['max_miss_over_delta_prime']:.2f} (p = {e[r]['at_p']:.4f})" for r in RADII]  # type: ignore[index]
        print(f"| {e['n']} | {e['delta_prime']:.3g} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
