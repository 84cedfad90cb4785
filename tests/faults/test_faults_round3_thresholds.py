"""Round three, class 1: a finite but huge threshold made the planner say "optimal" with a wrong value.

``solve(method="fast")`` stopped when no column improved the master LP and said ``optimal``
without comparing its certified gap with ``gap_tol``; with ``c_bar = 1e14`` on Scenario 1a it
printed value 0.102 and gap 4.806 (V* = 4.908), and the LP method raised ``SolverError`` (exit 3)
for ``c_bar <= -1e20``. Now the thresholds are brought onto the range of the achievable costs
(``cmdp_rl.planning.thresholds``): a constraint no policy can violate is slack with multiplier 0,
one no policy can meet is infeasible with ``min_costs`` and a certificate, and no plan says
``optimal`` unless its certified gap is within ``gap_tol`` (else ``uncertified``, CLI exit 4).

Every expected value comes from an independent occupation-measure LP built entry by entry
(``tests/conftest.dense_reference_lp``) on the model *without* the slack constraint (so the
reference never sees the huge number), and least or largest costs from the same LP with a cost
as its objective.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np
import pytest
from conftest import dense_reference_lp
from faultkit import (
    EXIT_BAD_INPUT,
    EXIT_INFEASIBLE,
    EXIT_OK,
    EXIT_UNCERTIFIED,
    assert_one_line_refusal,
    cases,
    cli_batch,
)
from scipy.optimize import linprog

from cmdp_rl import CMDP, make, random_cmdp, solve
from cmdp_rl.planning.solve import GAP_TOL_PER_STEP

CLASS = "Round 3: 1. Huge thresholds and the word 'optimal'"

HUGE = (1e7, 1e9, 1e12, 1e14, 1e300)
VERY_NEGATIVE = (-1e20, -1e21, -1e300)


def _without(model: CMDP, i: int) -> CMDP:
    """``model`` with constraint ``i`` removed (what a slack constraint leaves)."""
    return model.replace(c=np.delete(model.c, i, axis=0), c_bar=np.delete(model.c_bar, i))


def _cost_extreme(model: CMDP, i: int, sign: float) -> float:
    """The largest (``sign = 1``) or least (``sign = -1``) achievable cost ``i``, by the reference LP."""
    status, v = dense_reference_lp(model, objective=sign * model.c[i], with_costs=False)
    assert status == 0
    return float(sign * v)


def _models(n: int) -> list[CMDP]:
    out = []
    for seed in range(n):
        g = np.random.default_rng(1000 + seed)
        S, A, H, N = int(g.integers(3, 7)), int(g.integers(2, 4)), int(g.integers(2, 6)), int(g.integers(1, 3))
        out.append(random_cmdp(S, A, H, N, seed=seed, slack=float(g.uniform(0.2, 0.8))))
    return out


@pytest.mark.parametrize("method", ["fast", "lp"])
def test_huge_thresholds_are_slack(method: str, tally: Callable[[int], None]) -> None:
    """A constraint at 1e7 .. 1e300, or at its largest achievable cost, is slack: multiplier exactly 0,
    status optimal, the value of the model without it, the gap within gap_tol; dense and sparse."""
    n = 0
    for model in _models(cases(4, 30)):
        for i in range(model.N):
            status, v_ref = dense_reference_lp(_without(model, i))
            top = _cost_extreme(model, i, 1.0)  # the largest achievable cost, by the reference LP
            for T in (*HUGE, top + 1e-9, top):
                cb = model.c_bar.copy()
                cb[i] = T
                for m in (model.replace(c_bar=cb), model.replace(c_bar=cb).to_sparse()):
                    res = solve(m, method)
                    if status == 2:  # the other constraint alone is infeasible
                        assert res.status == "infeasible"
                        continue
                    assert res.status == "optimal", (T, res)
                    assert abs(res.value - v_ref) <= 1e-7, (T, res.value, v_ref)
                    assert res.gap <= GAP_TOL_PER_STEP * model.H, (T, res.gap)
                    assert res.multipliers is not None and res.multipliers[i] == 0.0, (T, res.multipliers)
                    assert np.all(res.costs <= cb + 1e-7)
                    n += 1
    tally(n)


@pytest.mark.parametrize("method", ["fast", "lp"])
def test_thresholds_below_every_cost_are_infeasible(method: str, tally: Callable[[int], None]) -> None:
    """A threshold below the least achievable cost (-1e20 and beyond included: the LP raised
    SolverError) is infeasible, with the least costs in min_costs and multipliers that prove it:
    ``sum lambda = 1`` and ``lambda . c_bar < min_pi lambda . C(pi)``."""
    n = 0
    for model in _models(cases(3, 20)):
        mins = np.array([_cost_extreme(model, i, -1.0) for i in range(model.N)])
        for i in range(model.N):
            for T in (mins[i] - 1e-3, *VERY_NEGATIVE):
                cb = model.c_bar.copy()
                cb[i] = T
                res = solve(model.replace(c_bar=cb), method)
                assert res.status == "infeasible" and not res.feasible, (T, res)
                assert res.min_costs is not None and np.allclose(res.min_costs, mins, atol=1e-8)
                lam = res.multipliers
                assert lam is not None and np.all(lam >= 0) and abs(lam.sum() - 1.0) < 1e-9
                # min_pi lam . C(pi): the reference LP maximizing -lam . c
                status, v = dense_reference_lp(model, objective=-np.tensordot(lam, model.c, axes=1), with_costs=False)
                assert status == 0 and float(lam @ cb) < -v - 1e-9, (lam, cb, -v)
                assert np.isfinite(res.value) and np.all(np.isfinite(res.costs))
                n += 1
    tally(n)


def _discounted_reference(model: CMDP, drop: int) -> float:
    """Altman's LP built entry by entry, without constraint ``drop`` (independent of the library)."""
    S, A, g = model.S, model.A, float(model.gamma or 0.0)
    P = np.asarray(model.P)
    A_eq = np.zeros((S, S * A))
    for s in range(S):
        for a in range(A):
            A_eq[s, s * A + a] += 1.0
            for s2 in range(S):
                A_eq[s2, s * A + a] -= g * P[s, a, s2]
    keep = [j for j in range(model.N) if j != drop]
    A_ub = np.array([model.c[j].ravel() for j in keep]).reshape(len(keep), S * A)
    kw = {"A_ub": A_ub, "b_ub": model.c_bar[keep]} if keep else {}
    res = linprog(-model.r.ravel(), A_eq=A_eq, b_eq=model.rho, bounds=(0, None), method="highs-ipm", **kw)
    assert res.status == 0
    return float(-res.fun)


