"""The one results-folder helper of every command that writes a folder (``compare``, ``reproduce``,
``study``, ``pg``, ``frontier``), and the lock of ``learn --run-log FILE``.

A results folder ``OUT`` holds:

* ``OUT/config.toml``: the configuration that owns the folder. A run with another configuration
  (execution settings such as ``jobs`` and ``backend`` aside: they do not change the results) is
  refused, naming the settings that differ, unless ``force``; with ``force`` the command's old
  outputs are removed first.
* ``OUT/.lock``: JSON with the ``pid``, ``host``, ``started`` time and ``command`` of the run that
  holds the folder. A second run into the same folder while it is held is refused. A lock left by
  a run that died on this host (its process is gone) is taken over with a warning; a lock of
  another host is never taken over (remove it by hand once that run is known to be gone).
* ``OUT/COMPLETE``: written last, and only after every output is in place: a folder without it is
  incomplete (interrupted, or still running); resumable commands resume it.

Every check happens before anything is written, and a refused run writes nothing. The lock is an
``fcntl`` lock on the lock file, held while the run lasts: the operating system releases it when
the process dies, so a dead run's lock is recognized even if its pid was reused.
"""

from __future__ import annotations

import datetime
import fcntl
import json
import os
import socket
import stat
import sys
import warnings
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cmdp_rl.plumbing.atomic import OutputError, write_atomic
from cmdp_rl.plumbing.errors import CMDPInputError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

CONFIG_NAME, LOCK_NAME, COMPLETE_NAME = "config.toml", ".lock", "COMPLETE"

#: settings that change how a run executes, not what it computes (resuming with more workers is fine)
EXECUTION_KEYS = frozenset({"jobs", "backend", "address"})


class FolderLockedWarning(UserWarning):
    """A lock left by a run that is gone was taken over."""


