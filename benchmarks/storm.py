"""``storm``: cmdp_rl and Storm side by side on constrained step-bounded problems (issue 36, item 5).

Rows: the MDPs among stormpy's shipped examples (``stormpy/examples/files/mdp/*.nm``) that have a
reward structure or a label to maximize and a cost that binds (:data:`CASES`, each with what its
objective and cost mean), plus Garnets with one and three constraints. Every other shipped MDP is
listed in :data:`SKIPPED` with the reason; where the reason is a number, the run measures it.

Per row, both tools answer ``multi(OBJ max=? [..<=H], COST_1 <= c_1 [..<=H], ...)``: Storm with
its multi-objective model checker at precision 1e-10, cmdp_rl with ``solve`` (a reward structure
is ``R{"name"} [C<=H]``, ``from_prism``'s reward or cost; a label ``P [F<=H "label"]``, through
``reach_objective`` / ``reach_constraint``). The values agree when ``|ours - Storm's| <= 1e-8 +
gap`` (``gap``: our certified ``V* - value``). That each cost binds is measured with Storm's
single-objective queries: every threshold lies strictly between the cost's minimum and maximum
over all schedulers, and the constrained optimum is below the unconstrained one (Storm's
``max=?`` of the objective alone) by more than the agreement tolerance.

Times (medians; seconds):

* ``ours_build``: PRISM rows: ``from_prism`` (Storm parses and builds the program with every
  reward structure, label and choice label, the arrays leave through UMB, the CMDP is made) plus
  the reach products; Garnets: ``cmdp_rl.make`` (drawing the model and placing its thresholds,
  which solves two CMDPs).
* ``storm_build``: PRISM rows: ``parse_prism_program``, constants, ``parse_properties`` and
  ``build_model(program, properties)`` (only what the query needs, as a Storm user would);
  Garnets: ``to_storm`` (a UMB archive written with NumPy, built by Storm) and ``parse_properties``.
* ``ours_solve``: ``solve(model)``; ``storm_solve``: ``model_checking`` of the multi-objective
  query (precision 1e-10).

Storm gives no scheduler for these queries (step-bounded objectives); the run records Storm's
own message. Needs stormpy (the storm extra).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .common import Col, Table, banner, fmt_float, fmt_sci, fmt_time, measure

#: Storm's multi-objective precision and the agreement rule ``|diff| <= AGREE + gap``
PRECISION = 1e-10
AGREE = 1e-8


@dataclass(frozen=True)
class Case:
    """One row: a shipped PRISM MDP (``file``) or a Garnet (``problem``), its objective, costs,
    horizon and thresholds.

    ``objective`` and each cost: a reward structure's name (``""``: PRISM's unnamed one) or
    ``P:label`` (``P:a&b``: both labels), the probability of entering the set within ``H`` steps.
    """

    name: str
    objective: str
    costs: tuple[str, ...]
    H: int
    thresholds: tuple[float, ...]
    why: str
    file: str = ""
    constants: str = ""
    problem: str = ""


CASES: tuple[Case, ...] = (
    Case(
        "tiny_rewards", "P:target", ("",), 5, (0.5,),
        "reach 'target' (s=2) within H; cost: the steps spent in s=1, the only way to it: P(target) = cost",
        file="tiny_rewards.nm",
    ),
    Case(
        "die_c1", "P:six", ("P:five",), 20, (0.2,),
        "roll a six; cost: rolling a five; the biased first coin (action b) favours both",
        file="die_c1.nm",
    ),
    Case(
        "die_selection", "P:six", ("coin_flips",), 20, (3.5,),
        "roll a six; cost: coin flips; the biased coins that favour six take more flips",
        file="die_selection.nm",
    ),
    Case(
        "slipgrid_sketch", "P:goal", ("",), 40, (100.0,),
        "reach the far corner (10,10); cost: 1 per move, V = 10 per move south (the only way down)",
        file="slipgrid_sketch.nm", constants="V=10",
    ),
    Case(
        "coin2-2", "P:finished", ("P:finished&all_coins_equal_0",), 50, (0.27,),
        "the adversary hastens consensus; cost: consensus on 0",
        file="coin2-2.nm",
    ),
    Case(
        "csma2-2", "P:all_delivered", ("time",), 90, (66.0,),
        "deliver both messages; cost: elapsed time (the scheduler can let time pass or not)",
        file="csma2-2.nm",
    ),
    Case(
        "firewire3-0.5", "time_sending", ("time",), 200, (157.0,),
        "time the wires are busy (the adversary's); cost: elapsed time",
        file="firewire3-0.5.nm",
    ),
    Case(
        "coin2 K=16 (long)", "P:finished", ("P:finished&all_coins_equal_0",), 800, (0.046,),
        "as coin2-2, with K = 16 (consensus takes hundreds of steps)",
        file="coin2.nm", constants="K=16",
    ),
    Case(
        "firewire delay=20 (wide)", "time_sending", ("time",), 200, (162.0,),
        "as firewire3-0.5, with wire delay 20",
        file="firewire.nm", constants="delay=20,fast=0.5",
    ),
    Case(
        "garnet N=1", "reward", ("cost_0",), 50, (),
        "Garnet S=500 A=4 b=3, thresholds halfway from the safest policy's costs to the optimum's (f=0.5)",
        problem="garnet:S=500,A=4,b=3,N=1,f=0.5,H=50,seed=0",
    ),
    Case(
        "garnet N=3", "reward", ("cost_0", "cost_1", "cost_2"), 50, (),
        "as garnet N=1, three costs",
        problem="garnet:S=500,A=4,b=3,N=3,f=0.5,H=50,seed=0",
    ),
)  # fmt: skip

#: the shipped MDPs left out: file -> (reason, evidence queries ``(constants, query)`` the run measures)
SKIPPED: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    "SmallPrismTest.nm": ("no reward structure and no label of its own (a parser test)", ()),
    "SmallPrismTest2.nm": ("no reward structure and no label of its own (a parser test)", ()),
    "coin2-2-illegalSynchronizingWrite.nm": ("Storm refuses to build it (an illegal synchronizing write)", ()),
    "csma2_2.nm": ("the same file as csma2-2.nm (a row)", ()),
    "leader3.nm": (
        "no reward structure; its one label 'elected' is entered with the same probability under "
        "every scheduler (Pmin = Pmax), so no objective a cost could lower",
        (("", 'Pmin=? [F<=30 "elected"]'), ("", 'Pmax=? [F<=30 "elected"]')),
    ),
    "leader4.nm": (
        "'rounds' is its only reward structure and 'elected' is entered with the same probability "
        "under every scheduler (Pmin = Pmax): a rounds cost cannot lower P(elected), nor can an "
        "'elected' constraint bind on rounds",
        (("", 'Pmin=? [F<=50 "elected"]'), ("", 'Pmax=? [F<=50 "elected"]')),
    ),
    "maze_2.nm": (
        "its reward counts moves, which the goal ends: the policies that reach 'goal' most also "
        "move least, so a bound on moves between their minimum and maximum leaves P(goal) as is",
        (("", 'Pmax=? [F<=6 "goal"]'), ("", 'multi(Pmax=? [F<=6 "goal"], R<=4.3 [C<=6])')),
    ),
    "maze_2_multigoal.nm": (
        "as maze_2.nm; and the optimum of P(goal) can keep out of 'goalalt1' and 'goalalt2' (the "
        "bounds P <= 0 leave it as is)",
        (("", 'Pmax=? [F<=6 "goal"]'), ("", 'multi(Pmax=? [F<=6 "goal"], R<=4.4 [C<=6])'),
         ("", 'multi(Pmax=? [F<=6 "goal"], P<=0 [F<=6 "goalalt1"], P<=0 [F<=6 "goalalt2"])')),
    ),
    "multiobjective1.nm": ("one reward structure and no label: nothing to constrain but the objective", ()),
    "multiobjective2.nm": ("one reward structure and no label: nothing to constrain but the objective", ()),
    "scheduler_generation.nm": ("no reward structure and one label: nothing to constrain", ()),
    "slipgrid.nm": (
        "its reward is 1 per move and every state has a move (H under every scheduler); the "
        "optimum of P(goal) enters neither 'target' nor 'pickup'",
        (("", 'Rmin=? [C<=12]'), ("", 'Rmax=? [C<=12]'),
         ("", 'Pmax=? [F<=12 "goal"]'),
         ("", 'multi(Pmax=? [F<=12 "goal"], P<=0 [F<=12 "target"], P<=0 [F<=12 "pickup"])')),
    ),
    "system_composition.nm": ("Storm's builder does not support its custom system composition; no rewards", ()),
    "system_composition2.nm": ("Storm's builder does not support its custom system composition; no rewards", ()),
    "two_dice.nm": (
        "the scheduler only orders two independent dice: 'coinflips' and every label's probability "
        "are the same under every scheduler (min = max)",
        (("", 'R{"coinflips"}min=? [C<=20]'), ("", 'R{"coinflips"}max=? [C<=20]')),
    ),
    "wlan0-2-2.nm": (
        "no reward structure; no collision label can be entered with the file's constants",
        (("", 'Pmax=? [F "twoCollisions"]'),),
    ),
    "wlan0_collide.nm": (
        "no reward structure; with COL=6, TRANS_TIME_MAX=10 the optimum of P(twoCollisions) "
        "also keeps out of 'fourCollisions' (the bound P <= 0 leaves it as is)",
        (("COL=6,TRANS_TIME_MAX=10", 'Pmax=? [F<=100 "twoCollisions"]'),
         ("COL=6,TRANS_TIME_MAX=10", 'multi(Pmax=? [F<=100 "twoCollisions"], P<=0 [F<=100 "fourCollisions"])')),
    ),
}  # fmt: skip


# --------------------------------------------------------------------------- queries


def storm_term(term: str, H: int, op: str) -> str:
    """Storm's formula of ``term`` (:class:`Case`) with operator ``op`` (``"max=?"``, ``"<=0.5"``)."""
    if term.startswith("P:"):
        target = " & ".join(f'"{label}"' for label in term[2:].split("&"))
        return f"P{op} [F<={H} {target}]"
    return (f'R{{"{term}"}}' if term else "R") + f"{op} [C<={H}]"


