"""Execution backends for a sweep: inline, local process pool, or Ray tasks.

Workers only compute ([`execute_run`][cmdp_rl.experiments.runner.execute_run] returns a
record); the driver writes every finished record atomically as it arrives
([`save_record`][cmdp_rl.experiments.store.save_record]). So the run files are the same
whichever backend or worker count produced them, Ray workers on other machines
need no shared file system, and an interrupt (Ctrl-C, kill, crash) loses only
the runs in flight.
"""

from __future__ import annotations

import functools
import multiprocessing
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tqdm.std import tqdm as tqdm_std

from cmdp_rl.experiments.config import ExperimentConfig
from cmdp_rl.experiments.runner import RunRecord, RunSpec, execute_run, run_specs
from cmdp_rl.experiments.store import save_record, scan
from cmdp_rl.plumbing.interrupts import init_worker, starting_workers
from cmdp_rl.plumbing.progress import work_bar
from cmdp_rl.plumbing.threads import init_worker_threads, worker_threads
from cmdp_rl.plumbing.validation import CMDPInputError, CMDPTypeError, plain


@dataclass(frozen=True)
class SweepReport:
    """What [`run_sweep`][cmdp_rl.experiments.backends.run_sweep] did.

    Attributes:
        runs_dir: folder of the per-run files.
        total: runs in the configuration.
        computed: run ids computed now (completion order).
        reused: run ids whose valid files were already there.
        removed: corrupt files that were deleted and rerun.
        seconds: wall time of the sweep.
    """

    runs_dir: Path
    total: int
    computed: tuple[str, ...]
    reused: tuple[str, ...]
    removed: tuple[Path, ...]
    seconds: float


def _init_worker(threads: int = 1) -> None:
    """Worker initializer: leave Ctrl-C to the driver (which stops the pool), end with the driver
    ([`init_worker`][cmdp_rl.plumbing.interrupts.init_worker]), give tqdm a thread lock so workers
    create no multiprocessing semaphore that a terminated worker would leak (workers never draw
    bars), and run the compiled kernels on ``threads`` threads (the driver's
    [`worker_threads`][cmdp_rl.plumbing.threads.worker_threads]: 1 unless set)."""
    init_worker()
    tqdm_std.set_lock(threading.RLock())
    init_worker_threads(threads)


def execute_run_on(threads: int, spec: RunSpec) -> RunRecord:
    """[`execute_run`][cmdp_rl.experiments.runner.execute_run] on ``threads`` threads: a Ray task
    (Ray reuses its worker processes, so the count is set per task)."""
    init_worker_threads(threads)
    return execute_run(spec)


def start_pool(jobs: int) -> Any:
    """``jobs`` spawned worker processes (``multiprocessing.Pool``), each initialized by
    ``_init_worker`` with [`worker_threads`][cmdp_rl.plumbing.threads.worker_threads] threads; the
    driver's signals are held while they start
    ([`starting_workers`][cmdp_rl.plumbing.interrupts.starting_workers])."""
    threads = worker_threads()  # read (and checked) in the driver
    ctx = multiprocessing.get_context("spawn")
    # the workers start with SIGINT blocked (a Ctrl-C to the group is the driver's), and a
    # signal to the driver meanwhile is raised once they have all started
    with starting_workers(tracker=True):
        return ctx.Pool(processes=jobs, initializer=_init_worker, initargs=(threads,))


def _run_inline(todo: Sequence[RunSpec]) -> Iterator[RunRecord]:
    for spec in todo:
        yield execute_run(spec)


def _run_processes(todo: Sequence[RunSpec], jobs: int) -> Iterator[RunRecord]:
    """Run ``todo`` on ``jobs`` spawned processes; yield records in completion order.

    On an exception, interrupt or termination signal in the driver the pool is stopped
    through its public API (``Pool.terminate``, which kills the workers), so nothing
    keeps running; records already yielded have been written by the caller.
    """
    pool = None
    clean = False
    try:
        pool = start_pool(jobs)
        yield from pool.imap_unordered(execute_run, todo, chunksize=1)
        clean = True
    finally:
        if pool is not None:
            if clean:
                pool.close()
            else:
                pool.terminate()
            pool.join()


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise CMDPInputError("backend: 'ray' needs the optional dependency ray (pip install 'cmdp-rl[ray]')") from None
    return ray


