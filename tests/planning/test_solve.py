"""The exact planner (column generation with a certificate) against independent computations.

Known answers come from elsewhere: the HiGHS occupation-measure LP (a second formulation),
dynamic programming written here in plain NumPy (the Lagrangian bound, minimum costs), and
brute force over deterministic policies on tiny models.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from cmdp_rl import CMDP, CMDPInputError, evaluate, random_cmdp, solve
from cmdp_rl.planning.lp import min_worst_excess as lp_min_worst_excess
from cmdp_rl.planning.solve import min_worst_cost, min_worst_excess, unconstrained_least_cost

FEAS = 1e-7


def dp_value(P: np.ndarray, reward: np.ndarray, H: int, s0: int) -> float:
    """Optimal value of ``reward`` from ``s0``: backward induction in plain NumPy."""
    V = np.zeros(P.shape[0])
    for _ in range(H):
        V = (reward + P @ V).max(axis=1)
    return float(V[s0])


def random_model(rng: np.random.Generator) -> CMDP:
    """A random CMDP with S <= 30, N in 0..5, sometimes infeasible, sometimes with tied actions."""
    S, A, H, N = int(rng.integers(1, 31)), int(rng.integers(1, 5)), int(rng.integers(1, 9)), int(rng.integers(0, 6))
    slack = float(rng.choice([-0.3, 0.0, 0.2, 0.5, 0.9]))
    m = random_cmdp(S, A, H, N, seed=rng, support=int(rng.integers(1, 4)), slack=slack)
    if A > 1 and rng.random() < 0.3:  # ties: action 1 copies action 0
        P, r, c = m.P.copy(), m.r.copy(), m.c.copy()
        P[:, 1], r[:, 1], c[:, :, 1] = P[:, 0], r[:, 0], c[:, :, 0]
        m = m.replace(P=P, r=r, c=c)
    return m


def check_against_lp(m: CMDP) -> None:
    fast, lp = solve(m), solve(m, method="lp")
    assert fast.status == lp.status, (fast.status, lp.status)
    H = m.H
    if lp.status == "optimal":
        assert abs(fast.value - lp.value) <= 1e-7 * H
        ev = evaluate(m, fast.policy)  # the returned policy, evaluated exactly
        assert np.all(ev.costs <= m.c_bar + FEAS)
        assert abs(ev.value - fast.value) <= 1e-9 * H
        assert 0.0 <= fast.gap <= 1e-9 * H
        # the certificate, recomputed by plain DP: D(lambda) >= V* and D(lambda) - value <= gap
        lam = fast.multipliers
        assert lam.shape == (m.N,) and np.all(lam >= 0)
        t = fast.info["t"]
        D = dp_value(m.P, m.r - np.tensordot(lam, m.c, axes=1), H, m.s0) + float(lam @ (m.c_bar + t))
        assert D >= lp.value - 1e-9 * H
        assert D - fast.value <= fast.gap + 1e-9 * H
        # costs only where every optimum has them: a positive LP dual makes constraint i tight
        tight = lp.multipliers > 1e-6
        np.testing.assert_allclose(fast.costs[tight], m.c_bar[tight], atol=1e-7)
        # the mixture: weights sum to 1, and the columns reproduce value and costs
        assert fast.weights is not None and fast.columns is not None
        assert abs(fast.weights.sum() - 1.0) < 1e-12 and np.all(fast.weights > 0)
        assert fast.columns.shape[1:] == (H, m.S) and fast.columns.shape[0] <= m.N + 1
    else:
        assert np.isnan(fast.gap)
        mins = np.array([-dp_value(m.P, -m.c[i], H, m.s0) for i in range(m.N)])
        np.testing.assert_allclose(fast.min_costs, mins, atol=1e-9)
        np.testing.assert_allclose(fast.max_excess, lp.max_excess, atol=1e-7)
        lam = fast.multipliers
        assert np.all(lam >= 0) and abs(lam.sum() - 1) < 1e-9
        # max_pi sum_i lam_i (c_bar_i - C_i(pi)) = lam . c_bar - min_pi lam . C(pi) < 0
        best = lam @ m.c_bar + dp_value(m.P, -np.tensordot(lam, m.c, axes=1), H, m.s0)
        assert best < 0


@pytest.mark.parametrize("seed", range(40))
def test_random_models_agree_with_the_lp(seed: int) -> None:
    check_against_lp(random_model(np.random.default_rng(seed)))


def test_no_constraints_is_dynamic_programming() -> None:
    m = random_cmdp(12, 3, 6, 0, seed=4)
    res = solve(m)
    assert res.status == "optimal" and res.gap <= 1e-12 and res.multipliers.shape == (0,)
    assert abs(res.value - dp_value(m.P, m.r, m.H, m.s0)) < 1e-12
    assert res.columns.shape[0] == 1 and res.weights.tolist() == [1.0]  # one deterministic column


def _degenerate(kind: str) -> CMDP:
    m = random_cmdp(10, 3, 5, 2, seed=7, support=2)
    mins = np.array([-dp_value(m.P, -m.c[i], m.H, m.s0) for i in range(m.N)])
    loose = float(m.H)  # constraint 1 never binds: costs are at most H
    if kind == "at-min-cost":
        return m.replace(c_bar=np.array([mins[0], loose]))
    if kind == "hair-infeasible":
        return m.replace(c_bar=np.array([mins[0] - 1e-6, loose]))
    if kind == "hair-feasible":
        return m.replace(c_bar=np.array([mins[0] - 1e-9, loose]))
    if kind == "zero-cost":
        c = m.c.copy()
        c[1] = 0.0
        return m.replace(c=c, c_bar=np.array([m.c_bar[0], 0.0]))
    if kind == "copies":  # one constraint written twice: parallel rows in the master
        return m.replace(c=np.stack([m.c[0], m.c[0]]), c_bar=np.array([m.c_bar[0], m.c_bar[0]]))
    if kind == "ties":  # every action identical: all policies tie
        P = np.repeat(m.P[:, :1], 3, axis=1)
        return m.replace(P=P, r=np.repeat(m.r[:, :1], 3, axis=1), c=np.repeat(m.c[:, :, :1], 3, axis=2))
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["at-min-cost", "hair-infeasible", "hair-feasible", "zero-cost", "copies", "ties"])
def test_degenerate_models_agree_with_the_lp(kind: str) -> None:
    m = _degenerate(kind)
    check_against_lp(m)
    expect = "infeasible" if kind == "hair-infeasible" else "optimal"
    assert solve(m).status == expect


def test_sparse_and_dense_models_give_the_same_plan() -> None:
    m = random_cmdp(25, 4, 7, 3, seed=11, support=3)
    ms = CMDP(sp.csr_array(m.P.reshape(-1, m.S)), m.r, m.c, m.c_bar, m.s0, m.H)
    a, b = solve(m), solve(ms)
    assert a.value == b.value and np.array_equal(a.policy, b.policy) and a.gap == b.gap
    c, d = solve(m, method="lp"), solve(ms, method="lp")
    assert abs(c.value - d.value) < 1e-9
    ev = evaluate(ms, b.policy)
    np.testing.assert_allclose([ev.value, *ev.costs], [b.value, *b.costs], atol=1e-10)


def test_gap_tol_is_honoured() -> None:
    m = random_cmdp(30, 4, 10, 3, seed=2, support=3)
    exact = solve(m, method="lp").value
    for tol in (1e-1, 1e-3, 1e-9):
        res = solve(m, gap_tol=tol)
        assert res.gap <= tol and exact - res.value <= res.gap + 1e-9
    assert solve(m, gap_tol=1e-1).iterations <= solve(m).iterations


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        (dict(method="simplex"), "method: must be one of ['fast', 'lp']"),
        (dict(gap_tol=-1.0), "gap_tol: must be >= 0"),
        (dict(gap_tol=float("nan")), "gap_tol: must be finite"),
        (dict(max_iter=0), "max_iter: must be an integer >= 1"),
    ],
)
def test_bad_arguments_are_named(kwargs: dict, fragment: str) -> None:
    with pytest.raises(CMDPInputError) as err:
        solve(random_cmdp(3, 2, 2, 1, seed=0), **kwargs)
    assert fragment in str(err.value)


def test_min_worst_excess_matches_the_lp() -> None:
    for seed in range(8):
        m = random_cmdp(15, 3, 5, 3, seed=seed, support=2, slack=[-0.2, 0.3][seed % 2])
        assert abs(min_worst_excess(m) - lp_min_worst_excess(m).max_excess) < 1e-8


def _deterministic_policies(S: int, A: int, H: int):
    for table in itertools.product(range(A), repeat=H * S):
        yield np.array(table).reshape(H, S)


def test_tie_breaks_against_brute_force() -> None:
    rng = np.random.default_rng(3)
    S, A, H, N = 2, 3, 2, 2
    P = rng.dirichlet(np.ones(S), size=(S, A))
    P[:, 2] = P[:, 0]
    r = rng.random((S, A)).round(1)
    r[:, 2] = r[:, 0]  # action 2 ties with action 0 in value, not in cost
    c = rng.random((N, S, A)).round(1)
    m = CMDP(P, r, c, np.zeros(N), 0, H)
    rows = []
    for acts in _deterministic_policies(S, A, H):
        pol = np.eye(A)[acts]
        ev = evaluate(m, pol)
        rows.append((ev.value, ev.costs))
    vmax = max(v for v, _ in rows)
    least = min(cs.sum() for v, cs in rows if v >= vmax - 1e-12)
    _, value, costs = unconstrained_least_cost(m)
    assert abs(value - vmax) < 1e-12 and abs(costs.sum() - least) < 1e-12
    # the worst-cost minimizer: min over mixtures of max_i C_i is an LP; its smallest total cost
    plan, t = min_worst_cost(m)
    assert abs(t - lp_min_worst_excess(m).max_excess) < 1e-9
    assert np.all(plan.costs <= t + 1e-9)


def tight_lp_value(m: CMDP) -> float:
    """The occupation-measure LP solved by HiGHS with tolerances 1e-10 (the default 1e-7 lets a
    policy exceed a threshold by up to 1e-7 and gain value for it)."""
    from scipy.optimize import linprog

    from cmdp_rl.planning.lp import flow_constraints

    A_eq, b_eq = flow_constraints(m.kernel, m.H, m.s0)
    obj = np.tile(m.r.ravel(), m.H)
    A_ub = np.tile(m.c.reshape(m.N, -1), (1, m.H)) if m.N else None
    opts = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}
    res = linprog(-obj, A_ub=A_ub, b_ub=m.c_bar if m.N else None, A_eq=A_eq, b_eq=b_eq, method="highs", options=opts)
    assert res.status == 0, res.message
    return float(-res.fun)


@pytest.mark.slow
def test_registered_problems_keep_their_values() -> None:
    """Switching solve's default to column generation keeps every registered problem's value."""
    from cmdp_rl.envs.registry import PROBLEMS, make

    for name in PROBLEMS:
        m = make(name)
        res = solve(m)
        if res.status == "infeasible":
            assert solve(m, method="lp").status == "infeasible", name
            continue
        reference = solve(m, method="lp").value if m.is_discounted else tight_lp_value(m)
        assert abs(res.value - reference) <= 1e-7 * m.max_return, name


def test_threshold_helpers_validate_their_input() -> None:
    from cmdp_rl.envs.generators import garnet_kernel
    from cmdp_rl.planning.solve import slater_thresholds

    m = random_cmdp(5, 2, 3, 1, seed=0)
    with pytest.raises(CMDPInputError, match=r"f: the threshold fraction must lie in \[0, 1\]"):
        slater_thresholds(m, 1.5)
    with pytest.raises(CMDPInputError, match="N = 0"):
        slater_thresholds(random_cmdp(5, 2, 3, 0, seed=0), 0.5)
    with pytest.raises(CMDPInputError, match="b: the branching factor must be at most S = 3"):
        garnet_kernel(3, 2, 4, np.random.default_rng(0))
    with pytest.raises(TypeError, match="rng"):
        garnet_kernel(3, 2, 2, 0)  # type: ignore[arg-type]
    K = garnet_kernel(50, 3, 4, np.random.default_rng(0))  # b distinct successors, rows sum to 1
    assert np.all(np.diff(K.indptr) == 4) and np.allclose(K.sum(axis=1), 1.0)
    # the thresholds leave the Slater gap the LP finds for them
    c_bar, gap = slater_thresholds(m, 0.5)
    assert abs(gap + lp_min_worst_excess(m.replace(c_bar=c_bar)).max_excess) < 1e-8


def test_sweeps_on_the_reachable_states_give_the_full_sweeps_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ragged model that only moves forward (successors of ``s`` among ``s + 1 .. s + 3``), so
    each step reaches a few of its 40 states: the pool sweeps those only, and the plan is the one
    of full sweeps (``REACH_FRACTION = 0`` turns the restriction off) bit for bit, the columns
    equal on every pair some policy reaches and the state's first available action elsewhere;
    its value is the LP's."""
    from cmdp_rl.kernels import csr_reach as reach
    from cmdp_rl.planning.solve import ColumnPool, slater_thresholds

    rng = np.random.default_rng(11)
    S, A, H = 40, 3, 12
    P = np.zeros((S, A, S))
    for s, a in np.ndindex(S, A):
        succ = np.minimum(s + rng.integers(1, 4, size=2), S - 1)
        P[s, a, succ] += rng.random(2) + 0.1
    P /= P.sum(axis=2, keepdims=True)
    mask = rng.random((S, A)) < 0.6
    mask[np.arange(S), rng.integers(0, A, size=S)] = True
    m = CMDP(np.where(mask[..., None], P, 0.0), rng.random((S, A)), rng.random((1, S, A)), [H], 0, H=H, actions=mask)
    m = m.replace(c_bar=slater_thresholds(m, 0.5)[0])
    pool = ColumnPool(m.K, m.r, m.c, m.s0, H, m.actions)
    steps = pool.reachable()
    assert steps is not None and steps[0].size < H * S / 4
    pruned = solve(m)
    monkeypatch.setattr(reach, "REACH_FRACTION", 0.0)
    assert ColumnPool(m.K, m.r, m.c, m.s0, H, m.actions).reachable() is None
    full = solve(m)
    assert pruned.status == full.status == "optimal" and full.multipliers[0] > 0.0  # the constraint binds
    for key in ("value", "costs", "gap", "multipliers", "weights", "sweeps", "iterations", "policy", "occupancy"):
        assert np.array_equal(getattr(pruned, key), getattr(full, key)), key
    on = np.zeros((H, S), dtype=bool)
    for h in range(H):
        on[h, steps[0][steps[1][h] : steps[1][h + 1]]] = True
    assert np.array_equal(pruned.columns[:, on], full.columns[:, on])
    first = np.broadcast_to(mask.argmax(axis=1), (H, S))
    assert np.all(pruned.columns[:, ~on] == first[~on])
    assert abs(pruned.value - solve(m, method="lp").value) <= 1e-7 * H
