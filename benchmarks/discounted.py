"""``discounted``: discounted column generation at scale (issue 37, item 3), three parts in one run.

* **threshold** (where a dense LU pays): one policy's work as the planner does it for a column,
  ``PolicySystem(P_pi, gamma, dense=...)`` built, solved for two right-hand sides (reward and a
  cost) and once transposed (its occupancy from ``rho = e_0``), cold (no first guess), dense LU
  against the iterative path, on ONE BLAS thread, the two alternated; Garnet kernels
  (``garnet_kernel(S, 4, 3)``, seed 0), the policy greedy for the reward; ``S`` = 50 .. 2,000,
  ``gamma`` = 0.95 and 0.99; medians of :data:`THRESHOLD_REPS`. ``crossover``: the largest
  ``S`` at which the dense LU is faster for both ``gamma`` (what
  ``cmdp_rl.evaluation.stationary.DENSE_SOLVE_MAX`` is set to).
* **target 1**: ``make("garnet-discounted:S=1000,gamma=0.95")`` (the registry's defaults
  ``A = 4, b = 3, f = 0.5, seed = 0``: the issue's 1,000-state Garnet at gamma 0.95),
  ``solve(m)`` (``method="fast"``) against ``solve(m, method="lp")``, one warm-up call each,
  then alternated (:data:`TARGET1_REPS` each), medians, side by side in one process; also the
  fast method with the dense LU forced (``DENSE_SOLVE_MAX = 1000``, the previous default) in
  the same alternation. Target: fast faster than the LP.
* **target 2**: ``make("garnet-discounted:S=100000,A=10,b=3,gamma=0.99")`` (``N = 1``) in a
  fresh spawned process: the build timed once, a tiny discounted solve first (imports), then
  ``solve(m)`` with the default ``gap_tol = 1e-9 / (1 - gamma)``, :data:`TARGET2_REPS` calls,
  median and maximum; the peak RSS of the child (``VmHWM``) after its first solve; the plan's
  value checked by an independent ``evaluate(m, plan.policy)``. Target: ``"optimal"`` (gap
  within ``gap_tol``) in at most 60 s. The LP is not run there (``S*A = 10^6`` variables; the
  ``sparse`` benchmark's HiGHS took 3 minutes for 10^5). ``--quick`` runs ``S = 10^4`` only.

Outputs: ``results/discounted.json``/``.csv`` (one row per measurement, ``part`` says which).

Run: ``python -m benchmarks --only discounted [--quick]`` or ``python -m benchmarks.discounted
[--quick] [--allow-dirty]``.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from .common import Col, Table, banner, fmt_float, fmt_sci, fmt_time

#: threshold grid: states and discount factors
THRESHOLD_SIZES = (50, 100, 200, 300, 400, 500, 600, 800, 1000, 1500, 2000)
QUICK_THRESHOLD_SIZES = (100, 300, 1000)
THRESHOLD_GAMMAS = (0.95, 0.99)
#: timed repeats of each threshold point (per path, alternated)
THRESHOLD_REPS = 9
#: target 1: the registry spec, alternated repeats per method
TARGET1_SPEC = "garnet-discounted:S=1000,gamma=0.95"
TARGET1_REPS = 7
#: target 2: the registry spec (``{S}`` filled in), repeats, seconds allowed per solve
TARGET2_SPEC = "garnet-discounted:S={S},A=10,b=3,gamma=0.99"
TARGET2_SIZES = (10_000, 100_000)
QUICK_TARGET2_SIZES = (10_000,)
TARGET2_REPS = 3
TARGET2_SECONDS = 60.0


def _median_alternated(fns: dict[str, Callable[[], Any]], reps: int) -> dict[str, tuple[float, Any]]:
    """Each callable once untimed, then ``reps`` rounds calling each in turn: ``{name: (median
    seconds, last result)}`` (alternating spreads the machine's load over all of them)."""
    for fn in fns.values():
        fn()
    times: dict[str, list[float]] = {k: [] for k in fns}
    last: dict[str, Any] = {}
    for _ in range(reps):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            last[k] = fn()
            times[k].append(time.perf_counter() - t0)
    return {k: (statistics.median(v), last[k]) for k, v in times.items()}


# --------------------------------------------------------------------------- threshold


def threshold_point(S: int, gamma: float, reps: int) -> dict[str, Any]:
    """Dense LU against the iterative path for one policy's work (module docstring)."""
    from cmdp_rl.envs.generators import garnet_kernel
    from cmdp_rl.evaluation.stationary import PolicySystem, one_thread, policy_kernel

    rng = np.random.default_rng(0)
    A = 4
    K = garnet_kernel(S, A, 3, rng)
    r, c = rng.random((S, A)), rng.random((S, A))
    acts = r.argmax(axis=1)
    rows = np.arange(S)
    B = np.stack([r[rows, acts], c[rows, acts]], axis=1)
    rho = np.zeros(S)
    rho[0] = 1.0

    def work(dense: bool) -> tuple[np.ndarray, np.ndarray, int]:
        system = PolicySystem(policy_kernel(K, acts), gamma, dense=dense)
        X = system.solve(B)
        d = system.solve(rho, transpose=True)
        return X, d, system.iterations

    with one_thread():
        out = _median_alternated({"dense": lambda: work(True), "iterative": lambda: work(False)}, reps)
    (t_d, (X_d, d_d, _)), (t_i, (X_i, d_i, its)) = out["dense"], out["iterative"]
    return {
        "part": "threshold",
        "S": S,
        "gamma": gamma,
        "dense_s": t_d,
        "iterative_s": t_i,
        "dense_over_iterative": t_d / t_i,
        "krylov_iterations": its,
        "max_diff_values": float(np.abs(X_d - X_i).max()),
        "max_diff_occupancy": float(np.abs(d_d - d_i).max()),
    }


def crossover(rows: Sequence[dict[str, Any]]) -> int | None:
    """The largest ``S`` of the grid at which the dense LU is faster for every ``gamma``."""
    sizes = sorted({int(r["S"]) for r in rows})
    good = [S for S in sizes if all(r["dense_s"] < r["iterative_s"] for r in rows if r["S"] == S)]
    return max(good) if good else None


# --------------------------------------------------------------------------- target 1


def target1(reps: int) -> dict[str, Any]:
    """The fast method against the LP (and against itself with the dense LU forced) at S = 1,000."""
    import cmdp_rl.evaluation.stationary as stationary
    from cmdp_rl import make, solve

    m = make(TARGET1_SPEC)
    default = stationary.DENSE_SOLVE_MAX

    def fast_dense() -> Any:
        stationary.DENSE_SOLVE_MAX = 1000
        try:
            return solve(m)
        finally:
            stationary.DENSE_SOLVE_MAX = default

    out = _median_alternated(
        {"fast": lambda: solve(m), "lp": lambda: solve(m, method="lp"), "fast_dense": fast_dense}, reps
    )
    (t_f, fast), (t_l, lp), (t_fd, _) = out["fast"], out["lp"], out["fast_dense"]
    return {
        "part": "target 1",
        "spec": TARGET1_SPEC,
        "S": m.S,
        "A": m.A,
        "N": m.N,
        "gamma": m.gamma,
        "fast_s": t_f,
        "lp_s": t_l,
        "fast_dense_lu_s": t_fd,
        "lp_over_fast": t_l / t_f,
        "status": fast.status,
        "gap": fast.gap,
        "gap_tol": 1e-9 * m.max_return,
        "value": fast.value,
        "lp_value": lp.value,
        "value_diff": abs(fast.value - lp.value),
        "sweeps": fast.sweeps,
        "iterations": fast.iterations,
        "columns": len(fast.weights) if fast.weights is not None else None,
        "holds": bool(t_f < t_l and fast.status == "optimal"),
    }


# --------------------------------------------------------------------------- target 2


def _peak_mb() -> float | None:
    """This process's peak RSS in MiB (``VmHWM``; ``None`` off Linux)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def target2_point(S: int, reps: int) -> dict[str, Any]:
    """Build and solve the gamma-0.99 Garnet in this (fresh) process (module docstring)."""
    from cmdp_rl import evaluate, make, solve

    solve(make("garnet-discounted:S=30,A=3,gamma=0.99"))  # imports
    spec = TARGET2_SPEC.format(S=S)
    t0 = time.perf_counter()
    m = make(spec)
    build_s = time.perf_counter() - t0
    times: list[float] = []
    res: Any = None
    peak = None
    for _ in range(reps):
        t0 = time.perf_counter()
        res = solve(m)
        times.append(time.perf_counter() - t0)
        peak = _peak_mb() if peak is None else peak
    gap_tol = 1e-9 * m.max_return
    ev = evaluate(m, res.policy)
    return {
        "part": "target 2",
        "spec": spec,
        "S": m.S,
        "A": m.A,
        "N": m.N,
        "gamma": m.gamma,
        "nnz": int(m.nnz),
        "build_s": build_s,
        "fast_s": statistics.median(times),
        "fast_max_s": max(times),
        "fast_times": times,
        "status": res.status,
        "gap": res.gap,
        "gap_tol": gap_tol,
        "value": res.value,
        "evaluate_value_diff": abs(ev.value - res.value),
        "evaluate_max_excess": float(np.max(ev.costs - m.c_bar)),
        "sweeps": res.sweeps,
        "iterations": res.iterations,
        "columns": len(res.weights) if res.weights is not None else None,
        "peak_mb": peak,
        "holds": bool(res.status == "optimal" and res.gap <= gap_tol and max(times) <= TARGET2_SECONDS),
    }


def run_target2(S: int, reps: int) -> dict[str, Any]:
    """:func:`target2_point` in a freshly spawned process."""
    with ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as ex:
        return ex.submit(target2_point, S, reps).result()


# --------------------------------------------------------------------------- run


def run(quick: bool = False) -> Table:
    """Run the ``discounted`` benchmark, print and save its table."""
    banner("discounted: dense LU vs iterative, column generation vs LP, S = 10^5" + (" (quick)" if quick else ""))
    table = Table(
        "discounted",
        "Discounted planning at scale (medians; one BLAS thread for the threshold part)",
        [
            Col("part", "part"),
            Col("S", "S", lambda x: f"{x:,}"),
            Col("gamma", "gamma"),
            Col("dense_s", "dense LU", fmt_time),
            Col("iterative_s", "iterative", fmt_time),
            Col("dense_over_iterative", "dense/iter", lambda x: fmt_float(x, 3)),
            Col("fast_s", "fast", fmt_time),
            Col("lp_s", "LP", fmt_time),
            Col("lp_over_fast", "LP/fast", lambda x: fmt_float(x, 3)),
            Col("gap", "gap", fmt_sci),
            Col("gap_tol", "gap_tol", fmt_sci),
            Col("sweeps", "sweeps"),
            Col("iterations", "iters"),
            Col("holds", "target"),
        ],
    )
    reps = 3 if quick else THRESHOLD_REPS
    rows = []
    for gamma in THRESHOLD_GAMMAS:
        for S in QUICK_THRESHOLD_SIZES if quick else THRESHOLD_SIZES:
            row = threshold_point(S, gamma, reps)
            rows.append(row)
            table.add(**row)
            print(
                f"  threshold S={S:>5} gamma={gamma}: dense {fmt_time(row['dense_s'])}, "
                f"iterative {fmt_time(row['iterative_s'])}",
                flush=True,
            )
    cross = crossover(rows)
    row = target1(3 if quick else TARGET1_REPS)
    table.add(**row)
    print(f"  target 1: fast {fmt_time(row['fast_s'])}, LP {fmt_time(row['lp_s'])}", flush=True)
    for S in QUICK_TARGET2_SIZES if quick else TARGET2_SIZES:
        row = run_target2(S, TARGET2_REPS)
        table.add(**row)
        print(f"  target 2 S={S:,}: fast {fmt_time(row['fast_s'])} ({row['status']}, gap {row['gap']:.2e})", flush=True)
    t1 = next(r for r in table.rows if r["part"] == "target 1")
    t2 = [r for r in table.rows if r["part"] == "target 2"]
    table.notes += [
        f"threshold: dense LU faster up to S = {cross} for both gamma (the largest such S of the grid)",
        f"target 1 {TARGET1_SPEC}: fast {fmt_time(t1['fast_s'])} vs LP {fmt_time(t1['lp_s'])} "
        f"({fmt_float(t1['lp_over_fast'], 3)}x), fast with the dense LU forced {fmt_time(t1['fast_dense_lu_s'])}: "
        f"{'holds' if t1['holds'] else 'MISSED'}",
        *[
            f"target 2 {r['spec']}: median {fmt_time(r['fast_s'])}, max {fmt_time(r['fast_max_s'])} of "
            f"{len(r['fast_times'])}, {r['status']}, gap {r['gap']:.2e} <= gap_tol {r['gap_tol']:.1e}, peak RSS "
            f"{fmt_float(r['peak_mb'], 4)} MiB: {'holds' if r['holds'] else 'MISSED'}"
            for r in t2
        ],
    ]
    table.print()
    table.save(quick, params={"crossover": cross, "threshold_reps": reps, "target2_reps": TARGET2_REPS})
    return table


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m benchmarks.discounted [--quick] [--allow-dirty]``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.discounted", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller grids (results saved as discounted-quick.*)")
    parser.add_argument("--allow-dirty", action="store_true", help="write results from a modified tree")
    args = parser.parse_args(argv)
    from . import common

    common.ALLOW_DIRTY = args.allow_dirty
    try:
        common.check_clean_tree()
    except common.DirtyTree as exc:
        print(f"python -m benchmarks.discounted: {exc}", file=sys.stderr)
        return 2
    run(quick=args.quick)
    return 0


if __name__ == "__main__":
    from benchmarks.discounted import main as _main  # the spawned children import this module by name

    raise SystemExit(_main())
