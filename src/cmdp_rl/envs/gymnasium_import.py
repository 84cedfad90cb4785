"""Gymnasium toy-text environments as CMDPs: FrozenLake, CliffWalking, Taxi, or any env with a tabular ``P``.

The conversion (``from_gymnasium``), for an environment whose unwrapped object exposes
``P[s][a] = [(prob, next_state, reward, terminated), ...]``:

* state and action indices are Gymnasium's; ``P[s, a, s2]`` sums the probabilities of the
  listed outcomes of ``(s, a)`` leading to ``s2``;
* ``r(s, a) = sum prob * reward`` (the expected reward of the step);
* a transition with ``terminated = True`` leads to its next state, which becomes absorbing:
  every action stays there, with reward 0 and cost 0 in Gymnasium's units;
* rewards are mapped into [0, 1] by one affine map ``x -> (x - lo) / (hi - lo)``, with
  ``lo, hi`` the smallest and largest of 0 and every reward listed in ``P`` (Gymnasium 1.x
  has no reliable ``reward_range``), applied to every step, absorbing ones included (their
  reward 0 becomes ``-lo / (hi - lo)``). When every reward already lies in [0, 1] the map is
  the identity (``lo = 0, hi = 1``). For a fixed horizon this changes every policy's value by
  the same affine map, ``V = (V_mapped) (hi - lo) + H lo`` in original units, so the optimal
  (and constrained-optimal) policies are unchanged; ``meta["reward_map"]`` keeps ``lo, hi``
  and ``to_original_units`` converts values back;
* costs ``c(s, a) = sum prob * cost(s, a, outcome)`` in [0, 1], named per environment
  (``NAMED_COSTS``): FrozenLake ``hole`` (the step enters a hole), CliffWalking ``cliff``
  (the step enters the cliff, which Gymnasium answers with -100 and a return to the start),
  Taxi ``illegal`` (an illegal pick-up or drop-off, the -10 outcomes); or any
  ``cost=callable(s, a, s2) -> [0, 1]``; absorbing states cost 0;
* ``s0`` is Gymnasium's initial state when its initial distribution is a single state
  (FrozenLake, CliffWalking); when it is random (Taxi), one start state is added (index
  ``S``, so Taxi has 501 states) whose every action leads to Gymnasium's initial-state
  distribution with reward 0 in original units and cost 0; that step counts within ``H``.

Options that change the dynamics outside ``P`` (Taxi's ``fickle_passenger``) are refused.

The kernel is dense ``(S, A, S)`` when that array fits in
``cmdp_rl.model.sparse.SPARSE_ABOVE_BYTES`` (16 MiB; every toy-text environment), else a
sparse ``(S*A, S)`` CSR array built from the outcome lists directly (same rules: summed
outcomes, absorbing terminal states, the added start state, rows normalized), so a large
tabular environment is never densified.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from cmdp_rl.envs.making import env_attribute, gym_make
from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.model.sparse import SPARSE_ABOVE_BYTES, dense_bytes
from cmdp_rl.plumbing.errors import foreign, one_line
from cmdp_rl.plumbing.limits import (
    DEFAULT_MAX_MEMORY,
    DEFAULT_MAX_SECONDS,
    check_estimate,
    check_int64,
    gym_import_estimate,
)
from cmdp_rl.plumbing.validation import CMDPInputError, CMDPTypeError, as_float, check_positive_int, renamed_arguments

Array = NDArray[np.float64]
Outcome = tuple[float, int, float, bool]

#: options whose effect on the dynamics is not in ``P`` (refused when true)
OUTSIDE_P: dict[str, tuple[str, ...]] = {"TaxiEnv": ("fickle_passenger",)}


def _hole(env: Any) -> Callable[[int, int, Outcome], float]:
    desc = np.asarray(env.desc).ravel()

    def cost(s: int, a: int, o: Outcome) -> float:
        return 1.0 if desc[o[1]] == b"H" else 0.0

    return cost


def _reward_is(value: float) -> Callable[[Any], Callable[[int, int, Outcome], float]]:
    def make(env: Any) -> Callable[[int, int, Outcome], float]:
        def cost(s: int, a: int, o: Outcome) -> float:
            return 1.0 if o[2] == value else 0.0

        return cost

    return make


#: environment class name -> cost name -> (builder of ``cost(s, a, outcome)``, description)
NAMED_COSTS: dict[str, dict[str, tuple[Callable[[Any], Callable[[int, int, Outcome], float]], str]]] = {
    "FrozenLakeEnv": {"hole": (_hole, "probability that the step enters a hole")},
    "CliffWalkingEnv": {"cliff": (_reward_is(-100.0), "probability that the step enters the cliff (reward -100)")},
    "TaxiEnv": {"illegal": (_reward_is(-10.0), "probability of an illegal pick-up or drop-off (reward -10)")},
}


def _declared_size(env_id: str, env_kwargs: Mapping[str, Any]) -> tuple[int, int, str] | None:
    """``(S, A, argument)`` of a toy-text environment whose size its options set, read from the
    options before the environment (and its Python tables) is built: FrozenLake's ``desc`` (rows x
    columns). ``None`` for any other id (its size is read from its spaces once made)."""
    if not env_id.split(":")[-1].startswith("FrozenLake"):
        return None
    desc = env_kwargs.get("desc")
    if isinstance(desc, (list, tuple)) and desc:
        rows = len(desc)
        cols = max((len(row) for row in desc if isinstance(row, (str, list, tuple))), default=0)
        return rows * cols, 4, "env_kwargs: desc"
    return None


def _check_size(S: int, A: int, what: str, max_memory: float, max_seconds: float) -> None:
    """Refuse an import whose tables (about three outcomes per pair) exceed the limits."""
    check_estimate(gym_import_estimate(S, A, 3.0 * S * A), what, max_memory, max_seconds)


def _make_env(env_or_id: Any, env_kwargs: Mapping[str, Any]) -> tuple[Any, str]:
    if isinstance(env_or_id, str):
        return gym_make(env_or_id, env_kwargs, "env_or_id"), env_or_id
    if env_kwargs:
        raise CMDPInputError("env_kwargs: only used with an environment id, not with an environment instance")
    spec = env_attribute(env_or_id, "spec", "env_or_id", None)
    inner = env_attribute(env_or_id, "unwrapped", "env_or_id", env_or_id)
    return env_or_id, one_line(str(env_attribute(spec, "id", "env_or_id", None) or type(inner).__name__))


def _tabular_model(raw: Any, name: str) -> tuple[Any, int, int]:
    P = env_attribute(raw, "P", "env_or_id", None)
    nS = env_attribute(env_attribute(raw, "observation_space", "env_or_id", None), "n", "env_or_id", None)
    nA = env_attribute(env_attribute(raw, "action_space", "env_or_id", None), "n", "env_or_id", None)
    if not isinstance(P, Mapping) or nS is None or nA is None:
        raise CMDPInputError(
            f"env_or_id: {name} exposes no tabular model P[s][a] = [(prob, next_state, reward, "
            "terminated), ...] with Discrete spaces; only such environments can be imported"
        )
    try:
        return P, int(nS), int(nA)
    except Exception as exc:
        raise CMDPInputError(f"env_or_id: {name}'s spaces have no integer sizes ({foreign(exc)})") from None


def _outcomes(P_raw: Any, S: int, A: int, name: str) -> list[tuple[int, int, float, int, float, bool]]:
    """Every ``(s, a, prob, next_state, reward, terminated)`` of the tabular model ``P[s][a]``;
    a model of another form is a one-line ``CMDPInputError`` naming ``env_or_id``."""
    try:
        return [
            (s, a, float(p), int(s2), float(rw), bool(term))
            for s in range(S)
            for a in range(A)
            for (p, s2, rw, term) in P_raw[s][a]
        ]
    except Exception as exc:
        raise CMDPInputError(
            f"env_or_id: {name}'s tabular model is not P[s][a] = [(prob, next_state, reward, terminated), ...] "
            f"for every state and action ({foreign(exc)})"
        ) from None


def _dense_kernel(
    si: NDArray[np.int64],
    ai: NDArray[np.int64],
    s2i: NDArray[np.int64],
    prob: Array,
    terminal: NDArray[np.int64],
    init: Array | None,
    S: int,
    A: int,
) -> Array:
    """The dense ``(S', A, S')`` kernel of the outcome lists, ``S' = S + 1`` with an added start
    state (``init`` its ``(S,)`` successor distribution, ``None`` without one): probabilities of
    the outcomes of ``(s, a)`` leading to ``s2`` summed in list order, terminal states absorbing,
    rows normalized."""
    P = np.zeros((S, A, S))
    np.add.at(P, (si, ai, s2i), prob)
    P[terminal] = 0.0
    P[terminal, :, terminal] = 1.0
    if init is not None:
        P = np.concatenate(
            [
                np.concatenate([P, np.zeros((S, A, 1))], axis=-1),
                np.concatenate([np.broadcast_to(init, (1, A, S)), np.zeros((1, A, 1))], axis=-1),
            ]
        )
    P /= P.sum(axis=-1, keepdims=True)  # sums of float probabilities, exact rows
    return P


def _sparse_kernel(
    si: NDArray[np.int64],
    ai: NDArray[np.int64],
    s2i: NDArray[np.int64],
    prob: Array,
    terminal: NDArray[np.int64],
    init: Array | None,
    S: int,
    A: int,
) -> sp.csr_array:
    """The ``(S'*A, S')`` CSR kernel of the outcome lists, by the rules of ``_dense_kernel``,
    without any ``(S', A, S')`` array (rows normalized by their sums over the stored entries)."""
    S_tot = S + (init is not None)
    entry, first = np.unique((si * A + ai) * S_tot + s2i, return_inverse=True)
    vals = np.zeros(entry.size)
    np.add.at(vals, first.reshape(-1), prob)
    row, col = entry // S_tot, entry % S_tot
    absorbing = np.zeros(S_tot, dtype=bool)
    absorbing[terminal] = True
    keep = ~absorbing[row // A]
    rows = [row[keep], (terminal[:, None] * A + np.arange(A)).ravel()]
    cols = [col[keep], np.repeat(terminal, A)]
    data = [vals[keep], np.ones(terminal.size * A)]
    if init is not None:
        nxt = np.flatnonzero(init)
        rows.append(np.repeat(S * A + np.arange(A, dtype=np.int64), nxt.size))
        cols.append(np.tile(nxt, A))
        data.append(np.tile(init[nxt], A))
    row, col, dat = np.concatenate(rows), np.concatenate(cols), np.concatenate(data)
    order = np.lexsort((col, row))
    row, col, dat = row[order], col[order], dat[order]
    sums = np.bincount(row, weights=dat, minlength=S_tot * A)
    np.divide(dat, sums[row], out=dat, where=sums[row] > 0)  # sums of float probabilities, exact rows
    indptr = np.zeros(S_tot * A + 1, dtype=np.int64)
    np.cumsum(np.bincount(row, minlength=S_tot * A), out=indptr[1:])
    return sp.csr_array((dat, col.astype(np.int64), indptr), shape=(S_tot * A, S_tot))


def gymnasium_model(
    env_or_id: Any,
    H: int,
    cost: str | Callable[[int, int, int], float] | None = None,
    c_bar: float | None = None,
    *,
    max_memory: float = DEFAULT_MAX_MEMORY,
    max_seconds: float = DEFAULT_MAX_SECONDS,
    **env_kwargs: Any,
) -> tuple[CMDP, dict[str, Any]]:
    """The CMDP of ``from_gymnasium`` and its metadata dict (also stored as ``model.meta``)."""
    H = check_positive_int("H", H)
    check_int64("H", H)
    if isinstance(env_or_id, str):
        declared = _declared_size(env_or_id, env_kwargs)
        if declared is not None:  # before gymnasium builds its tables
            _check_size(declared[0], declared[1], declared[2], max_memory, max_seconds)
    if cost is None and c_bar is not None:
        raise CMDPInputError("c_bar: given without a cost")
    if cost is not None and c_bar is None:
        raise CMDPInputError("c_bar: required with a cost (the budget of the expected total cost)")
    thr = None if c_bar is None else as_float("c_bar", c_bar)
    env, name = _make_env(env_or_id, env_kwargs)
    raw = env_attribute(env, "unwrapped", "env_or_id", env)
    kind = type(raw).__name__
    for option in OUTSIDE_P.get(kind, ()):
        if env_attribute(raw, option, "env_or_id", False):
            raise CMDPInputError(
                f"env_kwargs: {option}=True changes {name}'s dynamics outside its tabular model P; "
                "it cannot be imported"
            )
    P_raw, S, A = _tabular_model(raw, name)
    _check_size(S, A, f"env_or_id: {name} (S = {S:,}, A = {A:,})", max_memory, max_seconds)  # before the conversion
    cost_fn: Callable[[int, int, Outcome], float]
    if callable(cost):
        user = cost

        def user_cost(s: int, a: int, o: Outcome) -> float:
            return float(user(s, a, o[1]))

        cost_fn = user_cost
    elif isinstance(cost, str):
        named = NAMED_COSTS.get(kind, {})
        if cost not in named:
            raise CMDPInputError(
                f"cost: {name} has no cost named {cost!r}; named costs: {sorted(named) or 'none'} "
                "(or pass a callable cost(s, a, s2) -> [0, 1])"
            )
        cost_fn = named[cost][0](raw)
    elif cost is not None:
        raise CMDPTypeError(f"cost: must be a cost name, a callable or None, got {type(cost).__name__}")
    N = 0 if cost is None else 1
    outcomes = _outcomes(P_raw, S, A, name)
    rewards = [o[4] for o in outcomes]
    lo, hi = min(0.0, *rewards), max(0.0, *rewards)
    if lo >= 0.0 and hi <= 1.0:
        lo, hi = 0.0, 1.0
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        raise CMDPInputError(f"env_or_id: {name}'s rewards span [{lo}, {hi}], which no affine map sends into [0, 1]")
    arr = np.array([(s, a, p, s2, rw) for s, a, p, s2, rw, _ in outcomes], dtype=np.float64).reshape(-1, 5)
    si, ai, s2i = arr[:, 0].astype(np.int64), arr[:, 1].astype(np.int64), arr[:, 3].astype(np.int64)
    prob, rew = arr[:, 2], arr[:, 4]
    terminal = np.unique(s2i[np.array([o[5] for o in outcomes], dtype=bool)])
    given = env_attribute(raw, "initial_state_distrib", "env_or_id", None)
    try:
        init = np.asarray(given, dtype=np.float64).reshape(S) if given is not None else np.eye(1, S, 0).ravel()
    except Exception as exc:
        raise CMDPInputError(f"env_or_id: {name}'s initial_state_distrib is not {S} numbers ({foreign(exc)})") from None
    start_added = int(np.count_nonzero(init)) > 1
    r = np.zeros((S, A))
    np.add.at(r, (si, ai), prob * (rew - lo) / (hi - lo))
    c = np.zeros((N, S, A))
    if N:
        try:
            cvals = np.array([cost_fn(s, a, (p, s2, rw, t)) for s, a, p, s2, rw, t in outcomes], dtype=np.float64)
        except Exception as exc:  # a user's callable, or a named cost on an environment of another form
            raise CMDPInputError(f"cost: computing the cost of {name}'s outcomes failed ({foreign(exc)})") from None
        if not np.all(np.isfinite(cvals)) or cvals.min(initial=0.0) < 0 or cvals.max(initial=0.0) > 1:
            raise CMDPInputError("cost: the cost of every outcome must lie in [0, 1]")
        np.add.at(c[0], (si, ai), prob * cvals)
    r[terminal] = (0.0 - lo) / (hi - lo)
    c[:, terminal] = 0.0
    if start_added:  # a random initial state: one added start state leads to it
        r = np.concatenate([r, np.full((1, A), (0.0 - lo) / (hi - lo))])
        c = np.concatenate([c, np.zeros((N, 1, A))], axis=1)
        s0 = S
    else:
        s0 = int(np.argmax(init))
    kernel: Array | sp.csr_array
    if dense_bytes(S + start_added, A) > SPARSE_ABOVE_BYTES:
        kernel = _sparse_kernel(si, ai, s2i, prob, terminal, init if start_added else None, S, A)
    else:
        kernel = _dense_kernel(si, ai, s2i, prob, terminal, init if start_added else None, S, A)
    np.clip(r, 0.0, 1.0, out=r)
    np.clip(c, 0.0, 1.0, out=c)
    meta: dict[str, Any] = {
        "name": name,
        "source": f"gymnasium:{name}",
        "parameters": {
            "H": H,
            "env_kwargs": dict(env_kwargs),
            "cost": cost if isinstance(cost, str) or cost is None else "callable",
            "c_bar": thr,
        },
        "reward_map": {"lo": lo, "hi": hi},
        "start_state_added": start_added,
    }
    model = CMDP(kernel, r, c, np.zeros(0) if thr is None else np.array([thr]), s0, H, names=name, meta=meta)
    return model, meta


@renamed_arguments(horizon="H", threshold="c_bar")
def from_gymnasium(
    env_or_id: Any,
    H: int,
    cost: str | Callable[[int, int, int], float] | None = None,
    c_bar: float | None = None,
    *,
    max_memory: float = DEFAULT_MAX_MEMORY,
    max_seconds: float = DEFAULT_MAX_SECONDS,
    **env_kwargs: Any,
) -> CMDP:
    """A Gymnasium environment with a tabular model ``P`` as a [`CMDP`][cmdp_rl.model.cmdp.CMDP].

    The conversion is exactly the one of this module's docstring (indices, expected
    rewards, absorbing terminal states, the affine reward map, named costs, the added start
    state of environments with a random initial state).

    Args:
        env_or_id: a Gymnasium id (``"FrozenLake-v1"``, ``"CliffWalking-v1"``, ``"Taxi-v4"``, ...) or an
            environment instance.
        H: steps per episode (``horizon``: its deprecated name, for one release).
        cost: a named cost of the environment (``hole``, ``cliff``, ``illegal``), a callable
            ``cost(s, a, s2) -> [0, 1]``, or ``None`` (no constraint).
        c_bar: the cost's threshold, a bound on its expected total per episode (required with a
            cost; ``threshold``: its deprecated name, for one release).
        max_memory: refuse an import estimated to need more bytes (FrozenLake's ``desc`` is
            checked before the environment is made, any environment's spaces before its
            tables are converted).
        max_seconds: refuse an import estimated to take longer.
        **env_kwargs: options for ``gymnasium.make`` (e.g. ``map_name="8x8"``, ``is_slippery=True``).

    Raises:
        CMDPInputError: a bad argument, an environment without ``P``, an option that acts
            outside ``P``, an unknown cost name (the message lists the valid ones), an import
            beyond the limits, a horizon beyond ``int64``.
    """
    return gymnasium_model(env_or_id, H, cost, c_bar, max_memory=max_memory, max_seconds=max_seconds, **env_kwargs)[0]


def to_original_units(value: float, model: CMDP) -> float:
    """A value of the imported (mapped) model in the environment's original reward units:
    ``value (hi - lo) + H lo`` with ``lo, hi`` from ``model.meta["reward_map"]``."""
    rmap = dict(model.meta).get("reward_map")
    if not isinstance(rmap, Mapping):
        raise CMDPInputError("model: has no reward_map in its meta (not imported from Gymnasium)")
    lo, hi = float(rmap["lo"]), float(rmap["hi"])
    return float(value) * (hi - lo) + model.horizon("to_original_units") * lo


__all__ = ["NAMED_COSTS", "OUTSIDE_P", "from_gymnasium", "gymnasium_model", "to_original_units"]
