"""Round 3, class 12: dependencies.

The audit step of ``.ci/run`` (``scripts/audit_dependencies.py``) fails on a declared lower bound
that admits a known advisory not in ``.ci/audit-ignore.toml`` (the issue's ``pyarrow>=14`` and
``tqdm>=4.65`` among them), passes on this repository's bounds, and does not fail merely because
the advisory service is unreachable: it says so loudly and checks the recorded table.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from faultkit import ROOT, cases

CLASS = "Round 3: 12. Dependency lower bounds and advisories"

SCRIPT = ROOT / "scripts" / "audit_dependencies.py"

#: (a requirement as it was or could be declared, an advisory it admits)
ADMITTED = [
    ("pyarrow>=14", "CVE-2023-47248"),
    ("tqdm>=4.65", "CVE-2024-34062"),
    ("ray[client]>=2.9", "CVE-2025-62593"),
    ("pytest>=7.4", "CVE-2025-71176"),
    ("setuptools>=68", "CVE-2025-47273"),
    ("wheel>=0.40", "CVE-2026-24049"),
    ("numpy>=1.9", "CVE-2021-33430"),
    ("scipy>=1.9", "CVE-2023-25399"),
    ("pandas>=1.0", "CVE-2020-13091"),
    ("mkdocs==1.2.2", "CVE-2021-40978"),
]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=900)


@pytest.mark.parametrize("index", range(cases(2, len(ADMITTED))))
def test_a_bound_admitting_an_advisory_fails_the_step(index: int, tmp_path: Path, tally: Callable[[int], None]) -> None:
    requirement, cve = ADMITTED[index]
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(f'[project]\nname = "x"\ndependencies = ["{requirement}"]\n')
    proc = _run("--pyproject", str(pyproject), "--no-pip-audit")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert cve in proc.stderr and requirement in proc.stderr
    tally(1)


def test_this_repository_passes_and_says_when_the_service_is_unreachable(tally: Callable[[int], None]) -> None:
    """The step as .ci/run runs it. Where pip-audit cannot audit (no service, or it skips
    packages), a banner says so and the recorded table decides: exit 0 on these bounds."""
    proc = _run()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no declared lower bound admits a known advisory" in proc.stdout
    if "pip-audit audited" not in proc.stdout or "WARNING" in proc.stderr:
        assert "recorded table" in proc.stderr and "!!!!" in proc.stderr, proc.stderr
    tally(1)
