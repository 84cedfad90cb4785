"""Certificates of estimated rewards and costs: ``certify`` and ``solve_safe`` with ``r_radius`` and
``c_radius`` (issue 35, item 4)."""

from __future__ import annotations

import pytest

from cmdp_rl import CMDPInputError


def test_estimated_rewards_and_costs_widen_the_certificate_by_their_radii() -> None:
    """``r_radius`` and ``c_radius``: the bounds equal a certificate of the shifted tables (an
    independent computation: the same certify on ``r -+ r_radius``, ``c -+ c_radius``, clipped), and a
    policy certified with known costs can lose its certificate when its costs are only estimated."""
    import numpy as np

    from cmdp_rl import random_cmdp, solve
    from cmdp_rl.certificates.certify import certify
    from cmdp_rl.certificates.safe import solve_safe

    m = random_cmdp(5, 2, 4, 1, seed=3, slack=0.3)
    counts = np.random.default_rng(0).multinomial(400, m.P)
    pol = solve(m).policy
    rr, cr = np.full((m.S, m.A), 0.05), np.full((m.N, m.S, m.A), 0.1)
    wide = certify(pol, counts, m.r, m.c, m.c_bar, m.s0, m.H, r_radius=rr, c_radius=cr)
    hi = certify(pol, counts, np.clip(m.r + rr, 0, 1), np.clip(m.c + cr, 0, 1), m.c_bar, m.s0, m.H)
    lo = certify(pol, counts, np.clip(m.r - rr, 0, 1), np.clip(m.c - cr, 0, 1), m.c_bar, m.s0, m.H)
    assert wide.value_hi == hi.value_hi and wide.value_lo == lo.value_lo
    np.testing.assert_array_equal(wide.cost_hi, hi.cost_hi)
    np.testing.assert_array_equal(wide.cost_lo, lo.cost_lo)
    one = certify(pol, counts, m.r, m.c, m.c_bar, m.s0, m.H, c_radius=cr[0])  # one (S, A) radius for all
    np.testing.assert_array_equal(one.cost_hi, wide.cost_hi)
    plan = solve_safe(counts, m.r, m.c, m.c_bar, m.s0, m.H, r_radius=rr, c_radius=cr)
    if plan.safe:
        again = certify(plan.policy, counts, m.r, m.c, m.c_bar, m.s0, m.H, r_radius=rr, c_radius=cr)
        assert again.safe and np.all(again.cost_hi <= m.c_bar)
    with pytest.raises(CMDPInputError, match=r"^c_radius: must be >= 0"):
        certify(pol, counts, m.r, m.c, m.c_bar, m.s0, m.H, c_radius=-cr)
    with pytest.raises(CMDPInputError, match=r"^r_radius: expected"):
        certify(pol, counts, m.r, m.c, m.c_bar, m.s0, m.H, r_radius=np.zeros(3))
