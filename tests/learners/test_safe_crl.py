"""``safe-crl``: every episode's mixed policy is certified safe (checked against exact evaluation on
the true model), it departs from the baseline and learns, and its pieces (the mixture LP, the
robust candidates, the certified bounds) agree with independent computations."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy.optimize import linprog

from cmdp_rl import CMDP, CMDPInputError, random_cmdp
from cmdp_rl.confidence.sets import empirical_box
from cmdp_rl.envs.registry import make
from cmdp_rl.evaluation.evaluate import value_and_costs
from cmdp_rl.learners import Scorer, make_learner
from cmdp_rl.learners.environment import EpisodicEnv
from cmdp_rl.learners.episodes import EpisodePlan, mixed_values
from cmdp_rl.learners.safe_crl import SafeCRL, certified_bounds, mix, robust_lagrangian
from cmdp_rl.model.cmdp import KnownParts
from cmdp_rl.planning import solve
from cmdp_rl.planning.baseline import safe_baseline


def _fit(m: CMDP, episodes: int, seed: int, delta: float = 0.05, **kw: Any) -> Any:
    learner = make_learner("safe-crl", m, delta, episodes=episodes, **kw)
    return learner.fit(EpisodicEnv(m, np.random.default_rng(seed)), Scorer.for_model(m))


@pytest.mark.parametrize("seed", range(4))
def test_no_episode_violates_on_random_models(seed: int) -> None:
    """The guarantee, checked by the scorer's exact evaluation of every played mixture on the true
    model (two constraints, thresholds near the optimum's costs: the binding case)."""
    m = random_cmdp(6, 3, 5, 2, seed=seed, slack=0.15, support=3)
    rec = _fit(m, 300, seed)
    assert rec.violating_episodes == 0
    assert float(np.max(rec.costs - m.c_bar)) <= 1e-9
    assert rec.baseline_episodes < 300  # it departs from the baseline


def test_media_control_learns_safely() -> None:
    """DOPE's problem at the DOPE preset's settings: no violation, the data-free certified policy (the
    fast action in the first five steps costs exactly 5 whatever the kernel) within ten episodes, and
    a gap that falls below that policy's (0.685) as the data come in."""
    m = make("media-control")
    rec = _fit(m, 1500, 0, delta=0.01)
    assert rec.violating_episodes == 0
    assert rec.baseline_episodes == 0
    assert np.any(np.isclose(rec.costs[:10, 0], 5.0, atol=1e-9))
    assert float(np.mean(rec.value_gap[-300:])) < 0.6
    assert float(np.mean(rec.value_gap[-300:])) < float(np.mean(rec.value_gap[:300]))


def test_mixture_scores_and_draws() -> None:
    m = random_cmdp(4, 2, 3, 1, seed=1)
    a, b = solve(m).policy, np.full((m.H, m.S, m.A), 1.0 / m.A)
    plan = EpisodePlan(a, "optimistic", 0.0, mixture=(np.stack([a, b]), np.array([0.25, 0.75])))
    value, costs = mixed_values(lambda pol: value_and_costs(m, pol), plan, a)
    va, ca = value_and_costs(m, a)
    vb, cb = value_and_costs(m, b)
    assert value == pytest.approx(0.25 * va + 0.75 * vb, rel=1e-12)
    np.testing.assert_allclose(costs, 0.25 * ca + 0.75 * cb, rtol=1e-12)
    rng = np.random.default_rng(0)
    drawn = [np.array_equal(plan.draw(rng), b) for _ in range(4000)]
    assert abs(np.mean(drawn) - 0.75) < 0.03
    plain = EpisodePlan(a, "optimistic", 0.0)
    state = np.random.default_rng(5).bit_generator.state
    rng = np.random.default_rng(5)
    assert plain.draw(rng) is a and rng.bit_generator.state == state  # no number drawn without a mixture


def test_mix_is_the_lp_optimum_and_meets_the_thresholds() -> None:
    values = np.array([3.0, 2.0, 1.0])
    costs = np.array([[6.0, 1.0], [4.0, 5.0], [1.0, 1.0]])
    c_bar = np.array([4.0, 3.0])
    w = mix(values, costs, c_bar, anchor=2)
    res = linprog(-values, A_ub=costs.T, b_ub=c_bar, A_eq=np.ones((1, 3)), b_eq=[1.0], method="highs")
    assert float(values @ w) == pytest.approx(-res.fun, rel=1e-9)
    assert np.all(w @ costs <= c_bar) and w.sum() == pytest.approx(1.0)
    with pytest.raises(CMDPInputError, match=r"^costs: expected shape \(3, 2\)"):
        mix(values, costs[:, :1], c_bar, anchor=2)
    with pytest.raises(CMDPInputError, match=r"^anchor: must index a column strictly within c_bar"):
        mix(values, costs, c_bar, anchor=0)  # its costs (6, 1) exceed c_bar (4, 3)
    # a rounding excess is moved onto the anchor: a mixture the LP would return slightly over c_bar
    over = mix(np.array([1.0, 0.0]), np.array([[1.0 + 1e-12], [0.0]]), np.array([1.0]), anchor=1)
    assert float(over @ np.array([1.0 + 1e-12, 0.0])) <= 1.0


def test_certified_bounds_on_a_single_kernel_are_the_exact_values() -> None:
    m = random_cmdp(5, 3, 4, 2, seed=3)
    counts = np.rint(m.P * 1000).astype(np.int64)
    box = empirical_box(counts)
    p_hat = counts / counts.sum(-1, keepdims=True)
    pol = solve(m).policy
    v, u = certified_bounds(box, pol, KnownParts.of(m))
    ev, ec = value_and_costs(m.replace(P=p_hat), pol)
    assert v == pytest.approx(ev, rel=1e-10)
    np.testing.assert_allclose(u, ec, rtol=1e-10)


def test_robust_lagrangian_on_a_single_kernel_is_dynamic_programming() -> None:
    """On a box of radius 0 the robust Lagrangian policy is the unconstrained optimum of ``r - t w . c``
    (the exact planner without constraints, an independent computation)."""
    m = random_cmdp(5, 3, 4, 2, seed=4)
    box = empirical_box(np.rint(m.P * 10**6).astype(np.int64))
    p_hat = np.rint(m.P * 10**6) / np.rint(m.P * 10**6).sum(-1, keepdims=True)
    w = np.array([0.5, 2.0])
    for t in (0.0, 0.3, 2.0):
        pol = robust_lagrangian(box, KnownParts.of(m), w, t)
        reward = m.r - t * np.tensordot(w, m.c, axes=1)
        reward = (reward - reward.min()) / max(float(np.ptp(reward)), 1e-12)  # into [0, 1]: same argmax
        lag = CMDP(p_hat, reward, np.zeros((0, m.S, m.A)), np.zeros(0), m.s0, m.H)
        assert value_and_costs(lag, pol)[0] == pytest.approx(solve(lag).value, rel=1e-9, abs=1e-12)


def test_options_are_checked() -> None:
    m = random_cmdp(4, 2, 3, 1, seed=2)
    base = safe_baseline(m)
    with pytest.raises(CMDPInputError, match=r"^value: must be one of"):
        SafeCRL(m, episodes=5, baseline=base.policy, baseline_costs=base.costs, value="greedy")
    with pytest.raises(CMDPInputError, match=r"^radius: must be one of"):
        SafeCRL(m, episodes=5, baseline=base.policy, baseline_costs=base.costs, radius="tight")
    learner = SafeCRL(m, episodes=5, baseline=base.policy, baseline_costs=base.costs, value="optimistic")
    assert learner.settings()["value"] == "optimistic" and learner.settings()["sampling"] == "adaptive"


def test_optimistic_values_are_also_safe() -> None:
    m = random_cmdp(6, 3, 5, 1, seed=7, slack=0.1, support=3)
    rec = _fit(m, 200, 1, value="optimistic")
    assert rec.violating_episodes == 0


def test_same_seed_same_numbers() -> None:
    m = random_cmdp(5, 2, 4, 1, seed=8, slack=0.2)
    a, b = _fit(m, 80, 3), _fit(m, 80, 3)
    np.testing.assert_array_equal(a.value, b.value)
    np.testing.assert_array_equal(a.realized_return, b.realized_return)


def test_learn_from_a_simulator_with_estimated_rewards_and_costs() -> None:
    """``cmdp_rl.learn(env)``: unknown rewards, costs and start (the pessimistic cost estimates and
    the virtual start state); the environment exposes its model, so every episode is scored."""
    from cmdp_rl import learn
    from cmdp_rl.envs.gym_env import CMDPEnv

    m = make("media-control")
    base = solve(m.replace(c_bar=m.c_bar / 5))
    costs = value_and_costs(m, base.policy)[1]
    rec = learn(
        CMDPEnv(m), H=m.H, c_bar=m.c_bar, episodes=120, algorithm="safe-crl", seed=1, baseline=(base.policy, costs)
    )
    assert rec.violation is not None and rec.violating_episodes == 0
    assert rec.first_departure is not None and rec.first_departure <= 10


def test_learn_on_sparse_statistics() -> None:
    """A simulator too large for dense ``(S', A, S')`` statistics: the sparse confidence set, the
    sparse extended LP and sparse certificates, the same guarantee."""
    from cmdp_rl import learn
    from cmdp_rl.envs.generators import garnet
    from cmdp_rl.envs.gym_env import CMDPEnv

    big = garnet(1500, 2, 2, 1, 0.5, 3, 0).to_sparse()
    base = safe_baseline(big)
    rec = learn(
        CMDPEnv(big), H=3, c_bar=big.c_bar, episodes=4, algorithm="safe-crl", seed=5,
        baseline=(base.policy, base.costs), r=big.r, c=big.c, s0=big.s0, deploy="last",
    )  # fmt: skip
    assert rec.counts.shape == (1501 * 2, 1501)
    assert rec.violating_episodes == 0 and rec.first_departure == 1


def test_the_record_keeps_the_last_mixture_and_the_cli_reports_its_expectation(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import json

    from cmdp_rl.cli import main

    m = make("1a")
    rec = _fit(m, 60, 0, delta=0.1)
    assert rec.mixture is not None  # on 1a the learner mixes from the start
    policies, weights = rec.mixture
    assert weights.sum() == pytest.approx(1.0) and len(policies) == len(weights) >= 2
    parts = [value_and_costs(m, pol) for pol in policies]
    assert rec.value[-1] == pytest.approx(sum(w * v for w, (v, _) in zip(weights, parts, strict=True)), rel=1e-12)
    assert any(np.array_equal(rec.policy, pol) for pol in policies)  # the component the last episode drew
    assert main(["learn", "1a", "--algo", "safe-crl", "--episodes", "60", "--delta", "0.1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["violating_episodes"] == 0 and len(out["mixture_weights"]) >= 2
    assert out["value"] == pytest.approx(out["v_star"] - out["value_gap"]) and "last_value" not in out
