"""docs/which-learner.md is generated from the safe_learning benchmark's result file
(scripts/which_learner.py) and must not drift from it; the result file holds what the issue's
targets need (every online learner on every problem, the targets checked)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_which_learner_page_matches_the_benchmark_result() -> None:
    spec = importlib.util.spec_from_file_location("which_learner", ROOT / "scripts" / "which_learner.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (ROOT / "docs" / "which-learner.md").read_text() == module.render(), (
        "docs/which-learner.md is stale: run python scripts/which_learner.py"
    )
    data = json.loads((ROOT / "benchmarks" / "results" / "safe_learning.json").read_text())
    from cmdp_rl.learners import ONLINE_ALGORITHMS

    problems = data["params"]["problems"]
    assert {(r["problem"], r["algorithm"]) for r in data["rows"]} == {
        (p, a) for p in problems for a in ONLINE_ALGORITHMS
    }
    assert not data["meta"]["quick"] and not data["meta"]["src_modified"]
    assert sum(": safe-crl regret" in n for n in data["notes"]) == len(problems)
