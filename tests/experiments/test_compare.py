"""``cmdp-rl learn --algo <baseline>`` and ``cmdp-rl compare``: keys, files, resume, same bytes."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from cmdp_rl import evaluate, make
from cmdp_rl.cli import main
from cmdp_rl.experiments.compare import CSV_COLUMNS, CompareConfig, arena_checkpoints, compare, load_compare_config
from cmdp_rl.learners import ONLINE_ALGORITHMS


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("algo", ONLINE_ALGORITHMS)
def test_learn_json_for_every_learner(algo: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "learn", "factored", "--algo", algo, "--episodes", "30", "--json")
    assert code == 0

    def strict(name: str) -> None:
        raise AssertionError(f"non-standard JSON constant {name}")

    d = json.loads(out, parse_constant=strict)  # strict JSON: no NaN or Infinity
    for key in ("value", "costs", "value_gap", "violation", "violating_episodes", "baseline_episodes"):
        assert key in d
    assert (
        d["algorithm"] == algo and "algo" not in d and d["episodes"] == 30 and d["samples"] == 30 * make("factored").H
    )
    assert 0 <= d["violating_episodes"] <= 30 and 0 <= d["baseline_episodes"] <= 30
    assert d["cum_violation"] >= 0.0 and d["cum_abs_value_gap"] >= abs(d["cum_value_gap"]) - 1e-9
    assert sum(d["statuses"].values()) == 30
    if algo in ("dope",):
        assert d["baseline_episodes"] == 30  # K0 = S^2 A H^3 / gamma^2 is far beyond 30 episodes here


def test_learn_json_totals_match_the_played_policies(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # with one episode, the totals are that episode's exact gap and violation
    code, out, _ = _run(capsys, "learn", "1a", "--algo", "optcmdp", "--episodes", "1", "--json")
    d = json.loads(out)
    assert code == 0
    assert d["cum_value_gap"] == pytest.approx(d["value_gap"], abs=1e-12)
    assert d["cum_violation"] == pytest.approx(d["violation"], abs=1e-12)
    assert d["violating_episodes"] == int(d["violation"] > 1e-9)


def test_learn_dope_k0_and_bonus_scale(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys, "learn", "factored", "--algo", "dope", "--episodes", "20", "--k0", "5", "--bonus-scale", "0", "--json"
    )
    d = json.loads(out)
    assert code == 0 and d["settings"]["k0"] == 5 and d["settings"]["bonus_scale"] == 0.0
    assert d["baseline_episodes"] >= 5


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["learn", "2", "--algo", "dope", "--episodes", "5"], "Slater gap"),
        (["learn", "2", "--algo", "optpess", "--episodes", "5"], "Slater gap"),
        (["learn", "1a", "--algo", "plugin", "--eps", "0.1"], "--eps"),
        (["learn", "1a", "--algo", "plugin", "--episodes", "5", "--radius", "empirical-bernstein"], "--radius"),
        (["learn", "1a", "--algo", "online-crl", "--episodes", "5", "--bonus-scale", "2"], "--bonus-scale"),
        (["learn", "1a", "--algo", "optcmdp", "--episodes", "5", "--k0", "2"], "--k0"),
        (["learn", "1a", "--algo", "plugin", "--episodes", "5", "--bonus-scale", "-1"], "bonus-scale"),
        (["learn", "1a", "--algo", "ucrl", "--episodes", "5"], "algo"),
        (["compare", "2", "--algos", "dope", "--out", "OUT"], "Slater gap"),
        (["compare", "1a", "--algos", "dope,nope", "--out", "OUT"], "algos"),
        (["compare", "--out", "OUT"], "problem"),
        (["compare", "nowhere", "--out", "OUT"], "problem"),
        (["compare", "1a", "--episodes", "0", "--out", "OUT"], "episodes"),
        (["compare", "1a", "--preset", "other", "--out", "OUT"], "preset"),
    ],
)
def test_bad_arguments_one_line_exit_2(
    argv: list[str], needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [str(tmp_path / "out") if a == "OUT" else a for a in argv]
    code, out, err = _run(capsys, *argv)
    assert code == 2 and needle in err and out == "" and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()  # nothing written


@pytest.mark.slow
def test_compare_writes_tidy_csv_figures_summary_and_resumes_same_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cmp"
    argv = ["compare", "factored", "--algos", "plugin,optcmdp,dope", "--episodes", "40", "--runs", "2"]
    argv += ["--out", str(out), "--jobs", "1", "--no-progress", "--checkpoints", "5"]
    code, printed, _ = _run(capsys, *argv)
    assert code == 0 and "6 computed" in printed
    first = (out / "results.csv").read_bytes()
    rows = list(csv.DictReader(first.decode().splitlines()))
    assert tuple(rows[0].keys()) == CSV_COLUMNS
    assert {r["algorithm"] for r in rows} == {"plugin", "optcmdp", "dope"}
    assert {r["problem"] for r in rows} == {"factored"} and {r["run"] for r in rows} == {"0", "1"}
    marks = arena_checkpoints(40, 5)
    assert [int(r["episodes"]) for r in rows if r["algorithm"] == "plugin" and r["run"] == "0"] == list(marks)
    for r in rows:  # cumulative columns are consistent with the per-episode ones
        assert float(r["cum_abs_value_gap"]) >= abs(float(r["cum_value_gap"])) - 1e-9
        assert int(r["violating_episodes"]) <= int(r["episodes"])
        assert int(r["samples"]) == int(r["episodes"]) * make("factored").H
    for f in ("fig_cum_value_gap.png", "fig_cum_violation.svg"):
        assert (out / "figures" / f).stat().st_size > 1000
    summary = (out / "summary.md").read_text()
    assert "DOPE" in summary and "ms / episode" in summary
    timings = (out / "timings.csv").read_text().splitlines()
    assert timings[0] == "algorithm,run,seconds,episode_ms,plan_ms,act_ms" and len(timings) == 7
    # resume: nothing recomputed, same bytes; deleting one run recomputes exactly it, same bytes
    code, printed, _ = _run(capsys, *argv)
    assert code == 0 and "0 computed, 6 reused" in printed
    assert (out / "results.csv").read_bytes() == first
    next((out / "runs").glob("*optcmdp__001.json")).unlink()
    code, printed, _ = _run(capsys, *argv)
    assert "1 computed, 5 reused" in printed and (out / "results.csv").read_bytes() == first
    # another configuration in the same folder is refused, nothing changed
    code, _, err = _run(capsys, *[a if a != "40" else "50" for a in argv])
    assert code == 2 and "another configuration (differing: episodes 40 -> 50)" in err
    assert load_compare_config(out / "config.toml").episodes == 40


@pytest.mark.slow
def test_compare_parallel_equals_serial_and_matches_the_learner(tmp_path: Path) -> None:
    cfg = CompareConfig("factored", algorithms=("optdual", "plugin"), episodes=30, runs=2, checkpoints=4, jobs=1)
    a = compare(cfg, tmp_path / "a", progress=False)
    b = compare(cfg.replace(jobs=2), tmp_path / "b", progress=False)
    assert a.results_csv.read_bytes() == b.results_csv.read_bytes()
    # the final row of a run is the learner's own record, recomputed independently here
    from cmdp_rl.learners import EpisodicEnv, Scorer, make_learner

    spec = cfg.run_specs()[0]
    m = make("factored")
    rec = make_learner("optdual", m, 0.1, episodes=30).fit(
        EpisodicEnv(m, np.random.default_rng(spec.seed_sequence)), Scorer.for_model(m)
    )
    last = [r for r in csv.DictReader(a.results_csv.read_text().splitlines()) if r["algorithm"] == "optdual"][
        len(arena_checkpoints(30, 4)) - 1
    ]
    assert float(last["cum_value_gap"]) == pytest.approx(rec.cum_value_gap[-1], rel=1e-9)
    assert int(last["violating_episodes"]) == rec.violating_episodes
    assert evaluate(m, rec.policy).value == pytest.approx(rec.value[-1])


def test_dope_preset_is_the_papers_setting() -> None:
    cfg = CompareConfig.preset("dope", jobs=1)
    m = make(cfg.problem)
    assert cfg.problem == "media-control" and cfg.delta == 0.01
    assert m.c_bar[0] == m.H / 2 and m.H == 10
    assert {"dope", "optpess", "optcmdp"} <= set(cfg.algorithms)
    assert arena_checkpoints(cfg.episodes, cfg.checkpoints)[-1] == cfg.episodes


def test_compare_on_ray_gives_the_same_bytes(tmp_path: Path) -> None:
    ray = pytest.importorskip("ray")
    cfg = CompareConfig("factored", algorithms=("plugin", "optpess"), episodes=20, runs=2, checkpoints=3, jobs=1)
    local = compare(cfg, tmp_path / "local", progress=False)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        on_ray = compare(cfg.replace(backend="ray", jobs=2), tmp_path / "ray", progress=False)
    finally:
        ray.shutdown()
    assert len(on_ray.sweep.computed) == 4
    assert on_ray.results_csv.read_bytes() == local.results_csv.read_bytes()
