"""``sparse``: the exact planner on sparse Garnet models, ``S`` = 100 .. 100,000 (scale round).

Instances: :func:`cmdp_rl.envs.generators.garnet` models (``seed = 0``, ``f = 0.5``: the ``(S*A, S)``
CSR kernel of :func:`~cmdp_rl.envs.generators.garnet_kernel` with ``b`` successors per pair, rewards
and ``N`` costs uniform in [0, 1], ``s0 = 0``, thresholds from the exact planner), always kept
sparse (``to_sparse()`` for the small ones ``garnet`` builds dense). Each instance is built once
in the parent, saved as ``.npz`` and loaded by the children.

Configurations: :data:`CONFIGS`, 24 named ones (six per ``S``: a base ``A4-b3-N1-H50``, one
change each of ``A``, ``b``, ``N``, ``H``, and all four high ``A10-b5-N3-H100``), plus three extra
target rows (:data:`TARGET_A`, :data:`TARGET_B`, :data:`TARGET_D`: the build of
``make("garnet:S=5000,A=4,b=3,N=2,H=50")`` itself, timed in a fresh process after compiling on a
tiny Garnet model, as a multiple of one sweep of the model it builds: target at most 60, memory
under 2 GB).

Per configuration, in a fresh spawned process (the "fast" child):

* the default ``solve(cmdp)`` (``gap_tol = 1e-9 H``; target (b): ``1e-6 H``): one warm-up
  call after compiling on a tiny model (compilation excluded), then the median of repeated
  calls (fewer for big models, :func:`reps_for`);
* one sparse DP sweep :func:`cmdp_rl.kernels.csr.dp_sweep` on the planner's own CSR arrays (int64,
  as :class:`~cmdp_rl.planning.solve.ColumnPool` passes them) with reward ``r``, timed in
  batches (median over batches of the batch time divided by its size), in the same process;
* peak memory: the child's peak RSS (``VmHWM`` of ``/proc/self/status``, reset by ``exec``,
  unlike ``ru_maxrss`` which a spawned child inherits from its parent) right after its first
  solve, so it covers the interpreter, numpy/scipy/numba, the loaded model and one solve;
  ``extra`` is that peak minus the RSS just before the solve. ``tracemalloc`` is not used:
  the arrays allocated inside compiled code bypass it;
* at :data:`FRONTIER_AT`: ``cmdp_rl.frontier(cmdp, constraint=0, points=50)`` (when the
  library has it) as a multiple of one solve.

The HiGHS LP (``solve(cmdp, method="lp")``) runs in a second fresh child: a tiny LP first
(imports), then the model's LP, killed when one call takes more than :data:`LP_LIMIT` seconds
(reported as ``> 180 s``; its peak RSS at that moment is recorded); repeated while a call takes
under :data:`LP_REPEAT_BELOW` seconds. It is skipped up front when ``H*S*A`` (its number of
variables) exceeds :data:`LP_MAX_VARS`: on the reference machine 20,000 variables took 4-12 s,
60,000 took 52 s, 100,000 (``S1e2-A10-b5-N3-H100``) took 173-196 s, right at the limit, and
200,000 (``S = 1,000, A = 4, H = 50``) did not finish in 300 s.

Scale rows (issue 37, item 4; :data:`SCALE_CONFIGS`, named ``scale ...``): registry Garnet models
(``make("garnet:S=...,A=10,b=3,N=1,H=100")`` at ``S`` = 10^4, 10^5, 10^6, ``S = 10^5, b = 5, N = 3``,
and the discounted ``garnet-discounted:S=100000,A=10,b=3,gamma=0.99``) built, solved and
evaluated (``evaluate(m, plan)``) in one fresh child each, with one sweep on the same thread count,
each stage's peak RSS and the library's memory estimates (:mod:`benchmarks.sparse_scale`); a
least-squares power law ``c S^k`` of the times and the memory over ``S`` = 10^4 .. 10^6 goes into
the results (``params.scale_fit``). ``--only scale`` runs these rows alone and saves them as
``results/sparse_scale.json``/``.csv`` (the grid's ``sparse.json`` is left as it was measured).

Outputs: ``results/sparse.json``/``.csv`` (one row per configuration) and ``results/sparse.png``
(time against ``S``, log-log, both planners and one sweep, one line per ``A`` at ``b = 3, N = 1,
H = 50``). ``python -m benchmarks.sparse --table`` prints the README's Markdown table from
``sparse.json``.

Run: ``python -m benchmarks --only sparse [--quick] [--allow-dirty]`` or
``python -m benchmarks.sparse [--quick] [--allow-dirty] [--only NAME ...]``; ``--table`` prints the
README table and ``--plot`` redraws the plot from the saved results (no measurement).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .common import RESULTS_DIR, Col, Table, banner, fmt_float, fmt_ratio, fmt_sci, fmt_time, measure
from .sparse_scale import fit_lines, power_fit, run_scale, scale_spec, scale_targets

#: threshold fraction of the Garnet thresholds
F = 0.5
#: the instances' seed (the same stream as ``garnet(..., seed=SEED)``)
SEED = 0
#: seconds after which one HiGHS LP call is killed
LP_LIMIT = 180.0
#: the LP is skipped up front above this many variables ``H*S*A`` (module docstring)
LP_MAX_VARS = 150_000
#: the LP is called again (up to 3 calls) while a call takes less than this
LP_REPEAT_BELOW = 10.0
#: target (a): fast planner at least this many times faster than the LP
TARGET_SPEEDUP = 100.0
#: target (b): solve / one sweep at most this, peak memory below this many MiB
TARGET_RATIO, TARGET_PEAK_MB = 100.0, 2048.0
#: frontier points
FRONTIER_POINTS = 50
#: a sweep batch lasts about this long
SWEEP_BATCH_SECONDS = 0.25


@dataclass(frozen=True)
class Config:
    """One named benchmark configuration.

    Attributes:
        name: label, e.g. ``"S1e4-A10-b5-N3-H100"``.
        S, A, b, N, H: states, actions, successors per pair, constraints, horizon.
        role: ``"grid"`` (one of the 24), ``"target a"`` or ``"target b"``.
        gap_per_step: ``gap_tol = gap_per_step * H`` (``None``: the default ``solve``).
    """

    name: str
    S: int
    A: int
    b: int
    N: int
    H: int
    role: str = "grid"
    gap_per_step: float | None = None

    @property
    def key(self) -> tuple[int, int, int, int, int]:
        """The instance (two configurations with the same key share one model)."""
        return (self.S, self.A, self.b, self.N, self.H)

    @property
    def lp_vars(self) -> int:
        """Variables of the occupation-measure LP, ``H*S*A``."""
        return self.H * self.S * self.A

    @property
    def gap_tol(self) -> float | None:
        return None if self.gap_per_step is None else self.gap_per_step * self.H


def _sname(S: int) -> str:
    e = round(math.log10(S))
    return f"S1e{e}" if 10**e == S else f"S{S}"


def grid_config(S: int, A: int, b: int, N: int, H: int) -> Config:
    return Config(f"{_sname(S)}-A{A}-b{b}-N{N}-H{H}", S, A, b, N, H)


#: per ``S``: the base, one change of each parameter, and every parameter high
VARIANTS = ((4, 3, 1, 50), (10, 3, 1, 50), (4, 5, 1, 50), (4, 3, 3, 50), (4, 3, 1, 100), (10, 5, 3, 100))
SIZES = (100, 1_000, 10_000, 100_000)
#: the 24 named configurations
CONFIGS: tuple[Config, ...] = tuple(grid_config(S, *v) for S in SIZES for v in VARIANTS)
#: target (a): the fast planner against the HiGHS LP (extra row)
TARGET_A = Config("target-a S150-A4-b3-N2-H30", 150, 4, 3, 2, 30, role="target a")
#: target (b): solve(cmdp, gap_tol=1e-6 H) / one sweep and peak memory (extra row; same model as
#: the grid's S1e4-A10-b5-N3-H100, which is solved there with the default gap_tol)
TARGET_B = Config("target-b S1e4-A10-b5-N3-H100 gap 1e-6H", 10_000, 10, 5, 3, 100, "target b", 1e-6)
#: target (d): building this registry spec, as a multiple of one sweep of the model
TARGET_D = Config("target-d make(garnet:S=5000,A=4,b=3,N=2,H=50)", 5_000, 4, 3, 2, 50, role="target d")
TARGET_D_SPEC = "garnet:S=5000,A=4,b=3,N=2,H=50"
TARGET_BUILD_RATIO = 60.0
#: the scale rows (issue 37, item 4; :mod:`benchmarks.sparse_scale`): registry Garnet models built,
#: solved and evaluated in a fresh process each; ``H = 0`` is the discounted Garnet (gamma 0.99)
SCALE_CONFIGS: tuple[Config, ...] = tuple(
    Config(f"scale {'discounted ' if H == 0 else ''}{_sname(S)}-A{A}-b{b}-N{N}-H{H}", S, A, b, N, H, role="scale")
    for S, A, b, N, H in (
        (10_000, 10, 3, 1, 100),
        (100_000, 10, 3, 1, 100),
        (1_000_000, 10, 3, 1, 100),
        (100_000, 10, 5, 3, 100),
        (100_000, 10, 3, 1, 0),
    )
)
#: ``--quick``: the scale rows at small sizes (the fit from two points)
QUICK_SCALE_CONFIGS: tuple[Config, ...] = tuple(
    Config(f"scale {_sname(S)}-A10-b3-N1-H100", S, 10, 3, 1, 100, role="scale") for S in (1_000, 10_000)
)
#: the configuration where the frontier is timed (a mid-size one)
FRONTIER_AT = "S1e4-A4-b3-N1-H50"
QUICK_FRONTIER_AT = "S1e3-A4-b3-N1-H50"
#: ``--quick``: a tiny subset (the LP on two small models, no S >= 10,000)
QUICK_NAMES = ("S1e2-A4-b3-N1-H50", "S1e3-A4-b3-N1-H50", "S1e3-A10-b3-N1-H50")


def all_configs(quick: bool) -> list[Config]:
    """The configurations of a run, in running order (targets after their size class)."""
    if quick:
        grid = [c for c in CONFIGS if c.name in QUICK_NAMES]
        return sorted([*grid, TARGET_A, *QUICK_SCALE_CONFIGS], key=lambda c: (c.S, c.role != "grid"))
    return sorted([*CONFIGS, TARGET_A, TARGET_B, TARGET_D, *SCALE_CONFIGS], key=lambda c: (c.S, c.role != "grid"))


# --------------------------------------------------------------------------- instances


def build(S: int, A: int, b: int, N: int, H: int, seed: int = SEED, f: float = F) -> Any:
    """The sparse Garnet CMDP ``garnet(S, A, b, N, f, H, seed)`` (module docstring)."""
    from cmdp_rl.envs.generators import garnet

    return garnet(S, A, b, N, f, H, seed).to_sparse()


def garnet_point(spec: str, quick: bool) -> dict[str, Any]:
    """Target (d): ``make(spec)`` timed in this fresh process (median of repeats after compiling
    every kernel on a tiny Garnet build), one sweep of the built model, the peak RSS."""
    from cmdp_rl import make
    from cmdp_rl.kernels.csr import dp_sweep
    from cmdp_rl.planning.solve import ColumnPool

    make("garnet:S=40,A=4,b=3,N=2,H=5")  # compilation
    rss_before = _status_mb("VmRSS")
    t0 = time.perf_counter()
    m = make(spec)
    first = time.perf_counter() - t0
    peak = _peak_mb()
    t_build = measure(lambda: make(spec), 3 if quick else 5, min_reps=1, budget=30.0)
    pool = ColumnPool(m.K, m.r, m.c, m.s0, m.H)
    reward = np.array(m.r, dtype=np.float64, order="C")

    def sweep() -> object:
        return dp_sweep(pool.indptr, pool.indices, pool.data, reward, m.H)

    sweep()
    calls = max(1, math.ceil(SWEEP_BATCH_SECONDS / max(measure(sweep, 3, min_reps=3, budget=5.0).median, 1e-9)))

    def batch() -> None:
        for _ in range(calls):
            sweep()

    sweep_s = measure(batch, 7, min_reps=3, budget=30.0).median / calls
    return {
        "nnz": int(m.nnz),
        "build_s": t_build.median,
        "build_first_s": first,
        "sweep_s": sweep_s,
        "ratio_build_to_sweep": t_build.median / sweep_s,
        "peak_mb_fast": peak,
        "extra_mb_fast": peak - rss_before if rss_before is not None else None,
        "slater_gap": float(m.meta["slater_gap"]),
    }


def _tiny() -> Any:
    """A tiny sparse model with the big ones' dtypes (compiles every kernel a solve uses)."""
    return build(20, 3, 2, 2, 5)


