"""A model checker's file as MODEL (``cmdp_rl.cli.checker_model``): ``solve``, ``export``, ``learn``,
``certify``, ``frontier`` and ``pg`` take ``*.prism``/``*.nm``/``*.pm``, ``*.jani`` and ``*.drn``
with ``--reward``, ``--cost``, ``--constants``, ``--horizon``/``--gamma``, ``--c-bar`` and ``--s0``
(issue 'real models', item 6). The model is the one ``import-prism`` writes; the values are checked
against references written here (backward induction, an occupation-measure LP), not the planner.

The model, ``examples/storm/relay.nm`` (Storm's state numbering): states 0 (idle, nothing sent) and
1 (waiting, nothing sent) are the initial ones; actions ``fast`` (0.85 a packet through, 0.05 broken)
and ``slow`` (0.6 through, never broken) where idle with packets left, ``wait``, ``repair`` or
``done`` (one choice) elsewhere; labels ``broken`` and ``finished``.
"""

from __future__ import annotations

import json
import shutil
import sys
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pytest
from faultkit import run_main
from scipy.optimize import linprog

from cmdp_rl.model.cmdp import CMDP

RELAY = Path(__file__).resolve().parents[2] / "examples" / "storm" / "relay.nm"
#: a test that builds a model through stormpy (an optional extra: skipped without it)
STORM = pytest.mark.skipif(find_spec("stormpy") is None, reason='needs stormpy: pip install "cmdp-rl[storm]"')
#: relay with its reward named delivered, its cost energy at threshold 6, horizon 6
FILL = ["--reward", "delivered", "--cost", "energy", "--c-bar", "6", "--horizon", "6"]


@pytest.fixture()
def relay(tmp_path: Path) -> Path:
    """``relay.nm`` copied into the test's folder (messages name it by its short path)."""
    shutil.copy(RELAY, tmp_path / "relay.nm")
    return tmp_path


def _json(folder: Path, *argv: str, code: int = 0) -> dict:
    proc = run_main(*argv, "--json", cwd=folder)
    assert proc.returncode == code, proc.stderr
    return json.loads(proc.stdout)


def _arrays(reward: str, cost: str | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict]:
    """relay's ``(S, A, S)`` kernel, reward, costs, start distribution and labels, from Storm (the
    Python import), for the references below."""
    from cmdp_rl.model.storm import from_prism

    costs = [] if cost is None else [cost]
    m = from_prism(RELAY, reward=reward, costs=costs, H=1, c_bar=[0.0] * len(costs) or None)
    return m.K.toarray().reshape(m.S, m.A, m.S), m.r, m.c, m.rho, dict(m.labels)


def _export(folder: Path) -> Path:
    """relay as a model file (``cmdp-rl export``), for its action names."""
    assert run_main("export", "relay.nm", "relay.npz", "--horizon", "1", cwd=folder).returncode == 0
    return folder / "relay.npz"


def _best(P: np.ndarray, r: np.ndarray, H: int, allowed: np.ndarray | None = None) -> np.ndarray:
    """``(S,)`` the largest expected sum of ``H`` rewards from each state, by backward induction
    over the actions ``allowed`` (``(S, A)`` bool; all by default)."""
    V = np.zeros(P.shape[0])
    for _ in range(H):
        Q = r + P @ V
        V = np.where(allowed, Q, -np.inf).max(axis=1) if allowed is not None else Q.max(axis=1)
    return V


def _reach(P: np.ndarray, goal: np.ndarray, H: int) -> np.ndarray:
    """``(S,)`` the largest probability that one of ``s_0 .. s_H`` lies in ``goal``."""
    V = goal.astype(float)
    for _ in range(H):
        V = np.where(goal, 1.0, (P @ V).max(axis=1))
    return V


def _policy_value(P: np.ndarray, r: np.ndarray, policy: np.ndarray) -> np.ndarray:
    """``(S,)`` the expected sum of rewards of the ``(H, S, A)`` policy from each state."""
    V = np.zeros(P.shape[0])
    for h in reversed(range(policy.shape[0])):
        V = (policy[h] * (r + P @ V)).sum(axis=1)
    return V


