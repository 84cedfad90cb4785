"""Round three, class 2: numbers that overflow later.

``certify --delta 1e-300`` printed ``{"value": [NaN, NaN] ...}`` (not JSON) with exit 1 while
``solve_safe`` refused the same delta: the per-entry failure probability ``delta / (2 S^2 A n^2)``
underflowed to a denormal, ``8 / delta'`` overflowed to ``inf`` and ``0 * inf`` made the radii NaN.
Now every argument that feeds a logarithm, a power or a product is checked for what it produces:
``certify`` and ``solve_safe`` share one floor on ``delta`` that depends on ``S`` and ``A`` only
(``delta / (S^2 A)`` for fixed sampling, ``delta / (2 S^2 A (2**53)^2)`` for adaptive must be a
normal float), the learners' ``delta_P`` and ``delta_1`` are refused below 2.2e-308 naming
``delta``, every ``log(k / delta)`` is finite, and a bonus that would overflow is refused
naming ``bonus_scale`` before the first episode. NaN never reaches an output.

Expected floors are computed here from the formulas, not by the library.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from faultkit import EXIT_BAD_INPUT, assert_one_line_refusal, cases, cli_batch

from cmdp_rl import CMDPInputError, certify, make, solve_safe
from cmdp_rl.confidence.radii import delta_1, delta_p, radius_log
from cmdp_rl.learners.bonuses import efroni_radius, optpess_radius
from cmdp_rl.learners.catalog import make_learner

CLASS = "Round 3: 2. Numbers that overflow later"

MIN_NORMAL = sys.float_info.min


def _floor(S: int, A: int, sampling: str) -> float:
    """The smallest delta whose per-entry failure probability stays normal for any counts."""
    divisor = S * S * A * (1 if sampling == "fixed" else 2 * (2**53) ** 2)
    return MIN_NORMAL * divisor


def _data(S: int, A: int, H: int, seed: int) -> tuple[np.ndarray, ...]:
    """Deterministic counts (every successor seen or not: p_hat of 0 and 1, the NaN trigger of the
    audit), rewards, one cost, a threshold and a uniform policy."""
    rng = np.random.default_rng(seed)
    counts = np.zeros((S, A, S))
    counts[np.arange(S)[:, None], np.arange(A)[None, :], rng.integers(0, S, (S, A))] = rng.integers(1, 10**6, (S, A))
    r, c = rng.random((S, A)), rng.random((1, S, A))
    return counts, r, c, np.array([0.5 * H]), np.full((H, S, A), 1.0 / A)


def _outcome(fn: Callable[..., object], *args: object, **kwargs: object) -> str:
    try:
        fn(*args, **kwargs)
    except CMDPInputError as exc:
        assert str(exc).startswith("delta:"), exc
        return "refused"
    return "accepted"


@pytest.mark.parametrize("sampling", ["adaptive", "fixed"])
def test_certify_and_solve_safe_accept_the_same_deltas(sampling: str, tally: Callable[[int], None]) -> None:
    S, A, H = 3, 2, 3
    counts, r, c, c_bar, policy = _data(S, A, H, 0)
    floor = _floor(S, A, sampling)
    factors = (0.5, 0.999, 1.001, 2.0, 1e3)[: cases(3, 5)]
    deltas = [MIN_NORMAL, 1e-300, *(floor * f for f in factors)]
    for delta in deltas:
        got_c = _outcome(certify, policy, counts, r, c, c_bar, 0, H, delta=delta, sampling=sampling)
        got_s = _outcome(solve_safe, counts, r, c, c_bar, 0, H, delta=delta, sampling=sampling, iterations=2)
        want = "accepted" if delta >= floor * (1 + 1e-9) else "refused" if delta < floor * (1 - 1e-9) else got_c
        assert got_c == got_s == want, (delta, floor, got_c, got_s)
        if want == "accepted":
            cert = certify(policy, counts, r, c, c_bar, 0, H, delta=delta, sampling=sampling)
            bounds = [cert.value_lo, cert.value_hi, *cert.cost_lo, *cert.cost_hi]
            assert all(math.isfinite(v) for v in bounds), bounds
            assert 0.0 <= cert.value_lo <= cert.value_hi <= H
    tally(2 * len(deltas))


def test_certify_cli_never_prints_nan(tmp_path: Path, tally: Callable[[int], None]) -> None:
    model = make("1a")
    S, A, H = model.S, model.A, model.H
    counts = np.round(model.P * 1000).astype(np.int64)  # zero and full entries: the audit's NaN
    np.save(tmp_path / "counts.npy", counts)
    np.save(tmp_path / "policy.npy", np.full((H, S, A), 1.0 / A))
    args = ["certify", "1a", "--policy", str(tmp_path / "policy.npy"), "--counts", str(tmp_path / "counts.npy")]
    floor = _floor(S, A, "adaptive")
    tiny, proc = cli_batch(
        [[*args, "--delta", "1e-300", "--json"], [*args, "--delta", f"{floor * 1.01:.6g}", "--json"]]
    )
    line = assert_one_line_refusal(tiny, EXIT_BAD_INPUT)
    assert line.startswith("cmdp-rl certify: error: delta:"), line
    assert proc.returncode in (0, 1), proc.stderr
    out = json.loads(proc.stdout, parse_constant=lambda name: pytest.fail(f"{name} in the JSON output"))
    assert all(math.isfinite(v) for v in out["value"]), out
    tally(2)


def test_learners_per_entry_delta(tally: Callable[[int], None]) -> None:
    S, A, H, N = 9, 4, 10, 1
    # delta_P = delta / (12 (N+2) S^2 A H), delta_1 = delta / (4 (N+1) S U): below 2.2e-308 refused
    for delta in (1e-300, 2.3e-308, MIN_NORMAL):
        for fn, args, divisor in (
            (delta_p, (delta, S, A, H, N), 12 * 3 * S * S * A * H),
            (delta_1, (delta, S, N, 20.0), 4 * 2 * S * 20),
        ):
            if delta / divisor < MIN_NORMAL:
                with pytest.raises(CMDPInputError, match=r"^delta: .* must be at least"):
                    fn(*args)
            else:
                assert fn(*args) == pytest.approx(delta / divisor, rel=1e-12)
    # a normal but tiny delta' keeps every logarithm finite (8 / 3e-308 overflows)
    for d in (3e-308, MIN_NORMAL, 5e-324):
        for rule in ("paper", "empirical-bernstein"):
            L = radius_log(d, (2, 2), rule)
            k = 8.0 if rule == "empirical-bernstein" else 4.0
            assert np.all(np.isfinite(L)) and np.allclose(L, math.log(k) - math.log(d))
    counts = np.zeros((3, 2, 3), dtype=np.int64)
    counts[:, :, 0] = 5  # p_hat 0 and 1
    for delta in (2.3e-308, 1e-300):
        for beta in (efroni_radius(counts, H, 100, delta), optpess_radius(counts, H, 100, delta)):
            assert np.all(np.isfinite(beta)) and np.all(beta > 0)
    tally(6 + 6 + 4)


@pytest.mark.parametrize("algo", ["optcmdp-bonus", "optpess", "dope"])
def test_bonus_overflow_refused_before_the_first_episode(algo: str, tally: Callable[[int], None]) -> None:
    model = make("1a")  # the safe learners get the model's safe baseline
    learner = make_learner(algo, model, 0.1, episodes=5, bonus_scale=1e308)
    with pytest.raises(CMDPInputError, match=r"^bonus_scale"):
        learner.planner()
    make_learner(algo, model, 0.1, episodes=5, bonus_scale=1e3).planner()  # finite: accepted
    tally(2)


def test_learn_cli_tiny_delta_and_huge_bonus(tally: Callable[[int], None]) -> None:
    runs = [
        (["learn", "1a", "--algo", "gmbl", "--samples-per-pair", "3", "--delta", "2.3e-308"], "delta:"),
        (["learn", "1a", "--algo", "optpess", "--episodes", "3", "--bonus-scale", "1e308"], "bonus_scale"),
        (["learn", "1a", "--algo", "online-crl", "--episodes", "3", "--delta", "2.3e-308"], "delta:"),
    ][: cases(2, 3)]
    for (_, name), proc in zip(runs, cli_batch([[*argv, "--json"] for argv, _ in runs]), strict=True):
        line = assert_one_line_refusal(proc, EXIT_BAD_INPUT)
        assert f"error: {name}" in line, line
    tally(len(runs))
