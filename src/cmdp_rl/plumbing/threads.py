"""How many threads the compiled sweeps use (see the docs page 'Large models', section 'Threads').

The count comes from, in this order: the last [`set_threads`][cmdp_rl.plumbing.threads.set_threads]
call, the environment variable ``CMDP_RL_THREADS`` (read on each use, so a child process
inherits it), or all cores (numba's ``NUMBA_NUM_THREADS``, which defaults to the number of CPUs
this process may use). It never changes a result: the threaded kernels split work over states,
each state's arithmetic is the same whatever thread does it, and the one sum that crosses threads
(a forward pass's scatter, [`cmdp_rl.kernels.forward`][cmdp_rl.kernels.forward]) adds a fixed
number of chunks in a fixed order, so results are bit-for-bit identical for any count.

Worker processes (a sweep's ``--jobs``) run on one thread each unless the count was set
([`worker_threads`][cmdp_rl.plumbing.threads.worker_threads]): ``jobs`` workers on one thread
each keep the cores busy without oversubscribing them.

Numba's own setting is per calling thread; the threaded kernels' entry points call
[`apply_threads`][cmdp_rl.plumbing.threads.apply_threads] before each call, so the count holds
whichever Python thread solves.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from cmdp_rl.plumbing.errors import CMDPInputError
from cmdp_rl.plumbing.validation import as_int, plain

#: the environment variable read when [`set_threads`][cmdp_rl.plumbing.threads.set_threads] was not called
ENV_VAR = "CMDP_RL_THREADS"

#: the count set by ``set_threads`` (``None``: the environment variable, else all cores)
_chosen: int | None = None


def max_threads() -> int:
    """The largest count: numba's pool size ``NUMBA_NUM_THREADS`` (default: the CPUs this process
    may use; fixed once numba has started its threads)."""
    import numba

    return int(numba.config.NUMBA_NUM_THREADS)  # type: ignore[attr-defined]


def check_threads(name: str, value: Any) -> int:
    """``value`` as a thread count: an integer in ``[1, max_threads()]``, else a one-line
    [`CMDPInputError`][cmdp_rl.plumbing.errors.CMDPInputError] naming ``name`` and the rule."""
    top = max_threads()
    try:
        n = as_int(name, value)
    except CMDPInputError:
        raise CMDPInputError(
            f"{name}: must be an integer number of threads in [1, {top}], got {plain(value)}"
        ) from None
    if not 1 <= n <= top:
        raise CMDPInputError(
            f"{name}: must be a number of threads in [1, {top}] (at most NUMBA_NUM_THREADS, "
            f"the cores numba may use), got {n}"
        )
    return n


def set_threads(n: int | None = None) -> int:
    """Use ``n`` threads in the compiled sweeps from now on (``None``, or no argument: back to the
    default, ``CMDP_RL_THREADS`` or all cores). Returns the count now in effect.

    Raises:
        CMDPInputError: ``n`` is not an integer in ``[1, max_threads()]``.
    """
    global _chosen
    _chosen = None if n is None else check_threads("n", n)
    return get_threads()


def get_threads() -> int:
    """The count in effect: the last ``set_threads``, else ``CMDP_RL_THREADS``, else all cores.

    Raises:
        CMDPInputError: ``CMDP_RL_THREADS`` is set but not an integer in ``[1, max_threads()]``.
    """
    if _chosen is not None:
        return _chosen
    raw = os.environ.get(ENV_VAR, "").strip()
    if raw:
        return check_threads(ENV_VAR, raw if not raw.lstrip("-").isdigit() else int(raw))
    return max_threads()


def apply_threads(limit: int | None = None, launch: bool = False) -> int:
    """Set numba's count for the calling thread to [`get_threads`][cmdp_rl.plumbing.threads.get_threads],
    at most ``limit`` (a kernel too small to gain from threads passes ``1``); called by the threaded
    kernels' entry points before each call. Returns the count set.

    While numba's thread pool has not started and the count is its default, nothing is done: a
    parallel kernel called from Python starts the pool with that count, and callers whose kernels
    all run serially start no threads. ``launch=True`` starts it anyway: compiled code that calls a
    parallel kernel (the EVI sweep inside the compiled column-generation loop) does not start it
    and would crash without it."""
    import numba
    from numba.np.ufunc import parallel

    n = get_threads() if limit is None else min(get_threads(), limit)
    if not launch and not getattr(parallel, "_is_initialized", True) and n == numba.config.NUMBA_NUM_THREADS:  # type: ignore[attr-defined]
        return n
    if numba.get_num_threads() != n:
        numba.set_num_threads(n)
    return n


def worker_threads() -> int:
    """The count for each worker process of a parallel sweep: the last ``set_threads`` (the CLI's
    ``--threads``), else ``CMDP_RL_THREADS``, else ``1`` (the workers share the cores).

    Raises:
        CMDPInputError: ``CMDP_RL_THREADS`` is set but not an integer in ``[1, max_threads()]``.
    """
    if _chosen is not None or os.environ.get(ENV_VAR, "").strip():
        return get_threads()
    return 1


def init_worker_threads(n: int) -> None:
    """In a worker process: use ``n`` threads from now on (``CMDP_RL_THREADS`` set to ``n``, so the
    worker's own children inherit it, and ``set_threads(n)``)."""
    os.environ[ENV_VAR] = str(n)
    set_threads(n)


@contextmanager
def threads_for(name: str, n: Any) -> Iterator[int]:
    """Use ``n`` threads inside the ``with`` block (``None``: the count in effect), the previous
    choice restored after it; ``n`` is checked first, named ``name`` (e.g. ``"--threads"``) in the
    refusal. Yields the count in effect.

    Raises:
        CMDPInputError: ``n`` is not an integer in ``[1, max_threads()]``.
    """
    global _chosen
    saved = _chosen
    if n is not None:
        _chosen = check_threads(name, n)
    try:
        yield get_threads()
    finally:
        _chosen = saved
