"""The scale rows of the ``sparse`` benchmark (issue 37, item 4): registry Garnet models built,
solved and evaluated in one fresh process each, up to a million states.

Per row (a registry spec, :func:`scale_spec`), in a freshly spawned child:

* compile first: a tiny model of the same kind built, solved and evaluated;
* ``make(spec)`` timed once (``build_s``: the kernel drawn and validated, the thresholds' three
  exact solves), its peak RSS (``peak_build_mb``);
* ``solve(m)`` (``method="fast"``, default ``gap_tol``): the first call, then repeats while the
  budget lasts (:func:`scale_reps`), median (``solve_s``), peak RSS (``peak_solve_mb``);
* ``evaluate(m, plan)``: the plan's columns evaluated exactly (no ``(H, S, A)`` table), median
  (``evaluate_s``), peak RSS (``peak_evaluate_mb``);
* finite horizon: one sweep :func:`cmdp_rl.kernels.csr.dp_sweep` on the planner's CSR arrays with
  reward ``r`` on the same thread count, median of batches (``sweep_s``), and the ratios
  ``solve / sweep`` and ``evaluate / sweep``;
* ``peak_mb``: the child's peak RSS (``VmHWM``) over the whole row; each stage's own peak by
  resetting ``VmHWM`` (``/proc/self/clear_refs``) before it, ``base_mb`` the RSS after the
  compile step (interpreter and libraries);
* the library's estimates for the row, checked before building (``build_estimate_bytes`` as the
  registry computes it for a Garnet spec, ``solve_estimate_bytes``), against
  ``DEFAULT_MAX_MEMORY``.

:func:`power_fit` fits ``y = c S^k`` by least squares on ``log y`` against ``log S`` over the rows
of one family (``A = 10, b = 3, N = 1, H = 100``), for the times and the memory above the
interpreter; ``python -m benchmarks.sparse --only scale`` writes the rows and the fit into
``results/sparse_scale.json`` (``params.scale_fit``) and prints it.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from .common import fmt_float, fmt_time, measure

#: discount factor of the discounted scale row (issue 37, item 3)
SCALE_GAMMA = 0.99
#: targets of issue 37, item 4: solve / sweep, evaluate / sweep, peak RSS (MB) at a million states;
#: peak RSS (MB) of S = 10^5, A = 10, b = 5, N = 3, H = 100; the discounted solve (seconds)
TARGET_SOLVE_SWEEPS, TARGET_EVALUATE_SWEEPS, TARGET_MILLION_MB = 30.0, 3.0, 8000.0
TARGET_N3_MB, TARGET_DISCOUNTED_S = 1000.0, 60.0
#: the family whose rows the power law is fitted on: (A, b, N, H)
FIT_FAMILY = (10, 3, 1, 100)
#: the quantities fitted: row key -> label
FIT_KEYS = {
    "build_s": "build time [s]",
    "solve_s": "solve time [s]",
    "sweep_s": "one sweep [s]",
    "evaluate_s": "evaluate time [s]",
    "extra_mb": "peak RSS above the interpreter [MB]",
}


def scale_spec(S: int, A: int, b: int, N: int, H: int) -> str:
    """The registry spec of a scale row: ``garnet:...`` (finite horizon ``H``), or for ``H = 0``
    ``garnet-discounted:...`` at ``gamma = SCALE_GAMMA``."""
    if H:
        return f"garnet:S={S},A={A},b={b},N={N},H={H}"
    return f"garnet-discounted:S={S},A={A},b={b},gamma={SCALE_GAMMA}"  # one cost (N = 1)


def scale_reps(S: int, quick: bool) -> tuple[int, float]:
    """``(max repeats, budget seconds)`` of the timed solves and evaluations of a row."""
    if quick:
        return 3, 5.0
    if S >= 1_000_000:
        return 1, 0.0  # the first solve is the only one: minutes each
    if S >= 100_000:
        return 3, 120.0
    return 5, 30.0


def _status_mb(key: str) -> float | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def _reset_peak() -> bool:
    """Reset this process's ``VmHWM`` to its current RSS (Linux ``clear_refs`` 5)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _timed(fn: Any, first: float, reps: int, budget: float) -> float:
    """Median of the first call's time and repeats of ``fn`` within ``budget`` seconds."""
    times = [first]
    if reps > 1 and first < budget:
        times += measure(fn, reps - 1, min_reps=1, budget=max(budget - first, 0.0)).times
    return float(np.median(times))


