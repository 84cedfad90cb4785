"""Optimistic-GMBL and Online-CRL: determinism, convergence, modes, CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cmdp_rl import CMDP, CMDPInputError, random_cmdp
from cmdp_rl.cli import main
from cmdp_rl.learners import EpisodicEnv, GenerativeModel, OnlineCRL, OptimisticGMBL, Scorer, checkpoints


@pytest.fixture(scope="module")
def small() -> CMDP:
    return random_cmdp(4, 2, 4, 1, seed=3, slack=0.3, support=2)


def _gen(seed: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed))


def test_gmbl_deterministic(small: CMDP) -> None:
    sc = Scorer.for_model(small)
    a = OptimisticGMBL(small, 0.1, samples_per_pair=50).fit(GenerativeModel(small, _gen(1)), sc)
    b = OptimisticGMBL(small, 0.1, samples_per_pair=50).fit(GenerativeModel(small, _gen(1)), sc)
    assert np.array_equal(a.counts, b.counts) and np.array_equal(a.policy, b.policy)
    assert a.value_gap == b.value_gap and a.samples == 50 * small.S * small.A


def test_gmbl_converges(small: CMDP) -> None:
    sc = Scorer.for_model(small)
    path = OptimisticGMBL(small, 0.1, samples_per_pair=1).fit_path(
        GenerativeModel(small, _gen(2)), [10, 100, 20_000], sc
    )
    last = path[-1]
    assert abs(last.value_gap) < 0.05 and last.violation < 0.05
    assert last.counts.sum() == 20_000 * small.S * small.A


def test_online_crl_deterministic_and_converges(small: CMDP) -> None:
    sc = Scorer.for_model(small)
    runs = [OnlineCRL(small, 0.1, episodes=1500).fit(EpisodicEnv(small, _gen(5)), sc) for _ in range(2)]
    a, b = runs
    assert np.array_equal(a.value_gap, b.value_gap) and (a.counts != b.counts).nnz == 0
    assert a.counts.sum() == 1500 * small.H
    tail = slice(-100, None)
    assert np.mean(np.abs(a.value_gap[tail])) < 0.05
    assert np.mean(a.violation[tail]) < 0.05
    assert a.bad_episodes(0.05) >= a.bad_episodes(0.5)


def test_online_crl_warm_start_matches_cold(small: CMDP) -> None:
    sc = Scorer.for_model(small)
    warm = OnlineCRL(small, 0.1, episodes=60).fit(EpisodicEnv(small, _gen(7)), sc)
    cold = OnlineCRL(small, 0.1, episodes=60, warm_start=False).fit(EpisodicEnv(small, _gen(7)), sc)
    assert np.allclose(warm.optimistic_value, cold.optimistic_value, rtol=1e-8)


def test_online_crl_literal_lp_agrees(small: CMDP) -> None:
    sc = Scorer.for_model(small)
    fast = OnlineCRL(small, 0.1, episodes=15).fit(EpisodicEnv(small, _gen(8)), sc)
    lp = OnlineCRL(small, 0.1, episodes=15, method="lp").fit(EpisodicEnv(small, _gen(8)), sc)
    assert np.allclose(fast.optimistic_value, lp.optimistic_value, rtol=1e-6)


def test_theory_mode(small: CMDP) -> None:
    crl = OnlineCRL(small, 0.1, eps=0.5, max_episodes=5)
    res = crl.fit(EpisodicEnv(small, _gen(0)))
    assert res.episodes == 5 and res.stopped == "max_episodes"
    assert crl.U > 1e6
    with pytest.raises(CMDPInputError, match="max_episodes"):
        OnlineCRL(small, 0.1, eps=0.5)
    with pytest.raises(CMDPInputError, match="exactly one"):
        OnlineCRL(small, 0.1, eps=0.5, episodes=3)
    with pytest.raises(CMDPInputError, match="Theorem 1"):
        OptimisticGMBL(small, 0.1, eps=0.9)


def test_infeasible_true_model_is_reported() -> None:
    bad = random_cmdp(4, 2, 3, 1, seed=0, slack=-0.5)
    with pytest.raises(CMDPInputError, match="Assumption 2"):
        Scorer.for_model(bad)


def test_checkpoints() -> None:
    cp = checkpoints(1000, 20)
    assert cp[0] == 1 and cp[-1] == 1000 and np.all(np.diff(cp) > 0)


def test_cli_learn(tmp_path, capsys, small: CMDP) -> None:
    path = tmp_path / "m.npz"
    small.save(path)
    assert main(["learn", str(path), "--algo", "gmbl", "--samples-per-pair", "200", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["samples"] == 200 * small.S * small.A and out["elp_status"] == "optimal"
    assert main(["learn", str(path), "--algo", "online-crl", "--episodes", "30", "--json", "--seed", "4"]) == 0
    out2 = json.loads(capsys.readouterr().out)
    assert out2["episodes"] == 30 and out2["samples"] == 30 * small.H
    assert main(["learn", str(path), "--algo", "gmbl", "--episodes", "30"]) == 2
    assert "--episodes" in capsys.readouterr().err
    assert main(["learn", str(path), "--algo", "gmbl"]) == 2


def test_online_crl_survives_an_infeasible_elp() -> None:
    """A true CMDP whose threshold no policy meets: once the confidence set is
    tight the ELP is infeasible too; the learner records it and plays the
    plausible policy of least worst excess instead of crashing."""
    bad = random_cmdp(3, 2, 3, 1, seed=2, slack=-0.2, support=2)
    assert bad.c_bar[0] >= 0
    res = OnlineCRL(bad, 0.5, episodes=400).fit(EpisodicEnv(bad, _gen(3)))
    assert res.infeasible[-50:].all()
    assert not res.infeasible[0]  # the first, unconstrained-by-data ELP is optimistic
    assert np.isnan(res.value_gap).all()  # no scorer: metrics are left undefined
    assert np.allclose(res.policy.sum(-1), 1.0)


def test_sampling_interfaces_follow_the_kernel(small: CMDP) -> None:
    """Empirical transition frequencies of the generative model and of episode
    rollouts match P (fixed seed; 5 binomial standard deviations per entry), and
    rollouts start at s0 and chain states."""
    n = 20_000
    counts = GenerativeModel(small, _gen(11)).sample_counts(n)
    sd = np.sqrt(small.P * (1 - small.P) / n)
    assert np.all(np.abs(counts / n - small.P) <= 5 * sd + 1e-12)
    env = EpisodicEnv(small, _gen(12))
    uniform = np.full((small.H, small.S, small.A), 1.0 / small.A)
    tr = np.zeros_like(counts)
    for _ in range(20_000):
        s, a, nx = env.rollout(uniform)
        assert s[0] == small.s0 and np.array_equal(s[1:], nx[:-1])
        np.add.at(tr, (s, a, nx), 1)
    n_sa = tr.sum(-1, keepdims=True)
    seen = n_sa[..., 0] > 2000
    phat = tr / np.maximum(n_sa, 1)
    sd2 = np.sqrt(small.P * (1 - small.P) / np.maximum(n_sa, 1))
    assert seen.sum() >= 2
    assert np.all((np.abs(phat - small.P) <= 5 * sd2 + 1e-12)[seen])
