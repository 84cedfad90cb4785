"""``cmdp-rl envs``: the registered problems with their optimum and Slater gap."""

from __future__ import annotations

import argparse
import json
from typing import Any

from cmdp_rl.cli.exit_codes import EXIT_OK
from cmdp_rl.cli.options import add_json

NAME = "envs"
HELP = "list the registered problems with their optimum and Slater gap"
DESCRIPTION = (
    "Every registered problem (a name usable wherever a model file is, with overrides "
    "NAME:key=value,...): S, A, H, N, the constrained optimum V*, the unconstrained optimum, the joint Slater "
    "gap and the safe baseline's cost, at the documented defaults (docs/environments.md)."
)


def add_options(p: argparse.ArgumentParser) -> None:
    """``envs``' arguments."""
    add_json(p, "print a JSON list")


def run(args: argparse.Namespace) -> int:
    """Print the registered problems' table (or a JSON list)."""
    from cmdp_rl.envs.registry import problem_table

    rows = problem_table()
    if args.json:
        print(json.dumps(rows))
        return EXIT_OK

    def num(x: Any) -> str:
        return "-" if x is None else f"{x:.4g}"

    print(
        f"{'name':<22} {'S':>4} {'A':>2} {'H|gamma':>7} {'N':>2} {'nnz':>6} {'V*':>9} {'V (unconstr.)':>13} "
        f"{'Slater gap':>10}  baseline cost"
    )
    for r in rows:
        base = "[" + ", ".join(f"{v:.4g}" for v in r["baseline_costs"]) + "]" if r["baseline_costs"] else "-"
        length = r["H"] if r["H"] is not None else r["gamma"]
        print(
            f"{r['name']:<22} {r['S']:>4} {r['A']:>2} {length:>7} {r['N']:>2} {r['nnz']:>6} {num(r['v_star']):>9} "
            f"{num(r['v_unconstrained']):>13} {num(r['slater_gap']):>10}  {base}"
        )
    return EXIT_OK


__all__ = ["DESCRIPTION", "HELP", "NAME", "add_options", "run"]
