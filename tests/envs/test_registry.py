"""Named problems, Garnet, the safe baseline and model metadata, against independent LPs."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from scipy.optimize import linprog

from cmdp_rl import CMDP, CMDPInputError, evaluate, solve
from cmdp_rl.envs.generators import garnet
from cmdp_rl.envs.registry import PROBLEMS, episodic_problems, make, parse_spec
from cmdp_rl.planning.baseline import safe_baseline, slater_gap


def _dense_flow(m: CMDP) -> tuple[np.ndarray, np.ndarray]:
    """Flow equalities of the occupation LP, entry by entry (independent of the library's builder)."""
    H, S, A = m.H, m.S, m.A
    n = H * S * A
    A_eq = np.zeros((H * S, n))
    b_eq = np.zeros(H * S)
    for h in range(H):
        for s in range(S):
            for a in range(A):
                A_eq[h * S + s, (h * S + s) * A + a] += 1.0
            if h == 0:
                b_eq[s] = float(s == m.s0)
            else:
                for x in range(S):
                    for b in range(A):
                        A_eq[h * S + s, ((h - 1) * S + x) * A + b] -= m.P[x, b, s]
    return A_eq, b_eq


def _independent_slater_gap(m: CMDP) -> float:
    """max_pi min_i (c_bar_i - C_i): maximize g s.t. C_i(mu) + g <= c_bar_i (dense interior-point LP)."""
    A_eq, b_eq = _dense_flow(m)
    n = A_eq.shape[1]
    cost_rows = np.stack([np.tile(m.c[i].ravel(), m.H) for i in range(m.N)])
    A_ub = np.hstack([cost_rows, np.ones((m.N, 1))])
    obj = np.zeros(n + 1)
    obj[-1] = -1.0
    res = linprog(
        obj,
        A_ub=A_ub,
        b_ub=m.c_bar,
        A_eq=np.hstack([A_eq, np.zeros((A_eq.shape[0], 1))]),
        b_eq=b_eq,
        bounds=[(0, None)] * n + [(None, None)],
        method="highs-ipm",
    )
    assert res.status == 0
    return float(-res.fun)


@pytest.mark.parametrize("N, f, seed", [(1, 0.5, 0), (3, 0.2, 1), (2, 0.8, 2)])
def test_garnet_thresholds_and_slater_gap(N: int, f: float, seed: int) -> None:
    m = garnet(S=8, A=3, b=3, N=N, f=f, H=5, seed=seed)
    assert np.all(np.count_nonzero(m.P, axis=-1) <= 3)
    gap = _independent_slater_gap(m)
    assert m.meta["slater_gap"] == pytest.approx(gap, abs=1e-7)
    assert gap > 0  # jointly feasible with a margin for every N
    assert solve(m).feasible
    # the margin of the worst-cost policy is f (C_u - C_s) per constraint: the gap grows with f
    wider = garnet(S=8, A=3, b=3, N=N, f=min(1.0, f + 0.15), H=5, seed=seed)
    assert wider.meta["slater_gap"] > m.meta["slater_gap"]


def test_garnet_same_seed_same_bytes(tmp_path) -> None:
    a, b = garnet(12, 3, 2, 2, 0.5, 6, 7), garnet(12, 3, 2, 2, 0.5, 6, 7)
    a.save(tmp_path / "a.npz")
    b.save(tmp_path / "b.npz")
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    assert not np.array_equal(garnet(12, 3, 2, 2, 0.5, 6, 8).P, a.P)
    with pytest.raises(CMDPInputError, match="b: the branching factor"):
        garnet(S=3, b=4)
    with pytest.raises(CMDPInputError, match="f: "):
        garnet(f=1.5)


def test_safe_baseline_is_the_fifth_threshold_optimum() -> None:
    m = make("1a")
    base = safe_baseline(m)
    assert base.rule == "thresholds/5"
    assert base.costs[0] == pytest.approx(m.c_bar[0] / 5, abs=1e-7)  # binding at c_bar / 5
    assert base.slater_gap == pytest.approx(m.c_bar[0] - base.costs[0])
    assert evaluate(m, base.policy).value == pytest.approx(base.value)
    assert slater_gap(m) == pytest.approx(_independent_slater_gap(m), abs=1e-7)
    assert slater_gap(make("2")) == pytest.approx(0.0, abs=1e-9)  # threshold 0: no Slater gap


def test_spec_overrides_and_errors() -> None:
    assert parse_spec("garnet:S=50,A=4") == ("garnet", {"S": "50", "A": "4"})
    m = make("garnet:S=10,A=2,b=2,N=2,f=0.3,H=4,seed=5")
    assert (m.S, m.A, m.H, m.N) == (10, 2, 4, 2) and m.meta["parameters"]["f"] == 0.3
    m = make("1a:H=20,c_bar=1.5")
    assert m.H == 20 and m.c_bar.tolist() == [1.5]
    for bad, match in [
        ("nope", "unknown name"),
        ("garnet:Q=3", "unknown parameter 'Q'"),
        ("garnet:S=x", "parameter S must be an integer, got 'x'"),
        ("1a:H", "key=value"),
        ("garnet:N=2,c_bar=1/2/3", "3 values given for 2"),
    ]:
        with pytest.raises(CMDPInputError, match=match):
            make(bad)
    assert {"1a", "1b", "2", "garnet"} <= set(PROBLEMS)


def test_meta_round_trip_and_validation(tmp_path) -> None:
    m = make("garnet:S=5,seed=1")
    m.save(tmp_path / "g.npz")
    back = CMDP.load(tmp_path / "g.npz")
    assert back.meta == m.meta and back.meta["parameters"]["S"] == 5
    with pytest.raises(CMDPInputError, match="meta"):
        m.replace(meta={"x": object()})
    plain = make("1a").replace(meta={})
    plain.save(tmp_path / "p.npz")
    with np.load(tmp_path / "p.npz") as data:
        assert "meta" not in data.files  # optional key: absent when empty


@pytest.mark.slow
def test_cli_envs_and_names_everywhere(tmp_path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "cmdp_rl", "envs", "--json"], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    rows = {r["name"]: r for r in json.loads(out.stdout)}
    assert rows["1a"]["v_star"] == pytest.approx(4.418283, abs=1e-5)
    for r in rows.values():
        assert r["v_star"] is None or r["v_star"] <= r["v_unconstrained"] + 1e-9
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "cmdp_rl",
            "learn",
            "garnet:S=6,A=2,H=4",
            "--algo",
            "online-crl",
            "--episodes",
            "5",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["episodes"] == 5


@pytest.mark.slow
def test_reproduce_config_accepts_registered_problems(tmp_path) -> None:
    from cmdp_rl.experiments import ExperimentConfig, reproduce

    spec = "garnet:S=5,A=2,H=4"
    cfg = ExperimentConfig.quick(scenarios=("2", spec), runs=1, jobs=1, gmbl_n_max=30, episodes={"2": 20, spec: 20})
    res = reproduce(cfg, tmp_path / "o", progress=False)
    _header, *rows = (tmp_path / "o" / "results.csv").read_text().splitlines()
    assert any(row.startswith(f'"{spec}",') or row.startswith(f"{spec},") for row in rows)
    assert any("garnet_S-5_A-2_H-4" in p.name for p in res.figures)
    with pytest.raises(CMDPInputError, match="scenarios: unknown name"):
        ExperimentConfig.quick(scenarios=("nope",))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(episodic_problems()))