def multi_query(objective: str, costs: Sequence[str], H: int, thresholds: Sequence[float]) -> str:
    """Storm's multi-objective query: maximize ``objective`` with every cost at most its threshold."""
    parts = [storm_term(objective, H, "max=?")]
    parts += [storm_term(c, H, f"<={float(t)!r}") for c, t in zip(costs, thresholds, strict=True)]
    return f"multi({', '.join(parts)})"


def storm_check(stormpy: Any, model: Any, prop: Any, *, scheduler: bool = False) -> float:
    """Storm's value of the parsed property ``prop`` at the one initial state of ``model``
    (multi-objective precision :data:`PRECISION`)."""
    env = stormpy.Environment()
    env.modelchecker().multi().precision = stormpy.Rational(f"1/{round(1 / PRECISION)}")
    result = stormpy.model_checking(model, prop, environment=env, extract_scheduler=scheduler)
    return float(result.get_value(model.initial_states[0]))


def example_folder() -> Path:
    """stormpy's shipped example MDPs."""
    import stormpy.examples.files as files

    return Path(files.prism_mdp_coin_2_2).parent


def _program(stormpy: Any, case: Case) -> Any:
    program = stormpy.parse_prism_program(str(example_folder() / case.file))
    if case.constants:
        program = stormpy.instantiate_constants(program, case.constants)[0]
    return program


