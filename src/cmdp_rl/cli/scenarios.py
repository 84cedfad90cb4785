"""``cmdp-rl scenarios``: the paper's grid-world scenarios with their exact optimum."""

from __future__ import annotations

import argparse
import json

from cmdp_rl.cli.exit_codes import EXIT_OK
from cmdp_rl.cli.options import add_json

NAME = "scenarios"
HELP = "list the paper's grid-world scenarios"
DESCRIPTION = "The paper's scenarios (docs/scenarios.md) with size, horizon, threshold and exact optimum."


def add_options(p: argparse.ArgumentParser) -> None:
    """``scenarios``' arguments."""
    add_json(p, "print a JSON list")


def run(args: argparse.Namespace) -> int:
    """Print the scenarios' table (or a JSON list)."""
    from cmdp_rl.cli.common import fmt
    from cmdp_rl.envs import scenario_table

    rows = scenario_table()
    if args.json:
        print(json.dumps(rows, default=float))
        return EXIT_OK
    print(
        f"{'name':<5} {'grid':<5} {'S':>3} {'A':>2} {'H':>3} {'c_bar':>6} {'V* (constrained)':>17} "
        f"{'V (unconstrained)':>18}  description"
    )
    for r in rows:
        print(
            f"{r['name']:<5} {r['grid']:<5} {r['S']:>3} {r['A']:>2} {r['H']:>3} "
            f"{fmt(r['c_bar']):>6} {r['v_star']:>17.4f} {r['v_unconstrained']:>18.4f}  {r['description']}"
        )
    return EXIT_OK


__all__ = ["DESCRIPTION", "HELP", "NAME", "add_options", "run"]
