"""NPG-PD and CRPO (cmdp_rl.pg.methods) and the authors' instance (ding-random).

Known answers: the closed-form softmax update computed here from dense solves; the arrays,
the optimum and the running averages printed by the authors' own scripts (tests/data/
ding_random_reference.json, produced by running tliu1997/ARNPG-MORL's unmodified
'Tabular MDP (oracle)/NPG-PD.py' and 'CRPO.py' on seed 10; see its "how_computed").
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import linprog

import cmdp_rl
from cmdp_rl import CMDP, CMDPInputError, evaluate, make, solve
from cmdp_rl.envs.ding import script_theta0
from cmdp_rl.pg.results import COLUMNS

REF = json.loads((Path(__file__).parents[1] / "data" / "ding_random_reference.json").read_text())


def _small(seed: int = 0, S: int = 4, A: int = 3, N: int = 1, gamma: float = 0.85) -> CMDP:
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(S), size=(S, A))
    r, c = rng.random((S, A)), rng.random((N, S, A))
    c_bar = np.full(N, 0.5 * (c.min() + c.max()) / (1 - gamma))
    return CMDP(P, r, c, c_bar, rng.dirichlet(np.ones(S)), gamma=gamma)


def _q_and_v(m: CMDP, pi: np.ndarray, table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``Q (S, A)`` and ``V (S,)`` of ``table`` under ``pi`` by a dense solve written out here."""
    P_pi = np.einsum("sa,sat->st", pi, m.P)
    V = np.linalg.solve(np.eye(m.S) - m.gamma * P_pi, (pi * table).sum(1))
    return table + m.gamma * m.P @ V, V


# ----------------------------------------------------------------------------------- the instance


def test_ding_random_matches_the_authors_arrays():
    m = make("ding-random:seed=10")
    assert (m.S, m.A, m.N, m.gamma) == (REF["S"], REF["A"], 1, REF["gamma"])
    K = m.P.reshape(m.S * m.A, m.S)  # the script's layout: row s*A + a
    assert np.allclose(K[0], REF["P_first_row"], rtol=0, atol=1e-15)
    assert np.allclose(K[3 * m.A + 7], REF["P_row_s3_a7"], rtol=0, atol=1e-15)
    assert np.allclose(m.r.ravel(), REF["reward_flat"], rtol=0, atol=1e-15)
    assert np.allclose(1.0 - m.c[0].ravel(), REF["utility_flat"], rtol=0, atol=1e-15)
    assert m.c_bar[0] == pytest.approx(1 / (1 - REF["gamma"]) - REF["b"])
    assert np.allclose(m.rho, REF["rho"]) and np.allclose(script_theta0(10).ravel()[:5], REF["theta0_first5"])
    # the optimum of the authors' docplex LP
    for method in ("lp", "fast"):
        assert solve(m, method).value == pytest.approx(REF["V_star_r_LP"], abs=1e-6)
    assert m.meta["parameters"]["seed"] == 10 and "ARNPG-MORL" in m.meta["source"]


def test_ding_random_other_seeds_and_bad_parameters():
    a, b = make("ding-random:seed=1"), make("ding-random:seed=2")
    assert not np.allclose(a.r, b.r) and np.allclose(a.r, make("ding-random:seed=1").r)
    with pytest.raises(CMDPInputError, match=r"seed"):
        make("ding-random:seed=-1")
    with pytest.raises(CMDPInputError, match=r"gamma"):
        make("ding-random:gamma=1.5")


@pytest.mark.parametrize("algo, key", [("npg-pd", "npg_pd_seed10"), ("crpo", "crpo_seed10")])
def test_the_scripts_runs_are_reproduced(algo, key):
    """``update="script", init="script"``: the running averages the authors' scripts print."""
    m = make("ding-random:seed=10")
    res = cmdp_rl.pg.methods.run(m, algo, 300, update="script", init="script")
    gap = res.avg_value_gap(REF["V_star_r_LP"], before=True)
    viol = np.concatenate([res.initial_costs[None], res.costs[:-1]])[:, 0] - m.c_bar[0]
    avg_viol = np.cumsum(viol) / np.arange(1, 301)  # the script's b - V_g = V_c - c_bar
    for k, v in REF[key]["avg_gap_at_iter"].items():
        assert gap[int(k) - 1] == pytest.approx(v, abs=1e-8)
    for k, v in REF[key]["avg_violation_at_iter"].items():
        assert avg_viol[int(k) - 1] == pytest.approx(v, abs=1e-8)


