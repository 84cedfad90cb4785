"""A model checker's model (raw arrays, [`CheckerModel`][cmdp_rl.model.umb.CheckerModel]) as a
[`CMDP`][cmdp_rl.model.cmdp.CMDP]: which reward structures or labels become the reward and the
costs, the start distribution, the action names and labels, and the ragged action set (a state's
choices are its first actions). Rewards, costs and thresholds stay in the model's own units (see
'Units' on the docs page 'Models').

Rewards and costs are named by a reward structure of the model (``""`` for PRISM's unnamed one)
or by a label, ``label:NAME`` (``1`` per step spent in a state where ``NAME`` holds, like a
state reward). A plain name that is not a reward structure but is a label is read as that label.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from cmdp_rl.model.checks import check_horizon
from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.model.umb import CheckerModel
from cmdp_rl.plumbing.validation import CMDPInputError, CMDPTypeError, as_float_array

#: the prefix that names a label where a reward or cost is expected
LABEL_PREFIX = "label:"


def per_choice(raw: CheckerModel, name: str, what: str) -> NDArray[np.float64]:
    """``(C,)`` the per-step quantity ``name`` names for each choice, in the model's units: a reward
    structure of ``raw``, or ``label:NAME`` (the indicator of the choice's state being in ``NAME``);
    ``what`` is the argument's name for the one-line error naming the structures and labels there are."""
    if not isinstance(name, str):
        raise CMDPInputError(f"{what}: must be the name of a reward structure or 'label:NAME', got {name!r}")
    label = name[len(LABEL_PREFIX) :] if name.startswith(LABEL_PREFIX) else None
    if label is None and name in raw.rewards:
        return np.asarray(raw.rewards[name], dtype=np.float64)
    label = name if label is None else label
    if label in raw.labels:
        return raw.labels[label][raw.state_of_choice].astype(np.float64)
    structures = ", ".join(repr(k) for k in raw.rewards) or "none"
    labels = ", ".join(repr(k) for k in raw.labels) or "none"
    raise CMDPInputError(
        f"{what}: the model has no reward structure or label {name!r} (reward structures: {structures}; "
        f"labels: {labels})"
    )


def checker_cmdp(
    raw: CheckerModel,
    reward: str | None = None,
    costs: Sequence[str] = (),
    H: int | None = None,
    gamma: float | None = None,
    c_bar: Any = None,
    *,
    names: str = "",
    meta: Mapping[str, Any] | None = None,
) -> CMDP:
    """The CMDP of a model checker's model: reward ``reward`` (none: 0), one constraint per name in
    ``costs`` with threshold ``c_bar[i]`` (in the model's units), horizon ``H`` or discount ``gamma``.

    The start is the initial state, or the uniform distribution over the initial states when the
    model has several (Storm reports a value per initial state; their mean is the value of this
    start, since the policy sees the state it starts in). The model's labels are kept
    (``model.labels``, ``"init"`` included); each state's ``a``-th choice is action ``a``, named by
    its choice label (``model.action_names``, shape ``(S, A)``).

    Rewards, costs and thresholds are in the model's own units, as every CMDP's may be. ``A`` is the
    most choices any state has; a state with fewer has them as its first actions and the others
    unavailable (``model.actions``, a ragged action set: their kernel rows are empty, nothing is
    padded, and the kernel stores the ``C`` choices' rows only).

    Raises:
        CMDPInputError: an unknown reward structure or label (the message lists those there are),
            thresholds missing or not one per cost, or the model's own rules (e.g. ``H`` and
            ``gamma`` both given or neither).
    """
    H_, gamma_ = check_horizon(H, gamma)
    S, counts = raw.S, raw.counts
    A = int(counts.max())
    costs = [costs] if isinstance(costs, str) else list(costs)
    r_choice = np.zeros(raw.n_choices) if reward is None else per_choice(raw, reward, "reward")
    c_choice = [per_choice(raw, name, f"costs[{i}]") for i, name in enumerate(costs)]
    if c_bar is None and costs:
        raise CMDPInputError(f"c_bar: required, one threshold per cost ({len(costs)}: {costs})")
    cb = as_float_array("c_bar", np.atleast_1d(np.asarray([] if c_bar is None else c_bar, dtype=float)), 1)
    if cb.shape[0] != len(costs):
        raise CMDPInputError(f"c_bar: one threshold per cost: {len(costs)} cost(s) {costs}, got {cb.shape[0]}")
    pair = raw.state_of_choice * A + (np.arange(raw.n_choices) - raw.choices[raw.state_of_choice])  # (C,)
    lengths = np.zeros(S * A, dtype=np.int64)
    lengths[pair] = np.diff(raw.kernel.indptr)
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    K = sp.csr_array((raw.kernel.data, raw.kernel.indices, indptr), shape=(S * A, S))
    r, c = np.zeros(S * A), np.zeros((len(costs), S * A))
    r[pair] = r_choice
    for i, x in enumerate(c_choice):
        c[i, pair] = x
    mask = np.zeros(S * A, dtype=bool)
    mask[pair] = True
    action_names = np.full(S * A, "", dtype=raw.action_names.dtype)
    action_names[pair] = raw.action_names
    start = np.flatnonzero(raw.initial)
    s0: int | NDArray[np.float64] = int(start[0]) if start.size == 1 else raw.initial / start.size
    info: dict[str, Any] = {
        **dict(meta or {}),
        "reward": reward,
        "costs": costs,
    }
    return CMDP(
        K,
        r.reshape(S, A),
        c.reshape(-1, S, A),
        cb,
        s0,
        H_,
        gamma_,
        names=names,
        meta=info,
        action_names=action_names.reshape(S, A),
        labels=raw.labels,
        actions=mask.reshape(S, A),
    )


def _initial_states(model: CMDP) -> NDArray[np.int64]:
    """The initial states: ``s0``, or the support of a uniform start distribution (else refused)."""
    if isinstance(model.s0, int):
        return np.array([model.s0])
    support = np.flatnonzero(model.rho > 0)
    mass = model.rho[support]
    if np.ptp(mass) > 1e-12 * mass.max():
        raise CMDPInputError(
            "model: a model checker's file holds a set of initial states (a uniform start over them); this model "
            "starts from a distribution that is not uniform on its support"
        )
    return support


def reward_structure_names(N: int) -> list[str]:
    """The reward structures of an exported model with ``N`` constraints: ``reward, cost_0, ..., cost_{N-1}``."""
    return ["reward", *(f"cost_{i}" for i in range(N))]


def raw_of_cmdp(model: CMDP) -> CheckerModel:
    """``model`` as a model checker's raw model (the inverse of
    [`checker_cmdp`][cmdp_rl.model.checker.checker_cmdp]): each state's available actions as its
    choices, in order (``model.available``), reward structures ``reward, cost_0, ...`` as the model
    holds them, the labels, the initial states (``s0``, or the support of a start distribution that
    is uniform on it) and the action names."""
    if not isinstance(model, CMDP):
        raise CMDPTypeError(f"model: must be a cmdp_rl.CMDP, got {type(model).__name__}")
    S, A = model.S, model.A
    available = model.available
    counts = available.sum(axis=1)
    rows = np.flatnonzero(available.ravel())  # flat pairs s*A + a, the choices in order
    values = np.concatenate([model.r[None], model.c]).reshape(model.N + 1, S * A)[:, rows]
    initial = np.zeros(S, dtype=bool)
    initial[_initial_states(model)] = True
    if model.action_names is None:
        names = np.full(rows.size, "", dtype=np.str_)
    else:
        names = np.broadcast_to(model.action_names, (S, A)).ravel()[rows]
    labels = {"init": initial, **{k: np.asarray(v) for k, v in model.labels.items() if k != "init"}}
    return CheckerModel(
        np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
        model.K[rows],
        dict(zip(reward_structure_names(model.N), values, strict=True)),
        labels,
        initial,
        names,
    )


__all__ = [
    "LABEL_PREFIX",
    "checker_cmdp",
    "per_choice",
    "raw_of_cmdp",
    "reward_structure_names",
]
