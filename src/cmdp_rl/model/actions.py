"""Ragged action sets: the ``(S, A)`` boolean mask of the actions available in each state (see
the docs page 'Models', section 'Ragged action sets').

A model checker's MDP has a different number of choices per state. ``CMDP(..., actions=mask)``
keeps the common ``A`` columns and marks the choices a state lacks: ``mask[s, a]`` is ``True``
when action ``a`` is available in state ``s``. Every state has at least one available action;
an unavailable pair has no transitions (a dense kernel's row ``P[s, a]`` is all zeros, a sparse
kernel's row ``s*A + a`` is empty) and its reward and costs are ignored. ``None`` stands for
"every action available" everywhere: no ``(S, A)`` array is allocated for the common case.

The helpers below are the one place every consumer asks: planners put ``-inf`` on unavailable
pairs before a maximum ([`masked`][cmdp_rl.model.actions.masked]), fix their LP occupancies to 0
([`available_flat`][cmdp_rl.model.actions.available_flat]) and hand back policies with no mass
there ([`restrict_policy`][cmdp_rl.model.actions.restrict_policy]: uniform over the available
actions where a state is unreachable); evaluation refuses a policy that plays one
([`check_policy_support`][cmdp_rl.model.actions.check_policy_support]).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.plumbing.validation import CMDPInputError

Array = NDArray[np.float64]
Mask = NDArray[np.bool_]

#: policy mass on unavailable actions above which a policy is refused (solver noise is below it)
SUPPORT_TOL = 1e-9


def check_actions(actions: Any, S: int, A: int) -> Mask | None:
    """``actions``: ``None`` (every action available), or an ``(S, A)`` boolean mask of the available
    actions with at least one ``True`` per state. Returns a read-only bool copy, or ``None`` when
    every action is available (a mask of all ``True`` is the same model as no mask).

    Raises:
        CMDPInputError: one line naming ``actions``: not boolean, the wrong shape, or a state with
            no available action (named).
    """
    if actions is None:
        return None
    arr = np.asarray(actions)
    if arr.dtype != np.bool_:
        raise CMDPInputError(f"actions: must be a boolean (S, A) mask of the available actions, got {arr.dtype.name}")
    if arr.shape != (S, A):
        raise CMDPInputError(f"actions: expected shape ({S}, {A}) (states, actions), got {arr.shape}")
    empty = np.flatnonzero(~arr.any(axis=1))
    if empty.size:
        raise CMDPInputError(
            f"actions[{int(empty[0])}]: state {int(empty[0])} has no available action "
            f"({empty.size} state(s) without one); every state needs at least one"
        )
    if arr.all():
        return None
    mask = np.array(arr, dtype=bool)
    mask.setflags(write=False)
    return mask


def full_mask(mask: Mask | None, S: int, A: int) -> Mask:
    """The ``(S, A)`` mask, all ``True`` for ``None`` (allocates: prefer the ``None``-aware helpers)."""
    return np.ones((S, A), dtype=bool) if mask is None else mask


def available_flat(mask: Mask | None, S: int, A: int) -> NDArray[np.bool_] | None:
    """The ``(S*A,)`` mask of the flat pair index ``s*A + a``, or ``None`` when every pair is available."""
    return None if mask is None else mask.reshape(S * A)


def masked(values: Array, mask: Mask | None, fill: float = -np.inf) -> Array:
    """``values (..., S, A)`` with ``fill`` on the unavailable pairs (``-inf`` by default: a maximum
    over actions never picks one); ``values`` itself when every action is available."""
    if mask is None:
        return values
    return np.where(mask, values, fill)


def fill_unavailable(values: Array, mask: Mask | None) -> Array:
    """``values (..., S, A)`` with each unavailable pair's entry replaced by that of the state's first
    available action: the given values there are ignored, and every range over actions (a state's
    least or largest reward, a cost's maximum, a tolerance on the scale of the rewards) is that of
    the available actions. Returns a new array (``values`` itself when ``mask`` is ``None``)."""
    if mask is None:
        return values
    first = np.argmax(mask, axis=1)  # (S,): every state has an available action
    S = mask.shape[0]
    donor = values[..., np.arange(S), first]  # (..., S)
    out: Array = np.where(mask, values, donor[..., None])
    return out


def uniform_rows(mask: Mask | None, S: int, A: int) -> Array:
    """``(S, A)`` uniform distribution over the available actions of each state."""
    if mask is None:
        return np.full((S, A), 1.0 / A)
    m = mask.astype(np.float64)
    out: Array = m / m.sum(axis=1, keepdims=True)
    return out


def restrict_policy(policy: Array, mask: Mask | None, tol: float = 1e-12) -> Array:
    """A policy ``(..., S, A)`` with no mass on unavailable actions: the mass on available ones
    renormalized; a row with (almost) none there, such as the uniform rows of unreachable
    states, becomes uniform over the available actions. ``policy`` itself when every action is
    available; otherwise a new array (``policy`` is not modified)."""
    if mask is None:
        return policy
    S, A = mask.shape
    kept = np.where(mask, np.maximum(policy, 0.0), 0.0)
    tot = kept.sum(axis=-1, keepdims=True)
    ok = tot > tol
    out: Array = np.where(ok, kept / np.where(ok, tot, 1.0), uniform_rows(mask, S, A))
    return out


def check_policy_support(name: str, policy: Array, mask: Mask | None, tol: float = SUPPORT_TOL) -> None:
    """Refuse a policy ``(..., S, A)`` that puts more than ``tol`` mass on an unavailable action (a
    one-line [`CMDPInputError`][cmdp_rl.plumbing.errors.CMDPInputError] naming ``name``, the state and the
    action)."""
    if mask is None:
        return
    bad = (policy > tol) & ~mask
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        s, a = idx[-2], idx[-1]
        raise CMDPInputError(
            f"{name}{list(idx)}: puts mass {float(policy[idx]):.3g} on action {a}, which is not available in "
            f"state {s} (cmdp.actions[{s}, {a}] is False)"
        )


def check_action_table(name: str, actions: NDArray[np.integer], mask: Mask | None) -> None:
    """Refuse a deterministic policy's action table ``(..., S)`` that plays an unavailable action
    (one line naming ``name``, the state and the action)."""
    if mask is None:
        return
    S = mask.shape[0]
    ok = mask[np.broadcast_to(np.arange(S), actions.shape), actions]
    if not ok.all():
        idx = tuple(int(i) for i in np.argwhere(~ok)[0])
        s, a = idx[-1], int(actions[idx])
        raise CMDPInputError(f"{name}{list(idx)}: action {a} is not available in state {s}")


def available_count(mask: Mask | None, S: int, A: int) -> int:
    """The number of available state-action pairs (``S * A`` without a mask)."""
    return S * A if mask is None else int(np.count_nonzero(mask))


__all__ = [
    "SUPPORT_TOL",
    "available_count",
    "available_flat",
    "check_action_table",
    "check_actions",
    "check_policy_support",
    "fill_unavailable",
    "full_mask",
    "masked",
    "restrict_policy",
    "uniform_rows",
]
