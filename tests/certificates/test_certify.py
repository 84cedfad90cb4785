"""Certificates: exact against brute force over every vertex choice, exact evaluation when radii vanish,
and coverage of the valid radius."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from cmdp_rl import CMDPInputError, evaluate, random_cmdp, scenario_cmdp, solve
from cmdp_rl.certificates.certify import certificate_radius, certify, per_entry_delta
from cmdp_rl.confidence.radii import empirical_kernel


def _vertices(lower: np.ndarray, upper: np.ndarray) -> list[np.ndarray]:
    """Every vertex of {lower <= p <= upper, sum p = 1}: fill the spare mass in every order of the entries."""
    out: list[np.ndarray] = []
    for order in itertools.permutations(range(lower.size)):
        p = lower.copy()
        left = 1.0 - p.sum()
        for j in order:
            give = min(upper[j] - p[j], left)
            p[j] += give
            left -= give
        if not any(np.allclose(p, q) for q in out):
            out.append(p)
    return out


def _brute(policy, p_hat, beta, reward, s0):
    """min and max value over every per-step kernel built from vertices (relevant (h, s, a) only)."""
    H, S, A = policy.shape
    lower, upper = np.clip(p_hat - beta, 0, 1), np.clip(p_hat + beta, 0, 1)
    verts = {(s, a): _vertices(lower[s, a], upper[s, a]) for s in range(S) for a in range(A)}
    slots = [(h, s, a) for h in range(H - 1) for s in range(S) for a in range(A) if policy[h, s, a] > 0]
    values = []
    for choice in itertools.product(*[range(len(verts[s, a])) for (_, s, a) in slots]):
        K = np.broadcast_to(p_hat, (H, S, A, S)).copy()
        for (h, s, a), k in zip(slots, choice, strict=True):
            K[h, s, a] = verts[s, a][k]
        V = np.zeros(S)
        for h in range(H - 1, -1, -1):
            V = (policy[h] * (reward + K[h] @ V)).sum(axis=1)
        values.append(V[s0])
    return min(values), max(values)


@pytest.mark.parametrize("S, A, H, seed", [(3, 1, 3, 0), (2, 2, 3, 1), (3, 2, 2, 2), (2, 2, 3, 3)])
def test_intervals_equal_brute_force(S: int, A: int, H: int, seed: int) -> None:
    m = random_cmdp(S, A, H, 1, seed=seed)
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(6, m.P)
    counts[0, 0] = 0 if seed == 3 else counts[0, 0]  # an unvisited pair: every distribution
    policy = rng.dirichlet(np.ones(A), size=(H, S))
    for radius in ("empirical-bernstein", "paper"):
        cert = certify(policy, counts, m.r, m.c, m.c_bar, m.s0, H, delta=0.3, radius=radius)
        p_hat, n = empirical_kernel(counts.astype(float))
        beta = certificate_radius(p_hat, n, per_entry_delta(0.3, n, "adaptive"), radius)
        lo, hi = _brute(policy, p_hat, beta, m.r, m.s0)
        assert cert.value_lo == pytest.approx(lo, abs=1e-10) and cert.value_hi == pytest.approx(hi, abs=1e-10)
        clo, chi = _brute(policy, p_hat, beta, m.c[0], m.s0)
        assert cert.cost_lo[0] == pytest.approx(clo, abs=1e-10) and cert.cost_hi[0] == pytest.approx(chi, abs=1e-10)


def test_vanishing_radius_gives_exact_evaluation() -> None:
    m = random_cmdp(5, 3, 4, 2, seed=7, support=3)
    policy = solve(m).policy
    counts = np.round(m.P * 1e12).astype(np.int64)
    cert = certify(policy, counts, m.r, m.c, m.c_bar, m.s0, m.H, sampling="fixed")
    ev = evaluate(m, policy)
    assert cert.value_lo == pytest.approx(ev.value, abs=1e-5) and cert.value_hi == pytest.approx(ev.value, abs=1e-5)
    assert np.allclose(cert.cost_lo, ev.costs, atol=1e-5) and np.allclose(cert.cost_hi, ev.costs, atol=1e-5)


@pytest.mark.slow
def test_default_radius_covers_at_least_one_minus_delta() -> None:
    """Counts drawn 2,000 times on scenario 1a (50 per pair): the interval holds the true value and cost."""
    m = scenario_cmdp("1a")
    policy = solve(m).policy
    ev = evaluate(m, policy)
    rng = np.random.default_rng(11)
    delta, misses, trials = 0.1, 0, 2000
    for _ in range(trials):
        counts = rng.multinomial(50, m.P)
        cert = certify(policy, counts, m.r, m.c, m.c_bar, m.s0, m.H, delta=delta, sampling="fixed")
        ok = cert.value_lo - 1e-9 <= ev.value <= cert.value_hi + 1e-9 and np.all(
            (cert.cost_lo - 1e-9 <= ev.costs) & (ev.costs <= cert.cost_hi + 1e-9)
        )
        misses += not ok
    assert misses / trials <= delta


def test_bad_inputs_name_the_argument() -> None:
    m = random_cmdp(3, 2, 2, 1, seed=0)
    pol = np.full((2, 3, 2), 0.5)
    counts = np.ones((3, 2, 3), dtype=int)
    for kwargs, name in [({"radius": "x"}, "radius"), ({"sampling": "y"}, "sampling"), ({"delta": 1.5}, "delta")]:
        with pytest.raises(CMDPInputError, match=name):
            certify(pol, counts, m.r, m.c, m.c_bar, 0, 2, **kwargs)
    with pytest.raises(CMDPInputError, match="policy"):
        certify(np.ones((2, 3, 2)), counts, m.r, m.c, m.c_bar, 0, 2)
    with pytest.raises(CMDPInputError, match="counts"):
        certify(pol, -counts, m.r, m.c, m.c_bar, 0, 2)


@pytest.mark.slow
def test_default_radius_covers_on_a_random_model_with_adaptive_and_fixed_splits() -> None:
    """2,000 draws of counts (unequal sizes per pair) on a random model: both union bounds cover."""
    m = random_cmdp(5, 2, 4, 2, seed=3)
    policy = np.full((m.H, m.S, m.A), 1.0 / m.A)
    ev = evaluate(m, policy)
    rng = np.random.default_rng(5)
    delta, trials = 0.1, 2000
    misses = {"fixed": 0, "adaptive": 0}
    for _ in range(trials):
        sizes = rng.integers(2, 40, size=(m.S, m.A))
        counts = np.stack([[rng.multinomial(sizes[s, a], m.P[s, a]) for a in range(m.A)] for s in range(m.S)])
        for sampling in misses:
            cert = certify(policy, counts, m.r, m.c, m.c_bar, m.s0, m.H, delta=delta, sampling=sampling)
            ok = cert.value_lo - 1e-9 <= ev.value <= cert.value_hi + 1e-9 and np.all(
                (cert.cost_lo - 1e-9 <= ev.costs) & (ev.costs <= cert.cost_hi + 1e-9)
            )
            misses[sampling] += not ok
    assert misses["fixed"] / trials <= delta and misses["adaptive"] / trials <= delta
