"""The theory calculator against the paper's formulas, written out independently here."""

from __future__ import annotations

import json
from math import ceil, log, log2, sqrt

import pytest

from cmdp_rl import CMDPInputError
from cmdp_rl.cli import main
from cmdp_rl.confidence.sample_size import gmbl_bounds, online_crl_bounds


@pytest.mark.parametrize(
    "S, A, H, N, eps, delta", [(9, 4, 10, 1, 0.1, 0.1), (25, 4, 15, 1, 0.05, 0.01), (4, 2, 3, 0, 0.2, 0.5)]
)
def test_gmbl(S, A, H, N, eps, delta) -> None:
    b = gmbl_bounds(S, A, H, N, eps, delta)
    n = 256 / eps**2 * S * H**3 * log(12 * (N + 2) * S * A * H / delta)  # Algorithm 1 line 5
    assert b.n_per_pair == ceil(n)
    assert b.total_samples == S * A * ceil(n)
    assert b.delta_P == pytest.approx(delta / (12 * (N + 2) * S**2 * A * H))
    assert b.eps_max == pytest.approx(2 / 9 * sqrt(H / S))


@pytest.mark.parametrize("S, A, H, N, eps, delta", [(9, 4, 10, 1, 0.1, 0.1), (25, 4, 15, 2, 0.05, 0.01)])
def test_online_crl(S, A, H, N, eps, delta) -> None:
    o = online_crl_bounds(S, A, H, N, eps, delta)
    ll = log2(log2(H)) ** 2
    l8 = log2(8 * H * H * S * S / eps) ** 2
    m = 2560 * S * H * H / eps**2 * ll * l8 * log(2048 * (N + 1) * S**4 * A * H * H / (eps**2 * delta) * ll * l8)
    assert o.m == ceil(m)
    assert o.w_min == pytest.approx(eps / (4 * H * S))
    assert o.U_max == S * S * A * ceil(m)
    assert o.delta_1 == pytest.approx(delta / (4 * (N + 1) * S * S * S * A * ceil(m)))
    assert o.stop_count == S * ceil(m) * H
    e_max = log2(S) * log2(4 * S * H * H / eps)
    assert o.E_max == pytest.approx(e_max)
    assert o.bad_episodes == pytest.approx(6 * e_max * S * A * ceil(m))
    assert o.m >= o.m1_lower  # the final choice also satisfies eq. "m1"


def test_errors() -> None:
    with pytest.raises(CMDPInputError, match="eps"):
        gmbl_bounds(9, 4, 10, 1, 0.0, 0.1)
    with pytest.raises(CMDPInputError, match="delta"):
        online_crl_bounds(9, 4, 10, 1, 0.1, 1.0)
    with pytest.raises(CMDPInputError, match="H >= 3"):
        online_crl_bounds(9, 4, 2, 1, 0.1, 0.1)


def test_cli_bounds(capsys) -> None:
    assert (
        main(
            [
                "bounds",
                "--states",
                "9",
                "--actions",
                "4",
                "--horizon",
                "10",
                "--eps",
                "0.1",
                "--delta",
                "0.1",
                "--json",
            ]
        )
        == 0
    )
    rep = json.loads(capsys.readouterr().out)
    assert rep["optimistic_gmbl"]["n_per_pair"] == gmbl_bounds(9, 4, 10, 1, 0.1, 0.1).n_per_pair
    assert main(["bounds", "--states", "9", "--actions", "4", "--horizon", "10", "--eps", "2", "--delta", "0.1"]) == 2
    assert "eps" in capsys.readouterr().err
