"""Resource estimates and limits, checked before any work or allocation.

A command that would exhaust the memory or run for years is refused up front with
the estimate, the limit and the option that raises it. Estimates come from the sizes
``S, A, H, N`` and the budget only (no allocation): they are rough (within a small factor
on this library's benchmarks) and err on the low side, so a refused job really is
out of reach.

Defaults: ``DEFAULT_MAX_MEMORY`` (8 GiB) and ``DEFAULT_MAX_SECONDS`` (one day);
the CLI's ``--max-memory`` and ``--max-time`` override them.
"""

from __future__ import annotations

import math
import os
import re
import sys
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, Any

from cmdp_rl.plumbing.errors import CMDPInputError
from cmdp_rl.plumbing.numbers import shown

#: memory a single command may plan to use, bytes (override: ``--max-memory``)
DEFAULT_MAX_MEMORY: int = 8 * 2**30
#: wall time a single command may plan to take, seconds (override: ``--max-time``)
DEFAULT_MAX_SECONDS: float = 24 * 3600.0
#: the largest ``--max-memory`` (bytes) and ``--max-time`` (seconds): a 64-bit integer
MAX_LIMIT: int = 2**63 - 1
#: per-pair sample counts beyond this are no longer exact integers in float64
MAX_EXACT_COUNT: int = 2**53

#: bytes of per-episode records an Online-CRL run keeps (ten arrays of 8-16 bytes per episode)
BYTES_PER_EPISODE = 160
#: bytes per non-zero of an LP matrix, counting SciPy's and HiGHS' copies
BYTES_PER_NONZERO = 120
#: the largest integer a model file stores (``int64``): a horizon or size beyond it is refused
MAX_INT64: int = 2**63 - 1

_UNITS = {
    "": 1,
    "b": 1,
    "k": 2**10,
    "kb": 2**10,
    "m": 2**20,
    "mb": 2**20,
    "g": 2**30,
    "gb": 2**30,
    "t": 2**40,
    "tb": 2**40,
}
_SECONDS = {"": 1.0, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


@dataclass(frozen=True)
class Estimate:
    """Planned resources of one job.

    Attributes:
        bytes: peak memory, bytes.
        seconds: wall time on one core, seconds.
    """

    bytes: float
    seconds: float

    def __add__(self, other: Estimate) -> Estimate:
        return Estimate(self.bytes + other.bytes, self.seconds + other.seconds)


#: generators and registry families build a sparse kernel when a dense one would exceed this
#: (16 MiB: ``S = 1,000`` with ``A = 2``, ``S = 700`` with ``A = 4``); smaller models stay dense
SPARSE_ABOVE_BYTES = 16 * 2**20


def dense_bytes(S: int, A: int) -> int:
    """Bytes of a dense ``(S, A, S)`` float64 kernel."""
    return 8 * int(S) * int(A) * int(S)


def parse_size(text: str) -> int:
    """``"16G"``, ``"500MB"``, ``"1024"`` (bytes) -> bytes."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([a-zA-Z]*)\s*", str(text))
    unit = m.group(2).lower() if m else ""
    if m is None or unit not in _UNITS:
        raise CMDPInputError(f"max-memory: expected a size such as 16G, 500M or 1024 (bytes), got {shown(text)}")
    value = float(m.group(1)) * _UNITS[unit]
    if not (math.isfinite(value) and value >= 1):
        raise CMDPInputError(f"max-memory: must be a size of at least 1 byte, got {shown(text)}")
    if value > MAX_LIMIT:
        raise CMDPInputError(f"max-memory: must be at most 2**63 - 1 bytes (8 EiB), got {shown(text)}")
    return int(value)


def parse_duration(text: str) -> float:
    """``"2h"``, ``"30min"``, ``"90s"``, ``"3d"``, ``"600"`` (seconds) -> seconds."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([a-zA-Z]*)\s*", str(text))
    unit = m.group(2).lower() if m else ""
    if m is None or unit not in _SECONDS:
        raise CMDPInputError(
            f"max-time: expected a duration such as 2h, 30min, 90s or 600 (seconds), got {shown(text)}"
        )
    value = float(m.group(1)) * _SECONDS[unit]
    if not (math.isfinite(value) and value >= sys.float_info.min):  # no zero, no denormal, no overflow
        raise CMDPInputError(f"max-time: must be a positive duration, got {shown(text)}")
    if value > MAX_LIMIT:
        raise CMDPInputError(f"max-time: must be at most 2**63 - 1 seconds, got {shown(text)}")
    return value


