"""The extended LP: fast (column generation) against the literal LP, optimism, read-out."""

from __future__ import annotations

import numpy as np
import pytest

from cmdp_rl import CMDP, CMDPInputError, evaluate, random_cmdp, solve
from cmdp_rl.confidence.radii import confidence_set
from cmdp_rl.planning.elp import solve_elp


def _sampled_set(m: CMDP, n: int, seed: int, delta_prime: float = 0.05):
    counts = np.random.default_rng(seed).multinomial(n, m.P)
    return confidence_set(counts, delta_prime)


CASES = [  # (S, A, H, N, slack, n, seed)
    (6, 3, 5, 0, 0.5, 20, 0),
    (6, 3, 5, 1, 0.2, 20, 1),
    (7, 2, 6, 3, 0.3, 50, 2),
    (5, 3, 4, 2, 0.0, 40, 3),  # tight: thresholds at the jointly least costs
    (6, 3, 5, 2, -0.4, 500, 4),  # infeasible even optimistically
    (8, 4, 6, 1, 0.1, 5, 5),  # very wide set
    (5, 2, 4, 3, 0.6, 1000, 6),
]


@pytest.mark.slow
@pytest.mark.parametrize("S, A, H, N, slack, n, seed", CASES)
def test_fast_equals_literal(S, A, H, N, slack, n, seed) -> None:
    m = random_cmdp(S, A, H, N, seed=seed, slack=slack, support=3)
    cs = _sampled_set(m, n, seed)
    lp = solve_elp(m, cs.p_hat, cs.beta, method="lp")
    fast = solve_elp(m, cs.p_hat, cs.beta, method="fast")
    assert fast.status == lp.status
    if lp.feasible:
        assert fast.value == pytest.approx(lp.value, rel=1e-7, abs=1e-9)
        assert np.all(fast.costs <= m.c_bar + 1e-7)
    else:
        assert fast.max_excess == pytest.approx(lp.max_excess, abs=1e-6)
        assert np.allclose(fast.min_costs, lp.min_costs, atol=1e-9)
        assert fast.max_excess > 0


@pytest.mark.parametrize("seed", range(4))
def test_point_kernel_equals_plain_lp(seed: int) -> None:
    m = random_cmdp(6, 3, 5, seed % 3, seed=seed, slack=0.3)
    exact = solve(m)
    for method in ("fast", "lp"):
        res = solve_elp(m, m.P, np.zeros_like(m.P), method=method)
        assert res.status == exact.status
        assert res.value == pytest.approx(exact.value, rel=1e-7)
        assert np.allclose(res.costs, exact.costs, atol=1e-7)


@pytest.mark.parametrize("seed", range(6))
def test_optimism_when_true_kernel_is_plausible(seed: int) -> None:
    m = random_cmdp(6, 3, 5, 1, seed=seed, slack=0.3, support=4)
    cs = _sampled_set(m, 30, seed, delta_prime=0.01)
    tries = 0
    while not cs.contains(m.P):  # draw again (deterministically) until the truth is plausible
        tries += 1
        cs = _sampled_set(m, 30, seed + 1000 * tries, delta_prime=0.01)
        assert tries < 50
    res = solve_elp(m, cs.p_hat, cs.beta)
    assert res.feasible
    assert res.value >= solve(m).value - 1e-9


@pytest.mark.parametrize("method", ["fast", "lp"])
@pytest.mark.parametrize("seed", range(3))
def test_readout_reproduces_value_and_costs(method: str, seed: int) -> None:
    m = random_cmdp(6, 3, 5, 2, seed=seed, slack=0.3, support=3)
    cs = _sampled_set(m, 25, seed)
    res = solve_elp(m, cs.p_hat, cs.beta, method=method)
    assert res.kernel.shape == (m.H, m.S, m.A, m.S)
    assert cs.contains(res.kernel, tol=1e-9)
    ev = evaluate(m, res.policy, kernel=res.kernel)
    tol = 1e-9 if method == "fast" else 1e-6  # the literal LP is exact to HiGHS' tolerance
    assert ev.value == pytest.approx(res.value, rel=tol)
    assert np.allclose(ev.costs, res.costs, atol=tol)


def test_warm_start_gives_same_optimum() -> None:
    m = random_cmdp(8, 3, 6, 2, seed=9, slack=0.2, support=3)
    rng = np.random.default_rng(0)
    counts = rng.multinomial(20, m.P)
    first = solve_elp(m, *_pb(counts))
    counts = counts + rng.multinomial(1, m.P)
    literal = solve_elp(m, *_pb(counts), method="lp")  # an independent formulation
    warm = solve_elp(m, *_pb(counts), warm_start=first)
    assert warm.status == literal.status == "optimal"
    assert warm.value == pytest.approx(literal.value, rel=1e-7)
    assert first.info["columns"]  # the warm start really had columns