# --------------------------------------------------------------------------- memory


def _status_mb(key: str, pid: int | str = "self") -> float | None:
    """``VmHWM``/``VmRSS`` of a process in MiB from ``/proc`` (``None`` off Linux)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def _peak_mb() -> float:
    """This process's peak RSS in MiB (``VmHWM``; ``ru_maxrss`` off Linux)."""
    hwm = _status_mb("VmHWM")
    if hwm is not None:
        return hwm
    scale = 1.0 if sys.platform == "darwin" else 1024.0  # bytes on macOS, KiB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20


# --------------------------------------------------------------------------- fast child


def reps_for(cfg: Config, quick: bool) -> tuple[int, int, float]:
    """``(max repeats, min repeats, budget seconds)`` of the timed solves (after one warm-up)."""
    if quick:
        return 3, 1, 5.0
    if cfg.S >= 100_000:
        return 3, 2, 60.0
    if cfg.S >= 10_000:
        return 5, 3, 30.0
    return 9, 5, 10.0


def fast_point(path: str, cfg: dict[str, Any], quick: bool, frontier_points: int | None) -> dict[str, Any]:
    """Fast planner, one sweep and (optionally) the frontier on one saved model (fresh process)."""
    from cmdp_rl import CMDP, solve
    from cmdp_rl.kernels.csr import dp_sweep
    from cmdp_rl.planning.solve import ColumnPool

    c = Config(**cfg)
    tiny = _tiny()
    solve(tiny)
    frontier_fn: Callable[..., Any] | None = None
    if frontier_points is not None:
        import cmdp_rl

        frontier_fn = getattr(cmdp_rl, "frontier", None)
        if frontier_fn is not None:
            frontier_fn(tiny, constraint=0, points=frontier_points)
    m = CMDP.load(path)
    gap_tol = c.gap_tol
    pool = ColumnPool(m.K, m.r, m.c, m.s0, m.H)  # the planner's own CSR arrays
    reward = np.array(m.r, dtype=np.float64, order="C")  # writable, as the planner's priced rewards

    rss_before = _status_mb("VmRSS")
    first_t0 = time.perf_counter()
    first = solve(m, gap_tol=gap_tol)  # warm-up on this model, and the memory measurement
    first_s = time.perf_counter() - first_t0
    peak = _peak_mb()
    del first
    reps, min_reps, budget = reps_for(c, quick)
    t_solve = measure(lambda: solve(m, gap_tol=gap_tol), reps, min_reps=min_reps, budget=budget)
    res = t_solve.result

    def sweep() -> object:
        return dp_sweep(pool.indptr, pool.indices, pool.data, reward, m.H)

    sweep()  # warm-up
    t0 = time.perf_counter()
    sweep()
    one = time.perf_counter() - t0
    calls = max(1, math.ceil(SWEEP_BATCH_SECONDS / max(one, 1e-9)))

    def batch() -> None:
        for _ in range(calls):
            sweep()

    sreps = 3 if quick or c.S >= 100_000 else 7
    t_sweep = measure(batch, sreps, min_reps=3, budget=30.0)
    sweep_s = t_sweep.median / calls
    out: dict[str, Any] = {
        "nnz": int(m.nnz),
        "solve_s": t_solve.median,
        "solve_first_s": first_s,
        "solve_times": t_solve.times,
        "solve_reps": t_solve.n,
        "sweep_s": sweep_s,
        "sweep_batch": calls,
        "sweep_reps": t_sweep.n,
        "sweeps": int(res.sweeps),
        "iterations": int(res.iterations),
        "gap": float(res.gap),
        "gap_tol": float(gap_tol if gap_tol is not None else 1e-9 * m.H),
        "value": float(res.value),
        "solve_status": res.status,
        "columns": len(res.weights) if res.weights is not None else None,
        "pool": res.info.get("pool"),
        "peak_mb_fast": peak,
        "extra_mb_fast": peak - rss_before if rss_before is not None else None,
    }
    if frontier_points is not None:
        if frontier_fn is None:
            out["frontier_status"] = "skipped: cmdp_rl.frontier does not exist"
        else:
            t_fr = measure(
                lambda: frontier_fn(m, constraint=0, points=frontier_points), 3 if quick else 5, min_reps=1, budget=60.0
            )
            fr = t_fr.result
            out.update(
                frontier_s=t_fr.median,
                frontier_reps=t_fr.n,
                frontier_sweeps=int(getattr(fr, "sweeps", -1)),
                frontier_breakpoints=None if getattr(fr, "breakpoints", None) is None else len(fr.breakpoints),
                frontier_over_solve=t_fr.median / t_solve.median,
                frontier_status="ok",
            )
    return out


