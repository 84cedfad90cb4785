"""Problem specs: ``NAME`` or ``NAME:key=value,key=value`` (the grammar the registry's docstring
describes), read into a name and typed parameters before anything is built
([`make`][cmdp_rl.envs.registry.make] and [`problem_sizes`][cmdp_rl.envs.registry.problem_sizes] read
them)."""

from __future__ import annotations

from typing import Any

import numpy as np

from cmdp_rl.plumbing.numbers import MAX_INT, NumberError, read_int, read_json, read_real
from cmdp_rl.plumbing.validation import CMDPInputError


def parse_value(problem: str, key: str, text: str, default: Any) -> Any:
    """An override's text with the type of its default: an integer typed as one within 64 bits, a
    finite real of normal size (``-0`` is 0), a bool, or JSON for a list (``cmdp_rl.plumbing.numbers``' rules)."""
    kind = type(default)
    try:
        if isinstance(default, bool):
            if text.lower() not in ("true", "false", "1", "0"):
                raise ValueError(text)
            return text.lower() in ("true", "1")
        if isinstance(default, int):
            return read_int(text, -MAX_INT)
        if isinstance(default, float):
            return read_real(text)
        if isinstance(default, (list, tuple)) or default is None:
            return read_json(text) if text[:1] in "[{" else _number(text)
        return kind(text)
    except NumberError as exc:
        raise CMDPInputError(f"{problem}: parameter {key} {exc}") from None
    except (TypeError, ValueError):
        raise CMDPInputError(
            f"{problem}: parameter {key}={text!r} must be a {kind.__name__} (default {default!r})"
        ) from None


def _number(text: str) -> Any:
    """An integer, else a real number (``parse_value``'s rules), else the text itself."""
    for read in (lambda t: read_int(t, -MAX_INT), read_real):
        try:
            return read(text)
        except NumberError:
            pass
    return text


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """``"name:k=v,k2=v2"`` -> ``("name", {"k": "v", "k2": "v2"})`` (values still text)."""
    if not isinstance(spec, str) or not spec.strip():
        raise CMDPInputError(f"problem: expected a name such as 1a or garnet:S=50,seed=1, got {spec!r}")
    name, _, rest = spec.strip().partition(":")
    if not name.strip():
        raise CMDPInputError(f"problem: expected a name before the overrides, such as garnet:S=50,seed=1, got {spec!r}")
    overrides: dict[str, str] = {}
    if rest:
        for item in rest.split(","):
            key, eq, value = item.partition("=")
            if not eq or not key.strip() or not value.strip():
                raise CMDPInputError(f"{name}: expected key=value overrides separated by commas, got {item!r}")
            if key.strip() in overrides:
                raise CMDPInputError(f"{name}: parameter {key.strip()!r} given twice")
            overrides[key.strip()] = value.strip()
    return name, overrides


def parse_thresholds(problem: str, text: str, N: int) -> np.ndarray:
    """The ``c_bar`` override of ``problem``: one number for every one of the ``N`` constraints, or
    ``N`` numbers separated by ``/``."""
    parts = text.split("/")
    try:
        values = np.array([read_real(x, "a number or numbers separated by '/'") for x in parts])
    except NumberError as exc:
        raise CMDPInputError(f"{problem}: c_bar {exc}") from None
    if values.size == 1:
        return np.full(N, values[0])
    if values.size != N:
        raise CMDPInputError(f"{problem}: c_bar: {values.size} values given for {N} constraints")
    return values


__all__ = ["parse_spec", "parse_thresholds", "parse_value"]