def _mask(model: Any, term: str) -> Any:
    return np.logical_and.reduce([model.labels[label] for label in term[2:].split("&")])


def thresholds_of(case: Case, model: Any) -> tuple[float, ...]:
    """The row's thresholds: the case's own, or (a Garnet) the model's ``c_bar``."""
    return case.thresholds or tuple(float(x) for x in model.c_bar)


# --------------------------------------------------------------------------- the two tools


def our_build(case: Case) -> Any:
    """cmdp_rl's model of ``case`` (reward structures through ``from_prism``, labels through the
    reach products; a Garnet through ``make``)."""
    from cmdp_rl import make
    from cmdp_rl.model.reach import reach_constraint, reach_objective
    from cmdp_rl.model.storm import from_prism

    if case.problem:
        return make(case.problem)
    rewards = [(c, t) for c, t in zip(case.costs, case.thresholds, strict=True) if not c.startswith("P:")]
    model = from_prism(
        example_folder() / case.file,
        case.constants or None,
        reward=None if case.objective.startswith("P:") else case.objective,
        costs=[c for c, _ in rewards],
        H=case.H,
        c_bar=[t for _, t in rewards] if rewards else None,
    )
    for cost, t in zip(case.costs, case.thresholds, strict=True):
        if cost.startswith("P:"):
            model = reach_constraint(model, _mask(model, cost), t)
    if case.objective.startswith("P:"):
        model = reach_objective(model, _mask(model, case.objective))
    return model


