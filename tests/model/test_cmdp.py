"""CMDP construction, validation messages, save/load."""

from __future__ import annotations

import numpy as np
import pytest

from cmdp_rl import CMDP, CMDPInputError, random_cmdp


def _parts(model: CMDP) -> dict:
    return dict(P=model.P.copy(), r=model.r.copy(), c=model.c.copy(), c_bar=model.c_bar.copy(), s0=model.s0, H=model.H)


def test_construction_copies_and_freezes(two_state: CMDP) -> None:
    parts = _parts(two_state)
    m = CMDP(**parts)
    parts["P"][0, 0, 0] = 0.3  # mutating the caller's array must not touch the model
    assert m.P[0, 0, 0] == 1.0
    with pytest.raises(ValueError):
        m.P[0, 0, 0] = 0.0
    assert (m.S, m.A, m.N) == (2, 2, 1)


def test_mdp_without_constraints() -> None:
    P = np.full((2, 1, 2), 0.5)
    m = CMDP(P, np.zeros((2, 1)), np.zeros((0, 2, 1)), np.zeros(0), 0, 3)
    assert m.N == 0
    m2 = CMDP(P, np.zeros((2, 1)), None, None, 0, 3)
    assert m2.N == 0


@pytest.mark.parametrize(
    "change, fragment",
    [
        (dict(P=np.ones((2, 2))), "P: expected 3 dimensions"),
        (dict(P=np.full((2, 2, 3), 1 / 3)), "P: expected shape (2, 2, 2)"),
        (dict(P="abc"), "P: cannot be read"),
        (dict(r=np.ones((3, 2))), "r: expected shape (2, 2)"),
        (dict(r=np.array([[0.0, 1e308], [0.5, 0.5]])), "r: values in [0, 1e+308] over 2 steps overflow"),
        (dict(r=np.array([[0.0, np.nan], [0.5, 0.5]])), "r[0, 1]: must be finite"),
        (dict(c=np.array([[[0.0, -np.inf], [0.0, 0.0]]])), "c[0, 0, 1]: must be finite"),
        (dict(c=np.zeros((1, 3, 2))), "c: expected shape (N, 2, 2)"),
        (dict(c_bar=np.array([0.5, 0.5])), "c_bar: expected shape (1,)"),
        (dict(c_bar=np.array([np.inf])), "c_bar[0]: must be finite"),
        (dict(s0=2), "s0: must be a state index in [0, 1]"),
        (dict(s0=0.5), "s0: must be an integer"),
        (dict(H=0), "H: horizon must be >= 1"),
    ],
)
def test_validation_names_the_culprit(two_state: CMDP, change: dict, fragment: str) -> None:
    parts = _parts(two_state)
    parts.update(change)
    with pytest.raises(CMDPInputError) as err:
        CMDP(**parts)
    assert fragment in str(err.value)


def test_kernel_row_rules(two_state: CMDP) -> None:
    parts = _parts(two_state)
    parts["P"][1, 0] = [0.2, 0.7]
    with pytest.raises(CMDPInputError, match=r"P\[1, 0\]: each kernel row .* must sum to 1"):
        CMDP(**parts)
    parts = _parts(two_state)
    parts["P"][0, 1] = [-0.1, 1.1]
    with pytest.raises(CMDPInputError, match=r"P\[0, 1, 0\]: .*non-negative"):
        CMDP(**parts)


def test_rewards_and_costs_in_any_units_are_kept_as_given(two_state: CMDP) -> None:
    parts = _parts(two_state)
    parts["r"] = parts["r"] * 300 - 7
    parts["c"] = -2.5 * parts["c"]
    m = CMDP(**parts)
    assert np.array_equal(m.r, parts["r"]) and np.array_equal(m.c, parts["c"])
    assert m.reward_bounds == (float(parts["r"].min()), float(parts["r"].max()))
    assert m.cost_bounds.tolist() == [[float(parts["c"].min()), float(parts["c"].max())]]
    parts["r"] = np.full((2, 2), 1e308)  # a return of H steps would overflow
    with pytest.raises(CMDPInputError, match="rescale"):
        CMDP(**parts)


def test_save_load_roundtrip(tmp_path, two_state: CMDP) -> None:
    m = random_cmdp(7, 3, 5, 2, seed=3)
    path = tmp_path / "m.npz"
    m.save(path)
    back = CMDP.load(path)
    for key in ("P", "r", "c", "c_bar"):
        assert np.array_equal(getattr(m, key), getattr(back, key))
        assert getattr(back, key).dtype == np.float64
    assert (back.s0, back.H) == (m.s0, m.H)
    two_state.save(tmp_path / "t.npz")
    assert CMDP.load(tmp_path / "t.npz").names == "two_state"


def test_load_errors(tmp_path, two_state: CMDP) -> None:
    with pytest.raises(CMDPInputError, match="no such file"):
        CMDP.load(tmp_path / "missing.npz")
    bad = tmp_path / "bad.npz"
    bad.write_text("not a zip")
    with pytest.raises(CMDPInputError, match=r"not an \.npz"):
        CMDP.load(bad)
    partial = tmp_path / "partial.npz"
    np.savez(partial, P=two_state.P, r=two_state.r)
    with pytest.raises(CMDPInputError, match=r"missing key\(s\) \['c', 'c_bar', 's0', 'H'\]"):
        CMDP.load(partial)
    good = tmp_path / "good.npz"
    two_state.save(good)
    data = good.read_bytes()
    trunc = tmp_path / "trunc.npz"
    trunc.write_bytes(data[: len(data) // 2])
    with pytest.raises(CMDPInputError, match=r"trunc\.npz"):
        CMDP.load(trunc)


def test_random_cmdp_is_seeded_and_valid() -> None:
    a = random_cmdp(6, 3, 4, 2, seed=11, support=3)
    b = random_cmdp(6, 3, 4, 2, seed=11, support=3)
    assert np.array_equal(a.P, b.P) and np.array_equal(a.c_bar, b.c_bar)
    assert ((a.P > 0).sum(-1) <= 3).all()
