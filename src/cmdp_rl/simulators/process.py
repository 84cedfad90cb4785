"""The environment's own process in a run with ``step_timeout`` ([`blackbox`][cmdp_rl.simulators.blackbox]).

The process answers ``(call, arg)`` requests (``reset`` with a seed, ``step`` with an action)
through a pipe, one at a time, until the pipe closes. It is started in one of two ways:

* **afresh** ([`start_fresh`][cmdp_rl.simulators.process.start_fresh]): a new interpreter (not a fork, so it
  cannot inherit a lock that another thread of the caller held at that moment, which deadlocked
  the forked child) that makes the environment again from its id (``gymnasium.make``) or
  unpickles it. Nothing of the caller's ``__main__`` is imported (a script without an
  ``if __name__ == "__main__":`` guard is not run again). This module imports only the standard
  library (and NumPy, Gymnasium and the environment's own modules when it makes it), so the
  process starts in a fraction of a second;
* **forked** ([`start_forked`][cmdp_rl.simulators.process.start_forked]), for an environment that can be
  neither made again nor pickled (or whose pickle the new interpreter cannot load, e.g. a class
  defined in the caller's ``__main__``).

Either way the process first answers ``("ready", spaces)``: a process that does not answer
within ``START_TIMEOUT`` seconds (a forked child deadlocked on a
lock another thread held) is reported as hung at start, not as a slow step. The process ignores
SIGINT (the caller handles it and kills the process), has SIGTERM's default action, and dies with
its parent ([`die_with_parent`][cmdp_rl.plumbing.interrupts.die_with_parent]).
"""

from __future__ import annotations

import json
import multiprocessing
import pickle
import subprocess
import sys
import time
from collections.abc import Mapping
from multiprocessing.connection import Connection
from typing import Any

from cmdp_rl.plumbing.interrupts import init_worker, starting_workers

#: seconds the environment's process has to start and answer its first message (its own deadline,
#: whatever ``step_timeout`` is: a new interpreter imports NumPy, Gymnasium and the environment)
START_TIMEOUT = 60.0

#: the longest single wait the selector takes (its timeout is a C int of milliseconds)
_POLL_CHUNK = 86400.0


