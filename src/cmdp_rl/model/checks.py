"""The checks of a model's scalar and annotation fields: the start ``s0``, the length (``H`` or
``gamma``), the metadata, and the names a model may carry for its actions and sets of states
(``action_names``, ``labels``; kept from a model checker's file for reach-avoid properties).

Each check validates, copies and returns the field, or raises a one-line
[`CMDPInputError`][cmdp_rl.plumbing.errors.CMDPInputError] naming it.
"""

from __future__ import annotations

import json
import types
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.plumbing.limits import check_allocation
from cmdp_rl.plumbing.validation import (
    CMDPInputError,
    as_float,
    as_float_array,
    as_int,
    check_shape,
    distribution_rows,
    plain,
)


def check_start(s0: Any, S: int) -> int | NDArray[np.float64]:
    """``s0``: a state index in ``[0, S)``, or a length-``S`` distribution (non-negative, finite,
    summing to 1 within ``ROW_SUM_TOL``, widened for float32 input: ``distribution_rows``; returned as a
    read-only float copy)."""
    if np.ndim(s0) == 1 and not isinstance(s0, (str, bytes)):
        rho = as_float_array("s0", s0, 1)
        if rho.shape != (S,):
            raise CMDPInputError(f"s0: an initial distribution must have length S = {S}, got {rho.shape[0]}")
        distribution_rows("s0", s0, rho, "the initial distribution")
        rho.setflags(write=False)
        return rho
    s = as_int("s0", s0)
    if not 0 <= s < S:
        raise CMDPInputError(f"s0: must be a state index in [0, {S - 1}] or a length-{S} distribution, got {s}")
    return s


#: the largest effective horizon ``1 / (1 - gamma)`` a discounted model may have: beyond it a value's
#: rounding error (``~1e-16`` times the horizon, per step of policy evaluation) reaches the
#: tolerances every planner certifies to (``gamma = 1 - 1e-15`` gave a value 5% off)
MAX_EFFECTIVE_HORIZON = 1e9


def check_horizon(H: Any, gamma: Any) -> tuple[int | None, float | None]:
    """Exactly one of ``H`` (an integer ``>= 1`` within 64 bits; ``CMDP`` also checks that its
    ``(H, S, A)`` policies fit in memory) and ``gamma`` (a number in ``(0, 1)``): ``(H, gamma)``
    with the other ``None``."""
    if (H is None) == (gamma is None):
        both = "both were given" if H is not None else "neither was given"
        raise CMDPInputError(
            f"H, gamma: give exactly one: H (finite horizon, an integer >= 1) or gamma (discounted, in (0, 1)); {both}"
        )
    if gamma is not None:
        g = as_float("gamma", gamma)
        if not 0.0 < g < 1.0:
            raise CMDPInputError(f"gamma: the discount factor must lie in (0, 1), got {plain(gamma)}")
        if 1.0 / (1.0 - g) > MAX_EFFECTIVE_HORIZON:
            raise CMDPInputError(
                f"gamma: 1 / (1 - gamma) = {1.0 / (1.0 - g):.3g} exceeds {MAX_EFFECTIVE_HORIZON:.0e}: the values' "
                f"scale swamps float64's precision (no planner can certify them); got gamma = {plain(gamma)}"
            )
        return None, g
    H_ = as_int("H", H)
    if H_ < 1:
        raise CMDPInputError(f"H: horizon must be >= 1, got {H_}")
    return H_, None


def check_policy_size(H: int, S: int, A: int) -> None:
    """Refuse a horizon whose ``(H, S, A)`` policies (the least every finite-horizon function of the
    model allocates) exceed this machine's memory, before anything is allocated."""
    check_allocation("H", 8.0 * H * S * A, f"every (H, S, A) policy of H = {H:,} steps (S = {S:,}, A = {A:,})")


