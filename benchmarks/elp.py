"""``elp``: extended-LP solvers side by side on the same instances.

Solvers (all on the counts ``C'`` of an :class:`~benchmarks.common.ELPInstance`):

* ``fast cold``: ``solve_elp(method="fast")`` from scratch;
* ``fast warm``: ``solve_elp(method="fast", warm_start=previous)``, ``previous``
  being the plan on the counts one episode earlier (only this solve is timed);
* ``lp``: ``solve_elp(method="lp")``, the literal ELP solved by HiGHS;
* ``clarabel``: the auxiliary form of the literal ELP solved by Clarabel
  (:func:`~benchmarks.baselines.solve_clarabel_aux`);
* ``pulp``: the reference-style PuLP/CBC model rebuilt on every solve
  (:func:`~benchmarks.baselines.solve_pulp_naive`).

Every time includes building the solver's model from ``(p_hat, beta)``. A
solver is skipped on an instance where its time, extrapolated from the
instances already measured (:class:`~benchmarks.common.GrowthEstimator`),
exceeds the per-solve limit. Values are checked against ``lp`` (or against
``fast cold`` where ``lp`` was skipped): the ``d*`` columns are relative differences.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from cmdp_rl.planning.elp import solve_elp

from .baselines import solve_clarabel_aux, solve_pulp_naive
from .common import (
    SCENARIOS,
    Col,
    ELPInstance,
    GrowthEstimator,
    Table,
    banner,
    fmt_float,
    fmt_ratio,
    fmt_sci,
    fmt_time,
    measure,
    random_instance,
    ratio,
    rel_diff,
    scenario_instance,
)

#: per-solve time limit (seconds) above which a solver is skipped on an instance
LIMIT = 60.0
QUICK_LIMIT = 10.0
RANDOM_SIZES = ((9, 25, 49), (10, 15, 20))  # |S| values, H values (full grid)
QUICK_RANDOM = ((9, 10), (9, 20), (25, 10))  # (|S|, H) pairs in --quick
QUICK_SCENARIOS = ("1a", "2", "1b")
A_RANDOM = 4


@dataclass(frozen=True)
class Outcome:
    """What a solver returned: objective value, status string and whether it is optimal."""

    value: float
    status: str
    optimal: bool
    iterations: int | None = None


@dataclass(frozen=True)
class Solver:
    """One competitor: table key, label, repeats (full, quick), time budget per instance, call."""

    key: str
    label: str
    reps: int
    quick_reps: int
    budget: float
    run: Callable[[ELPInstance], Outcome]


def _fast(inst: ELPInstance, warm: bool) -> Outcome:
    res = solve_elp(inst.cmdp, inst.p_hat, inst.beta, method="fast", warm_start=inst.previous if warm else None)
    return Outcome(res.value, res.status, res.feasible, res.iterations)


def _lp(inst: ELPInstance) -> Outcome:
    res = solve_elp(inst.cmdp, inst.p_hat, inst.beta, method="lp")
    return Outcome(res.value, res.status, res.feasible, res.iterations)


def _clarabel(inst: ELPInstance) -> Outcome:
    res = solve_clarabel_aux(inst.cmdp, inst.p_hat, inst.beta)
    return Outcome(res.value, res.status, res.optimal)


def _pulp(inst: ELPInstance) -> Outcome:
    res = solve_pulp_naive(inst.cmdp, inst.p_hat, inst.beta)
    return Outcome(res.value, res.status, res.optimal)


SOLVERS: tuple[Solver, ...] = (
    Solver("fast_cold", "fast cold", 15, 5, 15.0, lambda inst: _fast(inst, warm=False)),
    Solver("fast_warm", "fast warm", 15, 5, 15.0, lambda inst: _fast(inst, warm=True)),
    Solver("lp", "lp (HiGHS)", 3, 1, 150.0, _lp),
    Solver("clarabel", "clarabel aux", 5, 2, 60.0, _clarabel),
    Solver("pulp", "pulp+CBC", 3, 1, 150.0, _pulp),
)


def build_instances(quick: bool) -> list[ELPInstance]:
    """The scenarios after 200 Online-CRL episodes and the random grid, smallest ELP first."""
    names = QUICK_SCENARIOS if quick else SCENARIOS
    pairs = QUICK_RANDOM if quick else [(S, H) for S in RANDOM_SIZES[0] for H in RANDOM_SIZES[1]]
    instances = [scenario_instance(name) for name in names]
    instances += [random_instance(S, A_RANDOM, H, 1, seed=1000 * S + H) for S, H in pairs]
    return sorted(instances, key=lambda inst: inst.n_q)


def _warm_up(inst: ELPInstance) -> None:
    """One untimed solve per solver (imports, caches) on a small instance."""
    for solver in SOLVERS:
        solver.run(inst)


def bench_instance(
    inst: ELPInstance, estimators: dict[str, GrowthEstimator], quick: bool, limit: float
) -> dict[str, Any]:
    """Time every solver on ``inst`` (or skip it) and return the table row."""
    row: dict[str, Any] = inst.describe()
    outcomes: dict[str, Outcome] = {}
    for solver in SOLVERS:
        predicted = estimators[solver.key].predict(inst.n_q)
        if predicted > limit:
            row[solver.key] = f"skipped (>{limit:.0f} s)"
            row[f"{solver.key}_predicted_s"] = predicted
            continue
        reps = solver.quick_reps if quick else solver.reps
        budget = min(solver.budget, 3 * limit) if quick else solver.budget
        fast = solver.key.startswith("fast")
        meas = measure(partial(solver.run, inst), reps, budget=budget, warmup=1 if fast else 0)
        out = meas.result
        outcomes[solver.key] = out
        estimators[solver.key].add(inst.n_q, meas.median)
        row[solver.key] = meas.median
        row[f"{solver.key}_reps"] = meas.n
        row[f"{solver.key}_times"] = meas.times
        row[f"{solver.key}_value"] = out.value
        row[f"{solver.key}_status"] = out.status
        if out.iterations is not None:
            row[f"{solver.key}_iterations"] = out.iterations
        print(
            f"  {inst.name:>16}  {solver.label:<13} {fmt_time(meas.median):>9} "
            f"(n={meas.n})  value={out.value:.10g}  {out.status}",
            flush=True,
        )
    ref_key = "lp" if "lp" in outcomes and outcomes["lp"].optimal else "fast_cold"
    ref = outcomes[ref_key].value
    row["reference"] = ref_key
    row["value"] = ref
    fast_diffs = [
        rel_diff(outcomes[k].value, ref) for k in ("fast_cold", "fast_warm") if k in outcomes and k != ref_key
    ]
    row["d_fast"] = max(fast_diffs) if fast_diffs else None
    for key in ("clarabel", "pulp"):
        row[f"d_{key}"] = rel_diff(outcomes[key].value, ref) if key in outcomes else None
    bad = [f"{k}: {o.status}" for k, o in outcomes.items() if not o.optimal]
    row["problems"] = "; ".join(bad)
    row["iters"] = "/".join(str(row.get(f"{k}_iterations", "-")) for k in ("fast_cold", "fast_warm"))
    row["lp/cold"] = ratio(row.get("lp"), row.get("fast_cold"))
    row["lp/warm"] = ratio(row.get("lp"), row.get("fast_warm"))
    row["pulp/warm"] = ratio(row.get("pulp"), row.get("fast_warm"))
    row["clarabel/cold"] = ratio(row.get("clarabel"), row.get("fast_cold"))
    return row


def make_table(limit: float, quick: bool) -> Table:
    """The empty ``elp`` table with its columns and notes."""
    reps = ", ".join(f"{s.label} {s.quick_reps if quick else s.reps}" for s in SOLVERS)
    return Table(
        "elp",
        "Extended LP: median wall time per solve (model build included)",
        [
            Col("instance", "instance"),
            Col("S", "S"),
            Col("A", "A"),
            Col("H", "H"),
            Col("n_q", "n_q"),
            Col("value", "value", lambda v: fmt_float(v, 8)),
            *(Col(s.key, s.label, fmt_time) for s in SOLVERS),
            Col("iters", "CG it c/w"),
            Col("lp/cold", "lp/cold", fmt_ratio),
            Col("lp/warm", "lp/warm", fmt_ratio),
            Col("pulp/warm", "pulp/warm", fmt_ratio),
            Col("clarabel/cold", "clar/cold", fmt_ratio),
            Col("d_fast", "d fast", fmt_sci),
            Col("d_clarabel", "d clar", fmt_sci),
            Col("d_pulp", "d pulp", fmt_sci),
            Col("problems", "problems", left=True),
        ],
        notes=[
            f"repeats (max): {reps}; n_q = H |S|^2 |A| literal ELP variables; "
            "CG it c/w: master/pricing rounds of fast cold/warm",
            "fast warm: warm-started from the plan one episode earlier (that solve untimed)",
            "value: optimum of lp (HiGHS); where lp is skipped, of fast cold",
            "d *: max relative difference of the solver's optimum from that value",
            f"skipped: extrapolated time above {limit:.0f} s per solve",
            "scenarios: 200 episodes of Online-CRL (+1); random: 20-50 samples per pair (+1 "
            "episode), thresholds binding under optimism; radii: Online-CRL's, "
            "delta_1(0.1, S, N, U=10000)",
        ],
    )


def run(quick: bool = False) -> Table:
    """Run the ``elp`` benchmark, print and save its table."""
    banner("elp: extended LP solvers" + (" (quick)" if quick else ""))
    limit = QUICK_LIMIT if quick else LIMIT
    instances = build_instances(quick)
    _warm_up(instances[0])
    estimators = {s.key: GrowthEstimator() for s in SOLVERS}
    rows = [bench_instance(inst, estimators, quick, limit) for inst in instances]
    order = {name: i for i, name in enumerate(SCENARIOS)}
    rows.sort(key=lambda r: (r["instance"] not in order, order.get(r["instance"], 0), r["S"], r["H"]))
    table = make_table(limit, quick)
    for row in rows:
        table.add(**row)
    table.print()
    table.save(
        quick,
        params={
            "limit_s": limit,
            "solvers": [s.key for s in SOLVERS],
            "reps": {s.key: s.quick_reps if quick else s.reps for s in SOLVERS},
        },
    )
    return table
