"""``threads``: the threaded kernels on 1 thread and on every thread, side by side in one run.

The kernels: :func:`cmdp_rl.kernels.csr.dp_sweep` (the planner's pricing step, threaded over
states), :func:`~cmdp_rl.kernels.csr.lex_sweep` (the thresholds' tie-break, over chunks of
states), :func:`~cmdp_rl.kernels.csr.columns_stats` (a plan's evaluation, over its columns: two
here), :func:`cmdp_rl.kernels.spmv.csr_matvec` (one ``K @ x`` of ``evaluate``'s backward pass,
over rows), the forward passes over fixed chunks of source states (:mod:`cmdp_rl.kernels.forward`):
:func:`~cmdp_rl.kernels.csr.column_stats` (the planner's evaluation of each new column),
:func:`~cmdp_rl.kernels.csr.column_distribution` and
:func:`~cmdp_rl.evaluation.evaluate.csr_forward_value_costs` (the learners' scoring of a Markov
table; only where the ``(H, S, A)`` table takes at most :data:`TABLE_MAX_ENTRIES` floats), on the
planner's own CSR arrays (:class:`~cmdp_rl.planning.solve.ColumnPool`) of the sparse Garnet models
of ``benchmarks/sparse.py`` (:func:`benchmarks.sparse.build`, seed 0, ``f = 0.5``); and the
learners' EVI sweep (:func:`cmdp_rl.kernels.evi.evi_sweep`, over states, on a dense ``(S, A, S)``
box, :data:`EVI_CONFIGS`). Per configuration and kernel the thread counts alternate round by round (1,
then every thread, then 1 again ...), each round a batch of calls (its time divided by its size),
so a change of the machine's load hits both counts alike; reported: the median per count, the
speedup (median on 1 thread / median on ``n``), whether every count gave bit-for-bit the same
``V_0`` and actions, and the load average before and after (the machine is shared).

Target (issue 37, item 2): at ``S = 10^5`` at least 1.7 times one core on this 2-core machine.

Run: ``python -m benchmarks --only threads [--quick] [--allow-dirty]`` or
``python -m benchmarks.threads [--quick] [--allow-dirty]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .common import Col, Table, banner, fmt_float, fmt_time
from .sparse import build

#: ``(S, A, b, N, H)`` of the measured models (the S = 10^5 rows of ``benchmarks/sparse.py``)
CONFIGS = ((100_000, 4, 3, 1, 50), (100_000, 10, 5, 3, 100))
QUICK_CONFIGS = ((10_000, 4, 3, 1, 50),)
#: ``(S, A, H)`` of the EVI sweeps' boxes (Garnet kernels with ``b = 3`` successors, 100 samples
#: per pair, radius 0.05 per entry): ``S * A * S`` entries, at or above the threshold for threads (250,000)
EVI_CONFIGS = ((200, 10, 50), (400, 10, 50))
QUICK_EVI_CONFIGS = ((160, 10, 20),)
#: the largest ``(H, S, A)`` Markov table built for the ``csr_forward_value_costs`` row (float64)
TABLE_MAX_ENTRIES = 25_000_000
#: target: speedup on every thread over one thread at S = 10^5
TARGET_SPEEDUP = 1.7
#: rounds (each count once per round) and the seconds one batch should last
ROUNDS, QUICK_ROUNDS, BATCH_SECONDS = 9, 3, 1.0


def _load() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def _kernels(m: Any) -> dict[str, Callable[[], Any]]:
    """The threaded kernels on model ``m``, each a call without arguments: ``dp_sweep`` (reward
    ``r``), ``lex_sweep`` (``r``, then ``-sum_i c_i``), ``columns_stats`` (two columns: the greedy
    policies of ``r`` and of ``-c_0``, tables ``r`` and every ``c_i``) and ``csr_matvec`` (one
    ``K @ x``, as each step of ``evaluate``'s backward pass runs twice), ``column_stats`` and
    ``column_distribution`` (the first column) and ``csr_forward_value_costs`` (the first column as a
    Markov table, if it takes at most ``TABLE_MAX_ENTRIES`` floats)."""
    from cmdp_rl.evaluation.evaluate import csr_forward_value_costs
    from cmdp_rl.kernels.csr import column_distribution, column_stats, columns_stats, dp_sweep, lex_sweep
    from cmdp_rl.kernels.spmv import csr_matvec
    from cmdp_rl.planning.solve import ColumnPool

    pool = ColumnPool(m.K, m.r, m.c, m.s0, m.H)
    ip, ix, data = pool.indptr, pool.indices, pool.data
    reward = np.array(m.r, dtype=np.float64, order="C")
    second = np.ascontiguousarray(-np.asarray(m.c).sum(axis=0), dtype=np.float64)
    columns = np.stack(
        [dp_sweep(ip, ix, data, reward, m.H)[1], dp_sweep(ip, ix, data, np.ascontiguousarray(-m.c[0]), m.H)[1]]
    ).astype(np.uint8)
    tables = np.ascontiguousarray(np.concatenate([m.r[..., None], np.moveaxis(m.c, 0, -1)], axis=-1))
    rho = np.zeros(m.S)
    rho[m.s0] = 1.0
    x = np.random.default_rng(0).random(m.S)
    calls: dict[str, Callable[[], Any]] = {
        "dp_sweep": lambda: dp_sweep(ip, ix, data, reward, m.H),
        "lex_sweep": lambda: lex_sweep(ip, ix, data, reward, second, m.H, 1e-9),
        "columns_stats": lambda: columns_stats(ip, ix, data, columns, tables, rho),
        "csr_matvec": lambda: csr_matvec(ip, ix, data, x),
        "column_stats": lambda: column_stats(ip, ix, data, columns[0], tables, rho),
        "column_distribution": lambda: column_distribution(ip, ix, data, columns[0], m.A, rho),
    }
    if m.H * m.S * m.A <= TABLE_MAX_ENTRIES:
        table = np.zeros((m.H, m.S, m.A))
        np.put_along_axis(table, columns[0][..., None].astype(np.int64), 1.0, axis=2)
        c = np.ascontiguousarray(m.c, dtype=np.float64)
        calls["csr_forward_value_costs"] = lambda: csr_forward_value_costs(ip, ix, data, table, reward, c, m.s0)
    return calls


def _evi_kernels(S: int, A: int, H: int) -> tuple[Any, dict[str, Callable[[], Any]]]:
    """The EVI sweep on the box of a dense Garnet kernel (``b = 3``; empirical kernel of 100
    samples per pair, radius 0.05 per entry) with reward ``r``; returns the kernel's ``nnz`` (``S * A * S``
    entries are swept) and the call."""
    from cmdp_rl.confidence.box import Box, evi
    from cmdp_rl.envs.generators import garnet

    m = garnet(S, A, 3, 1, 0.5, H, 0)
    P = np.asarray(m.P)
    p_hat = np.random.default_rng(0).multinomial(100, P.reshape(S * A, S)).reshape(S, A, S) / 100.0
    box = Box.from_radius(p_hat, np.full((S, A, S), 0.05))
    reward = np.ascontiguousarray(m.r, dtype=np.float64)
    return S * A * S, {"evi_sweep": lambda: evi(box, reward, H)}  # the library's entry point sets the threads


def _same(a: Any, b: Any) -> bool:
    """Bit-for-bit equality of two kernels' outputs (an array or a tuple of arrays)."""
    if isinstance(a, tuple):
        return all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(np.array_equal(a, b))


