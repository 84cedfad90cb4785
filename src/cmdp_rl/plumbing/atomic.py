"""Atomic file output: every file the library writes appears complete or not at all.

A destination that exists and is not a regular file (a folder, a device, a FIFO, a socket) is
never replaced, and a name ending in ``/`` is refused ([`OutputError`][cmdp_rl.plumbing.atomic.OutputError]);
``/dev/null`` is written to directly ([`cmdp_rl.plumbing.paths`][cmdp_rl.plumbing.paths]).

A writer gets a temporary path in the destination's own folder; on success the file is
flushed, made an ordinary ``0644`` file and moved into place with ``os.replace`` (atomic on
POSIX); on any failure (including an interrupt) the temporary file is removed and the
destination is untouched.

A write that fails (a full disk ``ENOSPC``, a file-size limit ``EFBIG``, a quota ``EDQUOT``, a
read-only file system ``EROFS``, an I/O error ``EIO``, a short write, a folder that cannot be
written into) raises [`OutputError`][cmdp_rl.plumbing.atomic.OutputError], one line naming the
destination (never the temporary file) and the system's reason: the command line's exit 2. A
file that is appended to (a run log, [`append_line`][cmdp_rl.plumbing.atomic.append_line]) cannot be
replaced atomically: a failed append is cut back to the file's previous size.

The command line ignores ``SIGXFSZ`` ([`ignore_file_size_signal`][cmdp_rl.plumbing.atomic.ignore_file_size_signal]),
so that a write beyond ``ulimit -f`` fails with ``EFBIG`` (and the message above) instead of
killing the process.
"""

from __future__ import annotations

import os
import signal
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from cmdp_rl.plumbing.errors import CMDPInputError
from cmdp_rl.plumbing.paths import describe, ends_in_separator, is_devnull

#: prefix of temporary files; a folder scan may delete leftovers with this prefix
TMP_PREFIX = ".tmp-"


class OutputError(CMDPInputError, OSError):
    """A file could not be written: ``cannot write FILE: <the system's reason>``.

    Both a [`CMDPInputError`][cmdp_rl.plumbing.errors.CMDPInputError] (the command line's exit 2, one line)
    and an ``OSError`` (``errno``, ``strerror`` and ``filename`` are those of the failure, the
    filename the destination's)."""

    def __init__(self, path: str | os.PathLike[str], exc: BaseException | None = None, reason: str | None = None):
        errno = exc.errno if isinstance(exc, OSError) else None
        why = reason or (exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc))
        OSError.__init__(self, errno, why, os.fspath(path))
        self.args = (f"cannot write {os.fspath(path)}: {why}",)

    def __str__(self) -> str:
        return str(self.args[0])

    def __reduce__(self) -> tuple[object, ...]:  # keeps the message through a worker process's pickle
        return (_rebuild, (self.filename, self.errno, self.strerror))


def _rebuild(path: str, errno: int | None, why: str) -> OutputError:
    return OutputError(path, OSError(errno, why) if errno is not None else None, why)


def ignore_file_size_signal() -> None:
    """Ignore ``SIGXFSZ`` (where it exists, from the main thread): a write beyond the file-size
    limit (``ulimit -f``, ``RLIMIT_FSIZE``) then fails with ``EFBIG``, which the writers report,
    instead of killing the process without a word."""
    sig = getattr(signal, "SIGXFSZ", None)
    if sig is None:
        return
    try:
        signal.signal(sig, signal.SIG_IGN)
    except ValueError:  # not the main thread
        pass


