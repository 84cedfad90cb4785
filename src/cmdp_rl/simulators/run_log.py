"""The run log of [`learn`][cmdp_rl.simulators.learning.learn]: one JSON line per episode, read back to resume.

Format: line 1 is ``{"config": {...}}`` (the run's arguments), then one line per finished episode
in order from 0, ``{"episode": k, "state": [...], "action": [...], "next_state": [...], "reward":
[...], "costs": [[...], ...]}`` (a step into the absorbing state has ``next_state = S``), and
``{"complete": true}`` after the run's last episode.

Resume ([`read_run_log`][cmdp_rl.simulators.run_log.read_run_log]): an incomplete last line (the file
ends without a newline: a write was interrupted) is dropped with a
[`RunLogWarning`][cmdp_rl.simulators.run_log.RunLogWarning] and cut off the file, so appending continues
cleanly; any other damage (a line that is not JSON, a header of another run, a line that parses but
breaks the format, the order or the environment's sizes) is a one-line
[`CMDPInputError`][cmdp_rl.plumbing.errors.CMDPInputError] naming the file and the line, and the file is left
as it was.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.envs.making import env_attribute
from cmdp_rl.evaluation.mixture import MixturePolicy
from cmdp_rl.planning.mixture_table import deterministic_table
from cmdp_rl.plumbing.atomic import OutputError, append_line
from cmdp_rl.plumbing.errors import one_line
from cmdp_rl.plumbing.validation import CMDPInputError

Array = NDArray[np.float64]
#: one episode's ``(states, actions, next_states, rewards, costs)``, one entry per step taken
Steps = tuple[list[int], list[int], list[int], list[float], list[Array]]
#: the keys of an episode line
EPISODE_KEYS = frozenset({"episode", "state", "action", "next_state", "reward", "costs"})


class RunLogWarning(UserWarning):
    """An incomplete last line of a run log (an interrupted write) was dropped on resume."""


@dataclass(frozen=True)
class RunShape:
    """What the logged episodes of a run must fit: the environment's ``S`` states (``S`` itself
    is the absorbing state), ``A`` actions, ``N`` costs, ``H`` steps, ``K`` episodes and the
    known start state ``s0`` (``None``: any)."""

    S: int
    A: int
    N: int
    H: int
    K: int
    s0: int | None


def config_digest(arr: Any, A: int = 0) -> str | None:
    """A short hash of an array of the configuration (known ``r``, ``c``, a baseline), or ``None``. A
    compact baseline ([`MixturePolicy`][cmdp_rl.evaluation.mixture.MixturePolicy]): its columns' and
    weights' hashes; one deterministic policy's is its one-hot ``(H, S, A)`` table's (what it was
    played as before mixtures were, so older run logs resume; ``A``: the environment's actions)."""
    if arr is None:
        return None
    if isinstance(arr, MixturePolicy):
        used = arr.columns[arr.weights > 0.0]
        if (used == used[0]).all():
            return config_digest(deterministic_table(arr, max(A, int(used.max()) + 1), "baseline"))
        return f"{config_digest(arr.columns)}:{config_digest(arr.weights)}"
    a = np.ascontiguousarray(np.asarray(arr, dtype=np.float64))
    return hashlib.sha256(a.tobytes() + str(a.shape).encode()).hexdigest()[:16]


def env_name(env: Any) -> str:
    """The environment's name in the configuration: its id, its spec's id or its type's name."""
    if isinstance(env, str):
        return env
    spec = env_attribute(env, "spec", "env", None)
    return one_line(str(env_attribute(spec, "id", "env", None) or type(env).__name__))


def read_run_log(path: Path, config: Mapping[str, Any], shape: RunShape) -> tuple[list[Steps], bool]:
    """The logged episodes of the run log at ``path`` (empty when it is absent or empty) and
    whether the run is complete, every line checked (module docstring).

    Raises:
        CMDPInputError: one line naming the file and line: not JSON, no header, a run of other
            settings, an episode line out of order, malformed or outside the environment, a
            line after the end of the run.
    """
    if not path.exists() or path.stat().st_size == 0:
        return [], False
    raw = path.read_bytes()
    body, newline, tail = raw.rpartition(b"\n")  # tail: an incomplete last line (no newline), or b""
    lines = body.split(b"\n") if newline else []
    episodes: list[Steps] = []
    complete = False
    for i, line in enumerate(lines, start=1):
        where = f"run_log: {path} line {i}"
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, not UTF-8, nested too deeply
            raise CMDPInputError(f"{where}: not JSON (not a run log of learn, or a damaged one)") from None
        if i == 1:
            _check_header(row, config, where)
        elif complete:
            raise CMDPInputError(f'{where}: a line after the end of the run ({{"complete": true}} on line {i - 1})')
        elif isinstance(row, dict) and set(row) == {"complete"}:
            if row["complete"] is not True or len(episodes) != shape.K:
                raise CMDPInputError(f"{where}: marks the run complete after {len(episodes)} of its {shape.K} episodes")
            complete = True
        else:
            episodes.append(_episode(row, len(episodes), shape, where))
    if tail:
        os.truncate(path, len(raw) - len(tail))  # drop the partial line: appending continues cleanly
        after = f"after {len(episodes)} logged episode(s)" if lines else "from the start"
        warnings.warn(
            f"run_log: {path} line {len(lines) + 1} was incomplete (an interrupted write) and is dropped; "
            f"resuming {after}",
            RunLogWarning,
            stacklevel=3,
        )
    return episodes, complete


