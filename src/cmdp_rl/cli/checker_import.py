"""What ``cmdp-rl import-prism``, ``import-jani`` and ``import-drn`` share: their options (the file,
``--constants``, ``--reward``, ``--cost``, ``--c-bar``, ``--horizon`` or ``--gamma``, ``--out``,
``--force``) and the import itself ([`cmdp_rl.model.storm`][cmdp_rl.model.storm], through stormpy)."""

from __future__ import annotations

import argparse

from cmdp_rl.cli.exit_codes import EXIT_OK
from cmdp_rl.cli.options import (
    FORCE_FILE_HELP,
    add_c_bar,
    add_checker_names,
    add_force,
    add_gamma,
    add_horizon,
    add_out,
)


def add_checker_options(p: argparse.ArgumentParser, kind: str, constants: bool) -> None:
    """The options of an import of a model checker's ``kind`` file (``constants``: it has undefined
    constants to give)."""
    p.add_argument("file", help=f"the {kind} file (an MDP or DTMC)")
    add_checker_names(p, "", constants)
    add_c_bar(p, "the thresholds, one per --cost, in the model's units (required with --cost)", "X[/Y...]")
    length = p.add_mutually_exclusive_group(required=True)
    add_horizon(
        length,
        "the horizon H, steps per episode (Storm's C<=H); give this or --gamma (required: one of the two)",
        metavar="H",
    )
    add_gamma(length, "the discount factor in (0, 1); give this or --horizon (required: one of the two)")
    add_out(p, "output model file (its folder must exist)", metavar="FILE.npz", required=True)
    add_force(p, FORCE_FILE_HELP)


def run_import(args: argparse.Namespace, kind: str, command: str) -> int:
    """Import ``args.file`` (a ``kind`` file: ``prism``, ``jani`` or ``drn``) and write ``--out``
    (``command``: the command's name, for the message without stormpy)."""
    from cmdp_rl.cli.checker_model import checker_thresholds, option_terms
    from cmdp_rl.cli.common import check_output_file
    from cmdp_rl.model import storm
    from cmdp_rl.model.cmdp import length_label, start_label
    from cmdp_rl.plumbing.errors import CMDPInputError

    out = check_output_file(args.out, args.force, "out")
    costs = list(args.cost or [])
    if costs and args.c_bar is None:
        raise CMDPInputError(f"--c-bar: required with --cost: one threshold per cost X{'/Y' * (len(costs) - 1)}")
    c_bar = checker_thresholds(costs, args.c_bar)
    storm.stormpy_module(f"cmdp-rl {command}")
    common = {"reward": args.reward, "costs": costs, "H": args.horizon, "gamma": args.gamma, "c_bar": c_bar}
    with option_terms(costs):
        if kind == "drn":
            model = storm.from_drn(args.file, **common)
        else:
            reader = storm.from_prism if kind == "prism" else storm.from_jani
            model = reader(args.file, args.constants, **common)
    model.save(out)
    choices = int(model.available.sum())
    print(
        f"wrote {model.names} (S={model.S} A={model.A} {length_label(model)} N={model.N} s0={start_label(model)}, "
        f"{choices:,} choices, {len(model.labels)} labels) to {out}"
    )
    return EXIT_OK


__all__ = ["add_checker_options", "run_import"]
