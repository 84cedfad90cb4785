"""Certificates on a ragged model: no interval, no count and no policy mass on an unavailable pair."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from cmdp_rl import CMDPInputError
from cmdp_rl.certificates.certify import certificate_box, certify
from cmdp_rl.certificates.safe import solve_safe

S, A, H = 3, 2, 3
MASK = np.array([[True, True], [True, False], [False, True]])


def counts_and_model(per_pair: int = 400) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Counts of ``per_pair`` samples on every available pair (none elsewhere), rewards, costs."""
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(S), size=(S, A))
    counts = np.zeros((S, A, S), dtype=np.int64)
    for s, a in np.argwhere(MASK):
        counts[s, a] = rng.multinomial(per_pair, P[s, a])
    r = rng.random((S, A))
    c = rng.random((1, S, A))
    return counts, r, c


def test_the_union_bound_runs_over_the_available_pairs_only() -> None:
    counts, _, _ = counts_and_model()
    _, d = certificate_box(counts, 0.05, "empirical-bernstein", "fixed", actions=MASK)
    assert np.allclose(d, 0.05 / (S * 4))  # S next states for each of the 4 available pairs
    _, d_all = certificate_box(counts, 0.05, "empirical-bernstein", "fixed")
    assert np.allclose(d_all, 0.05 / (S * S * A))


def test_certify_refuses_a_policy_or_counts_on_an_unavailable_pair() -> None:
    counts, r, c = counts_and_model()
    pol = np.tile(np.array([[0.5, 0.5], [1.0, 0.0], [0.0, 1.0]]), (H, 1, 1))
    cert = certify(pol, counts, r, c, [H], 0, H, actions=MASK)
    assert cert.safe and cert.value_lo <= cert.value_hi
    bad = pol.copy()
    bad[0, 1] = [0.5, 0.5]
    with pytest.raises(CMDPInputError, match=r"policy\[0, 1, 1\].*not available in state 1"):
        certify(bad, counts, r, c, [H], 0, H, actions=MASK)
    extra = counts.copy()
    extra[2, 0, 1] = 3
    with pytest.raises(CMDPInputError, match="counts: hold transitions of state 2, action 0"):
        certify(pol, extra, r, c, [H], 0, H, actions=MASK)


@pytest.mark.parametrize("layout", ["dense", "sparse"])
def test_solve_safe_never_plays_an_unavailable_action(layout: str) -> None:
    counts, r, c = counts_and_model()
    # the unavailable pairs are made the cheapest: an unmasked planner would pick them
    c[0, ~MASK] = 0.0
    r[~MASK] = 1.0
    data = sp.csr_array(counts.reshape(S * A, S)) if layout == "sparse" else counts
    plan = solve_safe(data, r, c, [0.6 * H], 0, H, actions=MASK)
    assert plan.policy is not None and plan.certificate.safe
    assert np.all(plan.policy[:, ~MASK] == 0.0)
    again = certify(plan.policy, counts, r, c, [0.6 * H], 0, H, actions=MASK)
    assert again.cost_hi[0] == pytest.approx(plan.certificate.cost_hi[0])


def test_the_samples_needed_estimate_counts_the_available_pairs() -> None:
    # few samples and a tight threshold: uncertified; the estimate m says how many samples per
    # (available) pair would certify; spreading m per available pair as the empirical kernel (and
    # none on the unavailable ones, as data of this model must) then certifies
    counts, r, c = counts_and_model(per_pair=20)
    c[0, ~MASK] = 0.0  # the unavailable pairs cheapest: an unmasked estimate would lean on them
    c_bar = [0.45 * H]
    plan = solve_safe(counts, r, c, c_bar, 0, H, actions=MASK)
    assert plan.status == "uncertified" and plan.samples_per_pair is not None
    m = plan.samples_per_pair
    p_hat = counts / np.maximum(counts.sum(-1, keepdims=True), 1)
    more = np.where(MASK[..., None], np.round(p_hat * m), 0).astype(np.int64)
    assert solve_safe(more, r, c, c_bar, 0, H, actions=MASK).status == "certified"