#: the memory assumed where the operating system does not say (``machine_memory``): 16 TiB
UNKNOWN_MACHINE_MEMORY = 16 * 2**40


def machine_memory() -> float:
    """Bytes of physical memory of this machine (``os.sysconf``; ``UNKNOWN_MACHINE_MEMORY`` where
    the system does not tell): no array larger than this can be allocated here."""
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return float(UNKNOWN_MACHINE_MEMORY)
    return float(pages) * float(size) if pages > 0 and size > 0 else float(UNKNOWN_MACHINE_MEMORY)


def check_allocation(name: str, nbytes: float, what: str) -> None:
    """Refuse, before allocating it, ``what`` (arrays of ``nbytes`` in total whose size comes from the
    argument ``name``) when it exceeds this machine's memory: a one-line
    [`CMDPInputError`][cmdp_rl.plumbing.errors.CMDPInputError] instead of a ``MemoryError`` from deep inside."""
    total = machine_memory()
    if not nbytes <= total:
        raise CMDPInputError(
            f"{name}: {what} would need about {human_bytes(nbytes)} of memory, more than this machine has "
            f"({human_bytes(total)})"
        )


def grid_covers_integers(lo: int, hi: int, points: int, log: bool = True) -> bool:
    """Whether ``points`` log-spaced (``log``) or evenly spaced values from ``lo`` to ``hi``
    (``1 <= lo <= hi``), rounded, hit every integer of ``lo .. hi``: consecutive values then lie
    closer than half an integer apart everywhere (with a margin for rounding), so the rounded grid is
    ``lo .. hi`` itself and needs no array of ``points`` values (``checkpoints`` and budget grids
    with more points than integers)."""
    if points < 2 or hi == lo:
        return hi == lo
    if log:  # ratio of consecutive values (hi / lo)^(1 / (points - 1)) at most 1 + 1 / (2 hi)
        return points - 1 > math.log(hi / lo) / math.log1p(0.5 / hi)
    return points - 1 >= hi - lo  # steps of at most 1


def human_bytes(n: float) -> str:
    """``1.5 GiB`` style."""
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} B"


