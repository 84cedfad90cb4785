"""Per-run result files: atomic writes, validation on load, resume.

Each finished run is one JSON file ``<runs_dir>/<scenario>__<algorithm>__<run:03d>.json``
written to a temporary file in the same folder and moved into place with
``os.replace``, so a file either is complete or does not exist (an interrupted
write leaves only a ``.tmp-*`` file, removed on the next start).

Every file stores a SHA-256 checksum of its own content (canonical JSON without the
``checksum`` field). On load a file is *corrupt* when it cannot be parsed, is
structurally wrong or fails its checksum (it was altered after it was written): it is
reported with a [`RunFileWarning`][cmdp_rl.experiments.store.RunFileWarning], deleted and rerun, never aggregated. A
file is *stale* when it is a complete run of a different
specification (different budgets, delta, ...): that is an error, because
silently deleting finished runs of another configuration could destroy hours
of work; use a fresh output folder instead.
"""

from __future__ import annotations

import hashlib
import json
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cmdp_rl.experiments.runner import RUN_FORMAT, RunRecord, RunSpec
from cmdp_rl.plumbing.atomic import TMP_PREFIX, write_atomic
from cmdp_rl.plumbing.decoding import detail
from cmdp_rl.plumbing.validation import CMDPInputError, plain


class CorruptRunFile(Exception):
    """A run file that is unreadable, malformed or altered (it is deleted and rerun)."""


class RunFileWarning(UserWarning):
    """A run file failed its checksum (altered after it was written): it is rerun, never aggregated."""


def run_path(runs_dir: Path, spec: RunSpec) -> Path:
    """Where ``spec``'s result lives."""
    return runs_dir / f"{spec.run_id}.json"