def point(S: int, A: int, b: int, N: int, H: int, rounds: int) -> list[dict[str, Any]]:
    """One model: per kernel, the per-call medians on 1 thread and on every thread (alternating rounds)."""
    m = build(S, A, b, N, H)
    return _timed(_kernels(m), {"name": f"S{S}-A{A}-b{b}-N{N}-H{H}", "S": S, "A": A, "b": b, "N": N, "H": H,
                                "nnz": int(m.nnz)}, rounds)  # fmt: skip


def evi_point(S: int, A: int, H: int, rounds: int) -> list[dict[str, Any]]:
    """One dense box: the EVI sweep's per-call medians on 1 thread and on every thread."""
    entries, calls = _evi_kernels(S, A, H)
    return _timed(
        calls, {"name": f"evi-S{S}-A{A}-H{H}", "S": S, "A": A, "b": S, "N": 1, "H": H, "nnz": entries}, rounds
    )


def _timed(calls: dict[str, Callable[[], Any]], info: dict[str, Any], rounds: int) -> list[dict[str, Any]]:
    """Per kernel of ``calls``: the per-call medians on 1 thread and on every thread (alternating
    rounds), bit-for-bit identity of the outputs, the load average; ``info``: the model's columns."""
    from cmdp_rl.plumbing.threads import max_threads, set_threads

    counts = sorted({1, max_threads()})
    rows = []
    for kernel, call in calls.items():
        outputs = {}
        for n in counts:  # warm-up (compilation, the thread pool) and the bit-for-bit check
            set_threads(n)
            outputs[n] = call()
        identical = all(_same(o, outputs[1]) for o in outputs.values())
        set_threads(1)
        t0 = time.perf_counter()
        call()
        calls = max(1, round(BATCH_SECONDS / max(time.perf_counter() - t0, 1e-9)))
        times: dict[int, list[float]] = {n: [] for n in counts}
        load_before = _load()
        for _ in range(rounds):
            for n in counts:
                set_threads(n)
                t0 = time.perf_counter()
                for _ in range(calls):
                    call()
                times[n].append((time.perf_counter() - t0) / calls)
        set_threads(None)
        med = {n: float(np.median(t)) for n, t in times.items()}
        top = counts[-1]
        rows.append(
            {
                **info,
                "kernel": kernel,
                "threads": top,
                "sweep_1_s": med[1],
                "sweep_n_s": med[top],
                "sweep_1_times": times[1],
                "sweep_n_times": times[top],
                "speedup": med[1] / med[top],
                "batch": calls,
                "rounds": rounds,
                "identical": identical,
                "load_before": load_before,
                "load_after": _load(),
            }
        )
    return rows


