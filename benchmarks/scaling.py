"""``scaling``: the fast extended LP's time and memory against ``|S|`` and ``H``.

Random instances (:func:`~benchmarks.common.random_state`: ``|A| = 4``,
``N = 1``, ``SUPPORT`` next states per pair, 15-25 samples per pair,
thresholds that bind under optimism) in two sweeps: ``|S|`` in ``S_SWEEP`` at
``H = 20`` and ``H`` in ``H_SWEEP`` at ``|S| = 100``. Each point runs in a fresh
(spawned) process:

* time: median of ``solve_elp(method="fast")`` cold, and warm-started from the
  plan one episode earlier (the counts gain one episode in between);
* memory: the :mod:`tracemalloc` peak of one cold and one warm solve (Python
  and numpy allocations made during the solve); the process's peak RSS
  (``VmHWM`` in ``/proc/self/status``) at the end, and its growth over the
  baseline taken after imports and a tiny warm-up solve (so it covers building
  the instance and all the solves). ``ru_maxrss`` is not used: a spawned
  process's starts at its parent's peak RSS at fork time, which survives ``exec``.

The growth exponent is the least-squares slope of ``log time`` (or memory)
against ``log |S|`` (or ``log H``), over the whole sweep and over its three
largest sizes. A log-log plot goes to ``benchmarks/results/scaling.png``.
"""

from __future__ import annotations

import multiprocessing as mp
import tracemalloc
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from cmdp_rl.planning.elp import solve_elp
from cmdp_rl.planning.result import PlanResult

from .common import (
    RESULTS_DIR,
    Col,
    Table,
    banner,
    fit_exponent,
    fmt_float,
    fmt_mb,
    fmt_ratio,
    fmt_time,
    instance_from_state,
    measure,
    random_state,
)

A, N, SUPPORT, VISITS = 4, 1, 5, (15, 25)
S_SWEEP, H_AT_S = (9, 25, 49, 100, 196, 400), 20
H_SWEEP, S_AT_H = (10, 20, 30, 50), 100
QUICK_S_SWEEP, QUICK_H_SWEEP = (9, 25, 49, 100), (10, 20, 30)
REPS, QUICK_REPS, BUDGET = 10, 3, 30.0


def _proc_status_bytes(key: str) -> int | None:
    """``VmRSS``/``VmHWM`` of this process from ``/proc/self/status`` (``None`` off Linux)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _traced_peak(fn: Callable[[], object]) -> int:
    """Peak bytes allocated (and still live at the peak) while ``fn()`` runs, per tracemalloc."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def measure_point(S: int, H: int, reps: int) -> dict[str, Any]:
    """Time and memory of the fast ELP at one ``(|S|, H)`` (meant to run in a fresh process)."""
    # load every module a solve uses (scipy's HiGHS, ...) before the RSS baseline
    instance_from_state(random_state(5, A, 3, N, seed=0, support=SUPPORT, visits=VISITS), "warm-up")
    rss_base = _proc_status_bytes("VmHWM")
    state = random_state(S, A, H, N, seed=1000 * S + H, support=SUPPORT, visits=VISITS)
    inst = instance_from_state(state, f"S={S} H={H}")

    def cold() -> PlanResult:
        return solve_elp(inst.cmdp, inst.p_hat, inst.beta, method="fast")

    def warm() -> PlanResult:
        return solve_elp(inst.cmdp, inst.p_hat, inst.beta, method="fast", warm_start=inst.previous)

    t_cold = measure(cold, reps, min_reps=3, budget=BUDGET)
    t_warm = measure(warm, reps, min_reps=3, budget=BUDGET)
    peak_cold, peak_warm = _traced_peak(cold), _traced_peak(warm)
    rss_max = _proc_status_bytes("VmHWM")
    return {
        "S": S,
        "H": H,
        "n_q": H * S * S * A,
        "cold": t_cold.median,
        "warm": t_warm.median,
        "cold_reps": t_cold.n,
        "warm_reps": t_warm.n,
        "cold_times": t_cold.times,
        "warm_times": t_warm.times,
        "cold/warm": t_cold.median / t_warm.median,
        "iters_cold": t_cold.result.iterations,
        "iters_warm": t_warm.result.iterations,
        "columns_cold": t_cold.result.info.get("n_columns"),
        "value": t_cold.result.value,
        "value_diff_warm": abs(t_warm.result.value - t_cold.result.value),
        "binding": bool(abs(t_cold.result.max_excess) < 1e-7),
        "peak_cold": peak_cold,
        "peak_warm": peak_warm,
        "rss_max": rss_max,
        "rss_growth": rss_max - rss_base if rss_max is not None and rss_base is not None else None,
    }


def run_point(S: int, H: int, reps: int) -> dict[str, Any]:
    """:func:`measure_point` in a freshly spawned process (clean ``ru_maxrss`` and allocator)."""
    with ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as pool:
        return pool.submit(measure_point, S, H, reps).result()


def exponents(points: Sequence[dict[str, Any]], axis: str, metric: str) -> tuple[float, float]:
    """Growth exponents of ``metric`` against ``axis`` over all points and over the last three."""
    pts = sorted(points, key=lambda p: p[axis])
    xs, ys = [p[axis] for p in pts], [p[metric] for p in pts]
    return fit_exponent(xs, ys), fit_exponent(xs[-3:], ys[-3:])


