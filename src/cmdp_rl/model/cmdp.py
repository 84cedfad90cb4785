"""The CMDP model ``M = <S, A, P, r, c, c_bar, s0, H>`` (paper section 2), finite-horizon
(``H``) or discounted (``gamma``; see the docs page 'Discounted CMDPs, NPG-PD, CRPO').

Shapes: ``P (S, A, S)`` dense or ``K (S*A, S)`` sparse CSR (see the docs page 'Large models'),
``r (S, A)``, ``c (N, S, A)``, ``c_bar (N,)``; ``N = 0`` is an ordinary MDP. Arrays are validated, copied and
made read-only at construction, so a [`CMDP`][cmdp_rl.model.cmdp.CMDP] can be shared freely.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from cmdp_rl.model.actions import Mask, check_actions, fill_unavailable, full_mask
from cmdp_rl.model.checks import (
    check_action_names,
    check_horizon,
    check_known,
    check_labels,
    check_meta,
    check_policy_size,
    check_start,
    labels_record,
)
from cmdp_rl.model.files import COMMON_KEYS, read_model, write_model
from cmdp_rl.model.sparse import DenseKernel, SparseKernel, kernel_layout
from cmdp_rl.model.table_rows import read_table, table_text
from cmdp_rl.model.units import Units, pair_bounds
from cmdp_rl.plumbing.atomic import write_atomic
from cmdp_rl.plumbing.validation import (
    CMDPInputError,
    CMDPTypeError,
    as_float_array,
    check_shape,
)


class CMDP:
    """A validated, immutable constrained MDP, finite-horizon or discounted.

    ``CMDP(P, r, c, c_bar, s0, H=None, gamma=None, names="", meta=None, action_names=None, labels=None,
    actions=None)``: exactly one of ``H``
    (finite horizon, ``V = E[sum_{h<H} r(s_h, a_h)]``) and ``gamma`` (in ``(0, 1)``: discounted,
    ``V = E[sum_t gamma^t r(s_t, a_t)]``, constraints ``E[sum_t gamma^t c_i] <= c_bar_i``) is
    given. The kernel ``P`` is either a dense
    ``(S, A, S)`` array or a ``scipy.sparse`` matrix/array ``K`` of shape ``(S*A, S)``
    whose row ``s*A + a`` is ``P(. | s, a)`` (any sparse format,
    converted to CSR). A sparse model stays sparse: memory ``O(nnz + S*A*N)``.

    Ragged action sets: ``actions``, an ``(S, A)`` boolean mask, marks the actions available in
    each state (``None``: all of them). Every state needs one; an unavailable pair's kernel row
    must be all zeros (sparse: empty, so the kernel stores rows of available pairs only) and its
    reward and costs are ignored (any finite numbers: the model keeps there the values of the
    state's first available action, so no range over actions sees them). Planners, evaluation,
    learners and certificates never put mass on an unavailable action (see the docs page
    'Models', section 'Ragged action sets').

    Attributes:
        P: ``(S, A, S)`` dense transition kernel, ``P[s, a, s2] = P(s2 | s, a)``; refused
            (one-line [`CMDPInputError`][cmdp_rl.plumbing.errors.CMDPInputError] naming ``cmdp.K``) for a sparse
            model, so no
            code densifies a large model by accident.
        K: ``(S*A, S)`` CSR array of the kernel, always available (built once, on demand,
            for a dense model).
        is_sparse: whether the model was given (and is kept) sparse.
        r: ``(S, A)`` rewards, any finite numbers in the user's units.
        c: ``(N, S, A)`` costs, any finite numbers in the user's units (each its own).
        c_bar: ``(N,)`` thresholds; a policy is feasible when ``C_i <= c_bar[i]``.
        s0: the start as given: a state index, or a read-only ``(S,)`` initial distribution.
        rho: ``(S,)`` the initial distribution (one-hot for a state index).
        H: horizon, steps ``h = 0 .. H-1``; ``None`` for a discounted model.
        gamma: discount factor in ``(0, 1)``; ``None`` for a finite-horizon model.
        names: optional free-form label (e.g. a scenario name).
        meta: optional JSON-serializable metadata (name, source, parameters, the reward map
            ``lo, hi`` of an import, Slater gap, baseline costs); saved as the ``.npz`` key
            ``meta`` (a JSON string) and restored by [`load`][cmdp_rl.model.cmdp.CMDP.load].
        action_names: ``None``, or read-only text naming the actions: ``(A,)`` (the same in every
            state) or ``(S, A)`` (per state, e.g. a model checker's choice labels; ``""`` unnamed).
        labels: read-only mapping from a label's name to the ``(S,)`` bool mask of the states it
            holds in (e.g. a PRISM model's labels; empty when none), for reach-avoid properties.
        units: the [`Units`][cmdp_rl.model.units.Units] of the rewards and costs: their scale
            intervals, the map onto the unit scale the exact planners and the learners work on,
            and the tolerance rule (the docs page 'Models', section 'Units').
        actions: the read-only ``(S, A)`` bool mask of the available actions, or ``None`` when every
            action is available in every state (a mask of all ``True`` is stored as ``None``);
            [`available`][cmdp_rl.model.cmdp.CMDP.available] is always the mask.
    """

    r: NDArray[np.float64]
    c: NDArray[np.float64]
    c_bar: NDArray[np.float64]
    s0: int | NDArray[np.float64]
    H: int | None
    gamma: float | None
    names: str
    meta: Mapping[str, Any]
    is_sparse: bool
    action_names: NDArray[np.str_] | None
    labels: Mapping[str, NDArray[np.bool_]]
    units: Units
    actions: Mask | None
    _kernel: DenseKernel | SparseKernel  # the kernel in its layout: every layout-dependent method asks it

    def __init__(
        self,
        P: Any,
        r: Any,
        c: Any,
        c_bar: Any,
        s0: Any,
        H: Any = None,
        gamma: Any = None,
        names: str = "",
        meta: Mapping[str, Any] | None = None,
        action_names: Any = None,
        labels: Mapping[str, Any] | None = None,
        actions: Any = None,
    ) -> None:
        kernel = kernel_layout(P, actions)  # validated, in the layout it was given, with the action mask
        S, A = kernel.sizes
        mask = kernel.actions
        r_ = as_float_array("r", r, 2)
        check_shape("r", r_, (S, A))
        r_ = fill_unavailable(r_, mask)  # ignored where unavailable
        c_in = np.zeros((0, S, A)) if c is None else c
        c_ = as_float_array("c", c_in, 3)
        if c_.shape[1:] != (S, A):
            raise CMDPInputError(f"c: expected shape (N, {S}, {A}), got {c_.shape}")
        c_ = fill_unavailable(c_, mask)
        cb_in = np.zeros(0) if c_bar is None else c_bar
        cb = as_float_array("c_bar", np.atleast_1d(as_float_array("c_bar", cb_in, np.ndim(cb_in))), 1)
        check_shape("c_bar", cb, (c_.shape[0],))
        s0_ = check_start(s0, S)
        H_, gamma_ = check_horizon(H, gamma)
        if H_ is not None:
            check_policy_size(H_, S, A)
        units = Units.of(r_, c_, float(H_) if H_ is not None else 1.0 / (1.0 - float(gamma_ or 0.0)))
        for arr in (r_, c_, cb):
            arr.setflags(write=False)
        state = {
            "_kernel": kernel,
            "is_sparse": kernel.layout == "sparse",
            "r": r_,
            "c": c_,
            "c_bar": cb,
            "s0": s0_,
            "H": H_,
            "gamma": gamma_,
            "names": str(names),
            "meta": check_meta(meta),
            "action_names": check_action_names(action_names, S, A),
            "labels": check_labels(labels, S),
            "units": units,
            "actions": mask,
        }
        self.__dict__.update(state)

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError(f"CMDP is immutable: cannot set {key!r}; use cmdp.replace({key}=...)")

    def __delattr__(self, key: str) -> None:
        raise AttributeError(f"CMDP is immutable: cannot delete {key!r}")

    def __repr__(self) -> str:
        kind = self._kernel.describe()
        label = f", names={self.names!r}" if self.names else ""
        length = f"gamma={self.gamma:g}" if self.gamma is not None else f"H={self.H}"
        start = f"s0={self.s0}" if isinstance(self.s0, int) else "s0=<distribution>"
        return f"CMDP(S={self.S}, A={self.A}, N={self.N}, {length}, {start}, {kind}{label})"

    @property
    def available(self) -> Mask:
        """``(S, A)`` read-only bool mask of the available actions: ``actions``, or all ``True`` (built
        once) when every action is available. Code that only needs to branch asks ``actions is None``."""
        if self.actions is not None:
            return self.actions
        out: Mask | None = self.__dict__.get("_available")
        if out is None:
            out = full_mask(None, self.S, self.A)
            out.setflags(write=False)
            self.__dict__["_available"] = out
        return out

    @property
    def is_ragged(self) -> bool:
        """Whether some state lacks some action (``actions`` is not ``None``)."""
        return self.actions is not None

    @property
    def is_discounted(self) -> bool:
        """Whether the model is discounted (``gamma`` given) rather than finite-horizon."""
        return self.gamma is not None

    @property
    def rho(self) -> NDArray[np.float64]:
        """``(S,)`` read-only initial distribution: ``s0`` itself, or one-hot at the state ``s0``."""
        rho: NDArray[np.float64] | None = self.__dict__.get("_rho")
        if rho is None:
            if isinstance(self.s0, int):
                rho = np.zeros(self.S)
                rho[self.s0] = 1.0
                rho.setflags(write=False)
            else:
                rho = self.s0
            self.__dict__["_rho"] = rho
        return rho

    @property
    def reward_bounds(self) -> tuple[float, float]:
        """``(lo, hi)``: the smallest and largest reward over the state-action pairs."""
        lo, hi = pair_bounds(self.r[None])
        return float(lo[0]), float(hi[0])

    @property
    def cost_bounds(self) -> NDArray[np.float64]:
        """``(N, 2)``: each cost's smallest and largest value over the state-action pairs."""
        return np.column_stack(pair_bounds(self.c))

    @property
    def max_return(self) -> float:
        """The steps ``T`` a return adds up: ``H``, or ``1 / (1 - gamma)`` for a discounted model (the
        largest return with rewards in ``[0, 1]``; the scale of values and tolerances is ``T`` times
        the rewards' width, see [`Units`][cmdp_rl.model.units.Units])."""
        return float(self.H) if self.H is not None else 1.0 / (1.0 - float(self.gamma or 0.0))

    def start_state(self, what: str) -> int:
        """The start state index, for ``what`` (a function that needs one); a model with an initial
        distribution is refused with a one-line error naming ``s0``."""
        if isinstance(self.s0, int):
            return self.s0
        raise CMDPInputError(
            f"s0: {what} needs a single start state (an index); this model starts from a distribution "
            f"over its {self.S} states"
        )

    def horizon(self, what: str) -> int:
        """The horizon ``H``, for ``what`` (a finite-horizon function); a discounted model is
        refused with a one-line error naming ``gamma``."""
        if self.H is not None:
            return self.H
        raise CMDPInputError(
            f"gamma: {what} works on finite-horizon models (H); this model is discounted (gamma = {self.gamma:g})"
        )

    def discount(self, what: str, name: str = "H") -> float:
        """The discount factor ``gamma``, for ``what`` (a discounted-model function); a finite-horizon
        model is refused with a one-line error naming ``name`` (the CLI: ``model PATH``)."""
        if self.gamma is not None:
            return self.gamma
        raise CMDPInputError(
            f"{name}: {what} works on discounted models (gamma); this model is finite-horizon (H = {self.H})"
        )

    def episodic(self, what: str) -> tuple[int, int]:
        """``(s0, H)`` of a finite-horizon model with a start state, for ``what``; refuses a
        discounted model (naming ``gamma``) or an initial distribution (naming ``s0``)."""
        H = self.horizon(what)  # the more basic mismatch first
        return self.start_state(what), H

    @property
    def layout(self) -> str:
        """``"dense"`` (the kernel is an ``(S, A, S)`` array) or ``"sparse"`` (an ``(S*A, S)`` CSR array)."""
        return self._kernel.layout

    @property
    def P(self) -> NDArray[np.float64]:
        """``(S, A, S)`` dense kernel of a dense model (a sparse model refuses: use
        [`K`][cmdp_rl.model.cmdp.CMDP.K])."""
        return self._kernel.dense(self.S, self.A)

    @property
    def K(self) -> sp.csr_array:
        """``(S*A, S)`` CSR array of the kernel, row ``s*A + a`` = ``P(. | s, a)`` (built once for a dense model)."""
        return self._kernel.csr()

    @property
    def kernel(self) -> NDArray[np.float64] | sp.csr_array:
        """The kernel as given: the dense ``(S, A, S)`` array or the sparse ``(S*A, S)`` CSR array."""
        return self._kernel.given

    @property
    def S(self) -> int:
        """Number of states."""
        return int(self.r.shape[0])

    @property
    def A(self) -> int:
        """Number of actions."""
        return int(self.r.shape[1])

    @property
    def N(self) -> int:
        """Number of constraints."""
        return int(self.c.shape[0])

    @property
    def nnz(self) -> int:
        """Non-zero kernel entries (transitions with positive probability)."""
        return self._kernel.nnz

    @property
    def nbytes(self) -> int:
        """Bytes held by the model's arrays (the kernel as stored, rewards, costs)."""
        return self._kernel.nbytes + int(self.r.nbytes + self.c.nbytes + self.c_bar.nbytes)

    def to_dense(self) -> CMDP:
        """This model with a dense ``(S, A, S)`` kernel (refused before allocating when above
        ``cmdp_rl.model.sparse.MAX_DENSE_BYTES``)."""
        dense = self._kernel.dense_copy(self.S, self.A, "cmdp.to_dense()")
        return self if dense is None else self.replace(P=dense)

    def to_sparse(self) -> CMDP:
        """This model with a sparse ``(S*A, S)`` CSR kernel."""
        K = self._kernel.sparse_copy()
        return self if K is None else self.replace(P=K)

    def dense_kernel(self, what: str) -> NDArray[np.float64]:
        """The dense ``(S, A, S)`` kernel for ``what``, a function that genuinely needs one: the
        model's own for a dense model; for a sparse one a dense copy, refused with a one-line
        error naming ``what`` before allocating when it is too large."""
        dense = self._kernel.dense_copy(self.S, self.A, what)
        return self.P if dense is None else dense

    def kernel_like(self, K: sp.csr_array) -> NDArray[np.float64] | sp.csr_array:
        """A derived model's ``(S'*A, S')`` CSR kernel ``K`` (same actions) in this model's layout:
        ``K`` for a sparse model; for a dense one its dense ``(S', A, S')`` copy, or ``K`` when that
        copy would exceed ``cmdp_rl.model.sparse.MAX_DENSE_BYTES``."""
        return self._kernel.like(K, self.A)

    def replace(self, **changes: Any) -> CMDP:
        """A new validated CMDP with some fields replaced (e.g. ``c_bar`` or ``P``, dense or sparse).
        Giving ``gamma`` (``H``) alone turns the model discounted (finite-horizon). The kernel (read-only)
        is shared with this model unless ``P`` or ``actions`` changes: no copy of it is validated."""
        kept = (*COMMON_KEYS, "H", "gamma", "names", "meta", "action_names", "labels", "actions")
        fields = {k: getattr(self, k) for k in kept if k != "P"}
        # the validated, read-only kernel is shared unless it or the action mask changes
        fields["P"] = self._kernel if "P" not in changes and "actions" not in changes else self.kernel
        if "gamma" in changes and "H" not in changes:
            fields["H"] = None
        if "H" in changes and "gamma" not in changes:
            fields["gamma"] = None
        fields.update(changes)
        return CMDP(**fields)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the model as an ``.npz`` file with keys ``P, r, c, c_bar, s0, names`` and ``H`` (finite
        horizon) or ``gamma`` (discounted), and ``action_names``/``labels``/``actions`` when the model
        has them (labels as an ``(S,)`` record array of bool fields, one per label; ``actions`` the
        ``(S, A)`` bool mask of a ragged model); a sparse model has
        ``P_data, P_indices, P_indptr, P_shape`` instead of ``P``; ``s0`` is an int or a float
        ``(S,)`` distribution. Written atomically: the file at ``path`` is complete or untouched
        ([`write_model`][cmdp_rl.model.files.write_model])."""
        write_model(
            path,
            {
                **self._kernel.file_arrays(),
                "r": self.r,
                "c": self.c,
                "c_bar": self.c_bar,
                "s0": np.int64(self.s0) if isinstance(self.s0, int) else self.s0,
                **({"H": np.int64(self.H)} if self.H is not None else {"gamma": np.float64(self.gamma)}),
                "names": np.str_(self.names),
                **({"meta": np.str_(json.dumps(self.meta, sort_keys=True))} if self.meta else {}),
                **({"action_names": self.action_names} if self.action_names is not None else {}),
                **({"labels": labels_record(self.labels, self.S)} if self.labels else {}),
                **({"actions": self.actions} if self.actions is not None else {}),
            },
        )

    @classmethod
    def from_table(
        cls,
        table: Any,
        c_bar: Any = None,
        s0: int = 0,
        H: int = 1,
        *,
        names: str = "",
        meta: Mapping[str, Any] | None = None,
        sparse: bool | None = None,
    ) -> CMDP:
        """A model from a transition table ``state, action, next_state, prob[, reward, cost_0, ...]``
        (CSV or Parquet path, or a DataFrame); see [`from_table`][cmdp_rl.model.tables.from_table]."""
        kernel, r, c, actions = read_table(table, sparse)
        if c_bar is None and c.shape[0]:
            raise CMDPInputError(f"c_bar: required, one threshold per cost column ({c.shape[0]})")
        cb = np.zeros(0) if c_bar is None else c_bar
        return cls(kernel, r, c, cb, s0, H, names=names, meta=meta or {}, actions=actions)

    def to_table(self, path: str | os.PathLike[str] | None = None) -> str:
        """This model as a transition table (CSV text; written atomically to ``path`` when given; the
        rows of available pairs only); see [`to_table`][cmdp_rl.model.tables.to_table]."""
        text = table_text(self.kernel, self.r, self.c)
        if path is not None:
            write_atomic(path, text)
        return text

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> CMDP:
        """Read and validate a model written by [`save`][cmdp_rl.model.cmdp.CMDP.save] (or any npz with the same
        keys; the file format: [`cmdp_rl.model.files`][cmdp_rl.model.files]).

        Raises:
            CMDPInputError: one line naming the file, and the key where there is one: not an
                ``.npz`` archive, a truncated or damaged one, a missing, unreadable or non-numeric
                key, or arrays that break the model's rules (e.g. a sparse ``P_*`` key with NaN,
                negative or duplicate entries, rows not summing to 1, a wrong shape).
        """
        arrays, names, meta, label = read_model(path)
        try:
            return cls(**arrays, names=names, meta=meta)
        except CMDPInputError as exc:  # the model's rules, named by key: say which file broke them
            raise CMDPInputError(f"{label}: {exc}") from None


def length_label(cmdp: CMDP) -> str:
    """``"H=50"`` or ``"gamma=0.8"``: how long the model's returns run, for one-line summaries."""
    return f"H={cmdp.H}" if cmdp.H is not None else f"gamma={cmdp.gamma:g}"


def start_label(cmdp: CMDP) -> str:
    """The start state, or ``"distribution"`` (with its support size), for one-line summaries."""
    if isinstance(cmdp.s0, int):
        return str(cmdp.s0)
    return f"distribution over {int(np.count_nonzero(cmdp.s0))} states"


@dataclass(frozen=True, eq=False)
class KnownParts:
    """What a learner knows of a CMDP: everything but the kernel ``P``.

    The online learners are built from a [`CMDP`][cmdp_rl.model.cmdp.CMDP] but keep only these parts
    ([`of`][cmdp_rl.model.cmdp.KnownParts.of]), so they cannot read ``P``. Planning with exploration bonuses uses
    rewards and costs outside ``[0, 1]``: [`checked`][cmdp_rl.model.cmdp.KnownParts.checked] and
    [`replace`][cmdp_rl.model.cmdp.KnownParts.replace] validate shapes and finiteness only. A learner
    built from parts outside ``[0, 1]`` plans on their unit image
    ([`unit_known`][cmdp_rl.model.units.unit_known]).

    Attributes:
        r: ``(S, A)`` rewards.
        c: ``(N, S, A)`` costs.
        c_bar: ``(N,)`` thresholds.
        s0: initial state.
        H: horizon.
        actions: ``(S, A)`` bool mask of the available actions, or ``None`` (all available): the
            learners never play an unavailable one.
    """

    r: NDArray[np.float64]
    c: NDArray[np.float64]
    c_bar: NDArray[np.float64]
    s0: int
    H: int
    actions: Mask | None = None

    @classmethod
    def of(cls, cmdp: CMDP, what: str = "this learner") -> KnownParts:
        """The known parts of ``cmdp`` (its read-only arrays are shared, ``P`` is not read); a
        discounted model or an initial distribution is refused for ``what`` (one-line
        [`CMDPInputError`][cmdp_rl.plumbing.errors.CMDPInputError] naming ``gamma`` or ``s0``)."""
        if not isinstance(cmdp, CMDP):
            raise CMDPTypeError(f"cmdp: must be a cmdp_rl.CMDP, got {type(cmdp).__name__}")
        s0, H = cmdp.episodic(what)
        return cls(cmdp.r, cmdp.c, cmdp.c_bar, s0, H, cmdp.actions)

    @classmethod
    def checked(cls, r: Any, c: Any, c_bar: Any, s0: Any, H: Any, actions: Any = None) -> KnownParts:
        """Validated, read-only copies: ``r (S, A)``, ``c (N, S, A)``, ``c_bar (N,)`` finite (any
        sign), ``s0`` a state index, ``H >= 1``, ``actions`` an ``(S, A)`` bool mask or ``None``."""
        r_, c_, cb, s0_, H_ = check_known(r, c, c_bar, s0, H)
        S, A = r_.shape
        return cls(r_, c_, cb, s0_, H_, check_actions(actions, S, A))

    def replace(self, **changes: Any) -> KnownParts:
        """A validated copy with some parts replaced (e.g. bonus-augmented ``r`` and ``c``)."""
        parts = {"r": self.r, "c": self.c, "c_bar": self.c_bar, "s0": self.s0, "H": self.H, "actions": self.actions}
        parts.update(changes)
        return KnownParts.checked(**parts)

    @property
    def S(self) -> int:
        """Number of states."""
        return int(self.r.shape[0])

    @property
    def A(self) -> int:
        """Number of actions."""
        return int(self.r.shape[1])

    @property
    def N(self) -> int:
        """Number of constraints."""
        return int(self.c.shape[0])