def scale_point(spec: str, quick: bool) -> dict[str, Any]:
    """Build, solve, evaluate and sweep the registry model ``spec`` in this (fresh) process."""
    from cmdp_rl import evaluate, make, solve
    from cmdp_rl.kernels.csr import dp_sweep
    from cmdp_rl.plumbing import limits
    from cmdp_rl.plumbing.threads import get_threads

    discounted = spec.startswith("garnet-discounted")
    tiny = make(scale_spec(40, 3, 2, 1, 0 if discounted else 5))
    evaluate(tiny, solve(tiny))  # compile every kernel of the row
    base = _status_mb("VmRSS")
    out: dict[str, Any] = {"spec": spec, "threads": get_threads(), "base_mb": base, "peak_reset": _reset_peak()}
    t0 = time.perf_counter()
    m = make(spec)
    out.update(build_s=time.perf_counter() - t0, peak_build_mb=_status_mb("VmHWM"), nnz=int(m.nnz))
    T = limits.passes(m)
    if not discounted:
        out["build_estimate_bytes"] = limits.build_estimate(m.S, m.A, T, m.N, float(m.nnz)).bytes
    out["solve_estimate_bytes"] = limits.exact_estimate(m.S, m.A, T, m.N, float(m.nnz)).bytes
    out["max_memory_bytes"] = float(limits.DEFAULT_MAX_MEMORY)
    reps, budget = scale_reps(m.S, quick)
    _reset_peak()
    t0 = time.perf_counter()
    plan = solve(m)
    first = time.perf_counter() - t0
    out["peak_solve_mb"] = _status_mb("VmHWM")
    out["solve_s"] = _timed(lambda: solve(m), first, reps, budget)
    out.update(
        solve_first_s=first,
        solve_status=plan.status,
        gap=float(plan.gap),
        sweeps=int(plan.sweeps),
        iterations=int(plan.iterations),
        columns=None if plan.weights is None else len(plan.weights),
        value=float(plan.value),
    )
    _reset_peak()
    t0 = time.perf_counter()
    ev = evaluate(m, plan)
    first = time.perf_counter() - t0
    out["peak_evaluate_mb"] = _status_mb("VmHWM")
    out["evaluate_s"] = _timed(lambda: evaluate(m, plan), first, reps, budget)
    out["evaluate_value_diff"] = abs(float(ev.value) - float(plan.value))
    if not discounted:
        K = m.K
        indptr = np.ascontiguousarray(K.indptr, dtype=np.int64)
        indices = np.ascontiguousarray(K.indices, dtype=np.int64)
        reward = np.array(m.r, dtype=np.float64, order="C")
        sweep = lambda: dp_sweep(indptr, indices, K.data, reward, m.H)  # noqa: E731
        sweep()
        out["sweep_s"] = measure(sweep, 3 if quick or m.S >= 1_000_000 else 5, min_reps=3, budget=60.0).median
        out["ratio_solve_to_sweep"] = out["solve_s"] / out["sweep_s"]
        out["ratio_evaluate_to_sweep"] = out["evaluate_s"] / out["sweep_s"]
    peaks = [out.get(k) for k in ("peak_build_mb", "peak_solve_mb", "peak_evaluate_mb")]
    out["peak_mb_fast"] = max(p for p in peaks if p is not None) if all(p is not None for p in peaks) else None
    if out["peak_mb_fast"] is not None and base is not None:
        out["extra_mb"] = out["peak_mb_fast"] - base
    return out


def run_scale(spec: str, quick: bool) -> dict[str, Any]:
    """:func:`scale_point` in a freshly spawned process."""
    with ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as ex:
        return ex.submit(scale_point, spec, quick).result()


