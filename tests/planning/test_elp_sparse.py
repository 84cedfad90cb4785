"""The extended LP over a sparse confidence set against the dense extended LP (an independent
implementation: dense (S, A, S) boxes, compiled column generation), on the same counts."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from cmdp_rl import CMDPInputError, EpisodicEnv, OnlineCRL, learn, random_cmdp
from cmdp_rl.confidence.box import Box
from cmdp_rl.confidence.sparse_box import SparseBox
from cmdp_rl.envs.generators import garnet
from cmdp_rl.envs.gym_env import CMDPEnv
from cmdp_rl.model.cmdp import KnownParts
from cmdp_rl.planning.elp import plan_on_box
from cmdp_rl.planning.elp_sparse import solve_sparse_elp
from cmdp_rl.simulators import estimates as simulator  # where a simulator run chooses sparse statistics


def _instance(seed: int) -> tuple[object, np.ndarray]:
    rng = np.random.default_rng(seed)
    S, A, H, N = int(rng.integers(3, 12)), int(rng.integers(2, 4)), int(rng.integers(2, 7)), int(rng.integers(0, 4))
    m = random_cmdp(S, A, H, N, seed=seed, support=3)
    # sparse, uneven counts: many pairs unvisited, many successors never seen
    counts = (rng.poisson(rng.uniform(0, 6), size=(S, A, S)) * (rng.random((S, A, S)) < 0.5)).astype(np.int64)
    return m, counts


@pytest.mark.slow
@pytest.mark.parametrize("rule", ["paper", "empirical-bernstein"])
def test_sparse_elp_equals_the_dense_elp_on_random_counts(rule: str) -> None:
    for seed in range(40):
        m, counts = _instance(seed)
        S, A, H = m.S, m.A, m.H
        dense = plan_on_box(KnownParts.of(m), Box.from_counts(counts, 0.01, rule))
        sbox = SparseBox.from_counts(sp.csr_array(counts.reshape(S * A, S)), 0.01, rule)
        plan = solve_sparse_elp(m.r, m.c, m.c_bar, m.s0, H, sbox)
        assert plan.status == dense.status, seed
        if dense.feasible:
            assert abs(plan.value - dense.value) <= 1e-7 * H, seed
            assert np.all(plan.costs <= m.c_bar + 1e-7) and 0.0 <= plan.gap <= 1e-9 * H + 1e-12
        else:
            assert np.isnan(plan.gap)
        assert plan.policy.shape == (H, S, A) and np.allclose(plan.policy.sum(-1), 1.0)


def test_online_crl_replans_from_csr_counts_like_from_dense_counts() -> None:
    m = garnet(25, 3, 3, 2, 0.5, 6, 1)
    rng = np.random.default_rng(0)
    counts = (rng.poisson(2.0, size=(m.S, m.A, m.S)) * (m.P > 0)).astype(np.int64)
    crl = OnlineCRL(m, 0.1, episodes=100)
    dense = crl.replan(counts, None)
    sparse = crl.replan(sp.csr_array(counts.reshape(m.S * m.A, m.S)), None)
    assert sparse.status == dense.status and abs(sparse.value - dense.value) <= 1e-7 * m.H
    # warm-started from its own columns: the same optimum again
    again = crl.replan(sp.csr_array(counts.reshape(m.S * m.A, m.S)), sparse)
    assert abs(again.value - sparse.value) <= 1e-7 * m.H and again.info["warm_columns"]


def test_sparse_statistics_option() -> None:
    m = garnet(10, 2, 2, 1, 0.5, 4, 0)
    with pytest.raises(CMDPInputError, match=r"^statistics: "):
        OnlineCRL(m, 0.1, episodes=5, statistics="csr")
    with pytest.raises(CMDPInputError, match=r"^statistics: 'sparse' plans from CSR counts"):
        OnlineCRL(m, 0.1, episodes=5, statistics="sparse").fit(EpisodicEnv(m, np.random.default_rng(0)))


def test_a_simulator_run_on_sparse_statistics_is_the_dense_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forced onto the sparse path (visited-only CSR counts, sparse extended LP), a run has the
    dense path's optimistic value at every episode. Where optima tie the two may pick other
    (equally optimistic) policies; on this seed they play the same episodes, bit for bit."""
    g = garnet(30, 3, 3, 1, 0.5, 6, 0)
    kw = dict(H=g.H, c_bar=g.c_bar, episodes=60, r=g.r, c=g.c, s0=g.s0, seed=2)
    monkeypatch.setattr(simulator, "SPARSE_ABOVE_BYTES", 2**62)
    dense = learn(CMDPEnv(g), **kw)
    monkeypatch.setattr(simulator, "SPARSE_ABOVE_BYTES", 0)
    sparse = learn(CMDPEnv(g), **kw)
    assert np.array_equal(sparse.realized_return, dense.realized_return)
    np.testing.assert_allclose(sparse.planned_value, dense.planned_value, rtol=0, atol=1e-9)
    assert (sparse.counts != dense.counts).nnz == 0


