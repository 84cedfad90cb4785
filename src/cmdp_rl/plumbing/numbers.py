"""Numbers a user types: the rules every numeric text obeys, wherever it is read.

The command line's options ([`cmdp_rl.cli.parser`][cmdp_rl.cli.parser]), the thresholds ``X/Y`` of
``--c-bar`` and ``--baseline-costs``, the overrides of a problem spec (``garnet:S=50,seed=1``) and
the numbers inside ``--env-kwargs`` JSON are all read here, without NumPy:

* an integer is written as one (``3``, not ``3.0`` or ``1e3``) and fits in 64 bits
  (``|n| <= 2**63 - 1``), whatever the option's own range;
* a real number is finite (no ``nan``, ``inf``, nor ``1e400``, which overflows) and is 0 or
  at least ``2.2e-308`` in size, the smallest normal float (``5e-324`` and ``1e-320`` are
  denormal: they lose precision and their reciprocals overflow); ``-0`` reads as ``0``.

A broken rule raises [`NumberError`][cmdp_rl.plumbing.numbers.NumberError], whose message (``must be ...,
got ...``) the caller prefixes with the option's or parameter's name.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

#: the largest integer a user may type: a 64-bit integer (sizes, indices, seeds and counts end up
#: in NumPy int64 arrays)
MAX_INT = 2**63 - 1
#: the smallest positive normal float64, about 2.2e-308
MIN_NORMAL = sys.float_info.min
#: ``MAX_INT`` as messages write it
MAX_INT_TEXT = "2**63 - 1"


class NumberError(ValueError):
    """A typed number broke its rule; the message says which, without naming the option."""


def shown(text: str) -> str:
    """``text`` quoted for a message, shortened to 40 characters."""
    q = repr(text)
    return q if len(q) <= 40 else q[:37] + "..."


def read_int(text: str, minimum: int, maximum: int = MAX_INT, maximum_text: str = MAX_INT_TEXT) -> int:
    """An integer written as one, in ``[minimum, maximum]`` (``maximum`` at most ``MAX_INT``)."""
    rule = "an integer" + (f" >= {minimum}" if minimum > -MAX_INT else "")
    rule += f" and at most {maximum_text}" if maximum < MAX_INT else ""
    try:
        value = int(str(text).strip())
    except ValueError:  # also a float such as 3.0 or 1e3, and more than 4300 digits
        raise NumberError(f"must be {rule}, got {shown(text)}") from None
    if value < minimum:
        raise NumberError(f"must be {rule}, got {shown(text)}")
    if value > maximum:
        raise NumberError(f"must be {rule}, got {shown(text)}, above {maximum_text}")
    return value


def read_real(text: str, rule: str = "a number") -> float:
    """A finite float, 0 or of normal size (module docstring); ``-0`` reads as ``0``. ``rule``
    (e.g. ``"a number >= 0"``) is what messages say the value must be."""
    try:
        value = float(str(text).strip())
    except ValueError:
        raise NumberError(f"must be {rule}, got {shown(text)}") from None
    if not math.isfinite(value):
        raise NumberError(f"must be {rule}, got {shown(text)} (not a finite number)")
    if value != 0.0 and abs(value) < MIN_NORMAL:
        raise NumberError(
            f"must be {rule}, got {shown(text)}: a denormal number (a nonzero value must be at least 2.2e-308 "
            "in size, the smallest normal float)"
        )
    return value + 0.0  # -0.0 + 0.0 is 0.0


def _json_constant(text: str) -> Any:
    raise NumberError(f"must hold finite numbers only, got {text}")


def _json_int(text: str) -> int:
    try:
        return read_int(text, -MAX_INT)
    except NumberError:
        raise NumberError(f"must hold integers of at most {MAX_INT_TEXT} in size, got {shown(text)}") from None


def _json_float(text: str) -> float:
    try:
        return read_real(text)
    except NumberError:
        raise NumberError(
            f"must hold finite numbers, 0 or at least 2.2e-308 in size (the smallest normal float), got {shown(text)}"
        ) from None


def read_json(text: str) -> Any:
    """A JSON value whose numbers obey the rules above (no ``NaN``, ``Infinity``, ``1e400``,
    ``5e-324`` or integers beyond 64 bits)."""
    try:
        return json.loads(text, parse_constant=_json_constant, parse_int=_json_int, parse_float=_json_float)
    except json.JSONDecodeError as exc:
        raise NumberError(f"must be JSON, got {shown(text)} ({exc.msg})") from None


def read_json_object(text: str) -> dict[str, Any]:
    """A JSON object (``read_json``'s rules), such as ``'{"is_slippery": true}'``."""
    value = read_json(text)
    if not isinstance(value, dict):
        raise NumberError(f"must be a JSON object such as '{{\"is_slippery\": true}}', got {shown(text)}")
    return value


__all__ = [
    "MAX_INT",
    "MAX_INT_TEXT",
    "MIN_NORMAL",
    "NumberError",
    "read_int",
    "read_json",
    "read_json_object",
    "read_real",
    "shown",
]