def power_fit(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``y = c S^k`` by least squares on ``(log10 S, log10 y)`` for each of :data:`FIT_KEYS`, over
    the scale rows of the family :data:`FIT_FAMILY` (two sizes at least): ``{key: {"exponent": k,
    "coefficient": c, "sizes": [...], "at_1e7": c 10^(7 k)}}`` (``at_1e7``: the extrapolation
    to ten million states)."""
    fam = [r for r in rows if r.get("role") == "scale" and (r["A"], r["b"], r["N"], r["H"]) == FIT_FAMILY]
    out: dict[str, Any] = {}
    for key in FIT_KEYS:
        pts = sorted((float(r["S"]), float(r[key])) for r in fam if r.get(key) is not None and r[key] > 0)
        if len({s for s, _ in pts}) < 2:
            continue
        x, y = np.log10([s for s, _ in pts]), np.log10([v for _, v in pts])
        k, a = np.polyfit(x, y, 1)
        out[key] = {
            "label": FIT_KEYS[key],
            "exponent": float(k),
            "coefficient": float(10.0**a),
            "sizes": [int(s) for s, _ in pts],
            "at_1e7": float(10.0 ** (a + 7.0 * k)),
        }
    return out


def fit_lines(fit: dict[str, Any]) -> list[str]:
    """The fit, one line per quantity."""
    return [
        f"fit {v['label']}: {v['coefficient']:.3g} * S^{v['exponent']:.3f} over S = "
        f"{', '.join(f'{s:,}' for s in v['sizes'])}; at S = 10^7: {v['at_1e7']:.3g}"
        for v in fit.values()
    ]


def _mb(x: float | None) -> str:
    return "-" if x is None else (f"{x / 1024:.2f} GB" if x >= 1024 else f"{x:.0f} MB")


def scale_targets(rows: Sequence[dict[str, Any]]) -> list[str]:
    """One line per scale target of issue 37, item 4: measured, target, holds or MISSED."""
    lines = []
    for r in rows:
        if r.get("role") != "scale" or r.get("solve_s") is None:
            continue
        peak = r.get("peak_mb_fast")
        est = r.get("build_estimate_bytes") or r.get("solve_estimate_bytes")
        limit = r.get("max_memory_bytes")
        est_txt = "-" if est is None else f"{est / 2**30:.2f} GiB"
        if r["S"] >= 1_000_000:
            ok = (
                (r.get("ratio_solve_to_sweep") or math.inf) <= TARGET_SOLVE_SWEEPS
                and (r.get("ratio_evaluate_to_sweep") or math.inf) <= TARGET_EVALUATE_SWEEPS
                and peak is not None
                and peak < TARGET_MILLION_MB
                and est is not None
                and limit is not None
                and est < limit
            )
            lines.append(
                f"target {r['name']}: solve {fmt_time(r['solve_s'])} = {fmt_float(r.get('ratio_solve_to_sweep'), 3)} "
                f"sweeps (<= {TARGET_SOLVE_SWEEPS:.0f}), evaluate = {fmt_float(r.get('ratio_evaluate_to_sweep'), 3)} "
                f"sweeps (<= {TARGET_EVALUATE_SWEEPS:.0f}), peak RSS {_mb(peak)} (< 8 GB), estimate {est_txt} "
                f"(< 8 GiB): {'holds' if ok else 'MISSED'}"
            )
        elif r["N"] == 3:  # the 2.89 GB was the solve's peak (the model loaded, not built)
            solved = [r.get("peak_solve_mb"), r.get("peak_evaluate_mb")]
            top = max(solved) if all(p is not None for p in solved) else None  # type: ignore[type-var]
            ok = top is not None and top < TARGET_N3_MB
            lines.append(
                f"target {r['name']}: peak RSS of solve and evaluate {_mb(top)} (< 1 GB): "
                f"{'holds' if ok else 'MISSED'}; of the build {_mb(r.get('peak_build_mb'))}"
            )
        elif r["H"] == 0:
            ok = r["solve_s"] <= TARGET_DISCOUNTED_S and r.get("solve_status") == "optimal"
            lines.append(
                f"target {r['name']}: solve {fmt_time(r['solve_s'])}, {r.get('solve_status')} (<= 60 s, "
                f"certified): {'holds' if ok else 'MISSED'}; peak RSS {_mb(peak)}"
            )
    return lines


__all__ = ["power_fit", "run_scale", "scale_point", "scale_spec", "scale_targets"]
