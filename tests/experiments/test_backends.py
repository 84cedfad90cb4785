"""A sweep's progress: runs weighted by their expected cost (issue 'real models', item 6: ``make demo``
showed no ETA for ten minutes, then 1:29:53 with 7:47 left)."""

from __future__ import annotations

import heapq
import io
import json
import os
import re
import sys
from pathlib import Path

import pytest

from cmdp_rl.experiments import ExperimentConfig, run_sweep
from cmdp_rl.experiments.backends import run_cost, start_pool
from cmdp_rl.experiments.runner import RunSpec, run_specs
from cmdp_rl.plumbing.progress import MAX_LINES, ProgressBar, WorkBar

#: seconds per run of the full protocol, measured by scripts/sweep_run_times.py (kernels compiled):
#: the truth the simulated sweep below runs on
MEASURED = {
    (row["scenario"], row["algorithm"]): row["median_seconds"]
    for row in json.loads((Path(__file__).resolve().parents[2] / "docs" / "sweep-run-times.json").read_text())["rows"]
}


def test_run_cost_by_hand() -> None:
    # 1a: S = 9, A = 4, H = 10, N = 1, so S^2 A H (N + 1) = 6480 and S A = 36
    crl = RunSpec("1a", "online-crl", 0, 0, 0.1, "fast", episodes=1000)
    assert run_cost(crl) == pytest.approx(8e-9 * 6480 * 1000)
    gmbl = RunSpec("1a", "gmbl", 0, 0, 0.1, "fast", budgets=(10, 100))
    assert run_cost(gmbl) == pytest.approx(5e-9 * 36 * 110 + 5e-8 * 6480 * 2)
    # 1b: S = 25, A = 4, H = 15, N = 1: 75000 per episode, 11.6 times 1a's (measured: 10 to 14)
    assert run_cost(RunSpec("1b", "online-crl", 0, 0, 0.1, "fast", episodes=1000)) == pytest.approx(8e-9 * 75000 * 1000)


def _simulated_sweep(workers: int = 2) -> list[tuple[float, RunSpec]]:
    """The full protocol on ``workers`` workers, longest first (as the parallel backends order it),
    each run taking its measured time: ``(finish time, run)`` in completion order."""
    specs = sorted(run_specs(ExperimentConfig()), key=run_cost, reverse=True)
    free = [(0.0, w) for w in range(workers)]
    ends = []
    for spec in specs:
        t, w = heapq.heappop(free)
        t += MEASURED[(spec.scenario, spec.algorithm)]
        ends.append((t, spec))
        heapq.heappush(free, (t, w))
    return sorted(ends, key=lambda e: e[0])


def _first_eta(bar_of, advance) -> tuple[float, float]:
    """Drive a bar through the simulated sweep on a fake clock: ``(time, ETA)`` of the first line
    with an ETA."""
    ends = _simulated_sweep()
    clock = [0.0]
    out = io.StringIO()
    bar = bar_of(out)
    bar._time = lambda: clock[0]
    bar.start_t = bar.last_print_t = 0.0
    for t, spec in ends:
        clock[0] = t
        advance(bar, spec)
    bar.close()
    for line in out.getvalue().splitlines():
        m = re.search(r"\[(\d+):(\d+)<(\d+):(\d+)", line)
        if m:
            a, b, c, d = map(int, m.groups())
            return 60 * a + b, 60 * c + d
    raise AssertionError(out.getvalue())


def test_weighted_by_cost_the_first_eta_is_honest_counted_in_runs_it_was_not() -> None:
    finish = _simulated_sweep()[-1][0]  # 178 s on two workers
    specs = run_specs(ExperimentConfig())
    work = sum(run_cost(s) for s in specs)
    t, eta = _first_eta(
        lambda out: WorkBar(work, len(specs), desc="runs", unit="run", file=out),
        lambda bar, spec: bar.advance(run_cost(spec), spec.run_id),
    )
    left = finish - t
    print(f"work: first ETA at {t:.0f} s: {eta} s for {left:.0f} s left (finish {finish:.0f} s)")
    assert t < 0.2 * finish and left / 1.5 <= eta <= left * 1.5, (t, eta, left)
    # what make demo showed: a tenth of the runs are all of 1b's Online-CRL, the longest; the rate
    # per run from them puts the ETA at 12 times what is left, and only late
    t_runs, eta_runs = _first_eta(
        lambda out: ProgressBar(total=len(specs), desc="runs", unit="run", file=out), lambda bar, spec: bar.update()
    )
    print(f"runs: first ETA at {t_runs:.0f} s: {eta_runs} s for {finish - t_runs:.0f} s left")
    assert t_runs > 3 * t and eta_runs > 8 * (finish - t_runs)


class _Log:
    """A stderr without isatty (a notebook's, a logger's): the bar writes whole lines there."""

    def __init__(self) -> None:
        self.text = ""

    def write(self, s: str) -> None:
        self.text += s

    def flush(self) -> None:
        pass


def test_a_sweep_s_bar_moves_by_each_run_s_cost(tmp_path, monkeypatch) -> None:
    cfg = ExperimentConfig.quick(
        scenarios=("1a", "1b"), runs=2, gmbl_n_min=5, gmbl_points=3, gmbl_n_max=200, episodes=30, checkpoints=3, jobs=1
    )
    log = _Log()
    monkeypatch.setattr(sys, "stderr", log)
    report = run_sweep(cfg, tmp_path / "runs", progress=True)
    monkeypatch.undo()
    assert len(report.computed) == 8
    lines = log.text.splitlines()
    assert 2 <= len(lines) <= MAX_LINES and "0/8 runs" in lines[0] and "8/8 runs" in lines[-1]
    specs = {s.run_id: s for s in run_specs(cfg)}
    total = sum(run_cost(s) for s in specs.values())
    done = 0.0
    shown = {int(m.group(2)): int(m.group(1)) for m in re.finditer(r"(\d+)%\|.*?(\d+)/8 runs", log.text)}
    assert len(shown) >= 3
    for k, run_id in enumerate(report.computed, start=1):  # inline: config order
        done += run_cost(specs[run_id])
        if k in shown:
            assert shown[k] == int(f"{100 * done / total:.0f}"), (k, shown)  # tqdm's {percentage:3.0f}
    # 1b's runs (S = 25, H = 15) weigh about 11 times 1a's of the same budget
    one_a, one_b = (run_cost(specs[f"{sc}__online-crl__000"]) for sc in ("1a", "1b"))
    assert 10 < one_b / one_a < 13


def test_a_worker_of_jobs_runs_on_one_thread_unless_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 37, item 2: ``--jobs`` workers get one thread each (``jobs`` workers on all the cores),
    whatever the driver's own default (all cores), unless the count was set."""
    from cmdp_rl.plumbing.threads import ENV_VAR, get_threads, set_threads

    monkeypatch.delenv(ENV_VAR, raising=False)
    set_threads(None)
    pool = start_pool(1)
    try:
        assert pool.apply(get_threads) == 1
        assert pool.apply(os.getenv, (ENV_VAR,)) == "1"  # the worker's own children inherit it
    finally:
        pool.terminate()
        pool.join()
