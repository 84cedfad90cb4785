"""Fuzz: bad and extreme inputs through the public API and the CLI (hardening item 14).

Every case must end in the documented error (API: ``ValueError``/``TypeError`` naming the
argument, plain numbers; CLI: one line on stderr, exit 2) without a crash, a hang or a
partial file. The explicit cases below are distinct inputs (over 60 in all); hypothesis
adds random bad numbers on top.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from faultkit import cli_batch, run_main
from hypothesis import given, settings
from hypothesis import strategies as st

from cmdp_rl import (
    CMDP,
    EpisodicEnv,
    GenerativeModel,
    OnlineCRL,
    OptimisticGMBL,
    checkpoints,
    evaluate,
    random_cmdp,
    solve_elp,
)
from cmdp_rl.confidence.radii import confidence_set, delta_1, delta_p, radius
from cmdp_rl.confidence.sample_size import bounds_report
from cmdp_rl.envs import grid_world
from cmdp_rl.envs.generators import garnet
from cmdp_rl.experiments import ExperimentConfig

M = random_cmdp(3, 2, 3, 1, seed=0)
RNG = np.random.default_rng(0)
GOOD = {"P": M.P, "r": M.r, "c": M.c, "c_bar": M.c_bar, "s0": 0, "H": 3}


def _cmdp(**bad: Any) -> Callable[[], object]:
    return lambda: CMDP(**{**GOOD, **bad})


API_CASES: list[tuple[str, Callable[[], object], str]] = [
    ("P nan", _cmdp(P=np.full((3, 2, 3), np.nan)), "P"),
    ("P negative", _cmdp(P=-M.P), "P"),
    ("P rows", _cmdp(P=M.P * 2), "P"),
    ("P 2-d", _cmdp(P=np.eye(3)), "P"),
    ("P strings", _cmdp(P=[["a"]]), "P"),
    ("P empty", _cmdp(P=np.zeros((0, 0, 0))), "P"),
    ("r shape", _cmdp(r=np.zeros((2, 2))), "r"),
    ("r nan", _cmdp(r=np.where(M.r > 0.5, np.nan, M.r)), "r"),
    ("r inf", _cmdp(r=np.full((3, 2), np.inf)), "r"),
    ("c shape", _cmdp(c=np.zeros((1, 2, 2))), "c"),
    ("c overflowing", _cmdp(c=np.full_like(M.c, 1e308)), "c"),
    ("c_bar strings", _cmdp(c_bar=["x"]), "c_bar"),
    ("c_bar length", _cmdp(c_bar=[1.0, 2.0]), "c_bar"),
    ("c_bar nan", _cmdp(c_bar=[float("nan")]), "c_bar"),
    ("s0 range", _cmdp(s0=7), "s0"),
    ("s0 float", _cmdp(s0=0.5), "s0"),
    ("s0 bool", _cmdp(s0=True), "s0"),
    ("H zero", _cmdp(H=0), "H"),
    ("H inf", _cmdp(H=float("inf")), "H"),
    ("H nan", _cmdp(H=float("nan")), "H"),
    ("H string", _cmdp(H="10"), "H"),
    ("meta", _cmdp(meta={"x": {1, 2}}), "meta"),
    ("elp p_hat", lambda: solve_elp(M, M.P * 3, np.zeros_like(M.P)), "p_hat"),
    ("elp p_hat shape", lambda: solve_elp(M, np.ones((2, 2)), np.zeros_like(M.P)), "p_hat"),
    ("elp beta", lambda: solve_elp(M, M.P, -np.ones_like(M.P)), "beta"),
    ("elp beta shape", lambda: solve_elp(M, M.P, np.zeros(3)), "beta"),
    ("elp method", lambda: solve_elp(M, M.P, np.zeros_like(M.P), method=3), "method"),
    ("elp warm", lambda: solve_elp(M, M.P, np.zeros_like(M.P), warm_start="abc"), "warm_start"),
    ("elp warm pair", lambda: solve_elp(M, M.P, np.zeros_like(M.P), warm_start=[(1, 2, 3)]), "warm_start"),
    (
        "elp warm range",
        lambda: solve_elp(M, M.P, np.zeros_like(M.P), warm_start=[(np.full((3, 3), 9), np.zeros((3, 3), int))]),
        "warm_start",
    ),
    ("elp cmdp", lambda: solve_elp("m", M.P, np.zeros_like(M.P)), "cmdp"),
    ("evaluate policy", lambda: evaluate(M, np.ones((3, 3, 2))), "policy"),
    ("evaluate policy rows", lambda: evaluate(M, np.ones((3, 3, 2)) * 0.2), "policy"),
    ("evaluate kernel", lambda: evaluate(M, np.full((3, 3, 2), 0.5), kernel=np.ones((3, 2, 3))), "kernel"),
    ("counts negative", lambda: confidence_set(-np.ones((3, 2, 3)), 0.1), "counts"),
    ("counts fraction", lambda: confidence_set(np.full((3, 2, 3), 0.5), 0.1), "counts"),
    ("counts shape", lambda: confidence_set(np.ones((3, 2, 2)), 0.1), "counts"),
    ("delta_prime", lambda: confidence_set(np.ones((3, 2, 3)), 0.0), "delta_prime"),
    ("delta_p S", lambda: delta_p(0.1, 0, 2, 3, 1), "S"),
    ("delta_p delta", lambda: delta_p(1.5, 3, 2, 3, 1), "delta"),
    ("delta_1 U", lambda: delta_1(0.1, 3, 1, 0.5), "U"),
    ("radius n", lambda: radius(M.P, np.ones(4), 0.1), "n"),
    ("bounds eps", lambda: bounds_report(9, 4, 10, 1, 1e-300, 0.1), "eps"),
    ("bounds states", lambda: bounds_report(0, 4, 10, 1, 0.1, 0.1), "states"),
    ("crl delta", lambda: OnlineCRL(M, delta=2.0, episodes=3), "delta"),
    ("crl delta str", lambda: OnlineCRL(M, delta="0.1", episodes=3), "delta"),
    ("crl episodes", lambda: OnlineCRL(M, episodes=0), "episodes"),
    ("crl both", lambda: OnlineCRL(M, episodes=3, eps=0.1), "episodes"),
    ("crl method", lambda: OnlineCRL(M, episodes=3, method="simplex"), "method"),
    ("crl cmdp", lambda: OnlineCRL(None, episodes=3), "cmdp"),
    ("crl warm", lambda: OnlineCRL(M, episodes=3, warm_start="yes"), "warm_start"),
    ("gmbl n", lambda: OptimisticGMBL(M, samples_per_pair=-1), "samples_per_pair"),
    ("gmbl n float", lambda: OptimisticGMBL(M, samples_per_pair=2.5), "samples_per_pair"),
    ("gmbl fit", lambda: OptimisticGMBL(M, samples_per_pair=2).fit("model"), "model"),
    ("env rng", lambda: EpisodicEnv(M, 3), "rng"),
    ("env step", lambda: EpisodicEnv(M, RNG).step(-1), "a"),
    ("env step big", lambda: EpisodicEnv(M, RNG).step(5), "a"),
    ("env rollout", lambda: EpisodicEnv(M, RNG).rollout(np.ones((2, 2, 2))), "policy"),
    ("gen s", lambda: GenerativeModel(M, RNG).sample(9, 0), "s"),
    ("gen size", lambda: GenerativeModel(M, RNG).sample(0, 0, size=0), "size"),
    ("checkpoints K", lambda: checkpoints(0, 5), "K"),
    ("checkpoints points", lambda: checkpoints(10, 0), "points"),
    ("random S", lambda: random_cmdp(0, 2, 3), "S"),
    ("random slack", lambda: random_cmdp(3, 2, 3, slack=2.0), "slack"),
    ("garnet b", lambda: garnet(S=3, b=5), "b"),
    ("garnet f", lambda: garnet(f=float("nan")), "f"),
    ("grid width", lambda: grid_world(0, 3, goal=(0, 0), H=3), "width"),
    ("config runs", lambda: ExperimentConfig(runs=0), "runs"),
    ("config delta", lambda: ExperimentConfig(delta=1.0), "delta"),
    ("config scenarios", lambda: ExperimentConfig(scenarios=("zz",)), "scenarios"),
    ("config backend", lambda: ExperimentConfig(backend="slurm"), "backend"),
]


@pytest.mark.parametrize("label, call, name", API_CASES, ids=[c[0] for c in API_CASES])
def test_api_bad_input_names_the_argument(label: str, call: Callable[[], object], name: str) -> None:
    before = {k: np.array(v, copy=True) for k, v in GOOD.items()}
    with pytest.raises((ValueError, TypeError)) as ex:
        call()
    msg = str(ex.value)
    assert msg.startswith(name) or f" {name}" in msg or f"{name}[" in msg or f"{name}:" in msg, msg
    assert "np.float" not in msg and "np.int" not in msg and "\n" not in msg, msg
    for k, v in GOOD.items():  # inputs are never modified in place
        assert np.array_equal(np.asarray(v), before[k]), k


@settings(max_examples=40, deadline=None)
@given(
    st.one_of(
        st.floats(allow_nan=True, allow_infinity=True).filter(lambda x: not 0 < x < 1),
        st.sampled_from([np.float32(1.5), np.float64(-0.1), "x", None, [0.1], True]),
    )
)
def test_api_delta_outside_the_open_unit_interval(value: Any) -> None:
    with pytest.raises((ValueError, TypeError), match="delta"):
        OnlineCRL(M, delta=value, episodes=3)


@settings(max_examples=40, deadline=None)
@given(
    st.one_of(
        st.integers(max_value=0),
        st.floats(allow_nan=True).filter(lambda x: not (x >= 1 and x == int(x)) if math.isfinite(x) else True),
    )
)
def test_api_horizon_must_be_a_positive_integer(value: Any) -> None:
    with pytest.raises(ValueError, match="H"):
        CMDP(**{**GOOD, "H": value})


CLI_CASES: list[list[str]] = [
    ["solve"],
    ["solve", "nope.npz"],
    ["solve", "notnpz.npz"],
    ["solve", "trunc.npz"],
    ["solve", "adir"],
    ["solve", "missing_keys.npz"],
    ["solve", "garnet:Q=1"],
    ["solve", "garnet:S=abc"],
    ["frobnicate"],
    [],
    ["export", "1a", "missing/x.npz"],
    ["export", "1a", "adir"],
    ["export", "1a", "afile"],
    ["export", "nope", "out.npz"],
    ["learn", "1a"],
    ["learn", "1a", "--algo", "sarsa", "--episodes", "3"],
    ["learn", "1a", "--algo", "online-crl"],
    ["learn", "1a", "--algo", "online-crl", "--episodes", "0"],
    ["learn", "1a", "--algo", "online-crl", "--episodes", "-5"],
    ["learn", "1a", "--algo", "online-crl", "--episodes", "3.5"],
    ["learn", "1a", "--algo", "online-crl", "--episodes", "1000000000000"],
    ["learn", "1a", "--algo", "online-crl", "--episodes", "100000000", "--max-time", "1s"],
    ["learn", "1a", "--algo", "online-crl", "--episodes", "3", "--max-memory", "lots"],
    ["learn", "1a", "--algo", "gmbl", "--samples-per-pair", "100000000000000000000"],
    ["learn", "1a", "--algo", "gmbl", "--episodes", "3"],
    ["learn", "1a", "--algo", "online-crl", "--samples-per-pair", "3"],
    ["learn", "1a", "--algo", "online-crl", "--episodes", "3", "--seed", "-1"],
    ["learn", "1a", "--algo", "online-crl", "--episodes", "3", "--delta", "2"],
    ["learn", "1a", "--algo", "online-crl", "--episodes", "3", "--delta", "nan"],
    ["learn", "1a", "--algo", "online-crl", "--episodes", "3", "--delta", "0"],
    ["learn", "1a", "--algo", "online-crl", "--eps", "0.1"],
    ["learn", "1a", "--algo", "online-crl", "--episodes", "3", "--policy-out", "adir"],
    ["learn", "1a", "--algo", "online-crl", "--episodes", "3", "--policy-out", "missing/p.npy"],
    ["learn", "1a", "--algo", "online-crl", "--episodes", "3", "--policy-out", "afile"],
    ["learn", "huge_h.npz", "--algo", "online-crl", "--episodes", "3"],
    ["solve", "huge_h.npz"],
    ["bounds", "--states", "9", "--actions", "4", "--horizon", "10", "--eps", "1e-300", "--delta", "0.1"],
    ["bounds", "--states", "9", "--actions", "4", "--horizon", "10", "--eps", "0.1", "--delta", "1e-320"],
    ["bounds", "--states", "0", "--actions", "4", "--horizon", "10", "--eps", "0.1", "--delta", "0.1"],
    ["bounds", "--states", "9", "--actions", "4", "--horizon", "2", "--eps", "0.1", "--delta", "0.1"],
    ["bounds", "--states", "9", "--actions", "4", "--horizon", "10", "--eps", "1", "--delta", "0.1"],
    ["reproduce", "--config", "missing.toml"],
    ["reproduce", "--config", "bad.toml"],
    ["reproduce", "--config", "unknown_key.toml"],
    ["reproduce", "--config", "bad_value.toml"],
    ["reproduce", "--runs", "0"],
    ["reproduce", "--jobs", "0"],
    ["reproduce", "--out", "afile/sub"],
    ["reproduce", "--out", "afile"],
    ["reproduce", "--backend", "slurm"],
    ["reproduce", "--quick", "--max-time", "0.001s"],
]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("fuzz")
    (d / "adir").mkdir()
    (d / "afile").write_text("x")
    (d / "notnpz.npz").write_text("hello")
    M.save(d / "good.npz")
    (d / "trunc.npz").write_bytes((d / "good.npz").read_bytes()[:100])
    (d / "good.npz").unlink()
    np.savez(d / "missing_keys.npz", P=M.P)
    np.savez(d / "huge_h.npz", P=M.P, r=M.r, c=M.c, c_bar=M.c_bar, s0=0, H=10**9)
    (d / "bad.toml").write_text("runs = [1,\n")
    (d / "unknown_key.toml").write_text("frobnicate = 1\n")
    (d / "bad_value.toml").write_text('delta = "high"\n')
    return d


def _files(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in d.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def cli_runs(workdir: Path) -> dict[str, Any]:
    """Every case of ``CLI_CASES`` run in ``workdir``, one after the other in ONE fresh interpreter
    (``faultkit.cli_batch``: a process per case spent its second importing), and the folder's
    files before and after them all."""
    before = _files(workdir)
    procs = cli_batch(CLI_CASES, cwd=workdir)
    return {
        "procs": dict(zip(map(json.dumps, CLI_CASES), procs, strict=True)),
        "before": before,
        "after": _files(workdir),
    }


@pytest.mark.slow
@pytest.mark.parametrize("argv", CLI_CASES, ids=[" ".join(a) or "(none)" for a in CLI_CASES])
def test_cli_bad_input_is_one_line_exit_2(argv: list[str], cli_runs: dict[str, Any]) -> None:
    proc = cli_runs["procs"][json.dumps(argv)]
    assert proc.returncode == 2, (argv, proc.returncode, proc.stderr[-500:])
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert cli_runs["after"] == cli_runs["before"], "a refused command wrote or changed files"


def test_at_least_sixty_distinct_bad_inputs() -> None:
    distinct = {json.dumps(a) for a in CLI_CASES} | {c[0] for c in API_CASES}
    assert len(distinct) >= 60


def test_cli_infeasible_is_exit_1(tmp_path: Path) -> None:
    random_cmdp(5, 2, 4, 2, seed=3, slack=-0.5).save(tmp_path / "inf.npz")
    proc = run_main("solve", "inf.npz", "--json", cwd=tmp_path)
    assert proc.returncode == 1 and json.loads(proc.stdout)["status"] == "infeasible"