def run_fast(path: str, cfg: Config, quick: bool, frontier_points: int | None) -> dict[str, Any]:
    """:func:`fast_point` in a freshly spawned process."""
    with ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as ex:
        return ex.submit(fast_point, path, asdict(cfg), quick, frontier_points).result()


# --------------------------------------------------------------------------- LP child


def _lp_child(path: str, conn: Any, max_calls: int = 3) -> None:
    """Send ``("ready",)``, then ``("call", seconds, peak MiB, extra MiB, value, status)`` per LP call,
    then ``("end",)``; ``("error", text)`` on an exception."""
    try:
        from cmdp_rl import CMDP, solve

        solve(_tiny(), method="lp")  # imports, HiGHS loaded
        m = CMDP.load(path)
        conn.send(("ready",))
        total = 0.0
        for _ in range(max_calls):
            rss_before = _status_mb("VmRSS")
            t0 = time.perf_counter()
            res = solve(m, method="lp")
            dt = time.perf_counter() - t0
            peak = _peak_mb()
            extra = peak - rss_before if rss_before is not None else None
            conn.send(("call", dt, peak, extra, float(res.value), res.status))
            total += dt
            if dt >= LP_REPEAT_BELOW or total >= 3 * LP_REPEAT_BELOW:
                break
        conn.send(("end",))
    except Exception as exc:  # reported in the row, the benchmark goes on
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def _stop(proc: Any) -> None:
    """End our own LP child (terminate, then kill)."""
    if proc.is_alive():
        proc.terminate()
        proc.join(10)
    if proc.is_alive():
        proc.kill()
        proc.join(10)


