"""Shared fixtures and independent reference implementations for the tests."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cmdp_rl import CMDP


def two_state_cmdp() -> CMDP:
    """The hand-solved two-state CMDP of ``planning/test_lp.py::test_hand_solved_randomized_optimum``."""
    P = np.zeros((2, 2, 2))
    P[0, 0, 0] = 1.0  # safe action: stay in state 0
    P[0, 1, 1] = 1.0  # risky action: move to state 1
    P[1, :, 1] = 1.0  # state 1 absorbing
    r = np.array([[0.0, 1.0], [0.5, 0.5]])
    c = np.array([[[0.0, 1.0], [0.0, 0.0]]])
    return CMDP(P, r, c, np.array([0.5]), s0=0, H=2, names="two_state")


#: the folders whose tests carry a marker of the same name (``make test-fast`` deselects them)
SUITES = ("e2e", "faults")
HERE = Path(__file__).resolve().parent


#: a file with a ``slow`` test is handed out as if it had this many more tests (``file_order``)
SLOW_FILE_WEIGHT = 20


def mixture_by_tables(model: CMDP, mix: Any) -> tuple[float, np.ndarray]:
    """``sum_k w_k (V, C (N,))`` of a mixture's columns, each evaluated by ``evaluate`` on its one-hot
    ``(H, S, A)`` table: a second path to a compact policy's exact value and costs (the library's
    mixture evaluation runs the columns through their own forward passes)."""
    from cmdp_rl import evaluate
    from cmdp_rl.certificates.safe import one_hot

    evs = [evaluate(model, one_hot(col.astype(np.intp), model.A)) for col in mix.columns]
    value = float(sum(w * e.value for w, e in zip(mix.weights, evs, strict=True)))
    return value, sum(w * e.costs for w, e in zip(mix.weights, evs, strict=True))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the end-to-end and fault suites' tests ``e2e`` and ``faults``, from their folder; then
    order the files for ``make test`` (``file_order``)."""
    for item in items:
        try:
            folder = item.path.resolve().relative_to(HERE).parts[0]
        except ValueError:
            continue
        if folder in SUITES:
            item.add_marker(getattr(pytest.mark, folder))
    file_order(items)


def file_order(items: list[pytest.Item]) -> None:
    """Sort ``items`` (in place) file by file, each file's tests kept in their order: the files with
    the most tests first, a file with a ``slow`` test counted ``SLOW_FILE_WEIGHT`` tests more.

    ``make test`` hands out whole files in this order (``--dist loadfile --no-loadscope-reorder``).
    pytest-xdist's own order (most tests first) put the long one-test files (the 2 GiB runs in
    tests/e2e) last, queued on one worker while the other had nothing left: measured 35 s of one
    idle core at the end of a cold run. Counted 20 tests more, they start about 60% of the way
    through (replaying that run's test times): late enough that numba's on-disk cache holds the
    kernels their child processes use (started first, each child would compile them again), early
    enough that the run ends with files of a few short tests.
    """
    weight: dict[Path, int] = {}
    slow: set[Path] = set()
    for item in items:
        weight[item.path] = weight.get(item.path, 0) + 1
        if item.get_closest_marker("slow"):
            slow.add(item.path)
    items.sort(key=lambda item: -(weight[item.path] + SLOW_FILE_WEIGHT * (item.path in slow)))  # stable


@pytest.fixture
def two_state() -> CMDP:
    return two_state_cmdp()


def dense_reference_lp(model: CMDP, objective: np.ndarray | None = None, with_costs: bool = True) -> tuple[int, float]:
    """An independent occupation-measure LP, built entry by entry and solved by
    interior point (``highs-ipm``): returns ``(scipy status, optimal value)``.

    ``objective`` (S, A) defaults to the reward; the value is the maximum.
    """
    from scipy.optimize import linprog

    H, S, A, N = model.H, model.S, model.A, model.N
    rew = model.r if objective is None else objective

    def var(h: int, s: int, a: int) -> int:
        return (h * S + s) * A + a

    n = H * S * A
    A_eq = np.zeros((H * S, n))
    b_eq = np.zeros(H * S)
    for h in range(H):
        for s in range(S):
            row = h * S + s
            for a in range(A):
                A_eq[row, var(h, s, a)] += 1.0
            if h == 0:
                b_eq[row] = 1.0 if s == model.s0 else 0.0
            else:
                for x in range(S):
                    for b in range(A):
                        A_eq[row, var(h - 1, x, b)] -= model.P[x, b, s]
    cobj = np.zeros(n)
    A_ub = np.zeros((N, n))
    for h in range(H):
        for s in range(S):
            for a in range(A):
                cobj[var(h, s, a)] = -rew[s, a]
                for i in range(N):
                    A_ub[i, var(h, s, a)] = model.c[i, s, a]
    kw = dict(A_ub=A_ub, b_ub=model.c_bar) if (N and with_costs) else {}
    res = linprog(cobj, A_eq=A_eq, b_eq=b_eq, bounds=(0, None), method="highs-ipm", **kw)
    return res.status, (-res.fun if res.status == 0 else float("nan"))


# -- the fault-injection suite's tally (tests/faults; helpers in tests/faults/faultkit.py) ------
# Each fault test reports the cases it tried with ``tally(n)``; with CMDP_RL_FAULTS_REPORT=FILE the
# session writes, per class (a module's CLASS), its module, its tests with their outcomes and the
# cases tried to FILE (JSON), from which scripts/reliability_table.py writes docs/reliability.md's
# table. Under pytest-xdist each worker sends its part of the tally to the controller when it
# ends (``workeroutput``), and the controller merges them and writes FILE. (Here and not in
# tests/faults/conftest.py: two modules named conftest would shadow each other for the tests that
# import this one's reference implementations.)

FAULTS_FULL = os.environ.get("CMDP_RL_FAULTS", "") == "full"

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
    # under pytest-xdist the controller sees every worker's reports, so it records every outcome
    if report.outcome != "passed":
        _OUTCOME[report.nodeid] = report.outcome


def _merge(into: dict[str, dict[str, Any]], part: dict[str, dict[str, Any]]) -> None:
    """Add one worker's tally ``part`` to ``into`` (a class's tests and cases, summed)."""
    for cls, entry in part.items():
        mine = into.setdefault(cls, {"module": entry["module"], "tests": {}, "cases": 0})
        mine["tests"].update(entry["tests"])
        mine["cases"] += entry["cases"]


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: unknown (and unused) without it
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist's controller: a worker finished; add its part of the tally (sent in ``workeroutput``)."""
    part = getattr(node, "workeroutput", {}).get("cmdp_rl_faults_tally")
    if part:
        _merge(_TALLY, json.loads(part))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: hand its part to the controller, which writes the file
        workeroutput["cmdp_rl_faults_tally"] = json.dumps(_TALLY)
        return
    out = os.environ.get("CMDP_RL_FAULTS_REPORT")
    if not out or not _TALLY:
        return
    for entry in _TALLY.values():
        for nodeid in entry["tests"]:
            entry["tests"][nodeid] = _OUTCOME.get(nodeid, "passed")
    Path(out).write_text(json.dumps({"full": FAULTS_FULL, "classes": _TALLY}, indent=1, sort_keys=True) + "\n")
