"""``cmdp-rl export SCENARIO PATH``: a scenario (or a copy of a model) as a ``.npz`` model file."""

from __future__ import annotations

import argparse
import os

from cmdp_rl.cli.exit_codes import EXIT_OK
from cmdp_rl.cli.options import FORCE_FILE_HELP, add_force, add_limits, add_table_fill, output_name

NAME = "export"
HELP = "write a scenario (or copy a model) as a .npz model file"
DESCRIPTION = (
    "Write a registered problem (cmdp-rl envs lists them, e.g. 1a, garnet:S=50,seed=1), or convert a .npz model, "
    "a CSV/Parquet transition table or a model checker's file (PRISM, JANI, DRN), to PATH in the library's .npz "
    "format (atomically; an existing file is only replaced with --force)."
)


def add_options(p: argparse.ArgumentParser) -> None:
    """``export``'s arguments."""
    p.add_argument(
        "scenario",
        help="a registered problem (1a, garnet:S=50,seed=1, ...; see cmdp-rl envs), a .npz model file, a "
        "CSV/Parquet transition table, or a model checker's file .prism/.nm/.pm, .jani or .drn (with the options "
        "below for what such a file does not carry)",
    )
    p.add_argument("path", type=output_name, help="output .npz path (its folder must exist)")
    add_table_fill(p, ("horizon", "gamma", "c_bar", "s0"))
    add_force(p, FORCE_FILE_HELP)
    add_limits(p)


def run(args: argparse.Namespace) -> int:
    """Write ``SCENARIO`` to ``PATH`` (see ``cmdp-rl export --help``)."""
    from cmdp_rl.cli.common import check_distinct_paths, check_output_file, load_model
    from cmdp_rl.model.cmdp import length_label
    from cmdp_rl.plumbing.limits import human_bytes

    scenario_file = args.scenario if os.path.isfile(args.scenario) else None
    check_distinct_paths([("path", args.path)], [("scenario", scenario_file)])
    path = check_output_file(args.path, args.force, "path")
    model = load_model(args.scenario, args)
    model.save(path)
    kind = "scenario" if model.names in ("1a", "1b", "2") and args.scenario == model.names else "model"
    size = f"{model.layout}, nnz={model.nnz:,}, {human_bytes(model.nbytes)}"
    if model.actions is not None:  # a ragged model: its mask is saved with it
        size += f", {int(model.actions.sum()):,} of {model.S * model.A:,} pairs available"
    print(f"wrote {kind} {args.scenario} (S={model.S} A={model.A} {length_label(model)} N={model.N}, {size}) to {path}")
    return EXIT_OK


__all__ = ["DESCRIPTION", "HELP", "NAME", "add_options", "run"]
