"""NPG-PD and CRPO on a ragged discounted model: the softmax runs over the available actions."""

from __future__ import annotations

import numpy as np
import pytest

from cmdp_rl import CMDP, evaluate, solve
from cmdp_rl.pg.methods import run


def ragged() -> CMDP:
    rng = np.random.default_rng(5)
    S, A = 4, 3
    mask = np.ones((S, A), dtype=bool)
    mask[0, 1] = mask[2, 0] = mask[2, 2] = False
    P = rng.dirichlet(np.ones(S), size=(S, A)) * mask[..., None]
    r = np.where(mask, rng.random((S, A)), 1.0)  # the ignored values would be the best rewards
    c = rng.random((1, S, A))
    m = CMDP(P, r, c, [0.0], np.full(S, 1 / S), gamma=0.8, actions=mask)
    lo = solve(m.replace(c_bar=[0.0])).min_costs
    hi = solve(m.replace(c_bar=[10.0])).costs
    return m.replace(c_bar=0.5 * (lo + hi))


@pytest.mark.parametrize("algorithm", ["npg-pd", "crpo"])
@pytest.mark.parametrize("exact", [True, False])
def test_policies_never_put_mass_on_an_unavailable_action(algorithm: str, exact: bool) -> None:
    m = ragged()
    res = run(m, algorithm, 30, exact=exact, samples=5)
    # the uniform start is uniform over the available actions: 1/2 in state 0, 1 in state 2
    assert res.initial[0].tolist() == pytest.approx([0.5, 0.0, 0.5])
    assert res.initial[2].tolist() == [0.0, 1.0, 0.0]
    assert np.all(res.policies[:, ~m.actions] == 0.0)
    ev = evaluate(m, res.policies[-1])
    assert res.values[-1] == pytest.approx(ev.value, abs=1e-10)


def test_exact_npg_pd_approaches_the_ragged_optimum() -> None:
    m = ragged()
    res = run(m, "npg-pd", 400)
    best = solve(m)
    assert abs(res.values[-1] - best.value) <= 0.02 * m.max_return  # measured: 0.023 (max_return 5)
    assert res.costs[-1][0] <= m.c_bar[0] + 0.02 * m.max_return  # measured: 0.040 above
