"""Certificates in practice: the log reader, certified-safe planning, the learners' radius, the CLI.

Known answers come from independent computations: counts tallied in the test from the
simulated episodes, radii written out formula by formula, brute force over every
deterministic policy, exact evaluation on the true model.
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest

from cmdp_rl import CMDP
from cmdp_rl.certificates.certify import certify
from cmdp_rl.certificates.safe import robust_min_cost_policy, solve_safe
from cmdp_rl.cli import main
from cmdp_rl.confidence.box import Box
from cmdp_rl.confidence.radii import empirical_bernstein_radius, radius, rule_radius
from cmdp_rl.envs.scenarios import scenario_cmdp
from cmdp_rl.evaluation.evaluate import evaluate
from cmdp_rl.experiments.runner import RunSpec, execute_run
from cmdp_rl.learners import EpisodicEnv, GenerativeModel, OnlineCRL, OptimisticGMBL, Scorer
from cmdp_rl.model.transition_logs import read_log, write_log
from cmdp_rl.plumbing.validation import CMDPInputError


def _episodes(model: CMDP, episodes: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    env = EpisodicEnv(model, np.random.default_rng(seed))
    uniform = np.full((model.H, model.S, model.A), 1.0 / model.A)
    rolls = [env.rollout(uniform) for _ in range(episodes)]
    return tuple(np.array([r[i] for r in rolls]) for i in range(3))  # type: ignore[return-value]


# -- the log reader ----------------------------------------------------------------------


def test_log_round_trip_gives_the_tallied_counts(tmp_path: Path) -> None:
    m = scenario_cmdp("1a")
    states, actions, nexts = _episodes(m, 40, seed=3)
    expected = np.zeros((m.S, m.A, m.S), dtype=np.int64)
    for s, a, s2 in zip(states.ravel(), actions.ravel(), nexts.ravel(), strict=True):
        expected[s, a, s2] += 1
    path = tmp_path / "log.csv"
    write_log(path, states, actions, nexts)
    counts = read_log(path, m.S, m.A, m.H)
    assert counts.dtype == np.int64
    np.testing.assert_array_equal(counts, expected)
    assert counts.sum() == 40 * m.H


def test_log_rows_in_any_order_and_extra_columns(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    path.write_text("reward,next_state,episode,action,step,state\n0.5,1,7,0,1,2\n0.1,2,7,1,0,0\n")
    counts = read_log(path, 3, 2, 5)
    assert counts[0, 1, 2] == 1 and counts[2, 0, 1] == 1 and counts.sum() == 2


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("episode,step,state,action\n0,0,0,1\n", "missing column"),
        ("episode,step,state,action,next_state\n0,0,9,0,1\n", "state 9 out of range"),
        ("episode,step,state,action,next_state\n0,0,0,5,1\n", "action 5 out of range"),
        ("episode,step,state,action,next_state\n0,0,0,0,1\n0,2,1,0,1\n", "consecutive"),
        ("episode,step,state,action,next_state\n0,0,0,0,1\n0,1,2,0,1\n", "previous step's next_state"),
        ("episode,step,state,action,next_state\n0,0,0,0,-1\n", "next_state"),
        ("episode,step,state,action,next_state\n", "no rows"),
    ],
)
def test_malformed_logs_are_one_line_errors_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, needle: str
) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(CMDPInputError, match="log"):
        read_log(path, 3, 2, 4)
    pol = tmp_path / "p.npy"
    np.save(pol, np.full((4, 3, 2), 0.5))
    model = tmp_path / "m.npz"
    CMDP(np.full((3, 2, 3), 1 / 3), np.zeros((3, 2)), np.zeros((1, 3, 2)), [1.0], 0, 4).save(model)
    capsys.readouterr()
    assert main(["certify", str(model), "--policy", str(pol), "--log", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err and "Traceback" not in err


# -- radius rules -----------------------------------------------------------------------


def test_radius_rules_against_hand_computation() -> None:
    counts = np.array([[[3, 1]], [[0, 0]]], dtype=float)  # S=2, A=1: n(0)=4, n(1)=0
    p_hat = np.array([[[0.75, 0.25]], [[0.5, 0.5]]])
    n = np.array([[4], [0]])
    d = 0.01
    L8 = math.log(8 / d)
    v = 4 * 0.75 * 0.25 / 3  # unbiased variance
    eb = min(math.sqrt(2 * v * L8 / 4) + 7 * L8 / (3 * 3), math.sqrt(L8 / 8))
    got = empirical_bernstein_radius(p_hat, n, d)
    assert got[0, 0, 0] == pytest.approx(eb, rel=1e-12) and got[0, 0, 1] == pytest.approx(eb, rel=1e-12)
    assert (got[1] == 1.0).all()
    L4 = math.log(4 / d)
    paper = min(math.sqrt(2 * 0.75 * 0.25 * L4 / 4) + 2 * L4 / 12, math.sqrt(L4 / 8))
    assert rule_radius(p_hat, n, d, "paper")[0, 0, 0] == pytest.approx(paper, rel=1e-12)
    np.testing.assert_array_equal(rule_radius(p_hat, n, d, "paper"), radius(p_hat, n, d))
    del counts


def test_learners_take_the_radius_rule() -> None:
    m = scenario_cmdp("1a")
    counts = GenerativeModel(m, np.random.default_rng(0)).sample_counts(30)
    p_hat = counts / counts.sum(-1, keepdims=True)
    n = counts.sum(-1)
    crl = OnlineCRL(m, 0.1, episodes=100, radius="empirical-bernstein")
    np.testing.assert_allclose(crl.radius(p_hat, n), empirical_bernstein_radius(p_hat, n, crl.delta_1))
    assert OnlineCRL(m, 0.1, episodes=100).radius_rule == "paper"
    g = OptimisticGMBL(m, 0.1, samples_per_pair=30, radius="empirical-bernstein")
    res = g.plan(counts, 30, None)
    np.testing.assert_allclose(res.confidence.beta, empirical_bernstein_radius(p_hat, n, g.delta_P))
    with pytest.raises(CMDPInputError, match="radius"):
        OnlineCRL(m, 0.1, episodes=10, radius="hoeffding")


# -- certified-safe planning -------------------------------------------------------------


def _tiny(seed: int) -> CMDP:
    rng = np.random.default_rng(seed)
    S, A, H = 3, 2, 3
    P = rng.dirichlet(np.ones(S), size=(S, A))
    return CMDP(P, rng.uniform(size=(S, A)), rng.uniform(size=(1, S, A)), [1.2], 0, H)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_robust_min_cost_policy_beats_every_deterministic_policy(seed: int) -> None:
    """Brute force: no deterministic Markov policy has a smaller certified cost upper bound."""
    m = _tiny(seed)
    counts = GenerativeModel(m, np.random.default_rng(seed)).sample_counts(15)
    cert_args = dict(r=m.r, c=m.c, c_bar=m.c_bar, s0=m.s0, H=m.H, delta=0.1)
    from cmdp_rl.certificates.certify import certificate_radius, per_entry_delta
    from cmdp_rl.confidence.radii import empirical_kernel

    p_hat, n = empirical_kernel(counts.astype(float))
    box = Box.from_radius(
        p_hat, certificate_radius(p_hat, n, per_entry_delta(0.1, n, "adaptive"), "empirical-bernstein")
    )
    robust = certify(robust_min_cost_policy(box, m.c[0], m.H), counts, **cert_args).cost_hi[0]
    best = np.inf
    for choice in itertools.product(range(m.A), repeat=m.H * m.S):
        pol = np.zeros((m.H, m.S, m.A))
        pol[np.repeat(np.arange(m.H), m.S), np.tile(np.arange(m.S), m.H), choice] = 1.0
        best = min(best, certify(pol, counts, **cert_args).cost_hi[0])
    assert robust == pytest.approx(best, abs=1e-9)


def test_solve_safe_on_1b_is_certified_and_improves_with_data() -> None:
    m = scenario_cmdp("1b")
    v_star = Scorer.for_model(m).v_star
    values = []
    for n in (50, 200, 1000):
        counts = GenerativeModel(m, np.random.default_rng(n)).sample_counts(n)
        plan = solve_safe(counts, m.r, m.c, m.c_bar, m.s0, m.H, delta=0.05, sampling="fixed")
        assert plan.safe and plan.status == "certified" and plan.policy is not None
        again = certify(plan.policy, counts, m.r, m.c, m.c_bar, m.s0, m.H, delta=0.05, sampling="fixed")
        assert again.safe and (again.cost_hi <= m.c_bar).all()
        ev = evaluate(m, plan.policy)  # the true model: safe (the certificate holds w.p. >= 0.95)
        assert (ev.costs <= m.c_bar + 1e-9).all()
        values.append(ev.value)
    assert values[0] < values[1] < values[2] <= v_star + 1e-9


def test_solve_safe_reports_when_nothing_can_be_certified() -> None:
    m = scenario_cmdp("1a")
    tight = CMDP(m.P, m.r, m.c, [0.05], m.s0, m.H)  # almost nothing allowed
    counts = GenerativeModel(tight, np.random.default_rng(0)).sample_counts(3)
    plan = solve_safe(counts, tight.r, tight.c, tight.c_bar, tight.s0, tight.H)
    if plan.safe:  # the robust minimum-cost policy may avoid the costly action altogether
        assert plan.certificate.safe
    else:
        assert plan.status == "uncertified" and plan.exact
        assert plan.samples_per_pair is None or plan.samples_per_pair > 3


def test_solve_safe_refuses_an_unconstrained_problem() -> None:
    m = scenario_cmdp("1a")
    counts = np.ones((m.S, m.A, m.S), dtype=np.int64)
    with pytest.raises(CMDPInputError, match="N >= 1"):
        solve_safe(counts, m.r, np.zeros((0, m.S, m.A)), np.zeros(0), m.s0, m.H)


# -- certificates over time --------------------------------------------------------------


def test_runs_record_the_certified_cost_upper_bound() -> None:
    m = scenario_cmdp("1a")
    spec = RunSpec("1a", "online-crl", 0, 0, 0.1, "fast", episodes=60, checkpoints=(1, 10, 60))
    rec = execute_run(spec)
    cost, hi = np.array(rec.columns["cost"]), np.array(rec.columns["cost_hi"])
    assert cost.shape == (3,) and (hi >= cost - 1e-9).all()
    safe = np.array(rec.columns["certified_safe"])
    np.testing.assert_array_equal(safe, (hi <= m.c_bar[0]).astype(int))
    g = execute_run(RunSpec("1a", "gmbl", 0, 0, 0.1, "fast", budgets=(5, 50), radius="empirical-bernstein"))
    assert len(g.columns["cost_hi"]) == 2 and g.spec.radius == "empirical-bernstein"


# -- the CLI workflow --------------------------------------------------------------------


def test_learn_then_certify_two_line_workflow(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pol, cnt = tmp_path / "p.npy", tmp_path / "c.npy"
    code = main(
        [
            "learn",
            "1a",
            "--algo",
            "gmbl",
            "--samples-per-pair",
            "200",
            "--policy-out",
            str(pol),
            "--counts-out",
            str(cnt),
        ]
    )
    assert code == 0
    counts = np.load(cnt)
    assert counts.shape == (9, 4, 9) and counts.dtype == np.int64 and (counts.sum(-1) == 200).all()
    capsys.readouterr()
    code = main(["certify", "1a", "--policy", str(pol), "--counts", str(cnt), "--sampling", "fixed", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= {"value", "costs", "safe", "delta_prime", "radius", "samples"}
    assert code == (0 if out["safe"] else 1)
    assert out["samples"] == 200 * 36 and out["radius"] == "empirical-bernstein"
    assert 0 < out["delta_prime"] < 0.05
    lo, hi = out["value"]
    assert lo <= hi and len(out["costs"]) == 1
    direct = certify(np.load(pol), counts, *_known(scenario_cmdp("1a")), sampling="fixed")
    assert direct.value_lo == pytest.approx(lo) and direct.cost_hi[0] == pytest.approx(out["costs"][0][1])


def _known(m: CMDP) -> tuple[object, ...]:
    return m.r, m.c, m.c_bar, m.s0, m.H


def test_certify_exit_codes(tmp_path: Path) -> None:
    m = scenario_cmdp("1a")
    never_costly = np.zeros((m.H, m.S, m.A))
    never_costly[..., 0] = 1.0  # action 1 is the only costly one in scenario 1a
    always_costly = np.zeros((m.H, m.S, m.A))
    always_costly[..., 1] = 1.0  # cost H = 10 > 2 on every kernel
    counts = GenerativeModel(m, np.random.default_rng(0)).sample_counts(100)
    np.save(tmp_path / "c.npy", counts)
    for name, pol, code in (("safe", never_costly, 0), ("unsafe", always_costly, 1)):
        np.save(tmp_path / f"{name}.npy", pol)
        assert (
            main(["certify", "1a", "--policy", str(tmp_path / f"{name}.npy"), "--counts", str(tmp_path / "c.npy")])
            == code
        )
    np.save(tmp_path / "wrong.npy", np.zeros((2, 2)))
    assert main(["certify", "1a", "--policy", str(tmp_path / "wrong.npy"), "--counts", str(tmp_path / "c.npy")]) == 2
    assert main(["certify", "1a", "--policy", str(tmp_path / "safe.npy")]) == 2  # no data
    assert main(["certify", "1a", "--policy", str(tmp_path / "nope.npy"), "--counts", str(tmp_path / "c.npy")]) == 2


def test_learn_from_log_and_safe(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    m = scenario_cmdp("1a")
    write_log(tmp_path / "log.csv", *_episodes(m, 500, seed=5))
    capsys.readouterr()
    code = main(
        ["learn", "1a", "--from-log", str(tmp_path / "log.csv"), "--policy-out", str(tmp_path / "p.npy"), "--json"]
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["samples"] == 500 * m.H and "certificate" in out and (tmp_path / "p.npy").exists()
    code = main(["learn", "1a", "--from-log", str(tmp_path / "log.csv"), "--deploy", "certified", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == (0 if out["certificate"]["safe"] else 1)
    assert main(["learn", "1a", "--from-log", str(tmp_path / "log.csv"), "--episodes", "5"]) == 2
    assert main(["learn", "1a", "--from-log", str(tmp_path / "missing.csv")]) == 2
    argv = ["learn", "1a", "--episodes", "300", "--deploy", "certified", "--json", "--radius", "empirical-bernstein"]
    code = main(argv)
    out = json.loads(capsys.readouterr().out)
    assert out["radius"] == "empirical-bernstein"
    assert code == (0 if out["safe_status"] == "certified" else 1)
    assert out["certificate"]["safe"] == (code == 0)
