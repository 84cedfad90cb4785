"""The model checkers' formats against Storm itself: the optimum Storm computes for a step-bounded
reward (and a bounded reachability, and a multi-objective query) on stormpy's shipped example
MDPs and on examples/storm/relay.nm equals cmdp_rl's solve of the imported model, in the model's
own units; and the way back (to_drn, to_storm) reads back to the same arrays."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from cmdp_rl import solve
from cmdp_rl.model.checker import raw_of_cmdp
from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.model.drn import to_drn
from cmdp_rl.model.storm import from_drn, from_jani, from_prism, from_storm, to_storm
from cmdp_rl.plumbing.errors import CMDPInputError

stormpy = pytest.importorskip("stormpy")
import stormpy.examples.files as shipped  # noqa: E402 (after the skip)

MDP = Path(shipped.prism_mdp_coin_2_2).parent  # stormpy's example MDPs
RELAY = Path(__file__).resolve().parents[2] / "examples" / "storm" / "relay.nm"


def storm_value(model, query: str, precision: float | None = None) -> list[float]:
    """Storm's value of ``query`` at each initial state of the stormpy ``model`` (the oracle)."""
    env = stormpy.Environment()
    if precision is not None:
        env.modelchecker().multi().precision = stormpy.Rational(f"1/{round(1 / precision)}")
    result = stormpy.model_checking(model, stormpy.parse_properties(query)[0], environment=env)
    return [result.get_value(s) for s in model.initial_states]


def built(path: Path, constants: str = "") -> object:
    """Storm's own model of a PRISM file (every reward structure and label, and the choice labels)."""
    program = stormpy.parse_prism_program(str(path))
    if constants:
        program = stormpy.instantiate_constants(program, constants)[0]
    options = stormpy.BuilderOptions()
    options.set_build_all_reward_models()
    options.set_build_all_labels()
    options.set_build_choice_labels()
    return stormpy.build_model(program, options=options)


@pytest.mark.parametrize(
    ("name", "reward", "H"),
    [
        ("two_dice.nm", "coinflips", 10),
        ("coin2-2.nm", "steps", 15),
        ("csma2-2.nm", "time", 40),
        ("maze_2.nm", "", 8),
        ("firewire3-0.5.nm", "time", 25),
        ("leader4.nm", "rounds", 12),
    ],
)
def test_step_bounded_optimum_equals_storms(name: str, reward: str, H: int) -> None:
    model = from_prism(MDP / name, reward=reward, H=H)
    structure = f'{{"{reward}"}}' if reward else ""  # PRISM's unnamed structure: plain R
    (want,) = storm_value(built(MDP / name), f"R{structure}max=? [C<={H}]")
    got = solve(model)
    assert got.status == "optimal"
    assert got.value == pytest.approx(want, abs=1e-8)


def test_several_initial_states_become_a_uniform_start() -> None:
    model = from_prism(RELAY, reward="delivered", H=6)
    values = storm_value(built(RELAY), 'R{"delivered"}max=? [C<=6]')
    assert len(values) == 2 and not isinstance(model.s0, int)
    assert np.count_nonzero(model.rho) == 2 and np.allclose(model.rho[model.rho > 0], 0.5)
    # the policy sees the state it starts in: the value of the uniform start is the mean
    assert solve(model).value == pytest.approx(np.mean(values), abs=1e-8)


