"""Column generation's fast paths: the dense master-LP simplex against HiGHS, the batched
column evaluation against a NumPy forward pass, the compiled assembly, the HiGHS fallback."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy.optimize import linprog

from cmdp_rl import CMDPInputError, random_cmdp, solve_elp
from cmdp_rl.confidence.box import Box, evi, greedy_rows, make_column
from cmdp_rl.confidence.box import min_costs as optimistic_min_costs
from cmdp_rl.confidence.radii import confidence_set
from cmdp_rl.kernels.evi import LOOP_FALLBACK, MASTER_FAILED, MASTER_OK, _eval_into, master_lp, mix_plan
from cmdp_rl.planning import elp_dense as colgen
from cmdp_rl.planning.elp_dense import ELPWorkspace, solve_colgen
from cmdp_rl.planning.result import REACH_TOL, policy_from_occupancy


def _random_master(rng: np.random.Generator, N: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(costs (K, N), values (K,), b (N,))``, often degenerate: integer ties, duplicated
    columns, values linear in the costs (a face of dual optima), thresholds equal to a column."""
    K = int(rng.integers(1, 25))
    kind = int(rng.integers(0, 5))
    if kind == 0:
        C = rng.random((K, N)) * 10
        v = rng.random(K) * 10
    elif kind == 1:
        C = rng.integers(0, 4, (K, N)).astype(float)
        v = rng.integers(0, 4, K).astype(float)
    elif kind == 2:
        base = rng.random((max(1, K // 3), N))
        idx = rng.integers(0, base.shape[0], K)
        C, v = base[idx], rng.random(base.shape[0])[idx]
    elif kind == 3:
        C = rng.random((K, N))
        v = C @ rng.random(N)
    else:  # one column repeated: every basis is degenerate
        C = np.tile(rng.random(N), (K, 1))
        v = np.full(K, rng.random())
    b = C[rng.integers(0, K)].copy() if rng.random() < 0.3 else rng.random(N) * C.max() * 1.2 - 0.1
    return C, v, b


def _reference(C: np.ndarray, v: np.ndarray, b: np.ndarray, phase1: bool) -> Any:
    K, N = C.shape
    if phase1:  # min t  s.t.  C w - t <= b, sum w = 1
        return linprog(
            np.r_[np.zeros(K), 1.0],
            A_ub=np.c_[C.T, -np.ones(N)],
            b_ub=b,
            A_eq=np.r_[np.ones(K), 0.0][None],
            b_eq=[1.0],
            bounds=[(0, None)] * K + [(None, None)],
            method="highs",
        )
    return linprog(-v, A_ub=C.T, b_ub=b, A_eq=np.ones((1, K)), b_eq=[1.0], bounds=(0, None), method="highs")


def _check_certificate(C: np.ndarray, v: np.ndarray, b: np.ndarray, phase1: bool, w: Any, obj: float, y: Any) -> None:
    """Primal feasibility, dual feasibility and a zero duality gap (to 1e-9 relative)."""
    K, N = C.shape
    sc = 1.0 + np.abs(C).max() + np.abs(v).max() + np.abs(b).max()
    lam, nu = y[:N], y[N]
    assert lam.min() >= -1e-9
    assert w.min() >= -1e-10 and abs(w.sum() - 1.0) <= 1e-9
    t = -obj if phase1 else 0.0
    assert np.all(C.T @ w <= b + t + 1e-9 * sc)
    gain = np.zeros(K) if phase1 else v
    assert np.all(gain - C @ lam - nu <= 1e-9 * sc)  # no column prices out
    assert abs(lam @ b + nu - obj) <= 1e-9 * sc  # dual objective = primal objective
    if phase1:
        assert abs(lam.sum() - 1.0) <= 1e-9


@pytest.mark.slow
@pytest.mark.parametrize("N", [1, 2, 3])
def test_dense_master_matches_highs_on_random_masters(N: int) -> None:
    rng = np.random.default_rng(100 + N)
    checked = infeasible = 0
    for _ in range(1000):
        C, v, b = _random_master(rng, N)
        phase1 = bool(rng.random() < 0.3)
        ref = _reference(C, v, b, phase1)
        w, obj, y, status = master_lp(C, v, b, phase1)
        if ref.status == 2:  # phase 2 with no feasible mixture: the dense solver must not claim one
            assert not phase1 and status == MASTER_FAILED
            infeasible += 1
            continue
        assert ref.status == 0 and status == MASTER_OK
        sc = 1.0 + np.abs(C).max() + np.abs(v).max() + np.abs(b).max()
        assert obj == pytest.approx(-ref.fun, abs=1e-9 * sc)
        _check_certificate(C, v, b, phase1, w, obj, y)
        checked += 1
    assert checked > 500 and infeasible > 20


def test_dense_master_small_cases() -> None:
    # N = 1, two columns straddling the threshold: the optimum mixes them
    C = np.array([[0.0], [2.0]])
    v = np.array([1.0, 3.0])
    w, obj, y, status = master_lp(C, v, np.array([1.0]), False)
    assert status == MASTER_OK and np.allclose(w, [0.5, 0.5]) and obj == pytest.approx(2.0)
    assert y[0] == pytest.approx(1.0) and y[1] == pytest.approx(1.0)
    # a single infeasible column: phase 1 returns its excess, phase 2 reports failure
    C1 = np.array([[3.0, 1.0]])
    w, obj, y, status = master_lp(C1, np.array([1.0]), np.array([1.0, 2.0]), True)
    assert status == MASTER_OK and obj == pytest.approx(-2.0) and w[0] == pytest.approx(1.0)
    assert np.allclose(y[:2], [1.0, 0.0])
    assert master_lp(C1, np.array([1.0]), np.array([1.0, 2.0]), False)[3] == MASTER_FAILED
    # many identical columns and a tight threshold (fully degenerate)
    C = np.ones((12, 3))
    w, obj, y, status = master_lp(C, np.ones(12), np.ones(3), False)
    assert status == MASTER_OK and obj == pytest.approx(1.0) and w.sum() == pytest.approx(1.0)


def _instance(seed: int, N: int = 2) -> tuple[Any, Box, Any]:
    m = random_cmdp(7, 3, 5, N, seed=seed, slack=0.3, support=3)
    cs = confidence_set(np.random.default_rng(seed).multinomial(30, m.P), 0.05)
    return m, Box.from_radius(cs.p_hat, cs.beta), cs


def test_batched_columns_equal_numpy_forward_pass() -> None:
    """The compiled evaluation of a vertex against a NumPy forward pass over the greedy rows."""
    m, box, _ = _instance(1)
    rng = np.random.default_rng(0)
    acts = rng.integers(0, m.A, (6, m.H, m.S))
    ords = np.stack([np.stack([rng.permutation(m.S) for _ in range(m.H)]) for _ in range(6)])
    dist, values, costs = np.empty((6, m.H, m.S)), np.empty(6), np.empty((6, m.N))
    for k in range(6):
        _eval_into(box.lower, box.room, box.spare, acts[k], ords[k], m.r, m.c, m.s0, k, dist, values, costs)
    ss = np.arange(m.S)
    for k in range(6):
        rows = greedy_rows(box, ords[k])  # (H, S, A, S)
        ref = np.zeros((m.H, m.S))
        ref[0, m.s0] = 1.0
        for h in range(m.H - 1):
            ref[h + 1] = ref[h] @ rows[h, ss, acts[k, h]]
        np.testing.assert_allclose(dist[k], ref, rtol=0, atol=1e-13)
        assert values[k] == pytest.approx(float(np.sum(ref * m.r[ss, acts[k]])), rel=1e-12, abs=1e-13)
        ref_costs = [float(np.sum(ref * m.c[i][ss, acts[k]])) for i in range(m.N)]
        np.testing.assert_allclose(costs[k], ref_costs, rtol=1e-12, atol=1e-13)
        col = make_column(box, acts[k], ords[k], m.r, m.c, m.s0)
        np.testing.assert_array_equal(col.rows(box), rows[np.arange(m.H)[:, None], ss[None, :], acts[k]])


def test_compiled_plan_equals_numpy() -> None:
    rng = np.random.default_rng(3)
    K, H, S, A, N = 4, 5, 6, 3, 2
    acts = rng.integers(0, A, (K, H, S))
    dist = rng.random((K, H, S)) * (rng.random((K, H, S)) < 0.6)
    values, costs = rng.random(K), rng.random((K, N))
    w_in = np.array([1.0, -1e-17, 0.6, 0.4])
    w, mu, pol, value, mixed = mix_plan(w_in, acts, dist, values, costs, A, REACH_TOL)
    w_ref = np.maximum(w_in, 0.0) / np.maximum(w_in, 0.0).sum()
    ref = np.zeros((H, S, A))
    for k in range(K):
        np.add.at(ref, (np.arange(H)[:, None], np.arange(S)[None, :], acts[k]), w_ref[k] * dist[k])
    np.testing.assert_allclose(w, w_ref, rtol=0, atol=1e-15)
    np.testing.assert_allclose(mu, ref, rtol=0, atol=1e-15)
    np.testing.assert_allclose(pol, policy_from_occupancy(ref), rtol=0, atol=1e-15)
    assert value == pytest.approx(w_ref @ values, rel=1e-15)
    np.testing.assert_allclose(mixed, w_ref @ costs, rtol=1e-15)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("shift", [None, 1e-3, -0.05])
def test_fallback_and_highs_master_give_the_same_optimum(
    seed: int, shift: float | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dense compiled loop, the HiGHS reference loop and the compiled loop giving up
    (its fallback) reach the literal ELP's optimum, also with thresholds just above the
    optimistic minimum (phase 1 then phase 2) and below it (infeasible)."""
    m, box, cs = _instance(seed, N=2 if shift is None else 1)
    if shift is not None:
        m = m.replace(c_bar=optimistic_min_costs(box, m.c, m.s0, m.H) + shift)
    fast = solve_elp(m, cs.p_hat, cs.beta)
    ref = solve_elp(m, cs.p_hat, cs.beta, workspace=ELPWorkspace("highs"))
    lit = solve_elp(m, cs.p_hat, cs.beta, method="lp")
    real_loop = colgen.colgen_loop

    def giving_up(*args: Any) -> Any:
        return (LOOP_FALLBACK, *real_loop(*args)[1:])

    monkeypatch.setattr(colgen, "colgen_loop", giving_up)
    fb = solve_elp(m, cs.p_hat, cs.beta)
    assert fb.status == fast.status == ref.status == lit.status
    assert fast.status == ("infeasible" if shift is not None and shift < 0 else "optimal")
    for res in (fb, ref):  # the fallback is the reference loop
        _same_optimum(res, fast)
    np.testing.assert_array_equal(fb.policy, ref.policy)
    if fast.status == "optimal":
        assert fast.value == pytest.approx(lit.value, rel=1e-7, abs=1e-9)
    else:
        assert fast.max_excess == pytest.approx(lit.max_excess, abs=1e-7)


@pytest.mark.slow
def test_warm_start_matches_cold_and_rejects_bad_columns() -> None:
    m, box, _ = _instance(5)
    cold = solve_colgen(box, m.r, m.c, m.c_bar, m.s0, m.H, want_kernel=False)
    warm = solve_colgen(
        box, m.r, m.c, m.c_bar, m.s0, m.H, warm_start=cold.info["columns"], warm_duals=cold.info["duals"]
    )
    assert warm.value == pytest.approx(cold.value, rel=1e-9, abs=1e-12)
    assert warm.kernel is not None and cold.kernel is None
    acts, order = cold.info["columns"][0]
    with pytest.raises(CMDPInputError, match="warm_start"):
        solve_colgen(box, m.r, m.c, m.c_bar, m.s0, m.H, warm_start=[(acts + m.A, order)])
    with pytest.raises(CMDPInputError, match="warm_start"):
        solve_colgen(box, m.r, m.c, m.c_bar, m.s0, m.H, warm_start=[(acts[:-1], order)])
    # a duplicated warm column is evaluated once
    dup = solve_colgen(box, m.r, m.c, m.c_bar, m.s0, m.H, warm_start=[(acts, order), (acts.copy(), order.copy())])
    assert dup.value == pytest.approx(cold.value, rel=1e-9, abs=1e-12)
    # evi itself still agrees: the pricing sweep on the plain reward is the unconstrained optimum
    unc = solve_colgen(box, m.r, m.c[:0], m.c_bar[:0], m.s0, m.H)
    assert unc.value == pytest.approx(float(evi(box, m.r, m.H)[0][0, m.s0]), rel=1e-12)


@pytest.mark.parametrize("N", [0, 1, 2, 3])
@pytest.mark.parametrize("seed", range(3))
def test_dense_loop_and_highs_reference_reach_the_same_optimum(N: int, seed: int) -> None:
    """Cold, near-threshold and infeasible solves, then a warm re-solve on a perturbed box:
    same status, value, costs and worst excess with either master LP."""
    m, box, _ = _instance(seed, N=max(N, 1))
    if N == 0:
        m = m.replace(c=m.c[:0], c_bar=m.c_bar[:0])
    lo = optimistic_min_costs(box, m.c, m.s0, m.H) if N else np.zeros(0)
    highs = ELPWorkspace("highs")
    for c_bar in (m.c_bar, lo + 1e-4, lo - 0.02):
        args = (box, m.r, m.c, c_bar, m.s0, m.H)
        ref = solve_colgen(*args, workspace=highs)
        fast = solve_colgen(*args)
        _same_optimum(fast, ref)
        assert fast.kernel is not None and cs_contains(box, fast.kernel)
        # warm re-solve on a perturbed box, as a learner re-plans
        box2 = Box.from_bounds(box.lower * 0.98, np.minimum(box.upper * 1.02, 1.0))
        for warm_from in (fast, ref):
            warm = {"warm_start": warm_from.info["columns"], "warm_duals": warm_from.info["duals"]}
            a = solve_colgen(box2, *args[1:], want_kernel=False, **warm)
            b = solve_colgen(box2, *args[1:], want_kernel=False, workspace=highs, **warm)
            _same_optimum(a, b)


def cs_contains(box: Box, kernel: np.ndarray) -> bool:
    return bool(np.all(kernel >= box.lower - 1e-12) and np.all(kernel <= box.upper + 1e-12))


def _same_optimum(a: Any, b: Any) -> None:
    """Same status and optimum: the value when feasible, the worst excess when not (the
    plan itself may differ where the optimum is not unique)."""
    assert a.status == b.status
    if a.status == "optimal":
        assert a.value == pytest.approx(b.value, rel=1e-9, abs=1e-9)
        assert np.all(a.costs <= b.costs + max(b.max_excess, 0.0) + 1e-8) or a.max_excess <= 1e-7
    assert a.max_excess == pytest.approx(b.max_excess, abs=1e-9)
    np.testing.assert_allclose(a.policy.sum(-1), 1.0, rtol=0, atol=1e-12)


def test_workspace_master_choice() -> None:
    assert ELPWorkspace().master == "dense" and repr(ELPWorkspace("highs")) == "ELPWorkspace(master='highs')"
    with pytest.raises(CMDPInputError, match="master"):
        ELPWorkspace("simplex")
