"""``cmdp-rl import-gym ENV_ID``: a Gymnasium toy-text environment as a CMDP model file."""

from __future__ import annotations

import argparse

from cmdp_rl.cli.exit_codes import EXIT_OK
from cmdp_rl.cli.options import (
    FORCE_FILE_HELP,
    add_c_bar,
    add_cost,
    add_env_kwargs,
    add_force,
    add_horizon,
    add_limits,
    add_out,
    nonnegative,
)

NAME = "import-gym"
HELP = "import a Gymnasium toy-text environment (FrozenLake, CliffWalking, Taxi) as a CMDP file"
DESCRIPTION = (
    "Convert a Gymnasium environment whose unwrapped object exposes the tabular model P "
    "into a CMDP (.npz with meta); the conversion is documented in docs/environments.md."
)


def add_options(p: argparse.ArgumentParser) -> None:
    """``import-gym``'s arguments."""
    p.add_argument("env_id", help="Gymnasium id, e.g. FrozenLake-v1, CliffWalking-v1, Taxi-v4")
    add_horizon(p, "H, steps per episode", required=True)
    add_cost(p, "named cost (FrozenLake: hole, CliffWalking: cliff, Taxi: illegal; default: none, N = 0)", False)
    add_c_bar(
        p,
        "the cost's threshold c_bar (expected total cost per episode; required with --cost)",
        metavar="X",
        type=nonnegative,
    )
    add_env_kwargs(p, "options for gymnasium.make, e.g. '{\"is_slippery\": true}' (default: none)")
    add_out(p, "output model file (its folder must exist)", metavar="FILE.npz", required=True)
    add_force(p, FORCE_FILE_HELP)
    add_limits(p)


def run(args: argparse.Namespace) -> int:
    """Convert ``ENV_ID`` and write ``--out`` (see ``cmdp-rl import-gym --help``)."""
    from cmdp_rl.cli.common import check_output_file, parse_env_kwargs, resource_limits
    from cmdp_rl.envs.gymnasium_import import from_gymnasium
    from cmdp_rl.model.cmdp import length_label

    out = check_output_file(args.out, args.force, "out")
    kwargs = parse_env_kwargs(args.env_kwargs)
    max_memory, max_seconds = resource_limits(args)
    model = from_gymnasium(
        args.env_id,
        args.horizon,
        cost=args.cost,
        c_bar=args.c_bar,
        max_memory=max_memory,
        max_seconds=max_seconds,
        **kwargs,
    )
    model.save(out)
    print(f"wrote {args.env_id} (S={model.S} A={model.A} {length_label(model)} N={model.N}) to {out}")
    return EXIT_OK


__all__ = ["DESCRIPTION", "HELP", "NAME", "add_options", "run"]
