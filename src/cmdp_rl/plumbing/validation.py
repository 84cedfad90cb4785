"""Input validation shared by every public entry point.

Each check raises [`CMDPInputError`][cmdp_rl.plumbing.errors.CMDPInputError] (a ``ValueError``) whose message names
the argument, the offending index where there is one, and the rule it broke.
Checks never modify their input; the array helpers return validated copies.
"""

from __future__ import annotations

import functools
import math
import sys
import warnings
from collections.abc import Callable
from decimal import ROUND_CEILING, Decimal
from typing import Any, ParamSpec, TypeVar

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.plumbing.errors import (  # defined without imports for the command line; re-exported
    CMDPInputError,
    CMDPTypeError,
)

ROW_SUM_TOL = 1e-8
#: the largest integer argument: a 64-bit integer (sizes, indices, horizons, seeds and counts
#: all end up in NumPy int64 arrays)
MAX_INT = 2**63 - 1
#: the smallest positive normal float64 (about 2.2e-308): a probability below it has no finite
#: reciprocal (``1 / 5e-324`` is ``inf``), so ``eps`` and ``delta`` must be at least this
MIN_NORMAL = sys.float_info.min
#: NumPy kinds of arrays that hold numbers (signed, unsigned, float); objects are checked one by one
_NUMERIC_KINDS = "iuf"
_KIND_NAMES = {"b": "booleans", "U": "strings", "S": "bytes", "c": "complex numbers", "M": "dates", "m": "durations"}


def _first_index(mask: NDArray[np.bool_]) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argwhere(mask)[0])


def plain(value: Any) -> str:
    """``value`` for an error message: NumPy scalars and arrays as plain Python numbers/lists
    (``0.5``, not ``np.float64(0.5)``), strings quoted, long reprs shortened."""
    if isinstance(value, np.generic):
        value = value.item()
    elif isinstance(value, np.ndarray):
        value = value.tolist()
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _is_not_number(x: Any) -> bool:
    return isinstance(x, (str, bytes, bool, np.bool_)) or x is None


#: whether each entry of an object array is not a number (a string, a bool or None)
_not_numbers = np.frompyfunc(_is_not_number, 1, 1)


def check_real_kind(name: str, raw: NDArray[Any], shown: Any) -> None:
    """``raw`` must hold real numbers (signed, unsigned or float; an object array only numbers):
    booleans, strings, bytes, complex numbers (whose imaginary part a cast would drop), dates and
    ``None`` are refused, naming ``name``. One rule for every layout: a dense array and the stored
    entries (``data``) of a ``scipy.sparse`` one; ``shown`` is what the message quotes."""
    kind = raw.dtype.kind
    if kind == "O" and raw.size and np.any(np.asarray(_not_numbers(raw), dtype=bool)):
        raise CMDPInputError(
            f"{name}: cannot be read as a numeric array: it holds strings, booleans or None ({plain(shown)})"
        )
    if kind not in _NUMERIC_KINDS and kind != "O":
        what = _KIND_NAMES.get(kind, f"values of type {raw.dtype}")
        raise CMDPInputError(f"{name}: cannot be read as a numeric array: it holds {what} ({plain(shown)})")


def as_float_array(name: str, value: Any, ndim: int) -> NDArray[np.float64]:
    """Copy ``value`` into a float64 array of ``ndim`` dimensions with finite entries; booleans,
    strings (even ``"0.5"``), complex numbers and ``None`` are refused, not converted, and so is
    a ``scipy.sparse`` matrix (only a kernel ``P`` and transition counts may be sparse)."""
    if type(value).__module__.startswith("scipy.sparse"):
        raise CMDPInputError(
            f"{name}: expected a dense array, got a scipy.sparse {type(value).__name__} (only the kernel P and "
            "transition counts may be sparse); convert it with .toarray()"
        )
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise CMDPInputError(f"{name}: cannot be read as a numeric array ({exc})") from None
    check_real_kind(name, raw, value)
    try:
        arr = np.array(raw, dtype=np.float64, copy=True)
    except (TypeError, ValueError, OverflowError) as exc:
        raise CMDPInputError(f"{name}: cannot be read as a numeric array ({exc})") from None
    if arr.ndim != ndim:
        raise CMDPInputError(f"{name}: expected {ndim} dimensions, got shape {arr.shape}")
    bad = ~np.isfinite(arr)
    if bad.any():
        idx = _first_index(bad)
        raise CMDPInputError(f"{name}{list(idx)}: must be finite, got {plain(arr[idx])}")
    return arr


def check_shape(name: str, arr: NDArray[Any], shape: tuple[int, ...]) -> None:
    """Require ``arr.shape == shape``."""
    if arr.shape != shape:
        raise CMDPInputError(f"{name}: expected shape {shape}, got {arr.shape}")