def run(quick: bool = False) -> Table:
    """Run the ``threads`` benchmark, print and save its table."""
    banner("threads: the threaded kernels on 1 thread and on every thread" + (" (quick)" if quick else ""))
    table = Table(
        "threads",
        "The threaded kernels (one call each) on 1 thread and on every thread (medians)",
        [
            Col("name", "configuration"),
            Col("kernel", "kernel"),
            Col("nnz", "nnz", lambda x: f"{x:,}"),
            Col("threads", "threads"),
            Col("sweep_1_s", "1 thread", fmt_time),
            Col("sweep_n_s", "all threads", fmt_time),
            Col("speedup", "speedup", lambda x: fmt_float(x, 3)),
            Col("identical", "bit-identical"),
            Col("load_before", "load before", lambda x: fmt_float(x, 2)),
            Col("load_after", "load after", lambda x: fmt_float(x, 2)),
        ],
        notes=[
            "Garnet models of benchmarks/sparse.py (seed 0, f = 0.5), the planner's CSR arrays, reward r; "
            "thread counts alternate round by round, each round a batch of sweeps (batch time / size); "
            f"median over rounds; load: 1-minute load average of the (shared) machine; {os.cpu_count()} CPUs",
            "evi-* rows: the learners' EVI sweep on a dense (S, A, S) box (nnz: its S*A*S entries)",
        ],
    )
    rounds = QUICK_ROUNDS if quick else ROUNDS
    points = [lambda cfg=cfg: point(*cfg, rounds=rounds) for cfg in (QUICK_CONFIGS if quick else CONFIGS)]
    points += [lambda cfg=cfg: evi_point(*cfg, rounds=rounds) for cfg in (QUICK_EVI_CONFIGS if quick else EVI_CONFIGS)]
    for measure_point in points:
        for row in measure_point():
            table.add(**row)
            print(
                f"  {row['name']:<24} {row['kernel']:<23} 1 thread {fmt_time(row['sweep_1_s']):>8}  "
                f"{row['threads']} threads {fmt_time(row['sweep_n_s']):>8}  speedup {row['speedup']:.2f}  "
                f"identical {row['identical']}",
                flush=True,
            )
    big = [r for r in table.rows if r["S"] >= 100_000 and r["kernel"] == "dp_sweep"]
    if big:
        worst = min(r["speedup"] for r in big)
        table.notes.append(
            f"target: speedup of a dp_sweep at S = 10^5 at least {TARGET_SPEEDUP} on this machine: worst {worst:.2f}, "
            + ("holds" if worst >= TARGET_SPEEDUP else "MISSED")
        )
    table.print()
    table.save(
        quick,
        {
            "configs": [list(c) for c in (QUICK_CONFIGS if quick else CONFIGS)],
            "evi_configs": [list(c) for c in (QUICK_EVI_CONFIGS if quick else EVI_CONFIGS)],
            "rounds": rounds,
        },
    )
    return table


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m benchmarks.threads [--quick] [--allow-dirty]``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.threads", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one S = 10,000 model (results saved as threads-quick.*)")
    parser.add_argument("--allow-dirty", action="store_true", help="write results from a modified tree")
    args = parser.parse_args(argv)
    from . import common

    common.ALLOW_DIRTY = args.allow_dirty
    try:
        common.check_clean_tree()
    except common.DirtyTree as exc:
        print(f"python -m benchmarks.threads: {exc}", file=sys.stderr)
        return 2
    run(quick=args.quick)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
