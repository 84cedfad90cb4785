"""A model checker's model (raw arrays, [`CheckerModel`][cmdp_rl.model.umb.CheckerModel]) as a
[`CMDP`][cmdp_rl.model.cmdp.CMDP]: which reward structures or labels become the reward and the
costs, the start distribution, the action names and labels, and (for now) the padding of ragged
choices and the map of rewards and costs into ``[0, 1]``.

Rewards and costs are named by a reward structure of the model (``""`` for PRISM's unnamed one)
or by a label, ``label:NAME`` (``1`` per step spent in a state where ``NAME`` holds, like a
state reward). A plain name that is not a reward structure but is a label is read as that label.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
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


def _unit_map(values: NDArray[np.float64], what: str) -> tuple[float, float]:
    """``(lo, hi)`` of the affine map ``x -> (x - lo) / (hi - lo)`` sending ``values`` into ``[0, 1]``:
    the identity ``(0, 1)`` when they already lie there, else ``lo = min(0, values)``,
    ``hi = max(0, values)`` (so 0 stays the smallest-or-equal point and a sign is kept)."""
    if values.size and not np.all(np.isfinite(values)):
        raise CMDPInputError(f"{what}: the model's values must be finite")
    lo, hi = (float(min(0.0, values.min())), float(max(0.0, values.max()))) if values.size else (0.0, 1.0)
    return (0.0, 1.0) if lo >= 0.0 and hi <= 1.0 else (lo, hi)


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

    Temporary, until ragged action sets and rewards in any units land (issue 36, items 1 and 2):
    this is the one place that turns the raw pieces into today's CMDP, by

    * padding: a state with fewer than ``A`` choices gets copies of its last choice in the free
      slots (kernel row, reward and costs; action name ``""``); the choices per state are kept in
      ``meta["choices"]`` when some state has fewer than ``A``;
    * units: the reward and each cost are mapped affinely into ``[0, 1]``, ``x -> (x - lo) / (hi - lo)``
      with ``lo = min(0, values)``, ``hi = max(0, values)`` (the identity when they already lie in
      ``[0, 1]``), recorded in ``meta["reward_map"]`` and ``meta["cost_maps"]`` (``{"lo", "hi"}``);
      each threshold goes through its cost's map summed over the episode,
      ``c_bar_mapped = (c_bar - L lo) / (hi - lo)`` with ``L = H`` or ``1 / (1 - gamma)``, and a value
      ``V`` of the model returns to the model's units as ``V (hi - lo) + L lo`` (the thresholds as
      given: ``meta["c_bar"]``).

    Raises:
        CMDPInputError: an unknown reward structure or label (the message lists those there are),
            thresholds missing or not one per cost, or the model's own rules (e.g. ``H`` and
            ``gamma`` both given or neither).
    """
    H_, gamma_ = check_horizon(H, gamma)
    length = float(H_) if H_ is not None else 1.0 / (1.0 - float(gamma_ or 0.0))
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
    slot = np.minimum(np.arange(A)[None, :], counts[:, None] - 1)  # (S, A): padding repeats the last choice
    rows = (raw.choices[:-1, None] + slot).ravel()
    K = raw.kernel[rows]
    r_map = _unit_map(r_choice, "reward")
    c_maps = [_unit_map(c, f"costs[{i}]") for i, c in enumerate(c_choice)]
    r = ((r_choice[rows] - r_map[0]) / (r_map[1] - r_map[0])).reshape(S, A)
    c = np.array([(x[rows] - lo) / (hi - lo) for x, (lo, hi) in zip(c_choice, c_maps, strict=True)]).reshape(-1, S, A)
    c_bar_mapped = np.array([(b - length * lo) / (hi - lo) for b, (lo, hi) in zip(cb, c_maps, strict=True)])
    mask = np.arange(A)[None, :] < counts[:, None]
    action_names = np.where(mask, raw.action_names[rows].reshape(S, A), "")
    start = np.flatnonzero(raw.initial)
    s0: int | NDArray[np.float64] = int(start[0]) if start.size == 1 else raw.initial / start.size
    info: dict[str, Any] = {
        **dict(meta or {}),
        "reward": reward,
        "costs": costs,
        "reward_map": {"lo": r_map[0], "hi": r_map[1]},
        "cost_maps": [{"lo": lo, "hi": hi} for lo, hi in c_maps],
        "c_bar": [float(b) for b in cb],
    }
    if not mask.all():
        info["choices"] = counts.tolist()
    return CMDP(
        K, r, c, c_bar_mapped, s0, H_, gamma_, names=names, meta=info, action_names=action_names, labels=raw.labels
    )


def _choices_per_state(model: CMDP) -> NDArray[np.int64]:
    """``(S,)`` how many of each state's actions are its own (an import's padding excluded)."""
    kept = dict(model.meta).get("choices")
    counts = np.full(model.S, model.A, dtype=np.int64)
    if isinstance(kept, list) and len(kept) == model.S:
        arr = np.asarray(kept)
        if arr.dtype.kind in "iu" and arr.size and arr.min() >= 1 and arr.max() <= model.A:
            counts = arr.astype(np.int64)
    return counts


def _in_model_units(model: CMDP) -> NDArray[np.float64]:
    """``(N+1, S, A)`` reward and costs, in the model checker's units when ``meta`` records the maps."""
    meta = dict(model.meta)
    values = np.concatenate([model.r[None], model.c])
    maps = [meta.get("reward_map"), *(meta.get("cost_maps") or [None] * model.N)]
    if "cost_maps" not in meta or len(maps) != model.N + 1:
        return values
    for i, unit in enumerate(maps):
        if isinstance(unit, dict) and {"lo", "hi"} <= set(unit):
            lo, hi = float(unit["lo"]), float(unit["hi"])
            values[i] = values[i] * (hi - lo) + lo
    return values


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
    [`checker_cmdp`][cmdp_rl.model.checker.checker_cmdp]): each state's own choices (an import's
    padding, ``meta["choices"]``, left out), reward structures ``reward, cost_0, ...`` in the model
    checker's units when ``meta`` records the maps (else as the model holds them), the labels, the
    initial states (``s0``, or the support of a start distribution that is uniform on it) and the
    action names. Temporary like the padding and the maps it undoes."""
    if not isinstance(model, CMDP):
        raise CMDPTypeError(f"model: must be a cmdp_rl.CMDP, got {type(model).__name__}")
    S, A = model.S, model.A
    counts = _choices_per_state(model)
    rows = np.flatnonzero((np.arange(A)[None, :] < counts[:, None]).ravel())  # flat pairs s*A + a kept
    values = _in_model_units(model).reshape(model.N + 1, S * A)[:, rows]
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


def model_units(model: CMDP, value: float, which: int | None = None) -> float:
    """A value (``which=None``) or cost ``which`` of ``model`` (an import of
    [`checker_cmdp`][cmdp_rl.model.checker.checker_cmdp]) in the model checker's units:
    ``v (hi - lo) + L lo`` with the map recorded in ``model.meta`` and ``L = H`` or ``1 / (1 - gamma)``."""
    meta = dict(model.meta)
    if "reward_map" not in meta or "cost_maps" not in meta:
        raise CMDPInputError("model: its meta has no reward_map/cost_maps (not imported from a model checker)")
    unit = meta["reward_map"] if which is None else meta["cost_maps"][which]
    lo, hi = float(unit["lo"]), float(unit["hi"])
    return float(value) * (hi - lo) + model.max_return * lo


__all__ = [
    "LABEL_PREFIX",
    "checker_cmdp",
    "model_units",
    "per_choice",
    "raw_of_cmdp",
    "reward_structure_names",
]
