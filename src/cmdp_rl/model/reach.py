"""Reach-avoid constraints and reach objectives: the probability of entering a set of states, as a
constraint ([`reach_constraint`][cmdp_rl.model.reach.reach_constraint]) or as the value
([`reach_objective`][cmdp_rl.model.reach.reach_objective]), by a product with one "counted" flag
(see the docs page 'Reach-avoid constraints').

"Entering" a set ``B``: finite horizon, some state of the episode ``s_0, ..., s_H`` lies in ``B``
(the last state ``s_H``, reached after the last action, counts); discounted,
``sum_t gamma^t P(first entry into B at step t)`` (the probability of entering ``B`` before a
geometric stop with continuation probability ``gamma``).

The product has ``2 S`` states; state ``(s, f)`` has index ``s + S * f``, where the flag ``f = 1``
says the entry has already been counted. The start is ``(s0, 0)`` (``rho`` on the ``f = 0`` copy,
so an integer ``s0`` keeps its index). The original ``r`` and ``c`` hold on both copies; the new
cost (or reward) ``g`` is:

- finite horizon: ``(s, 0)``, ``s`` in ``B``: ``g = 1`` and every action leads to flag 1
  (only a start state can be such a state); ``(s, 0)``, ``s`` not in ``B``: ``g = P(B | s, a)``
  and the next state is ``(s', [s' in B])``: the entry at the next step is charged now, in
  expectation, so the entry at the last state ``s_H`` counts; ``(s, 1)``: ``g = 0``, flag stays 1.
  The sum over ``h = 0 .. H-1`` is ``P(s_0 in B) + sum_{h<H} P(first entry at h + 1)``, the
  probability that some ``s_0 .. s_H`` lies in ``B``: exact, no offset.
- discounted: ``(s, 0)``, ``s`` in ``B``: ``g = 1``, next ``(s', 1)``; ``(s, 0)``, ``s`` not in
  ``B``: ``g = 0``, next ``(s', 0)``; ``(s, 1)``: ``g = 0``, flag stays 1. The discounted sum is
  ``sum_t gamma^t P(first entry at t)`` exactly, and ``g`` does not depend on ``P``.

Why the finite-horizon cost holds ``P``: costs are stationary functions of ``(state, action)``
and ``s_H`` is seen after the last action, so on the last step the only exact charge for "enters
``B`` at ``s_H``" is its probability ``P(B | s, a)``; being stationary, it is charged at every step
(an exact form without ``P`` would need the step in the state, ``H`` times the states). A learner
knows ``r`` and ``c`` and learns ``P``: on a finite-horizon product, ``c`` reveals the row sums
``P(B | s, a)``. The discounted form has no such leak.

Several flags compose: each call adds one flag, so ``k`` calls give ``S * 2**k`` states, state
``s + S f_1 + 2 S f_2 + ...`` (the ``j``-th call's flag ``f_j`` has weight ``S * 2**(j-1)``).
Labels are tiled over the copies, and each call adds a label ``NAME.reached`` (``flagJ.reached``
for a mask): the states where some state of the set has been visited at or before the current
step (its flag, or the current state in the set), in both forms. The product has at most twice
the states and exactly twice the kernel's entries (each entry moves to one copy), in the model's
layout; [`lift_policy`][cmdp_rl.model.reach.lift_policy] puts a policy of the original model on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from cmdp_rl.model.checks import state_mask
from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.plumbing.validation import CMDPInputError, CMDPTypeError, as_float, as_float_array, plain

Array = NDArray[np.float64]
Mask = NDArray[np.bool_]

#: the key of ``CMDP.meta`` that records the product's flags, one entry per call, in order
META_KEY = "reach"


def target_mask(model: CMDP, name: str, target: Any) -> tuple[Mask, str | None]:
    """The ``(S,)`` bool mask of ``target`` (argument ``name``): a label of ``model`` (its name, a
    string) or a set of states (a boolean ``(S,)`` mask or integer indices,
    [`state_mask`][cmdp_rl.model.checks.state_mask]); with the label's name, or ``None``. An unknown
    label is a one-line error naming the labels the model has."""
    if isinstance(target, str):
        mask = model.labels.get(target)
        if mask is None:
            have = ", ".join(repr(k) for k in model.labels) if model.labels else "none"
            raise CMDPInputError(
                f"{name}: the model has no label {target!r} (its labels: {have}); give a label or an (S,) bool mask"
            )
        return np.asarray(mask, dtype=bool), target
    return np.asarray(state_mask(name, target, model.S), dtype=bool), None


def reach_kernel(model: CMDP, B: Mask, counted_next: bool) -> sp.csr_array:
    """The product's ``(2S*A, 2S)`` CSR kernel (rows ``s*A + a`` of the ``f = 0`` copy first, then
    those of the ``f = 1`` copy), built from the model's CSR arrays without a loop over states.

    ``(s, 1)`` moves to ``(s', 1)``; ``(s, 0)`` with ``s`` in ``B`` to ``(s', 1)``; ``(s, 0)`` with
    ``s`` not in ``B`` to ``(s', [s' in B])`` when ``counted_next`` (finite horizon), else to
    ``(s', 0)``."""
    S, A = model.S, model.A
    K = model.K
    rows = np.repeat(np.arange(S * A), np.diff(K.indptr))
    cols = K.indices.astype(np.int64)
    to_one = B[rows // A]
    if counted_next:
        to_one = to_one | B[cols]
    data = np.concatenate([K.data, K.data])
    indices = np.concatenate([cols + S * to_one, cols + S])
    indptr = np.concatenate([K.indptr[:-1], K.indptr + K.nnz]).astype(np.int64)
    return sp.csr_array((data, indices, indptr), shape=(2 * S * A, 2 * S))


def reach_indicator(model: CMDP, B: Mask) -> Array:
    """``(2S, A)`` the product's new cost (or reward) ``g`` of the module's construction: on
    ``(s, 0)``, 1 for ``s`` in ``B``; for ``s`` not in ``B``, ``P(B | s, a)`` (finite horizon) or
    0 (discounted); 0 on ``(s, 1)``."""
    S, A = model.S, model.A
    g = np.zeros((2 * S, A))
    g[:S][B] = 1.0
    if not model.is_discounted:
        into = np.clip(np.asarray(model.K @ B.astype(np.float64)).reshape(S, A), 0.0, 1.0)
        g[:S][~B] = into[~B]
    return g


def _labels(model: CMDP, B: Mask, label: str) -> dict[str, Mask]:
    """The model's labels tiled over both copies, and ``label`` (the set visited so far)."""
    S = model.S
    out = {k: np.tile(v, 2) for k, v in model.labels.items()}
    out[label] = np.concatenate([B, np.ones(S, dtype=bool)])
    return out


def _product(model: CMDP, target: Any, name: str, record: Mapping[str, Any]) -> tuple[dict[str, Any], Array]:
    """The product's fields but ``r``, ``c`` and ``c_bar`` (``replace``'s keywords), and ``g``."""
    if not isinstance(model, CMDP):
        raise CMDPTypeError(f"model: must be a cmdp_rl.CMDP, got {type(model).__name__}")
    B, label = target_mask(model, name, target)
    S = model.S
    flags = list(model.meta.get(META_KEY, []))
    j = len(flags) + 1
    base = f"{label}.reached" if label is not None else f"flag{j}.reached"
    reached = base if base not in model.labels else f"{base}{j}"
    names = model.action_names
    fields: dict[str, Any] = {
        "P": model.kernel_like(reach_kernel(model, B, counted_next=not model.is_discounted)),
        "s0": model.s0 if isinstance(model.s0, int) else np.concatenate([model.rho, np.zeros(S)]),
        "labels": _labels(model, B, reached),
        "action_names": names if names is None or names.ndim == 1 else np.tile(names, (2, 1)),
        "actions": None if model.actions is None else np.tile(model.actions, (2, 1)),  # both copies
        "meta": {
            **model.meta,
            META_KEY: [*flags, {**record, "set": label, "states": S, "flag": j, "label": reached}],
        },
    }
    return fields, reach_indicator(model, B)


def reach_constraint(model: CMDP, avoid: Any, p: float) -> CMDP:
    """A new model with one more constraint: the probability of entering ``avoid`` is at most ``p``.

    The product of the module's construction (``2 S`` states, state ``s + S * f``); ``r`` and
    ``c`` hold on both copies, the new cost ``g`` is appended as the last constraint and ``p`` to
    ``c_bar``. Its cost of a policy is exactly the probability of entering ``avoid``: finite
    horizon, that some ``s_0, ..., s_H`` lies in it; discounted,
    ``sum_t gamma^t P(first entry at t)``.

    Args:
        model: a finite-horizon or discounted [`CMDP`][cmdp_rl.model.cmdp.CMDP], dense or sparse
            (the product keeps the layout: [`kernel_like`][cmdp_rl.model.cmdp.CMDP.kernel_like]).
        avoid: the set: the name of one of ``model.labels``, an ``(S,)`` bool mask, or state indices.
        p: the largest allowed probability, in ``[0, 1]``.

    Returns:
        The product CMDP: ``2 S`` states, ``N + 1`` constraints, labels tiled and
        ``NAME.reached`` added, ``meta["reach"]`` recording the flag.
    """
    p_ = as_float("p", p)
    if not 0.0 <= p_ <= 1.0:
        raise CMDPInputError(f"p: the largest probability of entering the set must lie in [0, 1], got {plain(p)}")
    fields, g = _product(model, avoid, "avoid", {"kind": "avoid", "p": p_})
    return model.replace(
        **fields,
        r=np.tile(model.r, (2, 1)),
        c=np.concatenate([np.tile(model.c, (1, 2, 1)), g[None]]),
        c_bar=np.append(model.c_bar, p_),
    )


def reach_objective(model: CMDP, goal: Any) -> CMDP:
    """A new model whose value is the probability of entering ``goal``, its constraints kept.

    The product of the module's construction; the reward is ``g`` (``r`` is dropped), ``c`` holds
    on both copies, ``c_bar`` is unchanged. The value of a policy is exactly the probability of
    entering ``goal`` (finite horizon: some ``s_0, ..., s_H`` in it; discounted:
    ``sum_t gamma^t P(first entry at t)``).

    Args:
        model: a finite-horizon or discounted [`CMDP`][cmdp_rl.model.cmdp.CMDP], dense or sparse.
        goal: the set: the name of one of ``model.labels``, an ``(S,)`` bool mask, or state indices.

    Returns:
        The product CMDP: ``2 S`` states, the same ``N`` constraints, labels tiled and
        ``NAME.reached`` added, ``meta["reach"]`` recording the flag.
    """
    fields, g = _product(model, goal, "goal", {"kind": "reach"})
    return model.replace(**fields, r=g, c=np.tile(model.c, (1, 2, 1)), c_bar=model.c_bar)


def lift_policy(policy: Any, product: CMDP) -> Array:
    """A policy of the model a product was built from, on the product: ``(H, S, A)`` (or a
    stationary ``(S, A)``) tiled over the product's copies, the same action distribution whatever
    the flags (``(H, S * 2**k, A)``), e.g. to evaluate its reach probability with ``evaluate``."""
    if not isinstance(product, CMDP):
        raise CMDPTypeError(f"product: must be a cmdp_rl.CMDP, got {type(product).__name__}")
    flags = product.meta.get(META_KEY, [])
    S = int(flags[0]["states"]) if flags else product.S
    ndim = np.ndim(policy)
    if ndim not in (2, 3):
        raise CMDPInputError(f"policy: expected an (H, S, A) or (S, A) array, got {ndim} dimensions")
    arr = as_float_array("policy", policy, ndim)
    if arr.shape[-2:] != (S, product.A):
        raise CMDPInputError(
            f"policy: the product was built from a model of S = {S} states and A = {product.A} actions: expected "
            f"(..., {S}, {product.A}), got {arr.shape}"
        )
    reps = (1,) * (ndim - 2) + (product.S // S, 1)
    return np.tile(arr, reps)


__all__ = [
    "META_KEY",
    "lift_policy",
    "reach_constraint",
    "reach_indicator",
    "reach_kernel",
    "reach_objective",
    "target_mask",
]