def run_lp(path: str, limit: float = LP_LIMIT, max_calls: int = 3) -> dict[str, Any]:
    """The HiGHS LP on a saved model in a fresh process; one call longer than ``limit`` is killed."""
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_lp_child, args=(path, child, max_calls), daemon=True)
    proc.start()
    child.close()
    times: list[float] = []
    out: dict[str, Any] = {"lp_s": None, "lp_times": times, "peak_mb_lp": None, "extra_mb_lp": None}
    try:
        if not parent.poll(600):
            out["lp_status"] = "LP child did not start"
            return out
        msg = parent.recv()
        if msg[0] == "error":
            out["lp_status"] = f"LP error: {msg[1]}"
            return out
        while True:
            if not parent.poll(limit):
                peak = _status_mb("VmHWM", proc.pid) if proc.pid is not None else None
                if not times:
                    out.update(lp_status=f"LP > {limit:.0f} s (killed)", peak_mb_lp=peak, lp_killed=True)
                else:
                    out["lp_status"] = "ok"
                break
            try:
                msg = parent.recv()
            except EOFError:
                out["lp_status"] = "ok" if times else "LP child died"
                break
            if msg[0] == "call":
                _, dt, peak, extra, value, status = msg
                times.append(dt)
                out["peak_mb_lp"] = peak if out["peak_mb_lp"] is None else max(out["peak_mb_lp"], peak)
                out["extra_mb_lp"] = extra if out["extra_mb_lp"] is None else max(out["extra_mb_lp"], extra)
                out.update(lp_value=value, lp_solve_status=status)
            elif msg[0] == "end":
                out["lp_status"] = "ok"
                break
            else:
                out["lp_status"] = f"LP error: {msg[1]}"
                break
    finally:
        _stop(proc)
        parent.close()
    if times:
        out["lp_s"] = float(np.median(times))
        out["lp_reps"] = len(times)
    return out


