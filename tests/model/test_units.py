"""Rewards and costs in the user's units (``cmdp_rl.model.units``): the scale-interval rule, and
every entry point on a model and its affine image (solve, discounted solve, frontier, evaluate,
certify, the learners), a hand-solved CMDP in big units, negative and constant rewards, and the
tolerance rule. Expected numbers come from hand calculation, the affine relation itself
(``V = T b + a V'``) applied to the unit model's answer, or an independent LP."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import dense_reference_lp, two_state_cmdp

from cmdp_rl import CMDP, EpisodicEnv, Scorer, certify, evaluate, frontier, make, make_learner, random_cmdp, solve
from cmdp_rl.model.cmdp import KnownParts
from cmdp_rl.model.units import Units, pair_bounds, scale_interval, unit_known, unit_model


def affine(m: CMDP, a: float, b: float, ac: np.ndarray, bc: np.ndarray) -> CMDP:
    """``r -> a r + b``, ``c_i -> ac_i c_i + bc_i``, thresholds mapped with them (``T`` steps)."""
    T = m.max_return
    return m.replace(r=a * m.r + b, c=ac[:, None, None] * m.c + bc[:, None, None], c_bar=ac * m.c_bar + T * bc)


def big_two_state() -> CMDP:
    """The two-state CMDP of ``conftest`` in other units: ``r -> 100 r + 200``, ``c -> 40 c - 10``,
    ``c_bar = 0``."""
    m = two_state_cmdp()
    return m.replace(r=100 * m.r + 200, c=40 * m.c - 10, c_bar=np.array([0.0]))


# -- the rule -------------------------------------------------------------------------------------


def test_scale_interval_holds_zero_one_and_the_data() -> None:
    off, width = scale_interval(np.array([0.0, 0.2, 2.0, -3.0, 0.5, 7.0]), np.array([1.0, 0.7, 5.0, 0.5, 0.5, 7.0]))
    assert off.tolist() == [0.0, 0.0, 0.0, -3.0, 0.0, 0.0]
    assert width.tolist() == [1.0, 1.0, 5.0, 4.0, 1.0, 7.0]  # a constant 0.5 or 7: width 1 or 7, never 0
    lo, hi = pair_bounds(np.array([[[1.0, -2.0], [4.0, 0.0]], [[3.0, 3.0], [3.0, 3.0]]]))
    assert lo.tolist() == [-2.0, 3.0] and hi.tolist() == [4.0, 3.0]
    assert pair_bounds(np.zeros((0, 2, 2)))[0].shape == (0,)


def test_a_model_in_zero_one_is_its_own_unit_image() -> None:
    m = random_cmdp(5, 2, 4, 2, seed=0)
    image, units = unit_model(m)
    assert image is m and units.identity
    assert m.units.r_width == 1.0 and m.units.c_width.tolist() == [1.0, 1.0]


def test_the_units_of_the_big_two_state_model() -> None:
    m = big_two_state()
    u = m.units
    assert (u.r_offset, u.r_width, u.steps) == (0.0, 300.0, 2.0)  # rewards in [200, 300]: [0, 300]
    assert u.c_offset.tolist() == [-10.0] and u.c_width.tolist() == [40.0]  # costs in [-10, 30]
    assert m.reward_bounds == (200.0, 300.0) and m.cost_bounds.tolist() == [[-10.0, 30.0]]
    image, _ = unit_model(m)
    assert np.allclose(image.r, m.r / 300.0) and np.allclose(image.c, (m.c + 10.0) / 40.0)
    assert np.allclose(image.c_bar, [(0.0 + 2 * 10.0) / 40.0])
    assert np.all((image.r >= 0) & (image.r <= 1)) and np.all((image.c >= 0) & (image.c <= 1))


def test_known_parts_map_the_same_way() -> None:
    m = big_two_state()
    known, units = unit_known(KnownParts.of(m))
    image, _ = unit_model(m)
    assert units == Units(0.0, 300.0, units.c_offset, units.c_width, 2.0)
    assert np.array_equal(known.r, image.r) and np.array_equal(known.c, image.c)
    assert np.array_equal(known.c_bar, image.c_bar)


# -- exact planning, evaluation, certificates -----------------------------------------------------


@pytest.mark.parametrize("method", ["fast", "lp"])
def test_hand_solved_two_state_cmdp_in_big_units(method: str) -> None:
    # policies from s0 (H = 2): risky first (V 300 + 250 = 550, C 30 - 10 = 20), safe then risky
    # (V 500, C 20), safe twice (V 400, C -20). With C <= 0 the optimum mixes risky-first and
    # safe-twice half and half: V* = 475, C = 0, slope dV*/dc_bar = (550 - 400) / 40 = 3.75.
    res = solve(big_two_state(), method)
    assert res.status == "optimal"
    assert res.value == pytest.approx(475.0, abs=1e-9)
    assert res.costs == pytest.approx([0.0], abs=1e-9)
    assert res.multipliers == pytest.approx([3.75], abs=1e-9)
    assert res.policy[0, 0] == pytest.approx([0.5, 0.5], abs=1e-9)
    assert 0.0 <= res.gap <= 1e-9 * 2 * 300.0  # the default gap_tol of the rule: 1e-9 T w_r


def test_an_infeasible_model_in_big_units_reports_its_least_costs() -> None:
    m = big_two_state().replace(c_bar=np.array([-25.0]))  # the least cost is -20 (safe twice)
    res = solve(m)
    assert res.status == "infeasible"
    assert res.min_costs == pytest.approx([-20.0], abs=1e-9)
    assert res.max_excess == pytest.approx(5.0, abs=1e-9)
    assert res.multipliers == pytest.approx([1.0])  # a certificate of infeasibility sums to 1


@pytest.mark.parametrize("method", ["fast", "lp"])
@pytest.mark.parametrize("discounted", [False, True])
def test_an_affine_image_has_the_same_plan_and_mapped_numbers(method: str, discounted: bool) -> None:
    m = random_cmdp(8, 3, 6, 2, seed=4)
    if discounted:
        m = m.replace(gamma=0.8)
    T = m.max_return
    a, b, ac, bc = 250.0, -40.0, np.array([3.0, 0.02]), np.array([5.0, -1.0])
    big = affine(m, a, b, ac, bc)
    r1, r2 = solve(m, method), solve(big, method)
    assert r1.status == r2.status == "optimal"
    assert r2.value == pytest.approx(a * r1.value + b * T, rel=1e-9)
    assert r2.costs == pytest.approx(ac * r1.costs + bc * T, rel=1e-9, abs=1e-9 * T)
    assert r2.multipliers == pytest.approx(r1.multipliers * a / ac, rel=1e-6, abs=1e-9)
    # the big model's plan is optimal for the unit model: same value and costs there
    v, costs = (lambda e: (e.value, e.costs))(evaluate(m, r2.policy))
    assert v == pytest.approx(r1.value, abs=1e-8 * T)
    assert np.all(costs <= m.c_bar + 1e-7)
    assert r2.gap <= 1e-9 * T * big.units.r_width


def test_an_image_that_spans_zero_one_gives_the_same_policy() -> None:
    # scenario 1a's rewards and costs span [0, 1] exactly: the image of r -> 100 r - 30,
    # c -> 7 c - 3 on the unit scale is 1a itself, so the plans agree entry for entry
    m = make("1a")
    big = affine(m, 100.0, -30.0, np.array([7.0]), np.array([-3.0]))
    for method in ("fast", "lp"):
        r1, r2 = solve(m, method), solve(big, method)
        assert np.allclose(r1.policy, r2.policy, atol=1e-12)
        assert r2.value == pytest.approx(100.0 * r1.value - 300.0, rel=1e-12)
        assert r2.costs == pytest.approx(7.0 * r1.costs - 30.0, rel=1e-12)


def test_negative_rewards_match_an_independent_lp() -> None:
    m = random_cmdp(5, 2, 4, 1, seed=7)
    neg = m.replace(r=-3.0 * m.r - 1.0)  # rewards in [-4, -1]: a cost to minimize
    status, ref = dense_reference_lp(neg)
    assert status == 0
    for method in ("fast", "lp"):
        res = solve(neg, method)
        assert res.status == "optimal"
        assert res.value == pytest.approx(ref, abs=1e-7)


def test_a_constant_reward_has_value_t_times_it() -> None:
    m = random_cmdp(5, 2, 4, 1, seed=2)
    for level in (7.0, -2.5, 0.5):
        res = solve(m.replace(r=np.full((m.S, m.A), level)))
        assert res.status == "optimal"
        assert res.value == pytest.approx(4 * level, abs=1e-12)
        assert res.gap <= 1e-9 * 4 * max(1.0, level) + 1e-15


def test_the_tolerance_rule_scales_gap_tol_and_reports_gaps_in_the_models_units() -> None:
    m = make("1a")
    big = affine(m, 1e4, 0.0, np.array([1e3]), np.array([0.0]))  # its unit image is 1a itself
    gaps: list[float] = []
    unit_gaps: list[float] = []
    res = solve(big, callback=lambda it, gap: gaps.append(gap))
    solve(m, callback=lambda it, gap: unit_gaps.append(gap))
    assert res.status == "optimal" and res.gap <= 1e-9 * 10 * 1e4
    assert gaps == pytest.approx(1e4 * np.array(unit_gaps), rel=1e-12)  # the progress in the model's units
    # a gap_tol in the model's units: 1e-3 of a 1e4-unit reward is 1e-7 on the unit scale
    coarse = solve(big, gap_tol=1e-3)
    assert coarse.status == "optimal" and coarse.gap <= 1e-3
    fr = frontier(big, points=3)
    assert fr.gap_tol == pytest.approx(1e-9 * 10 * 1e4) and fr.status == "optimal"


def test_frontier_of_an_affine_image_maps_thresholds_values_and_breakpoints() -> None:
    m = make("1a")
    a, b, ac, bc = 100.0, -30.0, np.array([7.0]), np.array([2.0])  # costs in [2, 9]: another image
    big = affine(m, a, b, ac, bc)
    f1, f2 = frontier(m, points=6), frontier(big, points=6)
    assert f2.c_bar == pytest.approx(7.0 * f1.c_bar + 20.0, rel=1e-9)
    assert f2.value == pytest.approx(a * f1.value - 300.0, rel=1e-9, abs=1e-7)
    assert (f2.lo, f2.hi) == pytest.approx((7.0 * f1.lo + 20.0, 7.0 * f1.hi + 20.0), rel=1e-9)
    assert f1.breakpoints is not None and f2.breakpoints is not None
    assert len(f2.breakpoints) == len(f1.breakpoints)
    assert f2.breakpoints[:, 0] == pytest.approx(7.0 * f1.breakpoints[:, 0] + 20.0, rel=1e-8)
    assert f2.breakpoints[:, 1] == pytest.approx(a * f1.breakpoints[:, 1] - 300.0, rel=1e-8, abs=1e-6)
    assert f2.status == "optimal"


def test_evaluate_and_certify_are_linear_in_the_units() -> None:
    m = random_cmdp(6, 2, 5, 1, seed=3)
    a, b, ac, bc = 40.0, -7.0, np.array([12.0]), np.array([-4.0])
    big = affine(m, a, b, ac, bc)
    policy = solve(m).policy
    e1, e2 = evaluate(m, policy), evaluate(big, policy)
    steps_left = np.arange(m.H, -1, -1)[:, None]  # H - h steps remain at step h
    assert e2.values == pytest.approx(a * e1.values + b * steps_left, rel=1e-12, abs=1e-9)
    assert e2.costs == pytest.approx(ac * e1.costs + bc * m.H, rel=1e-12)
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 30, size=(m.S, m.A, m.S))
    c1 = certify(policy, counts, m.r, m.c, m.c_bar, m.s0, m.H, delta=0.1)
    c2 = certify(policy, counts, big.r, big.c, big.c_bar, big.s0, big.H, delta=0.1)
    assert (c2.value_lo, c2.value_hi) == pytest.approx((a * c1.value_lo + b * m.H, a * c1.value_hi + b * m.H))
    assert c2.cost_hi == pytest.approx(ac * c1.cost_hi + bc * m.H)
    assert c2.cost_lo == pytest.approx(ac * c1.cost_lo + bc * m.H)
    assert c2.safe == c1.safe


def test_estimated_rewards_outside_zero_one_are_not_clipped() -> None:
    m = random_cmdp(4, 2, 3, 1, seed=5)
    policy = solve(m).policy
    counts = np.full((m.S, m.A, m.S), 50)
    radius = np.full((m.S, m.A), 0.25)
    unit = certify(policy, counts, m.r, m.c, m.c_bar, m.s0, m.H, r_radius=radius)
    big = certify(policy, counts, 10 * m.r, m.c, m.c_bar, m.s0, m.H, r_radius=10 * radius)
    # in [0, 1] the intervals are clipped to [0, 1] (Assumption 1); rewards of 0 .. 10 are not
    # clipped, so the big interval is at least 10 times the clipped one
    assert big.value_hi - big.value_lo >= 10 * (unit.value_hi - unit.value_lo) - 1e-9


# -- learners ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["online-crl", "optcmdp-bonus", "dope", "optpess-pd"])
def test_a_learner_plays_the_same_actions_on_an_image_and_reports_in_its_units(name: str) -> None:
    m = make("1a")  # spans [0, 1]: the big model's unit image is 1a itself
    a, b, ac, bc = 100.0, -30.0, np.array([7.0]), np.array([-3.0])
    big = affine(m, a, b, ac, bc)
    records = []
    for model in (m, big):
        learner = make_learner(name, model, 0.1, episodes=6)
        records.append(learner.fit(EpisodicEnv(model, np.random.default_rng(11)), Scorer.for_model(model)))
    r1, r2 = records
    assert (r1.counts != r2.counts).nnz == 0  # the same transitions: the same actions, the same draws
    assert r2.value == pytest.approx(a * r1.value - 300.0, rel=1e-9)
    assert r2.costs == pytest.approx(7.0 * r1.costs - 30.0, rel=1e-9)
    assert r2.value_gap == pytest.approx(a * r1.value_gap, abs=1e-7)
    assert r2.violation == pytest.approx(7.0 * r1.violation, abs=1e-7)
    assert r2.realized_return == pytest.approx(a * r1.realized_return - 300.0)
    planned = np.isfinite(r1.planned_value)
    assert r2.planned_value[planned] == pytest.approx(a * r1.planned_value[planned] - 300.0, rel=1e-9)
    assert r2.c_bar == pytest.approx(big.c_bar) and r2.cost_scale is not None and r2.cost_scale.tolist() == [7.0]
    assert r2.violating_episodes == r1.violating_episodes
    assert r1.certificate is not None and r2.certificate is not None
    assert r2.certificate.value_lo == pytest.approx(a * r1.certificate.value_lo - 300.0)
    if name == "dope":
        assert r2.settings["baseline_costs"] == pytest.approx(7.0 * np.array(r1.settings["baseline_costs"]) - 30.0)


# -- files ------------------------------------------------------------------------------------------


def test_model_files_and_tables_outside_zero_one_load(tmp_path: Path) -> None:
    big = big_two_state()
    big.save(tmp_path / "big.npz")
    back = CMDP.load(tmp_path / "big.npz")
    assert np.array_equal(back.r, big.r) and np.array_equal(back.c, big.c)
    big.to_table(tmp_path / "big.csv")
    table = CMDP.from_table(tmp_path / "big.csv", c_bar=[0.0], H=2)
    assert np.array_equal(table.r, big.r) and np.array_equal(table.c, big.c)
    assert solve(table).value == pytest.approx(475.0, abs=1e-9)


def test_units_of_ranges_map_the_given_ranges_as_they_are() -> None:
    # no scale interval around [0, 1]: [2, 12] -> a = 2, w = 10 (Units.of would take [0, 12])
    u = Units.of_ranges(-1.0, 3.0, np.array([2.0, 0.0]), np.array([12.0, 1.0]), 4.0)
    assert (u.r_offset, u.r_width, u.c_offset.tolist(), u.c_width.tolist()) == (-1.0, 4.0, [2.0, 0.0], [10.0, 1.0])
    assert u.unit_thresholds(np.array([18.0, 2.5])).tolist() == [1.0, 2.5]  # (18 - 4 * 2) / 10
    assert u.costs(np.array([1.0, 2.5])).tolist() == [18.0, 2.5] and float(u.value(2.0)) == 4.0  # 4 * -1 + 4 * 2
    assert not u.identity and Units.of_ranges(0.0, 1.0, np.zeros(2), np.ones(2), 4.0).identity