def test_the_papers_update_and_the_scripts_step_from_the_uniform_start():
    """The issue's measurements: about 0.013 (paper) against 0.067 (script's step) at T = 300."""
    m = make("ding-random:seed=10")
    paper = cmdp_rl.pg.methods.run(m, "npg-pd", 300, eta1=1, eta2=1).avg_value_gap(REF["V_star_r_LP"])[-1]
    script = cmdp_rl.pg.methods.run(m, "npg-pd", 300, update="script").avg_value_gap(REF["V_star_r_LP"])[-1]
    assert 0.012 < paper < 0.014 and 0.066 < script < 0.068


# ----------------------------------------------------------------------------------- the updates


def test_npg_pd_iterates_follow_the_closed_form_softmax_update():
    m = _small(1, N=2)
    eta1, eta2, Lam = 0.7, 0.3, 5.0
    res = cmdp_rl.pg.methods.run(m, "npg-pd", 4, eta1=eta1, eta2=eta2, Lambda=Lam)
    pi, lam = np.full((m.S, m.A), 1 / m.A), np.zeros(m.N)
    for t in range(4):
        Qr, Vr = _q_and_v(m, pi, m.r)
        Qc = [_q_and_v(m, pi, m.c[i]) for i in range(m.N)]
        A_L = (Qr - Vr[:, None]) - sum(lam[i] * (Qc[i][0] - Qc[i][1][:, None]) for i in range(m.N))
        Vc = np.array([m.rho @ Qc[i][1] for i in range(m.N)])
        new = pi * np.exp(eta1 / (1 - m.gamma) * A_L)
        pi = new / new.sum(1, keepdims=True)
        lam = np.clip(lam + eta2 * (Vc - m.c_bar), 0, Lam)
        assert np.allclose(res.policies[t], pi, atol=1e-12)
        assert np.allclose(res.multipliers[t], lam, atol=1e-12)
        ev = evaluate(m, pi)
        assert res.values[t] == pytest.approx(ev.value, abs=1e-10)
        assert np.allclose(res.costs[t], ev.costs, atol=1e-10)


def test_crpo_steps_on_the_reward_or_the_most_violated_cost():
    m = _small(2, N=2)
    eta, tol = 0.4, 0.01
    res = cmdp_rl.pg.methods.run(m, "crpo", 5, eta=eta, tol=tol)
    assert np.all(res.multipliers == 0)
    pi = np.full((m.S, m.A), 1 / m.A)
    for t in range(5):
        Qs = [_q_and_v(m, pi, tab) for tab in (m.r, *m.c)]
        Vc = np.array([m.rho @ Qs[1 + i][1] for i in range(m.N)])
        if np.all(Vc <= m.c_bar - tol):
            step = Qs[0][0] - Qs[0][1][:, None]
        else:
            i = int(np.argmax(Vc - m.c_bar))
            step = -(Qs[1 + i][0] - Qs[1 + i][1][:, None])
        new = pi * np.exp(eta / (1 - m.gamma) * step)
        pi = new / new.sum(1, keepdims=True)
        assert np.allclose(res.policies[t], pi, atol=1e-12)


def test_default_multiplier_bound_is_two_over_slater_margin():
    m = _small(3, S=3, A=2, N=2)
    # the Slater margin by brute force: the best mixture of deterministic policies for min_i (c_bar_i - C_i)
    costs = []
    for acts in itertools.product(range(m.A), repeat=m.S):
        pi = np.eye(m.A)[list(acts)]
        costs.append([m.rho @ _q_and_v(m, pi, m.c[i])[1] for i in range(m.N)])
    C = np.array(costs)  # (K, N)
    K = C.shape[0]
    # max xi s.t. C^T w + xi <= c_bar, sum w = 1
    res = linprog(
        np.r_[np.zeros(K), -1.0],
        A_ub=np.c_[C.T, np.ones(m.N)],
        b_ub=m.c_bar,
        A_eq=np.r_[np.ones(K), 0.0][None],
        b_eq=[1.0],
        bounds=[(0, None)] * K + [(None, None)],
    )
    xi = -res.fun
    assert cmdp_rl.pg.methods.slater_margin(m) == pytest.approx(xi, abs=1e-8)
    run = cmdp_rl.pg.methods.run(m, "npg-pd", 3)
    assert run.settings["Lambda"] == pytest.approx(2 / ((1 - m.gamma) * xi), rel=1e-8)
    assert np.all((run.multipliers >= 0) & (run.multipliers <= run.settings["Lambda"]))