def _pb(counts):
    cs = confidence_set(counts, 0.05)
    return cs.p_hat, cs.beta


def test_input_validation() -> None:
    m = random_cmdp(3, 2, 2, 1, seed=0)
    with pytest.raises(CMDPInputError, match="method"):
        solve_elp(m, m.P, np.zeros_like(m.P), method="simplex")
    with pytest.raises(CMDPInputError, match=r"beta\[0, 0, 0\]: radii must be non-negative"):
        solve_elp(m, m.P, -np.ones_like(m.P))
    bad = m.P.copy()
    bad[1, 1] *= 2
    with pytest.raises(CMDPInputError, match=r"p_hat\[1, 1\]"):
        solve_elp(m, bad, np.zeros_like(m.P))
    with pytest.raises(CMDPInputError, match="beta: expected shape"):
        solve_elp(m, m.P, np.zeros((3, 2, 2)))


def test_fast_equals_literal_on_many_random_instances() -> None:
    """30 random instances: sizes, constraint counts, set widths and thresholds
    (feasible, tight and infeasible) drawn from one seeded generator."""
    rng = np.random.default_rng(77)
    verdicts = set()
    for _ in range(30):
        S, A, H, N = (
            int(rng.integers(2, 8)),
            int(rng.integers(1, 4)),
            int(rng.integers(1, 6)),
            int(rng.integers(0, 4)),
        )
        slack = float(rng.choice([-0.3, 0.0, 0.1, 0.5, 0.9]))
        m = random_cmdp(S, A, H, N, seed=rng, slack=slack, support=int(rng.integers(1, S + 1)))
        cs = _sampled_set(m, int(rng.choice([1, 10, 100, 10_000])), int(rng.integers(1 << 30)))
        lp = solve_elp(m, cs.p_hat, cs.beta, method="lp")
        fast = solve_elp(m, cs.p_hat, cs.beta, method="fast")
        assert fast.status == lp.status
        verdicts.add(lp.status)
        if lp.feasible:
            assert fast.value == pytest.approx(lp.value, rel=1e-7, abs=1e-9)
        else:
            assert fast.max_excess == pytest.approx(lp.max_excess, abs=1e-6)
    assert verdicts == {"optimal", "infeasible"}


