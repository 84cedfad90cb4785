"""The restricted master LP of column generation: the compiled dense simplex
([`master_lp`][cmdp_rl.kernels.master_lp.master_lp]) and HiGHS
([`MasterLP`][cmdp_rl.planning.master.MasterLP]), its fallback.

Over ``K`` columns with values ``V_j`` and ``(N,)`` costs ``C_j`` and thresholds ``b``, phase 2 is

    max  sum_j w_j V_j   s.t.  sum_j w_j C_{i,j} <= b_i,  sum_j w_j = 1,  w >= 0,

and phase 1 minimizes the worst excess ``t`` (``sum_j w_j C_{i,j} - t <= b_i``); the duals are the
cost multipliers ``lambda >= 0`` and the convexity dual ``nu``.
"""

from __future__ import annotations

from typing import Protocol

import highspy
import numpy as np
from numpy.typing import NDArray

from cmdp_rl.kernels.master_lp import MASTER_OK, master_lp
from cmdp_rl.planning.pool import ColumnStat
from cmdp_rl.planning.result import SolverError

Array = NDArray[np.float64]
Mask = NDArray[np.bool_]

_INF = highspy.kHighsInf
#: the options of the master LP's HiGHS object: a few rows and columns, so presolve and
#: parallelism only add overhead
_HIGHS_OPTIONS: dict[str, bool | float | str] = {
    "output_flag": False,
    "presolve": "off",
    "solver": "simplex",
    "simplex_strategy": 1,  # dual simplex
    "run_crossover": "on",
    "threads": 1,
    "primal_feasibility_tolerance": 1e-10,
    "dual_feasibility_tolerance": 1e-10,
}
#: what the master LP tries, in order, when HiGHS stops without an optimum (any status other
#: than optimal, e.g. "Not Set" after "dual simplex ratio test failed due to excessive dual
#: values" on costs near the tolerances): the same options from a cold basis, the primal
#: simplex, the interior point method (with crossover), presolve on
_HIGHS_RETRIES: tuple[dict[str, bool | float | str], ...] = (
    {},
    {"simplex_strategy": 4},
    {"solver": "ipm"},
    {"presolve": "on", "solver": "choose"},
)


#: whether this process has created a HiGHS object (HiGHS prints its banner with the first)
_BANNER_DONE = False


def new_highs() -> highspy.Highs:
    """A silent HiGHS object with the master LP's options. HiGHS prints its banner on stdout
    when the first object of the process is created: stdout is pointed at ``/dev/null`` for
    that moment, so that a command's ``--json`` output stays one JSON object."""
    import os
    import sys

    global _BANNER_DONE
    saved = -1
    if not _BANNER_DONE:
        try:
            sys.stdout.flush()
            saved = os.dup(1)
        except (OSError, ValueError):  # no file descriptor 1
            saved = -1
        if saved >= 0:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.close(devnull)
    try:
        h = highspy.Highs()  # type: ignore[no-untyped-call]
        _BANNER_DONE = True
    finally:
        if saved >= 0:
            os.dup2(saved, 1)
            os.close(saved)
    for key, value in _HIGHS_OPTIONS.items():
        h.setOptionValue(key, value)
    return h


def run_highs(h: highspy.Highs) -> highspy.HighsModelStatus:
    """Run HiGHS on its model; when it stops without an optimum, retry with the strategies of
    ``_HIGHS_RETRIES`` in turn (the options are restored afterwards). The last model status."""
    h.run()
    status = h.getModelStatus()
    for options in _HIGHS_RETRIES:
        if status == highspy.HighsModelStatus.kOptimal:
            break
        try:
            for key, value in options.items():
                h.setOptionValue(key, value)
            h.clearSolver()
            h.run()
            status = h.getModelStatus()
        finally:
            for key in options:
                h.setOptionValue(key, _HIGHS_OPTIONS[key])
    return status


class ColumnStats(Protocol):
    """What the master LP reads of a column: its ``value`` and ``(N,)`` ``costs``."""

    @property
    def value(self) -> float: ...
    @property
    def costs(self) -> Array: ...


