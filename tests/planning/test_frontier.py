"""The threshold frontier against the HiGHS LP solved at each threshold (an independent formulation)."""

from __future__ import annotations

import csv
import subprocess
import sys

import numpy as np
import pytest

from cmdp_rl import CMDPInputError, frontier, random_cmdp, solve
from cmdp_rl.envs.registry import make
from cmdp_rl.planning.frontier import BREAKPOINT_SWEEPS, write_frontier


def lp_value(m, i: int, x: float) -> tuple[str, float]:
    c_bar = m.c_bar.copy()
    c_bar[i] = x
    res = solve(m.replace(c_bar=c_bar), method="lp")
    return res.status, res.value


@pytest.mark.parametrize("seed", range(6))
def test_single_constraint_breakpoints_and_grid_match_the_lp(seed: int) -> None:
    m = random_cmdp(12, 3, 6, 1, seed=seed, support=3)
    fr = frontier(m, points=9)
    H = m.H
    assert fr.breakpoints is not None and fr.lo <= fr.hi
    for x, v, g in [*zip(fr.c_bar, fr.value, fr.gap, strict=True), *fr.breakpoints]:
        status, ref = lp_value(m, 0, x)
        assert status == "optimal"
        assert abs(v - ref) <= 1e-7 * H and ref - v <= g + 1e-9 * H
    # concave and non-decreasing through the breakpoints
    x, v = fr.breakpoints[:, 0], fr.breakpoints[:, 1]
    slopes = np.diff(v) / np.diff(x)
    assert np.all(slopes >= -1e-9) and np.all(np.diff(slopes) <= 1e-7)
    # below lo infeasible, above hi flat
    assert lp_value(m, 0, fr.lo - 1e-4)[0] == "infeasible"
    assert abs(lp_value(m, 0, fr.hi + 1.0)[1] - fr.value[-1]) <= 1e-7 * H


@pytest.mark.parametrize("seed, N, i", [(0, 2, 0), (1, 2, 1), (2, 3, 2), (3, 3, 0)])
def test_several_constraints_match_the_lp_at_every_point(seed: int, N: int, i: int) -> None:
    m = random_cmdp(10, 3, 5, N, seed=seed, support=2, slack=0.6)
    fr = frontier(m, constraint=i, points=6)
    assert fr.breakpoints is None and fr.constraint == i
    for x, v, g in zip(fr.c_bar, fr.value, fr.gap, strict=True):
        status, ref = lp_value(m, i, x)
        assert status == "optimal" and abs(v - ref) <= 1e-7 * m.H and ref - v <= g + 1e-9 * m.H
    assert lp_value(m, i, fr.lo - 1e-4)[0] == "infeasible"
    assert abs(lp_value(m, i, fr.hi + 1.0)[1] - fr.value[-1]) <= 1e-7 * m.H
    assert np.all(np.diff(fr.value) >= -1e-9)


def test_bad_arguments() -> None:
    m = random_cmdp(4, 2, 3, 2, seed=0)
    for kwargs, fragment in [
        (dict(constraint=2), "constraint: must be an index in [0, 1]"),
        (dict(points=1), "points: must be an integer >= 2"),
        (dict(gap_tol=-1), "gap_tol: must be >= 0"),
    ]:
        with pytest.raises(CMDPInputError, match=None) as err:
            frontier(m, **kwargs)
        assert fragment in str(err.value)
    with pytest.raises(CMDPInputError, match="N = 0"):
        frontier(random_cmdp(4, 2, 3, 0, seed=0))


