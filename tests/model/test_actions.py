"""Ragged action sets in the model: the ``actions`` mask, its refusals, the file key and the tables."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from cmdp_rl import CMDP, CMDPInputError
from cmdp_rl.model.actions import check_action_table, fill_unavailable, restrict_policy, uniform_rows
from cmdp_rl.model.cmdp import KnownParts
from cmdp_rl.model.tables import from_table

MASK = np.array([[True, True], [True, False], [False, True]])


def model(**kw):
    """3 states, 2 actions; state 1 lacks action 1, state 2 lacks action 0."""
    P = np.zeros((3, 2, 3))
    P[0, 0, 1] = P[0, 1, 2] = P[1, 0, 0] = P[2, 1, 1] = 1.0
    args = {"P": P, "r": [[0.1, 0.2], [0.5, 9.0], [-4.0, 0.9]], "c": [[[0.2, 0.5], [0.1, 0.3], [0.4, 0.0]]]}
    args.update(kw)
    return CMDP(args["P"], args["r"], args["c"], [0.5], 0, H=3, actions=args.get("actions", MASK))


def test_the_mask_is_kept_read_only_and_unavailable_rewards_and_costs_are_ignored() -> None:
    m = model()
    assert np.array_equal(m.actions, MASK) and m.is_ragged and not m.actions.flags.writeable
    assert m.available is m.actions
    # ignored values (here outside [0, 1]) become those of the state's first available action
    assert m.r[1, 1] == 0.5 and m.r[2, 0] == 0.9 and m.c[0, 2, 0] == 0.0
    assert m.r[0].tolist() == [0.1, 0.2]


def test_all_available_is_no_mask() -> None:
    m = model(actions=np.ones((3, 2), dtype=bool), P=np.full((3, 2, 3), 1 / 3), r=np.zeros((3, 2)))
    assert m.actions is None and not m.is_ragged
    assert m.available.shape == (3, 2) and m.available.all() and m.available is m.available


def test_replace_save_load_and_layouts_keep_the_mask(tmp_path) -> None:
    m = model()
    assert np.array_equal(m.replace(c_bar=[0.7]).actions, MASK)
    for mm in (m, m.to_sparse(), m.to_sparse().to_dense()):
        path = tmp_path / f"{mm.layout}.npz"
        mm.save(path)
        back = CMDP.load(path)
        assert np.array_equal(back.actions, MASK) and back.layout == mm.layout
        assert np.array_equal(back.r, m.r) and back.nnz == 4


def test_the_table_lists_available_pairs_only_and_reads_back_the_mask(tmp_path) -> None:
    m = model()
    text = m.to_table()
    assert len(text.strip().splitlines()) == 1 + 4  # one row per available pair here
    path = tmp_path / "t.csv"
    path.write_text(text)
    for sparse in (True, False):
        back = from_table(path, c_bar=[0.5], H=3, sparse=sparse)
        assert np.array_equal(back.actions, MASK)
        assert np.array_equal(back.r, m.r) and np.array_equal(back.c, m.c)


def test_known_parts_carry_the_mask() -> None:
    parts = KnownParts.of(model())
    assert np.array_equal(parts.actions, MASK)
    assert np.array_equal(parts.replace(r=np.zeros((3, 2))).actions, MASK)


# refusals: one per rule, each one line naming the state


def test_a_state_without_an_available_action_is_refused() -> None:
    with pytest.raises(CMDPInputError, match=r"^actions\[2\]: state 2 has no available action") as ex:
        model(actions=np.array([[True, True], [True, False], [False, False]]))
    assert "\n" not in str(ex.value)


def test_a_dense_transition_for_an_unavailable_pair_is_refused() -> None:
    P = model().P.copy()
    P[1, 1, 2] = 1.0
    with pytest.raises(
        CMDPInputError, match=r"^P\[1, 1, 2\] \(state 1, action 1\): a transition is given for action 1"
    ):
        model(P=P)


def test_a_sparse_transition_for_an_unavailable_pair_is_refused() -> None:
    K = sp.lil_array(model().K)
    K[4, 0] = 1.0  # row 4 = state 2, action 0
    with pytest.raises(CMDPInputError, match=r"^P\[4, 0\] \(state 2, action 0\): .*not available in state 2"):
        model(P=sp.csr_array(K))


def test_an_available_pair_still_needs_a_distribution() -> None:
    P = model().P.copy()
    P[0, 1, 2] = 0.5
    with pytest.raises(CMDPInputError, match=r"P\[0, 1\]: .* must sum to 1"):
        model(P=P)
    with pytest.raises(CMDPInputError, match=r"P\[1, :\] \(state 0, action 1\): each kernel row must sum to 1"):
        model(P=sp.csr_array(P.reshape(6, 3)))


@pytest.mark.parametrize(
    "actions, match",
    [(np.ones((3, 2)), "must be a boolean"), (np.ones((2, 3), dtype=bool), r"expected shape \(3, 2\)")],
)
def test_a_malformed_mask_is_refused(actions, match) -> None:
    with pytest.raises(CMDPInputError, match=f"^actions: {match}"):
        model(actions=actions)


def test_a_file_mask_that_is_not_boolean_is_refused(tmp_path) -> None:
    m = model()
    path = tmp_path / "m.npz"
    arrays = {k: getattr(m, k) for k in ("P", "r", "c", "c_bar")}
    np.savez(path, **arrays, s0=0, H=3, actions=MASK.astype(int))
    with pytest.raises(CMDPInputError, match="key 'actions' must hold booleans"):
        CMDP.load(path)


def test_a_table_state_without_rows_is_refused(tmp_path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("state,action,next_state,prob\n0,0,2,1\n2,1,0,1\n")
    with pytest.raises(CMDPInputError, match="state 1 has no rows, so no available action"):
        from_table(path, H=2)


# the helpers


def test_restrict_policy_moves_nothing_onto_unavailable_actions() -> None:
    pol = np.array([[0.5, 0.5], [0.5, 0.5], [0.0, 0.0]])
    out = restrict_policy(pol, MASK)
    assert out.tolist() == [[0.5, 0.5], [1.0, 0.0], [0.0, 1.0]]
    assert pol[1].tolist() == [0.5, 0.5]  # input untouched
    assert restrict_policy(pol, None) is pol
    assert uniform_rows(MASK, 3, 2).tolist() == [[0.5, 0.5], [1.0, 0.0], [0.0, 1.0]]


def test_fill_unavailable_and_the_action_table_check() -> None:
    vals = np.arange(6.0).reshape(3, 2)
    assert fill_unavailable(vals, MASK).tolist() == [[0, 1], [2, 2], [5, 5]]
    check_action_table("acts", np.array([[0, 0, 1]]), MASK)
    with pytest.raises(CMDPInputError, match=r"acts\[0, 1\]: action 1 is not available in state 1"):
        check_action_table("acts", np.array([[0, 1, 1]]), MASK)
