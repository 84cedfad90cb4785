"""``cmdp-rl bounds``: the paper's sample-complexity numbers (Theorems 1 and 2)."""

from __future__ import annotations

import argparse
import json

from cmdp_rl.cli.exit_codes import EXIT_OK
from cmdp_rl.cli.options import add_delta, add_eps, add_horizon, add_json, int_at_least

NAME = "bounds"
HELP = "the paper's sample-complexity numbers"
DESCRIPTION = (
    "Theory calculator: Theorem 1 (Optimistic-GMBL) and Theorem 2 / eq. m (Online-CRL) for given sizes, eps and delta."
)


def add_options(p: argparse.ArgumentParser) -> None:
    """``bounds``' arguments."""
    p.add_argument("--states", type=int_at_least(1), required=True, help="|S|, number of states")
    p.add_argument("--actions", type=int_at_least(1), required=True, help="|A|, number of actions")
    add_horizon(p, "H, steps per episode (>= 3 for eq. m)", required=True)
    p.add_argument("--constraints", type=int_at_least(0), default=1, help="N, number of constraints")
    add_eps(p, "accuracy in (0, 1)", required=True)
    add_delta(p, required=True)
    add_json(p)


def run(args: argparse.Namespace) -> int:
    """Print the bounds for the given sizes (see ``cmdp-rl bounds --help``)."""
    from cmdp_rl.confidence.sample_size import bounds_report

    rep = bounds_report(args.states, args.actions, args.horizon, args.constraints, args.eps, args.delta)
    if args.json:
        print(json.dumps(rep))
        return EXIT_OK
    g, o = rep["optimistic_gmbl"], rep["online_crl"]
    print(
        f"inputs: |S|={args.states} |A|={args.actions} H={args.horizon} N={args.constraints} "
        f"eps={args.eps} delta={args.delta}"
    )
    print("Optimistic-GMBL (Theorem 1)")
    print(f"  n per (s,a)          {g['n_per_pair']:.4g}")
    print(f"  total samples        {g['total_samples']:.4g}")
    print(f"  delta_P              {g['delta_P']:.4g}")
    verdict = "valid" if g["eps_valid"] else "OUT OF RANGE"
    print(f"  valid eps range      (0, {g['eps_max']:.4g})  -> eps is {verdict}")
    print("Online-CRL (Theorem 2)")
    print(f"  m (eq. m)            {o['m']:.4g}   (eq. m1 lower bound {o['m1_lower']:.4g})")
    print(f"  w_min                {o['w_min']:.4g}")
    print(f"  U_max                {o['U_max']:.4g}")
    print(f"  delta_1              {o['delta_1']:.4g}")
    print(f"  stop when n(s,a) >=  {o['stop_count']:.4g}")
    print(f"  E_max                {o['E_max']:.4g}")
    print(f"  bad episodes <=      {o['bad_episodes']:.4g}")
    return EXIT_OK


__all__ = ["DESCRIPTION", "HELP", "NAME", "add_options", "run"]
