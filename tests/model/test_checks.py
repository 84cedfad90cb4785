"""The model's annotation fields: ``action_names`` and ``labels`` are validated, read-only, kept by
``replace``/layout changes and round-trip through the model file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cmdp_rl import CMDP
from cmdp_rl.model.checks import check_labels, labels_from_record, labels_record, state_mask
from cmdp_rl.plumbing.validation import CMDPInputError


def _model(**fields: object) -> CMDP:
    P = np.zeros((3, 2, 3))
    P[:, 0, 1] = 1.0
    P[:, 1, 2] = 1.0
    return CMDP(P, np.full((3, 2), 0.5), np.zeros((1, 3, 2)), [0.5], 0, H=3, **fields)  # type: ignore[arg-type]


def test_fields_default_to_none_and_empty() -> None:
    m = _model()
    assert m.action_names is None
    assert dict(m.labels) == {}


def test_labels_from_mask_or_indices_are_read_only_masks() -> None:
    m = _model(labels={"goal": [2], "bad": np.array([True, False, True])})
    assert list(m.labels) == ["goal", "bad"]
    np.testing.assert_array_equal(m.labels["goal"], [False, False, True])
    np.testing.assert_array_equal(m.labels["bad"], [True, False, True])
    with pytest.raises(ValueError):
        m.labels["goal"][0] = True
    with pytest.raises(TypeError):
        m.labels["new"] = np.ones(3, bool)  # type: ignore[index]


def test_inputs_are_copied() -> None:
    mask = np.array([True, False, False])
    names = np.array(["a", "b"])
    m = _model(labels={"x": mask}, action_names=names)
    mask[1] = True
    names[0] = "z"
    assert not m.labels["x"][1]
    assert m.action_names is not None and m.action_names[0] == "a"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"action_names": [1, 2]}, "action_names: must hold text"),
        ({"action_names": ["a"]}, r"action_names: expected shape \(2,\) or \(3, 2\)"),
        ({"labels": {"": [1]}}, "labels: every label's name must be a non-empty string"),
        ({"labels": {"x": [3]}}, r"labels\['x'\]: state indices must lie in \[0, 2\]"),
        ({"labels": {"x": np.ones(2, bool)}}, r"labels\['x'\]: a boolean mask of states must have shape \(3,\)"),
        ({"labels": {"x": [0.5]}}, r"labels\['x'\]: must be a boolean \(S,\) mask or integer state indices"),
        ({"labels": [1]}, "labels: must be a mapping"),
    ],
)
def test_bad_fields_are_one_line_errors(fields: dict[str, object], message: str) -> None:
    with pytest.raises(CMDPInputError, match=message):
        _model(**fields)


@pytest.mark.parametrize("sparse", [False, True])
def test_round_trip_through_the_file(tmp_path: Path, sparse: bool) -> None:
    per_state = np.array([["up", ""], ["up", "down"], ["", "down"]])
    m = _model(action_names=per_state, labels={"goal": [2], "start": [0]})
    m = m.to_sparse() if sparse else m
    m.save(tmp_path / "m.npz")
    back = CMDP.load(tmp_path / "m.npz")
    assert back.action_names is not None
    np.testing.assert_array_equal(back.action_names, per_state)
    assert list(back.labels) == ["goal", "start"]
    np.testing.assert_array_equal(back.labels["goal"], [False, False, True])
    np.testing.assert_array_equal(back.labels["start"], [True, False, False])
    assert back.is_sparse == sparse


def test_replace_keeps_and_changes_annotations() -> None:
    m = _model(action_names=["l", "r"], labels={"goal": [2]})
    kept = m.replace(c_bar=[0.7]).to_sparse().to_dense()
    assert kept.action_names is not None and list(kept.action_names) == ["l", "r"]
    assert list(kept.labels) == ["goal"]
    assert dict(m.replace(labels=None).labels) == {}


def test_record_round_trip_and_bad_record() -> None:
    labels = check_labels({"a": [0], "b": [1, 2]}, 3)
    back = labels_from_record(labels_record(labels, 3), "f")
    assert {k: v.tolist() for k, v in back.items()} == {"a": [True, False, False], "b": [False, True, True]}
    bad = np.zeros(3, dtype=[("a", np.int64)])
    with pytest.raises(CMDPInputError, match="key 'labels' must be an"):
        labels_from_record(bad, "f")
    assert state_mask("s", np.array([], dtype=np.int64), 2).tolist() == [False, False]


def test_a_file_with_a_bad_labels_key_names_the_file(tmp_path: Path) -> None:
    m = _model()
    m.save(tmp_path / "m.npz")
    with np.load(tmp_path / "m.npz") as data:
        arrays = dict(data)
    np.savez(tmp_path / "bad.npz", **arrays, labels=np.ones(3))
    with pytest.raises(CMDPInputError, match=r"bad\.npz.*key 'labels' must hold a record array"):
        CMDP.load(tmp_path / "bad.npz")