def poll(conn: Any, timeout: float) -> bool:
    """``conn.poll(timeout)`` for any timeout the option accepts (days or years), in chunks of a day."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if conn.poll(max(0.0, min(left, _POLL_CHUNK))):
            return True
        if left <= _POLL_CHUNK:
            return False


def spaces_of(env: Any) -> tuple[tuple[str, Any, Any], tuple[str, Any, Any]]:
    """The observation and action spaces of ``env`` as ``(type name, n, start)`` pairs."""

    def one(space: Any) -> tuple[str, Any, Any]:
        return type(space).__name__, getattr(space, "n", None), getattr(space, "start", 0)

    return one(getattr(env, "observation_space", None)), one(getattr(env, "action_space", None))


class EnvProcess:
    """The caller's handle on the environment's process: its pipe, and how it was started."""

    def __init__(self, conn: Connection, proc: Any, forked: bool) -> None:
        self.conn, self.proc, self.forked = conn, proc, forked
        #: its first answer ([`ready`][cmdp_rl.simulators.process.EnvProcess.ready]), read by the ``start_*`` functions
        self.first: tuple[str, Any] = ("died", None)
        #: the seconds its first answer was awaited
        self.start_timeout = START_TIMEOUT

    @property
    def exitcode(self) -> int | None:
        """Its exit code, ``None`` while it runs (negative: the signal that ended it)."""
        code: int | None = self.proc.exitcode if self.forked else self.proc.poll()
        return code

    def kill(self) -> None:
        """Kill it (at once: a stuck call would not read a polite request), reap it, close the pipe."""
        if self.exitcode is None:
            self.proc.kill()
        if self.forked:
            self.proc.join(5.0)
        else:
            try:
                self.proc.wait(5.0)
            except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL is not delayed that long
                pass
        self.conn.close()

    def ready(self, timeout: float) -> tuple[str, Any]:
        """Its first answer: ``("ready", spaces)``, ``("cannot", reason)`` (a new interpreter could
        not make or load the environment), ``("hung", None)`` (no answer within ``timeout`` s: the
        process is killed) or ``("died", exit code)``."""
        try:
            if not poll(self.conn, timeout):
                self.kill()
                return "hung", None
            reply: tuple[str, Any] = self.conn.recv()
        except (EOFError, OSError):
            self.kill()
            return "died", self.exitcode
        return reply


def start_fresh(env: Any, source: tuple[str, Mapping[str, Any] | None] | None) -> EnvProcess | None:
    """Start the environment in a new interpreter: made from ``source`` (its id and
    ``gymnasium.make`` keywords) if given, else (or if that fails there) unpickled. ``None`` when
    neither works (the caller forks); otherwise the process has answered ``("ready", spaces)``,
    and that answer, or ``("hung" | "died", ...)``, is its ``first``."""
    if not sys.executable:  # pragma: no cover - an embedded interpreter
        return None
    parent_end, child_end = multiprocessing.Pipe()
    code = "import sys; from cmdp_rl.simulators.process import serve_fresh; serve_fresh()"
    path = json.dumps([p for p in sys.path if isinstance(p, str)])  # where this process finds modules
    argv = [sys.executable, "-c", code, path, str(child_end.fileno())]
    with starting_workers():  # SIGINT blocked from its first instruction (a Ctrl-C to the group is ours)
        proc = subprocess.Popen(argv, pass_fds=[child_end.fileno()], stdin=subprocess.DEVNULL)
    child_end.close()
    handle = EnvProcess(parent_end, proc, forked=False)
    offers: list[tuple[str, Any]] = []
    if source is not None:
        offers.append(("make", (source[0], dict(source[1] or {}))))
    offers.append(("pickle", None))  # pickled only if needed
    for kind, payload in offers:
        if kind == "pickle":
            try:
                payload = pickle.dumps(env, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:  # not picklable (a lock, a file, a lambda ...): the caller forks
                break
        try:
            parent_end.send((kind, payload))
        except OSError:
            break  # it died at start: the caller forks
        handle.start_timeout = START_TIMEOUT
        answer = handle.ready(START_TIMEOUT)
        if answer[0] != "cannot":
            handle.first = answer
            return handle
    if handle.exitcode is None:
        try:
            parent_end.send(("stop", None))
        except OSError:
            pass
    handle.kill()
    return None


def start_forked(env: Any) -> EnvProcess:
    """Start the environment in a forked child (where the platform forks; else spawned): the
    object as it is, for one that cannot be started afresh."""
    methods = multiprocessing.get_all_start_methods()
    ctx: Any = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    parent_end, child_end = ctx.Pipe()
    proc = ctx.Process(target=_serve_forked, args=(env, child_end, parent_end), daemon=True, name="cmdp-rl environment")
    with starting_workers():
        proc.start()
    child_end.close()
    handle = EnvProcess(parent_end, proc, forked=True)
    handle.start_timeout = START_TIMEOUT
    handle.first = handle.ready(START_TIMEOUT)
    return handle


# --------------------------------------------------------------------------- in the child


def serve_fresh() -> None:
    """The new interpreter's main (``sys.argv``: the caller's ``sys.path`` as JSON, the pipe's
    file descriptor): make or load the environment as offered, answer ``ready``, then serve."""
    init_worker()
    sys.path[:0] = [p for p in json.loads(sys.argv[1]) if p not in sys.path]
    conn = Connection(int(sys.argv[2]))
    while True:
        try:
            kind, payload = conn.recv()
        except (EOFError, OSError):
            return
        if kind == "stop":
            return
        try:
            env = _make(*payload) if kind == "make" else pickle.loads(payload)
        except Exception as exc:  # any failure means: try the next way
            conn.send(("cannot", f"{type(exc).__name__}: {exc}"))
            continue
        break
    _serve(env, conn)


def _make(env_id: str, kwargs: dict[str, Any]) -> Any:
    from cmdp_rl.envs.making import gym_make  # module:NAME as in the caller (the same working directory)

    if env_id.startswith("cmdp_rl/"):
        from cmdp_rl.envs.gym_env import register_problems, register_scenarios

        register_scenarios()
        register_problems()
    return gym_make(env_id, kwargs)


def _serve_forked(env: Any, conn: Connection, parent_end: Connection) -> None:
    parent_end.close()
    init_worker()
    _serve(env, conn)


def _serve(env: Any, conn: Connection) -> None:
    """Answer ``ready`` with the spaces, then ``(call, arg)`` requests until the pipe closes."""
    try:
        conn.send(("ready", spaces_of(env)))
    except Exception as exc:
        conn.send(("cannot", f"{type(exc).__name__}: {exc}"))
        return
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            break
        call, arg = request
        try:
            out = env.reset(seed=arg) if call == "reset" else env.step(arg)
            reply: tuple[str, Any] = ("ok", (out, spaces_of(env) if call == "reset" else None))
        except Exception as exc:
            reply = ("raised", (type(exc).__name__, str(exc)))
        try:
            conn.send(reply)
        except Exception as exc:  # the result cannot cross the pipe (pickling)
            conn.send(("error", f"{call}() returned what cannot be sent between processes ({exc})"))
    conn.close()


__all__ = ["START_TIMEOUT", "EnvProcess", "poll", "serve_fresh", "spaces_of", "start_forked", "start_fresh"]