def check_meta(meta: Any) -> dict[str, Any]:
    """A deep, JSON-checked copy of the metadata mapping."""
    if meta is None:
        return {}
    if not isinstance(meta, Mapping):
        raise CMDPInputError(f"meta: must be a mapping (JSON object), got {type(meta).__name__}")
    try:
        out: dict[str, Any] = json.loads(json.dumps(dict(meta), allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise CMDPInputError(f"meta: must be JSON-serializable with finite numbers ({exc})") from None
    return out


def check_known(
    r: Any, c: Any, c_bar: Any, s0: Any, H: Any
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], int, int]:
    """The known parts of a finite-horizon problem (a learner's): validated, read-only copies of
    ``r (S, A)``, ``c (N, S, A)``, ``c_bar (N,)`` (finite, any sign), ``s0`` (a state index) and
    ``H >= 1`` (its ``(H, S, A)`` policies fitting in memory)."""
    r_ = as_float_array("r", r, 2)
    S, A = r_.shape
    if S < 1 or A < 1:
        raise CMDPInputError(f"r: needs at least one state and one action, got shape {r_.shape}")
    c_ = as_float_array("c", c, 3)
    if c_.shape[1:] != (S, A):
        raise CMDPInputError(f"c: expected shape (N, {S}, {A}), got {c_.shape}")
    cb = as_float_array("c_bar", np.atleast_1d(np.asarray(c_bar)), 1)
    check_shape("c_bar", cb, (c_.shape[0],))
    s0_ = as_int("s0", s0)
    if not 0 <= s0_ < S:
        raise CMDPInputError(f"s0: must be a state index in [0, {S - 1}], got {s0_}")
    H_ = as_int("H", H)
    if H_ < 1:
        raise CMDPInputError(f"H: horizon must be >= 1, got {H_}")
    check_policy_size(H_, S, A)
    for arr in (r_, c_, cb):
        arr.setflags(write=False)
    return r_, c_, cb, s0_, H_


def check_action_names(action_names: Any, S: int, A: int) -> NDArray[np.str_] | None:
    """``action_names``: ``None``, or text naming the actions, shape ``(A,)`` (the same names in
    every state) or ``(S, A)`` (per state: a model checker's choice labels, ``""`` for an
    unnamed choice); returned as a read-only ``str`` copy."""
    if action_names is None:
        return None
    arr = np.array(action_names, copy=True)
    if arr.size and arr.dtype.kind not in "UO":
        raise CMDPInputError(f"action_names: must hold text, got {arr.dtype.name} data")
    if arr.dtype.kind == "O" and not all(isinstance(x, str) for x in arr.ravel()):
        raise CMDPInputError("action_names: every entry must be a string")
    if arr.shape not in ((A,), (S, A)):
        raise CMDPInputError(f"action_names: expected shape ({A},) or ({S}, {A}), got {arr.shape}")
    out = arr.astype(np.str_)
    out.setflags(write=False)
    return out


def check_labels(labels: Any, S: int) -> Mapping[str, NDArray[np.bool_]]:
    """``labels``: ``None`` or a mapping from a label's name (a non-empty string) to the set of
    states it holds in, an ``(S,)`` boolean mask or an array of state indices; returned as a
    read-only mapping of read-only ``(S,)`` bool masks, in the order given."""
    if labels is None:
        return types.MappingProxyType({})
    if not isinstance(labels, Mapping):
        got = type(labels).__name__
        raise CMDPInputError(f"labels: must be a mapping from a label's name to its states, got {got}")
    out: dict[str, NDArray[np.bool_]] = {}
    for name, states in labels.items():
        if not isinstance(name, str) or not name:
            raise CMDPInputError(f"labels: every label's name must be a non-empty string, got {name!r}")
        out[name] = state_mask(f"labels[{name!r}]", states, S)
    return types.MappingProxyType(out)


def state_mask(name: str, states: Any, S: int) -> NDArray[np.bool_]:
    """A read-only ``(S,)`` bool mask of a set of states given as a boolean mask of length ``S`` or
    as an array of state indices in ``[0, S)``; ``name`` is the argument's name for errors."""
    arr = np.asarray(states)
    mask: NDArray[np.bool_]
    if arr.dtype == np.bool_:
        if arr.shape != (S,):
            raise CMDPInputError(f"{name}: a boolean mask of states must have shape ({S},), got {arr.shape}")
        mask = np.array(arr, dtype=bool)
    else:
        if arr.size and arr.dtype.kind not in "iu":
            raise CMDPInputError(f"{name}: must be a boolean (S,) mask or integer state indices, got {arr.dtype.name}")
        idx = arr.astype(np.int64).ravel()
        if idx.size and (idx.min() < 0 or idx.max() >= S):
            raise CMDPInputError(f"{name}: state indices must lie in [0, {S - 1}]")
        mask = np.zeros(S, dtype=bool)
        mask[idx] = True
    mask.setflags(write=False)
    return mask


def labels_record(labels: Mapping[str, NDArray[np.bool_]], S: int) -> NDArray[np.void]:
    """The file form of ``labels``: an ``(S,)`` structured array with one bool field per label (in
    order), saved under the model file's key ``labels`` without pickling."""
    rec = np.zeros(S, dtype=[(name, np.bool_) for name in labels])
    for name, mask in labels.items():
        rec[name] = mask
    return rec


def labels_from_record(rec: NDArray[Any], label: str) -> dict[str, NDArray[np.bool_]]:
    """The labels of a model file's ``labels`` key (written by
    [`labels_record`][cmdp_rl.model.checks.labels_record]); ``label`` names the file for errors."""
    fields = rec.dtype.names
    if rec.ndim != 1 or not fields or any(rec.dtype[f] != np.bool_ for f in fields):
        raise CMDPInputError(f"{label}: key 'labels' must be an (S,) record array of bool fields, one per label")
    return {f: np.asarray(rec[f], dtype=bool) for f in fields}


__all__ = [
    "MAX_EFFECTIVE_HORIZON",
    "check_action_names",
    "check_horizon",
    "check_known",
    "check_labels",
    "check_meta",
    "check_policy_size",
    "check_start",
    "labels_from_record",
    "labels_record",
    "state_mask",
]
