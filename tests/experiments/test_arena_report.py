"""The metrics that allow no cancellation (issue 35, item 3): ``strong_violation`` and
``first_departure`` in the records, in ``compare``'s ``results.csv``, its summary and figures; a
results folder written before them is another configuration."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from cmdp_rl.cli import main
from cmdp_rl.envs.registry import make
from cmdp_rl.experiments.arena_report import departure_cell
from cmdp_rl.learners import EpisodicEnv, Scorer, make_learner
from cmdp_rl.learners.base import VIOLATION_TOL, LearnerRecord


def _record(costs: np.ndarray, c_bar: np.ndarray, baseline: np.ndarray, settings: dict) -> LearnerRecord:
    K = costs.shape[0]
    z = np.zeros(K)
    return LearnerRecord(
        algorithm="x",
        value_gap=z,
        violation=np.maximum(np.max(costs - c_bar, axis=1), 0.0),
        value=z,
        costs=costs,
        baseline=baseline,
        episode_status=np.array(["optimistic"] * K),
        planned_value=z,
        iterations=np.zeros(K, dtype=np.int64),
        min_visits=np.zeros(K, dtype=np.int64),
        plan_seconds=z,
        act_seconds=z,
        score_seconds=z,
        counts=__import__("scipy.sparse").sparse.csr_array((2, 1)),
        policy=np.zeros((1, 1, 1)),
        H=1,
        settings=settings,
        c_bar=c_bar,
    )


def test_strong_violation_sums_every_excess_and_first_departure_counts_from_one() -> None:
    c_bar = np.array([1.0, 2.0])
    # episode 1: both constraints over (0.5 and 0.25); episode 2: one over by 1e-12 (within the
    # tolerance: 0), the other under (its slack cancels nothing); episode 3: 0.1 over in the second
    costs = np.array([[1.5, 2.25], [1.0 + 1e-12, 0.0], [0.0, 2.1]])
    rec = _record(costs, c_bar, np.array([True, False, True]), {"baseline_costs": [0.1, 0.1]})
    np.testing.assert_allclose(rec.strong_violation, [0.75, 0.75, 0.85], rtol=1e-12)
    np.testing.assert_allclose(rec.cum_violation, [0.5, 0.5 + 1e-12, 0.6 + 1e-12], rtol=1e-9)
    assert 1e-12 < VIOLATION_TOL
    assert rec.first_departure == 2
    assert _record(costs, c_bar, np.ones(3, dtype=bool), {"baseline_costs": [0.1]}).first_departure is None
    assert _record(costs, c_bar, np.zeros(3, dtype=bool), {}).first_departure is None  # no baseline


def test_dope_departs_after_its_baseline_phase() -> None:
    m = make("factored")
    rec = make_learner("dope", m, 0.1, episodes=12, k0=5, bonus_scale=0.0).fit(
        EpisodicEnv(m, np.random.default_rng(0)), Scorer.for_model(m)
    )
    assert rec.first_departure == 6 and rec.baseline[:5].all()
    online = make_learner("plugin", m, 0.1, episodes=3).fit(EpisodicEnv(m, np.random.default_rng(0)))
    assert online.first_departure is None


def test_departure_cell() -> None:
    assert departure_cell("dope", [3, 1, 2]) == "2 [1, 3]"
    assert departure_cell("optpess", [None, None]) == "– [–, –]"
    assert departure_cell("safe-crl", [1, None, None]) == "– [1, –]"
    assert departure_cell("safe-crl", [1_500]) == "1,500"
    assert departure_cell("plugin", [None]) == ""


def test_compare_writes_the_new_columns_and_refuses_an_older_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cmp"
    argv = ["compare", "factored", "--algos", "plugin,dope,safe-crl", "--episodes", "12", "--runs", "1"]
    argv += ["--jobs", "1"]
    argv += ["--out", str(out), "--no-progress", "--checkpoints", "12"]
    assert main(argv) == 0
    rows = list(csv.DictReader((out / "results.csv").read_text().splitlines()))
    # DOPE is in its baseline phase (K0 = 675 on factored) at every checkpoint; safe-crl departs at once
    assert all(r["first_departure"] == "" for r in rows if r["algorithm"] == "dope")
    assert all(r["first_departure"] == "1" for r in rows if r["algorithm"] == "safe-crl")
    for r in rows:
        assert float(r["strong_violation"]) >= float(r["cum_violation"]) - 1e-9
    assert all(r["first_departure"] == "" for r in rows if r["algorithm"] == "plugin")
    assert "strong violation" in (out / "summary.md").read_text()
    assert (out / "figures" / "fig_strong_violation.png").stat().st_size > 1000
    # a folder of the format before these columns (no results_format in its config.toml)
    config = out / "config.toml"
    config.write_text("\n".join(line for line in config.read_text().splitlines() if "results_format" not in line))
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "another configuration (differing: results_format unset -> 2)" in err