def test_both_learners_run_on_every_registered_problem(name: str) -> None:
    from cmdp_rl import EpisodicEnv, GenerativeModel, OnlineCRL, OptimisticGMBL, Scorer

    m = make(name)
    scorer = Scorer.for_model(m) if solve(m).feasible else None
    rng = np.random.default_rng(0)
    run = OnlineCRL(m, 0.1, episodes=2).fit(EpisodicEnv(m, rng), scorer)
    assert run.episodes == 2 and run.counts.sum() == 2 * m.H
    res = OptimisticGMBL(m, 0.1, samples_per_pair=3).fit(GenerativeModel(m, rng), scorer)
    assert res.policy.shape == (m.H, m.S, m.A)


@pytest.mark.parametrize("spec", ["distinct:n=4,c_bar=0.3", "garnet:c_bar=1.0", "1a:H=12"])
def test_generic_overrides_leave_no_stale_facts_in_meta(spec: str) -> None:
    """A generator's facts (V*, Slater gap, ...) describe the model before H/c_bar overrides."""
    meta = dict(make(spec).meta)
    assert set(meta) <= {"source", "reward_map", "name", "spec", "parameters", "before_overrides"}
    base = dict(make(spec.split(":")[0]).meta)
    if set(base) - {"source", "reward_map", "name", "spec", "parameters"}:
        assert "before_overrides" in meta