def _discounted_lp(P: np.ndarray, r: np.ndarray, c: np.ndarray, c_bar: float, rho: np.ndarray, gamma: float) -> float:
    """The discounted CMDP's optimum through its occupation measure ``x(s, a)``: ``sum_a x(s', a) -
    gamma sum_{s,a} P(s'|s,a) x(s, a) = rho(s')``, ``c . x <= c_bar``, maximize ``r . x``."""
    S, A = r.shape
    flow = np.repeat(np.eye(S), A, axis=1) - gamma * P.reshape(S * A, S).T
    res = linprog(-r.ravel(), A_ub=c.reshape(1, -1), b_ub=[c_bar], A_eq=flow, b_eq=rho, method="highs")
    assert res.status == 0
    return float(-res.fun)


@STORM
def test_solve_and_export_of_a_prism_file_are_those_of_its_import(relay: Path) -> None:
    proc = run_main("import-prism", "relay.nm", *FILL, "--out", "imported.npz", cwd=relay)
    assert proc.returncode == 0, proc.stderr
    direct, imported = _json(relay, "solve", "relay.nm", *FILL), _json(relay, "solve", "imported.npz")
    assert direct["status"] == imported["status"] == "optimal"
    assert direct["value"] == pytest.approx(imported["value"], abs=1e-12)
    assert direct["costs"] == pytest.approx(imported["costs"], abs=1e-12)
    assert direct["costs"][0] == pytest.approx(6.0, abs=1e-9)  # the energy budget binds:
    P, r, _, rho, _ = _arrays("delivered")
    assert direct["value"] < rho @ _best(P, r, 6) - 0.1  # below the unconstrained optimum
    assert run_main("export", "relay.nm", "exported.npz", *FILL, cwd=relay).returncode == 0
    got, want = CMDP.load(relay / "exported.npz"), CMDP.load(relay / "imported.npz")
    assert (got.K != want.K).nnz == 0 and (got.H, got.gamma) == (want.H, want.gamma) == (6, None)
    for key in ("r", "c", "c_bar", "rho", "action_names"):
        assert np.array_equal(getattr(got, key), getattr(want, key)), key
    assert list(got.labels) == list(want.labels) and got.meta == want.meta


@STORM
def test_jani_and_drn_files_discounted_match_an_occupation_measure_lp(relay: Path) -> None:
    import stormpy

    program = stormpy.parse_prism_program(str(RELAY))
    stormpy.io.export_jani_to_file(relay / "relay.jani", program.to_jani())
    options = stormpy.BuilderOptions()
    options.set_build_all_reward_models()
    options.set_build_all_labels()
    options.set_build_choice_labels()
    stormpy.io.export_to_drn(stormpy.build_model(program, options=options), relay / "relay.drn")
    P, r, c, rho, _ = _arrays("delivered", "energy")
    want = _discounted_lp(P, r, c[0], 10.0, rho, 0.9)
    for name in ("relay.nm", "relay.jani", "relay.drn"):
        argv = ["--reward", "delivered", "--cost", "energy", "--c-bar", "10", "--gamma", "0.9"]
        got = _json(relay, "solve", name, *argv)
        assert got["status"] == "optimal" and got["value"] == pytest.approx(want, abs=1e-7), name
        assert got["costs"][0] <= 10.0 + 1e-7, name


@STORM
def test_s0_replaces_the_initial_states(relay: Path) -> None:
    P, r, _, rho, labels = _arrays("delivered")
    best = _best(P, r, 6)
    assert np.flatnonzero(rho).tolist() == [0, 1] == np.flatnonzero(labels["init"]).tolist()
    common = ["--reward", "delivered", "--horizon", "6"]
    for s0 in (0, 1, 3):  # the two initial states, and a broken one
        got = _json(relay, "solve", "relay.nm", *common, "--s0", str(s0))
        assert got["value"] == pytest.approx(best[s0], abs=1e-9), s0
    # without --s0 the start is uniform over the initial states (no constraint: the mean of their values)
    assert _json(relay, "solve", "relay.nm", *common)["value"] == pytest.approx(best[:2].mean(), abs=1e-9)


@STORM
def test_learn_and_certify_run_on_a_prism_file(relay: Path) -> None:
    P, r, _, _, _ = _arrays("delivered")
    argv = [*FILL, "--s0", "0"]
    learned = _json(relay, "learn", "relay.nm", *argv, "--episodes", "3", "--seed", "0", "--counts-out", "counts.npz")
    assert learned["episodes"] == 3 and learned["samples"] == 3 * 6
    assert learned["v_star"] < _best(P, r, 6)[0]  # the energy budget binds from state 0 too
    assert run_main("solve", "relay.nm", *argv, "--policy-out", "policy.npy", cwd=relay).returncode == 0
    cert = _json(relay, "certify", "relay.nm", *argv, "--policy", "policy.npy", "--counts", "counts.npz", code=1)
    assert cert["samples"] == 18 and not cert["safe"]  # 18 transitions certify no safety (exit 1)
    true_value = _policy_value(P, r, np.load(relay / "policy.npy"))[0]
    assert cert["value"][0] <= true_value <= cert["value"][1]
    assert true_value == pytest.approx(learned["v_star"], abs=1e-9)


