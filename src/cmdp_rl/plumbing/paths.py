"""What a path names, and the one check of every option that names an output or an input file.

An output file ([`check_output_path`][cmdp_rl.plumbing.paths.check_output_path]) is a regular file or
a name that does not exist yet, in a folder that exists and can be written into:

* a name ending in ``/`` names a folder, and is refused (it is never taken for the file
  without the slash);
* an existing output that is not a regular file (a folder, a character or block device, a
  FIFO, a socket) is never replaced, even with ``--force``; the one exception is ``/dev/null``
  (or a link to it), which is written to directly, as a user discarding an output expects;
* an existing regular file is replaced only with ``--force``.

An input file ([`check_input_path`][cmdp_rl.plumbing.paths.check_input_path]) must be a regular file: a
folder, a FIFO, a device or ``/dev/stdin`` is refused with what it is (reading a FIFO would
wait for a writer, a device such as ``/dev/zero`` would never end), not as "no such file".

The atomic writers ([`cmdp_rl.plumbing.atomic`][cmdp_rl.plumbing.atomic]) apply the same rule when they write, so
a library call that skipped the check never replaces a device either.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from cmdp_rl.plumbing.errors import CMDPInputError

#: the names of the standard streams under /dev (they are links to whatever the stream is)
_STREAMS = {"/dev/stdin": "standard input", "/dev/stdout": "standard output", "/dev/stderr": "standard error"}


#: the file kinds a message names, in the order ``stat`` tests them
_KINDS = (
    (stat.S_ISREG, "a regular file"),
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
)


def kind(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, as a message says it: ``"a regular file"``,
    ``"a folder"``, ``"a character device"``, ``"a block device"``, ``"a FIFO (named pipe)"``,
    ``"a socket"``, ``"a symbolic link"``."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def describe(path: str | os.PathLike[str], mode: int) -> str:
    """``kind(mode)``, with the stream it stands for when ``path`` is ``/dev/stdin`` and the like
    (e.g. ``"standard input, a FIFO (named pipe)"``)."""
    stream = _STREAMS.get(os.path.normpath(os.fspath(path)))
    return f"{stream}, {kind(mode)}" if stream else kind(mode)


def is_devnull(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is the null device (``/dev/null`` or a link to it)."""
    try:
        return os.path.samefile(path, os.devnull)
    except (OSError, ValueError):
        return False


def ends_in_separator(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` ends in ``/`` (or the platform's other separator): it names a folder."""
    text = os.fspath(path)
    return text.endswith(os.sep) or (os.altsep is not None and text.endswith(os.altsep))


def check_output_path(path: str | os.PathLike[str], option: str, force: bool) -> Path:
    """An output file that can be written (checked before any work): not a name ending in ``/``,
    not an existing folder, device, FIFO or socket (never replaced, even with ``force``;
    ``/dev/null`` is written to directly), an existing regular file only with ``force``, in a
    folder that exists and can be written into. ``option`` as the message names it (``"out"``,
    ``"policy-out"``...).

    Raises:
        CMDPInputError: one line naming ``option``, the path and the rule.
    """
    text = os.fspath(path)
    p = Path(text)
    if ends_in_separator(text):
        raise CMDPInputError(f"{option}: {text} ends in '{text[-1]}', which names a folder; give a file name")
    try:
        st = os.stat(text)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise CMDPInputError(f"{option}: {text}: {exc.strerror or exc}") from None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise CMDPInputError(f"{option}: {text} is a folder; give a file name")
        if not stat.S_ISREG(st.st_mode):
            if is_devnull(text):
                return p  # written to directly: the output is discarded
            raise CMDPInputError(
                f"{option}: {text} is {describe(text, st.st_mode)}, not a regular file, and is never replaced "
                "(not even with --force); give a file name"
            )
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.exists():
        raise CMDPInputError(f"{option}: folder {parent} does not exist")
    if not parent.is_dir():
        raise CMDPInputError(f"{option}: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CMDPInputError(f"{option}: cannot write into {parent} (permission denied)")
    if st is not None and not force:
        raise CMDPInputError(f"{option}: {text} exists; use --force to overwrite it")
    return p


def check_input_path(path: str | os.PathLike[str], label: str, expected: str = "a file") -> None:
    """An input file that can be read: it exists and is a regular file. ``label`` starts the
    message (e.g. ``"policy: p.npy"``), ``expected`` names what was expected (``"an .npz file"``).

    Raises:
        CMDPInputError: ``label: no such file``, or ``label: is a folder, not a file`` /
            ``is a FIFO (named pipe), not a regular file`` and the like (a FIFO would wait for a
            writer, ``/dev/zero`` would never end), or the system's reason (permission denied).
    """
    text = os.fspath(path)
    try:
        st = os.stat(text)
    except FileNotFoundError:
        broken = os.path.islink(text)
        raise CMDPInputError(f"{label}: {'a broken symbolic link' if broken else 'no such file'}") from None
    except OSError as exc:
        raise CMDPInputError(f"{label}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise CMDPInputError(f"{label}: is a folder, not {expected}")
    if not stat.S_ISREG(st.st_mode):
        raise CMDPInputError(f"{label}: is {describe(text, st.st_mode)}, not a regular file; give {expected}")


def is_regular_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` exists and is a regular file (following links)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


__all__ = [
    "check_input_path",
    "check_output_path",
    "describe",
    "ends_in_separator",
    "is_devnull",
    "is_regular_file",
    "kind",
]
