"""Atomic file output: every file the library writes appears complete or not at all.

A writer gets a temporary path in the destination's own folder; on success the file is
flushed, made an ordinary ``0644`` file and moved into place with ``os.replace`` (atomic on
POSIX); on any failure (including an interrupt) the temporary file is removed and the
destination is untouched.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: prefix of temporary files; a folder scan may delete leftovers with this prefix
TMP_PREFIX = ".tmp-"


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success move it onto ``path``."""
    dest = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX, suffix=".part", dir=dest.parent if str(dest.parent) else ".")
    os.close(fd)
    try:
        yield Path(tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; results are ordinary files
        os.replace(tmp, dest)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` atomically."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_path(path) as tmp:
        tmp.write_bytes(raw)


__all__ = ["TMP_PREFIX", "atomic_path", "write_atomic"]
