"""Signals sent by the process to itself at chosen points (``test_faults_round3_signals``).

A subprocess started with this folder on ``PYTHONPATH`` imports this module at start-up (Python
imports ``sitecustomize``); ``CMDP_RL_INJECT`` says what to do, ``SIG:WHEN`` with ``SIG`` one of
``SIGINT``, ``SIGTERM`` and ``WHEN``:

* ``import:K``: at the ``K``-th import (audit event ``import``) from the import of ``cmdp_rl``
  on (``K = 0``: as ``cmdp_rl`` itself is imported, before its first line), so ``K`` walks
  through the start-up and the lazy imports of the work;
* ``gc:K``: after the ``K``-th import from that of ``cmdp_rl``, inside the next garbage
  collector callback, whose exceptions CPython ignores ("Exception ignored in ...");
* ``weakref:K``: the same inside a weakref callback;
* ``atexit``: from the first function registered with ``atexit``, which runs last: after the
  result is printed, the workers stopped, and every other exit function.

The signal handler runs at the process's next bytecode, as for a signal from outside; the
callbacks spin until it has run. With ``CMDP_RL_INJECT_LOG=FILE`` the moment is appended to
``FILE`` (that the signal was sent). Nothing happens without ``CMDP_RL_INJECT``; worker
processes (which inherit the variables) inject nothing.
"""

from __future__ import annotations

import atexit
import gc
import os
import signal
import sys
import weakref
from typing import Any

_spec = os.environ.get("CMDP_RL_INJECT", "")
if _spec and os.environ.get("CMDP_RL_INJECT_PID", str(os.getpid())) == str(os.getpid()):
    os.environ["CMDP_RL_INJECT_PID"] = str(os.getpid())  # children (workers) inherit no injection
    _name, _, _when = _spec.partition(":")
    _sig = getattr(signal, _name)
    _kind, _, _count = _when.partition(":")
    _k = int(_count or 0)
    _state: dict[str, Any] = {"seen": None, "fired": False, "keep": []}

    def _fired(where: str) -> None:
        log = os.environ.get("CMDP_RL_INJECT_LOG")
        if log:
            with open(log, "a") as fh:
                fh.write(f"{_spec} at {where}\n")

    def _send_and_spin() -> None:
        os.kill(os.getpid(), _sig)
        for _ in range(100_000):  # the handler runs here, at a bytecode of this callback
            pass

    def _gc_callback(phase: str, info: dict[str, Any]) -> None:
        if phase == "start" and not _state["fired"]:
            _state["fired"] = True
            _fired("a garbage collector callback")
            _send_and_spin()

    class _Referent:
        pass

    def _arm() -> None:
        if _kind == "import":
            _state["fired"] = True
            os.kill(os.getpid(), _sig)
        elif _kind == "gc":
            gc.callbacks.append(_gc_callback)
        elif _kind == "weakref":
            _state["fired"] = True
            obj = _Referent()
            _state["keep"].append(weakref.ref(obj, lambda ref: _send_and_spin()))
            del obj  # the callback runs now

    def _audit(event: str, args: tuple[Any, ...]) -> None:
        if event != "import" or _state["fired"] or _state.get("armed"):
            return
        if _state["seen"] is None:
            if args[0] != "cmdp_rl":
                return
            _state["seen"] = 0
        else:
            _state["seen"] += 1
        if _state["seen"] >= _k:
            _state["armed"] = True
            _fired(args[0])
            _arm()

    def _at_exit() -> None:
        _fired("the last exit function")
        _send_and_spin()

    if _kind == "atexit":
        atexit.register(_at_exit)
    else:
        sys.addaudithook(_audit)
