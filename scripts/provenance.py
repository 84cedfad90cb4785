"""What a measuring script stores beside its times: the commit, whether the tree was clean, the
machine and its load average (imported by the scripts in this folder)."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def provenance() -> dict[str, Any]:
    """The machine, its load, the commit and whether the tree was clean, stored with the times."""
    git = ["git", "-C", str(ROOT)]
    commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True)
    return {
        "commit": commit,
        "clean_tree": not dirty.stdout.strip(),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "load_average_before": round(os.getloadavg()[0], 2),
    }
