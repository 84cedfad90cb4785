"""Fixtures and the tally of the fault-injection suite (helpers: ``faultkit.py``).

Each test reports the cases it tried with the ``tally`` fixture; with
``CMDP_RL_FAULTS_REPORT=FILE`` the session writes, per class (a module's ``CLASS``), its module,
its tests with their outcomes and the cases tried to ``FILE`` (JSON), from which
``scripts/reliability_table.py`` writes the table of ``docs/reliability.md``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from faultkit import FULL

_TALLY: dict[str, dict[str, Any]] = {}
_OUTCOME: dict[str, str] = {}


def _entry(module: Any) -> dict[str, Any]:
    cls = getattr(module, "CLASS", module.__name__)
    return _TALLY.setdefault(cls, {"module": Path(module.__file__).name, "tests": {}, "cases": 0})


@pytest.fixture
def tally(request: pytest.FixtureRequest) -> Iterator[Callable[[int], None]]:
    """``tally(n)``: this test tried ``n`` more cases (counted for its module's class)."""
    entry = _entry(request.module)
    entry["tests"].setdefault(request.node.nodeid, "passed")

    def add(n: int) -> None:
        entry["cases"] += n

    yield add


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.outcome != "passed":
        _OUTCOME[report.nodeid] = report.outcome


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    out = os.environ.get("CMDP_RL_FAULTS_REPORT")
    if not out or not _TALLY:
        return
    for entry in _TALLY.values():
        for nodeid in entry["tests"]:
            entry["tests"][nodeid] = _OUTCOME.get(nodeid, "passed")
    Path(out).write_text(json.dumps({"full": FULL, "classes": _TALLY}, indent=1, sort_keys=True) + "\n")