def test_sparse_models_give_the_same_iterates():
    m = _small(4, S=6, A=3)
    dense = cmdp_rl.pg.methods.run(m, "npg-pd", 5)
    sparse = cmdp_rl.pg.methods.run(m.to_sparse(), "npg-pd", 5)
    assert np.allclose(dense.policies, sparse.policies, atol=1e-12)


# ----------------------------------------------------------------------------------- sample-based


def test_sampled_q_is_unbiased():
    m = _small(5, S=3, A=2)
    pi = np.random.default_rng(0).dirichlet(np.ones(m.A), size=m.S)
    tables = cmdp_rl.pg.methods._tables(m)
    n = 4000
    sampler = cmdp_rl.pg.methods._Sampler(m, tables, n, np.random.default_rng(1))
    Q_hat, V_hat = sampler.q_and_values(pi)
    Q, V = _q_and_v(m, pi, m.r)
    # each rollout's sum has variance at most (1 + gamma)/(1 - gamma)^3 for rewards in [0, 1]
    se = np.sqrt((1 + m.gamma) / (1 - m.gamma) ** 3 / n)
    assert np.all(np.abs(Q_hat[..., 0] - Q) < 5 * se)
    assert abs(V_hat[0] - m.rho @ V) < 5 * se


def test_sample_based_runs_are_seeded_and_track_the_exact_run():
    m = _small(6, S=4, A=2)
    a = cmdp_rl.pg.methods.run(m, "npg-pd", 5, exact=False, samples=200, seed=3, eta1=0.2)
    b = cmdp_rl.pg.methods.run(m, "npg-pd", 5, exact=False, samples=200, seed=3, eta1=0.2)
    c = cmdp_rl.pg.methods.run(m, "npg-pd", 5, exact=False, samples=200, seed=4, eta1=0.2)
    assert np.array_equal(a.policies, b.policies) and not np.array_equal(a.policies, c.policies)
    # one step from the uniform policy with many rollouts lands near the exact step
    many = cmdp_rl.pg.methods.run(m, "npg-pd", 1, exact=False, samples=5000, seed=3, eta1=0.2)
    exact = cmdp_rl.pg.methods.run(m, "npg-pd", 1, eta1=0.2)
    assert np.abs(many.policies[0] - exact.policies[0]).max() < 0.05
    assert np.abs(exact.policies[0] - 1 / m.A).max() > 0.1  # the step itself is not small
    assert many.settings["samples"] == 5000 and exact.settings["samples"] is None


# ----------------------------------------------------------------------------------- errors


def test_bad_arguments_are_named():
    m = _small(7)
    with pytest.raises(CMDPInputError, match=r"^H: policy-gradient methods works on discounted models"):
        cmdp_rl.pg.methods.run(m.replace(H=5), "npg-pd", 3)
    with pytest.raises(CMDPInputError, match=r"^algorithm:"):
        cmdp_rl.pg.methods.run(m, "ppo", 3)
    with pytest.raises(CMDPInputError, match=r"^eta: not a step size of npg-pd"):
        cmdp_rl.pg.methods.run(m, "npg-pd", 3, eta=0.1)
    with pytest.raises(CMDPInputError, match=r"^eta1: must be > 0"):
        cmdp_rl.pg.methods.run(m, "npg-pd", 3, eta1=-1)
    with pytest.raises(CMDPInputError, match=r"^iterations"):
        cmdp_rl.pg.methods.run(m, "crpo", 0)
    with pytest.raises(CMDPInputError, match=r"^samples"):
        cmdp_rl.pg.methods.run(m, "crpo", 2, exact=False, samples=0)
    with pytest.raises(CMDPInputError, match=r"^c_bar: no policy meets every threshold strictly"):
        cmdp_rl.pg.methods.run(m.replace(c_bar=[0.0]), "npg-pd", 3)
    assert cmdp_rl.pg.methods.run(m.replace(c_bar=[0.0]), "npg-pd", 2, Lambda=3.0).iterations == 2


# ----------------------------------------------------------------------------------- the CLI