def check_output_folder(folder: str | os.PathLike[str], option: str = "out") -> None:
    """``folder`` must be a folder or creatable as one, in a writable place (checked before any work).

    Raises:
        CMDPInputError: ``folder`` is an empty name, it or one of its parents is a regular file,
            or the nearest existing parent is not writable.
    """
    if not os.fspath(folder).strip():
        raise CMDPInputError(f"{option}: is empty; give a folder name (e.g. results/run1)")
    out = Path(folder)
    if out.exists() and not out.is_dir():
        from cmdp_rl.plumbing.paths import describe

        raise CMDPInputError(f"{option}: {out} exists and is not a folder: it is {describe(out, out.stat().st_mode)}")
    parent = out
    while not parent.exists():
        if parent.parent == parent:
            break
        parent = parent.parent
    if parent.exists() and not parent.is_dir():
        raise CMDPInputError(f"{option}: cannot create {out}: {parent} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CMDPInputError(f"{option}: cannot write into {parent} (permission denied)")


def check_folder_entries(out: str | os.PathLike[str], outputs: Sequence[str] = (), option: str = "--out") -> None:
    """Every entry a run writes into ``out`` (its ``config.toml``, ``.lock`` and ``COMPLETE``,
    and ``outputs``) that exists must be a regular file or a folder: a device, a FIFO or a socket
    there is never replaced or removed, not even with ``--force`` (and opening a FIFO would wait
    for a writer). The three bookkeeping files must be regular files.

    Raises:
        CMDPInputError: naming ``option`` and the entry, and what it is.
    """
    from cmdp_rl.plumbing.paths import describe

    folder = Path(out)
    if not folder.is_dir():
        return
    for name in (CONFIG_NAME, LOCK_NAME, COMPLETE_NAME, *outputs):
        entry = folder / name
        try:
            mode = os.stat(entry).st_mode
        except OSError:  # missing (or unreadable: the write will say so)
            continue
        if stat.S_ISREG(mode) or (stat.S_ISDIR(mode) and name not in (CONFIG_NAME, LOCK_NAME, COMPLETE_NAME)):
            continue
        raise CMDPInputError(
            f"{option}: {entry} is {describe(entry, mode)}, not a regular file, and is never replaced "
            "(not even with --force); use another folder"
        )


# -- the lock -----------------------------------------------------------------------------------


def _read_lock(fd: int) -> dict[str, Any] | None:
    os.lseek(fd, 0, os.SEEK_SET)
    raw = b""
    while chunk := os.read(fd, 65536):
        raw += chunk
    try:
        info = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return info if isinstance(info, dict) else None


def _holder(info: dict[str, Any] | None) -> str:
    if info is None:
        return "another run"
    return (
        f"another run ({info.get('command', 'cmdp-rl')}, pid {info.get('pid', '?')} on {info.get('host', '?')} "
        f"since {info.get('started', '?')})"
    )


def _in_use(path: Path, info: dict[str, Any] | None, what: str) -> CMDPInputError:
    other = "folder" if path.name == LOCK_NAME else "file"
    return CMDPInputError(f"{what}: is in use by {_holder(info)}; wait for it to finish, or use another {other}")


class Lock:
    """An exclusive lock on ``path`` (a JSON file naming its holder), held until ``release()``.

    Raises (from the constructor):
        CMDPInputError: ``path`` is held by a live run, or by a run of another host.
    """

    def __init__(self, path: Path, command: str, what: str) -> None:
        self.path = path
        host = socket.gethostname()
        while True:
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except OSError as exc:  # a read-only or full file system: one line naming the lock
                raise OutputError(path, exc) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                info = _read_lock(fd)
                os.close(fd)
                raise _in_use(path, info, what) from None
            try:
                same = os.fstat(fd).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if not same:  # the previous holder removed the file after we opened it: start over
                os.close(fd)
                continue
            break
        info = _read_lock(fd)
        if info is not None:  # left behind by a run that ended without releasing it
            if info.get("host") != host:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
                raise CMDPInputError(
                    f"{what}: is locked by {_holder(info)}, another machine: remove {path} once that run is gone"
                )
            # we hold the lock, so its holder released it: that process is gone (its pid may run
            # again, reused by another program; the lock tells, not the pid)
            warnings.warn(
                f"{what}: taking over the lock of {_holder(info)}, which is no longer running",
                FolderLockedWarning,
                stacklevel=2,
            )
        record = {
            "pid": os.getpid(),
            "host": host,
            "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": command,
        }
        self._fd: int | None = fd
        try:
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            raw = (json.dumps(record) + "\n").encode("utf-8")
            if os.write(fd, raw) != len(raw):
                raise OutputError(path, reason="short write")
            # not synced: the fcntl lock, not the file's content, is what excludes a second run
        except OSError as exc:
            self.release()
            raise exc if isinstance(exc, OutputError) else OutputError(path, exc) from None

    def release(self) -> None:
        """Remove the lock file, then release the lock (in that order, so no one locks a removed file)."""
        if self._fd is None:
            return
        try:
            self.path.unlink(missing_ok=True)
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def probe_lock(path: Path, what: str) -> None:
    """Refuse now, before any work, if a live run holds ``path`` (reads only; a lock nobody holds
    is left for [`Lock`][cmdp_rl.plumbing.results_folder.Lock] to take over).

    Raises:
        CMDPInputError: ``path`` is held by a live run.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise _in_use(path, _read_lock(fd), what) from None
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextmanager
def file_lock(path: Path, command: str, what: str) -> Iterator[Lock]:
    """Hold ``path`` (e.g. ``FILE.lock`` beside a run log) for the block; see
    [`Lock`][cmdp_rl.plumbing.results_folder.Lock]."""
    lock = Lock(path, command, what)
    try:
        yield lock
    finally:
        lock.release()


# -- the folder ---------------------------------------------------------------------------------


def _parse(text: str, where: str) -> dict[str, Any]:
    try:
        data: dict[str, Any] = tomllib.loads(text)
        return data
    except tomllib.TOMLDecodeError as exc:
        raise CMDPInputError(f"{where}: is not a valid configuration file ({exc})") from None


def _command_of(text: str) -> str | None:
    """The command named by a config file's first comment line (``# cmdp-rl COMMAND ...``)."""
    first = text.lstrip().split("\n", 1)[0].split()
    return first[2] if len(first) > 2 and first[:2] == ["#", "cmdp-rl"] else None


def _differences(theirs: Mapping[str, Any], ours: Mapping[str, Any], ignore: Collection[str]) -> list[str]:
    def show(v: Any) -> str:
        return "unset" if v is None else (",".join(map(str, v)) if isinstance(v, list) else str(v))

    keys = sorted((set(theirs) | set(ours)) - set(ignore))
    return [f"{k} {show(theirs.get(k))} -> {show(ours.get(k))}" for k in keys if theirs.get(k) != ours.get(k)]


def config_settings(command: str, settings: Mapping[str, Any]) -> str:
    """A command's configuration as the TOML text of a results folder's ``config.toml`` (unset
    settings, ``None``, are left out)."""
    import tomli_w

    return f"# cmdp-rl {command} configuration\n" + tomli_w.dumps({k: v for k, v in settings.items() if v is not None})


def config_differences(
    out: Path, config_toml: str, ignore: Collection[str] = EXECUTION_KEYS, outputs: Sequence[str] = ()
) -> list[str] | None:
    """What differs between ``out/config.toml`` and ``config_toml``: ``None`` when the folder has no
    configuration and none of ``outputs``, ``[]`` when it is the same one.

    Raises:
        CMDPInputError: the folder's ``config.toml`` cannot be read.
    """
    path = out / CONFIG_NAME
    if not path.is_file():
        found = [name for name in outputs if (out / name).exists()]
        return [f"{', '.join(found)} without a config.toml: results of an unknown configuration"] if found else None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CMDPInputError(f"out: cannot read {path} ({exc}); remove it or use --force") from None
    theirs_cmd, ours_cmd = _command_of(text), _command_of(config_toml)
    if theirs_cmd and ours_cmd and theirs_cmd != ours_cmd:
        return [f"command {theirs_cmd} -> {ours_cmd}"]
    try:
        theirs = _parse(text, str(path))
    except CMDPInputError:
        return ["config.toml is not readable"]
    return _differences(theirs, _parse(config_toml, "config"), ignore)


@dataclass
class ResultsFolder:
    """An output folder held by this run (from [`results_folder`][cmdp_rl.plumbing.results_folder.results_folder])."""

    path: Path
    command: str
    done: bool = False

    def complete(self) -> Path:
        """Mark the folder complete: ``COMPLETE`` is written last, after every output."""
        marker = self.path / COMPLETE_NAME
        stamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        write_atomic(marker, json.dumps({"command": self.command, "finished": stamp}) + "\n")
        self.done = True
        return marker


def is_complete(out: str | os.PathLike[str]) -> bool:
    """Whether ``out`` holds a finished run (its ``COMPLETE`` marker)."""
    return (Path(out) / COMPLETE_NAME).is_file()


def check_results_folder(
    out: str | os.PathLike[str],
    config_toml: str,
    *,
    force: bool,
    option: str = "--out",
    ignore: Collection[str] = EXECUTION_KEYS,
    outputs: Sequence[str] = (),
) -> None:
    """Every check of [`results_folder`][cmdp_rl.plumbing.results_folder.results_folder] that needs no lock (writes
    nothing).

    Raises:
        CMDPInputError: the folder is unusable, or holds another configuration's results (without ``force``).
    """
    check_output_folder(out, option.lstrip("-"))
    check_folder_entries(out, outputs, option)
    probe_lock(Path(out) / LOCK_NAME, f"{option} {out}")
    differ = config_differences(Path(out), config_toml, ignore, outputs)
    if differ and not force:
        raise CMDPInputError(
            f"{option}: {out} holds the results of another configuration (differing: {'; '.join(differ)}); "
            "use another folder, or --force to replace them"
        )


@contextmanager
def results_folder(
    out: str | os.PathLike[str],
    config_toml: str,
    *,
    command: str,
    force: bool = False,
    outputs: Sequence[str] = (),
    option: str = "--out",
    ignore: Collection[str] = EXECUTION_KEYS,
    under_lock: Callable[[bool], None] | None = None,
) -> Iterator[ResultsFolder]:
    """Hold ``out`` for one run of ``command`` with the configuration ``config_toml`` (TOML text whose
    first line is ``# cmdp-rl COMMAND ...``): check, lock, write the configuration, yield; the
    caller writes its outputs and calls
    [`ResultsFolder.complete`][cmdp_rl.plumbing.results_folder.ResultsFolder.complete] last.

    ``outputs``: the command's output files and folders (relative to ``out``), removed when
    ``force`` replaces another configuration's results. ``under_lock(check_only)``: the command's
    own checks of the folder's contents (e.g. its finished runs), called with ``True`` before the
    lock is taken (read-only: refuse if needed) and with ``False`` under the lock, before anything
    is written (then it may also clean up, e.g. remove runs of another configuration with ``force``).

    Raises:
        CMDPInputError: the folder is unusable, holds another configuration's results (without
            ``force``), or is held by another run; nothing is written then.
    """
    check_results_folder(out, config_toml, force=force, option=option, ignore=ignore, outputs=outputs)
    if under_lock is not None:
        under_lock(True)
    path = Path(out)
    created = not path.exists()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise CMDPInputError(f"{option}: {path} exists and is not a folder") from None
    except OSError as exc:  # a read-only or full file system: one line naming the folder
        raise OutputError(path, exc) from None
    try:
        lock = Lock(path / LOCK_NAME, f"cmdp-rl {command}", f"{option} {path}")
    except BaseException:
        if created:
            _remove_empty(path)
        raise
    claimed = False
    try:
        # again under the lock: a run that finished meanwhile may have written its configuration
        differ = config_differences(path, config_toml, ignore, outputs)
        if differ and not force:
            raise CMDPInputError(
                f"{option}: {path} holds the results of another configuration (differing: {'; '.join(differ)}); "
                "use another folder, or --force to replace them"
            )
        if under_lock is not None:
            under_lock(False)
        claimed = True
        (path / COMPLETE_NAME).unlink(missing_ok=True)
        if differ:  # --force: the other configuration's outputs go first
            _remove(path, outputs)
        write_atomic(path / CONFIG_NAME, config_toml)
        yield ResultsFolder(path, command)
    finally:
        lock.release()
        if created and not claimed:  # refused under the lock: the folder this run made goes again
            _remove_empty(path)


def _remove(path: Path, outputs: Sequence[str]) -> None:
    import shutil

    for name in outputs:
        target = path / name
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        else:
            target.unlink(missing_ok=True)


def _remove_empty(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass


__all__ = [
    "COMPLETE_NAME",
    "CONFIG_NAME",
    "EXECUTION_KEYS",
    "LOCK_NAME",
    "FolderLockedWarning",
    "Lock",
    "ResultsFolder",
    "check_folder_entries",
    "check_output_folder",
    "check_results_folder",
    "config_differences",
    "config_settings",
    "file_lock",
    "is_complete",
    "probe_lock",
    "results_folder",
]