@STORM
def test_reach_and_avoid_name_the_files_labels(relay: Path) -> None:
    P, r, _, rho, labels = _arrays("delivered")
    got = _json(relay, "solve", "relay.nm", "--reach", "finished", "--horizon", "4")
    assert got["value"] == pytest.approx(rho @ _reach(P, labels["finished"], 4), abs=1e-9)
    # never entering broken: never fast (the only way to break; no initial state is broken)
    avoid = _json(relay, "solve", "relay.nm", "--reward", "delivered", "--horizon", "6", "--avoid", "broken:0")
    not_fast = CMDP.load(_export(relay)).action_names != "fast"
    assert avoid["value"] == pytest.approx(rho @ _best(P, r, 6, not_fast), abs=1e-9)
    assert avoid["costs"] == pytest.approx([0.0], abs=1e-9)
    loose = _json(relay, "solve", "relay.nm", "--reward", "delivered", "--horizon", "6", "--avoid", "broken:1")
    assert loose["value"] == pytest.approx(rho @ _best(P, r, 6), abs=1e-9) and loose["value"] > avoid["value"]


#: (command line, the one line it is refused with, after ``cmdp-rl COMMAND: error: ``); those refused
#: by the import itself (``STORM_REFUSALS``) need stormpy, the others are refused before it is imported
REFUSALS = [
    (
        ["solve", "relay.nm", "--reward", "delivered"],
        "model: relay.nm is a PRISM file, which carries no horizon or thresholds: give --horizon H (or --gamma G)",
    ),
    (
        ["solve", "relay.nm", "--cost", "energy", "--cost", "label:broken"],
        "model: relay.nm is a PRISM file, which carries no horizon or thresholds: give --horizon H (or --gamma G) "
        "and --c-bar X/Y (one threshold per --cost)",
    ),
    (
        ["frontier", "relay.nm", "--cost", "energy", "--out", "front"],
        "model: relay.nm is a PRISM file, which carries no horizon or thresholds: give --horizon H and --c-bar X "
        "(one threshold per --cost)",
    ),
    (
        ["pg", "relay.nm", "--reward", "delivered", "--out", "pg"],
        "model: relay.nm is a PRISM file, which carries no horizon or thresholds: give --gamma G",
    ),
    (
        ["learn", "relay.nm", "--episodes", "2"],
        "model: relay.nm is a PRISM file, which carries no horizon or thresholds: give --horizon H",
    ),
    (
        ["solve", "relay.nm", "-H", "3", "--gamma", "0.9"],
        "--horizon/--gamma: give one (a finite horizon or a discount), not both",
    ),
    (
        ["solve", "relay.nm", "-H", "3", "--c-bar", "2"],
        "--c-bar: thresholds are for the costs; give --cost NAME for each",
    ),
    (
        ["solve", "relay.nm", "-H", "3", "--cost", "energy", "--c-bar", "2/3"],
        "--c-bar: one threshold per --cost: 1 cost(s), got 2 threshold(s)",
    ),
    (
        ["solve", "1a", "--reward", "delivered"],
        "--reward: the registered problem 1a carries its own reward; the option is for a MODEL that is a model "
        "checker's file (.prism, .nm, .pm, .jani or .drn)",
    ),
    (
        ["export", "table.csv", "t.npz", "--cost", "energy"],
        "--cost: the transition table table.csv carries its own costs; the option is for a MODEL that is a model "
        "checker's file (.prism, .nm, .pm, .jani or .drn)",
    ),
    (
        ["certify", "model.npz", "--constants", "N=2", "--policy", "p.npy", "--counts", "c.npy"],
        "--constants: the model file model.npz has no constants to define; the option is for a MODEL that is a "
        "model checker's file (.prism, .nm, .pm, .jani or .drn)",
    ),
    (
        ["solve", "relay.drn", "-H", "3", "--constants", "N=2"],
        "--constants: relay.drn is a DRN file, an explicit model without constants to define",
    ),
    (
        ["learn", "--env", "cmdp_rl/1a-v0", "--horizon", "3", "--c-bar", "1", "--episodes", "2", "--reward", "x"],
        "--reward: not available with --env",
    ),
]
STORM_REFUSALS = [
    (
        ["solve", "relay.nm", "-H", "3", "--reward", "speed"],
        "--reward: the model has no reward structure or label 'speed' (reward structures: 'delivered', 'energy'; "
        "labels: 'init', 'broken', 'deadlock', 'finished')",
    ),
    (
        ["solve", "relay.nm", "-H", "3", "--cost", "label:lost", "--c-bar", "1"],
        "--cost: the model has no reward structure or label 'label:lost' (reward structures: 'delivered', "
        "'energy'; labels: 'init', 'broken', 'deadlock', 'finished')",
    ),
    (
        ["solve", "relay.nm", "-H", "3", "--constants", "N=4"],
        "--constants N=4: Illegally defining already defined constant 'N'.",
    ),
    (["solve", "relay.nm", "-H", "3", "--s0", "10"], "--s0: relay.nm has S = 10 states (0 .. 9), got 10"),
    (
        ["import-prism", "relay.nm", "-H", "3", "--cost", "speed", "--c-bar", "1", "--out", "m.npz"],
        "--cost: the model has no reward structure or label 'speed' (reward structures: 'delivered', 'energy'; "
        "labels: 'init', 'broken', 'deadlock', 'finished')",
    ),
]
CASES = [
    *(pytest.param(argv, line, id=f"{argv[0]}-{i}") for i, (argv, line) in enumerate(REFUSALS)),
    *(
        pytest.param(argv, line, id=f"{argv[0]}-storm-{i}", marks=STORM)
        for i, (argv, line) in enumerate(STORM_REFUSALS)
    ),
]


