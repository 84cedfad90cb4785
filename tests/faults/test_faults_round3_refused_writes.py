"""Round 3, class 4: a refused run writes nothing.

Every refusal of a command that writes a results folder (``compare``, ``reproduce``, ``study``)
comes before the folder is claimed, the backend's included: ``--backend ray`` (or ``--address``)
without Ray installed is exit 2, one line naming ``backend``, and leaves no ``OUT/config.toml``,
no ``OUT/runs/``, no ``models/*.npz``; a later valid run into the same folder is accepted. Ray's
absence is simulated, whether or not it is installed: a folder on ``PYTHONPATH`` holds a ``ray``
package whose import fails, as a missing one does. The library's ``compare``, ``reproduce``,
``run_study`` and ``run_sweep`` refuse before writing too, and a folder refused under its lock
(a check of its contents) is removed again when the run made it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from faultkit import EXIT_OK, assert_one_line_refusal, cases, cli, tree

CLASS = "Round 3: 4. Refused runs write nothing"

TINY_TOML = 'scenarios = ["1a"]\nalgorithms = ["online-crl"]\nruns = 1\nepisodes = 3\ncheckpoints = 2\neps = [0.1]\n'

#: commands that need Ray, each refused without it
RAY_RUNS: list[list[str]] = [
    ["compare", "1a", "--algos", "plugin", "--episodes", "2", "--runs", "1", "--backend", "ray", "--out", "OUT"],
    ["study", "n-constraints", "--quick", "--backend", "ray", "--out", "OUT"],
    ["reproduce", "--config", "tiny.toml", "--backend", "ray", "--out", "OUT"],
    ["compare", "1a", "--quick", "--address", "ray://127.0.0.1:1", "--out", "OUT"],
    ["reproduce", "--quick", "--address", "ray://127.0.0.1:1", "--out", "OUT"],
    ["study", "n-constraints", "--quick", "--runs", "1", "--jobs", "2", "--backend", "ray", "--out", "OUT"],
]


def _hide_ray(folder: Path) -> dict[str, str]:
    """An environment whose ``import ray`` fails (a ``ray`` package that raises ImportError, first
    on ``PYTHONPATH``), as on a machine without Ray. The interpreter writes no bytecode of the shim
    (its ``__pycache__`` would be a file in the folder whose tree must stay as it was)."""
    shim = folder / "no-ray"
    (shim / "ray").mkdir(parents=True, exist_ok=True)
    (shim / "ray" / "__init__.py").write_text("raise ImportError(\"No module named 'ray' (hidden by the test)\")\n")
    return {"PYTHONPATH": str(shim), "PYTHONDONTWRITEBYTECODE": "1"}


@pytest.mark.parametrize("index", range(cases(1, len(RAY_RUNS))))
def test_a_missing_ray_is_refused_before_the_folder_is_claimed(
    index: int, tmp_path: Path, tally: Callable[[int], None]
) -> None:
    argv = RAY_RUNS[index]
    (tmp_path / "tiny.toml").write_text(TINY_TOML)
    env = _hide_ray(tmp_path)
    before = tree(tmp_path)
    proc = cli(*argv, cwd=tmp_path, env=env, timeout=240)
    line = assert_one_line_refusal(proc)
    assert line.startswith(f"cmdp-rl {argv[0]}: error: backend:") and "ray" in line, line
    assert not (tmp_path / "OUT").exists(), sorted(p.name for p in (tmp_path / "OUT").rglob("*"))
    assert tree(tmp_path) == before
    tally(1)


@pytest.mark.parametrize("index", range(cases(0, 1)))  # a whole compare run: make faults only
def test_a_valid_run_after_the_refusal_is_accepted(index: int, tmp_path: Path, tally: Callable[[int], None]) -> None:
    """The refusal left nothing that would make the next run 'another configuration'."""
    env = _hide_ray(tmp_path)
    base = ["compare", "1a", "--algos", "plugin", "--episodes", "2", "--runs", "1", "--out", "OUT", "--no-progress"]
    assert_one_line_refusal(cli(*base, "--backend", "ray", cwd=tmp_path, env=env))
    proc = cli(*base, "--jobs", "1", cwd=tmp_path, env=env, timeout=240)
    assert proc.returncode == EXIT_OK, proc.stderr[-2000:]
    assert (tmp_path / "OUT" / "COMPLETE").is_file()
    tally(1)


def test_the_library_refuses_before_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tally: Callable[[int], None]
) -> None:
    """compare(), reproduce(), run_study() and run_sweep() with backend 'ray' and no Ray: the
    refusal names backend, and the output folder (or runs folder) does not exist afterwards."""
    from cmdp_rl.experiments import ExperimentConfig, reproduce
    from cmdp_rl.experiments.backends import run_sweep
    from cmdp_rl.experiments.compare import CompareConfig, compare
    from cmdp_rl.experiments.study import NConstraintsStudy, run_study
    from cmdp_rl.plumbing.errors import CMDPInputError

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    tiny = ExperimentConfig.quick(runs=1, scenarios=("1a",), algorithms=("online-crl",), backend="ray")
    calls: list[tuple[str, Callable[[Path], object]]] = [
        (
            "compare",
            lambda out: compare(
                CompareConfig("1a", algorithms=("plugin",), episodes=2, runs=1, checkpoints=2, backend="ray"),
                out,
                progress=False,
            ),
        ),
        ("reproduce", lambda out: reproduce(tiny, out, progress=False)),
        ("run_study", lambda out: run_study(NConstraintsStudy.quick(runs=1, backend="ray"), out, progress=False)),
        ("run_sweep", lambda out: run_sweep(tiny, out / "runs", progress=False)),
    ]
    for name, call in calls:
        out = tmp_path / name
        with pytest.raises(CMDPInputError, match=r"^backend: 'ray' needs"):
            call(out)
        assert not out.exists(), name
    tally(len(calls))


def test_a_folder_refused_under_its_lock_is_removed(tmp_path: Path, tally: Callable[[int], None]) -> None:
    """A check under the lock (the command's own, e.g. runs of another configuration) that
    refuses: the folder this run created is gone again, an existing one keeps its contents."""
    from cmdp_rl.plumbing.errors import CMDPInputError
    from cmdp_rl.plumbing.results_folder import config_settings, results_folder

    def refuse(check_only: bool) -> None:
        if not check_only:
            raise CMDPInputError("runs: refused under the lock")

    config = config_settings("x", {"a": 1})
    new = tmp_path / "new"
    with pytest.raises(CMDPInputError, match="under the lock"):
        with results_folder(new, config, command="x", under_lock=refuse):
            pass
    assert not new.exists()
    old = tmp_path / "old"
    old.mkdir()
    (old / "keep.txt").write_text("mine")
    with pytest.raises(CMDPInputError, match="under the lock"):
        with results_folder(old, config, command="x", under_lock=refuse):
            pass
    assert tree(old) == {"keep.txt": b"mine"}
    tally(2)