class MasterLP:
    """The restricted master LP in HiGHS, kept in memory so added columns re-solve warm.

    Rows: ``N`` cost rows ``sum_j w_j C_{i,j} (- t) <= c_bar_i`` and the convexity
    row ``sum_j w_j = 1``. Column 0 is the phase-1 excess ``t`` (objective
    ``max -t``); phase 2 fixes ``t`` at 0 (the caller puts a worst excess within
    ``FEAS_TOL`` into ``c_bar``) and maximizes ``sum_j w_j V_j``. With the maximization sense
    HiGHS' row duals are ``lambda >= 0`` and ``nu`` directly.
    """

    def __init__(self, h: highspy.Highs, c_bar: Array, phase1: bool) -> None:
        self.h = h
        h.clearModel()
        h.changeObjectiveSense(highspy.ObjSense.kMaximize)
        self.N = N = c_bar.size
        self.c_bar = c_bar
        h.addRows(
            N + 1,
            np.concatenate([np.full(N, -_INF), [1.0]]),
            np.concatenate([c_bar, [1.0]]),
            0,
            np.zeros(0, np.int32),
            np.zeros(0, np.int32),
            np.zeros(0),
        )
        self.phase1 = phase1
        t_lo, t_up = (-_INF, _INF) if phase1 else (0.0, 0.0)
        h.addCol(-1.0 if phase1 else 0.0, t_lo, t_up, N, np.arange(N, dtype=np.int32), -np.ones(N))
        self._rows = np.arange(N + 1, dtype=np.int32)

    def add(self, col: ColumnStats) -> None:
        """Append a column ``(V_j, C_j)``."""
        self.h.addCol(
            0.0 if self.phase1 else col.value,
            0.0,
            _INF,
            self.N + 1,
            self._rows,
            np.concatenate([col.costs, [1.0]]),
        )

    def solve(self) -> tuple[Array, float, Array, float]:
        """``(w (K,), objective, lambda (N,), nu)``; phase 1's objective is the excess ``t``."""
        h = self.h
        status = run_highs(h)  # a warm basis can stall on near-parallel columns: retries cold, then other solvers
        if status != highspy.HighsModelStatus.kOptimal:
            raise SolverError(f"restricted master LP: HiGHS model status {h.modelStatusToString(status)}")
        sol = h.getSolution()
        x = np.asarray(sol.col_value)
        duals = np.asarray(sol.row_dual)
        obj = float(h.getInfo().objective_function_value)
        return x[1:], (-obj if self.phase1 else obj), np.maximum(duals[: self.N], 0.0), float(duals[-1])


def solve_master(
    costs: Array, values: Array, b: Array, phase1: bool, rows: Mask | None = None
) -> tuple[Array, float, Array, float]:
    """The restricted master LP over ``K`` columns (``costs (K, N)``, ``values (K,)``) with thresholds
    ``b (N,)``: ``(w (K,), objective, lambda (N,), nu)``; phase 1's objective is the worst excess
    ``t``. Only the constraints ``rows`` (all when ``None``) enter it; the others are slack and get
    multiplier 0. The compiled dense simplex, HiGHS when it gives up."""
    N = b.size
    if rows is not None and not rows.all():
        costs, b = costs[:, rows], b[rows]
    lam = np.zeros(N)
    w, obj, y, status = master_lp(np.ascontiguousarray(costs), values, np.ascontiguousarray(b), phase1)
    n = b.size
    if status == MASTER_OK:
        lam_rows, nu, obj = np.maximum(y[:n], 0.0), float(y[n]), (-obj if phase1 else obj)
    else:
        master = MasterLP(new_highs(), b, phase1)
        for value, col in zip(values, costs, strict=True):
            master.add(ColumnStat(float(value), col))
        w, obj, lam_rows, nu = master.solve()
    if rows is None:
        return w, obj, lam_rows, nu
    lam[rows] = lam_rows
    return w, obj, lam, nu


__all__ = ["ColumnStats", "MasterLP", "new_highs", "run_highs", "solve_master"]