def _checksum(content: dict[str, Any]) -> str:
    """SHA-256 of the record's canonical JSON (sorted keys, no spaces), without the checksum field."""
    body = {k: v for k, v in content.items() if k != "checksum"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


def save_record(runs_dir: Path, record: RunRecord) -> Path:
    """Write one run's record atomically; returns its path."""
    path = run_path(runs_dir, record.spec)
    content = record.to_json_dict()
    content["checksum"] = _checksum(content)
    write_atomic(path, json.dumps(content, separators=(",", ":")) + "\n")
    return path


def _check_columns(spec: RunSpec, cols: Any) -> dict[str, tuple[Any, ...]]:
    if not isinstance(cols, dict) or set(cols) != set(spec.columns):
        raise CorruptRunFile("columns do not match the run's algorithm")
    out: dict[str, tuple[Any, ...]] = {}
    for name in spec.columns:
        vals = cols[name]
        if not isinstance(vals, list) or len(vals) != spec.n_points:
            raise CorruptRunFile(f"column {plain(name)} has the wrong length")
        if name == "elp_status":
            if not all(isinstance(v, str) for v in vals):
                raise CorruptRunFile("elp_status must hold strings")
        elif name == "first_departure":  # an episode number, or null before the learner departs
            if not all(v is None or (type(v) is int and v >= 1) for v in vals):
                raise CorruptRunFile("first_departure must hold episode numbers or null")
        elif not all(_finite_number(v) for v in vals):
            raise CorruptRunFile(f"column {plain(name)} must hold finite numbers")
        out[name] = tuple(vals)
    return out


def _finite_number(v: Any) -> bool:
    """A JSON number (not a bool) that is finite as a float."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    try:
        return math.isfinite(v)
    except OverflowError:  # an integer beyond any float
        return False


def load_record(path: Path, expected: RunSpec) -> RunRecord:
    """Read and validate the run file at ``path`` against ``expected``.

    Raises:
        CorruptRunFile: unreadable, not JSON, wrong format tag or malformed columns.
        CMDPInputError: a complete record of a *different* run specification.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:  # unreadable, not UTF-8, not JSON, nested too deeply
        raise CorruptRunFile(f"unreadable ({detail(exc)})") from None
    if not isinstance(data, dict) or data.get("format") != RUN_FORMAT:
        raise CorruptRunFile("missing or unknown format tag")
    if data.get("checksum") != _checksum(data):
        raise CorruptRunFile("checksum mismatch: the file was altered after it was written")
    try:
        if not isinstance(data["spec"], dict):
            raise TypeError("spec is not an object")
        spec = RunSpec.from_dict(data["spec"])
        v_star = float(data["v_star"])
        seconds = float(data.get("seconds", float("nan")))
        version = str(data.get("version", ""))
        timing = {str(k): float(v) for k, v in dict(data.get("timing", {})).items()}
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        raise CorruptRunFile(f"malformed spec ({detail(exc)})") from None
    if spec != expected:
        diff = [k for k, v in expected.to_dict().items() if spec.to_dict().get(k) != v]
        raise CMDPInputError(
            f"{path}: holds a finished run of a different configuration (differs in "
            f"{', '.join(diff)}); use a fresh output folder, or --force to replace them"
        )
    return RunRecord(spec, _check_columns(spec, data.get("columns")), v_star, seconds, version, timing)


@dataclass(frozen=True)
class ScanResult:
    """State of a runs folder against a list of specs.

    Attributes:
        done: valid records found, in spec order.
        todo: specs with no valid record, in spec order.
        removed: corrupt files that were deleted (their runs are in ``todo``).
    """

    done: tuple[RunRecord, ...]
    todo: tuple[RunSpec, ...]
    removed: tuple[Path, ...]


def scan(runs_dir: Path, specs: list[RunSpec]) -> ScanResult:
    """Create ``runs_dir`` if needed, remove leftover temp files, and sort specs into done/todo.

    Corrupt files ([`CorruptRunFile`][cmdp_rl.experiments.store.CorruptRunFile]) are deleted and their runs listed in
    ``todo``.

    Raises:
        CMDPInputError: ``runs_dir`` is not a folder, or holds a run of another configuration.
    """
    if runs_dir.exists() and not runs_dir.is_dir():
        raise CMDPInputError(f"out: {runs_dir} exists and is not a folder")
    runs_dir.mkdir(parents=True, exist_ok=True)
    for tmp in runs_dir.glob(TMP_PREFIX + "*"):
        tmp.unlink(missing_ok=True)
    done: list[RunRecord] = []
    todo: list[RunSpec] = []
    removed: list[Path] = []
    for spec in specs:
        path = run_path(runs_dir, spec)
        if not path.exists():
            todo.append(spec)
            continue
        try:
            done.append(load_record(path, spec))
        except CorruptRunFile as exc:
            warnings.warn(f"{path}: {exc}; the run is redone", RunFileWarning, stacklevel=2)
            path.unlink(missing_ok=True)
            removed.append(path)
            todo.append(spec)
    return ScanResult(tuple(done), tuple(todo), tuple(removed))


def check_compatible(runs_dir: Path, specs: list[RunSpec], force: bool = False) -> list[Path]:
    """Refuse (before anything is written) a runs folder holding finished runs of another configuration.

    Reads only; corrupt files are left for [`scan`][cmdp_rl.experiments.store.scan]. With ``force`` the stale files
    are deleted instead (``--force``: the explicit way to overwrite) and returned.

    Raises:
        CMDPInputError: ``runs_dir`` is not a folder, or (without ``force``) holds a run of
            another configuration.
    """
    if not runs_dir.exists():
        return []
    if not runs_dir.is_dir():
        raise CMDPInputError(f"out: {runs_dir} exists and is not a folder")
    stale: list[Path] = []
    for spec in specs:
        path = run_path(runs_dir, spec)
        if not path.is_file():
            continue
        try:
            load_record(path, spec)
        except CorruptRunFile:
            continue
        except CMDPInputError:
            if not force:
                raise
            stale.append(path)
    for path in stale:
        path.unlink(missing_ok=True)
    return stale


def runs_check(folders: list[tuple[Path, list[RunSpec]]], force: bool) -> Callable[[bool], None]:
    """The ``under_lock`` check of a sweep's results folder (``cmdp_rl.plumbing.results_folder``): before the
    lock (``check_only``) it refuses runs of another configuration in any of ``folders``; under the
    lock it checks again and, with ``force``, deletes them
    ([`check_compatible`][cmdp_rl.experiments.store.check_compatible])."""

    def check(check_only: bool) -> None:
        if check_only and force:
            return
        for runs_dir, specs in folders:
            check_compatible(runs_dir, specs, force=force)

    return check


def load_all(runs_dir: Path, specs: list[RunSpec]) -> list[RunRecord]:
    """Every record of ``specs`` (all must exist and be valid), in spec order.

    Raises:
        CMDPInputError: a run file is missing, corrupt or of another configuration.
    """
    out = []
    for spec in specs:
        path = run_path(runs_dir, spec)
        try:
            out.append(load_record(path, spec))
        except CorruptRunFile as exc:
            raise CMDPInputError(f"{path}: run file is corrupt ({exc})") from None
    return out


__all__ = [
    "CorruptRunFile",
    "RunFileWarning",
    "ScanResult",
    "check_compatible",
    "load_all",
    "load_record",
    "run_path",
    "save_record",
    "scan",
    "write_atomic",
]
