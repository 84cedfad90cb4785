"""The dense extended LP's column generation: the compiled loop against the shared loop
(``run_colgen`` on a ``DenseBoxPool``), warm starts, the fallback."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from cmdp_rl import CMDPInputError, random_cmdp, solve_elp
from cmdp_rl.confidence.box import Box, evi
from cmdp_rl.confidence.box import min_costs as optimistic_min_costs
from cmdp_rl.confidence.radii import confidence_set
from cmdp_rl.kernels.colgen_loop import LOOP_FALLBACK
from cmdp_rl.planning import elp_dense as colgen
from cmdp_rl.planning.elp_dense import ELPWorkspace, solve_colgen


def _instance(seed: int, N: int = 2) -> tuple[Any, Box, Any]:
    m = random_cmdp(7, 3, 5, N, seed=seed, slack=0.3, support=3)
    cs = confidence_set(np.random.default_rng(seed).multinomial(30, m.P), 0.05)
    return m, Box.from_radius(cs.p_hat, cs.beta), cs


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("shift", [None, 1e-3, -0.05])
def test_fallback_and_shared_loop_give_the_same_optimum(
    seed: int, shift: float | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dense compiled loop, the shared loop and the compiled loop giving up
    (its fallback) reach the literal ELP's optimum, also with thresholds just above the
    optimistic minimum (phase 1 then phase 2) and below it (infeasible)."""
    m, box, cs = _instance(seed, N=2 if shift is None else 1)
    if shift is not None:
        m = m.replace(c_bar=optimistic_min_costs(box, m.c, m.s0, m.H) + shift)
    fast = solve_elp(m, cs.p_hat, cs.beta)
    ref = solve_elp(m, cs.p_hat, cs.beta, workspace=ELPWorkspace("shared"))
    lit = solve_elp(m, cs.p_hat, cs.beta, method="lp")
    real_loop = colgen.colgen_loop

    def giving_up(*args: Any) -> Any:
        return (LOOP_FALLBACK, *real_loop(*args)[1:])

    monkeypatch.setattr(colgen, "colgen_loop", giving_up)
    fb = solve_elp(m, cs.p_hat, cs.beta)
    assert fb.status == fast.status == ref.status == lit.status
    assert fast.status == ("infeasible" if shift is not None and shift < 0 else "optimal")
    for res in (fb, ref):  # the fallback is the shared loop
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
def test_dense_loop_and_shared_loop_reach_the_same_optimum(N: int, seed: int) -> None:
    """Cold, near-threshold and infeasible solves, then a warm re-solve on a perturbed box:
    same status, value, costs and worst excess with either loop."""
    m, box, _ = _instance(seed, N=max(N, 1))
    if N == 0:
        m = m.replace(c=m.c[:0], c_bar=m.c_bar[:0])
    lo = optimistic_min_costs(box, m.c, m.s0, m.H) if N else np.zeros(0)
    shared = ELPWorkspace("shared")
    for c_bar in (m.c_bar, lo + 1e-4, lo - 0.02):
        args = (box, m.r, m.c, c_bar, m.s0, m.H)
        ref = solve_colgen(*args, workspace=shared)
        fast = solve_colgen(*args)
        _same_optimum(fast, ref)
        assert fast.kernel is not None and cs_contains(box, fast.kernel)
        # warm re-solve on a perturbed box, as a learner re-plans
        box2 = Box.from_bounds(box.lower * 0.98, np.minimum(box.upper * 1.02, 1.0))
        for warm_from in (fast, ref):
            warm = {"warm_start": warm_from.info["columns"], "warm_duals": warm_from.info["duals"]}
            a = solve_colgen(box2, *args[1:], want_kernel=False, **warm)
            b = solve_colgen(box2, *args[1:], want_kernel=False, workspace=shared, **warm)
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
    assert ELPWorkspace().master == "dense" and repr(ELPWorkspace("shared")) == "ELPWorkspace(master='shared')"
    with pytest.raises(CMDPInputError, match="master"):
        ELPWorkspace("simplex")