@pytest.mark.parametrize("method", ["fast", "lp"])
def test_discounted_huge_thresholds(method: str, tally: Callable[[int], None]) -> None:
    """The discounted planners too: a slack constraint at 1e9 .. 1e300 gives the optimum without it."""
    n = 0
    for seed in range(cases(2, 10)):
        model = make(f"ding-random:S=6,A=3,seed={seed}")
        v_ref = _discounted_reference(model, 0)
        for T in HUGE:
            res = solve(model.replace(c_bar=np.array([T])), method)
            assert res.status == "optimal" and res.multipliers is not None and res.multipliers[0] == 0.0
            assert abs(res.value - v_ref) <= 1e-7 * model.max_return, (T, res.value, v_ref)
            n += 1
        for T in VERY_NEGATIVE:
            assert solve(model.replace(c_bar=np.array([T])), method).status == "infeasible"
            n += 1
    tally(n)


def test_optimal_only_within_gap_tol(tally: Callable[[int], None]) -> None:
    """No result says optimal unless its certified gap is within gap_tol: a solve stopped after one
    master round is "uncertified", keeps its gap and stays feasible; the LP's gap is measured (its
    duals' bound against an exact evaluation of its policy), not a constant 0."""
    n = 0
    for model in (make("garnet"), make("distinct"), *_models(cases(2, 10))):
        tol = GAP_TOL_PER_STEP * model.H
        for kwargs in ({"max_iter": 1}, {"gap_tol": 0.0}, {}):
            res = solve(model, "fast", **kwargs)  # type: ignore[arg-type]
            if res.status == "infeasible":
                continue
            limit = kwargs.get("gap_tol", tol)
            assert (res.status == "optimal") == (res.gap <= limit), (kwargs, res.status, res.gap)
            assert res.feasible and np.all(res.costs <= model.c_bar + 1e-7)
            n += 1
        lp = solve(model, "lp")
        if lp.status != "infeasible":
            assert np.isfinite(lp.gap) and lp.gap >= 0.0 and lp.info["bound"] >= lp.value
            assert (lp.status == "optimal") == (lp.gap <= tol)
            n += 1
    stopped = solve(make("garnet"), "fast", max_iter=1)
    assert stopped.status == "uncertified" and stopped.gap > GAP_TOL_PER_STEP * 20 and stopped.feasible
    tally(n + 1)