def plot(s_points: Sequence[dict[str, Any]], h_points: Sequence[dict[str, Any]], path: Path) -> None:
    """Log-log plot: time (top) and tracemalloc peak (bottom) against ``|S|`` and ``H``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullLocator

    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    sweeps = ((s_points, "S", f"|S|  (H = {H_AT_S})"), (h_points, "H", f"H  (|S| = {S_AT_H})"))
    for col, (pts, axis, xlabel) in enumerate(sweeps):
        pts = sorted(pts, key=lambda p: p[axis])
        xs = [p[axis] for p in pts]
        for row, metrics, ylabel, scale in (
            (0, (("cold", "cold"), ("warm", "warm")), "median time per solve [s]", 1.0),
            (1, (("peak_cold", "cold"), ("peak_warm", "warm")), "tracemalloc peak [MB]", 2.0**-20),
        ):
            ax = axes[row, col]
            for key, label in metrics:
                k_all, _ = exponents(pts, axis, key)
                ax.loglog(xs, [p[key] * scale for p in pts], "o-", label=f"{label} (slope {k_all:.2f})")
            y0 = pts[0][metrics[0][0]] * scale
            for k, style in ((1, ":"), (2, "--")):
                ax.loglog(
                    xs,
                    [y0 * (x / xs[0]) ** k for x in xs],
                    style,
                    color="gray",
                    linewidth=1,
                    label=f"slope {k} guide",
                )
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            ax.set_xticks(xs, [str(x) for x in xs])
            ax.xaxis.set_minor_locator(NullLocator())
            ax.grid(True, which="major", alpha=0.3)
            ax.legend()
    fig.suptitle(f"Fast extended LP (column generation): |A| = {A}, N = {N}, {SUPPORT} next states per pair")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run(quick: bool = False) -> Table:
    """Run the ``scaling`` benchmark, print and save its tables and plot."""
    banner("scaling: fast ELP vs |S| and H" + (" (quick)" if quick else ""))
    reps = QUICK_REPS if quick else REPS
    s_sweep, h_sweep = (QUICK_S_SWEEP, QUICK_H_SWEEP) if quick else (S_SWEEP, H_SWEEP)
    cache: dict[tuple[int, int], dict[str, Any]] = {}

    def point(S: int, H: int) -> dict[str, Any]:
        if (S, H) not in cache:
            cache[(S, H)] = run_point(S, H, reps)
            p = cache[(S, H)]
            print(
                f"  S={S:<4} H={H:<3} cold {fmt_time(p['cold']):>9}  "
                f"warm {fmt_time(p['warm']):>9}  peak {fmt_mb(p['peak_cold'])}",
                flush=True,
            )
        return cache[(S, H)]

    s_points = [point(S, H_AT_S) for S in s_sweep]
    h_points = [point(S_AT_H, H) for H in h_sweep]

    table = Table(
        "scaling",
        "Fast extended LP: median time per solve and peak memory",
        [
            Col("sweep", "sweep"),
            Col("S", "S"),
            Col("H", "H"),
            Col("n_q", "n_q"),
            Col("cold", "cold", fmt_time),
            Col("warm", "warm", fmt_time),
            Col("cold/warm", "cold/warm", fmt_ratio),
            Col("iters_cold", "iters cold"),
            Col("iters_warm", "iters warm"),
            Col("binding", "binds", lambda b: "yes" if b else "no"),
            Col("peak_cold", "peak cold", fmt_mb),
            Col("peak_warm", "peak warm", fmt_mb),
            Col("rss_growth", "RSS growth", fmt_mb),
            Col("rss_max", "RSS max", fmt_mb),
        ],
        notes=[
            f"|A| = {A}, N = {N}, {SUPPORT} next states per pair, {VISITS[0]}-{VISITS[1]} "
            f"samples per pair, binding thresholds; up to {reps} repeats",
            "warm: warm-started from the plan one episode earlier; iters: master/pricing "
            "rounds; binds: the cost constraint is active at the optimum",
            "peak: tracemalloc peak of one solve; RSS max: peak RSS of the point's fresh "
            "process; RSS growth: over its baseline after imports (instance + all solves)",
        ],
    )
    for sweep, pts in (("|S|", s_points), ("H", h_points)):
        for p in pts:
            table.add(sweep=sweep, **p)
    table.print()

    fits = Table(
        "scaling_fit",
        "Growth exponents (least-squares slope in log-log)",
        [
            Col("sweep", "sweep"),
            Col("metric", "metric", left=True),
            Col("all", "all sizes", lambda v: fmt_float(v, 3)),
            Col("top3", "3 largest", lambda v: fmt_float(v, 3)),
        ],
    )
    for sweep, pts, axis in (("|S|", s_points, "S"), ("H", h_points, "H")):
        for metric, label in (
            ("cold", "time cold"),
            ("warm", "time warm"),
            ("peak_cold", "peak memory cold"),
            ("peak_warm", "peak memory warm"),
        ):
            k_all, k_top = exponents(pts, axis, metric)
            fits.add(sweep=sweep, metric=label, all=k_all, top3=k_top)
    fits.print()

    params = {
        "A": A,
        "N": N,
        "support": SUPPORT,
        "visits": VISITS,
        "S_sweep": s_sweep,
        "H_at_S": H_AT_S,
        "H_sweep": h_sweep,
        "S_at_H": S_AT_H,
        "reps": reps,
    }
    table.save(quick, params)
    fits.save(quick, params)
    png = RESULTS_DIR / ("scaling-quick.png" if quick else "scaling.png")
    plot(s_points, h_points, png)
    print(f"  plot: {png}\n", flush=True)
    return table
