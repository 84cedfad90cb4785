"""The ``cmdp-rl`` command line.

Exit codes: 0 success (optimal), 1 infeasible, 2 bad input (one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import numpy as np

from .model import CMDP
from .planning import PlanResult, SolverError, solve
from .validation import CMDPInputError

EXIT_OK, EXIT_INFEASIBLE, EXIT_BAD_INPUT = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see --help)\n")


def _fmt(x: Sequence[float] | np.ndarray) -> str:
    return "[" + ", ".join(f"{v:.6g}" for v in np.asarray(x, dtype=float)) + "]"


def _plan_json(res: PlanResult) -> dict[str, Any]:
    out: dict[str, Any] = {"status": res.status, "value": res.value,
                           "costs": [float(v) for v in res.costs]}
    if res.min_costs is not None:
        out["min_costs"] = [float(v) for v in res.min_costs]
    return out


def _cmd_solve(args: argparse.Namespace) -> int:
    model = CMDP.load(args.model)
    res = solve(model)
    if args.json:
        print(json.dumps(_plan_json(res)))
    else:
        print(f"model     {args.model}: S={model.S} A={model.A} H={model.H} N={model.N} s0={model.s0}")
        print(f"status    {res.status}")
        print(f"value     {res.value:.6f}")
        print(f"costs     {_fmt(res.costs)}  (thresholds {_fmt(model.c_bar)})")
        if res.min_costs is not None:
            print(f"min_costs {_fmt(res.min_costs)}  (smallest achievable cost of each constraint)")
        det = np.isclose(res.policy.max(-1), 1.0).all()
        print(f"policy    {'deterministic' if det else 'randomized'}, shape {res.policy.shape}")
    return EXIT_OK if res.feasible else EXIT_INFEASIBLE


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with all subcommands."""
    parser = _Parser(prog="cmdp-rl", description=(
        "Solve and learn finite-horizon constrained MDPs (tabular). Models are .npz files "
        "with keys P (S,A,S), r (S,A), c (N,S,A), c_bar (N,), s0, H."))
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser("solve", help="solve a CMDP exactly with the occupation-measure LP",
                       description="Solve a CMDP exactly (HiGHS). Exit code 0 if optimal, "
                                   "1 if infeasible, 2 on bad input.")
    p.add_argument("model", help="path to a .npz model file")
    p.add_argument("--json", action="store_true", help='print {"status", "value", "costs"[, "min_costs"]}')
    p.set_defaults(func=_cmd_solve)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``cmdp-rl`` console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except CMDPInputError as exc:
        print(f"cmdp-rl {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except SolverError as exc:
        print(f"cmdp-rl {args.command}: solver error: {exc}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print(f"cmdp-rl {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
