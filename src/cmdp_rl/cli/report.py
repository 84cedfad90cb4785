"""``cmdp-rl report DIR``: one self-contained HTML page of a results folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from cmdp_rl.cli.exit_codes import EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
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


__all__ = ["cmd_report"]
