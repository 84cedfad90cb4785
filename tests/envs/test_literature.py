"""The literature problems: hand-checked transitions from the DOPE code's definitions, V* against a dense LP."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

from cmdp_rl import CMDPInputError, solve
from cmdp_rl.envs.literature import LITERATURE, cliff_grid, factored_cmdp, inventory_control, media_control
from cmdp_rl.evaluation.evaluate import optimal_values


def _dense_lp(m) -> float:
    """The occupation LP entry by entry, as the DOPE code writes it (one variable per (h, s, a))."""
    H, S, A = m.H, m.S, m.A
    idx = {(h, s, a): (h * S + s) * A + a for h in range(H) for s in range(S) for a in range(A)}
    A_eq, b_eq = [], []
    for s in range(S):
        row = np.zeros(len(idx))
        for a in range(A):
            row[idx[0, s, a]] = 1
        A_eq.append(row)
        b_eq.append(float(s == m.s0))
    for h in range(1, H):
        for s in range(S):
            row = np.zeros(len(idx))
            for a in range(A):
                row[idx[h, s, a]] = 1
            for x in range(S):
                for b in range(A):
                    row[idx[h - 1, x, b]] -= m.P[x, b, s]
            A_eq.append(row)
            b_eq.append(0.0)
    obj = np.array([-m.r[s, a] for (h, s, a) in idx])
    cost = np.array([[m.c[i, s, a] for (h, s, a) in idx] for i in range(m.N)])
    res = linprog(obj, A_ub=cost, b_ub=m.c_bar, A_eq=np.array(A_eq), b_eq=b_eq, bounds=(0, None), method="highs-ipm")
    assert res.status == 0
    return float(-res.fun)


@pytest.mark.parametrize("name", list(LITERATURE))
def test_optimum_against_a_dense_lp_and_the_constraint_binds(name: str) -> None:
    factory, defaults, _, _ = LITERATURE[name]
    m = factory(**defaults)
    res = solve(m)
    assert res.value == pytest.approx(_dense_lp(m), rel=1e-6, abs=1e-8)
    unconstrained = optimal_values(m.P, m.r, m.H)[0, m.s0]
    assert res.value < unconstrained - 1e-6  # the constraint is genuinely restrictive


def test_media_control_transitions_by_hand() -> None:
    m = media_control()
    assert m.S == 10 and m.A == 2 and m.H == 10 and m.c_bar.tolist() == [5.0] and m.s0 == 0
    # buffer 3, fast service (mu = 0.9), arrival 0.8
    assert m.P[3, 0, 3] == pytest.approx(0.9 * 0.8 + 0.1 * 0.2)
    assert m.P[3, 0, 4] == pytest.approx(0.9 * 0.2)
    assert m.P[3, 0, 2] == pytest.approx(0.1 * 0.8)
    assert m.P[0, 1, 0] == pytest.approx(0.1 * 0.8 + 0.9 * 0.2 + 0.9 * 0.8)  # clipped at the empty buffer
    assert m.r[0].tolist() == [0.0, 0.0] and m.r[5].tolist() == [1.0, 1.0]
    assert m.c[0, :, 0].tolist() == [1.0] * 10 and m.c[0, :, 1].tolist() == [0.0] * 10


def test_inventory_by_hand() -> None:
    m = inventory_control()
    demand = [0.3, 0.2, 0.2, 0.2, 0.05, 0.05]
    assert m.S == 6 and m.A == 6 and m.H == 7 and m.c_bar.tolist() == [3.5]
    # stock 1, order 2: stock 3 before demand; next = max(3 - d, 0)
    assert m.P[1, 2, 3] == pytest.approx(0.3) and m.P[1, 2, 0] == pytest.approx(0.2 + 0.05 + 0.05)
    # an order beyond capacity is the largest allowed order
    assert np.array_equal(m.P[4, 5], m.P[4, 1]) and m.c[0, 4, 5] == m.c[0, 4, 1]
    # cost: (K + 2a + s + a) / max, max at s = 0, a = 5: 4 + 10 + 5 = 19
    assert m.c[0, 1, 2] == pytest.approx((4 + 4 + 3) / 19)
    assert m.c[0, 2, 0] == pytest.approx(2 / 19)
    assert np.isclose(sum(demand), 1.0)


def test_factored_and_cliff_by_hand() -> None:
    m = factored_cmdp()
    assert m.P[2, 1, 0] == 1 and m.P[1, 0, 1] == 1 and m.r[1, 1] == pytest.approx(2 / 3) and m.c[0, 0, 1] == 1
    # moving costs 1 per step and c_bar = 3: the best plan moves 3 times, from the highest-paying states
    assert solve(m).value == pytest.approx(2.0)
    g = cliff_grid()
    assert g.S == 18 and g.c[0, 1].max() == 1.0 and g.c[0, 6].max() == 0.0  # (1, 0) on the cliff, (0, 1) not
    with pytest.raises(CMDPInputError, match="slip"):
        cliff_grid(slip=1.5)
    with pytest.raises(CMDPInputError, match="demand"):
        inventory_control(demand=(0.5, 0.5))
