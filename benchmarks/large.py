"""``large``: one cold extended-LP solve on a 20 x 20 grid of scenario 1's kind (speed issue, round two).

The instance: ``S = 400`` (20 x 20 grid, scenario 1's slip kernel, start (0, 0), goal
(19, 19)), ``A = 4``, ``H = 40``, one constraint (cost 1 per move right) at the midpoint
between its smallest achievable cost and the unconstrained optimum's cost; counts of 100
samples per pair drawn from the true kernel; the paper's radius at ``delta_1`` for
``delta = 0.1``, ``U = 1``. Timed: :func:`cmdp_rl.solve_elp` (fast method) from scratch,
without the ``(H, S, A, S)`` optimistic kernel (``want_kernel=False``, what the learners
ask for) and with it (the default), medians; peak traced memory of one solve without the
kernel (``tracemalloc``).
"""

from __future__ import annotations

import tracemalloc
from typing import Any

import numpy as np

from cmdp_rl import CMDP, solve, solve_elp
from cmdp_rl.confidence.radii import delta_1, empirical_kernel, radius
from cmdp_rl.envs.scenarios import scenario_1_grid
from cmdp_rl.planning.lp import min_costs

from .common import DELTA, Col, Table, banner, fmt_mb, fmt_time, measure

SIDE, H, SAMPLES = 20, 40, 100


def instance() -> tuple[CMDP, np.ndarray, np.ndarray]:
    """The benchmark's model, empirical kernel and radii (module docstring)."""
    m = scenario_1_grid(SIDE, H, 1.0)
    free = solve(m.replace(c_bar=np.array([1e6])))
    m = m.replace(c_bar=np.array([(min_costs(m)[0] + free.costs[0]) / 2.0]))
    counts = np.random.default_rng(0).multinomial(SAMPLES, m.P)
    p_hat, n = empirical_kernel(counts)
    return m, p_hat, radius(p_hat, n, delta_1(DELTA, m.S, m.N, 1.0))


def run(quick: bool = False) -> Table:
    """Run the ``large`` benchmark, print and save its table."""
    banner("large: cold extended LP on a 20 x 20 grid, H = 40" + (" (quick)" if quick else ""))
    m, p_hat, beta = instance()
    reps = 3 if quick else 7
    no_kernel = measure(lambda: solve_elp(m, p_hat, beta, want_kernel=False), reps, warmup=1)
    with_kernel = measure(lambda: solve_elp(m, p_hat, beta), 3, warmup=1)
    tracemalloc.start()
    res = solve_elp(m, p_hat, beta, want_kernel=False)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    row: dict[str, Any] = {
        "S": m.S,
        "H": m.H,
        "c_bar": float(m.c_bar[0]),
        "no_kernel": float(no_kernel.stats.median),
        "with_kernel": float(with_kernel.stats.median),
        "peak_bytes": peak,
        "value": res.value,
        "iterations": res.iterations,
    }
    table = Table(
        "large",
        "Cold extended LP, 20 x 20 grid, H = 40, 100 samples per pair (medians)",
        [
            Col("S", "S"),
            Col("H", "H"),
            Col("no_kernel", "cold solve (no kernel)", fmt_time),
            Col("with_kernel", "cold solve + (H, S, A, S) kernel", fmt_time),
            Col("peak_bytes", "traced peak (no kernel)", fmt_mb),
            Col("iterations", "iterations"),
        ],
        notes=[f"optimistic value {res.value:.6f}, threshold {row['c_bar']:.6f}"],
    )
    table.add(**row)
    table.print()
    table.save(quick, params={"side": SIDE, "H": H, "samples": SAMPLES})
    return table