def storm_build(stormpy: Any, case: Case, ours: Any) -> tuple[Any, Any]:
    """Storm's model and parsed query for ``case`` (PRISM: built for the query; Garnet: ``to_storm``)."""
    query = multi_query(case.objective, case.costs, case.H, thresholds_of(case, ours))
    if case.problem:
        from cmdp_rl.model.storm import to_storm

        model = to_storm(ours)
        return model, stormpy.parse_properties(query)[0]
    program = _program(stormpy, case)
    props = stormpy.parse_properties(query, program)
    return stormpy.build_model(program, props), props[0]


def binding(stormpy: Any, case: Case, model: Any, thresholds: Sequence[float]) -> dict[str, Any]:
    """Storm's single-objective answers that show the costs bind: each cost's min and max over all
    schedulers, and the unconstrained optimum (``max=?`` of the objective alone)."""

    def value(query: str) -> float:
        prop = stormpy.parse_properties(query)[0]
        return storm_check(stormpy, model, prop)

    lo = [value(storm_term(c, case.H, "min=?")) for c in case.costs]
    hi = [value(storm_term(c, case.H, "max=?")) for c in case.costs]
    free = value(storm_term(case.objective, case.H, "max=?"))
    between = all(a < t < b for a, t, b in zip(lo, thresholds, hi, strict=True))
    return {"cost_min": lo, "cost_max": hi, "value_free": free, "between": between}


def _full_storm_model(stormpy: Any, case: Case, ours: Any) -> Any:
    """Storm's model with every reward structure and label (for the binding queries)."""
    if case.problem:
        from cmdp_rl.model.storm import to_storm

        return to_storm(ours)
    options = stormpy.BuilderOptions()
    options.set_build_all_reward_models()
    options.set_build_all_labels()
    return stormpy.build_model(_program(stormpy, case), options=options)


def run_case(case: Case, reps: int = 3, budget: float | None = None) -> dict[str, Any]:
    """Build and solve ``case`` with both tools (each timed ``reps`` times, fewer once ``budget``
    seconds are spent) and return its row: sizes, values, agreement, binding and times."""
    import stormpy

    from cmdp_rl import solve

    build = measure(lambda: our_build(case), reps, budget=budget)
    model = build.result
    solved = measure(lambda: solve(model), reps, budget=budget)
    plan = solved.result
    thresholds = thresholds_of(case, model)
    sbuild = measure(lambda: storm_build(stormpy, case, model), reps, budget=budget)
    smodel, prop = sbuild.result
    ssolve = measure(lambda: storm_check(stormpy, smodel, prop), reps, budget=budget)
    storm_value = ssolve.result
    bind = binding(stormpy, case, _full_storm_model(stormpy, case, model), thresholds)
    diff = abs(plan.value - storm_value)
    gap = float(plan.gap)
    return {
        "name": case.name,
        "file": case.file or case.problem,
        "constants": case.constants,
        "objective": case.objective or "R (unnamed)",
        "costs": [c or "R (unnamed)" for c in case.costs],
        "why": case.why,
        "states": int(smodel.nr_states),
        "choices": int(smodel.nr_choices),
        "ours_states": int(model.S),
        "horizon": case.H,
        "thresholds": list(thresholds),
        "status": plan.status,
        "value_ours": float(plan.value),
        "value_storm": storm_value,
        "diff": diff,
        "gap": gap,
        "agree": bool(diff <= AGREE + gap),
        "costs_ours": [float(x) for x in plan.costs],
        **bind,
        "binds": bool(bind["between"] and bind["value_free"] - storm_value > AGREE + gap),
        "ours_build": build.median,
        "storm_build": sbuild.median,
        "ours_solve": solved.median,
        "storm_solve": ssolve.median,
        "reps": min(build.n, solved.n, sbuild.n, ssolve.n),
        "query": multi_query(case.objective, case.costs, case.H, thresholds),
    }


def skipped_evidence(stormpy: Any) -> list[dict[str, Any]]:
    """The skipped shipped MDPs with their reasons and the measured values behind them."""
    folder = example_folder()
    out = []
    for name, (reason, queries) in SKIPPED.items():
        measured: dict[str, float] = {}
        for constants, query in queries:
            program = stormpy.parse_prism_program(str(folder / name))
            if constants:
                program = stormpy.instantiate_constants(program, constants)[0]
            prop = stormpy.parse_properties(query, program)[0]
            measured[query] = storm_check(stormpy, stormpy.build_model(program, [prop]), prop)
        out.append({"file": name, "reason": reason, "measured": measured})
    return out


