"""A model checker's model as raw arrays: [`CheckerModel`][cmdp_rl.model.umb.CheckerModel], read
from a UMB archive (Storm's binary model format) with NumPy alone, vectorised.

The UMB archive (``format-version`` 1, what ``stormpy.io.export_to_umb`` writes) is a tar file of
little-endian binary arrays and an ``index.json``: ``state-to-choices.bin`` (``(S+1,)`` uint64
offsets; absent for a DTMC, one choice per state), ``choice-to-branches.bin`` (``(C+1,)``),
``branch-to-target.bin`` (``(B,)`` uint64), ``branch-to-probability.bin`` (``(B,)`` float64),
``state-is-initial.bin`` (a bit vector of ``S`` bits in uint64 words), the choices' action names
(``actions/choices/values.bin``, one uint32 string index per choice, with the strings'
``string-mapping.bin`` offsets into ``strings.bin``), labels (``annotations/aps/NAME/states/``
bit vectors) and reward structures (``annotations/rewards/NAME/{states,choices,branches}/``
float64 values). Each array is read with one ``np.frombuffer``: a model of 61,456 choices (PRISM's
``coin2.nm`` with ``K = 320``) leaves Storm in 19 ms (Storm writing the archive included), where a
Python loop over Storm's matrix rows takes 1.1 s (``benchmarks/results/storm_import.json``).

The raw pieces keep the model's ragged choices (``choices`` offsets per state) and its rewards
in their own units; [`checker_cmdp`][cmdp_rl.model.checker.checker_cmdp] turns them into a
[`CMDP`][cmdp_rl.model.cmdp.CMDP].
"""

from __future__ import annotations

import io
import itertools
import json
import os
import tarfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from cmdp_rl.plumbing.validation import CMDPInputError

#: the UMB format version this reader knows
UMB_VERSION = 1


@dataclass(frozen=True, eq=False)
class CheckerModel:
    """A model checker's MDP (or DTMC) as raw arrays, ``C`` choices over ``S`` states.

    Attributes:
        choices: ``(S+1,)`` int64 offsets: the choices of state ``s`` are rows
            ``choices[s] .. choices[s+1]-1`` (at least one per state).
        kernel: ``(C, S)`` CSR array, row ``j`` the next-state distribution of choice ``j``.
        rewards: reward structure name -> ``(C,)`` float64 reward per choice in the model's units:
            the state reward of the choice's state, plus the choice's own (state-action) reward,
            plus the expectation of its transition rewards under the choice's distribution
            (Storm's cumulative reward ``C<=k`` collects exactly this per step). Storm's unnamed
            reward structure is ``""``.
        labels: label name -> ``(S,)`` bool mask of the states it holds in (``"init"`` included).
        initial: ``(S,)`` bool mask of the initial states (at least one).
        action_names: ``(C,)`` text, each choice's action (choice label; ``""`` for none).
    """

    choices: NDArray[np.int64]
    kernel: sp.csr_array
    rewards: Mapping[str, NDArray[np.float64]]
    labels: Mapping[str, NDArray[np.bool_]]
    initial: NDArray[np.bool_]
    action_names: NDArray[np.str_]

    @property
    def S(self) -> int:
        """Number of states."""
        return int(self.choices.shape[0] - 1)

    @property
    def n_choices(self) -> int:
        """Number of choices ``C`` (rows of the kernel)."""
        return int(self.choices[-1])

    @property
    def counts(self) -> NDArray[np.int64]:
        """``(S,)`` the number of choices of each state."""
        return np.diff(self.choices)

    @property
    def A(self) -> int:
        """The most choices any state has (the action count ``A`` of its CMDP)."""
        return int(self.counts.max())

    @property
    def mask(self) -> NDArray[np.bool_]:
        """``(S, A)`` bool: ``mask[s, a]`` when state ``s`` has an ``a``-th choice."""
        return np.arange(self.A)[None, :] < self.counts[:, None]

    @property
    def state_of_choice(self) -> NDArray[np.int64]:
        """``(C,)`` the state each choice belongs to."""
        return np.repeat(np.arange(self.S, dtype=np.int64), self.counts)


def read_umb(path: str | os.PathLike[str], reward_names: Mapping[str, str] | None = None) -> CheckerModel:
    """The raw model of the UMB archive at ``path`` (uncompressed or gzip/xz tar).

    ``reward_names`` renames the archive's reward structures (key: the archive's folder name), e.g.
    Storm's unnamed structure, which it writes as ``default`` without an alias, back to ``""``;
    otherwise a structure is named by its ``alias`` (the model's own name) or its folder.

    Raises:
        CMDPInputError: one line naming the archive: not a UMB archive, another format version,
            another kind of model (continuous time, several players, observations), values that
            are not 64-bit floats, or arrays whose lengths do not fit the index.
    """
    label = f"UMB archive {os.fspath(path)!r}"
    try:
        with tarfile.open(path) as tar:
            files = {m.name.lstrip("./"): m for m in tar.getmembers() if m.isfile()}
            if "index.json" not in files:
                raise CMDPInputError(f"{label}: has no index.json (not a UMB archive)")
            index = json.loads(_member(tar, files, "index.json"))
            blobs = {name: _member(tar, files, name) for name in files if name.endswith(".bin")}
    except (tarfile.TarError, OSError, ValueError) as exc:
        raise CMDPInputError(f"{label}: unreadable ({exc})") from None
    return _from_arrays(index, blobs, label, dict(reward_names or {}))