@pytest.mark.parametrize("algo", ["plugin", "optcmdp", "optcmdp-bonus", "optdual", "optpess", "dope"])
def test_every_baseline_plans_the_same_from_sparse_counts(algo: str) -> None:
    """Each baseline's planner, fed the same growing counts dense and as CSR, plans the same
    (optimistic or pessimistic) value with the same status every episode (its own state, e.g.
    OptDual's multipliers or DOPE's episode count, follows along)."""
    from cmdp_rl.learners import make_learner
    from cmdp_rl.planning.baseline import safe_baseline

    m = garnet(12, 3, 3, 1, 0.5, 5, 4)
    base = safe_baseline(m)
    kw = {"baseline": (base.policy, base.costs)} if algo in ("optpess", "dope") else {}
    if algo == "dope":
        kw["k0"] = 2
    dense = make_learner(algo, m, 0.1, episodes=50, **kw).planner()
    sparse_learner = make_learner(algo, m, 0.1, episodes=50, statistics="sparse", **kw)
    sparse = sparse_learner.planner()
    rng = np.random.default_rng(1)
    counts = np.zeros((m.S, m.A, m.S), dtype=np.int64)
    for _ in range(8):
        counts += (rng.poisson(1.5, size=counts.shape) * (m.P > 0)).astype(np.int64)
        a = dense(counts)
        b = sparse(sp.csr_array(counts.reshape(m.S * m.A, m.S)))
        assert (a.status, a.baseline) == (b.status, b.baseline)
        assert a.value == pytest.approx(b.value, abs=1e-7 * m.H, nan_ok=True)
    with pytest.raises(CMDPInputError, match=r"^statistics: 'sparse'"):
        sparse_learner.fit(EpisodicEnv(m, np.random.default_rng(0)))


@pytest.mark.parametrize("scenario", ["1a", "1b", "2"])
def test_the_paper_scenarios_plan_the_same_from_sparse_counts(scenario: str) -> None:
    """Online-CRL's re-plan on the paper's scenarios from sampled counts, dense and CSR."""
    from cmdp_rl import GenerativeModel, scenario_cmdp

    m = scenario_cmdp(scenario)
    crl = OnlineCRL(m, 0.1, episodes=1000)
    for n in (1, 3, 20):
        counts = GenerativeModel(m, np.random.default_rng(n)).sample_counts(n)
        dense = crl.replan(counts, None)
        sparse = crl.replan(sp.csr_array(counts.reshape(m.S * m.A, m.S)), None)
        assert sparse.status == dense.status and abs(sparse.value - dense.value) <= 1e-7 * m.H


def test_solve_sparse_elp_refuses_bad_input() -> None:
    m, counts = _instance(3)
    box = SparseBox.from_counts(sp.csr_array(counts.reshape(m.S * m.A, m.S)), 0.01, "paper")
    with pytest.raises(CMDPInputError, match=r"^r: expected shape"):
        solve_sparse_elp(m.r[:-1], m.c, m.c_bar, m.s0, m.H, box)
    with pytest.raises(CMDPInputError, match=r"^c, c_bar: "):
        solve_sparse_elp(m.r, m.c, np.append(m.c_bar, 1.0), m.s0, m.H, box)
    with pytest.raises(CMDPInputError, match=r"^s0, H: "):
        solve_sparse_elp(m.r, m.c, m.c_bar, m.S, m.H, box)
    with pytest.raises(CMDPInputError, match=r"^box: "):
        solve_sparse_elp(m.r, m.c, m.c_bar, m.s0, m.H, box.to_box())
