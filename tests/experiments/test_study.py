"""The n-constraints study: its statistics on hand-made curves, and the command end to end."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from cmdp_rl.cli import main
from cmdp_rl.experiments.study import NConstraintsStudy, linear_fit, run_study, samples_to_eps, theory_growth
from cmdp_rl.plumbing.validation import CMDPInputError


def test_samples_to_eps_on_hand_made_curves() -> None:
    x = [10, 20, 40, 80, 160]
    # good from 40 on, but bad again at 80: "stays so" starts at 160
    assert samples_to_eps(x, [0.9, 0.6, 0.2, 0.7, 0.1], [0, 0, 0, 0, 0], 0.5) == 160
    # good from 40 on and stays
    assert samples_to_eps(x, [0.9, 0.6, 0.2, 0.3, 0.1], [0, 0, 0, 0, 0], 0.5) == 40
    # the violation decides
    assert samples_to_eps(x, [0, 0, 0, 0, 0], [0.9, 0.8, 0.4, 0.6, 0.0], 0.5) == 160
    # good everywhere: the first point
    assert samples_to_eps(x, [0.1] * 5, [0.1] * 5, 0.5) == 10
    # never good at the end: nan
    assert math.isnan(samples_to_eps(x, [0.1, 0.1, 0.1, 0.1, 0.9], [0] * 5, 0.5))
    # order of the points does not matter
    assert samples_to_eps(x[::-1], [0.1, 0.3, 0.2, 0.6, 0.9], [0] * 5, 0.5) == 40


def test_linear_fit_against_scipy() -> None:
    rng = np.random.default_rng(0)
    g = np.log(np.repeat([1.0, 2, 4, 8, 16, 32, 64], 10))
    y = 300 + 120 * g + rng.normal(0, 40, g.size)
    fit = linear_fit(g, y)
    ref = stats.linregress(g, y)
    assert fit.b == pytest.approx(ref.slope) and fit.a == pytest.approx(ref.intercept)
    t = stats.t.ppf(0.975, g.size - 2)
    assert fit.b_half == pytest.approx(t * ref.stderr)
    assert fit.r2 == pytest.approx(ref.rvalue**2)
    assert fit.b - fit.b_half < 120 < fit.b + fit.b_half


def test_theory_growth_is_logarithmic() -> None:
    g = theory_growth("gmbl", [1, 2, 4, 64], 9, 4, 10, 0.1, 0.1)
    assert g[0] == 1.0 and np.all(np.diff(g) > 0) and g[-1] < 2.0  # log (N + 2) in the union bound only


@pytest.mark.slow
def test_bad_settings_name_the_field() -> None:
    with pytest.raises(CMDPInputError, match="ns"):
        NConstraintsStudy(ns=(0, 2))
    with pytest.raises(CMDPInputError, match="families"):
        NConstraintsStudy(families=("twins",))
    with pytest.raises(CMDPInputError, match="eps"):
        NConstraintsStudy(eps=(-1.0,))
    with pytest.raises(CMDPInputError, match="runs"):
        NConstraintsStudy(runs=0)


@pytest.mark.slow
def test_study_end_to_end_and_resume(tmp_path: Path) -> None:
    study = NConstraintsStudy.quick(
        ns=(1, 4), runs=2, episodes=40, gmbl_n_max=200, gmbl_points=3, checkpoints=4, jobs=1
    )
    out = tmp_path / "study"
    res = run_study(study, out, progress=False)
    first = res.results_csv.read_bytes()
    needed = res.needed_csv.read_text().splitlines()
    header = res.results_csv.read_text().splitlines()[0].split(",")
    for col in (
        "n_constraints",
        "family",
        "algorithm",
        "radius",
        "run",
        "samples",
        "value_gap",
        "violation",
        "v_star",
        "model",
    ):
        assert col in header
    assert needed[0].startswith("n_constraints,family,algorithm,radius,run,eps,samples")
    # 2 N x 2 families x 2 algorithms x 2 radii x 2 runs x 2 eps
    assert len(needed) - 1 == 2 * 2 * 2 * 2 * 2 * 2
    for family in ("copies", "distinct"):
        for n in (1, 4):
            assert (out / "models" / f"{family}_n{n}.npz").is_file()
    assert any(p.name == "fig_samples_needed_distinct.png" for p in res.figures)
    # interrupt: lose some run files, rerun: same bytes
    runs = sorted((out / "runs" / "paper").glob("*.json"))
    for p in runs[::3]:
        p.unlink()
    again = run_study(study, out, progress=False)
    assert again.results_csv.read_bytes() == first
    # other settings in the same folder are refused
    with pytest.raises(CMDPInputError):
        run_study(
            NConstraintsStudy.quick(
                ns=(1, 4), runs=2, episodes=41, gmbl_n_max=200, gmbl_points=3, checkpoints=4, jobs=1
            ),
            out,
            progress=False,
        )


def test_study_cli_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("x")
    assert main(["study", "n-constraints", "--quick", "--out", str(tmp_path / "file"), "--no-progress"]) == 2
    assert "out" in capsys.readouterr().err
    assert main(["study", "unknown-study"]) == 2
