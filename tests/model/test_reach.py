"""Reach-avoid constraints and reach objectives (``cmdp_rl.model.reach``).

Expected values come from outside the construction: closed forms on a chain, forward
simulation of the original model with an absorbing copy of the set (or with a "visited" bit
beside the state, for policies that read the product's flag), and the value iteration of
bounded reachability.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from numpy.typing import NDArray

from cmdp_rl import (
    CMDP,
    CMDPInputError,
    EpisodicEnv,
    certify,
    evaluate,
    make_learner,
    random_cmdp,
    reach_constraint,
    reach_objective,
    solve,
)
from cmdp_rl.model.reach import lift_policy
from cmdp_rl.plumbing.errors import CMDPTypeError

Array = NDArray[np.float64]


def chain(q: float, H: int | None = 3, gamma: float | None = None, s0: object = 0) -> CMDP:
    """States 0 -> 1 -> 2 (absorbing): each step moves right with probability ``q``; one action."""
    P = np.zeros((3, 1, 3))
    for s in (0, 1):
        P[s, 0, s], P[s, 0, s + 1] = 1 - q, q
    P[2, 0, 2] = 1.0
    return CMDP(P, np.zeros((3, 1)), None, None, s0, H, gamma, labels={"end": [2], "mid": [1]})


def reach_by_absorbing(model: CMDP, B: NDArray[np.bool_], policy: NDArray[np.int64]) -> float:
    """P(some s_0..s_H in B) of the deterministic Markov ``policy (H, S)`` on the original model:
    forward simulation of the state distribution, mass entering B moved to an absorbing sink."""
    P = model.P
    alive = np.where(B, 0.0, model.rho)
    absorbed = float(model.rho[B].sum())
    for h in range(policy.shape[0]):
        nxt = np.einsum("s,st->t", alive, P[np.arange(model.S), policy[h]])
        absorbed += float(nxt[B].sum())
        alive = np.where(B, 0.0, nxt)
    return absorbed


def reach_with_visited_bit(model: CMDP, B: NDArray[np.bool_], policy: Array, H: int) -> float:
    """P(some s_0..s_H in B) of a product policy ``(H, 2S, A)`` by forward simulation of the pair
    (state, visited at or before t) on the original model; the flag the policy reads at step t is
    that bit for t >= 1 and 0 at t = 0."""
    S, P = model.S, model.P
    dist = np.zeros((S, 2))
    dist[:, 0] = np.where(B, 0.0, model.rho)
    dist[:, 1] = np.where(B, model.rho, 0.0)
    for t in range(H):
        nxt = np.zeros((S, 2))
        for v in (0, 1):
            pi = policy[t, np.arange(S) + S * (v if t > 0 else 0)]
            moved = np.einsum("s,sa,sat->t", dist[:, v], pi, P)
            nxt[:, 1] += moved if v else np.where(B, moved, 0.0)
            nxt[:, 0] += 0.0 if v else np.where(B, 0.0, moved)
        dist = nxt
    return float(dist[:, 1].sum())


def discounted_reach_with_visited_bit(model: CMDP, B: NDArray[np.bool_], policy: Array, steps: int = 600) -> float:
    """``sum_t gamma^t P(first entry at t)`` of a stationary product policy ``(2S, A)`` whose flag at
    step t is "visited strictly before t", by forward simulation of (state, visited before t),
    truncated after ``steps`` steps."""
    S, P, gamma = model.S, model.P, float(model.gamma or 0)
    dist = np.zeros((S, 2))
    dist[:, 0] = model.rho
    total = 0.0
    for t in range(steps):
        total += gamma**t * float(dist[B, 0].sum())  # first entries at t
        nxt = np.zeros((S, 2))
        nxt[:, 1] = np.einsum("s,sa,sat->t", dist[:, 1], policy[S:], P)
        out0 = np.einsum("s,sa,sat->st", dist[:, 0], policy[:S], P)  # [from, to]
        nxt[:, 1] += out0[B].sum(0)
        nxt[:, 0] += out0[~B].sum(0)
        dist = nxt
    return total


# -- hand-computed reach probabilities ---------------------------------------------------------


@pytest.mark.parametrize("H", [1, 2, 3, 5])
def test_finite_horizon_chain_counts_the_last_state(H: int) -> None:
    q = 0.3
    m = chain(q, H)
    prod = reach_constraint(m, "end", 0.5)
    # reaching state 2 by s_H is two right moves among H: P(Binomial(H, q) >= 2)
    expected = 1 - (1 - q) ** H - H * q * (1 - q) ** (H - 1)
    ev = evaluate(prod, np.ones((H, prod.S, 1)))
    assert ev.costs[-1] == pytest.approx(expected, abs=1e-14)
    assert ev.costs[-1] > 0 or H == 1  # H = 2: only s_2 can be in the set, and it counts
    goal = reach_objective(m, "end")
    assert evaluate(goal, np.ones((H, goal.S, 1))).value == pytest.approx(expected, abs=1e-14)


def test_start_in_the_set_and_a_start_distribution() -> None:
    m = chain(0.3, 2, s0=2)
    assert evaluate(reach_objective(m, "end"), np.ones((2, 6, 1))).value == pytest.approx(1.0, abs=1e-15)
    rho = np.array([0.5, 0.25, 0.25])
    m = chain(0.4, 2, s0=rho)
    # from 0: two moves (0.16); from 1: one move in two steps (1 - 0.36); from 2: 1
    expected = 0.5 * 0.16 + 0.25 * (1 - 0.6**2) + 0.25
    prod = reach_objective(m, "end")
    np.testing.assert_array_equal(prod.rho, np.concatenate([rho, np.zeros(3)]))
    assert evaluate(prod, np.ones((2, 6, 1))).value == pytest.approx(expected, abs=1e-14)
    # "mid" from rho: start in it (0.25) or move 0 -> 1 in two steps (0.5 * (1 - 0.6**2))
    mid = evaluate(reach_objective(m, "mid"), np.ones((2, 6, 1))).value
    assert mid == pytest.approx(0.25 + 0.5 * (1 - 0.6**2), abs=1e-14)


@pytest.mark.parametrize("sparse", [False, True])
def test_discounted_chain_is_the_negative_binomial_sum(sparse: bool) -> None:
    q, gamma = 0.3, 0.8
    m = chain(q, None, gamma)
    m = m.to_sparse() if sparse else m
    # first entry at t >= 2 with probability (t - 1) q^2 (1 - q)^(t - 2)
    expected = (gamma * q) ** 2 / (1 - gamma * (1 - q)) ** 2
    prod = reach_constraint(m, "end", 0.1)
    assert prod.layout == m.layout
    assert evaluate(prod, np.ones((6, 1))).costs[-1] == pytest.approx(expected, abs=1e-13)
    assert evaluate(reach_objective(m, "end"), np.ones((6, 1))).value == pytest.approx(expected, abs=1e-13)
    # the discounted cost does not depend on P: 1 on (s, 0) for s in the set, else 0
    np.testing.assert_array_equal(prod.c[-1][:, 0], [0, 0, 1, 0, 0, 0])


# -- brute force over policies on random models --------------------------------------------------


@pytest.mark.parametrize("sparse", [False, True])
def test_every_deterministic_markov_policy_by_absorbing_simulation(sparse: bool) -> None:
    S, A, H = 3, 2, 3
    m = random_cmdp(S, A, H, N=1, seed=4)
    m = m.replace(s0=np.array([0.6, 0.3, 0.1]))
    B = np.array([False, True, False])
    prod = reach_constraint(m.to_sparse() if sparse else m, B, 0.3)
    assert (prod.S, prod.N, prod.layout) == (2 * S, 2, "sparse" if sparse else "dense")
    for flat in itertools.product(range(A), repeat=S * H):
        table = np.array(flat).reshape(H, S)
        pol = np.eye(A)[table]  # (H, S, A) on the original
        lifted = np.concatenate([pol, pol], axis=1)  # the same action whatever the flag
        np.testing.assert_array_equal(lift_policy(pol, prod), lifted)
        ev = evaluate(prod, lifted)
        orig = evaluate(m, pol)
        assert ev.costs[-1] == pytest.approx(reach_by_absorbing(m, B, table), abs=1e-13)
        assert ev.value == pytest.approx(orig.value, abs=1e-13)  # r and c hold on both copies
        assert ev.costs[0] == pytest.approx(orig.costs[0], abs=1e-13)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_policies_that_read_the_flag_by_a_visited_bit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    S, A, H = 4, 3, 5
    m = random_cmdp(S, A, H, N=1, seed=seed)
    B = rng.random(S) < 0.4
    B[0] = False
    prod = reach_constraint(m, B, 1.0)
    pol = rng.dirichlet(np.ones(A), size=(H, 2 * S))
    assert evaluate(prod, pol).costs[-1] == pytest.approx(reach_with_visited_bit(m, B, pol, H), abs=1e-13)
    d = m.replace(gamma=0.7)
    dprod = reach_objective(d, B)
    spol = rng.dirichlet(np.ones(A), size=2 * S)
    assert evaluate(dprod, spol).value == pytest.approx(discounted_reach_with_visited_bit(d, B, spol), abs=1e-12)


# -- optimal reach probabilities against bounded-reachability value iteration -------------------


def max_reach_finite(P: Array, G: NDArray[np.bool_], H: int) -> Array:
    """``V_0`` of max-probability reachability within ``H`` steps (the last state counts)."""
    V = G.astype(float)
    for _ in range(H):
        V = np.where(G, 1.0, (P @ V).max(axis=1))
    return V


def max_reach_discounted(P: Array, G: NDArray[np.bool_], gamma: float) -> Array:
    """``V(s) = 1`` in ``G``, else ``gamma * max_a P V``, iterated to its fixed point."""
    V = np.zeros(P.shape[0])
    for _ in range(3000):
        V = np.where(G, 1.0, gamma * (P @ V).max(axis=1))
    return V


@pytest.mark.parametrize("sparse", [False, True])
def test_the_optimum_of_a_reach_objective_is_bounded_reachability(sparse: bool) -> None:
    S, A, H = 6, 3, 4
    m = random_cmdp(S, A, H, N=1, seed=7, support=2)
    m = m.replace(c=np.zeros((0, S, A)), c_bar=np.zeros(0))
    G = np.zeros(S, dtype=bool)
    G[[4, 5]] = True
    base = m.to_sparse() if sparse else m
    plan = solve(reach_objective(base, G))
    V = max_reach_finite(m.P, G, H)
    assert plan.status == "optimal"
    assert plan.value == pytest.approx(V[m.s0], abs=1e-9)
    d = base.replace(gamma=0.9)
    dplan = solve(reach_objective(d, G))
    assert dplan.value == pytest.approx(max_reach_discounted(m.P, G, 0.9)[m.s0], abs=1e-8)


def test_reach_while_avoiding_by_two_flags_and_the_reached_label() -> None:
    # reach G before any state of B: the product's label B.reached marks "B visited so far"
    S, A, H = 5, 2, 4
    m = random_cmdp(S, A, H, N=0, seed=3)
    B = np.array([False, False, True, False, False])
    G = np.array([False, False, False, True, True])
    m = m.replace(labels={"bad": B, "goal": G})
    one = reach_constraint(m, "bad", 1.0)
    two = reach_objective(one, one.labels["goal"] & ~one.labels["bad.reached"])
    assert two.S == 4 * S and two.N == 1
    V = np.where(G & ~B, 1.0, 0.0)  # independent DP: B absorbing with value 0
    for _ in range(H):
        V = np.where(B, 0.0, np.where(G, 1.0, (m.P @ V).max(axis=1)))
    assert solve(two).value == pytest.approx(V[m.s0], abs=1e-9)


# -- a binding constraint, certificates and learners on the product -----------------------------


def test_a_binding_reach_constraint_changes_the_plan_and_holds_on_the_original() -> None:
    from cmdp_rl import make

    m = make("1a")
    H = m.horizon("test")
    free = solve(m)
    mid = np.zeros(m.S, dtype=bool)
    mid[4] = True  # the centre cell, on the way to the goal
    p_free = evaluate(reach_constraint(m, mid, 1.0), np.concatenate([free.policy, free.policy], axis=1)).costs[-1]
    p = p_free / 2
    plan = solve(reach_constraint(m, mid, p))
    assert plan.status == "optimal" and plan.value < free.value - 1e-3
    got = reach_with_visited_bit(m, mid, plan.policy, H)  # the policy reads the flag: simulate the bit
    assert got <= p + 1e-9 and got == pytest.approx(p, abs=1e-7)  # binding
    assert plan.costs[0] <= m.c_bar[0] + 1e-9
    lp = solve(reach_constraint(m, mid, p), method="lp")
    assert lp.value == pytest.approx(plan.value, abs=1e-7)


def test_certify_and_a_learner_run_on_the_product() -> None:
    m = random_cmdp(4, 2, 4, N=1, seed=11)
    B = np.array([False, False, True, True])
    prod = reach_constraint(m, B, 0.6)
    plan = solve(prod)
    rng = np.random.default_rng(0)
    K = prod.K.toarray()
    counts = np.stack([rng.multinomial(4000, row / row.sum()) for row in K]).reshape(prod.S, prod.A, prod.S)
    s0, H = prod.episodic("test")
    cert = certify(plan.policy, counts, prod.r, prod.c, prod.c_bar, s0, H, delta=0.05)
    true = evaluate(prod, plan.policy)
    assert cert.value_lo <= true.value <= cert.value_hi
    assert np.all(cert.cost_lo <= true.costs) and np.all(true.costs <= cert.cost_hi)
    assert cert.cost_hi[-1] - cert.cost_lo[-1] < 0.5  # informative, and about the reach probability
    learner = make_learner("online-crl", prod, 0.1, episodes=4)
    record = learner.fit(EpisodicEnv(prod, np.random.default_rng(1)))
    assert record.policy.shape == (H, prod.S, prod.A)
    seen = record.counts.toarray().reshape(prod.S, prod.A, prod.S)
    assert seen.sum() == 4 * H
    assert seen[m.S :, :, : m.S].sum() == 0  # a counted entry never comes back to flag 0


# -- layout, labels, composition and refusals -----------------------------------------------------


def test_the_layout_the_labels_and_the_record() -> None:
    m = random_cmdp(3, 2, 2, N=1, seed=1)
    m = m.replace(labels={"a": [0], "b": [1, 2]}, action_names=np.array([["x", "y"], ["z", ""], ["u", "v"]]))
    one = reach_constraint(m, "b", 0.2)
    two = reach_objective(one, "a")
    S = m.S
    assert two.S == 4 * S and two.N == 2 and two.s0 == m.s0
    np.testing.assert_array_equal(two.labels["a"], np.tile([True, False, False], 4))
    np.testing.assert_array_equal(one.labels["b.reached"], [False, True, True, True, True, True])
    np.testing.assert_array_equal(two.labels["a.reached"], [True, False, False] * 2 + [True] * 6)
    assert two.action_names is not None and two.action_names.shape == (4 * S, 2)
    assert two.action_names[3 * S + 1, 0] == "z"
    assert [f["flag"] for f in two.meta["reach"]] == [1, 2]
    assert two.meta["reach"][0] == {"kind": "avoid", "p": 0.2, "set": "b", "states": 3, "flag": 1, "label": "b.reached"}
    # state s + S f1 + 2S f2: flag 1 of either call stays 1, and the rows keep the original's
    P = two.P
    for s in range(S):
        np.testing.assert_allclose(P[s + 3 * S, :, 3 * S :], m.P[s])  # (s, 1, 1)
        np.testing.assert_allclose(P[s + S, :, S : 2 * S] + P[s + S, :, 3 * S :], m.P[s])  # (s, 1, 0)
        assert P[s + S, :, :S].sum() == P[s + S, :, 2 * S : 3 * S].sum() == 0
    np.testing.assert_array_equal(two.c_bar, [m.c_bar[0], 0.2])
    unnamed = reach_objective(m, np.array([True, False, False]))
    assert "flag1.reached" in unnamed.labels and unnamed.meta["reach"][0]["set"] is None


def test_dense_and_sparse_products_agree_and_inputs_are_untouched() -> None:
    m = random_cmdp(5, 3, 3, N=2, seed=2, support=3)
    B = np.array([True, False, False, True, False])
    before = B.copy()
    dense = reach_constraint(m, B, 0.4)
    sparse = reach_constraint(m.to_sparse(), B, 0.4)
    np.testing.assert_array_equal(dense.P, sparse.K.toarray().reshape(dense.S, dense.A, dense.S))
    np.testing.assert_array_equal(dense.c, sparse.c)
    assert sparse.nnz == dense.nnz == 2 * m.nnz  # each entry moves to one copy: twice the entries
    np.testing.assert_array_equal(B, before)


def test_refusals_name_the_argument() -> None:
    m = chain(0.3)
    with pytest.raises(CMDPInputError, match=r"^avoid: the model has no label 'bad' \(its labels: 'end', 'mid'\)"):
        reach_constraint(m, "bad", 0.1)
    with pytest.raises(CMDPInputError, match=r"^goal: the model has no label 'x' \(its labels: none\)"):
        reach_objective(m.replace(labels=None), "x")
    with pytest.raises(CMDPInputError, match=r"^p: .* must lie in \[0, 1\], got 1.5"):
        reach_constraint(m, "end", 1.5)
    with pytest.raises(CMDPInputError, match=r"^p: must be finite"):
        reach_constraint(m, "end", float("nan"))
    with pytest.raises(CMDPInputError, match=r"^avoid: a boolean mask of states must have shape \(3,\)"):
        reach_constraint(m, np.ones(4, dtype=bool), 0.1)
    with pytest.raises(CMDPInputError, match=r"^goal: state indices must lie in \[0, 2\]"):
        reach_objective(m, [3])
    with pytest.raises(CMDPTypeError, match=r"^model: must be a cmdp_rl.CMDP"):
        reach_objective("1a", "end")  # type: ignore[arg-type]


def test_never_entering_is_scenario_2s_constrained_optimum() -> None:
    # scenario 2's own constraint (no step in the bad cell) is "enter it with probability 0": the
    # design's independent solver gives V* = 4.303 (constrained) and 7.519 (unconstrained)
    from cmdp_rl import make

    m = make("2").replace(c=None, c_bar=None)
    assert solve(reach_constraint(m, [1], 0.0)).value == pytest.approx(4.303, abs=1e-3)
    assert solve(reach_constraint(m, [1], 1.0)).value == pytest.approx(7.519, abs=1e-3)


def test_a_dense_product_too_large_to_be_dense_stays_sparse(monkeypatch: pytest.MonkeyPatch) -> None:
    import cmdp_rl.model.sparse as sparse_module

    m = chain(0.3)
    assert reach_objective(m, "end").layout == "dense"
    monkeypatch.setattr(sparse_module, "MAX_DENSE_BYTES", 8 * 3 * 1 * 3)  # the model fits, its product not
    prod = reach_objective(m, "end")
    assert prod.layout == "sparse"
    assert evaluate(prod, np.ones((3, 6, 1))).value == pytest.approx(1 - 0.7**3 - 3 * 0.3 * 0.7**2, abs=1e-14)


def test_lift_policy_refuses_other_shapes() -> None:
    m = chain(0.3, 2)
    prod = reach_constraint(m, "end", 0.5)
    assert lift_policy(np.ones((3, 1)), prod).shape == (6, 1)
    with pytest.raises(CMDPInputError, match=r"^policy: the product was built from a model of S = 3 states"):
        lift_policy(np.ones((2, 6, 1)), prod)
    with pytest.raises(CMDPInputError, match=r"^policy: expected an \(H, S, A\) or \(S, A\) array"):
        lift_policy(np.ones(3), prod)


def test_a_ragged_model_keeps_its_action_set_on_both_copies() -> None:
    # state 1 has one action (action 1 unavailable); its padded twin (action 1 a copy of action 0)
    # is the same problem, so the two products have the same optimum
    P = np.zeros((3, 2, 3))
    P[0, 0, 1] = P[0, 1, 2] = 1.0
    P[1, 0, [0, 2]] = 0.5
    P[2, :, 2] = 1.0
    r = np.array([[0.2, 0.0], [1.0, 0.0], [0.0, 0.0]])
    mask = np.array([[True, True], [True, False], [True, True]])
    ragged = CMDP(P, r, None, None, 0, H=4, actions=mask)
    padded_P = P.copy()
    padded_P[1, 1] = P[1, 0]
    padded = CMDP(padded_P, np.where(mask, r, r[:, :1]), None, None, 0, H=4)
    a, b = reach_constraint(ragged, [2], 0.3), reach_constraint(padded, [2], 0.3)
    assert a.actions is not None and a.actions.tolist() == np.tile(mask, (2, 1)).tolist()
    assert a.nnz < b.nnz  # the unavailable pair has no rows on either copy
    assert solve(a).value == pytest.approx(solve(b).value, abs=1e-9)
