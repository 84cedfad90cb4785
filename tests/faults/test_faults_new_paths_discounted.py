"""New paths of the hardening issue: discounted models and ``pg``.

``gamma`` at 0, at 1 and outside (0, 1) (and non-finite, a string, a boolean), both or neither of
``H`` and ``gamma``, an ``s0`` distribution that does not sum to one (or has a negative, NaN or
misplaced entry), and step sizes that are zero, negative, not finite or so large that a step
overflows: through the API (``CMDP``, ``CMDP.replace``, ``make``, ``pg.run``, Hypothesis draws),
through ``.npz`` files loaded by ``cmdp-rl solve FILE`` and ``cmdp-rl pg FILE`` and through
``cmdp-rl pg``'s options, each a one-line refusal (exit 2) that writes nothing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from faultkit import EXIT_BAD_INPUT, EXIT_OK, assert_one_line_refusal, cases, cli, tree
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cmdp_rl import CMDP, CMDPInputError, make, pg
from cmdp_rl.cli import main

CLASS = "New paths: discounted models and pg"

MESSAGE = re.compile(r"^[^\n]{1,160}?: \S[^\n]*$")

S, A = 3, 2
P0 = np.full((S, A, S), 1.0 / S)
R0 = np.linspace(0.0, 1.0, S * A).reshape(S, A)
C0 = np.linspace(1.0, 0.0, S * A).reshape(1, S, A)
RHO0 = np.array([0.2, 0.3, 0.5])
GAMMA0 = 0.8
#: c_bar = 2.0 < 1 / (1 - 0.8) = 5: a Slater-feasible threshold (NPG-PD's default Lambda exists)
MODEL0 = CMDP(P0, R0, C0, [2.0], RHO0, gamma=GAMMA0)

#: discount factors refused: 0, 1, outside (0, 1), non-finite, the wrong kind
BAD_GAMMAS: list[Any] = [0, 0.0, -0.0, 1, 1.0, -0.5, 1.5, 2, math.nan, math.inf, -math.inf, "0.5", True, [0.5], 1e308]
#: start distributions refused (S = 3): not summing to one, negative, non-finite, wrong length or kind
BAD_STARTS: list[Any] = [
    [0.5, 0.6, 0.0],
    [0.2, 0.3, 0.4],
    [1.0, 1e-6, 0.0],
    [1.5, -0.5, 0.0],
    [0.0, 0.0, 0.0],
    [math.nan, 0.5, 0.5],
    [math.inf, 0.0, 0.0],
    [0.5, 0.5],
    [0.25] * 4,
    ["0.5", "0.5", "0"],
    [True, False, False],
    [[1.0, 0.0, 0.0]],
    0.5,
    3,
    -1,
    "0",
]
#: step sizes refused (tol refuses only the negative and non-finite ones)
BAD_STEPS: list[Any] = [0, 0.0, -0.0, -1, -1e-9, math.nan, math.inf, -math.inf, "1", True, None, [1.0], 1e308]
BAD_TOLS: list[Any] = [-1, -1e-9, math.nan, math.inf, -math.inf, "0", True, None]


def _refused(call: Callable[[], object], name: str) -> str:
    with pytest.raises(CMDPInputError) as ex:
        call()
    msg = str(ex.value)
    assert MESSAGE.match(msg), msg
    assert name in msg.split(":")[0], (name, msg)
    return msg


# -- the API ---------------------------------------------------------------------------------------


def test_gamma_outside_the_open_unit_interval(tally: Callable[[int], None]) -> None:
    """CMDP(gamma=...), replace(gamma=...) and ding-random:gamma=... refuse each bad gamma, naming gamma."""
    n = 0
    for g in BAD_GAMMAS:
        _refused(lambda g=g: CMDP(P0, R0, C0, [2.0], RHO0, gamma=g), "gamma")  # type: ignore[misc]
        _refused(lambda g=g: MODEL0.replace(gamma=g), "gamma")  # type: ignore[misc]
        n += 2
    for text in ("0", "1", "-0", "1.5", "-0.5", "nan", "inf", "5e-324", "1e400", "x", ""):
        with pytest.raises(CMDPInputError) as ex:
            make(f"ding-random:S=4,A=2,gamma={text}")
        assert MESSAGE.match(str(ex.value)) and "gamma" in str(ex.value), str(ex.value)
        n += 1
    for g in (1e-300, 0.5, 1 - 2e-9):  # inside (0, 1), 1 / (1 - gamma) <= 1e9: valid
        assert CMDP(P0, R0, C0, [2.0], RHO0, gamma=g).gamma == g
        n += 1
    for g in (1 - 1e-10, 1 - 1e-12, 1 - 1e-15):  # 1 / (1 - gamma) > 1e9: refused, naming gamma (round three)
        _refused(lambda g=g: CMDP(P0, R0, C0, [2.0], RHO0, gamma=g), "gamma")  # type: ignore[misc]
        n += 1
    tally(n)


def test_both_or_neither_of_H_and_gamma(tally: Callable[[int], None]) -> None:
    """Exactly one of H and gamma: both, neither, and H given as a discount (or gamma as a horizon)."""
    calls = [
        lambda: CMDP(P0, R0, C0, [2.0], 0, H=3, gamma=0.5),
        lambda: CMDP(P0, R0, C0, [2.0], 0),
        lambda: CMDP(P0, R0, C0, [2.0], 0, H=None, gamma=None),
        lambda: MODEL0.replace(H=3, gamma=0.5),
        lambda: CMDP(P0, R0, C0, [2.0], 0, H=0.5),
        lambda: CMDP(P0, R0, C0, [2.0], 0, gamma=3),
    ]
    for call in calls:
        _refused(call, "H" if call is not calls[-1] else "gamma")
    assert MODEL0.replace(H=3).H == 3 and MODEL0.replace(H=3).gamma is None  # H alone turns it finite-horizon
    tally(len(calls) + 1)


def test_start_distributions_that_are_not_distributions(tally: Callable[[int], None]) -> None:
    """An s0 that does not sum to one, or is negative, non-finite, of the wrong length or kind: refused
    naming s0, for a discounted and a finite-horizon model alike."""
    n = 0
    for s0 in BAD_STARTS:
        _refused(lambda s0=s0: CMDP(P0, R0, C0, [2.0], s0, gamma=GAMMA0), "s0")  # type: ignore[misc]
        _refused(lambda s0=s0: CMDP(P0, R0, C0, [2.0], s0, H=3), "s0")  # type: ignore[misc]
        n += 2
    ok = CMDP(P0, R0, C0, [2.0], [0.2, 0.3, 0.5 + 5e-9], gamma=GAMMA0)  # within the 1e-8 tolerance
    assert ok.rho.sum() == pytest.approx(1.0)
    tally(n + 1)


def test_step_sizes_zero_negative_or_not_finite(tally: Callable[[int], None]) -> None:
    """pg.run refuses each bad step size naming it; -0 is a valid tol (read as 0); a step so large
    that one iteration overflows theta is refused naming the step size."""
    n = 0
    for key in ("eta1", "eta2", "Lambda"):
        for v in BAD_STEPS:
            if key == "Lambda" and v is None:  # None: the default bound
                continue
            if key == "eta2" and v == 1e308:  # the dual step is projected: it cannot overflow
                continue
            _refused(lambda key=key, v=v: pg.run(MODEL0, "npg-pd", 2, **{key: v}), key)  # type: ignore[misc]
            n += 1
    for v in BAD_STEPS:
        _refused(lambda v=v: pg.run(MODEL0, "crpo", 2, eta=v), "eta")  # type: ignore[misc]
        n += 1
    for v in BAD_TOLS:
        _refused(lambda v=v: pg.run(MODEL0, "crpo", 2, tol=v), "tol")  # type: ignore[misc]
        n += 1
    res = pg.run(MODEL0, "crpo", 2, tol=-0.0)
    assert res.settings["tol"] == 0.0 and math.copysign(1.0, res.settings["tol"]) == 1.0
    _refused(lambda: pg.run(MODEL0, "crpo", 2, eta1=1.0), "eta1")  # another algorithm's step size
    _refused(lambda: pg.run(MODEL0, "npg-pd", 2, eta=1.0), "eta")
    _refused(lambda: pg.run(MODEL0, "npg-pd", 2, eta1=1e306, update="script"), "eta1")
    tally(n + 4)


def test_pg_run_other_arguments(tally: Callable[[int], None]) -> None:
    """iterations, samples and seed (integers within range; 10**30 and 2**62 iterates refused before
    allocating), a finite-horizon model, an unknown algorithm, update or init."""
    calls: list[tuple[Callable[[], object], str]] = [
        (lambda: pg.run(MODEL0, "npg-pd", 0), "iterations"),
        (lambda: pg.run(MODEL0, "npg-pd", 10**30), "iterations"),
        (lambda: pg.run(MODEL0, "npg-pd", 2**62), "iterations"),
        (lambda: pg.run(MODEL0, "npg-pd", 2.5), "iterations"),
        (lambda: pg.run(MODEL0, "npg-pd", True), "iterations"),
        (lambda: pg.run(MODEL0, "npg-pd", 2, exact=False, samples=2**62), "samples"),
        (lambda: pg.run(MODEL0, "npg-pd", 2, exact=False, samples=0), "samples"),
        (lambda: pg.run(MODEL0, "npg-pd", 2, seed=-1), "seed"),
        (lambda: pg.run(MODEL0, "npg-pd", 2, seed=2**64), "seed"),
        (lambda: pg.run(MODEL0, "npg-pd", 2, exact="yes"), "exact"),
        (lambda: pg.run(MODEL0, "sgd", 2), "algorithm"),
        (lambda: pg.run(MODEL0, "npg-pd", 2, update="x"), "update"),
        (lambda: pg.run(MODEL0, "npg-pd", 2, init=None), "init"),
        (lambda: pg.run(MODEL0.replace(H=3), "npg-pd", 2), "H"),
        (lambda: pg.run("model", "npg-pd", 2), "cmdp"),
    ]
    for call, name in calls:
        _refused(call, name)
    tally(len(calls))


SETTINGS = settings(
    max_examples=cases(25, 300),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,
)
NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True),
    st.sampled_from([0, 1, -1, 0.5, 0.9, 2**63, 10**30, True, "0.5", None, -0.0, 5e-324]),
)


@SETTINGS
@given(
    H=st.one_of(st.just(None), st.integers(-2, 4), st.sampled_from([2**63, 2**62, 1.0, 3.5, "3"])),
    gamma=st.one_of(st.just(None), NUMBERS),
    s0=st.one_of(
        st.integers(-1, 3),
        st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), min_size=2, max_size=4),
        st.sampled_from([RHO0, RHO0 * 1.01, RHO0 - 1e-7, [1.0, 0.0, 0.0]]),
    ),
)
def test_drawn_lengths_and_starts(H: Any, gamma: Any, s0: Any, tally: Callable[[int], None]) -> None:
    """Whatever H, gamma and s0 are drawn: a model, or a one-line CMDPInputError."""
    try:
        m = CMDP(P0, R0, C0, [2.0], s0, H, gamma)
    except CMDPInputError as exc:
        assert MESSAGE.match(str(exc)), str(exc)
    else:
        assert (m.H is None) != (m.gamma is None)
        assert m.gamma is None or 0.0 < m.gamma < 1.0
        assert abs(float(m.rho.sum()) - 1.0) <= 1e-8
    tally(1)


@SETTINGS
@given(
    algo=st.sampled_from(["npg-pd", "crpo"]),
    step=NUMBERS,
    key=st.sampled_from(["eta1", "eta2", "kappa", "Lambda", "eta", "tol"]),
    update=st.sampled_from(["paper", "script"]),
)
def test_drawn_step_sizes(algo: str, step: Any, key: str, update: str, tally: Callable[[int], None]) -> None:
    """Whatever step size is drawn: a run with finite iterates, or a one-line CMDPInputError."""
    try:
        res = pg.run(MODEL0, algo, 2, update=update, **{key: step})
    except CMDPInputError as exc:
        assert MESSAGE.match(str(exc)), str(exc)
    else:
        assert np.isfinite(res.values).all() and np.isfinite(res.policies).all(), (algo, key, step)
    tally(1)


# -- files and the command line --------------------------------------------------------------------


def _npz(path: Path, **changes: Any) -> Path:
    """A discounted model file with some keys changed (a value None drops the key)."""
    keys: dict[str, Any] = {
        "P": P0,
        "r": R0,
        "c": C0,
        "c_bar": np.array([2.0]),
        "s0": RHO0,
        "gamma": np.float64(GAMMA0),
    }
    keys.update(changes)
    np.savez(path, **{k: v for k, v in keys.items() if v is not None})
    return path


#: model files: (name, changed keys, the word the refusal names)
BAD_FILES: list[tuple[str, dict[str, Any], str]] = [
    ("gamma0", {"gamma": np.float64(0.0)}, "gamma"),
    ("gamma1", {"gamma": np.float64(1.0)}, "gamma"),
    ("gamma_neg", {"gamma": np.float64(-0.2)}, "gamma"),
    ("gamma_big", {"gamma": np.float64(1.5)}, "gamma"),
    ("gamma_nan", {"gamma": np.float64(np.nan)}, "gamma"),
    ("gamma_inf", {"gamma": np.float64(np.inf)}, "gamma"),
    ("gamma_str", {"gamma": np.str_("0.5")}, "gamma"),
    ("gamma_bool", {"gamma": np.bool_(True)}, "gamma"),
    ("both", {"H": np.int64(3)}, "'H' and 'gamma'"),
    ("neither", {"gamma": None}, "neither"),
    ("s0_sum", {"s0": np.array([0.5, 0.6, 0.0])}, "s0"),
    ("s0_low", {"s0": np.array([0.2, 0.3, 0.4])}, "s0"),
    ("s0_neg", {"s0": np.array([1.5, -0.5, 0.0])}, "s0"),
    ("s0_nan", {"s0": np.array([np.nan, 0.5, 0.5])}, "s0"),
    ("s0_len", {"s0": np.array([0.5, 0.5])}, "s0"),
    ("s0_index", {"s0": np.int64(7)}, "s0"),
]


@pytest.mark.parametrize("index", range(cases(6, len(BAD_FILES))))
def test_bad_discounted_files_through_solve_and_pg(index: int, tmp_path: Path, tally: Callable[[int], None]) -> None:
    """cmdp-rl solve FILE and cmdp-rl pg FILE --out DIR: exit 2, one line naming the key, nothing
    written (no DIR); the sample spreads over the files."""
    step = max(1, len(BAD_FILES) // cases(6, len(BAD_FILES)))
    name, changes, word = BAD_FILES[(index * step) % len(BAD_FILES)]
    path = _npz(tmp_path / f"{name}.npz", **changes)
    (tmp_path / "tmp").mkdir()
    before = tree(tmp_path)
    for argv in (["solve", path.name], ["pg", path.name, "--iterations", "2", "--out", "pgout"]):
        proc = cli(*argv, cwd=tmp_path, env={"TMPDIR": str(tmp_path / "tmp")})
        line = assert_one_line_refusal(proc)
        assert word in line, (name, line)
        assert tree(tmp_path) == before, (name, argv)
    tally(2)


def test_a_valid_discounted_file_runs(tmp_path: Path, tally: Callable[[int], None]) -> None:
    """The control: the unchanged file solves (exit 0) and pg writes its results."""
    path = _npz(tmp_path / "ok.npz")
    assert cli("solve", path.name, cwd=tmp_path).returncode == EXIT_OK
    proc = cli("pg", path.name, "--iterations", "3", "--out", "pgout", "--json", cwd=tmp_path)
    assert proc.returncode == EXIT_OK, proc.stderr[-2000:]
    assert (tmp_path / "pgout" / "results.csv").is_file()
    tally(2)


#: pg's step-size options and the values refused at once by the parser
PG_STEPS = ("--eta1", "--eta2", "--lambda-max", "--eta")
PG_BAD = ("0", "-0", "-1", "-1e-9", "nan", "inf", "-inf", "5e-324", "1e400", "", "x")
TOL_BAD = ("-1", "-1e-9", "nan", "inf", "5e-324", "1e400", "", "x")


def test_pg_step_options_refused_by_the_parser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tally: Callable[[int], None]
) -> None:
    """Each step-size option with a zero, negative, non-finite, denormal or non-numeric value: exit 2,
    one line naming the option, nothing written; --tol -0 is valid."""
    monkeypatch.chdir(tmp_path)
    before = tree(tmp_path)
    n = 0
    for option, bad in [(o, v) for o in PG_STEPS for v in PG_BAD] + [("--tol", v) for v in TOL_BAD]:
        code = main(["pg", "ding-random:S=4,A=2,b=0.5", f"{option}={bad}", "--out", "pgout"])
        lines = capsys.readouterr().err.strip().splitlines()
        assert code == EXIT_BAD_INPUT and len(lines) == 1, (option, bad, lines)
        assert option in lines[0], lines[0]
        n += 1
    assert tree(tmp_path) == before
    tally(n)


#: step sizes accepted by the parser that the run refuses (the step overflows), or a model's gamma
PG_RUN_REFUSALS: list[tuple[list[str], str]] = [
    (["--eta1", "1e308"], "eta1"),
    (["--lambda-max", "1e308"], "Lambda"),
    (["--algos", "crpo", "--eta", "1e308"], "eta"),
    (["--algos", "crpo", "--eta", "1e306", "--update", "script"], "eta"),
    (["--algos", "crpo", "--eta1", "1"], "--eta1"),
    (["--algos", "npg-pd,npg-pd"], "--algorithms"),
    (["--iterations", str(2**63 - 1)], "iterations"),
    (["--samples", str(2**63 - 1)], "samples"),
]


@pytest.mark.parametrize("index", range(cases(3, len(PG_RUN_REFUSALS))))
def test_pg_refusals_through_the_command_line(index: int, tmp_path: Path, tally: Callable[[int], None]) -> None:
    """The run's own refusals (an overflowing step, an option of the other algorithm, a job beyond
    the limits): exit 2, one line, no --out folder."""
    step = max(1, len(PG_RUN_REFUSALS) // cases(3, len(PG_RUN_REFUSALS)))
    extra, word = PG_RUN_REFUSALS[(index * step) % len(PG_RUN_REFUSALS)]
    (tmp_path / "tmp").mkdir()
    before = tree(tmp_path)
    proc = cli(
        "pg",
        "ding-random:S=4,A=2,b=0.5",
        "--iterations",
        "2",
        *extra,
        "--out",
        "pgout",
        cwd=tmp_path,
        env={"TMPDIR": str(tmp_path / "tmp")},
    )
    line = assert_one_line_refusal(proc)
    assert word in line, line
    assert tree(tmp_path) == before
    tally(1)


def test_a_finite_horizon_model_is_refused_by_pg(tmp_path: Path, tally: Callable[[int], None]) -> None:
    """pg on a finite-horizon model (a registered one, and a file with H): exit 2 naming the model."""
    path = _npz(tmp_path / "finite.npz", gamma=None, H=np.int64(3), s0=np.int64(0))
    for model in ("1a", path.name):
        proc = cli("pg", model, "--iterations", "2", "--out", "pgout", cwd=tmp_path)
        line = assert_one_line_refusal(proc)
        assert "finite-horizon" in line, line
        assert not (tmp_path / "pgout").exists()
    tally(2)
