"""The model's file format: one ``.npz`` archive per model (see [`CMDP.save`][cmdp_rl.model.cmdp.CMDP.save]).

Keys: ``P`` (a dense ``(S, A, S)`` kernel) or ``P_data, P_indices, P_indptr, P_shape`` (the CSR
arrays of a sparse ``(S*A, S)`` one); ``r, c, c_bar, s0``; exactly one of ``H`` (finite horizon)
and ``gamma`` (discounted); optional ``names`` (text), ``meta`` (a JSON object as text),
``action_names`` (text, ``(A,)`` or ``(S, A)``), ``labels`` (an ``(S,)`` record array with one
bool field per label) and ``actions`` (the ``(S, A)`` bool mask of the available actions of a
ragged model; absent: every action available).
Written atomically; read with every refusal a one-line
[`CMDPInputError`][cmdp_rl.plumbing.errors.CMDPInputError] naming the file and the key.
"""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.model.checks import labels_from_record
from cmdp_rl.model.sparse import csr_from_parts
from cmdp_rl.plumbing.atomic import atomic_path
from cmdp_rl.plumbing.decoding import decoding
from cmdp_rl.plumbing.paths import check_input_path
from cmdp_rl.plumbing.validation import CMDPInputError

FILE_KEYS = ("P", "r", "c", "c_bar", "s0", "H")
#: the keys every model file holds (and exactly one of ``H``, ``gamma``)
COMMON_KEYS = ("P", "r", "c", "c_bar", "s0")
#: the file keys of a sparse kernel, written instead of ``P``
SPARSE_KEYS = ("P_data", "P_indices", "P_indptr", "P_shape")


def write_model(path: str | os.PathLike[str], arrays: Mapping[str, Any]) -> None:
    """Write a model's ``arrays`` (the keys of the module docstring, in the order given) as an
    ``.npz`` file, atomically: the file at ``path`` is complete or untouched."""
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.savez(fh, **arrays)


def read_model(path: str | os.PathLike[str]) -> tuple[dict[str, Any], str, Any, str]:
    """The constructor arguments of the model in the file at ``path``: its arrays by key (a sparse
    kernel's parts joined into the validated CSR ``P``, a distribution ``s0`` as floats), its
    ``names`` and ``meta``, and the file's label for messages (``model file '...'``).

    Raises:
        CMDPInputError: one line naming the file, and the key where there is one: not an
            ``.npz`` archive, a truncated or damaged one, a missing, unreadable or non-numeric
            key, ``meta`` that is not JSON, or sparse ``P_*`` keys that break a kernel's rules.
    """
    p = os.fspath(path)
    label = f"model file {p!r}"  # the whole path: a shortened one may lose the file's name
    check_input_path(p, label, "an .npz file")
    if not zipfile.is_zipfile(p):
        raise CMDPInputError(f"{label}: not an .npz archive")
    with open(p, "rb") as fh:  # ours to close, whatever NumPy's reader raises
        with decoding(label, "unreadable or truncated .npz"):
            archive = np.load(fh, allow_pickle=False)  # reads the archive's directory only
        if not isinstance(archive, np.lib.npyio.NpzFile):  # data before the archive: NumPy reads no .npz
            raise CMDPInputError(f"{label}: not an .npz archive (it does not start like one)")
        arrays, names, meta_text, sparse = _read_archive(archive, label)
    try:
        meta = json.loads(meta_text)
    except (ValueError, RecursionError) as exc:
        raise CMDPInputError(f"{label}: key 'meta' is not valid JSON ({exc})") from None
    out: dict[str, Any] = dict(arrays)
    try:
        if sparse:
            data, indices, indptr, shape = (out.pop(k) for k in SPARSE_KEYS)
            out["P"] = csr_from_parts("P", data, indices, indptr, shape, actions=out.get("actions"))
    except CMDPInputError as exc:  # the kernel's rules, named by key: say which file broke them
        raise CMDPInputError(f"{label}: {exc}") from None
    if out["s0"].ndim == 1:
        out["s0"] = out["s0"].astype(np.float64, copy=False)  # a distribution, not an index
    return out, names, meta, label


def _read_archive(archive: Any, label: str) -> tuple[dict[str, Any], str, str, bool]:
    """The arrays of an open model ``.npz`` (its required keys, checked), its ``names`` and ``meta``
    text, and whether its kernel is sparse; every refusal names the file (``label``) and key."""
    with archive as data:
        files = set(data.files)
        sparse = any(k in files for k in SPARSE_KEYS)
        if sparse and "P" in files:
            raise CMDPInputError(
                f"{label}: holds both a dense kernel 'P' and sparse kernel keys {list(SPARSE_KEYS)}; keep one"
            )
        required = (*SPARSE_KEYS, *COMMON_KEYS[1:]) if sparse else COMMON_KEYS
        length = [k for k in ("H", "gamma") if k in files]
        missing = [k for k in required if k not in files]
        if missing:
            missing += [] if length else ["H"]
            raise CMDPInputError(
                f"{label}: missing key(s) {missing}; required keys are {list(FILE_KEYS)} "
                f"('gamma' instead of 'H' for a discounted model; {list(SPARSE_KEYS)} instead of 'P' "
                f"for a sparse kernel)"
            )
        if len(length) != 1:
            raise CMDPInputError(
                f"{label}: "
                + ("holds both 'H' and 'gamma'" if length else "has neither 'H' nor 'gamma'")
                + "; a model is finite-horizon (key 'H') or discounted (key 'gamma'), exactly one"
            )
        arrays: dict[str, Any] = {k: _numeric_key(data, k, label) for k in (*required, *length)}
        if "action_names" in files:
            arrays["action_names"] = _typed_key(data, "action_names", label, "U", "text")
        if "actions" in files:
            arrays["actions"] = _typed_key(data, "actions", label, "b", "booleans (the available actions)")
        if "labels" in files:
            arrays["labels"] = labels_from_record(_typed_key(data, "labels", label, "V", "a record array"), label)
        return arrays, _text_key(data, "names", label, ""), _text_key(data, "meta", label, "{}"), sparse


def _numeric_key(data: Any, key: str, label: str) -> NDArray[Any]:
    """The array of ``key`` in an open ``.npz`` (integers or reals), or a one-line error naming the file and key."""
    with decoding(f"{label}: key {key!r}", "unreadable or truncated"):
        arr: NDArray[Any] = np.asarray(data[key])
    if arr.dtype.kind not in "iuf":
        raise CMDPInputError(f"{label}: key {key!r} must hold integers or real numbers, not {arr.dtype.name} data")
    return arr


def _typed_key(data: Any, key: str, label: str, kind: str, what: str) -> NDArray[Any]:
    """The array of the optional ``key`` of an open ``.npz``, of dtype kind ``kind`` (``what``, for errors)."""
    with decoding(f"{label}: key {key!r}", "unreadable or truncated"):
        arr: NDArray[Any] = np.asarray(data[key])
    if arr.dtype.kind != kind:
        raise CMDPInputError(f"{label}: key {key!r} must hold {what}, not {arr.dtype.name} data")
    return arr


def _text_key(data: Any, key: str, label: str, default: str) -> str:
    """The text of the optional ``key`` of an open ``.npz`` (``default`` when absent)."""
    if key not in data.files:
        return default
    with decoding(f"{label}: key {key!r}", "unreadable or truncated"):
        return str(data[key])


__all__ = ["COMMON_KEYS", "FILE_KEYS", "SPARSE_KEYS", "read_model", "write_model"]
