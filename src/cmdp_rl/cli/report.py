"""``cmdp-rl report DIR``: one self-contained HTML page of a results folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from cmdp_rl.cli.exit_codes import EXIT_OK
from cmdp_rl.cli.options import add_force

NAME = "report"
HELP = "one self-contained HTML page of a results folder (compare, reproduce, study, pg)"
DESCRIPTION = (
    "Write DIR/report.html: the folder's summary and tables, every figure embedded, the first "
    "rows of its results.csv and its configuration, in one file that needs no server or network. DIR is the "
    "--out folder of compare, reproduce, study or pg; an existing report is only replaced with --force."
)


def add_options(p: argparse.ArgumentParser) -> None:
    """``report``'s arguments."""
    p.add_argument("dir", metavar="DIR", help="a results folder (the --out of compare, reproduce, study or pg)")
    add_force(p, "replace an existing DIR/report.html")


def run(args: argparse.Namespace) -> int:
    """Write ``DIR/report.html`` ([`cmdp_rl.experiments.report`][cmdp_rl.experiments.report]); refuse, writing
    nothing, a folder that is
    not a results folder or a report that exists without ``--force``."""
    from cmdp_rl.experiments.report import render_report, write_report
    from cmdp_rl.plumbing.paths import check_output_path

    folder = Path(args.dir)
    target = folder / "report.html"
    render_report(folder)  # every check, before anything is written
    check_output_path(target, "DIR", args.force)  # a regular file, replaced only with --force
    path = write_report(folder)
    print(f"wrote     {path}  ({path.stat().st_size / 2**10:,.0f} KiB, figures embedded)")
    return EXIT_OK


__all__ = ["DESCRIPTION", "HELP", "NAME", "add_options", "run"]
