"""The ``storm`` benchmark's row (benchmarks/storm.py): Storm's multi-objective query and cmdp_rl's
solve agree, and the binding checks hold, on a model solved by hand and on a small Garnet."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("stormpy")
pytest.importorskip("pytest_benchmark")  # benchmarks.common's timer (the bench extra)
pytest.importorskip("tabulate")

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.storm import CASES, SKIPPED, Case, example_folder, multi_query, run_case, storm_term  # noqa: E402


def test_queries_are_storms_syntax() -> None:
    query = multi_query("P:finished", ["P:finished&all_coins_equal_0"], 50, [0.27])
    assert query == 'multi(Pmax=? [F<=50 "finished"], P<=0.27 [F<=50 "finished" & "all_coins_equal_0"])'
    assert storm_term("", 5, "<=0.5") == "R<=0.5 [C<=5]"
    assert storm_term("time", 90, "min=?") == 'R{"time"}min=? [C<=90]'


def test_every_shipped_mdp_is_a_row_or_skipped_with_a_reason() -> None:
    shipped = {p.name for p in example_folder().glob("*.nm")}
    rows = {c.file for c in CASES if c.file}
    assert rows.isdisjoint(SKIPPED)
    assert shipped <= rows | set(SKIPPED), sorted(shipped - rows - set(SKIPPED))


def test_tiny_rewards_row_agrees_with_the_hand_solution() -> None:
    """tiny_rewards.nm: s=0 may stay or move to s=1 (reward 1), which leads to 'target' (s=2). The
    target is entered within H = 5 steps exactly when s=1 is visited at a step below 5, at most
    once, so P(target) equals the expected reward: the optimum under reward <= 0.5 is 0.5, the
    unconstrained one 1 (move at once), the reward's range over schedulers [0, 1]."""
    case = next(c for c in CASES if c.file == "tiny_rewards.nm")
    row = run_case(case, reps=1)
    assert (row["states"], row["horizon"], row["thresholds"]) == (3, 5, [0.5])
    assert row["value_ours"] == pytest.approx(0.5, abs=1e-12)
    assert row["value_storm"] == pytest.approx(0.5, abs=1e-9)
    assert row["cost_min"] == pytest.approx([0.0]) and row["cost_max"] == pytest.approx([1.0])
    assert row["value_free"] == pytest.approx(1.0)
    assert row["agree"] and row["binds"] and row["diff"] <= 1e-8 + row["gap"]
    for key in ("ours_build", "storm_build", "ours_solve", "storm_solve"):
        assert row[key] > 0


def test_garnet_row_agrees_with_storm() -> None:
    case = Case("garnet", "reward", ("cost_0", "cost_1"), 4, (), "", problem="garnet:S=6,A=2,b=2,N=2,f=0.5,H=4,seed=3")
    row = run_case(case, reps=1)
    assert row["states"] == 6 and row["choices"] == 12 and len(row["thresholds"]) == 2
    assert row["status"] == "optimal"
    assert abs(row["value_ours"] - row["value_storm"]) <= 1e-8 + row["gap"] and row["agree"]
    assert all(c <= t + 1e-7 for c, t in zip(row["costs_ours"], row["thresholds"], strict=True))
    assert row["value_storm"] <= row["value_free"] + 1e-9