# --------------------------------------------------------------------------- one row


def bench(cfg: Config, path: str, build_s: float, quick: bool, frontier_at: str) -> dict[str, Any]:
    """Measure one configuration (fast child, then LP child) and return its row."""
    row: dict[str, Any] = {
        "name": cfg.name,
        "role": cfg.role,
        "S": cfg.S,
        "A": cfg.A,
        "b": cfg.b,
        "N": cfg.N,
        "H": cfg.H,
        "lp_vars": cfg.lp_vars,
        "build_s": build_s,
    }
    status: list[str] = []
    if cfg.role == "scale":  # built by the registry in its own fresh process (benchmarks.sparse_scale)
        row.update(run_scale(scale_spec(cfg.S, cfg.A, cfg.b, cfg.N, cfg.H), quick))
        row.update(lp_s=None, peak_mb_lp=None, lp_status="not run (a scale row)")
        row["status"] = "ok" if row.get("solve_status") == "optimal" else f"solve {row.get('solve_status')}"
        return row
    if cfg.role == "target d":
        with ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as ex:
            row.update(ex.submit(garnet_point, TARGET_D_SPEC, quick).result())
        row.update(lp_s=None, peak_mb_lp=None, lp_status="not run (a build)", status="ok")
        return row
    frontier_points = FRONTIER_POINTS if cfg.name == frontier_at else None
    try:
        row.update(run_fast(path, cfg, quick, frontier_points))
        row["ratio_solve_to_sweep"] = row["solve_s"] / row["sweep_s"]
        row["ratio_per_sweep_used"] = row["ratio_solve_to_sweep"] / max(row["sweeps"], 1)
        if row["solve_status"] != "optimal":
            status.append(f"solve {row['solve_status']}")
    except Exception as exc:  # a failed configuration is reported, the others still run
        status.append(f"solve error: {type(exc).__name__}: {exc}")
    if cfg.lp_vars > LP_MAX_VARS:
        row.update(lp_s=None, peak_mb_lp=None, lp_status=f"LP skipped (H*S*A = {cfg.lp_vars:.1e} > {LP_MAX_VARS:.1e})")
        status.append("LP skipped")
    else:
        row.update(run_lp(path, max_calls=1 if quick else 3))
        if row["lp_status"] != "ok":
            status.append(row["lp_status"])
        if row.get("lp_value") is not None and row.get("value") is not None:
            row["lp_value_diff"] = abs(row["lp_value"] - row["value"])
    solve_s, lp_s = row.get("solve_s"), row.get("lp_s")
    row["speedup_vs_lp"] = lp_s / solve_s if lp_s is not None and solve_s else None
    if row.get("lp_killed") and solve_s:
        row["speedup_vs_lp_min"] = LP_LIMIT / solve_s  # the LP took longer than this
    row["status"] = "; ".join(status) if status else "ok"
    return row


# --------------------------------------------------------------------------- plot