def no_scheduler_message(stormpy: Any, case: Case) -> str:
    """What Storm says when asked for a scheduler of ``case``'s multi-objective query."""
    model, prop = storm_build(stormpy, case, our_build(case))
    try:
        storm_check(stormpy, model, prop, scheduler=True)
    except RuntimeError as exc:
        return str(exc).strip().splitlines()[0]
    return "(Storm returned a scheduler)"


def run(quick: bool = False, only: Sequence[str] | None = None) -> Table | None:
    """Run the ``storm`` benchmark, print and save its table (``None`` without stormpy). ``only``:
    the rows whose name contains one of these strings, printed and not saved (a partial table
    would replace the full one)."""
    try:
        import stormpy
    except ImportError:
        print('storm: skipped: needs stormpy (pip install "cmdp-rl[storm]")')
        return None
    reps = 2 if quick else 3
    cases = [c for c in CASES if not quick or ("long" not in c.name and "wide" not in c.name)]
    if only:
        cases = [c for c in cases if any(o in c.name for o in only)]
    banner("storm: cmdp_rl and Storm side by side" + (" (quick)" if quick else "") + (" (some rows)" if only else ""))
    table = Table(
        "storm",
        "cmdp_rl and Storm's multi-objective query (precision 1e-10): values, build and solve (median seconds)",
        [
            Col("name", "model", left=True),
            Col("states", "states"),
            Col("choices", "choices"),
            Col("horizon", "H"),
            Col("value_ours", "cmdp_rl", lambda v: fmt_float(v, 10)),
            Col("value_storm", "Storm", lambda v: fmt_float(v, 10)),
            Col("diff", "|diff|", fmt_sci),
            Col("gap", "gap", fmt_sci),
            Col("agree", "agree"),
            Col("binds", "binds"),
            Col("ours_build", "build ours", fmt_time),
            Col("storm_build", "build Storm", fmt_time),
            Col("ours_solve", "solve ours", fmt_time),
            Col("storm_solve", "solve Storm", fmt_time),
        ],
        notes=[
            f"median of up to {reps} runs each; agree: |diff| <= 1e-8 + gap (our certified V* - value)",
            "binds: every threshold strictly between Storm's min and max of its cost, and the "
            "constrained optimum below Storm's unconstrained one by more than the tolerance",
        ],
    )
    with _quiet(stormpy):
        for case in cases:
            row = run_case(case, reps, budget=60.0)
            print(
                f"  {case.name}: diff {row['diff']:.1e} gap {row['gap']:.1e} binds {row['binds']} solve "
                f"ours {fmt_time(row['ours_solve'])} Storm {fmt_time(row['storm_solve'])}",
                flush=True,
            )
            table.add(**row)
        if only:
            table.print()
            return table
        skipped = skipped_evidence(stormpy)
        message = no_scheduler_message(stormpy, CASES[0])
    table.print()
    for entry in skipped:
        print(f"  skipped {entry['file']}: {entry['reason']}")
    table.save(quick, params={"reps": reps, "precision": PRECISION, "skipped": skipped, "storm_scheduler": message})
    return table


class _quiet:
    """Storm's logger off (a refused scheduler would also print on stderr)."""

    def __init__(self, stormpy: Any) -> None:
        self.developer = stormpy.developer
        self.level = self.developer.get_log_level()

    def __enter__(self) -> None:
        self.developer.set_log_level(self.developer.LogLevel.OFF)

    def __exit__(self, *exc: object) -> None:
        self.developer.set_log_level(self.level)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m benchmarks.storm [--quick] [--allow-dirty] [--only NAME ...]``."""
    import argparse
    import sys

    from . import common

    parser = argparse.ArgumentParser(prog="python -m benchmarks.storm", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the short rows only (results saved as storm-quick.*)")
    parser.add_argument("--allow-dirty", action="store_true", help="write results from a modified tree")
    parser.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help="rows whose name contains NAME (repeatable); printed, not saved",
    )
    args = parser.parse_args(argv)
    common.ALLOW_DIRTY = args.allow_dirty
    if not args.only:
        try:
            common.check_clean_tree()
        except common.DirtyTree as exc:
            print(f"python -m benchmarks.storm: {exc}", file=sys.stderr)
            return 2
    run(quick=args.quick, only=args.only)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
