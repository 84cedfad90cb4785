"""The experiment runner: determinism, resume, backends, aggregation, figures, CLI, config files."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

import pytest

from cmdp_rl.cli import main
from cmdp_rl.experiments import (
    CONFIG_KEYS,
    ExperimentConfig,
    SweepReport,
    load_all,
    load_config,
    results_csv,
    run_specs,
    run_sweep,
)
from cmdp_rl.experiments.plots import write_figures
from cmdp_rl.experiments.store import run_path
from cmdp_rl.plumbing.validation import CMDPInputError

TINY_TOML = """\
preset = "quick"
runs = 2
gmbl_n_min = 5
gmbl_points = 3
gmbl_n_max = 200
episodes = 40
checkpoints = 5
eps = [0.1, 0.5]
jobs = 1
"""


def tiny(**kw: object) -> ExperimentConfig:
    """A sweep of a few seconds: 2 runs, 3 GMBL budgets, 40 Online-CRL episodes."""
    base: dict[str, object] = dict(
        runs=2,
        gmbl_n_min=5,
        gmbl_points=3,
        gmbl_n_max=200,
        episodes=40,
        checkpoints=5,
        eps=(0.1, 0.5),
        jobs=1,
    )
    base.update(kw)
    return ExperimentConfig.quick(**base)


def sweep_csv(cfg: ExperimentConfig, runs_dir: Path) -> tuple[str, SweepReport]:
    report = run_sweep(cfg, runs_dir, progress=False)
    return results_csv(cfg, load_all(runs_dir, run_specs(cfg))), report


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[ExperimentConfig, str]:
    """The tiny sweep run inline (jobs=1) once: the CSV every other backend must match."""
    cfg = tiny(scenarios=("1a", "2"))
    text, _ = sweep_csv(cfg, tmp_path_factory.mktemp("ref") / "runs")
    return cfg, text


@pytest.mark.slow
def test_jobs_do_not_change_results(reference, tmp_path) -> None:
    cfg, text = reference
    text2, report = sweep_csv(cfg.replace(jobs=2), tmp_path / "runs")
    assert len(report.computed) == report.total == 2 * 2 * 2
    assert text2 == text  # byte-identical


def test_run_depends_only_on_its_identity(reference, tmp_path) -> None:
    """A sub-sweep (one scenario, one algorithm, fewer runs) reproduces the same rows."""
    cfg, text = reference
    sub = cfg.replace(scenarios=("2",), algorithms=("online-crl",), runs=1)
    sub_text, _ = sweep_csv(sub, tmp_path / "runs")
    rows = [r for r in text.splitlines()[1:] if r.startswith("2,online-crl,0,")]
    assert sub_text.splitlines()[1:] == rows and rows


def test_different_seed_changes_results(reference, tmp_path) -> None:
    cfg, text = reference
    other, _ = sweep_csv(cfg.replace(seed=1, scenarios=("1a",), algorithms=("online-crl",)), tmp_path / "runs")
    mine = [r for r in text.splitlines()[1:] if r.startswith("1a,online-crl,")]
    assert other.splitlines()[1:] != mine


def test_resume_recomputes_only_missing_runs(reference, tmp_path) -> None:
    cfg, text = reference
    runs_dir = tmp_path / "runs"
    sweep_csv(cfg, runs_dir)
    specs = run_specs(cfg)
    deleted, corrupt = specs[1], specs[-2]
    run_path(runs_dir, deleted).unlink()
    p = run_path(runs_dir, corrupt)
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])  # a partial write
    (runs_dir / ".tmp-leftover.part").write_text("{")  # an interrupted temp file
    untouched = {s.run_id: run_path(runs_dir, s).stat().st_mtime_ns for s in specs if s not in (deleted, corrupt)}
    text2, report = sweep_csv(cfg, runs_dir)
    assert text2 == text
    assert sorted(report.computed) == sorted([deleted.run_id, corrupt.run_id])
    assert report.removed == (p,)
    assert len(report.reused) == len(specs) - 2
    assert {
        s: run_path(runs_dir, next(x for x in specs if x.run_id == s)).stat().st_mtime_ns for s in untouched
    } == untouched
    assert not list(runs_dir.glob(".tmp-*"))
    # a third call has nothing left to do
    _, report3 = sweep_csv(cfg, runs_dir)
    assert report3.computed == () and len(report3.reused) == len(specs)


def test_runs_of_another_configuration_are_not_overwritten(reference, tmp_path) -> None:
    cfg, _ = reference
    small = cfg.replace(scenarios=("2",), algorithms=("online-crl",), runs=1)
    run_sweep(small, tmp_path / "runs", progress=False)
    with pytest.raises(CMDPInputError, match=r"different configuration.*episodes"):
        run_sweep(small.replace(episodes=41), tmp_path / "runs", progress=False)


@pytest.mark.slow
def test_reproduce_cli_writes_table_summary_and_figures(tmp_path, capsys) -> None:
    conf = tmp_path / "tiny.toml"
    conf.write_text(TINY_TOML)
    out = tmp_path / "out"
    code = main(["reproduce", "--config", str(conf), "--out", str(out), "--no-progress"])
    printed = capsys.readouterr().out
    assert code == 0
    assert str(out / "results.csv") in printed and "| scenario | algorithm |" in printed
    cfg = load_config(out / "config.toml")
    assert cfg == load_config(conf)  # config round-trips

    rows = list(csv.DictReader(io.StringIO((out / "results.csv").read_text())))
    header = (out / "results.csv").read_text().splitlines()[0].split(",")
    assert header[:6] == ["scenario", "algorithm", "run", "samples", "episodes", "n_per_pair"]
    for col in (
        "value_gap",
        "violation",
        "cum_value_gap",
        "cum_violation",
        "infeasible_episodes",
        "bad_eps_0.1",
        "bad_eps_0.5",
    ):
        assert col in header
    expected = sum(cfg.runs * (len(cfg.gmbl_budgets(s)) + len(cfg.crl_checkpoints(s))) for s in cfg.scenarios)
    assert len(rows) == expected
    for sc in ("1a", "1b", "2"):
        gm = [r for r in rows if r["scenario"] == sc and r["algorithm"] == "gmbl"]
        crl = [r for r in rows if r["scenario"] == sc and r["algorithm"] == "online-crl"]
        assert len(gm) == 2 * 3 and len(crl) == 2 * len(cfg.crl_checkpoints(sc))
        assert all(r["episodes"] == "" and r["cum_violation"] == "" for r in gm)
        assert all(r["n_per_pair"] == "" for r in crl)
        last = [r for r in crl if r["episodes"] == "40"]
        assert len(last) == 2 and all(int(r["samples"]) == 40 * (15 if sc == "1b" else 10) for r in last)
        assert all(int(r["bad_eps_0.1"]) >= int(r["bad_eps_0.5"]) for r in crl)

    summary = (out / "summary.md").read_text()
    assert "95%" in summary and "Student-t" in summary
    assert summary.count("| Optimistic-GMBL |") == 3 and summary.count("| Online-CRL |") == 3
    assert "eps-bad episodes (eps=0.1)" in summary
    stems = [f"fig_{k}_{s}" for k in ("value", "violation") for s in ("1a", "1b", "2")]
    for stem in [*stems, "fig_cumulative_violation"]:
        for ext in ("png", "svg"):
            f = out / "figures" / f"{stem}.{ext}"
            assert f.is_file() and f.stat().st_size > 1000, f
    assert (out / "figures" / "fig_value_1a.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(list((out / "runs").glob("*.json"))) == 3 * 2 * 2

    # rerunning resumes: nothing is recomputed
    assert main(["reproduce", "--config", str(conf), "--out", str(out), "--no-progress"]) == 0
    assert "0 computed, 12 reused" in capsys.readouterr().out


@pytest.mark.parametrize(
    "text, culprit",
    [
        ("runz = 3\n", "'runz'"),
        ("runs = 0\n", "runs"),
        ("runs = 'many'\n", "runs"),
        ("delta = 1.5\n", "delta"),
        ("scenarios = ['1a', '9z']\n", "scenarios"),
        ("algorithms = ['dqn']\n", "algorithms"),
        ("backend = 'spark'\n", "backend"),
        ("[episodes]\n3c = 100\n", "episodes"),
        ("[episodes]\n1a = -5\n", "episodes['1a']"),
        ("gmbl_n_max = 2\ngmbl_n_min = 10\n", "gmbl_n_max"),
        ("eps = [0.1, 2.0]\n", "eps"),
        ("preset = 'huge'\n", "preset"),
        ("address = 'ray://x:1'\n", "address"),
        ("runs = [\n", "not valid TOML"),
    ],
)
def test_config_file_errors_name_the_key(tmp_path, text, culprit) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(CMDPInputError) as ex:
        load_config(f)
    assert culprit in str(ex.value) and str(f) in str(ex.value)


def test_cli_bad_config_is_one_line_exit_2(tmp_path, capsys) -> None:
    f = tmp_path / "bad.toml"
    f.write_text("runs = 3\nfrobnicate = true\n")
    assert main(["reproduce", "--config", str(f), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "'frobnicate'" in err
    assert main(["reproduce", "--config", str(tmp_path / "missing.toml")]) == 2
    assert "missing.toml: no such file" in capsys.readouterr().err  # the one input-file rule (cmdp_rl.plumbing.paths)
    assert main(["reproduce", "--quick", "--runs", "0", "--out", str(tmp_path / "o")]) == 2
    assert "runs" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_config_defaults_presets_and_round_trip(tmp_path) -> None:
    full = ExperimentConfig()
    assert full.runs == 25 and full.delta == 0.1 and full.scenarios == ("1a", "1b", "2")
    assert full.algorithms == ("gmbl", "online-crl") and full.backend == "local"
    assert full.jobs == (os.cpu_count() or 1)
    assert full.gmbl_budgets("1a")[0] == 10 and full.gmbl_budgets("1a")[-1] == full.gmbl_n_max["1a"]
    assert full.crl_checkpoints("1b")[-1] == full.episodes["1b"]
    q = ExperimentConfig.quick(runs=2, episodes={"1a": 50})
    assert q.runs == 2 and q.episodes["1a"] == 50 and q.episodes["2"] > 0
    for cfg in (full, q, tiny(address="ray://h:1", backend="ray")):
        for name in ("c.toml", "c.json"):
            assert load_config(cfg.save(tmp_path / name)) == cfg
    assert set(CONFIG_KEYS) == set(full.to_dict()) | {"address"}


def test_ray_backend_matches_local(reference, tmp_path) -> None:
    ray = pytest.importorskip("ray")
    cfg, text = reference
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        text_ray, report = sweep_csv(cfg.replace(backend="ray", jobs=2), tmp_path / "runs")
    finally:
        ray.shutdown()
    assert len(report.computed) == report.total
    assert text_ray == text


@pytest.mark.slow
def test_figures_drawn_in_parallel_are_the_same_bytes(tmp_path) -> None:
    cfg = tiny(scenarios=("1a", "2"))
    runs_dir = tmp_path / "runs"
    run_sweep(cfg, runs_dir, progress=False)
    records = load_all(runs_dir, run_specs(cfg))
    serial = write_figures(cfg, records, tmp_path / "serial", jobs=1)
    parallel = write_figures(cfg, records, tmp_path / "parallel", jobs=2)
    assert [p.name for p in serial] == [p.name for p in parallel]
    assert len(serial) == 2 * (3 * 2 + 1)  # value, violation, certificate per scenario + cumulative
    for a, b in zip(serial, parallel, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name
