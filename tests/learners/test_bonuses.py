"""Radii and bonuses of the baselines (learners/bonuses.py) against hand computation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from cmdp_rl import CMDPInputError
from cmdp_rl.learners.bonuses import (
    dope_bonuses,
    dope_k0,
    dope_radius,
    efroni_bonus,
    efroni_radius,
    empirical_p,
    optdual_step,
    optpess_bonuses,
    optpess_radius,
)

# The count table used throughout: S = 2, A = 2.
#   (0, 0): counts [300, 100], n = 400, p_hat = (0.75, 0.25)  -- radius below the cap
#   (0, 1): counts [0, 0],     n = 0                          -- unvisited
#   (1, 0): counts [3, 1],     n = 4,   p_hat = (0.75, 0.25)  -- radius capped at 1
#   (1, 1): counts [0, 40],    n = 40,  p_hat = (0, 1)        -- variance term 0
H, K, DELTA, GAMMA = 2, 10, 0.1, 0.5
S, A = 2, 2


def table() -> np.ndarray:
    counts = np.zeros((S, A, S), dtype=np.int64)
    counts[0, 0] = [300, 100]
    counts[1, 0] = [3, 1]
    counts[1, 1] = [0, 40]
    return counts


def bernstein_by_hand(p: float, n: int, L: float) -> float:
    """sqrt(4 p (1 - p) L / n) + 14 L / (3 n), capped at 1."""
    variance_term = math.sqrt(4.0 * p * (1.0 - p) * L / n)
    range_term = 14.0 * L / (3.0 * n)
    return min(variance_term + range_term, 1.0)


def test_empirical_p_hand_values_and_uniform_unvisited_rows() -> None:
    p_hat = empirical_p(table())
    assert p_hat.shape == (S, A, S)
    np.testing.assert_allclose(p_hat[0, 0], [300 / 400, 100 / 400])
    np.testing.assert_allclose(p_hat[0, 1], [1 / S, 1 / S])  # unvisited: 1/S
    np.testing.assert_allclose(p_hat[1, 0], [3 / 4, 1 / 4])
    np.testing.assert_allclose(p_hat[1, 1], [0.0, 1.0])
    np.testing.assert_allclose(p_hat.sum(axis=-1), 1.0)


def test_efroni_radius_hand_values() -> None:
    # L = log(2 S A H K / delta) = log(2 * 2 * 2 * 2 * 10 / 0.1) = log(1600) = 7.377759
    L = math.log(2 * S * A * H * K / DELTA)
    assert L == pytest.approx(math.log(1600.0))
    # (0, 0): n = 400, p = 0.75: sqrt(4 * 0.1875 * L / 400) = 0.117615, 14 L / 1200 = 0.086074
    sqrt_term = math.sqrt(4 * 0.75 * 0.25 * L / 400)
    lin_term = 14 * L / (3 * 400)
    b00 = sqrt_term + lin_term
    assert b00 == pytest.approx(0.2036889, abs=1e-6)
    # (1, 0): n = 4: sqrt(0.1875 * L) + 14 L / 12 = 1.1762 + 8.6074 > 1 -> capped at 1
    assert math.sqrt(4 * 0.75 * 0.25 * L / 4) + 14 * L / 12 > 1.0
    # (1, 1): n = 40, p in {0, 1}: only 14 L / 120 = 0.860739
    b11 = 14 * L / (3 * 40)
    assert b11 == pytest.approx(0.8607386, abs=1e-6)

    beta = efroni_radius(table(), H, K, DELTA)
    assert beta.shape == (S, A, S)
    np.testing.assert_allclose(beta[0, 0], [b00, b00], rtol=1e-12)  # p(1-p) equal for 0.75 and 0.25
    np.testing.assert_array_equal(beta[0, 1], [1.0, 1.0])  # unvisited: unconstrained
    np.testing.assert_array_equal(beta[1, 0], [1.0, 1.0])  # capped
    np.testing.assert_allclose(beta[1, 1], [b11, b11], rtol=1e-12)
    np.testing.assert_allclose(beta[0, 0, 0], bernstein_by_hand(0.75, 400, L), rtol=1e-12)


def test_efroni_bonus_is_H_times_aggregate_radius() -> None:
    L = math.log(1600.0)
    b00 = math.sqrt(4 * 0.1875 * L / 400) + 14 * L / 1200
    b11 = 14 * L / 120
    expected = np.array(
        [
            [H * (b00 + b00), H * (1.0 + 1.0)],  # (0,0); (0,1) unvisited: H * S * 1
            [H * (1.0 + 1.0), H * (b11 + b11)],  # (1,0) capped; (1,1)
        ]
    )
    bonus = efroni_bonus(table(), H, K, DELTA)
    assert bonus.shape == (S, A)
    np.testing.assert_allclose(bonus, expected, rtol=1e-12)
    assert bonus[0, 1] == H * S
    assert bonus[0, 0] == pytest.approx(0.8147556, abs=1e-6)


def test_optpess_radius_and_bonuses_hand_values() -> None:
    # L = log(32 S^2 H K / delta) = log(32 * 4 * 2 * 10 / 0.1) = log(25600)
    L = math.log(32 * S**2 * H * K / DELTA)
    assert L == pytest.approx(math.log(25600.0))
    # beta = sqrt(L / max(n, 1)) with n = [[400, 0], [4, 40]]: the unvisited pair gets sqrt(L), not 0
    beta = np.array([[math.sqrt(L / 400), math.sqrt(L / 1)], [math.sqrt(L / 4), math.sqrt(L / 40)]])
    np.testing.assert_allclose(optpess_radius(table(), H, K, DELTA), beta, rtol=1e-12)
    assert beta[0, 1] > 0
    # reward factor 1 + S H + 4 H (1 + S H) / gamma = 1 + 4 + 8 * 5 / 0.5 = 85; cost factor 1 + S H = 5
    reward_factor = 1 + S * H + 4 * H * (1 + S * H) / GAMMA
    cost_factor = 1 + S * H
    assert reward_factor == pytest.approx(85.0)
    assert cost_factor == 5
    reward, cost = optpess_bonuses(table(), H, K, DELTA, GAMMA)
    np.testing.assert_allclose(reward, reward_factor * beta, rtol=1e-12)
    np.testing.assert_allclose(cost, cost_factor * beta, rtol=1e-12)
    assert reward[0, 0] == pytest.approx(85 * math.sqrt(math.log(25600) / 400), rel=1e-12)


def test_dope_radius_and_bonuses_hand_values() -> None:
    # L = log(6 S^2 H K / delta) = log(6 * 4 * 2 * 10 / 0.1) = log(4800) = 8.476371
    L = math.log(6 * S**2 * H * K / DELTA)
    assert L == pytest.approx(math.log(4800.0))
    b00 = math.sqrt(4 * 0.1875 * L / 400) + 14 * L / 1200
    b11 = 14 * L / 120
    assert b00 == pytest.approx(0.2249590, abs=1e-6)
    assert b11 == pytest.approx(0.9889099, abs=1e-6)
    beta = dope_radius(table(), H, K, DELTA, log_term="code")
    np.testing.assert_allclose(beta[0, 0], [b00, b00], rtol=1e-12)
    np.testing.assert_array_equal(beta[0, 1], [1.0, 1.0])
    np.testing.assert_array_equal(beta[1, 0], [1.0, 1.0])
    np.testing.assert_allclose(beta[1, 1], [b11, b11], rtol=1e-12)
    # beta_bar = row sums; reward bonus H^2 / gamma * beta_bar = 8 beta_bar, cost bonus H beta_bar = 2 beta_bar
    beta_bar = np.array([[2 * b00, 2.0], [2.0, 2 * b11]])
    reward, cost = dope_bonuses(table(), H, K, DELTA, GAMMA, log_term="code")
    np.testing.assert_allclose(reward, H**2 / GAMMA * beta_bar, rtol=1e-12)
    np.testing.assert_allclose(cost, H * beta_bar, rtol=1e-12)
    assert reward[0, 1] == 16.0  # unvisited: (H^2 / gamma) * S
    assert cost[0, 1] == 4.0  # unvisited: H * S


def test_dope_paper_log_term_is_efronis_set() -> None:
    # default log_term="paper": L = log(2 S A H K / delta) = log(1600), Efroni's radius exactly
    L = math.log(2 * S * 2 * H * K / DELTA)
    assert L == pytest.approx(math.log(1600.0))
    b00 = math.sqrt(4 * 0.1875 * L / 400) + 14 * L / 1200
    beta = dope_radius(table(), H, K, DELTA)
    np.testing.assert_allclose(beta[0, 0], [b00, b00], rtol=1e-12)
    np.testing.assert_array_equal(beta, efroni_radius(table(), H, K, DELTA))
    reward, cost = dope_bonuses(table(), H, K, DELTA, GAMMA)
    np.testing.assert_allclose(cost[0, 0], H * 2 * b00, rtol=1e-12)
    np.testing.assert_allclose(reward, cost * H / GAMMA, rtol=1e-12)
    with pytest.raises(ValueError, match="log_term"):
        dope_radius(table(), H, K, DELTA, log_term="other")


def test_dope_k0_hand_values() -> None:
    # S^2 A H^3 / gamma^2 = 4 * 2 * 8 / 0.25 = 256
    assert dope_k0(2, 2, 2, 0.5) == 256
    # 64 / 0.09 = 711.1 -> 712
    assert dope_k0(2, 2, 2, 0.3) == math.ceil(64 / 0.09) == 712
    # 64 / 0.1^2 is 6399.999999999999 in floating point: counts as 6400, not 6400 + rounding
    assert 64 / 0.1**2 != 6400
    assert dope_k0(2, 2, 2, 0.1) == 6400
    # a gap larger than the bound still gives one baseline episode
    assert dope_k0(1, 1, 1, 10.0) == 1


def test_optdual_step_hand_value() -> None:
    # 1 / (H sqrt(K)) = 1 / (4 * 10)
    assert optdual_step(4, 100) == pytest.approx(0.025, rel=1e-15)
    assert optdual_step(1, 1) == 1.0


def test_bonus_scale_scales_bonuses_only() -> None:
    counts = table()
    base_e = efroni_bonus(counts, H, K, DELTA)
    base_o = optpess_bonuses(counts, H, K, DELTA, GAMMA)
    base_d = dope_bonuses(counts, H, K, DELTA, GAMMA)
    radius_e = efroni_radius(counts, H, K, DELTA)
    radius_o = optpess_radius(counts, H, K, DELTA)
    radius_d = dope_radius(counts, H, K, DELTA)

    assert not efroni_bonus(counts, H, K, DELTA, bonus_scale=0.0).any()
    for part in optpess_bonuses(counts, H, K, DELTA, GAMMA, bonus_scale=0.0):
        assert not part.any()
    for part in dope_bonuses(counts, H, K, DELTA, GAMMA, bonus_scale=0.0):
        assert not part.any()
    # the radii have no bonus_scale and are unchanged by the calls above
    np.testing.assert_array_equal(efroni_radius(counts, H, K, DELTA), radius_e)
    np.testing.assert_array_equal(optpess_radius(counts, H, K, DELTA), radius_o)
    np.testing.assert_array_equal(dope_radius(counts, H, K, DELTA), radius_d)

    np.testing.assert_allclose(efroni_bonus(counts, H, K, DELTA, bonus_scale=2.5), 2.5 * base_e, rtol=1e-12)
    for got, want in zip(optpess_bonuses(counts, H, K, DELTA, GAMMA, bonus_scale=2.5), base_o, strict=True):
        np.testing.assert_allclose(got, 2.5 * want, rtol=1e-12)
    for got, want in zip(dope_bonuses(counts, H, K, DELTA, GAMMA, bonus_scale=2.5), base_d, strict=True):
        np.testing.assert_allclose(got, 2.5 * want, rtol=1e-12)


def test_all_unvisited_table() -> None:
    counts = np.zeros((3, 2, 3), dtype=int)
    np.testing.assert_allclose(empirical_p(counts), 1 / 3)
    np.testing.assert_array_equal(efroni_radius(counts, H, K, DELTA), 1.0)
    np.testing.assert_array_equal(dope_radius(counts, H, K, DELTA), 1.0)
    np.testing.assert_allclose(efroni_bonus(counts, H, K, DELTA), H * 3)
    L = math.log(32 * 9 * H * K / DELTA)
    np.testing.assert_allclose(optpess_radius(counts, H, K, DELTA), math.sqrt(L))


def test_integer_valued_float_counts_and_inputs_untouched() -> None:
    counts = table()
    as_float = counts.astype(np.float64)
    before = as_float.copy()
    np.testing.assert_array_equal(efroni_radius(as_float, H, K, DELTA), efroni_radius(counts, H, K, DELTA))
    dope_bonuses(as_float, H, K, DELTA, GAMMA)
    optpess_bonuses(as_float, H, K, DELTA, GAMMA)
    np.testing.assert_array_equal(as_float, before)
    # lists are accepted too
    np.testing.assert_array_equal(empirical_p(counts.tolist()), empirical_p(counts))


RADIUS_FUNCTIONS = [efroni_radius, efroni_bonus, optpess_radius, dope_radius]
GAP_FUNCTIONS = [optpess_bonuses, dope_bonuses]


@pytest.mark.parametrize(
    ("counts", "match"),
    [
        (np.zeros((2, 2)), r"counts: expected 3 dimensions"),
        (np.zeros((2, 1, 3)), r"counts: expected shape \(S, A, S\)"),
        (np.zeros((0, 1, 0)), r"counts: needs at least one state"),
        (np.array([[[1, -1]], [[0, 0]]]), r"counts\[0, 0, 1\]: must be a non-negative integer"),
        (np.array([[[1.5, 0]], [[0, 0]]]), r"counts\[0, 0, 0\]: must be a non-negative integer"),
        (np.array([[[np.nan, 0]], [[0, 0]]]), r"counts\[0, 0, 0\]: must be finite"),
        ("abc", r"counts: cannot be read as a numeric array"),
    ],
)
def test_bad_counts(counts: object, match: str) -> None:
    with pytest.raises(CMDPInputError, match=match):
        empirical_p(counts)
    for fn in RADIUS_FUNCTIONS:
        with pytest.raises(CMDPInputError, match=match):
            fn(counts, H, K, DELTA)
    for gap_fn in GAP_FUNCTIONS:
        with pytest.raises(CMDPInputError, match=match):
            gap_fn(counts, H, K, DELTA, GAMMA)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"delta": 0.0}, r"delta: must lie in the open interval \(0, 1\)"),
        ({"delta": 1.0}, r"delta: must lie in the open interval \(0, 1\)"),
        ({"delta": -0.1}, r"delta: must lie in the open interval"),
        ({"delta": float("nan")}, r"delta: must lie in the open interval"),
        ({"H": 0}, r"H: must be an integer >= 1"),
        ({"H": 2.5}, r"H: must be an integer"),
        ({"H": True}, r"H: must be an integer"),
        ({"K": 0}, r"K: must be an integer >= 1"),
        ({"K": -3}, r"K: must be an integer >= 1"),
    ],
)
def test_bad_scalars(kwargs: dict[str, float], match: str) -> None:
    args = {"H": H, "K": K, "delta": DELTA} | kwargs
    for fn in RADIUS_FUNCTIONS:
        with pytest.raises(CMDPInputError, match=match):
            fn(table(), args["H"], args["K"], args["delta"])
    for gap_fn in GAP_FUNCTIONS:
        with pytest.raises(CMDPInputError, match=match):
            gap_fn(table(), args["H"], args["K"], args["delta"], GAMMA)


@pytest.mark.parametrize("gamma", [0.0, -0.5, float("nan"), float("inf"), "0.5", None])
def test_bad_gamma(gamma: object) -> None:
    for gap_fn in GAP_FUNCTIONS:
        with pytest.raises(CMDPInputError, match=r"^gamma: "):
            gap_fn(table(), H, K, DELTA, gamma)
    with pytest.raises(CMDPInputError, match=r"^gamma: "):
        dope_k0(2, 2, 2, gamma)  # type: ignore[arg-type]


def test_gamma_message_names_the_rule() -> None:
    with pytest.raises(CMDPInputError, match=r"gamma: the safety gap c_bar - C_b of the safe policy must be > 0"):
        dope_bonuses(table(), H, K, DELTA, 0.0)
    with pytest.raises(CMDPInputError, match=r"gamma: too small"):
        dope_k0(2, 2, 2, 1e-200)


@pytest.mark.parametrize(
    ("scale", "match"),
    [(-1.0, r"bonus_scale: must be >= 0"), (float("nan"), r"bonus_scale: must be finite"), ("x", r"bonus_scale:")],
)
def test_bad_bonus_scale(scale: object, match: str) -> None:
    with pytest.raises(CMDPInputError, match=match):
        efroni_bonus(table(), H, K, DELTA, bonus_scale=scale)  # type: ignore[arg-type]
    for gap_fn in GAP_FUNCTIONS:
        with pytest.raises(CMDPInputError, match=match):
            gap_fn(table(), H, K, DELTA, GAMMA, bonus_scale=scale)


@pytest.mark.parametrize(
    ("args", "match"),
    [((0, 2, 2), r"S: must be an integer >= 1"), ((2, 0, 2), r"A: must be an integer >= 1"), ((2, 2, 0), r"H: ")],
)
def test_bad_dope_k0_sizes(args: tuple[int, int, int], match: str) -> None:
    with pytest.raises(CMDPInputError, match=match):
        dope_k0(*args, 0.5)


def test_bad_optdual_step() -> None:
    with pytest.raises(CMDPInputError, match=r"H: must be an integer >= 1"):
        optdual_step(0, 10)
    with pytest.raises(CMDPInputError, match=r"K: must be an integer >= 1"):
        optdual_step(2, 0)
