"""``cmdp-rl import-drn FILE``: a DRN model (.drn) as a CMDP model file, through stormpy
(the optional extra ``pip install "cmdp-rl[storm]"``; see [`cmdp_rl.model.storm`][cmdp_rl.model.storm])."""

from __future__ import annotations

import argparse

from cmdp_rl.cli.checker_import import add_checker_options, run_import

NAME = "import-drn"
HELP = 'import a DRN MDP as a CMDP file (needs stormpy: pip install "cmdp-rl[storm]")'
DESCRIPTION = (
    "Build the DRN model with Storm and write it as a CMDP (.npz): the reward and costs from reward "
    "structures or labels, several initial states as a uniform start, choice labels as action names, the "
    "model's labels kept (docs/model-checkers.md)."
)


def add_options(p: argparse.ArgumentParser) -> None:
    """The command's arguments."""
    add_checker_options(p, "DRN", constants=False)


def run(args: argparse.Namespace) -> int:
    """Import FILE and write ``--out`` (see the command's ``--help``)."""
    return run_import(args, "drn", NAME)


__all__ = ["DESCRIPTION", "HELP", "NAME", "add_options", "run"]
