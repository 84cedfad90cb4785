"""``solve_safe``'s proof before any LP: an uncertified verdict it calls exact holds for every policy,
checked by brute force over every deterministic Markov policy of small problems."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from cmdp_rl.certificates.certify import certify
from cmdp_rl.certificates.safe import one_hot, solve_safe
from cmdp_rl.evaluation.mixture import MixturePolicy

S, A, H, N = 3, 2, 2, 2


def _problem(seed: int, per_pair: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(S), size=(S, A))
    counts = np.stack([[rng.multinomial(per_pair, P[s, a]) for a in range(A)] for s in range(S)])
    counts[rng.random((S, A)) < 0.2] = 0  # a few unvisited pairs
    return counts, rng.random((S, A)), rng.random((N, S, A))


def _all_certificates(counts: np.ndarray, r: np.ndarray, c: np.ndarray, c_bar: np.ndarray) -> list:
    """The certificate of every deterministic Markov policy (A^(H S) = 64 of them)."""
    out = []
    for choice in itertools.product(range(A), repeat=H * S):
        policy = one_hot(np.array(choice).reshape(H, S), A)
        out.append(certify(policy, counts, r, c, c_bar, 0, H, delta=0.05))
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("per_pair", [3, 300, 30000])
def test_an_exact_verdict_holds_for_every_policy(seed: int, per_pair: int) -> None:
    counts, r, c = _problem(seed, per_pair)
    certs = _all_certificates(counts, r, c, np.full(N, 1e6))  # cost_hi does not depend on c_bar
    least = np.min([cert.cost_hi for cert in certs], axis=0)  # (N,) by brute force
    for c_bar in (least - 0.05, least + 0.05, np.array([least[0] + 0.05, least[1] - 0.05])):
        if np.any(c_bar <= 0):
            continue
        plan = solve_safe(counts, r, c, c_bar, 0, H, delta=0.05)
        if np.any(least > c_bar):  # no deterministic policy is certifiable, and (rectangular sets) no other
            assert (plan.status, plan.exact, plan.policy) == ("uncertified", True, None)
            assert plan.candidates == 1 and plan.method == "none"  # proven before any LP
        else:
            assert not plan.exact or plan.safe
            if plan.safe:
                assert np.all(plan.certificate.cost_hi <= c_bar)


@pytest.mark.parametrize("seed", [2, 3, 4])
def test_compact_candidates_are_mixtures_certified_by_their_columns(seed: int) -> None:
    """``compact=True``: the returned policy is a mixture of deterministic columns; its certificate is
    the weighted sum of its columns' certificates, each computed by ``certify`` on its one-hot
    table (a second path), and it is certified safe whenever it is returned."""
    counts, r, c = _problem(seed, 3000)
    certs = _all_certificates(counts, r, c, np.full(N, 1e6))
    c_bar = np.median([cert.cost_hi for cert in certs], axis=0)  # half the deterministic policies certifiable
    plan = solve_safe(counts, r, c, c_bar, 0, H, delta=0.05, compact=True)
    assert plan.safe and isinstance(plan.policy, MixturePolicy) and plan.policy.K == 2  # a true mixture
    cols = [
        certify(one_hot(col.astype(np.intp), A), counts, r, c, c_bar, 0, H, delta=0.05) for col in plan.policy.columns
    ]
    w = plan.policy.weights
    assert plan.certificate.value_lo == pytest.approx(
        sum(wk * ck.value_lo for wk, ck in zip(w, cols, strict=True)), abs=1e-10
    )
    np.testing.assert_allclose(
        plan.certificate.cost_hi, sum(wk * ck.cost_hi for wk, ck in zip(w, cols, strict=True)), atol=1e-10
    )
    assert np.all(plan.certificate.cost_hi <= c_bar)
