"""The arena's learners: one interface, the equalities between them, safety, OptDual's dual."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from conftest import dense_reference_lp
from scipy.optimize import linprog

from cmdp_rl import CMDP, CMDPInputError, evaluate, make, random_cmdp
from cmdp_rl.learners import (
    DOPE,
    LEARNERS,
    ONLINE_ALGORITHMS,
    SAFE_ALGORITHMS,
    EpisodicEnv,
    Learner,
    LearnerRecord,
    OnlineCRL,
    OptCMDP,
    OptDual,
    OptPess,
    Plugin,
    Scorer,
    make_learner,
)
from cmdp_rl.learners.episodes import EpisodePlan


def _env(model: CMDP, seed: int) -> EpisodicEnv:
    return EpisodicEnv(model, np.random.default_rng(np.random.SeedSequence(seed)))


@pytest.fixture(scope="module")
def small() -> CMDP:
    return random_cmdp(4, 2, 3, 1, seed=3, slack=0.3, support=3)


def eighths() -> CMDP:
    """A CMDP whose kernel entries are multiples of 1/8 (counts = 8 P are exactly proportional)."""
    P = np.zeros((3, 2, 3))
    P[0, 0] = [2, 3, 3]
    P[0, 1] = [6, 1, 1]
    P[1, 0] = [0, 4, 4]
    P[1, 1] = [1, 1, 6]
    P[2, 0] = [5, 0, 3]
    P[2, 1] = [3, 3, 2]
    r = np.array([[0.2, 1.0], [0.6, 0.9], [0.0, 0.4]])
    c = np.array([[[0.0, 1.0], [0.3, 0.8], [0.5, 0.1]]])
    return CMDP(P / 8.0, r, c, [1.2], s0=0, H=3)


def stay_or_go() -> tuple[CMDP, np.ndarray, np.ndarray]:
    """Two states, two actions, H = 2, a wide Slater gap: "stay" (action 1) in state 0 costs 0 and
    never leaves; "go" (action 0) costs 1 and reaches the costly state 1 with probability 0.7.
    The transitions matter: the cost at h = 1 depends on where "go" lands. Returns the model,
    the "stay" policy (cost 0) and its exact costs."""
    P = np.zeros((2, 2, 2))
    P[0, 0] = [0.3, 0.7]
    P[0, 1] = [1.0, 0.0]
    P[1, 0] = [0.2, 0.8]
    P[1, 1] = [0.6, 0.4]
    r = np.array([[1.0, 0.0], [1.0, 0.5]])
    c = np.array([[[1.0, 0.0], [1.0, 1.0]]])
    m = CMDP(P, r, c, [1.5], s0=0, H=2)
    stay = np.zeros((2, 2, 2))
    stay[:, :, 1] = 1.0
    return m, stay, evaluate(m, stay).costs


@pytest.mark.slow
def test_every_learner_implements_the_interface(small: CMDP) -> None:
    assert set(ONLINE_ALGORITHMS) == {
        "online-crl",
        "plugin",
        "optcmdp",
        "optcmdp-bonus",
        "optdual",
        "optpess",
        "dope",
        "safe-crl",
        "dope-plus",
        "optpess-pd",
        "rpd",
    }
    sc = Scorer.for_model(small)
    for name in ONLINE_ALGORITHMS:
        learner = make_learner(name, small, 0.1, episodes=20)
        assert isinstance(learner, Learner) and learner.name == name
        rec = learner.fit(_env(small, 1), sc)
        assert isinstance(rec, LearnerRecord) and rec.algorithm == name
        assert rec.episodes == 20 and rec.counts.sum() == 20 * small.H
        assert rec.costs.shape == (20, small.N) and rec.value.shape == (20,)
        # the record's exact value and costs are those of the played policy on the true model (a
        # mixed policy's are its components' weighted sums: tests/learners/test_safe_crl.py)
        if name != "safe-crl":
            ev = evaluate(small, rec.policy)
            assert rec.value[-1] == pytest.approx(ev.value, abs=1e-12)
            np.testing.assert_allclose(rec.costs[-1], ev.costs, atol=1e-12)
        np.testing.assert_allclose(rec.value_gap, sc.v_star - rec.value, atol=1e-12)
        assert set(rec.episode_status) <= {"optimistic", "baseline", "infeasible"}
        assert np.all(rec.plan_seconds >= 0) and rec.plan_seconds.size == 20


def test_learners_never_read_the_kernel(small: CMDP) -> None:
    blind = copy.copy(small)
    blind.__dict__.update(_kernel=None)  # the kernel withheld: reading P or K fails
    with pytest.raises((AttributeError, TypeError, ValueError)):
        _ = blind.K
    with pytest.raises((AttributeError, TypeError, ValueError)):
        _ = blind.P
    safe = make_learner("dope", small, 0.1, episodes=5)
    baseline = (safe.baseline, safe.baseline_costs)  # type: ignore[attr-defined]
    sc = Scorer.for_model(small)
    for name in ONLINE_ALGORITHMS:
        kwargs = {"baseline": baseline} if name in SAFE_ALGORITHMS else {}
        learner = make_learner(name, blind, 0.1, episodes=15, **kwargs)  # type: ignore[arg-type]
        a = learner.fit(_env(small, 2), sc)
        b = make_learner(name, small, 0.1, episodes=15, **kwargs).fit(_env(small, 2), sc)  # type: ignore[arg-type]
        np.testing.assert_array_equal(a.value_gap, b.value_gap)


def test_same_seed_same_record(small: CMDP) -> None:
    sc = Scorer.for_model(small)
    for name in ONLINE_ALGORITHMS:
        a, b = (make_learner(name, small, 0.1, episodes=40).fit(_env(small, 3), sc) for _ in range(2))
        for field in ("value_gap", "violation", "value", "costs", "baseline", "status", "planned_value"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=f"{name}.{field}")
        np.testing.assert_array_equal(a.counts.toarray(), b.counts.toarray(), err_msg=f"{name}.counts")


def test_record_metrics_by_hand() -> None:
    def rec(gap: list[float], viol: list[float], base: list[bool]) -> LearnerRecord:
        k = len(gap)
        z = np.zeros(k)
        return LearnerRecord(
            algorithm="x",
            value_gap=np.array(gap),
            violation=np.array(viol),
            value=z,
            costs=z[:, None],
            baseline=np.array(base),
            episode_status=np.array(["optimistic"] * k),
            planned_value=z,
            iterations=np.zeros(k, np.int64),
            min_visits=np.zeros(k, np.int64),
            plan_seconds=z,
            act_seconds=z,
            score_seconds=z,
            counts=np.zeros((1, 1, 1), np.int64),
            policy=np.ones((1, 1, 1)),
            H=2,
        )

    r = rec([0.5, -0.25, 0.0], [0.0, 2e-9, 0.5e-9], [True, False, True])
    np.testing.assert_allclose(r.cum_value_gap, [0.5, 0.25, 0.25])
    np.testing.assert_allclose(r.cum_abs_value_gap, [0.5, 0.75, 0.75])
    np.testing.assert_allclose(r.cum_violation, [0.0, 2e-9, 2.5e-9])
    assert r.violating_episodes == 1  # only 2e-9 exceeds the 1e-9 tolerance
    assert r.baseline_episodes == 2
    np.testing.assert_array_equal(r.samples, [2, 4, 6])


def test_plugin_with_proportional_counts_is_the_lp_optimum() -> None:
    m = eighths()
    counts = np.rint(8 * m.P).astype(np.int64) * 1000  # exactly proportional to P
    plan = Plugin(m, 0.1, episodes=10).planner()(counts)
    _, v_star = dense_reference_lp(m)  # an independent LP (interior point, entry by entry)
    assert plan.status == "optimistic"
    assert plan.value == pytest.approx(v_star, abs=1e-8)
    ev = evaluate(m, plan.policy)
    assert ev.value == pytest.approx(v_star, abs=1e-8) and ev.costs[0] <= m.c_bar[0] + 1e-8


def test_optcmdp_with_huge_counts_equals_plugin() -> None:
    m = make("1a")
    counts = np.rint(m.P * 1e6).astype(np.int64) * 10**9  # n(s, a) ~ 1e15 (< 2**53): the radii are ~1e-7
    plugin = Plugin(m, 0.1, episodes=10).planner()(counts)
    opt = OptCMDP(m, 0.1, episodes=10).planner()(counts)
    assert opt.value == pytest.approx(plugin.value, abs=1e-5)
    a, b = evaluate(m, opt.policy), evaluate(m, plugin.policy)
    assert a.value == pytest.approx(b.value, abs=1e-5)
    np.testing.assert_allclose(a.costs, b.costs, atol=1e-5)
    # and optimism is real with few counts: the optimistic value is larger
    few = OptCMDP(m, 0.1, episodes=10).planner()(np.rint(m.P * 5).astype(np.int64))
    assert few.value > plugin.value + 0.1


@pytest.mark.parametrize("name", ["plugin", "optcmdp", "optcmdp-bonus", "optdual", "optpess", "dope", "dope-plus"])
def test_the_baselines_planners_check_their_counts_with_the_one_validator(small: CMDP, name: str) -> None:
    """Every baseline's planner builds its set through the kernel layer, so its counts obey the
    library's one counts rule, in both layouts: a negative entry, or a pair above 2**53 samples
    (not exact in float64), is refused with the entry named; the counts are left as they were."""
    import scipy.sparse as sp

    safe = make_learner("dope", small, 0.1, episodes=5)
    extra = {"baseline": (safe.baseline, safe.baseline_costs)} if name in ("optpess", "dope", "dope-plus") else {}  # type: ignore[attr-defined]
    if name in ("dope", "dope-plus"):
        extra["k0"] = 0  # type: ignore[assignment]
    S, A = small.S, small.A
    negative = np.zeros((S, A, S), dtype=np.int64)
    negative[0, 0, 1] = -1
    huge = np.zeros((S, A, S), dtype=np.int64)
    huge[0, 0, :2] = 2**52 + 1  # the pair holds 2**53 + 2 samples
    refusals = ((negative, r"^counts\[0, 0, 1\]: must be a non-negative integer"), (huge, r"^counts\[0, 0, :\]: holds"))
    for bad, rule in refusals:
        before = bad.copy()
        with pytest.raises(CMDPInputError, match=rule):
            make_learner(name, small, 0.1, episodes=5, **extra).planner()(bad)  # type: ignore[arg-type]
        assert np.array_equal(bad, before)
    csr = sp.csr_array(negative.reshape(S * A, S))
    sparse_rule = r"^counts\[0, 1\] \(state 0, action 0, next state 1\): must be a non-negative"
    with pytest.raises(CMDPInputError, match=sparse_rule):
        make_learner(name, small, 0.1, episodes=5, statistics="sparse", **extra).planner()(csr)  # type: ignore[arg-type]


def test_dope_without_bonus_and_baseline_phase_equals_optcmdp(small: CMDP) -> None:
    sc = Scorer.for_model(small)
    opt = OptCMDP(small, 0.1, episodes=60).fit(_env(small, 4), sc)
    base = make_learner("dope", small, 0.1, episodes=5)
    dope = DOPE(
        small,
        0.1,
        episodes=60,
        baseline=base.baseline,  # type: ignore[attr-defined]
        baseline_costs=base.baseline_costs,  # type: ignore[attr-defined]
        bonus_scale=0.0,
        k0=0,
    ).fit(_env(small, 4), sc)
    assert dope.baseline_episodes == (dope.episode_status == "infeasible").sum()
    if dope.baseline_episodes == 0:
        np.testing.assert_array_equal(dope.value_gap, opt.value_gap)
        np.testing.assert_array_equal(dope.counts.toarray(), opt.counts.toarray())
        np.testing.assert_allclose(dope.planned_value, opt.planned_value, rtol=1e-12)
    assert dope.baseline_episodes == 0  # the small problem's ELP is always feasible


def test_optpess_without_bonus_and_test_equals_plugin(small: CMDP) -> None:
    sc = Scorer.for_model(small)
    plug = Plugin(small, 0.1, episodes=60).fit(_env(small, 5), sc)
    base = make_learner("optpess", small, 0.1, episodes=5)
    pess = OptPess(
        small,
        0.1,
        episodes=60,
        baseline=base.baseline,  # type: ignore[attr-defined]
        baseline_costs=base.baseline_costs,  # type: ignore[attr-defined]
        bonus_scale=0.0,
        safety_test=False,
    ).fit(_env(small, 5), sc)
    assert (plug.episode_status == "optimistic").all() and (pess.episode_status == "optimistic").all()
    np.testing.assert_array_equal(pess.value_gap, plug.value_gap)
    np.testing.assert_array_equal(pess.counts.toarray(), plug.counts.toarray())


@pytest.mark.slow
@pytest.mark.parametrize(("name", "episodes"), [("dope", 2000), ("dope-plus", 2000), ("optpess", 4000)])
def test_safe_learners_learn_and_never_violate(name: str, episodes: int) -> None:
    # OptPess-LP's test passes once n(s, a) of the baseline's pair is ~3,000: about 1,400 episodes here
    m, stay, stay_costs = stay_or_go()
    sc = Scorer.for_model(m)
    for seed in range(5):
        learner = make_learner(name, m, 0.1, episodes=episodes, baseline=(stay, stay_costs))
        rec = learner.fit(_env(m, 100 + seed), sc)
        learned = int((rec.episode_status == "optimistic").sum())
        assert learned > rec.episodes / 2, f"{name} seed {seed}: only {learned} learned episodes"
        assert rec.violating_episodes == 0, f"{name} seed {seed}"
        # the learned policies are not the baseline: they take the risky action sometimes
        assert rec.value[rec.episode_status == "optimistic"].max() > evaluate(m, stay).value + 1e-3


def test_unsafe_learners_may_violate_on_the_same_problem() -> None:
    m, _, _ = stay_or_go()
    sc = Scorer.for_model(m)
    rec = make_learner("plugin", m, 0.1, episodes=300).fit(_env(m, 7), sc)
    assert rec.violating_episodes > 0 and rec.baseline_episodes == 0


def test_optdual_multiplier_approaches_the_known_dual() -> None:
    # one state, H = 1: action 0 pays 1 and costs 1, action 1 pays 0 and costs 0, c_bar = 0.5.
    # By hand: max p s.t. p <= 0.5, so V* = 0.5 and the multiplier is lambda* = 1 (reward per cost).
    m = CMDP(np.ones((1, 2, 1)), np.array([[1.0, 0.0]]), np.array([[[1.0, 0.0]]]), [0.5], s0=0, H=1)
    res = linprog(-np.array([1.0, 0.0]), A_ub=[[1.0, 0.0]], b_ub=[0.5], A_eq=[[1.0, 1.0]], b_eq=[1.0], method="highs")
    lp_dual = -float(res.ineqlin.marginals[0])
    assert lp_dual == pytest.approx(1.0)
    K = 2500
    rec = OptDual(m, 0.1, episodes=K).fit(_env(m, 8), Scorer.for_model(m))
    lam = rec.info["multipliers"][:, 0]
    assert lam[0] == 0.0 and lam.shape == (K,)
    step = rec.settings["step"]
    assert step == pytest.approx(1.0 / np.sqrt(K))
    # from 0 it climbs by step/2 per episode; after that it stays within one step of lambda*
    assert np.all(np.abs(lam[K // 2 :] - lp_dual) <= step)


def test_optdual_on_a_random_problem_tracks_the_lp_dual() -> None:
    m = random_cmdp(3, 2, 3, 1, seed=11, slack=0.3, support=3)
    # the LP dual by an independent formulation: scipy's HiGHS on the occupancy LP
    from cmdp_rl.planning.lp import flow_constraints

    A_eq, b_eq = flow_constraints(m.P, m.H, m.s0)
    cost = np.tile(m.c.reshape(1, -1), (1, m.H))
    res = linprog(-np.tile(m.r.ravel(), m.H), A_ub=cost, b_ub=m.c_bar, A_eq=A_eq, b_eq=b_eq, method="highs")
    lp_dual = -float(res.ineqlin.marginals[0])
    K = 4000
    rec = OptDual(m, 0.1, episodes=K).fit(_env(m, 9), Scorer.for_model(m))
    lam = rec.info["multipliers"][-500:, 0].mean()
    assert lam == pytest.approx(lp_dual, abs=0.35 * max(lp_dual, 1.0))


def test_safe_learners_refuse_a_problem_without_slater_gap() -> None:
    m = make("2")  # threshold 0: no policy is strictly safe
    for name in ("optpess", "dope", "dope-plus"):
        with pytest.raises(CMDPInputError, match="Slater gap"):
            make_learner(name, m, 0.1, episodes=10)
    small = random_cmdp(3, 2, 2, 1, seed=1)
    with pytest.raises(CMDPInputError, match="Slater gap"):
        DOPE(small, episodes=5, baseline=np.full((2, 3, 2), 0.5), baseline_costs=small.c_bar)


def test_bad_arguments_are_named(small: CMDP) -> None:
    with pytest.raises(CMDPInputError, match="bonus_scale"):
        Plugin(small, episodes=5, bonus_scale=-1)
    with pytest.raises(CMDPInputError, match="episodes"):
        OptCMDP(small, episodes=0)
    with pytest.raises(CMDPInputError, match="delta"):
        OptDual(small, 1.5, episodes=5)
    with pytest.raises(CMDPInputError, match="algo"):
        make_learner("ucrl", small, episodes=5)
    base = make_learner("dope", small, episodes=5)
    with pytest.raises(CMDPInputError, match="baseline"):
        DOPE(small, episodes=5, baseline=np.ones((1, 1, 1)), baseline_costs=[0.0])
    with pytest.raises(CMDPInputError, match="k0"):
        DOPE(small, episodes=5, baseline=base.baseline, baseline_costs=base.baseline_costs, k0=-1)  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match="cmdp"):
        OptPess(None, episodes=5, baseline=None, baseline_costs=None)  # type: ignore[arg-type]


def test_dope_plays_its_baseline_for_k0_episodes(small: CMDP) -> None:
    base = make_learner("dope", small, 0.1, episodes=5)
    dope = DOPE(
        small,
        0.1,
        episodes=30,
        baseline=base.baseline,  # type: ignore[attr-defined]
        baseline_costs=base.baseline_costs,  # type: ignore[attr-defined]
        k0=12,
    )
    rec = dope.fit(_env(small, 6), Scorer.for_model(small))
    assert (rec.episode_status[:12] == "baseline").all() and rec.baseline[:12].all()
    assert not (rec.episode_status[12:] == "baseline").any()
    np.testing.assert_allclose(rec.costs[:12], np.broadcast_to(base.baseline_costs, (12, 1)), atol=1e-12)  # type: ignore[attr-defined]
    assert rec.settings["k0"] == 12


def test_online_crl_is_a_learner_with_the_common_record(small: CMDP) -> None:
    rec = OnlineCRL(small, 0.1, episodes=10).fit(_env(small, 1), Scorer.for_model(small))
    assert isinstance(rec, LearnerRecord) and rec.algorithm == "online-crl"
    assert np.array_equal(rec.infeasible, rec.episode_status == "infeasible")
    assert LEARNERS["online-crl"] is OnlineCRL


def test_episode_plan_default_is_not_baseline() -> None:
    assert EpisodePlan(np.ones((1, 1, 1)), "optimistic", 0.0).baseline is False
