"""UMB archives read and written with NumPy alone: a round trip, transition rewards as their
expectation (a branch-reward member written by hand), bit vectors, and the refusals."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from cmdp_rl.model.umb import CheckerModel, read_umb, umb_members, write_umb
from cmdp_rl.plumbing.errors import CMDPInputError


def small(S: int = 70) -> CheckerModel:
    """A chain of ``S`` states (more than 64: the bit vectors take two words): state s has two
    choices (to s+1 with 0.25/0.75 stay; to 0) except the last, which loops."""
    rows, cols, vals = [], [], []
    for s in range(S - 1):
        rows += [2 * s, 2 * s, 2 * s + 1]
        cols += [s + 1, s, 0]
        vals += [0.25, 0.75, 1.0]
    rows.append(2 * (S - 1))
    cols.append(S - 1)
    vals.append(1.0)
    C = 2 * S - 1
    kernel = sp.csr_array((vals, (rows, cols)), shape=(C, S))
    choices = np.concatenate([np.arange(0, 2 * S - 1, 2), [C]])
    initial = np.zeros(S, dtype=bool)
    initial[[0, S - 5]] = True
    return CheckerModel(
        choices,
        kernel,
        {"time": np.arange(C, dtype=float)},
        {"init": initial, "far": np.arange(S) >= 64},
        initial,
        np.array(["up", "reset"] * (S - 1) + [""]),
    )


def _tar(path: Path, members: dict[str, bytes]) -> None:
    with tarfile.open(path, "w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def test_round_trip(tmp_path: Path) -> None:
    raw = small()
    write_umb(raw, tmp_path / "m.umb")
    back = read_umb(tmp_path / "m.umb")
    assert np.array_equal(back.choices, raw.choices) and (back.kernel != raw.kernel).nnz == 0
    assert back.rewards.keys() == {"time"} and np.array_equal(back.rewards["time"], raw.rewards["time"])
    assert {k: v.tolist() for k, v in back.labels.items()} == {k: v.tolist() for k, v in raw.labels.items()}
    assert np.flatnonzero(back.initial).tolist() == [0, 65]  # S - 5
    assert back.action_names.tolist() == raw.action_names.tolist()


def test_state_and_transition_rewards_add_up_per_choice(tmp_path: Path) -> None:
    raw = small(3)  # choices: 0 (state 0: up), 1 (state 0: reset), 2 (state 1: up), 3 (state 1: reset), 4 (state 2)
    members = umb_members(CheckerModel(raw.choices, raw.kernel, {}, {}, raw.initial, raw.action_names))
    index = json.loads(members["index.json"])
    index["annotations"]["rewards"] = {
        "default": {"applies-to": ["states", "branches"], "type": {"size": 64, "type": "double"}}
    }
    members["index.json"] = json.dumps(index).encode()
    members["annotations/rewards/default/states/values.bin"] = np.array([1.0, 2.0, 0.0]).tobytes()
    # branches in CSR order: choice 0 -> (0: 0.75, 1: 0.25), choice 1 -> 0, choice 2 -> (1: 0.75, 2: 0.25), ...
    members["annotations/rewards/default/branches/values.bin"] = np.array([4.0, 8.0, 1.0, 0, 0, 0, 0]).tobytes()
    _tar(tmp_path / "m.umb", members)
    got = read_umb(tmp_path / "m.umb", {"default": ""}).rewards[""]
    # by hand: choice 0: 1 + 0.75 * 4 + 0.25 * 8 = 6; choice 1: 1 + 1; choices 2, 3: 2; choice 4: 0
    assert got.tolist() == [6.0, 2.0, 2.0, 2.0, 0.0]


def test_refusals(tmp_path: Path) -> None:
    members = umb_members(small(3))
    index = json.loads(members["index.json"])
    _tar(tmp_path / "v2.umb", {**members, "index.json": json.dumps({**index, "format-version": 2}).encode()})
    with pytest.raises(CMDPInputError, match="format-version 2; this reader knows version 1"):
        read_umb(tmp_path / "v2.umb")
    ctmc = {**index, "transition-system": {**index["transition-system"], "time": "stochastic"}}
    _tar(tmp_path / "ctmc.umb", {**members, "index.json": json.dumps(ctmc).encode()})
    with pytest.raises(CMDPInputError, match="not a discrete-time MDP or DTMC"):
        read_umb(tmp_path / "ctmc.umb")
    _tar(tmp_path / "short.umb", {**members, "branch-to-target.bin": b"\0" * 8})
    with pytest.raises(CMDPInputError, match=r"branch-to-target\.bin holds 1 entries"):
        read_umb(tmp_path / "short.umb")
    (tmp_path / "text.umb").write_text("not a tar file")
    with pytest.raises(CMDPInputError, match=r"UMB archive .*unreadable"):
        read_umb(tmp_path / "text.umb")