@pytest.mark.slow
def test_written_files_and_cli(tmp_path) -> None:
    m = random_cmdp(8, 3, 4, 1, seed=5)
    fr = frontier(m, points=5)
    write_frontier(fr, str(tmp_path / "api"))
    with open(tmp_path / "api" / "frontier.csv") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["c_bar", "value", "gap"] and len(rows) - 1 == len(fr.rows())
    assert (tmp_path / "api" / "frontier.png").stat().st_size > 0
    path = tmp_path / "m.npz"
    m.save(path)
    out = tmp_path / "cli"
    proc = subprocess.run(
        [sys.executable, "-m", "cmdp_rl", "frontier", str(path), "--points", "5", "--out", str(out)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert (out / "frontier.csv").read_text() == (tmp_path / "api" / "frontier.csv").read_text()
    bad = subprocess.run(
        [sys.executable, "-m", "cmdp_rl", "frontier", str(path), "--constraint", "3", "--out", str(tmp_path / "no")],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "no").exists()


def test_single_constraint_without_breakpoints_refines_only_the_grid_segments() -> None:
    m = random_cmdp(15, 3, 6, 1, seed=9, support=3)
    full, grid = frontier(m, points=7, breakpoints=True), frontier(m, points=7, breakpoints=False)
    assert full.breakpoints is not None and len(full.breakpoints) > 7
    assert grid.breakpoints is None and np.allclose(grid.c_bar, full.c_bar)
    assert grid.sweeps < full.sweeps and np.all(grid.gap <= 1e-9 * m.H)
    np.testing.assert_allclose(grid.value, full.value, atol=1e-7 * m.H)
    for x, v, g in zip(grid.c_bar, grid.value, grid.gap, strict=True):
        status, ref = lp_value(m, 0, x)
        assert status == "optimal" and abs(v - ref) <= 1e-7 * m.H and ref - v <= g + 1e-9 * m.H


def test_a_model_with_too_many_breakpoints_keeps_the_certified_grid() -> None:
    # 40 states, H = 20: hundreds of breakpoints, beyond the default budget of 400 further sweeps
    m = random_cmdp(40, 3, 20, 1, seed=4, support=3)
    fr, grid, every = (frontier(m, points=5, breakpoints=b) for b in (None, False, True))
    assert fr.breakpoints is None and every.breakpoints is not None
    assert (
        every.sweeps - grid.sweeps > BREAKPOINT_SWEEPS and grid.sweeps <= fr.sweeps <= grid.sweeps + BREAKPOINT_SWEEPS
    )
    # 2 B - 3 sweeps for B breakpoints found from the two ends (merging only drops some)
    assert every.sweeps - grid.sweeps >= 2 * len(every.breakpoints) - 3
    np.testing.assert_array_equal(fr.value, grid.value)
    for x, v, g in zip(fr.c_bar, fr.value, fr.gap, strict=True):
        status, ref = lp_value(m, 0, x)
        assert status == "optimal" and abs(v - ref) <= 1e-7 * m.H and ref - v <= g + 1e-9 * m.H


def test_the_repr_is_short_sizes_and_ranges() -> None:
    """A thousand breakpoints and fifty grid points print as counts and ranges (issue 'real models', item 6)."""
    from cmdp_rl.planning.frontier import Frontier

    grid = np.linspace(0.5, 2.0, 50)
    fr = Frontier(0, grid, 2.0 * grid, np.zeros(50), np.zeros((1000, 3)), 0.5, 2.0, 7, 1e-9)
    assert repr(fr) == (
        "Frontier(constraint=0, status='optimal', points=50, c_bar=[0.5 .. 2], value=[1 .. 4], max_gap=0, "
        "breakpoints=1000, lo=0.5, hi=2, sweeps=7)"
    )
    none = Frontier(1, grid, grid, np.full(50, 1e-3), None, 0.5, 2.0, 3, 1e-9)
    assert "status='uncertified'" in repr(none) and "breakpoints=None" in repr(none) and "max_gap=0.001" in repr(none)


GRIDS = (2, 7, 11, 50)


@pytest.mark.parametrize("name", ["1b", "media-control", "inventory", "frozenlake4x4-hole", "random_cmdp"])
def test_the_breakpoints_do_not_depend_on_the_grid(name: str) -> None:
    """One answer for every ``points`` (issue 'real models', item 6: 86 breakpoints with 50 points,
    87 with 11), at the default ``gap_tol`` and at a coarse one where merging drops vertices."""
    m = make(name) if name != "random_cmdp" else random_cmdp(15, 3, 8, 1, seed=3, support=3)
    for tol in (None, 1e-4 * m.H):
        runs = [frontier(m, points=k, gap_tol=tol, breakpoints=True).breakpoints for k in GRIDS]
        assert all(b is not None for b in runs)
        for b in runs[1:]:
            np.testing.assert_array_equal(b, runs[0])
    default = [frontier(m, points=k).breakpoints for k in GRIDS]  # within the budget here
    assert all(b is not None and np.array_equal(b, default[0]) for b in default)


@pytest.mark.parametrize("seed", range(3))
def test_merged_breakpoints_stay_within_gap_tol_of_the_lp(seed: int) -> None:
    """A coarse ``gap_tol`` merges breakpoints; the curve through those kept still lies below the
    LP's optimal value and within ``gap_tol`` of it, at every breakpoint and between them."""
    m = random_cmdp(12, 3, 6, 1, seed=seed, support=3)
    H, tol = m.H, 2e-3 * m.H
    fine, coarse = frontier(m, points=5).breakpoints, frontier(m, points=5, gap_tol=tol).breakpoints
    assert fine is not None and coarse is not None and len(coarse) < len(fine)
    assert set(coarse[:, 0]) <= set(fine[:, 0])  # merging keeps a subset of the exact vertices
    assert np.all(coarse[:, 2] <= tol)
    bx, bv = coarse[:, 0], coarse[:, 1]
    mids = (bx[1:] + bx[:-1]) / 2
    for x in np.concatenate([bx, mids, np.linspace(bx[0], bx[-1], 13)]):
        status, ref = lp_value(m, 0, x)
        curve = float(np.interp(x, bx, bv))
        assert status == "optimal" and curve <= ref + 1e-7 * H and ref <= curve + tol + 1e-7 * H
    for x, v, _ in coarse:  # a kept breakpoint is a point of the exact curve
        assert abs(lp_value(m, 0, x)[1] - v) <= 1e-7 * H