def test_cli_pg_writes_the_table_and_figures(tmp_path, capsys):
    import csv

    from cmdp_rl.cli import main

    out = tmp_path / "pg"
    code = main(
        ["pg", "ding-random:seed=10", "--algos", "npg-pd,crpo", "--iterations", "30", "--out", str(out), "--json"]
    )
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["v_star"] == pytest.approx(REF["V_star_r_LP"], abs=1e-6)
    rows = list(csv.DictReader((out / "results.csv").open()))
    assert len(rows) == 60 and list(rows[0])[:7] == list(COLUMNS)
    m = make("ding-random:seed=10")
    direct = cmdp_rl.pg.methods.run(m, "crpo", 30)
    crpo = [r for r in rows if r["algorithm"] == "crpo"]
    assert [int(r["iteration"]) for r in crpo] == list(range(1, 31))
    assert np.allclose([float(r["value"]) for r in crpo], direct.values, atol=1e-12)
    gaps = np.array([float(r["value_gap"]) for r in crpo])
    assert np.allclose([float(r["avg_value_gap"]) for r in crpo], np.cumsum(gaps) / np.arange(1, 31))
    signed = np.array([float(r["signed_violation"]) for r in crpo])
    assert np.allclose(signed, direct.costs[:, 0] - m.c_bar[0])
    assert np.allclose([float(r["violation"]) for r in crpo], np.maximum(signed, 0))
    assert (out / "gap.png").stat().st_size > 0 and (out / "violation.png").stat().st_size > 0


def test_cli_pg_refusals_write_nothing(tmp_path, capsys):
    from cmdp_rl.cli import main

    fresh = tmp_path / "fresh"
    cases = [
        ["pg", "1a", "--out", str(fresh)],  # finite horizon
        ["pg", "ding-random", "--algos", "ppo", "--out", str(fresh)],
        ["pg", "ding-random", "--eta", "0.1", "--out", str(fresh)],  # a CRPO step size for NPG-PD
        ["pg", "ding-random", "--exact", "--samples", "3", "--out", str(fresh)],
        ["pg", "ding-random", "--eta1", "-1", "--out", str(fresh)],
        ["pg", "ding-random", "--iterations", "0", "--out", str(fresh)],
    ]
    for argv in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "Traceback" not in err
        assert not fresh.exists()
    done = tmp_path / "done"
    assert main(["pg", "ding-random", "--iterations", "3", "--out", str(done)]) == 0
    before = (done / "results.csv").read_bytes()
    assert main(["pg", "ding-random", "--iterations", "5", "--out", str(done)]) == 2
    assert (done / "results.csv").read_bytes() == before
    assert main(["pg", "ding-random", "--iterations", "5", "--out", str(done), "--force"]) == 0
    assert len((done / "results.csv").read_text().splitlines()) == 6


@pytest.mark.parametrize("algorithm", ["npg-pd", "crpo"])
def test_a_model_in_other_units_runs_on_its_unit_image(algorithm):
    # rewards spanning [0, 1] exactly, costs too: the scaled model's unit image is the model itself,
    # so every iterate is the same policy and the numbers transform affinely (the rule of 'Units')
    rng = np.random.default_rng(3)
    P = rng.dirichlet(np.ones(4), size=(4, 2))
    r = rng.uniform(size=(4, 2))
    r[0, 0], r[1, 1] = 0.0, 1.0
    c = rng.uniform(size=(1, 4, 2))
    c[0, 0, 1], c[0, 2, 0] = 0.0, 1.0
    gamma = 0.8
    unit = CMDP(P, r, c, [2.0], 0, gamma=gamma)
    big = CMDP(P, 100.0 * r, 30.0 * c, [60.0], 0, gamma=gamma)
    a = cmdp_rl.pg.run(unit, algorithm, 40)
    b = cmdp_rl.pg.run(big, algorithm, 40)
    np.testing.assert_allclose(b.policies, a.policies, atol=1e-9)
    np.testing.assert_allclose(b.values, 100.0 * a.values, rtol=1e-9)
    np.testing.assert_allclose(b.costs, 30.0 * a.costs, rtol=1e-9)
    np.testing.assert_allclose(b.multipliers, a.multipliers * 100.0 / 30.0, rtol=1e-9)
    assert b.initial_value == pytest.approx(100.0 * a.initial_value)
    # the values are the policies' own on the big model (an independent evaluation)
    assert b.values[-1] == pytest.approx(evaluate(big, b.policy).value, rel=1e-9)
