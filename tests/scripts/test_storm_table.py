"""scripts/storm_table.py: the 'Storm side by side' table of docs/model-checkers.md is the one the
script renders from benchmarks/results/storm.json, and a row renders as written by hand."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("storm_table", ROOT / "scripts" / "storm_table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["storm_table"] = module
    spec.loader.exec_module(module)
    return module


table = _script()


def test_the_page_shows_the_stored_results() -> None:
    text = (ROOT / "docs" / "model-checkers.md").read_text()
    block = text.split(table.START, 1)[1].split(table.END, 1)[0]
    results = json.loads((ROOT / "benchmarks" / "results" / "storm.json").read_text())
    assert block.strip() == table.render(results), "run: python scripts/storm_table.py"
    assert all(row["agree"] and row["binds"] for row in results["rows"])


def test_a_row_renders_as_written_by_hand() -> None:
    skipped = [{"file": "x.nm", "reason": "no reward", "measured": {'Pmax=? [F "a"]': 0.0}}]
    results = {
        "meta": {"git_commit": "0123456789abcdef", "cpus": 2, "load_average": 1.5},
        "params": {"reps": 3, "skipped": skipped},
        "rows": [
            {
                "name": "tiny", "states": 3, "choices": 4, "horizon": 5, "objective": "P:target",
                "costs": ["R (unnamed)"], "thresholds": [0.5], "value_ours": 0.5, "value_storm": 0.49999999995,
                "diff": 5e-11, "gap": 0.0, "ours_build": 0.0651, "storm_build": 0.0288, "ours_solve": 2.5e-4,
                "storm_solve": 1.5, "agree": True, "binds": True,
            }
        ],
    }  # fmt: skip
    lines = table.render(results).splitlines()
    assert "`0123456789`" in lines[0] and "median of up to 3 runs" in lines[0]
    row = "| tiny | 3 | 4 | 5 | `P(target)`; `R` <= 0.5 | 0.5 | 0.49999999995 | 5.0e-11 | 0.0e+00 | 65.1 ms "
    assert lines[4] == row + "| 28.8 ms | 250 us | 1.5 s |"
    assert "on 1 of 1 rows; the cost binds on 1 of them" in lines[6]
    assert lines[8] == "cmdp_rl's solve is faster than Storm's on 1 of 1 rows (6000 to 6000 times)."
    assert lines[-1] == '- `x.nm`: no reward (measured: `Pmax=? [F "a"]` = 0)'
