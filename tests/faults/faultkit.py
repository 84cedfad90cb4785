"""Helpers of the fault-injection suite: one module per defect class of the hardening issue.

Every module sets ``CLASS`` (the class's number and name, as the docs' reliability page shows
it) and drives the real ``cmdp-rl`` in subprocesses (``cli``) or the public API. The number of
cases each test tries comes from ``cases``: a sample under ``make test``, the whole with
``CMDP_RL_FAULTS=full`` (``make faults``). Each test reports the cases it tried with the
``tally`` fixture (in ``tests/conftest.py``); with ``CMDP_RL_FAULTS_REPORT=FILE`` the session writes, per class, the
tests, the cases tried and the outcome to ``FILE`` (JSON), from which
``scripts/reliability_table.py`` writes the table of ``docs/reliability.md``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

#: ``full`` runs every case (``make faults``); anything else a sample (``make test``)
FULL = os.environ.get("CMDP_RL_FAULTS", "") == "full"

#: the documented exit codes
EXIT_OK, EXIT_INFEASIBLE, EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_UNCERTIFIED = 0, 1, 2, 3, 4
EXIT_SIGINT, EXIT_SIGTERM, EXIT_BROKEN_PIPE = 130, 143, 141


def cases(sample: int, full: int) -> int:
    """How many cases a test tries: ``sample`` under ``make test``, ``full`` with ``CMDP_RL_FAULTS=full``."""
    return full if FULL else sample


def cli(
    *argv: str,
    cwd: Path | str | None = None,
    timeout: float = 300,
    env: dict[str, str] | None = None,
    preexec_fn: Callable[[], Any] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``cmdp-rl ARGV`` in a fresh interpreter; its exit code, stdout and stderr."""
    return subprocess.run(
        [sys.executable, "-m", "cmdp_rl", *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        env={**os.environ, "MPLBACKEND": "Agg", **(env or {})},
        preexec_fn=preexec_fn,
    )


def _default_sigint() -> None:
    """In the child: SIGINT as a terminal delivers it. A command started in the background of a
    non-interactive shell inherits SIGINT ignored, and the CLI keeps it ignored (as ``nohup``
    asks), so a test run from such a shell would see every SIGINT case time out."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def popen(*argv: str, cwd: Path | str | None = None, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """Start ``cmdp-rl ARGV`` (to signal it while it runs); stdout and stderr are pipes, SIGINT
    has its default disposition whatever this process inherited."""
    return subprocess.Popen(
        [sys.executable, "-m", "cmdp_rl", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env={**os.environ, "MPLBACKEND": "Agg", **(env or {})},
        preexec_fn=_default_sigint,
    )


def assert_one_line_refusal(proc: subprocess.CompletedProcess[str], code: int = EXIT_BAD_INPUT) -> str:
    """The documented refusal: exit ``code``, exactly one line on stderr, no traceback; returns the line."""
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == code, (proc.returncode, proc.stderr[-2000:])
    assert len(lines) == 1, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    return lines[0]


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes (to check that a refusal wrote nothing)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_BROKEN_PIPE",
    "EXIT_INFEASIBLE",
    "EXIT_INTERNAL",
    "EXIT_OK",
    "EXIT_SIGINT",
    "EXIT_SIGTERM",
    "EXIT_UNCERTIFIED",
    "FULL",
    "ROOT",
    "assert_one_line_refusal",
    "cases",
    "cli",
    "popen",
    "tree",
]
