"""A plan's Markov tables mixed on demand (``cmdp_rl.planning.mixing``): the same bits as the eager
mixing the planner did before (``mix_plan`` over every column's distribution), the occupancy the
columns' own occupancies give (``evaluate`` of each deterministic column, weighted), the refusal
above the memory limit, ``dataclasses.replace`` and a ``repr`` that builds nothing."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from cmdp_rl import CMDP, evaluate, solve
from cmdp_rl.kernels.colgen_loop import mix_plan
from cmdp_rl.planning.discounted import StationaryPool
from cmdp_rl.planning.mixing import PlanTables, table_bytes
from cmdp_rl.planning.result import REACH_TOL, plan_in_units
from cmdp_rl.planning.solve import ColumnPool, solve_fast
from cmdp_rl.plumbing import limits
from cmdp_rl.plumbing.errors import CMDPInputError


def _model(seed: int, S: int = 7, A: int = 3, N: int = 2, gamma: float | None = None, ragged: bool = False) -> CMDP:
    """A random CMDP with thresholds halfway between the least and largest per-step cost totals
    (binding: the plans mix several columns)."""
    rng = np.random.default_rng(seed)
    mask = None
    if ragged:
        mask = rng.random((S, A)) < 0.6
        mask[np.arange(S), rng.integers(0, A, S)] = True
    P = rng.random((S, A, S)) * (rng.random((S, A, S)) < 0.5)
    P[:, :, 0] += 1e-3
    P /= P.sum(-1, keepdims=True)
    if mask is not None:
        P = np.where(mask[..., None], P, 0.0)
    r, c = rng.random((S, A)), rng.random((N, S, A))
    T = 4.0 if gamma is None else 1.0 / (1.0 - gamma)
    length = {"H": 4} if gamma is None else {"gamma": gamma}
    return CMDP(P, r, c, np.full(N, 0.45 * T), 0, **length, actions=mask)


def _eager(m: CMDP, plan):
    """The tables as the planner built them before: ``mix_plan`` over the columns' distributions
    (from a fresh pool of the model), restricted to the available actions."""
    from cmdp_rl.model.actions import restrict_policy

    cols = plan.columns
    if m.gamma is None:
        pool = ColumnPool(m.K, m.r, m.c, m.s0, m.H, m.actions)
        acts = np.stack([np.ascontiguousarray(a, dtype=np.int8) for a in cols])
        pool.actions = list(acts)
        dist = np.stack([pool.distribution(k) for k in range(len(cols))])
    else:
        pool = StationaryPool(m.K, m.r, m.c, m.rho, m.gamma, m.actions)
        pool.actions = [np.ascontiguousarray(a, dtype=np.int8) for a in cols]
        acts = np.stack(pool.actions)[:, None]
        dist = np.stack([pool.distribution(k) for k in range(len(cols))])[:, None]
    K = len(cols)
    _, mu, policy, _, _ = mix_plan(plan.weights, acts, dist, np.zeros(K), np.zeros((K, 1)), m.A, REACH_TOL)
    policy = restrict_policy(policy, m.actions)
    return (policy, mu) if m.gamma is None else (policy[0], mu[0])


def _column_occupancy(m: CMDP, plan) -> np.ndarray:
    """``sum_k w_k mu_k``: each column played as a one-hot table and evaluated (``evaluate``'s own
    forward/backward passes, not the mixer's)."""
    out = 0.0
    for col, w in zip(plan.columns, plan.weights, strict=True):
        table = np.zeros((*col.shape, m.A))
        np.put_along_axis(table, col[..., None].astype(np.int64), 1.0, axis=-1)
        out = out + w * evaluate(m, table).occupancy
    return np.asarray(out)


@pytest.mark.parametrize(("gamma", "ragged"), [(None, False), (None, True), (0.9, False), (0.9, True)])
def test_lazy_tables_equal_the_eager_mixing_and_the_columns_occupancy(gamma, ragged) -> None:
    m = _model(3, gamma=gamma, ragged=ragged)
    plan = solve_fast(m)
    assert plan.columns.dtype == np.uint8 and plan.weights.sum() == pytest.approx(1.0)
    assert not plan.tables.built  # the planner built no table
    policy, mu = _eager(m, plan)
    np.testing.assert_array_equal(plan.occupancy, mu)  # the same bits as the eager mixing
    np.testing.assert_array_equal(plan.policy, policy)
    np.testing.assert_allclose(plan.occupancy, _column_occupancy(m, plan), atol=1e-12)
    ev = evaluate(m, plan.policy)  # the Markov table has the mixture's value and costs
    assert ev.value == pytest.approx(plan.value, abs=1e-10)
    np.testing.assert_allclose(ev.costs, plan.costs, atol=1e-10)
    if m.actions is not None:
        assert not (plan.policy[..., ~m.actions] > 0).any()


def test_mixing_several_columns() -> None:
    m = _model(3)
    plan = solve_fast(m)
    assert len(plan.weights) >= 2  # the test above mixes, not copies, a column


def test_the_table_is_refused_above_the_limit_with_the_estimate(monkeypatch) -> None:
    m = _model(5)
    plan = solve(m)
    need = table_bytes(plan.table_shape, False)
    assert need == 8.0 * (2 * 4 * 7 * 3 + 4 * 7)  # occupancy, policy, one (H, S) distribution
    monkeypatch.setattr(limits, "DEFAULT_MAX_MEMORY", 100)
    with pytest.raises(CMDPInputError, match=r"plan\.policy: the \(4, 7, 3\) Markov table .* about 1\.53 KiB .* 100 B"):
        _ = plan.policy
    with pytest.raises(CMDPInputError, match=r"plan\.occupancy: .*max_memory"):
        _ = plan.occupancy
    assert evaluate(m, plan).value == pytest.approx(plan.value, abs=1e-12)  # the compact path needs no table
    table = plan.markov_policy(max_memory=need)
    assert plan.policy is table and plan.occupancy_table(max_memory=1) is plan.occupancy  # built once, kept


def test_replace_repr_and_units_build_no_table() -> None:
    m = _model(6)
    plan = solve(m.replace(r=3.0 * m.r + 1.0))  # not on the unit scale: plan_in_units runs
    text = repr(plan)
    assert "policy=<(4, 7, 3) table, mixed on use>" in text and not plan.tables.built
    moved = dataclasses.replace(plan, value=0.0)
    assert moved.tables is plan.tables and moved.value == 0.0 and not plan.tables.built
    assert plan_in_units(plan, _identity_units(m), m.c_bar) is plan
    np.testing.assert_array_equal(moved.policy, plan.policy)  # one table, shared
    assert "policy=<(4, 7, 3) array>" in repr(plan)
    given = dataclasses.replace(plan, policy=np.ones((4, 7, 3)) / 3)  # a new table replaces the tables
    assert given.policy[0, 0, 0] == pytest.approx(1 / 3) and given.occupancy is plan.occupancy


def _identity_units(m: CMDP):
    from cmdp_rl.model.units import unit_model

    return unit_model(m)[1]


def test_dense_tables_pass_through_and_one_of_the_two_is_needed() -> None:
    m = _model(7)
    plan = solve(m, "lp")
    assert plan.tables.built and plan.columns is None and plan.policy.shape == (4, 7, 3)
    with pytest.raises(AssertionError):
        PlanTables((1, 1, 1))


def test_solving_evaluating_and_the_cli_solve_never_build_the_table(monkeypatch, tmp_path, capsys) -> None:
    from cmdp_rl.cli import main

    def refuse(self, what, max_memory=None):
        raise AssertionError(f"{what} was built")

    monkeypatch.setattr(PlanTables, "get", refuse)
    for m in (_model(8).replace(r=2.0 * _model(8).r), _model(8, gamma=0.9)):
        plan = solve(m)
        assert plan.feasible and evaluate(m, plan).value == pytest.approx(plan.value, abs=1e-9)
    path = tmp_path / "m.npz"
    _model(8).save(path)
    assert main(["solve", str(path)]) == 0
    assert "a mixture of" in capsys.readouterr().out


def test_a_plan_crosses_processes_with_its_tables_unbuilt() -> None:
    import pickle

    for m in (_model(9), _model(9, gamma=0.9)):
        plan = solve(m)
        back = pickle.loads(pickle.dumps(plan))
        assert not back.tables.built
        np.testing.assert_array_equal(back.policy, plan.policy)