def test_labels_are_the_states_storm_labels() -> None:
    """``Pmax=? [F<=H "seven"]`` from Storm equals the optimum of the imported model with the label's
    states made absorbing and, as reward, the probability of entering them at the next step."""
    H = 12
    model = from_prism(MDP / "two_dice.nm", reward="coinflips", H=H)
    target = model.labels["seven"]
    K = model.K.tolil()
    rows = np.flatnonzero((target[:, None] & model.available).ravel())  # the label's available pairs
    for row in rows:  # absorbing: the first entry is what counts
        K.rows[row], K.data[row] = [row // model.A], [1.0]
    K = K.tocsr()
    enter = (K @ target.astype(float)).reshape(model.S, model.A) * ~target[:, None]
    reach = CMDP(K, enter, None, None, model.s0, H, actions=model.actions)
    (want,) = storm_value(built(MDP / "two_dice.nm"), f'Pmax=? [F<={H} "seven"]')
    assert solve(reach).value == pytest.approx(want, abs=1e-8)
    sm = built(MDP / "two_dice.nm")
    assert set(model.labels) == set(sm.labeling.get_labels())
    for name in model.labels:
        assert set(np.flatnonzero(model.labels[name])) == set(sm.labeling.get_states(name))


def test_a_binding_constraint_agrees_with_storms_multi_objective_query(tmp_path: Path) -> None:
    single = tmp_path / "relay1.nm"  # Storm's multi-objective queries need one initial state
    text = RELAY.read_text().replace("init sent=0 & mode!=2 endinit\n", "")
    single.write_text(
        text.replace("sent : [0..N];", "sent : [0..N] init 0;").replace("mode : [0..2];", "mode : [0..2] init 0;")
    )
    H, x = 6, 6.0
    lo, hi = (storm_value(built(single), f'R{{"energy"}}{d}=? [C<={H}]')[0] for d in ("min", "max"))
    assert lo < x < hi  # the threshold binds
    query = f'multi(R{{"delivered"}}max=? [C<={H}], R{{"energy"}}<={x} [C<={H}])'
    (want,) = storm_value(built(single), query, precision=1e-10)
    model = from_prism(single, reward="delivered", costs=["energy"], H=H, c_bar=[x])
    got = solve(model)
    assert model.c.max() > 1  # energy in its own units (not mapped into [0, 1])
    assert got.value == pytest.approx(want, abs=1e-8 + got.gap)
    assert got.costs[0] == pytest.approx(x, abs=1e-8)


def test_choice_labels_become_action_names() -> None:
    model = from_prism(MDP / "maze_2.nm", reward="", H=3)
    sm = built(MDP / "maze_2.nm")
    groups = sm.transition_matrix
    for s in range(model.S):
        start, end = groups.get_row_group_start(s), groups.get_row_group_end(s)
        want = ["".join(sorted(sm.choice_labeling.get_labels_of_choice(j))) for j in range(start, end)]
        assert list(model.action_names[s]) == want + [""] * (model.A - len(want))
    assert {"east", "west", "north", "south"} <= set(model.action_names.ravel())


def test_transition_rewards_count_as_their_expectation(tmp_path: Path) -> None:
    (tmp_path / "m.tra").write_text("mdp\n0 0 1 0.5\n0 0 2 0.5\n0 1 0 1\n1 0 2 0.25\n1 0 1 0.75\n2 0 2 1\n")
    (tmp_path / "m.lab").write_text("#DECLARATION\ninit goal\n#END\n0 init\n2 goal\n")
    (tmp_path / "m.trew").write_text("0 0 2 4\n0 1 0 1\n1 0 2 8\n")
    (tmp_path / "m.srew").write_text("1 2\n")
    sm = stormpy.build_model_from_explicit(
        tmp_path / "m.tra",
        tmp_path / "m.lab",
        state_rewards=tmp_path / "m.srew",
        transition_rewards=tmp_path / "m.trew",
    )
    model = from_storm(sm, reward="", H=4)
    # by hand: choice (0,0): 0.5 * 4; (0,1): 1 * 1; state 1: 2 + 0.25 * 8; state 2: 0
    # (an unavailable action holds its state's first action's value)
    want = np.array([[2.0, 1.0], [4.0, 4.0], [0.0, 0.0]])
    assert np.allclose(model.r, want)
    (storm,) = storm_value(sm, "Rmax=? [C<=4]")  # the model's one (unnamed) reward structure
    assert solve(model).value == pytest.approx(storm, abs=1e-8)


def test_drn_round_trip_gives_the_same_arrays(tmp_path: Path) -> None:
    model = from_prism(RELAY, reward="delivered", costs=["energy", "label:broken"], H=6, c_bar=[6.0, 0.2])
    to_drn(model, tmp_path / "relay.drn")
    back = from_drn(
        tmp_path / "relay.drn", reward="reward", costs=["cost_0", "cost_1"], H=6, c_bar=[6.0, 0.2], names="relay"
    )
    assert (back.K != model.K).nnz == 0
    for key in ("r", "c", "c_bar", "rho"):
        np.testing.assert_allclose(getattr(back, key), getattr(model, key), rtol=0, atol=1e-15, err_msg=key)
    assert np.array_equal(back.action_names, model.action_names)
    held = {k: v.tolist() for k, v in model.labels.items() if v.any()}  # DRN names a label where it holds
    assert {k: v.tolist() for k, v in back.labels.items()} == held
    assert model.actions is not None and np.array_equal(back.actions, model.actions)


def test_to_storm_gives_storm_the_same_optimum() -> None:
    model = from_prism(RELAY, reward="delivered", costs=["energy"], H=6, c_bar=[6.0])
    sm = to_storm(model)
    assert sm.nr_choices == int(model.available.sum()) < model.S * model.A  # the available pairs only
    values = storm_value(sm, 'R{"reward"}max=? [C<=6]')
    unconstrained = solve(model.replace(c=np.zeros((0, model.S, model.A)), c_bar=[]))
    assert unconstrained.value == pytest.approx(np.mean(values), abs=1e-8)
    again = from_storm(sm, reward="reward", costs=["cost_0"], H=6, c_bar=[6.0])
    assert (again.K != model.K).nnz == 0 and np.allclose(again.r, model.r) and np.allclose(again.c, model.c)


def test_jani_written_by_stormpy_reads_as_the_prism_model(tmp_path: Path) -> None:
    program = stormpy.parse_prism_program(str(MDP / "coin2.nm"))
    jani = program.to_jani()
    stormpy.io.export_jani_to_file(tmp_path / "coin2.jani", jani)
    a = from_prism(MDP / "coin2.nm", constants="K=2", reward="steps", H=15)
    b = from_jani(tmp_path / "coin2.jani", constants={"K": 2}, reward="steps", H=15)
    assert (a.S, a.A, a.nnz) == (b.S, b.A, b.nnz)
    assert solve(a).value == pytest.approx(solve(b).value, abs=1e-9)
    assert a.meta["constants"] == "K=2" and b.meta["constants"] == {"K": 2}


def test_refusals_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(CMDPInputError, match=r"reward: the model has no reward structure or label 'nope' \(reward"):
        from_prism(MDP / "two_dice.nm", reward="nope", H=3)
    with pytest.raises(CMDPInputError, match=r"constants: .* leaves K undefined"):
        from_prism(MDP / "coin2.nm", reward="steps", H=3)
    with pytest.raises(CMDPInputError, match="c_bar: required"):
        from_prism(RELAY, reward="delivered", costs=["energy"], H=3)
    with pytest.raises(CMDPInputError, match="H, gamma: give exactly one"):
        from_prism(RELAY, reward="delivered")
    (tmp_path / "bad.nm").write_text("mdp\nmodule m\n s : [0..1] init 0;\n [] s=0 -> (s'=2;\nendmodule\n")
    with pytest.raises(CMDPInputError, match=r"PRISM file .*bad\.nm") as info:
        from_prism(tmp_path / "bad.nm", H=3)
    assert "\n" not in str(info.value)
    with pytest.raises(CMDPInputError, match=r"no such file|does not exist|not found"):
        from_prism(tmp_path / "missing.nm", H=3)


def test_without_stormpy_every_entry_point_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "stormpy", None)  # import stormpy raises ImportError
    calls = {
        "from_prism": lambda: from_prism(RELAY, H=3),
        "from_jani": lambda: from_jani(RELAY, H=3),
        "from_drn": lambda: from_drn(RELAY, H=3),
        "from_storm": lambda: from_storm(object(), H=3),
        "to_storm": lambda: to_storm(from_drn_free_model()),
    }
    for name, call in calls.items():
        with pytest.raises(CMDPInputError) as info:
            call()
        assert str(info.value) == f'{name} needs stormpy: pip install "cmdp-rl[storm]"'


def from_drn_free_model() -> CMDP:
    return CMDP(np.ones((1, 1, 1)), np.zeros((1, 1)), None, None, 0, 2)


def test_extraction_is_one_pass_over_storms_arrays() -> None:
    """coin2 with K = 16 (3,088 choices): the raw arrays equal Storm's matrix read row by row."""
    sm = built(MDP / "coin2.nm", "K=16")
    model = from_storm(sm, reward="steps", H=2)
    raw = raw_of_cmdp(model)
    matrix = sm.transition_matrix
    assert raw.n_choices == sm.nr_choices
    for row in range(0, sm.nr_choices, 97):
        entries = {e.column: e.value for e in matrix.get_row(row)}
        got = raw.kernel[[row]]
        assert dict(zip(got.indices.tolist(), got.data.tolist(), strict=True)) == entries