def _start_ray(ray: Any, jobs: int, address: str | None) -> bool:
    """Start (or connect to) Ray unless this process has already initialized it; whether it was
    started here (and is the caller's to shut down).

    Raises:
        CMDPInputError: Ray cannot be started, or the cluster at ``address`` cannot be reached.
    """
    if ray.is_initialized():
        return False
    try:
        if address is not None:
            ray.init(address=address, log_to_driver=False)
        else:
            ray.init(num_cpus=jobs, include_dashboard=False, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = f"the Ray cluster at {plain(address)}" if address else "a local Ray instance"
        raise CMDPInputError(f"address: cannot start or connect to {where} ({exc})") from None
    return True


def _run_ray(todo: Sequence[RunSpec], jobs: int, address: str | None) -> Iterator[RunRecord]:
    """Run ``todo`` as Ray tasks (1 CPU each, on ``worker_threads()`` threads); yield records in completion order.

    Uses the Ray instance already initialized in this process if there is one (e.g. by
    [`backend_session`][cmdp_rl.experiments.backends.backend_session]);
    otherwise ``ray.init(address=address)`` or a local instance with ``jobs`` CPUs,
    shut down again at the end. On a cluster the workers must have ``cmdp_rl``
    installed (or pass a ``runtime_env`` through your own ``ray.init``).
    """
    ray = _import_ray()
    started = _start_ray(ray, jobs, address)
    remote = ray.remote(num_cpus=1, max_retries=0)(execute_run_on)
    threads = worker_threads()
    refs: list[Any] = []
    clean = False
    try:
        refs = [remote.remote(threads, s) for s in todo]
        pending = list(refs)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                yield ray.get(ref)
        clean = True
    finally:
        if not clean:
            for ref in refs:
                try:
                    ray.cancel(ref, force=True)
                except Exception:
                    pass
        if started:
            ray.shutdown()


class Execution(Protocol):
    """Where runs execute: what [`iter_records`][cmdp_rl.experiments.backends.iter_records] reads of a sweep's
    configuration ([`ExperimentConfig`][cmdp_rl.experiments.config.ExperimentConfig],
    [`CompareConfig`][cmdp_rl.experiments.compare.CompareConfig])."""

    @property
    def jobs(self) -> int: ...
    @property
    def backend(self) -> str: ...
    @property
    def address(self) -> str | None: ...


def check_backend(config: Execution) -> None:
    """Refuse, before anything is written, a backend this machine cannot run: ``"ray"`` without
    the optional dependency ``ray`` (whether or not runs are left to compute).

    Raises:
        CMDPInputError: ``backend = 'ray'`` and ``import ray`` fails (naming ``backend``).
    """
    if config.backend == "ray":
        _import_ray()


@contextmanager
def backend_session(config: Execution) -> Iterator[None]:
    """Hold ``config``'s backend ready for the block: for Ray, import it and start a local
    instance (or connect to ``address``) here, so that a missing Ray or an unreachable cluster is
    refused before the caller claims its results folder; a Ray started here is shut down at the
    end (one already initialized in this process is used and left running). The local backends
    need nothing.

    Raises:
        CMDPInputError: as [`check_backend`][cmdp_rl.experiments.backends.check_backend], or Ray
            cannot be started or reached (naming ``address``).
    """
    if config.backend != "ray":
        yield
        return
    ray = _import_ray()
    started = _start_ray(ray, config.jobs, config.address)
    try:
        yield
    finally:
        if started:
            ray.shutdown()


#: seconds per unit of ``S^2 A H (N + 1)`` and episode of an online learner: its re-plans and exact
#: scoring sweep a dense ``(S, A, S)`` kernel ``H`` times per constraint and the objective.
#: Measured (Online-CRL, the full protocol, one core, ``scripts/sweep_run_times.py``,
#: ``docs/sweep-run-times.json``): 4.8e-9 to 1.2e-8 on scenarios 1a, 1b and 2 (``S = 9`` and 25)
#: depending on the machine's load; only the ratios between runs matter for the ETA.
EPISODE_SECONDS_PER_UNIT = 8e-9
#: Optimistic-GMBL: seconds per sample drawn (``n S A`` per budget, nested) and per unit of a plan
#: (one per budget); its runs take 0.02 to 0.05 s on the scenarios, under 1% of a sweep.
SAMPLE_SECONDS = 5e-9
PLAN_SECONDS_PER_UNIT = 5e-8


@functools.lru_cache(maxsize=256)
def _plan_units(scenario: str) -> tuple[float, float]:
    """``(S A, S^2 A H (N + 1))`` of a registered problem (``H = 100`` for a discounted one)."""
    from cmdp_rl.envs.registry import problem_sizes

    S, A, H, N = problem_sizes(scenario)
    return float(S * A), float(S) * S * A * (100 if H is None else H) * (N + 1)


def run_cost(spec: RunSpec) -> float:
    """The expected seconds of one run on one core, from its problem's sizes and its budget: what
    a sweep's progress bar counts (its ETA) and the order parallel backends start runs in (the
    longest first; the results do not depend on it). An online learner's episodes cost
    ``EPISODE_SECONDS_PER_UNIT * S^2 A H (N + 1)`` each, GMBL's samples ``SAMPLE_SECONDS`` each
    plus a plan per budget. Compilation (the first run of a worker) is not counted."""
    pairs, units = _plan_units(spec.scenario)
    if spec.algorithm == "gmbl":
        return SAMPLE_SECONDS * pairs * sum(spec.budgets) + PLAN_SECONDS_PER_UNIT * units * len(spec.budgets)
    return EPISODE_SECONDS_PER_UNIT * units * spec.episodes


def iter_records(config: Execution, todo: Sequence[RunSpec]) -> Iterator[RunRecord]:
    """Compute ``todo`` with ``config``'s backend; records arrive in completion order.

    Parallel backends start the most expensive runs first
    ([`run_cost`][cmdp_rl.experiments.backends.run_cost]) to shorten the tail; the records do
    not depend on it.
    """
    if not todo:
        return iter(())
    if config.jobs > 1 or config.backend == "ray":
        todo = sorted(todo, key=run_cost, reverse=True)
    if config.backend == "ray":
        return _run_ray(todo, config.jobs, config.address)
    jobs = min(config.jobs, len(todo))
    if jobs == 1:
        return _run_inline(todo)
    return _run_processes(todo, jobs)


def run_sweep(
    config: Execution,
    runs_dir: str | Path,
    progress: bool = True,
    on_record: Callable[[RunRecord], None] | None = None,
    specs: list[RunSpec] | None = None,
) -> SweepReport:
    """Run every missing run of ``config``, writing one file per finished run.

    Valid files in ``runs_dir`` are kept (resume); corrupt ones are deleted and
    rerun. A progress bar shows the runs done and an ETA from their expected costs
    ([`run_cost`][cmdp_rl.experiments.backends.run_cost]).

    Args:
        config: the sweep (an ExperimentConfig, or any configuration with jobs, backend, address).
        specs: the runs (default: ``run_specs(config)``).
        runs_dir: folder for the per-run files (created if missing).
        progress: show the progress bar (on stderr).
        on_record: called with each newly computed record after it is saved.

    Raises:
        CMDPInputError: the folder holds runs of a different configuration, or the
            Ray backend is requested but ``ray`` is not installed.
        KeyboardInterrupt: re-raised after stopping the workers; every file
            written before the interrupt is complete.
    """
    t0 = time.perf_counter()
    runs_dir = Path(runs_dir)
    if specs is None:
        if not isinstance(config, ExperimentConfig):
            raise CMDPTypeError("specs: required unless config is an ExperimentConfig")
        specs = run_specs(config)
    check_backend(config)  # before the scan, which creates the runs folder
    state = scan(runs_dir, specs)
    computed: list[str] = []
    # the runs differ a hundredfold in length and the longest go first: the bar counts their
    # expected seconds, not runs, and its ETA (the average rate since the start) shows after a
    # tenth of that work
    cost = {spec.run_id: run_cost(spec) for spec in specs}
    done = sum(cost[r.spec.run_id] for r in state.done)
    bar = work_bar(
        sum(cost.values()), len(specs), "runs", "run", show=progress, initial_work=done, initial_items=len(state.done)
    )
    records = iter_records(config, state.todo)
    try:
        for record in records:
            save_record(runs_dir, record)
            computed.append(record.spec.run_id)
            bar.advance(cost[record.spec.run_id], record.spec.run_id)
            if on_record is not None:
                on_record(record)
    finally:
        close = getattr(records, "close", None)
        if close is not None:
            close()  # stop the workers now if we leave early (interrupt, error)
        bar.close()
    return SweepReport(
        runs_dir,
        len(specs),
        tuple(computed),
        tuple(r.spec.run_id for r in state.done),
        state.removed,
        time.perf_counter() - t0,
    )


__all__ = [
    "EPISODE_SECONDS_PER_UNIT",
    "PLAN_SECONDS_PER_UNIT",
    "SAMPLE_SECONDS",
    "SweepReport",
    "backend_session",
    "check_backend",
    "execute_run_on",
    "iter_records",
    "run_cost",
    "run_sweep",
    "start_pool",
]
