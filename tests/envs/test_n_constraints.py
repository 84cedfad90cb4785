"""The N-constraints family (copies, distinct) against an independent dense LP and backward induction."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from scipy.optimize import linprog

from cmdp_rl import CMDP, CMDPInputError, scenario_cmdp, solve
from cmdp_rl.envs import copies, distinct
from cmdp_rl.envs.registry import make

NS = (1, 2, 4, 8, 16, 32, 64)
TIGHT = 1e-7  # a constraint is active when c_bar_i - C_i <= TIGHT
FAMILIES = {"copies": copies, "distinct": distinct}


@cache
def _model(family: str, n: int, seed: int = 0) -> CMDP:
    return FAMILIES[family](n, seed)


def _flow(m: CMDP) -> tuple[np.ndarray, np.ndarray]:
    """Occupation-measure equalities written entry by entry: variable (h, s, a) -> (h * S + s) * A + a."""
    H, S, A = m.H, m.S, m.A
    A_eq = np.zeros((H * S, H * S * A))
    b_eq = np.zeros(H * S)
    b_eq[m.s0] = 1.0
    for h in range(H):
        for s in range(S):
            for a in range(A):
                A_eq[h * S + s, (h * S + s) * A + a] = 1.0
            if h > 0:
                for x in range(S):
                    for b in range(A):
                        A_eq[h * S + s, ((h - 1) * S + x) * A + b] -= m.P[x, b, s]
    return A_eq, b_eq


@cache
def _dense_flow(family: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    return _flow(_model(family, n))


def _dense_lp(m: CMDP, flow: tuple[np.ndarray, np.ndarray], keep: np.ndarray | None = None) -> tuple[float, np.ndarray]:
    """max sum mu r s.t. sum_h mu_h . c_i <= c_bar_i (rows in ``keep``), interior point + crossover."""
    keep = np.arange(m.N) if keep is None else keep
    costs = np.tile(m.c[keep].reshape(len(keep), -1), (1, m.H))
    res = linprog(
        -np.tile(m.r.ravel(), m.H),
        A_ub=costs if len(keep) else None,
        b_ub=m.c_bar[keep] if len(keep) else None,
        A_eq=flow[0],
        b_eq=flow[1],
        bounds=(0, None),
        method="highs-ipm",
    )
    assert res.status == 0, res.message
    total = res.x.reshape(m.H, m.S * m.A).sum(axis=0)
    return float(-res.fun), m.c.reshape(m.N, -1) @ total


def _unconstrained_dp(m: CMDP) -> float:
    V = np.zeros(m.S)
    for _ in range(m.H):
        V = (m.r + m.P @ V).max(axis=1)
    return float(V[m.s0])


def _policy_costs(m: CMDP, action: int) -> np.ndarray:
    """Costs of the stationary policy that always plays ``action`` (backward induction per constraint)."""
    C = np.zeros((m.N, m.S))
    for _ in range(m.H):
        C = m.c[:, :, action] + C @ m.P[:, action, :].T
    return C[:, m.s0]


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("n", NS)
def test_instance_is_valid_and_strictly_restrictive(family: str, n: int) -> None:
    m = _model(family, n)
    again = CMDP(m.P, m.r, m.c, m.c_bar, m.s0, m.H)  # validates every array
    assert again.c.shape == (n, 9, 4) and again.c_bar.shape == (n,)
    base = scenario_cmdp("1a")  # same dynamics, reward, start and horizon as scenario 1a
    assert np.array_equal(m.P, base.P) and np.array_equal(m.r, base.r) and (m.s0, m.H) == (base.s0, base.H)
    rows = m.c.reshape(n, -1)
    if family == "copies":
        assert np.all(rows == rows[0]) and np.all(m.c_bar == m.c_bar[0])
    else:
        assert len(np.unique(rows, axis=0)) == n
        assert len({tuple(r) for r in rows}) == n
    # independent optimum vs the library's LP and the unconstrained DP
    v_lp, _ = _dense_lp(m, _dense_flow(family, n))
    v_free = _unconstrained_dp(m)
    assert solve(m).value == pytest.approx(v_lp, abs=1e-7)
    assert m.meta["v_star"] == pytest.approx(v_lp, abs=1e-7)
    assert m.meta["v_unconstrained"] == pytest.approx(v_free, abs=1e-12)
    assert v_lp < v_free - 0.1
    # Slater: always pressing 'left' costs nothing, every threshold is positive; no policy has negative cost,
    # so the joint gap is exactly the smallest threshold
    assert np.all(_policy_costs(m, 3) == 0.0)
    assert m.c_bar.min() > 0.1
    assert m.meta["slater_gap"] == pytest.approx(m.c_bar.min(), abs=1e-7)
    assert (m.meta["family"], m.meta["N"], m.meta["seed"]) == (family, n, 0)


@pytest.mark.parametrize("n", [k for k in NS if k >= 2])
def test_distinct_several_constraints_bind(n: int) -> None:
    m = _model("distinct", n)
    flow = _dense_flow("distinct", n)
    v, costs = _dense_lp(m, flow)
    tight = np.flatnonzero(m.c_bar - costs <= TIGHT)
    assert len(tight) >= 2
    # binding: dropping the constraint raises the optimum (independent of which optimal vertex a solver returns)
    raised = [i for i in tight if _dense_lp(m, flow, np.delete(np.arange(n), i))[0] > v + 1e-6]
    assert len(raised) >= 2
    assert set(raised) <= set(m.meta["binding"]) <= set(m.meta["active"])
    assert m.meta["n_active"] == len(m.meta["active"]) >= 2
    assert m.meta["n_binding"] == len(m.meta["binding"]) >= 2


def test_copies_optimum_does_not_depend_on_n() -> None:
    values = [_dense_lp(_model("copies", n), _dense_flow("copies", n))[0] for n in NS]
    assert np.ptp(values) < 1e-8
    assert np.ptp([_model("copies", n).meta["v_star"] for n in NS]) < 1e-8
    for n in NS:
        meta = _model("copies", n).meta
        assert meta["n_active"] == n  # all copies are tight ...
        assert meta["n_binding"] == (1 if n == 1 else 0)  # ... but none is needed while a copy remains
    # the two families coincide at N = 1
    one, solo = _model("copies", 1), _model("distinct", 1)
    for key in ("P", "r", "c", "c_bar"):
        assert np.array_equal(getattr(one, key), getattr(solo, key))
    # and copies repeats distinct's first row with its N = 1 threshold
    assert np.array_equal(_model("copies", 8).c[3], _model("distinct", 64).c[0])


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_same_seed_same_arrays(family: str) -> None:
    gen = FAMILIES[family]
    a, b, other = gen(4, seed=7), gen(4, seed=7), gen(4, seed=8)
    for key in ("P", "r", "c", "c_bar"):
        assert np.array_equal(getattr(a, key), getattr(b, key))
    assert a.meta == b.meta
    assert not np.array_equal(a.c, other.c)
    if family == "distinct":  # row i depends only on (seed, i)
        assert np.array_equal(gen(2, seed=7).c, a.c[:2])


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize(
    "kwargs, culprit",
    [
        ({"n_constraints": 0}, "n_constraints"),
        ({"n_constraints": -3}, "n_constraints"),
        ({"n_constraints": 2.5}, "n_constraints"),
        ({"n_constraints": True}, "n_constraints"),
        ({"n_constraints": "4"}, "n_constraints"),
        ({"n_constraints": None}, "n_constraints"),
        ({"n_constraints": 2, "seed": -1}, "seed"),
        ({"n_constraints": 2, "f": 0.0}, "f"),
        ({"n_constraints": 2, "f": 1.0}, "f"),
        ({"n_constraints": 2, "f": float("nan")}, "f"),
        ({"n_constraints": 2, "size": 1}, "size"),
        ({"n_constraints": 2, "H": 4}, "H"),
    ],
)
def test_bad_arguments_name_the_culprit(family: str, kwargs: dict[str, object], culprit: str) -> None:
    with pytest.raises(CMDPInputError, match=rf"^{culprit}: "):
        FAMILIES[family](**kwargs)


def test_registry_specs() -> None:
    m = make("copies:n=4")
    assert m.N == 4 and m.names == "copies" and m.meta["n_active"] == 4
    assert np.array_equal(m.c, copies(4).c) and np.array_equal(m.c_bar, copies(4).c_bar)
    d = make("distinct:n=8")
    assert d.N == 8 and d.names == "distinct" and d.meta["N"] == 8
    assert np.array_equal(d.c, _model("distinct", 8).c) and np.array_equal(d.c_bar, _model("distinct", 8).c_bar)
    s = make("distinct:n=3,seed=5,f=0.4,size=4,H=12")
    assert (s.N, s.S, s.H, s.meta["seed"], s.meta["f"]) == (3, 16, 12, 5, 0.4)
    with pytest.raises(CMDPInputError, match="n_constraints"):
        make("distinct:n=0")