def _writes_directly(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is the null device (written to directly, no temporary file); refuse a
    destination that ends in ``/`` or exists and is not a regular file: a folder, a device, a FIFO
    or a socket is never replaced ([`cmdp_rl.plumbing.paths`][cmdp_rl.plumbing.paths]).

    Raises:
        OutputError: as above, naming ``path`` and what it is.
    """
    if ends_in_separator(path):
        raise OutputError(path, reason="the name ends in '/', which names a folder, not a file")
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as exc:
        raise OutputError(path, exc) from None
    if stat.S_ISREG(mode):
        return False
    if is_devnull(path):
        return True
    raise OutputError(path, reason=f"it is {describe(path, mode)}, not a regular file, and is never replaced")


def _copy(src: Path, dest: Path) -> None:
    """``src``'s bytes written to ``dest`` as it is (the null device), in 1 MiB chunks."""
    with open(src, "rb") as fin, open(dest, "wb") as fout:
        while chunk := fin.read(2**20):
            fout.write(chunk)


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success move it onto ``path``.

    Raises:
        OutputError: the temporary file could not be created, written, flushed or moved into
            place (naming ``path`` and the system's reason); the temporary file is removed and
            ``path`` is untouched.
    """
    dest = Path(path)
    # the null device is written to directly (from a temporary file in the system's temporary
    # folder, so that writers that seek, such as a zip archive's, work as on a file)
    null = _writes_directly(path)
    folder = None if null else (dest.parent if str(dest.parent) else ".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX, suffix=".part", dir=folder)
    except OSError as exc:
        raise OutputError(dest, exc) from None
    os.close(fd)
    try:
        yield Path(tmp)
        if null:
            _copy(Path(tmp), dest)
            os.unlink(tmp)
            return
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; results are ordinary files
        _writes_directly(path)  # again just before the move: a device made meanwhile is not replaced
        os.replace(tmp, dest)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError) and not isinstance(exc, OutputError):
            raise OutputError(dest, exc) from None
        raise


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` atomically.

    Raises:
        OutputError: the write failed or was cut short (the destination is untouched).
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            written = fh.write(raw)
        if written != len(raw) or tmp.stat().st_size != len(raw):
            raise OutputError(path, reason=f"short write ({tmp.stat().st_size:,} of {len(raw):,} bytes)")


class _Sink:
    """A write-only binary stream over ``fh`` that counts the bytes written. NumPy writes an
    array to a real file object with C ``fwrite`` (``ndarray.tofile``), which loses the error of a
    write cut short by a full disk or a file-size limit; through ``write()`` every error raises."""

    def __init__(self, fh: IO[bytes]) -> None:
        self.fh = fh
        self.count = 0

    def write(self, data: bytes | bytearray | memoryview) -> int:
        n = self.fh.write(data)
        size = memoryview(data).nbytes
        if n is not None and n != size:
            raise OSError(0, f"short write ({n:,} of {size:,} bytes)")
        self.count += size
        return size

    def flush(self) -> None:
        self.fh.flush()


@contextmanager
def atomic_stream(path: str | os.PathLike[str]) -> Iterator[IO[bytes]]:
    """A binary stream (``write`` and ``flush`` only) whose bytes land on ``path`` atomically;
    for writers such as ``numpy.save`` (which writes a real file with C ``fwrite``, losing a
    short write's error): every write goes through Python, and the file's final size is checked
    against the bytes written.

    Raises:
        OutputError: the write failed or was cut short (the destination is untouched).
    """
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            sink = _Sink(fh)
            yield sink  # type: ignore[misc]
        size = tmp.stat().st_size
        if size != sink.count:
            raise OutputError(path, reason=f"short write ({size:,} of {sink.count:,} bytes)")


def append_line(fh: IO[bytes], path: str | os.PathLike[str], line: str) -> None:
    """Append ``line`` (text, UTF-8) to the unbuffered binary file ``fh`` open on ``path`` in
    append mode, and flush it to disk; on any failure (or a short write) cut the file back to its
    size before, so that it never ends in a partial line.

    Raises:
        OutputError: the append failed (naming ``path`` and the system's reason).
    """
    raw = line.encode("utf-8")
    fd = fh.fileno()
    before = os.fstat(fd).st_size
    try:
        done = 0
        while done < len(raw):
            n = os.write(fd, raw[done:])
            if n <= 0:
                raise OutputError(path, reason=f"short write ({done:,} of {len(raw):,} bytes)")
            done += n
        if stat.S_ISREG(os.fstat(fd).st_mode):  # /dev/null: nothing to sync (fsync says EINVAL)
            os.fsync(fd)
    except BaseException as exc:
        try:
            os.ftruncate(fd, before)
        except OSError:
            pass
        if isinstance(exc, OSError) and not isinstance(exc, OutputError):
            raise OutputError(path, exc) from None
        raise


__all__ = [
    "TMP_PREFIX",
    "OutputError",
    "append_line",
    "atomic_path",
    "atomic_stream",
    "ignore_file_size_signal",
    "write_atomic",
]