def _member(tar: tarfile.TarFile, files: Mapping[str, tarfile.TarInfo], name: str) -> bytes:
    fh = tar.extractfile(files[name])
    if fh is None:  # pragma: no cover - a regular file always has data
        raise CMDPInputError(f"UMB member {name}: not a file")
    return fh.read()


def _from_arrays(index: Any, blobs: Mapping[str, bytes], label: str, renames: dict[str, str]) -> CheckerModel:
    """The raw model of a UMB archive's ``index`` and binary members (checked against the index)."""
    ts = index.get("transition-system", {}) if isinstance(index, dict) else {}
    version = index.get("format-version") if isinstance(index, dict) else None
    if version != UMB_VERSION:
        raise CMDPInputError(f"{label}: UMB format-version {version!r}; this reader knows version {UMB_VERSION}")
    if ts.get("time") != "discrete" or int(ts.get("#players", 0)) > 1 or int(ts.get("#observations", 0)):
        raise CMDPInputError(
            f"{label}: not a discrete-time MDP or DTMC (time {ts.get('time')!r}, {ts.get('#players')} players, "
            f"{ts.get('#observations')} observations)"
        )
    _check_float(ts.get("branch-probability-type"), label, "branch probabilities")
    S, C, B = (int(ts[k]) for k in ("#states", "#choices", "#branches"))

    def array(name: str, dtype: str, size: int, default: NDArray[Any] | None = None) -> NDArray[Any]:
        if name not in blobs:
            if default is not None:
                return default
            raise CMDPInputError(f"{label}: missing {name}")
        arr = np.frombuffer(blobs[name], dtype=dtype)
        if arr.shape[0] < size:
            raise CMDPInputError(f"{label}: {name} holds {arr.shape[0]} entries, the index says {size}")
        return arr[:size]

    choices = array("state-to-choices.bin", "<u8", S + 1, np.arange(S + 1, dtype=np.uint64)).astype(np.int64)
    branches = array("choice-to-branches.bin", "<u8", C + 1).astype(np.int64)
    target = array("branch-to-target.bin", "<u8", B).astype(np.int64)
    prob = array("branch-to-probability.bin", "<f8", B).astype(np.float64)
    if choices[-1] != C or branches[-1] != B or np.any(np.diff(choices) < 1) or np.any(np.diff(branches) < 0):
        raise CMDPInputError(f"{label}: its offsets do not fit {S} states, {C} choices and {B} branches")
    if B and (target.min() < 0 or target.max() >= S):
        raise CMDPInputError(f"{label}: a branch's target lies outside the {S} states")
    kernel = sp.csr_array((prob, target, branches), shape=(C, S))
    kernel.sum_duplicates()
    initial = _bits(array("state-is-initial.bin", "<u8", (S + 63) // 64), S)
    if not initial.any():
        raise CMDPInputError(f"{label}: has no initial state")
    state_of_choice = np.repeat(np.arange(S), np.diff(choices))
    annotations = index.get("annotations", {})
    labels = {"init": initial}
    for key, info in annotations.get("aps", {}).items():
        name = f"annotations/aps/{key}/states/values.bin"
        if name in blobs:
            labels[str(info.get("alias", key))] = _bits(array(name, "<u8", (S + 63) // 64), S)
    rewards = {}
    for key, info in annotations.get("rewards", {}).items():
        _check_float(info.get("type"), label, f"reward structure {key!r}")
        per_choice = np.zeros(C)
        base = f"annotations/rewards/{key}"
        if f"{base}/states/values.bin" in blobs:
            per_choice += array(f"{base}/states/values.bin", "<f8", S)[state_of_choice]
        if f"{base}/choices/values.bin" in blobs:
            per_choice += array(f"{base}/choices/values.bin", "<f8", C)
        if f"{base}/branches/values.bin" in blobs:  # transition rewards: their expectation per choice
            weighted = prob * array(f"{base}/branches/values.bin", "<f8", B)
            per_choice += np.bincount(np.repeat(np.arange(C), np.diff(branches)), weights=weighted, minlength=C)
        rewards[renames.get(key, str(info.get("alias", key)))] = per_choice
    names = _action_names(blobs, C, label)
    return CheckerModel(choices, kernel, rewards, labels, initial, names)


def _check_float(kind: Any, label: str, what: str) -> None:
    if kind is not None and (not isinstance(kind, dict) or kind.get("type") != "double" or kind.get("size") != 64):
        raise CMDPInputError(f"{label}: {what} are {kind}; only 64-bit floats are read (build the model with floats)")


def _bits(words: NDArray[Any], n: int) -> NDArray[np.bool_]:
    """The first ``n`` bits of a UMB bit vector (uint64 words, least significant bit first)."""
    bits = np.unpackbits(np.ascontiguousarray(words).view(np.uint8), bitorder="little")[:n]
    return bits.astype(bool)


def _action_names(blobs: Mapping[str, bytes], C: int, label: str) -> NDArray[np.str_]:
    """``(C,)`` each choice's action name (``""`` without action annotations)."""
    base = "actions/choices"
    if f"{base}/values.bin" not in blobs:
        return np.full(C, "", dtype=np.str_)
    which = np.frombuffer(blobs[f"{base}/values.bin"], dtype="<u4")[:C].astype(np.int64)
    offsets = np.frombuffer(blobs.get(f"{base}/string-mapping.bin", b""), dtype="<u8").astype(np.int64)
    text = blobs.get(f"{base}/strings.bin", b"")
    strings = [text[a:b].decode("utf-8") for a, b in itertools.pairwise(offsets.tolist())] or [""]
    if which.shape[0] != C or (C and which.max() >= len(strings)):
        raise CMDPInputError(f"{label}: the choices' action names do not fit the {len(strings)} names it lists")
    return np.asarray(strings, dtype=np.str_)[which]


def _words(bits: NDArray[np.bool_]) -> bytes:
    """A UMB bit vector: ``bits`` packed least significant bit first into uint64 words."""
    packed = np.packbits(np.asarray(bits, dtype=bool), bitorder="little")
    return packed.tobytes() + bytes(-packed.size % 8)


def umb_members(raw: CheckerModel) -> dict[str, bytes]:
    """The members of a UMB archive (``format-version`` 1) holding ``raw``: what
    [`read_umb`][cmdp_rl.model.umb.read_umb] reads back and ``stormpy.build_model_from_umb`` builds
    (labels and reward structures under generated keys, each with its name as ``alias``)."""
    S, C, B = raw.S, raw.n_choices, raw.kernel.nnz
    strings, which = np.unique(np.asarray(raw.action_names, dtype=np.str_), return_inverse=True)
    encoded = [str(x).encode("utf-8") for x in strings]
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in encoded])]).astype("<u8")
    members = {
        "state-to-choices.bin": raw.choices.astype("<u8").tobytes(),
        "state-is-initial.bin": _words(raw.initial),
        "choice-to-branches.bin": raw.kernel.indptr.astype("<u8").tobytes(),
        "branch-to-target.bin": raw.kernel.indices.astype("<u8").tobytes(),
        "branch-to-probability.bin": raw.kernel.data.astype("<f8").tobytes(),
        "actions/choices/values.bin": which.astype("<u4").tobytes(),
        "actions/choices/string-mapping.bin": offsets.tobytes(),
        "actions/choices/strings.bin": b"".join(encoded),
    }
    aps, rewards = {}, {}
    for i, (name, mask) in enumerate((k, v) for k, v in raw.labels.items() if k != "init"):
        aps[f"ap{i}"] = {"alias": name, "applies-to": ["states"], "type": {"size": 1, "type": "bool"}}
        members[f"annotations/aps/ap{i}/states/values.bin"] = _words(mask)
    for i, (name, values) in enumerate(raw.rewards.items()):
        rewards[f"reward{i}"] = {"alias": name, "applies-to": ["choices"], "type": {"size": 64, "type": "double"}}
        members[f"annotations/rewards/reward{i}/choices/values.bin"] = np.asarray(values, dtype="<f8").tobytes()
    index = {
        "format-version": UMB_VERSION,
        "format-revision": 0,
        "file-data": {"tool": "cmdp-rl"},
        "transition-system": {
            "time": "discrete",
            "#players": 1,
            "#states": S,
            "#initial-states": int(raw.initial.sum()),
            "#choices": C,
            "#choice-actions": len(encoded),
            "#branches": B,
            "#branch-actions": 0,
            "#observations": 0,
            "branch-probability-type": {"size": 64, "type": "double"},
        },
        "annotations": {"aps": aps, "rewards": rewards},
    }
    return {"index.json": json.dumps(index, indent=1).encode("utf-8"), **members}


def write_umb(raw: CheckerModel, path: str | os.PathLike[str]) -> None:
    """Write ``raw`` as an uncompressed UMB archive at ``path`` ([`umb_members`][cmdp_rl.model.umb.umb_members])."""
    with tarfile.open(path, "w") as tar:
        for name, data in umb_members(raw).items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


__all__ = ["UMB_VERSION", "CheckerModel", "read_umb", "umb_members", "write_umb"]
