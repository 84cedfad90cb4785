"""Damaged files: what a library's decoder raises on bad bytes, turned into one line.

NumPy, SciPy, ``zipfile``/``zlib``, ``json``, ``tomllib``, ``csv`` and pandas/pyarrow raise many
exception types on a truncated or garbled file: ``ValueError``, ``EOFError``, ``OSError``,
``zipfile.BadZipFile``, ``zlib.error``, ``NotImplementedError`` (an unknown compression method),
``RuntimeError`` (a member flagged as encrypted), tokenizer errors from an ``.npy`` header,
``UnicodeDecodeError``, ``MemoryError`` (a header that declares a huge array), ``RecursionError``
(deeply nested JSON), ``KeyError`` (a missing archive member), ... Every reader of the library
calls its decoder inside [`decoding`][cmdp_rl.plumbing.decoding.decoding], which turns exactly
``DECODE_ERRORS`` into a one-line
[`CMDPInputError`][cmdp_rl.plumbing.errors.CMDPInputError] that names the file (and the key or line the
reader knows). The net is as narrow as the call it wraps: a reader's own checks of what it
decoded come after it and say what is wrong in their own words.
"""

from __future__ import annotations

import csv
import struct
import tokenize
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager

from cmdp_rl.plumbing.errors import CMDPInputError

#: the exceptions a decoder raises on damaged bytes (``CMDPInputError``, a ``ValueError``, passes through)
DECODE_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    ValueError,
    TypeError,
    KeyError,
    IndexError,
    EOFError,
    NotImplementedError,
    RuntimeError,
    MemoryError,
    SyntaxError,
    zipfile.BadZipFile,
    zlib.error,
    struct.error,
    csv.Error,
    tokenize.TokenError,
)

#: longest library message quoted in a refusal
MAX_DETAIL = 120


def detail(exc: BaseException) -> str:
    """The library's message of ``exc`` on one line, shortened, control characters escaped (a
    message may quote the damaged bytes): for the parenthesis of a refusal."""
    text = " ".join(str(exc).split()) or "damaged data"
    text = text if len(text) <= MAX_DETAIL else text[: MAX_DETAIL - 3] + "..."
    return text if text.isprintable() else text.encode("unicode_escape").decode("ascii")


@contextmanager
def decoding(where: str, what: str = "unreadable or damaged") -> Iterator[None]:
    """Run a library's decoder: any of ``DECODE_ERRORS`` becomes the one-line
    ``CMDPInputError("{where}: {what} ({library message})")``; ``where`` names the file (and key or line)."""
    try:
        yield
    except CMDPInputError:
        raise
    except DECODE_ERRORS as exc:
        raise CMDPInputError(f"{where}: {what} ({detail(exc)})") from None


def line_of(raw: bytes, offset: int) -> int:
    """The 1-based line of byte ``offset`` of ``raw`` (as an editor shows it)."""
    return raw.count(b"\n", 0, offset) + 1


def utf8_text(raw: bytes, where: str) -> str:
    """``raw`` decoded as UTF-8 (a leading byte-order mark dropped); a byte that is not UTF-8 is a
    one-line ``CMDPInputError`` naming ``where`` and the byte's line."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CMDPInputError(
            f"{where}: line {line_of(raw, exc.start)}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset "
            f"{exc.start}; a binary or damaged file?)"
        ) from None


__all__ = ["DECODE_ERRORS", "MAX_DETAIL", "decoding", "detail", "line_of", "utf8_text"]
