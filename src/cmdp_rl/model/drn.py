"""A [`CMDP`][cmdp_rl.model.cmdp.CMDP] as a DRN file, Storm's explicit text format (written with NumPy
alone, vectorised; Storm reads it with ``stormpy.build_model_from_drn``, and
[`from_drn`][cmdp_rl.model.storm.from_drn] reads it back).

The file is an MDP (``@type: MDP``) with one reward model per quantity, ``reward`` then
``cost_0``, ``cost_1``, ... (state-action rewards: ``action NAME [r, c_0, ...]``), in the
model's units. States
carry their labels (``model.labels``; a label that holds in no state is not written: DRN
names labels only at the states where they hold); the initial states are the start ``s0``, or the support
of a start distribution that is uniform on it (DRN has no other distributions). Actions are
named by ``model.action_names`` (``__NOLABEL__`` for ``""``); a state's choices are its
available actions (``model.available``: a ragged action set is written as it is). What a DRN file does not
carry (the horizon or discount, the thresholds) is given again when it is read.
"""

from __future__ import annotations

import os
import re

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.model.checker import raw_of_cmdp
from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.model.umb import CheckerModel
from cmdp_rl.plumbing.atomic import write_atomic
from cmdp_rl.plumbing.validation import CMDPInputError

#: Storm's name for an unnamed choice in DRN
NO_LABEL = "__NOLABEL__"
#: a name DRN can hold: one token (no white space, no brackets or quotes, not empty)
_TOKEN = re.compile(r"^[^\s\[\]\"',]+$")


def _checked_name(kind: str, name: str) -> str:
    if not _TOKEN.match(name):
        raise CMDPInputError(f"model: {kind} {name!r} cannot be written in DRN (a name there is one token)")
    return name


def drn_text(raw: CheckerModel) -> str:
    """The DRN text of a raw model (see the module docstring): its states with their labels
    (``init`` for the initial states), choices with their action names and per-choice rewards (the
    reward structures in their order), and branches."""
    S, C = raw.S, raw.n_choices
    K, first = raw.kernel, raw.choices
    nnz = K.nnz
    state_of_choice = raw.state_of_choice
    structures = list(raw.rewards)
    for name in structures:
        _checked_name("reward structure", name)
    values = np.array([raw.rewards[k] for k in structures]).reshape(len(structures), C)
    rewards = _bracketed(values) if structures else [""] * C
    for name in np.unique(raw.action_names):
        if name:
            _checked_name("action name", str(name))
    names = np.where(raw.action_names == "", NO_LABEL, raw.action_names).tolist()
    zero = " [" + ", ".join(["0"] * len(structures)) + "]" if structures else ""
    lines = np.empty(S + C + nnz, dtype=object)
    lines[np.arange(S) + first[:-1] + K.indptr[first[:-1]]] = [
        f"state {s}{zero}{lab}" for s, lab in enumerate(_state_labels(raw))
    ]
    lines[state_of_choice + 1 + np.arange(C) + K.indptr[:-1]] = [
        f"\taction {n} {rw}".rstrip() for n, rw in zip(names, rewards, strict=True)
    ]
    choice_of_entry = np.repeat(np.arange(C), np.diff(K.indptr))
    lines[state_of_choice[choice_of_entry] + choice_of_entry + 2 + np.arange(nnz)] = [
        f"\t\t{j} : {p!r}" for j, p in zip(K.indices.tolist(), K.data.tolist(), strict=True)
    ]
    header = ["// Exported by cmdp-rl", "@type: MDP", "@value_type: double", "@parameters", "", "@reward_models"]
    header += [" ".join(structures), "@nr_states", str(S), "@nr_choices", str(C), "@model"]
    return "\n".join([*header, *lines.tolist()]) + "\n"


def _bracketed(values: NDArray[np.float64]) -> list[str]:
    """``[v_0, v_1, ...]`` of each column of ``values`` (``(N+1, C)``), shortest round-trip reprs."""
    columns = [list(map(repr, row.tolist())) for row in values]
    return ["[" + ", ".join(parts) + "]" for parts in zip(*columns, strict=True)]


def _state_labels(raw: CheckerModel) -> list[str]:
    """`` init label ...`` of each state: ``init`` for the initial states, then the other labels."""
    parts: list[list[str]] = [[] for _ in range(raw.S)]
    for s in np.flatnonzero(raw.initial).tolist():
        parts[s].append("init")
    for name, mask in raw.labels.items():
        if name == "init":
            continue
        _checked_name("label", name)
        for s in np.flatnonzero(mask).tolist():
            parts[s].append(name)
    return ["".join(" " + x for x in p) for p in parts]


def to_drn(model: CMDP, path: str | os.PathLike[str]) -> None:
    """Write ``model`` as a DRN file at ``path``, atomically (the file is complete or untouched);
    see the module docstring for what the file holds.

    Raises:
        CMDPInputError: a label or action name that is not one token, or a start distribution
            that is not uniform on its support (DRN cannot hold them).
    """
    write_atomic(path, drn_text(raw_of_cmdp(model)))


__all__ = ["NO_LABEL", "drn_text", "to_drn"]