def row_sum_tolerance(value: Any, size: int) -> float:
    """Row-sum tolerance for an input of ``value``'s precision: ``ROW_SUM_TOL`` for float64,
    widened to ``size`` units in the last place for lower precisions (float32 rows of a valid
    distribution sum to 1 only within about ``1e-7``)."""
    dtype = getattr(value, "dtype", None)
    if dtype is not None and np.issubdtype(dtype, np.floating) and np.finfo(dtype).eps > np.finfo(np.float64).eps:
        return max(ROW_SUM_TOL, 4.0 * size * float(np.finfo(dtype).eps))
    return ROW_SUM_TOL


def check_distribution_rows(name: str, arr: NDArray[np.float64], what: str, tol: float = ROW_SUM_TOL) -> None:
    """Every last-axis row must be non-negative and sum to 1 (within ``tol``, default ``ROW_SUM_TOL``)."""
    neg = arr < 0
    if neg.any():
        idx = _first_index(neg)
        raise CMDPInputError(f"{name}{list(idx)}: {what} must be non-negative, got {plain(arr[idx])}")
    sums = arr.sum(axis=-1)
    off = np.abs(sums - 1.0) > tol
    if off.any():
        idx = _first_index(off)
        where = f"{name}{list(idx)}" if idx else name
        raise CMDPInputError(f"{where}: {what} must sum to 1 (tolerance {tol:g}), sums to {plain(sums[idx])}")


def distribution_rows(name: str, value: Any, arr: NDArray[np.float64], what: str) -> NDArray[np.float64]:
    """The one row rule of every distribution a user gives (a kernel ``P``, a policy, a baseline,
    an initial distribution): ``arr``, the float64 copy of ``value``, must have non-negative
    last-axis rows summing to 1 within ``row_sum_tolerance(value, n)`` (``ROW_SUM_TOL`` for
    float64, widened for float32 and float16 input, whose valid rows sum to 1 only within a few
    units in their last place). Rows of lower-precision input are then renormalized in place,
    in the float64 copy, so that they are exact distributions for every later check. Returns ``arr``."""
    tol = row_sum_tolerance(value, arr.shape[-1] if arr.ndim else 1)
    check_distribution_rows(name, arr, what, tol)
    if tol > ROW_SUM_TOL and arr.size:
        arr /= arr.sum(axis=-1, keepdims=True)
    return arr


def check_unit_interval(name: str, arr: NDArray[np.float64]) -> None:
    """Entries in [0, 1] (the paper's Assumption 1)."""
    bad = (arr < 0) | (arr > 1)
    if bad.any():
        idx = _first_index(bad)
        raise CMDPInputError(
            f"{name}{list(idx)}: must lie in [0, 1] (Assumption 1 of the paper), got "
            f"{plain(arr[idx])}; rescale rewards/costs (and the thresholds) into [0, 1]"
        )


def _in_int64(name: str, value: Any, v: int) -> int:
    if abs(v) > MAX_INT:
        raise CMDPInputError(f"{name}: must be a 64-bit integer (at most 2**63 - 1 in size), got {plain(value)}")
    return v


def as_int(name: str, value: Any) -> int:
    """A Python int from an integer-valued scalar (``3`` or ``3.0``; not ``True``, ``inf``, ``nan``,
    a string, or an integer beyond 64 bits)."""
    if isinstance(value, (bool, np.bool_)):
        raise CMDPInputError(f"{name}: must be an integer, got {plain(value)}")
    if isinstance(value, (int, np.integer)):
        return _in_int64(name, value, int(value))
    try:
        arr = np.asarray(value)
    except Exception:
        arr = np.asarray(None)
    if arr.ndim == 0 and np.issubdtype(arr.dtype, np.integer):
        return _in_int64(name, value, int(arr))
    if arr.ndim == 0 and np.issubdtype(arr.dtype, np.floating):
        v = float(arr)
        if math.isfinite(v) and v == math.floor(v):
            return _in_int64(name, value, int(v))
    raise CMDPInputError(f"{name}: must be an integer, got {plain(value)}")


def as_index(name: str, value: Any, size: int) -> int:
    """An integer index in ``[0, size)``."""
    v = as_int(name, value)
    if not 0 <= v < size:
        raise CMDPInputError(f"{name}: must be an index in [0, {size - 1}], got {v}")
    return v


def as_float(name: str, value: Any, *, finite: bool = True) -> float:
    """A Python float from a real scalar of any precision (not a bool or a string)."""
    if (
        isinstance(value, (bool, np.bool_, str, bytes))
        or getattr(value, "dtype", np.dtype(np.float64)).kind in "USbcMmV"
    ):
        raise CMDPInputError(f"{name}: must be a number, got {plain(value)}")  # also a 0-d string array
    try:
        v = float(value)
    except (TypeError, ValueError, OverflowError):
        raise CMDPInputError(f"{name}: must be a number, got {plain(value)}") from None
    if finite and not math.isfinite(v):
        raise CMDPInputError(f"{name}: must be finite, got {plain(value)}")
    return v


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    """``value`` must be one of ``choices`` (e.g. an extended-LP method)."""
    if not isinstance(value, str) or value not in choices:
        raise CMDPInputError(f"{name}: must be one of {list(choices)}, got {plain(value)}")
    return value