def _check_header(row: Any, config: Mapping[str, Any], where: str) -> None:
    """Line 1: ``{"config": {...}}`` with this run's configuration."""
    if not isinstance(row, dict) or set(row) != {"config"} or not isinstance(row["config"], dict):
        raise CMDPInputError(f'{where}: not a run log header {{"config": {{...}}}} (not a run log of learn)')
    theirs = json.loads(json.dumps(row["config"]))
    if "algo" in theirs and "algorithm" not in theirs:  # a log written before issue 34's renaming
        theirs["algorithm"] = theirs.pop("algo")
    ours = json.loads(json.dumps(config))
    if theirs != ours:
        differ = sorted(k for k in set(theirs) | set(ours) if theirs.get(k) != ours.get(k))
        raise CMDPInputError(
            f"{where}: holds a run with other settings (differing: {', '.join(differ)}); remove it or give another path"
        )


def _numbers(value: Any, kinds: str, ndim: int) -> NDArray[Any] | None:
    """``value`` as an array of ``ndim`` dimensions whose dtype kind is in ``kinds``, or ``None``."""
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError, OverflowError):  # ragged lists, integers beyond int64
        return None
    return arr if arr.ndim == ndim and arr.dtype.kind in kinds else None


def _episode(row: Any, k: int, shape: RunShape, where: str) -> Steps:
    """The steps of episode line ``row``, which must be episode ``k`` of a run of ``shape``."""
    if not isinstance(row, dict) or set(row) != EPISODE_KEYS:
        raise CMDPInputError(f"{where}: not an episode line (the keys {sorted(EPISODE_KEYS)})")
    if type(row["episode"]) is not int or row["episode"] != k:
        raise CMDPInputError(f"{where}: episode {row['episode']!r} where episode {k} was expected (in order from 0)")
    where = f"{where} (episode {k})"
    st, ac, nx = (_numbers(row[key], "iu", 1) for key in ("state", "action", "next_state"))
    rew = _numbers(row["reward"], "iuf", 1)
    costs = _numbers(row["costs"], "iuf", 2)  # (steps, N); N = 0 is [[], ...], an empty float array
    if st is None or ac is None or nx is None or rew is None or costs is None:
        raise CMDPInputError(
            f"{where}: state, action and next_state must be lists of integers, reward a list of numbers, "
            "costs a list of lists of numbers"
        )
    n = st.size
    if not 1 <= n <= shape.H or not (ac.size == nx.size == rew.size == costs.shape[0] == n):
        raise CMDPInputError(f"{where}: its lists must hold one entry per step, 1 to H = {shape.H} steps")
    if costs.shape[1] != shape.N:
        raise CMDPInputError(f"{where}: each step must have {shape.N} cost(s), got {costs.shape[1]}")
    values = np.concatenate([rew.astype(np.float64), costs.astype(np.float64).ravel()])
    if not np.all(np.isfinite(values) & (values >= 0.0) & (values <= 1.0)):
        raise CMDPInputError(f"{where}: rewards and costs must be numbers in [0, 1]")
    S, A = shape.S, shape.A
    if np.any((st < 0) | (st >= S)) or np.any((ac < 0) | (ac >= A)) or np.any((nx < 0) | (nx > S)):
        raise CMDPInputError(f"{where}: a state, action or next state outside the environment (S = {S}, A = {A})")
    if np.any(st[1:] != nx[:-1]) or np.any(nx[:-1] == S) or (n < shape.H and nx[-1] != S):
        raise CMDPInputError(
            f"{where}: not one episode (each state is the previous step's next state; an episode shorter than "
            f"H = {shape.H} ends in the absorbing state {S})"
        )
    if shape.s0 is not None and st[0] != shape.s0:
        raise CMDPInputError(f"{where}: starts in state {int(st[0])}, not s0 = {shape.s0}")
    return st.tolist(), ac.tolist(), nx.tolist(), rew.astype(np.float64).tolist(), list(costs.astype(np.float64))


def open_run_log(path: Path, config: Mapping[str, Any], logged: int) -> IO[bytes]:
    """The run log opened for appending (unbuffered: every line goes through
    [`append_line`][cmdp_rl.plumbing.atomic.append_line], which cuts a failed append back off); a new (or
    empty) one starts with the header line, and one whose header cannot be written is removed.

    Raises:
        OutputError: the log cannot be opened or its header written (naming the file).
    """
    existed = path.exists()
    try:
        fh = path.open("ab", buffering=0)
    except OSError as exc:
        raise OutputError(path, exc) from None
    if logged == 0 and path.stat().st_size == 0:
        try:
            append_line(fh, path, json.dumps({"config": config}) + "\n")
        except BaseException:
            fh.close()
            if not existed:  # no header: the log this run created is removed again
                path.unlink(missing_ok=True)
            raise
    return fh


def write_episode(fh: IO[bytes], k: int, steps: Steps) -> None:
    """Append episode ``k``'s line, durably (synced); a failed append leaves no partial line."""
    states, actions, nexts, rewards, costs = steps
    row = {
        "episode": k,
        "state": states,
        "action": actions,
        "next_state": nexts,
        "reward": rewards,
        "costs": [c.tolist() for c in costs],
    }
    append_line(fh, str(fh.name), json.dumps(row) + "\n")


__all__ = [
    "EPISODE_KEYS",
    "RunLogWarning",
    "RunShape",
    "Steps",
    "config_digest",
    "env_name",
    "open_run_log",
    "read_run_log",
    "write_episode",
]
