"""The finite-horizon CMDP model ``M = <S, A, P, r, c, c_bar, s0, H>`` (paper section 2).

Shapes (DESIGN section 2): ``P (S, A, S)``, ``r (S, A)``, ``c (N, S, A)``,
``c_bar (N,)``; ``N = 0`` is an ordinary MDP. Arrays are validated, copied and
made read-only at construction, so a :class:`CMDP` can be shared freely.
"""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .atomic import atomic_path
from .validation import (
    ROW_SUM_TOL,
    CMDPInputError,
    as_float_array,
    as_int,
    check_distribution_rows,
    check_shape,
    check_unit_interval,
    plain,
    row_sum_tolerance,
)

FILE_KEYS = ("P", "r", "c", "c_bar", "s0", "H")


@dataclass(frozen=True, eq=False)
class CMDP:
    """A validated, immutable finite-horizon constrained MDP.

    Attributes:
        P: ``(S, A, S)`` transition kernel, ``P[s, a, s2] = P(s2 | s, a)``.
        r: ``(S, A)`` rewards in [0, 1].
        c: ``(N, S, A)`` costs in [0, 1].
        c_bar: ``(N,)`` thresholds; a policy is feasible when ``C_i <= c_bar[i]``.
        s0: initial state.
        H: horizon, steps ``h = 0 .. H-1``.
        names: optional free-form label (e.g. a scenario name).
        meta: optional JSON-serializable metadata (name, source, parameters, the reward map
            ``lo, hi`` of an import, Slater gap, baseline costs); saved as the ``.npz`` key
            ``meta`` (a JSON string) and restored by :meth:`load`.
    """

    P: NDArray[np.float64]
    r: NDArray[np.float64]
    c: NDArray[np.float64]
    c_bar: NDArray[np.float64]
    s0: int
    H: int
    names: str = field(default="")
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        P = as_float_array("P", self.P, 3)
        S, A = P.shape[0], P.shape[1]
        if S < 1 or A < 1:
            raise CMDPInputError(f"P: needs at least one state and one action, got shape {P.shape}")
        check_shape("P", P, (S, A, S))
        tol = row_sum_tolerance(self.P, S)
        check_distribution_rows("P", P, "each kernel row P[s, a, :]", tol)
        if tol > ROW_SUM_TOL:  # a lower-precision kernel: rows made exact distributions in float64
            P /= P.sum(axis=-1, keepdims=True)
        r = as_float_array("r", self.r, 2)
        check_shape("r", r, (S, A))
        check_unit_interval("r", r)
        c_in = np.zeros((0, S, A)) if self.c is None else self.c
        c = as_float_array("c", c_in, 3)
        if c.shape[1:] != (S, A):
            raise CMDPInputError(f"c: expected shape (N, {S}, {A}), got {c.shape}")
        check_unit_interval("c", c)
        cb_in = np.zeros(0) if self.c_bar is None else self.c_bar
        c_bar = as_float_array("c_bar", np.atleast_1d(as_float_array("c_bar", cb_in, np.ndim(cb_in))), 1)
        check_shape("c_bar", c_bar, (c.shape[0],))
        s0 = as_int("s0", self.s0)
        if not 0 <= s0 < S:
            raise CMDPInputError(f"s0: must be a state index in [0, {S - 1}], got {s0}")
        H = as_int("H", self.H)
        if H < 1:
            raise CMDPInputError(f"H: horizon must be >= 1, got {H}")
        for arr in (P, r, c, c_bar):
            arr.setflags(write=False)
        for key, val in (
            ("P", P),
            ("r", r),
            ("c", c),
            ("c_bar", c_bar),
            ("s0", s0),
            ("H", H),
            ("names", str(self.names)),
            ("meta", _check_meta(self.meta)),
        ):
            object.__setattr__(self, key, val)

    @property
    def S(self) -> int:
        """Number of states."""
        return int(self.P.shape[0])

    @property
    def A(self) -> int:
        """Number of actions."""
        return int(self.P.shape[1])

    @property
    def N(self) -> int:
        """Number of constraints."""
        return int(self.c.shape[0])

    def replace(self, **changes: Any) -> CMDP:
        """A new validated CMDP with some fields replaced (e.g. ``c_bar`` or ``P``)."""
        fields = {k: getattr(self, k) for k in (*FILE_KEYS, "names", "meta")}
        fields.update(changes)
        return CMDP(**fields)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the model as an ``.npz`` file with keys ``P, r, c, c_bar, s0, H, names`` (atomically:
        the file at ``path`` is complete or untouched)."""
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            np.savez(
                fh,
                P=self.P,
                r=self.r,
                c=self.c,
                c_bar=self.c_bar,
                s0=np.int64(self.s0),
                H=np.int64(self.H),
                names=np.str_(self.names),
                **({"meta": np.str_(json.dumps(self.meta, sort_keys=True))} if self.meta else {}),
            )

    @classmethod
    def from_table(cls, table: Any, c_bar: Any = None, s0: int = 0, H: int = 1, **kwargs: Any) -> CMDP:
        """A model from a transition table ``state, action, next_state, prob[, reward, cost_0, ...]``
        (CSV or Parquet path, or a DataFrame); see :func:`cmdp_rl.tables.from_table`."""
        from .tables import from_table

        return from_table(table, c_bar=c_bar, s0=s0, H=H, **kwargs)

    def to_table(self, path: str | os.PathLike[str] | None = None) -> str:
        """This model as a transition table (CSV text; written to ``path`` when given)."""
        from .tables import to_table

        return to_table(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> CMDP:
        """Read and validate a model written by :meth:`save` (or any npz with the same keys)."""
        p = os.fspath(path)
        if os.path.isdir(p):
            raise CMDPInputError(f"model file {plain(p)}: is a folder, not an .npz file")
        if not os.path.isfile(p):
            raise CMDPInputError(f"model file {plain(p)}: no such file")
        if not zipfile.is_zipfile(p):
            raise CMDPInputError(f"model file {plain(p)}: not an .npz archive")
        try:
            with np.load(p, allow_pickle=False) as data:
                missing = [k for k in FILE_KEYS if k not in data.files]
                if missing:
                    raise CMDPInputError(
                        f"model file {plain(p)}: missing key(s) {missing}; required keys are {list(FILE_KEYS)}"
                    )
                arrays = {k: data[k] for k in FILE_KEYS}
                names = str(data["names"]) if "names" in data.files else ""
                meta_text = str(data["meta"]) if "meta" in data.files else "{}"
        except CMDPInputError:
            raise
        except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
            raise CMDPInputError(f"model file {plain(p)}: unreadable or truncated .npz ({exc})") from None
        try:
            meta = json.loads(meta_text)
        except json.JSONDecodeError as exc:
            raise CMDPInputError(f"model file {plain(p)}: key 'meta' is not valid JSON ({exc})") from None
        return cls(**arrays, names=names, meta=meta)


def _check_meta(meta: Any) -> dict[str, Any]:
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


@dataclass(frozen=True, eq=False)
class KnownParts:
    """What a learner knows of a CMDP: everything but the kernel ``P``.

    The online learners are built from a :class:`CMDP` but keep only these parts
    (:meth:`of`), so they cannot read ``P``. Planning with exploration bonuses uses
    rewards and costs outside ``[0, 1]``: :meth:`checked` and :meth:`replace` validate
    shapes and finiteness only (Assumption 1 stays enforced on :class:`CMDP`).

    Attributes:
        r: ``(S, A)`` rewards.
        c: ``(N, S, A)`` costs.
        c_bar: ``(N,)`` thresholds.
        s0: initial state.
        H: horizon.
    """

    r: NDArray[np.float64]
    c: NDArray[np.float64]
    c_bar: NDArray[np.float64]
    s0: int
    H: int

    @classmethod
    def of(cls, cmdp: CMDP) -> KnownParts:
        """The known parts of ``cmdp`` (its read-only arrays are shared, ``P`` is not read)."""
        if not isinstance(cmdp, CMDP):
            raise TypeError(f"cmdp: must be a cmdp_rl.CMDP, got {type(cmdp).__name__}")
        return cls(cmdp.r, cmdp.c, cmdp.c_bar, cmdp.s0, cmdp.H)

    @classmethod
    def checked(cls, r: Any, c: Any, c_bar: Any, s0: Any, H: Any) -> KnownParts:
        """Validated, read-only copies: ``r (S, A)``, ``c (N, S, A)``, ``c_bar (N,)`` finite (any
        sign), ``s0`` a state index, ``H >= 1``."""
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
        for arr in (r_, c_, cb):
            arr.setflags(write=False)
        return cls(r_, c_, cb, s0_, H_)

    def replace(self, **changes: Any) -> KnownParts:
        """A validated copy with some parts replaced (e.g. bonus-augmented ``r`` and ``c``)."""
        parts = {"r": self.r, "c": self.c, "c_bar": self.c_bar, "s0": self.s0, "H": self.H, **changes}
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