def check_open_unit(name: str, value: float) -> float:
    """A float strictly inside (0, 1) (a user's ``eps`` and ``delta``:
    [`check_probability`][cmdp_rl.plumbing.validation.check_probability])."""
    v = as_float(name, value, finite=False)
    if not (0.0 < v < 1.0):
        raise CMDPInputError(f"{name}: must lie in the open interval (0, 1), got {plain(value)}")
    return v


def check_probability(name: str, value: Any) -> float:
    """A probability or accuracy such as ``delta`` or ``eps``: strictly inside (0, 1) and at least
    ``MIN_NORMAL`` (about 2.2e-308), so that its logarithm and reciprocal are finite."""
    v = check_open_unit(name, value)
    if v < MIN_NORMAL:
        raise CMDPInputError(
            f"{name}: must be at least 2.2e-308, the smallest normal float (below it {name} loses precision "
            f"and 1/{name} overflows), got {plain(value)}"
        )
    return v


def log_ratio(numerator: float, denominator: float) -> float:
    """``log(numerator / denominator)`` for positive arguments, finite even where the ratio is not:
    a tiny probability in the denominator (``8 / 2.2e-308`` already overflows to ``inf``) gives
    ``log(numerator) - log(denominator)`` instead of ``log(inf)``. Where the ratio is a finite
    positive float the result is ``log`` of it, bit for bit. Pass integer products as Python ints
    (``2 * S * A * H * K``), whose logarithm never overflows."""
    try:
        ratio = numerator / denominator
    except OverflowError:  # a Python int beyond the float range
        ratio = math.inf
    if 0.0 < ratio < math.inf:
        return math.log(ratio)
    return math.log(numerator) - math.log(denominator)


def rounded_up(x: float) -> str:
    """``x > 0`` written with two significant digits, rounded up (a floor a message quotes must
    itself pass the check: ``1.23e-305`` is written ``1.3e-305``)."""
    d = Decimal(x)
    step = Decimal(1).scaleb(d.adjusted() - 1)
    return f"{float((d / step).to_integral_value(rounding=ROUND_CEILING) * step):.2g}"


def check_derived_probability(name: str, value: float, divisor: float, formula: str) -> float:
    """``value / divisor``: a failure probability derived from the argument ``name`` (``formula``
    says how, e.g. ``"delta / (12 (N+2) S^2 A H)"``), which must stay a normal float (at least
    ``MIN_NORMAL``, about 2.2e-308): below it it loses precision or underflows to 0 and its
    logarithm stops being finite. Raises naming ``name`` and the smallest value it accepts."""
    derived = value / divisor if math.isfinite(divisor) and divisor > 0 else 0.0
    if not derived >= MIN_NORMAL:
        floor = MIN_NORMAL * divisor
        at_least = f"at least {rounded_up(floor)}" if floor < 1.0 else "below 1 and at least 2.2e-308 times that"
        raise CMDPInputError(
            f"{name}: {plain(value)} is too small: the failure probability {formula} derived from it must be at "
            f"least 2.2e-308 (the smallest normal float), so {name} must be {at_least}"
        )
    return derived


def check_positive_int(name: str, value: Any, minimum: int = 1) -> int:
    """An integer at least ``minimum``."""
    v = as_int(name, value)
    if v < minimum:
        raise CMDPInputError(f"{name}: must be an integer >= {minimum}, got {plain(value)}")
    return v


_P = ParamSpec("_P")
_R = TypeVar("_R")


def warn_renamed(old: str, new: str, stacklevel: int = 2) -> None:
    """One ``DeprecationWarning`` naming a renamed argument and its new name (``stacklevel`` as for
    ``warnings.warn``, counted from the caller of this function)."""
    warnings.warn(
        f"{old} is deprecated, use {new} (the old name keeps working for one release)",
        DeprecationWarning,
        stacklevel=stacklevel + 1,
    )


def renamed_arguments(**renames: str) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Decorator: keyword arguments renamed in this release keep working for one more, each use
    with one ``DeprecationWarning`` naming the old and the new name (``old="new"`` pairs, e.g.
    ``@renamed_arguments(algo="algorithm")``). Giving both names is refused
    ([`CMDPInputError`][cmdp_rl.plumbing.errors.CMDPInputError] naming both) before the function runs."""

    def decorate(function: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(function)
        def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            for old, new in renames.items():
                if old in kwargs:
                    if new in kwargs:
                        raise CMDPInputError(f"{old}: the deprecated name of {new}; give only {new}")
                    warn_renamed(old, new, stacklevel=3)
                    kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        return wrapper

    return decorate


__all__ = [
    "MAX_INT",
    "MIN_NORMAL",
    "ROW_SUM_TOL",
    "CMDPInputError",
    "CMDPTypeError",
    "as_float",
    "as_float_array",
    "as_index",
    "as_int",
    "check_choice",
    "check_derived_probability",
    "check_distribution_rows",
    "check_open_unit",
    "check_positive_int",
    "check_probability",
    "check_real_kind",
    "check_shape",
    "check_unit_interval",
    "distribution_rows",
    "log_ratio",
    "plain",
    "renamed_arguments",
    "row_sum_tolerance",
    "warn_renamed",
]