def plot(rows: Sequence[dict[str, Any]], path: Path, b: int = 3, N: int = 1, H: int = 50) -> None:
    """Log-log: time against ``S`` at ``(b, N, H)``; fast solve, HiGHS LP and one sweep, one line per ``A``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullLocator

    fig, ax = plt.subplots(figsize=(8, 5.5))
    colors = {4: "tab:blue", 10: "tab:orange"}
    sizes: set[int] = set()
    for A in sorted({int(r["A"]) for r in rows}):
        pts = sorted(
            (r for r in rows if r["role"] == "grid" and (r["A"], r["b"], r["N"], r["H"]) == (A, b, N, H)),
            key=lambda r: r["S"],
        )
        if not pts:
            continue
        col = colors.get(A, None)
        fast = [(r["S"], r["solve_s"]) for r in pts if r.get("solve_s")]
        sizes.update(s for s, _ in fast)
        if fast:
            ax.loglog(*zip(*fast, strict=True), "o-", color=col, label=f"fast solve, A = {A}")
        lp = [(r["S"], r["lp_s"]) for r in pts if r.get("lp_s")]
        if lp:
            ax.loglog(*zip(*lp, strict=True), "s--", color=col, label=f"HiGHS LP, A = {A}")
        killed = [r["S"] for r in pts if r.get("lp_killed")]
        if killed:
            ax.loglog(
                killed,
                [LP_LIMIT] * len(killed),
                "^",
                color=col,
                markersize=9,
                label=f"HiGHS LP > {LP_LIMIT:.0f} s, A = {A}",
            )
        sw = [(r["S"], r["sweep_s"]) for r in pts if r.get("sweep_s")]
        if sw:
            ax.loglog(*zip(*sw, strict=True), ".:", color=col, alpha=0.6, label=f"one DP sweep, A = {A}")
    ax.axhline(LP_LIMIT, color="gray", linewidth=0.8, linestyle="-.")
    ax.text(min(sizes or {100}), LP_LIMIT * 1.15, f"LP limit {LP_LIMIT:.0f} s", color="gray", fontsize=8)
    skipped = sorted({r["S"] for r in rows if str(r.get("lp_status", "")).startswith("LP skipped")})
    note = f"\nHiGHS LP skipped (H*S*A > {LP_MAX_VARS:,}) at S = {', '.join(f'{x:,}' for x in skipped)}"
    if sizes:
        xs = sorted(sizes)
        ax.set_xticks(xs, [f"{x:,}" for x in xs])
        ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("S (states)" + (note if skipped else ""))
    ax.set_ylabel("median wall time [s]")
    ax.set_title(f"Exact planning on sparse Garnet models: b = {b}, N = {N}, H = {H}, f = {F}")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# --------------------------------------------------------------------------- tables


def _lp_cell(row: dict[str, Any]) -> str:
    if row.get("lp_s") is not None:
        return fmt_time(row["lp_s"])
    st = str(row.get("lp_status", ""))
    if row.get("lp_killed"):
        return f"> {LP_LIMIT:.0f} s"
    if st.startswith("LP skipped"):
        return "skipped"
    return st or "-"


def _speedup_cell(row: dict[str, Any]) -> str:
    if row.get("speedup_vs_lp") is not None:
        return fmt_ratio(row["speedup_vs_lp"])
    if row.get("speedup_vs_lp_min") is not None:
        return "> " + fmt_ratio(row["speedup_vs_lp_min"])
    return "-"


def _mb(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x / 1024:.2f} GB" if x >= 1024 else f"{x:.0f} MB"


def targets(rows: Sequence[dict[str, Any]]) -> list[str]:
    """One line per target: measured ratio, the target and whether it holds."""
    lines = []
    a = next((r for r in rows if r.get("role") == "target a"), None)
    if a is not None:
        sp_ = a.get("speedup_vs_lp")
        ok = sp_ is not None and sp_ >= TARGET_SPEEDUP
        lines.append(
            f"target (a) S=150 A=4 b=3 N=2 H=30: fast solve {fmt_time(a.get('solve_s'))} vs HiGHS LP "
            f"{_lp_cell(a)}: {_speedup_cell(a)} faster (target >= {TARGET_SPEEDUP:.0f}x): {'holds' if ok else 'MISSED'}"
        )
    b = next((r for r in rows if r.get("role") == "target b"), None)
    if b is not None:
        ratio_ = b.get("ratio_solve_to_sweep")
        peak = b.get("peak_mb_fast")
        ok_r = ratio_ is not None and ratio_ <= TARGET_RATIO
        ok_m = peak is not None and peak < TARGET_PEAK_MB
        lines.append(
            f"target (b) S=10,000 A=10 b=5 N=3 H=100, gap_tol=1e-6*H: solve {fmt_time(b.get('solve_s'))} / one sweep "
            f"{fmt_time(b.get('sweep_s'))} = {fmt_float(ratio_, 3)} (target <= {TARGET_RATIO:.0f}): "
            f"{'holds' if ok_r else 'MISSED'}; peak RSS {_mb(peak)} (target < 2 GB): {'holds' if ok_m else 'MISSED'}"
        )
    d = next((r for r in rows if r.get("role") == "target d"), None)
    if d is not None and d.get("ratio_build_to_sweep") is not None:
        ok_d = d["ratio_build_to_sweep"] <= TARGET_BUILD_RATIO
        ok_dm = d.get("peak_mb_fast") is not None and d["peak_mb_fast"] < TARGET_PEAK_MB
        lines.append(
            f"target (d) make({TARGET_D_SPEC!r}): {fmt_time(d.get('build_s'))} / one sweep "
            f"{fmt_time(d.get('sweep_s'))} = {fmt_float(d.get('ratio_build_to_sweep'), 3)} "
            f"(target <= {TARGET_BUILD_RATIO:.0f}): {'holds' if ok_d else 'MISSED'}; peak RSS "
            f"{_mb(d.get('peak_mb_fast'))} (target < 2 GB): {'holds' if ok_dm else 'MISSED'}"
        )
    fr = next((r for r in rows if r.get("frontier_status") is not None), None)
    if fr is not None:
        if fr["frontier_status"] == "ok":
            bp = fr.get("frontier_breakpoints")
            lines.append(
                f"frontier (c) at {fr['name']}: frontier(cmdp, constraint=0, points={FRONTIER_POINTS}) "
                f"{fmt_time(fr.get('frontier_s'))} = {fmt_float(fr.get('frontier_over_solve'), 3)} solves "
                f"({fr.get('frontier_sweeps')} sweeps"
                + (f", {bp} exact breakpoints" if bp is not None else ", grid points by regula falsi on the slope")
                + ")"
            )
        else:
            lines.append(f"frontier (c) at {fr['name']}: {fr['frontier_status']}")
    return lines


#: the rows of the compact (README) table: per ``S`` the base and the all-high configuration
COMPACT_VARIANTS = ("-A4-b3-N1-H50", "-A10-b5-N3-H100")
#: the columns of the compact table (indices into the full table's)
COMPACT_COLUMNS = (0, 7, 9, 10, 12, 15)


def markdown_table(path: Path | None = None, quick: bool = False, compact: bool = False) -> str:
    """The performance table (Markdown) rendered from ``sparse.json``: every configuration and
    column (docs/scale.md), or ``compact``: per ``S`` the base and all-high rows and the targets,
    the main columns (the README)."""
    path = path or RESULTS_DIR / ("sparse-quick.json" if quick else "sparse.json")
    data = json.loads(Path(path).read_text())
    rows = data["rows"]
    head = [
        "configuration",
        "S",
        "A",
        "b",
        "N",
        "H",
        "nnz",
        "solve",
        "one sweep",
        "solve / sweep",
        "HiGHS LP",
        "LP / solve",
        "sweeps",
        "iterations",
        "gap",
        "peak RSS solve",
        "peak RSS LP",
    ]
    right = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
    lines = [
        "| " + " | ".join(head) + " |",
        "|" + "|".join("---:" if j in right else "---" for j in range(len(head))) + "|",
    ]
    if compact:
        head = [head[j] for j in COMPACT_COLUMNS]
        lines = [
            "| " + " | ".join(head) + " |",
            "|" + "|".join("---" if j == 0 else "---:" for j in range(len(head))) + "|",
        ]
    for r in rows:
        if r["role"] == "target d":  # a build, not a solve: its line is among the targets below
            continue
        if compact and r["role"] == "grid" and not r["name"].endswith(COMPACT_VARIANTS):
            continue
        name = r["name"] if r["role"] == "grid" else f"**{r['name']}**"
        cells = [
            name,
            f"{r['S']:,}",
            str(r["A"]),
            str(r["b"]),
            str(r["N"]),
            str(r["H"]),
            f"{r['nnz']:,}" if r.get("nnz") is not None else "-",
            fmt_time(r.get("solve_s")),
            fmt_time(r.get("sweep_s")),
            fmt_float(r.get("ratio_solve_to_sweep"), 3),
            _lp_cell(r),
            _speedup_cell(r),
            str(r.get("sweeps", "-")),
            str(r.get("iterations", "-")),
            fmt_sci(r.get("gap")),
            _mb(r.get("peak_mb_fast")),
            _mb(r.get("peak_mb_lp")),
        ]
        if compact:
            cells = [cells[j] for j in COMPACT_COLUMNS]
        lines.append("| " + " | ".join(cells) + " |")
    meta = data.get("meta", {})
    foot = [
        "",
        *[f"- {t}" for t in targets(rows)],
        f"- medians after a warm-up call (compilation excluded); peak RSS of a fresh process (interpreter and "
        f"libraries included); HiGHS LP killed after {LP_LIMIT:.0f} s, skipped when H*S*A > {LP_MAX_VARS:,}; "
        f"commit {str(meta.get('git_commit', ''))[:10]}{' (modified tree)' if meta.get('src_modified') else ''}, "
        f"{meta.get('cpus', '?')} CPUs, {meta.get('date', '')}",
    ]
    return "\n".join(lines + foot)


# --------------------------------------------------------------------------- run


def run(quick: bool = False, only: Sequence[str] | None = None) -> Table:
    """Run the ``sparse`` benchmark, print and save its table and plot."""
    banner("sparse: exact planner on sparse Garnet models, S = 100 .. 100,000" + (" (quick)" if quick else ""))
    configs = all_configs(quick)
    if only:
        configs = [c for c in configs if c.name in only or any(o in c.name for o in only)]
    frontier_at = QUICK_FRONTIER_AT if quick else FRONTIER_AT
    # the scale rows alone (--only scale) have their own results file: the grid's rows stay as measured
    stem = "sparse_scale" if configs and all(c.role == "scale" for c in configs) else "sparse"
    table = Table(
        stem,
        "Exact planning on sparse Garnet models (medians; fast = solve(cmdp), LP = solve(cmdp, method='lp'))",
        [
            Col("name", "configuration"),
            Col("nnz", "nnz", lambda x: f"{x:,}"),
            Col("build_s", "build", fmt_time),
            Col("solve_s", "solve", fmt_time),
            Col("sweep_s", "one sweep", fmt_time),
            Col("ratio_solve_to_sweep", "solve/sweep", lambda x: fmt_float(x, 3)),
            Col("lp_cell", "HiGHS LP"),
            Col("speedup_cell", "LP/solve"),
            Col("sweeps", "sweeps"),
            Col("iterations", "iters"),
            Col("gap", "gap", fmt_sci),
            Col("peak_mb_fast", "peak fast", _mb),
            Col("peak_mb_lp", "peak LP", _mb),
            Col("status", "status", left=True),
        ],
        notes=[
            f"Garnet models (seed {SEED}, f = {F}), sparse CSR kernels; solve: default gap_tol = 1e-9 H "
            "(target b: 1e-6 H), median of repeats after one warm-up call in a fresh process (compilation "
            "excluded); one sweep: cmdp_rl.kernels.csr.dp_sweep with reward r, timed in batches",
            f"HiGHS LP in its own fresh process, killed after {LP_LIMIT:.0f} s per call, skipped when "
            f"H*S*A > {LP_MAX_VARS:,}; peak: peak RSS (VmHWM) of the fresh process after its first call "
            "(interpreter, libraries and model included)",
        ],
    )
    workdir = tempfile.mkdtemp(prefix="cmdp-sparse-bench-")
    models: dict[tuple[int, ...], tuple[str, float]] = {}
    start = time.perf_counter()
    build(20, 3, 2, 2, 5)  # compile the builders before timing builds
    try:
        for cfg in configs:
            if cfg.role == "scale":
                row = bench(cfg, "", 0.0, quick, frontier_at)
                row["lp_cell"], row["speedup_cell"] = _lp_cell(row), _speedup_cell(row)
                table.add(**row)
                print(
                    f"  {cfg.name:<40} build {fmt_time(row.get('build_s')):>8}  "
                    f"solve {fmt_time(row.get('solve_s')):>8}  evaluate {fmt_time(row.get('evaluate_s')):>8}  "
                    f"sweep {fmt_time(row.get('sweep_s')):>8}  "
                    f"peak {_mb(row.get('peak_mb_fast'))}  [{time.perf_counter() - start:.0f} s]",
                    flush=True,
                )
                continue
            if cfg.role == "target d":  # the build itself is what is measured, in a fresh process
                row = bench(cfg, "", 0.0, quick, frontier_at)
                row["lp_cell"], row["speedup_cell"] = _lp_cell(row), _speedup_cell(row)
                table.add(**row)
                print(
                    f"  {cfg.name:<40} build {fmt_time(row.get('build_s')):>8}  "
                    f"sweep {fmt_time(row.get('sweep_s')):>8}  ratio {fmt_float(row.get('ratio_build_to_sweep'), 3)}"
                )
                continue
            if cfg.key not in models:
                t0 = time.perf_counter()
                m = build(*cfg.key)
                dt = time.perf_counter() - t0
                p = os.path.join(workdir, "S{}-A{}-b{}-N{}-H{}.npz".format(*cfg.key))
                m.save(p)
                del m
                models[cfg.key] = (p, dt)
            p, build_s = models[cfg.key]
            row = bench(cfg, p, build_s, quick, frontier_at)
            row["lp_cell"], row["speedup_cell"] = _lp_cell(row), _speedup_cell(row)
            table.add(**row)
            print(
                f"  {cfg.name:<40} build {fmt_time(build_s):>8}  solve {fmt_time(row.get('solve_s')):>8}  "
                f"sweep {fmt_time(row.get('sweep_s')):>8}  ratio {fmt_float(row.get('ratio_solve_to_sweep'), 3):>6}  "
                f"LP {row['lp_cell']:>9}  it {row.get('iterations', '-')}  peak {_mb(row.get('peak_mb_fast'))}  "
                f"[{time.perf_counter() - start:.0f} s]",
                flush=True,
            )
    finally:
        for p, _ in models.values():
            try:
                os.remove(p)
            except OSError:
                pass
        try:
            os.rmdir(workdir)
        except OSError:
            pass
    fit = power_fit(table.rows)
    table.notes += targets(table.rows) + scale_targets(table.rows) + fit_lines(fit)
    table.print()
    params = {
        "configs": [asdict(c) for c in configs],
        "seed": SEED,
        "f": F,
        "lp_limit_s": LP_LIMIT,
        "lp_max_vars": LP_MAX_VARS,
        "frontier_at": frontier_at,
        "frontier_points": FRONTIER_POINTS,
        "plot": {"b": 3, "N": 1, "H": 50},
        "scale_fit": fit,
    }
    jpath, _ = table.save(quick, params)
    if stem == "sparse_scale":
        return table
    png = RESULTS_DIR / ("sparse-quick.png" if quick else "sparse.png")
    plot(table.rows, png)
    print(f"  plot: {png}\n", flush=True)
    print(markdown_table(jpath), end="\n\n", flush=True)
    return table


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m benchmarks.sparse [--quick] [--allow-dirty] [--only NAME ...] [--table] [--plot]``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.sparse", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tiny subset (results saved as sparse-quick.*)")
    parser.add_argument("--allow-dirty", action="store_true", help="write results from a modified tree")
    parser.add_argument("--only", action="append", metavar="NAME", help="configurations whose name contains NAME")
    parser.add_argument("--table", action="store_true", help="print the README's Markdown table from sparse.json")
    parser.add_argument("--plot", action="store_true", help="redraw sparse.png from sparse.json")
    parser.add_argument("--compact", action="store_true", help="with --table: the README's compact table")
    args = parser.parse_args(argv)
    if args.table or args.plot:
        stem = "sparse-quick" if args.quick else "sparse"
        if args.plot:
            plot(json.loads((RESULTS_DIR / f"{stem}.json").read_text())["rows"], RESULTS_DIR / f"{stem}.png")
            print(f"plot: {RESULTS_DIR / f'{stem}.png'}")
        if args.table:
            print(markdown_table(quick=args.quick, compact=args.compact))
        return 0
    from . import common

    common.ALLOW_DIRTY = args.allow_dirty
    try:
        common.check_clean_tree()
    except common.DirtyTree as exc:
        print(f"python -m benchmarks.sparse: {exc}", file=sys.stderr)
        return 2
    run(quick=args.quick, only=args.only)
    return 0


if __name__ == "__main__":
    from benchmarks.sparse import main as _main  # the spawned children import this module by name

    raise SystemExit(_main())