@pytest.mark.parametrize("seed", range(6))
def test_compiled_evi_sweep_equals_the_plain_numpy_sweep(seed: int) -> None:
    """The compiled EVI sweep against the plain NumPy reference (and the reference against the
    brute-force optimistic row of each pair: maximize p . V over the box by LP)."""
    from scipy.optimize import linprog

    from cmdp_rl.confidence.box import Box, evi, evi_numpy

    rng = np.random.default_rng(seed)
    S, A, H = 5, 3, 4
    m = random_cmdp(S, A, H, 1, seed=seed)
    counts = rng.multinomial(rng.integers(1, 30), m.P)
    counts[0, 0] = 0  # one unvisited pair: every distribution plausible
    cs = confidence_set(counts, 0.05)
    box = Box.from_radius(cs.p_hat, cs.beta)
    reward = rng.normal(size=(S, A))  # Lagrangian rewards may be negative
    V1, a1, o1 = evi(box, reward, H)
    V2, a2, o2 = evi_numpy(box, reward, H)
    np.testing.assert_allclose(V1, V2, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(o1, o2)
    np.testing.assert_array_equal(a1, a2)
    # one step by LP: max_p p . V over {lower <= p <= upper, sum p = 1}
    s, a, h = 1, 2, H - 2
    lp = linprog(
        -V2[h + 1], A_eq=np.ones((1, S)), b_eq=[1.0], bounds=list(zip(cs.lower[s, a], cs.upper[s, a], strict=True))
    )
    assert V2[h, s] >= reward[s, a] - lp.fun - 1e-9


def _counts_both_layouts(seed: int):
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    m = random_cmdp(7, 3, 4, 2, seed=seed, support=3)
    counts = (rng.poisson(3.0, size=(m.S, m.A, m.S)) * (rng.random((m.S, m.A, m.S)) < 0.6)).astype(np.int64)
    return m, counts, sp.csr_array(counts.reshape(m.S * m.A, m.S))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_plan_on_box_takes_either_layout(seed: int) -> None:
    """One re-plan entry for both layouts: a SparseBox is planned by the sparse column generation
    (warm-started from the previous plan's columns), a Box by the dense one or, with
    ``method="lp"``, the literal ELP; on the same counts all give the same optimum."""
    from cmdp_rl.confidence.box import Box
    from cmdp_rl.confidence.radii import empirical_kernel, rule_radius
    from cmdp_rl.confidence.sparse_box import SparseBox
    from cmdp_rl.model.cmdp import KnownParts
    from cmdp_rl.planning.elp import plan_on_box, solve_elp_known
    from cmdp_rl.planning.elp_sparse import solve_sparse_elp

    m, counts, csr = _counts_both_layouts(seed)
    known = KnownParts.of(m)
    sbox = SparseBox.from_counts(csr, 0.05, "paper")
    sparse = plan_on_box(known, sbox)
    direct = solve_sparse_elp(m.r, m.c, m.c_bar, m.s0, m.H, sbox)
    assert (sparse.status, sparse.value) == (direct.status, direct.value)
    again = plan_on_box(known, sbox, sparse)  # warm: the previous plan's columns
    warm = solve_sparse_elp(m.r, m.c, m.c_bar, m.s0, m.H, sbox, warm_start=sparse.info["warm_columns"])
    assert again.value == warm.value and again.iterations == warm.iterations
    p_hat, n = empirical_kernel(counts)
    beta = rule_radius(p_hat, n, 0.05, "paper")
    box = Box.from_radius(p_hat, beta)
    literal = plan_on_box(known, box, method="lp")
    reference = solve_elp_known(known, p_hat, beta, method="lp")
    assert literal.method == "lp" and literal.value == reference.value
    fast = plan_on_box(known, box)
    for plan in (sparse, literal):
        assert plan.status == fast.status
        assert plan.value == pytest.approx(fast.value, abs=1e-7 * m.H)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_optimistic_column_takes_either_layout(seed: int) -> None:
    """OptDual's pricing step on either layout: the greedy policy of EVI on ``r - lam . c`` and its
    column's value and costs under its own optimistic kernel: on the same counts both layouts'
    columns reach the optimistic Lagrangian value ``V - lam . C`` that EVI bounds."""
    from cmdp_rl.confidence.box import evi
    from cmdp_rl.confidence.sets import radius_box
    from cmdp_rl.model.cmdp import KnownParts
    from cmdp_rl.planning.elp import optimistic_column

    m, counts, csr = _counts_both_layouts(seed)
    known = KnownParts.of(m)
    lam = np.array([0.5, 1.5])

    def radius(p, n):
        return np.where(n > 0, np.minimum(1.0 / np.sqrt(np.maximum(n, 1)), 1.0), 1.0)

    dense_box, sparse_box = radius_box(counts, radius), radius_box(csr, radius)
    a_d, v_d, c_d = optimistic_column(known, dense_box, lam)
    a_s, v_s, c_s = optimistic_column(known, sparse_box, lam)
    assert a_d.shape == a_s.shape == (m.H, m.S) and c_d.shape == c_s.shape == (m.N,)
    lagrangian = m.r - np.tensordot(lam, m.c, axes=1)
    best = evi(dense_box, lagrangian, m.H)[0][0, m.s0]  # the optimistic Lagrangian value
    assert v_d - lam @ c_d == pytest.approx(best, abs=1e-9)
    assert v_s - lam @ c_s == pytest.approx(best, abs=1e-9)


@pytest.mark.parametrize("method", ["fast", "lp"])
def test_solve_elp_reports_in_the_models_units(method):
    # beta = 0: the ELP is the occupancy LP on p_hat, so its optimum is solve's on the model
    # with P = p_hat; a model in other units gives the same plan with affinely mapped numbers
    rng = np.random.default_rng(5)
    S, A, H = 3, 2, 4
    p_hat = rng.dirichlet(np.ones(S), size=(S, A))
    r = rng.uniform(size=(S, A))
    r[0, 0], r[1, 1] = 0.0, 1.0
    c = rng.uniform(size=(1, S, A))
    c[0, 0, 1], c[0, 2, 0] = 0.0, 1.0
    unit = CMDP(p_hat, r, c, [1.5], 0, H=H)
    big = CMDP(p_hat, 50.0 * r - 20.0, 8.0 * c, [12.0], 0, H=H)
    zero = np.zeros((S, A, S))
    got = solve_elp(big, p_hat, zero, method=method)
    ref = solve(unit.replace(c_bar=[(12.0) / 8.0]).replace(r=(50.0 * r - 20.0 + 20.0) / 70.0), method="lp")
    # the big model's unit image: a_r = -20, w_r = 70 (interval [-20, 30]), a_c = 0, w_c = 8
    assert got.status == ref.status == "optimal"
    assert got.value == pytest.approx(H * -20.0 + 70.0 * ref.value, abs=1e-6)
    assert got.costs[0] == pytest.approx(8.0 * ref.costs[0], abs=1e-6)
    assert got.value == pytest.approx(solve(big, method="lp").value, abs=1e-6)