@pytest.mark.parametrize(("argv", "line"), CASES)
def test_refusals_are_one_line_naming_the_option(relay: Path, argv: list[str], line: str) -> None:
    CMDP(np.ones((1, 1, 1)), [[0.0]], None, None, 0, H=1).save(relay / "model.npz")
    (relay / "table.csv").write_text("state,action,next_state,prob,reward,cost_0\n0,0,0,1,1,0\n")
    shutil.copy(RELAY, relay / "relay.drn")  # only its name is read before the refusal
    proc = run_main(*argv, cwd=relay)
    assert proc.returncode == 2
    assert proc.stderr == f"cmdp-rl {argv[0]}: error: {line}\n"
    assert sorted(p.name for p in relay.iterdir()) == ["model.npz", "relay.drn", "relay.nm", "table.csv"]


def test_without_stormpy_a_model_checkers_file_says_what_to_install(
    relay: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "stormpy", None)
    for command in (["solve"], ["learn", "--episodes", "2"]):
        proc = run_main(*command, "relay.nm", "--horizon", "3", cwd=relay)
        assert proc.returncode == 2
        assert proc.stderr == (
            f"cmdp-rl {command[0]}: error: model: relay.nm is a PRISM file; reading it needs stormpy: "
            'pip install "cmdp-rl[storm]"\n'
        )


@STORM
def test_constants_define_a_files_undefined_ones(relay: Path) -> None:
    # relay with N left undefined, named .pm (PRISM's DTMC suffix: Storm reads the model type from the file)
    (relay / "relay_n.pm").write_text(RELAY.read_text().replace("const int N = 3;", "const int N;"))
    proc = run_main("solve", "relay_n.pm", "--horizon", "6", cwd=relay)
    assert proc.returncode == 2
    assert proc.stderr == (
        "cmdp-rl solve: error: --constants: PRISM file 'relay_n.pm' leaves N undefined; give them, "
        "e.g. --constants N=...\n"
    )
    # N = 1: a packet is sent only from mode 0 and a mode changes only with nothing sent, so the
    # reachable (sent, mode) are (0, 0), (0, 1) (initial), (0, 2) and (1, 0): 4 states
    argv = ["--constants", "N=1", "--reward", "delivered", "--horizon", "6"]
    assert run_main("export", "relay_n.pm", "n1.npz", *argv, cwd=relay).returncode == 0
    n1 = CMDP.load(relay / "n1.npz")
    assert n1.S == 4 and n1.meta["constants"] == "N=1"
    P = n1.K.toarray().reshape(n1.S, n1.A, n1.S)
    got = _json(relay, "solve", "relay_n.pm", *argv)
    assert got["value"] == pytest.approx(n1.rho @ _best(P, n1.r, 6), abs=1e-9)
    P3, r3, _, rho3, _ = _arrays("delivered")
    assert got["value"] < rho3 @ _best(P3, r3, 6)  # fewer packets to deliver than relay's N = 3