def human_seconds(s: float) -> str:
    """``3.2 h`` style (years for the absurd)."""
    for unit, size in (("years", 365 * 86400.0), ("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if s >= size:
            return f"{s / size:.3g} {unit}"
    return f"{s:.3g} s"


def lp_estimate(S: int, A: int, H: int, N: int, nnz_per_row: float) -> Estimate:
    """The occupation-measure LP (``H S A`` variables, flow rows with ``nnz_per_row`` kernel entries)."""
    n_var = float(H) * S * A
    nnz = n_var * (1.0 + nnz_per_row + N)
    return Estimate(BYTES_PER_NONZERO * nnz + 80.0 * n_var, 2e-7 * nnz**1.1)


#: kernel passes one discounted policy evaluation costs (GMRES iterations, measured 10 to 30 on
#: Garnet kernels), the stand-in for ``H`` in the estimates of a discounted model
DISCOUNTED_PASSES = 50


def passes(model: Any) -> int:
    """``H`` for a finite-horizon model; ``DISCOUNTED_PASSES`` for a discounted one."""
    return int(model.H) if model.H is not None else DISCOUNTED_PASSES


#: columns of ``H * S`` bytes (``uint8`` action tables) a column-generation pool is counted to hold
POOL_COLUMNS = 10


def exact_estimate(S: int, A: int, H: int, N: int, nnz: float, method: str = "fast") -> Estimate:
    """One exact solve of a model with ``nnz`` kernel entries: column generation (``"fast"``) or the
    occupation-measure LP (``"lp"``). From the sizes only, never ``S * S * A``.

    Column generation holds the pool's CSR arrays (``16 nnz`` bytes: ``int64`` indices and float64
    probabilities, when the model's are of other types), its ``(S, A, N + 1)`` reward and cost
    tables and a few ``(S, A)`` pricing rewards, the columns (``POOL_COLUMNS`` action tables of
    ``H S`` bytes) and one sweep's ``(H, S)`` ``int32`` greedy actions; the plan's ``(H, S, A)``
    policy and occupancy are built only on demand (``PlanResult.policy``), not by the solve.
    About 60 DP sweeps of ``O(H * nnz)``. Measured on the registry's Garnet model ``S = 10^6``,
    ``A = 10``, ``b = 3``, ``N = 1``, ``H = 100``: the solve's peak RSS 2.0 GB above the built
    model's resident memory (this estimate: 2.12 GiB)."""
    if method == "lp":
        return lp_estimate(S, A, H, N, nnz / max(1.0, float(S) * A))
    sweep = float(H) * (nnz + S * A)
    memory = 16.0 * nnz + 8.0 * S * A * (N + 4) + (4.0 + POOL_COLUMNS) * H * S
    return Estimate(memory, 60 * 2e-9 * sweep) + master_lp_estimate(N)


def master_lp_estimate(N: int) -> Estimate:
    """The restricted master LPs of column generation with ``N`` constraints: each is a dense
    ``(N + 1) x (2 N + 3)`` tableau at least, and each basis solve an ``(N + 1)``-square Gaussian
    elimination (about ``(N + 1)^3 / 3`` flops at 1 ns); a solve takes 60 of them at least. A
    lower bound: negligible for tens of constraints, prohibitive for ``N`` in the tens of
    thousands."""
    m = float(N) + 1.0
    return Estimate(8.0 * m * (2.0 * m + 1.0), 60 * 1e-9 * m**3 / 3.0)


def build_estimate(S: int, A: int, H: int, N: int, nnz: float, solves: int = 3) -> Estimate:
    """Building a generated model of ``nnz`` kernel entries whose thresholds need ``solves`` exact
    solves (a Garnet model: the least-cost unconstrained optimum, the worst-cost minimizer, the
    Slater gap): about 120 bytes per kernel entry while the kernel is drawn and validated, the
    rewards and costs, and the solves' memory and time ([`exact_estimate`][cmdp_rl.plumbing.limits.exact_estimate])."""
    plan = exact_estimate(S, A, H, N, nnz)
    return Estimate(max(120.0 * nnz, plan.bytes) + 8.0 * S * A * (N + 1), solves * plan.seconds)


def elp_estimate(S: int, A: int, H: int, N: int, method: str) -> Estimate:
    """One extended-LP solve: column generation (``"fast"``) or the literal LP (``"lp"``)."""
    sweep = float(H) * S * S * A
    if method == "lp":
        return Estimate(BYTES_PER_NONZERO * 3.0 * sweep, 1.3e-6 * sweep**1.3)
    return Estimate(8.0 * 40 * H * S * S + 8.0 * 4 * S * A * S, 3e-4 + 4e-9 * sweep * (N + 2))


def learn_estimate(
    S: int,
    A: int,
    H: int,
    N: int,
    *,
    episodes: int | None = None,
    samples_per_pair: int | None = None,
    method: str = "fast",
    nnz_per_row: float | None = None,
) -> Estimate:
    """``learn``: the true LP (for ``V*``), then Online-CRL's ``episodes`` or one GMBL plan."""
    base = lp_estimate(S, A, H, N, S if nnz_per_row is None else nnz_per_row)
    plan = elp_estimate(S, A, H, N, method)
    if episodes is not None:
        per_episode = plan.seconds + 2e-6 * H + 2e-9 * H * S * A * S  # plan, act, exact scoring
        return base + Estimate(plan.bytes + BYTES_PER_EPISODE * float(episodes), per_episode * episodes)
    return base + plan + Estimate(8.0 * 3 * S * A * S, 1e-7 * S * A * S)


#: resident memory of one worker process of a sweep (``compare``, ``reproduce``, ``study`` with
#: ``--jobs`` of 2 or more): a fresh interpreter with NumPy, SciPy, HiGHS, numba and the compiled
#: kernels loaded, before the run's own arrays. Measured by ``scripts/measure_worker_memory.py``:
#: the peak RSS (``getrusage(RUSAGE_CHILDREN).ru_maxrss``) of one worker started as the local
#: backend starts them (``multiprocessing`` "spawn", the pool's initializer) doing one tiny run on
#: scenario 1a, on the project's 2-core Linux machine (Python 3.11, NumPy 2.4, SciPy 1.17, numba
#: 0.68): 265-297 MiB for every learner (plugin, optcmdp, optpess, dope, online-crl, gmbl) with
#: numba's on-disk cache warm (265-273 MiB in the latest runs, 287-297 MiB in earlier ones),
#: 359-440 MiB when the kernels compile in the worker (a cold cache, the first run after an
#: install); a bare interpreter is 11 MiB. We count 256 MiB, the low side, as every estimate here.
WORKER_BYTES: int = 256 * 2**20


def worker_processes(jobs: int, runs: int, backend: str = "local") -> int:
    """The worker processes a sweep of ``runs`` runs with ``jobs`` workers starts: none for the
    local backend when it runs them inline (one job, or a single run), else ``min(jobs, runs)``
    (Ray: at least one, every run is a task in a Ray worker)."""
    n = min(int(jobs), max(int(runs), 1))
    if backend == "ray":
        return max(n, 1)
    return n if n > 1 else 0


def sweep_estimate(
    per_run: Estimate, runs: int, jobs: int, backend: str = "local", seconds: float | None = None
) -> Estimate:
    """A sweep of ``runs`` runs on ``jobs`` workers, each run needing ``per_run`` (its largest):
    every worker process counts its own footprint (``WORKER_BYTES``)
    plus the run it holds, ``processes * (WORKER_BYTES + per_run.bytes)`` (inline: ``per_run.bytes``
    in this process); the time is shared by the workers (``seconds``: the whole sweep's time on
    one core, default ``runs * per_run.seconds``)."""
    processes = worker_processes(jobs, runs, backend)
    total = per_run.seconds * float(runs) if seconds is None else seconds
    if processes == 0:
        return Estimate(per_run.bytes, total)
    return Estimate(processes * (WORKER_BYTES + per_run.bytes), total / processes)


def simulator_estimate(S: int, A: int, H: int, N: int, episodes: int, tables: bool = True) -> Estimate:
    """``learn --env`` ([`learn`][cmdp_rl.simulators.learning.learn]) on an environment of ``S``
    states and ``A`` actions: the planner's ``(H + 1, S + 2, A)`` policy, values and bonuses (eight
    such arrays; a learner playing its plans' columns, ``tables`` false: a pool of about 16 columns'
    ``(H + 1, S + 2)`` values and actions, four more per constraint, and ``(S + 2, A)`` estimates
    and radii), its dense ``(S + 2, A, S + 2)`` counts when those are small (sparse beyond), about
    700 bytes of records and seeds per episode; per episode ``H`` environment steps (2 us each at
    least) and a plan of about 60 sweeps over the planner's pairs."""
    S2, H2 = float(S) + 2.0, float(H) + 1.0
    counts = 8.0 * S2 * A * S2 if dense_bytes(S + 2, A) <= SPARSE_ABOVE_BYTES else 0.0
    if tables:
        planner = 8.0 * 8 * H2 * S2 * A * (1 + N)
    else:
        planner = 8.0 * H2 * S2 * (16 + 4 * N) + 8.0 * S2 * A * (N + 3)
    memory = planner + counts + 700.0 * episodes
    per_episode = 2e-6 * H + 60 * 2e-9 * H2 * S2 * A * (N + 1)
    return Estimate(memory, per_episode * float(episodes))


def pg_estimate(
    S: int, A: int, N: int, gamma: float, nnz: float, iterations: int, samples: int | None, algorithms: int = 1
) -> Estimate:
    """``cmdp-rl pg``: ``algorithms`` runs of ``iterations`` iterations. Each run keeps its
    ``(iterations, S, A)`` policies and per-iteration values; an exact iteration solves
    ``(I - gamma P_pi) V`` (a pass over the kernel's ``nnz`` entries, a dense ``S x S`` solve for a
    dense model), a sampled one rolls out ``samples`` episodes from each of the ``S A`` pairs
    (about ``1 / (1 - gamma)`` steps each, 30 ns per step at least, and ``(80 + 8 N)`` bytes per
    rollout while they run)."""
    T = float(iterations)
    memory = 8.0 * T * (S * A + 2 * N + 2) + 16.0 * nnz
    if samples is None:
        dense = nnz >= float(S) * S * A  # a dense kernel: a dense solve
        per = 2e-9 * (nnz * (1 + N)) + (1e-9 * float(S) ** 3 / 3.0 if dense else 0.0)
        memory += 8.0 * float(S) * S if dense else 0.0
    else:
        rollouts = float(S) * A * samples + samples
        per = 3e-8 * rollouts / (1.0 - gamma)
        memory += (80.0 + 8.0 * N) * rollouts
    return Estimate(memory, per * T * algorithms)


def frontier_estimate(plan: Estimate, points: int, N: int) -> Estimate:
    """``cmdp-rl frontier``: one exact solve (``plan``) per grid point (warm-started, a tenth of
    a cold solve at least), and a row of ``N + 4`` numbers per point."""
    return Estimate(plan.bytes + 8.0 * (N + 4) * points, plan.seconds * (2 + points / 10.0))


def certify_estimate(S: int, A: int, H: int, N: int, nnz: float) -> Estimate:
    """``cmdp-rl certify``: robust evaluations of the policy (the value and each cost) over the
    confidence set of ``nnz`` counted transitions (the observed successors and their bounds; a
    sort of each pair's successors per step), and the ``(H, S, A)`` policy and value tables."""
    rows = float(nnz) + float(S) * A
    return Estimate(8.0 * 6 * rows + 8.0 * 4 * H * S * A, (N + 1) * H * 2e-8 * rows * math.log2(2.0 + rows / (S * A)))


def gym_import_estimate(S: int, A: int, outcomes: float) -> Estimate:
    """``import-gym`` of an environment of ``S`` states and ``A`` actions whose tabular model lists
    ``outcomes`` outcomes: about 400 bytes and 3 us per outcome (the environment's own Python
    lists, then the conversion's; measured 640 bytes and 4.7 us on FrozenLake), and the model's
    ``(S, A)`` tables."""
    return Estimate(400.0 * outcomes + 8.0 * 4 * S * A, 3e-6 * outcomes)


def check_int64(name: str, value: int) -> None:
    """An integer that a model file stores (a horizon, a size) must fit in ``int64``."""
    if value > MAX_INT64:
        raise CMDPInputError(f"{name}: {value} exceeds 2^63 - 1, the largest integer a model file stores")


def npy_header(fh: IO[bytes], what: str) -> tuple[tuple[int, ...], Any]:
    """``(shape, dtype)`` of the ``.npy`` stream ``fh`` from its header alone (nothing else read)."""
    import numpy as np

    fmt: Any = np.lib.format
    try:
        version = fmt.read_magic(fh)
        if version == (1, 0):
            shape, _, dtype = fmt.read_array_header_1_0(fh)
        elif version == (2, 0):
            shape, _, dtype = fmt.read_array_header_2_0(fh)
        else:
            shape, _, dtype = fmt._read_array_header(fh, version)  # version 3.0 (no public reader)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise CMDPInputError(f"{what}: not a readable .npy array ({exc})") from None
    return tuple(int(n) for n in shape), dtype


def array_bytes(shape: tuple[int, ...], dtype: Any) -> float:
    """Bytes of an array of ``shape`` and ``dtype`` (as a float: no overflow)."""
    return float(math.prod(float(n) for n in shape)) * max(int(dtype.itemsize), 1)


def npz_headers(path: str | os.PathLike[str], what: str) -> Mapping[str, tuple[tuple[int, ...], Any]]:
    """``{key: (shape, dtype)}`` of every array of the ``.npz`` file ``path``, read from the
    members' ``.npy`` headers (the zip directory and a few hundred bytes per member: a
    compressed member is not decompressed). Not a zip file: empty (the loader reports it)."""
    out: dict[str, tuple[tuple[int, ...], Any]] = {}
    try:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                if info.filename.endswith(".npy"):
                    try:
                        with zf.open(info) as fh:
                            out[info.filename[:-4]] = npy_header(fh, f"{what}: member {info.filename}")
                    except CMDPInputError:  # a damaged member: the loader reports it, naming its key
                        continue
    except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, NotImplementedError):
        return {}
    return out


def model_file_estimate(path: str | os.PathLike[str], what: str) -> Estimate:
    """Reading and validating the model file ``path``: twice its arrays' declared bytes (the
    arrays read, the model's validated copies), at 1 GB/s, from its headers alone."""
    total = sum(array_bytes(shape, dtype) for shape, dtype in npz_headers(path, what).values())
    return Estimate(2.0 * total, 2e-9 * total)


def npy_file_estimate(path: str | os.PathLike[str], what: str) -> Estimate:
    """Reading the ``.npy`` file ``path``: its array's declared bytes (twice, a converted copy),
    from its header alone; a file that is not ``.npy`` costs nothing here (the loader reports it)."""
    try:
        with open(path, "rb") as fh:
            shape, dtype = npy_header(fh, what)
    except (CMDPInputError, OSError):
        return Estimate(0.0, 0.0)
    total = array_bytes(shape, dtype)
    return Estimate(2.0 * total, 2e-9 * total)


def check_samples_per_pair(n: int, name: str = "samples-per-pair") -> None:
    """Per-pair counts must stay exact integers in float64 (the confidence set's arithmetic)."""
    if n > MAX_EXACT_COUNT:
        raise CMDPInputError(
            f"{name}: {n} exceeds 2^53 = {MAX_EXACT_COUNT}, beyond which sample counts are "
            f"not exact in float64; the limit is fixed"
        )


def check_estimate(
    est: Estimate, driver: str, max_memory: float = DEFAULT_MAX_MEMORY, max_seconds: float = DEFAULT_MAX_SECONDS
) -> None:
    """Refuse a job whose estimate exceeds a limit; the message names the argument that drives it.

    Raises:
        CMDPInputError: estimate above ``max_memory`` bytes or ``max_seconds`` seconds.
    """
    if est.bytes > max_memory:
        raise CMDPInputError(
            f"{driver}: needs about {human_bytes(est.bytes)} of memory, above the limit of "
            f"{human_bytes(max_memory)}; reduce it, or raise the limit with --max-memory (e.g. --max-memory 64G)"
        )
    if est.seconds > max_seconds:
        raise CMDPInputError(
            f"{driver}: would take about {human_seconds(est.seconds)}, above the limit of "
            f"{human_seconds(max_seconds)}; reduce it, or raise the limit with --max-time (e.g. --max-time 3d)"
        )


__all__ = [
    "DEFAULT_MAX_MEMORY",
    "DEFAULT_MAX_SECONDS",
    "MAX_EXACT_COUNT",
    "MAX_INT64",
    "MAX_LIMIT",
    "POOL_COLUMNS",
    "UNKNOWN_MACHINE_MEMORY",
    "WORKER_BYTES",
    "Estimate",
    "array_bytes",
    "build_estimate",
    "certify_estimate",
    "check_allocation",
    "check_estimate",
    "check_int64",
    "check_samples_per_pair",
    "elp_estimate",
    "exact_estimate",
    "frontier_estimate",
    "grid_covers_integers",
    "gym_import_estimate",
    "human_bytes",
    "human_seconds",
    "learn_estimate",
    "lp_estimate",
    "machine_memory",
    "master_lp_estimate",
    "model_file_estimate",
    "npy_file_estimate",
    "npy_header",
    "npz_headers",
    "parse_duration",
    "parse_size",
    "pg_estimate",
    "simulator_estimate",
]