def test_cli_huge_thresholds_and_exit_codes(tally: Callable[[int], None]) -> None:
    """The issue's commands: 1a at c_bar = 1e14 is the optimum of c_bar = 10 (both methods, exit 0);
    at -1e21 the LP says infeasible (exit 1, not 3); a gamma with 1 / (1 - gamma) > 1e9 is refused
    naming gamma; an uncertified plan exits 4 and says so."""
    gammas = ("0.9999999999", "0.999999999999999")[: cases(1, 2)]
    # --gap-tol 0: a plan whose gap is not exactly 0 cannot be called optimal
    runs = [(name, method) for name in ("1a:c_bar=0.39", "garnet", "distinct") for method in ("fast", "lp")]
    runs = runs[:: 1 if cases(0, 1) else 3]  # a sample: (1a, fast) and (garnet, lp)
    argvs = [["solve", "1a:c_bar=10", "--json"]]
    for method in ("fast", "lp"):
        argvs += [["solve", "1a:c_bar=1e14", "--json", "--method", method]]
        argvs += [["solve", "1a:c_bar=-1e21", "--json", "--method", method]]
    argvs += [["solve", f"ding-random:S=4,A=2,gamma={g}"] for g in gammas]
    argvs += [["solve", name, "--json", "--gap-tol", "0", "--method", method] for name, method in runs]
    procs = iter(cli_batch(argvs))  # one fresh interpreter for all, in this order
    n = 0
    ref = json.loads(next(procs).stdout)
    for _method in ("fast", "lp"):
        proc = next(procs)
        out = json.loads(proc.stdout)
        assert proc.returncode == EXIT_OK and out["status"] == "optimal", proc.stdout
        assert abs(out["value"] - ref["value"]) < 1e-9 and out["multipliers"] == [0.0]
        proc = next(procs)
        assert proc.returncode == EXIT_INFEASIBLE and json.loads(proc.stdout)["status"] == "infeasible", proc.stderr
        n += 2
    for _g in gammas:
        line = assert_one_line_refusal(next(procs), EXIT_BAD_INPUT)
        assert "gamma" in line
        n += 1
    seen = set()
    for _run in runs:
        proc = next(procs)
        out = json.loads(proc.stdout)
        expected = {"optimal": EXIT_OK, "uncertified": EXIT_UNCERTIFIED}[out["status"]]
        assert proc.returncode == expected and (out["gap"] > 0) == (out["status"] == "uncertified"), out
        seen.add(out["status"])
        n += 1
    assert "uncertified" in seen
    tally(n)


@pytest.mark.parametrize("method", ["fast", "lp"])
def test_extended_lp_thresholds_and_gap(method: str, tally: Callable[[int], None]) -> None:
    """The learners' optimistic planner (the extended LP, both methods): a huge threshold gives the
    plan of a threshold at the trivial bound H * max c (slack either way), one below every cost is
    infeasible (the HiGHS reference raised "model status Empty" at -1e21), and an "optimal" plan
    carries its certified gap (the duals' EVI bound minus the value) within 1e-9 * H."""
    from cmdp_rl.planning.elp import solve_elp

    n = 0
    for model in _models(cases(2, 12)):
        beta = np.full(model.P.shape, 0.05)
        base = solve_elp(model, model.P, beta, method=method)
        assert base.status != "optimal" or base.gap <= GAP_TOL_PER_STEP * model.H, base.gap
        top = model.H * model.c.reshape(model.N, -1).max(axis=1)
        at_top = solve_elp(model.replace(c_bar=top), model.P, beta, method=method)
        for T in HUGE:
            res = solve_elp(model.replace(c_bar=np.full(model.N, T)), model.P, beta, method=method)
            assert res.status == "optimal" and abs(res.value - at_top.value) <= 1e-7, (T, res.value, at_top.value)
            assert res.gap <= GAP_TOL_PER_STEP * model.H
            n += 1
        for T in VERY_NEGATIVE:
            res = solve_elp(model.replace(c_bar=np.full(model.N, T)), model.P, beta, method=method)
            assert res.status == "infeasible" and res.min_costs is not None
            n += 1
    tally(n)
