"""The ``cmdp-rl`` argument parser: every subcommand, its options and their argument types.

Building the parser (and ``cmdp-rl --help``) loads neither NumPy nor a command's module: the
choices come from [`cmdp_rl.plumbing.names`][cmdp_rl.plumbing.names], the limits from
[`cmdp_rl.plumbing.limits`][cmdp_rl.plumbing.limits], and each
subcommand's function is imported when the command runs (``_Command``).
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable, Sequence
from importlib import import_module
from typing import NoReturn

from cmdp_rl.cli.exit_codes import EXIT_BAD_INPUT
from cmdp_rl.plumbing.errors import CMDPInputError, one_line
from cmdp_rl.plumbing.limits import parse_duration, parse_size
from cmdp_rl.plumbing.names import BACKENDS, METHODS, ONLINE_ALGORITHMS, PG_INITS, PG_UPDATES, RADII, SAMPLING
from cmdp_rl.plumbing.numbers import MAX_INT, MAX_INT_TEXT, NumberError, read_int, read_real, shown
from cmdp_rl.plumbing.version import VERSION as __version__

#: the package whose attributes are the subcommands' functions (``cmdp_rl.cli``)
_PACKAGE = __name__.rpartition(".")[0]


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line and exit code 2, and records which of a
    subcommand's options were given (``args.given``, for the options that a mode ignores)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, one_line(f"{self.prog}: error: {message} (see --help)") + "\n")

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if self._subparsers is None and args is not None:  # a subcommand's own options
            parsed.given = _given_options(self, list(args))
        return parsed, extras


#: the default every option gets while ``_given_options`` re-parses
_UNSET = object()


def _given_options(parser: argparse.ArgumentParser, argv: list[str]) -> frozenset[str]:
    """The destinations of the options that ``argv`` gives (typed, not defaults, whatever their
    value): ``argv`` parsed again with every default replaced by a sentinel."""
    saved = [(action, action.default) for action in parser._actions if action.default is not argparse.SUPPRESS]
    try:
        for action, _ in saved:
            action.default = _UNSET
        parser._given_pass = True  # type: ignore[attr-defined]  # a deprecated spelling warns once
        namespace, _ = argparse.ArgumentParser.parse_known_args(parser, argv, argparse.Namespace())
    finally:
        parser._given_pass = False  # type: ignore[attr-defined]
        for action, default in saved:
            action.default = default
    fixed = set(parser._defaults)  # set_defaults (the command's function)
    return frozenset(k for k, v in vars(namespace).items() if v is not _UNSET and k not in fixed)


class _Help(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Show real defaults in --help and keep the descriptions' line breaks.

    An option without a default (``None``: the help says what happens then) and an on/off flag
    show no ``(default: ...)``, never ``(default: None)`` or ``(default: False)``."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.nargs == 0 or isinstance(action.default, bool):
            return action.help
        return super()._get_help_string(action)


# -- argument types: each names the rule it checks ------------------------------------------
#
# Every numeric option obeys the rules of cmdp_rl.plumbing.numbers (an integer typed as one, within 64 bits;
# a real number finite, and 0 or of normal size; -0 reads as 0), then its own range. Each type has a
# user-facing __name__, in case argparse ever names it.


def _int_at_least(minimum: int, maximum: int = MAX_INT, maximum_text: str = MAX_INT_TEXT) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            return read_int(text, minimum, maximum, maximum_text)
        except NumberError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = f"integer >= {minimum}"
    return parse


def _real(rule: str, check: Callable[[float], bool], name: str) -> Callable[[str], float]:
    """A real-number type: ``read_real``'s rules, then ``check`` (the option's range, stated by ``rule``)."""

    def parse(text: str) -> float:
        try:
            value = read_real(text, rule)
        except NumberError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        if not check(value):
            raise argparse.ArgumentTypeError(f"must be {rule}, got {shown(text)}")
        return value

    parse.__name__ = name
    return parse


#: a probability or accuracy (--delta, --eps): in (0, 1), at least the smallest normal float
_open_unit = _real("a number in the open interval (0, 1)", lambda v: 0.0 < v < 1.0, "number in (0, 1)")
_nonnegative = _real("a finite number >= 0", lambda v: v >= 0.0, "number >= 0")
_positive = _real("a finite number > 0", lambda v: v > 0.0, "number > 0")
_finite = _real("a finite number", lambda v: True, "number")
#: --step-timeout: positive, and at most the longest wait the platform supports
_seconds = _real(
    f"a number of seconds > 0 and at most {threading.TIMEOUT_MAX:.3g}",
    lambda v: 0.0 < v <= threading.TIMEOUT_MAX,
    "seconds",
)


def _output(text: str) -> str:
    """An output file or folder name: not empty (an empty name would write into the current folder)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"must name a file or folder, got {shown(text)}")
    return text


_output.__name__ = "file or folder name"


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except CMDPInputError as exc:
        raise argparse.ArgumentTypeError(str(exc).split(": ", 1)[1]) from None


_size.__name__ = "size"


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except CMDPInputError as exc:
        raise argparse.ArgumentTypeError(str(exc).split(": ", 1)[1]) from None


_duration.__name__ = "duration"


def _algo_list(text: str) -> tuple[str, ...]:
    names = tuple(a.strip() for a in text.split(",") if a.strip())
    for a in names:
        if a not in ONLINE_ALGORITHMS:
            raise argparse.ArgumentTypeError(f"unknown learner {a!r}; valid names are {', '.join(ONLINE_ALGORITHMS)}")
    if not names:
        raise argparse.ArgumentTypeError("give at least one learner, e.g. dope,optpess")
    return names


class _Deprecated(argparse.Action):
    """A renamed option's old spelling (``deprecated_option``): it still works, as the new one
    does, and leaves one line for stderr, ``cmdp-rl: warning: --OLD is deprecated, use --NEW``, in
    ``args.deprecations`` (the entry point prints it with the command's result, never with a
    refusal, which stays one line)."""

    def __init__(self, option_strings: Sequence[str], dest: str, new: str = "", **kwargs: object) -> None:
        self.new = new
        super().__init__(option_strings, dest, **kwargs)  # type: ignore[arg-type]

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        if not getattr(parser, "_given_pass", False):  # ``_given_options`` parses again: say it once
            notes = [
                *getattr(namespace, "deprecations", ()),
                f"cmdp-rl: warning: {option_string} is deprecated, use {self.new}",
            ]
            namespace.deprecations = notes
        setattr(namespace, self.dest, values)


def deprecated_option(p: argparse.ArgumentParser, old: str, new: str) -> None:
    """Accept ``old``, a renamed spelling of option ``new`` (already added to ``p``), for one more
    release: the same destination, type and choices, hidden from ``--help``, one warning line on
    stderr when used (``_Deprecated``)."""
    target = next(a for a in p._actions if new in a.option_strings)
    p.add_argument(
        old,
        action=_Deprecated,
        new=new,
        dest=target.dest,
        choices=target.choices,
        metavar=target.metavar,
        default=argparse.SUPPRESS,
        help=argparse.SUPPRESS,
        type=str if target.type is None else target.type,  # None reads as str
    )


class _Command:
    """A subcommand's function, looked up by its name in [`cmdp_rl.cli`][cmdp_rl.cli] when the command
    runs: building the parser imports no command module, and a function replaced there (as
    tests do) is the one called."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, args: argparse.Namespace) -> int:
        function: Callable[[argparse.Namespace], int] = getattr(import_module(_PACKAGE), self.name)
        return function(args)

    def __repr__(self) -> str:
        return f"_Command({self.name!r})"


def _default_first(choices: Sequence[str], default: str) -> tuple[str, ...]:
    """``choices`` with ``default`` first (the order ``--help`` lists them in)."""
    return (default, *(c for c in choices if c != default))


#: the resource limits' defaults as a user types them (DEFAULT_MAX_MEMORY, DEFAULT_MAX_SECONDS)
MAX_MEMORY_TEXT, MAX_TIME_TEXT = "8G", "1d"


def _add_limits(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--max-memory",
        type=_size,
        default=MAX_MEMORY_TEXT,  # a string default goes through the type, as if typed
        metavar="SIZE",
        help="refuse jobs estimated to need more memory (e.g. 16G, 500M)",
    )
    p.add_argument(
        "--max-time",
        type=_duration,
        default=MAX_TIME_TEXT,
        metavar="DURATION",
        help="refuse jobs estimated to run longer (e.g. 3d, 2h, 90s)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with all subcommands."""
    parser = _Parser(
        prog="cmdp-rl",
        formatter_class=_Help,
        description=(
            "Solve and learn finite-horizon constrained MDPs (tabular). A MODEL is a .npz file with keys "
            "P (S,A,S), r (S,A), c (N,S,A), c_bar (N,), s0, H[, meta], or a registered problem with optional "
            "overrides (1a, garnet:S=50,seed=1; cmdp-rl envs lists them); an existing file of that name wins."
        ),
        epilog="Exit codes: 0 ok, 1 infeasible, 2 bad input (one line, nothing written), 3 internal or "
        "solver error, 130/143 interrupted/terminated (rerun resumes), 141 broken pipe.",
    )
    parser.add_argument("--version", action="version", version=f"cmdp-rl {__version__}")
    parser.add_argument("--debug", action="store_true", help="print the full traceback of an internal error")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser(
        "solve",
        help="solve a CMDP exactly, with a certified optimality gap",
        formatter_class=_Help,
        description="Solve a CMDP exactly (dense or sparse model): column generation with a certified "
        "gap (fast, default) or the occupation-measure LP (lp, HiGHS, its gap from its duals and an exact "
        "evaluation of its policy). Exit code 0 if optimal, 1 if infeasible, 2 on bad input, 4 if the plan is "
        "feasible but its gap could not be certified within --gap-tol (status uncertified).",
    )
    p.add_argument("model", help="a .npz model file or a registered problem (see cmdp-rl envs)")
    p.add_argument(
        "--method", choices=METHODS, default="fast", help="fast: column generation with a certificate; lp: HiGHS"
    )
    p.add_argument(
        "--gap-tol",
        type=_nonnegative,
        default=None,
        metavar="G",
        help="the certified gap V* - value a plan must reach to be called optimal (fast: stop once it is at most "
        "G; lp: the check of its answer) (default: 1e-9 * H, or 1e-9 / (1 - gamma))",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help='print {"status", "value", "costs", "gap"[, "min_costs"], "multipliers"}',
    )
    _add_limits(p)
    p.set_defaults(func=_Command("_cmd_solve"))

    p = sub.add_parser(
        "learn",
        help="learn a CMDP with Optimistic-GMBL, Online-CRL or a baseline of the arena",
        formatter_class=_Help,
        description="Learn a policy from samples of MODEL's kernel (the learner knows r, c, c_bar, "
        "s0, H) and score it exactly against the optimum. Give exactly one budget: "
        "--samples-per-pair (gmbl), --episodes (online learners) or --eps (theory mode).\n\n"
        "Or learn from a simulator: --env ID (a Gymnasium id; the library's own problems are "
        "cmdp_rl/<name>-v0) with --horizon, --c-bar and --episodes, instead of MODEL: the learner only "
        "resets and steps it, and estimates the start distribution, rewards and costs "
        "(docs/simulators.md).",
    )
    p.add_argument(
        "model", nargs="?", help="a .npz model file or a registered problem (see cmdp-rl envs): the true CMDP"
    )
    p.add_argument(
        "--env",
        metavar="ID",
        help="learn from this Gymnasium environment (a black box) instead of MODEL (default: MODEL)",
    )
    p.add_argument(
        "--env-kwargs", metavar="JSON", help="--env: keywords of gymnasium.make, a JSON object (default: none)"
    )
    p.add_argument(
        "--horizon", "-H", type=_int_at_least(1), metavar="H", help="--env: steps per episode (required with --env)"
    )
    p.add_argument(
        "--c-bar",
        metavar="X[/Y...]",
        help="--env: bounds on the expected sums of the H step costs, one per constraint (required with --env)",
    )
    p.add_argument("--cost-key", metavar="K", help="--env: the info key of the step costs (default: cost, then costs)")
    p.add_argument(
        "--reward-range",
        type=_finite,
        nargs=2,
        metavar=("LO", "HI"),
        help="--env: map the environment's rewards from [LO, HI] to [0, 1] (default: rewards must lie in [0, 1])",
    )
    p.add_argument(
        "--step-timeout",
        type=_seconds,
        metavar="S",
        help="--env: seconds allowed per reset or step call (default: no limit)",
    )
    p.add_argument(
        "--run-log",
        type=_output,
        metavar="FILE.jsonl",
        help="--env: append every episode to FILE (JSON lines); a rerun with the same arguments resumes "
        "(default: no log, no resume)",
    )
    p.add_argument(
        "--baseline",
        metavar="POLICY.npy",
        help="--env, optpess/dope: a known safe (H, S, A) policy (default: none; those learners need one with --env)",
    )
    p.add_argument(
        "--baseline-costs",
        metavar="X[/Y...]",
        help="--env, optpess/dope: that policy's expected costs (required with --baseline)",
    )
    p.add_argument(
        "--figure",
        type=_output,
        metavar="FILE.png",
        help="--env: plot the running means of the realized return and costs per episode (thresholds drawn; "
        "default: no figure)",
    )
    p.add_argument(
        "--algorithm",
        "--algo",
        choices=("gmbl", *ONLINE_ALGORITHMS),
        default="online-crl",
        help="Optimistic-GMBL (generative model, Algorithm 1), Online-CRL (episodes, Algorithm 2) or a "
        "baseline: plugin, optcmdp, optcmdp-bonus, optdual, optpess, dope (docs/baselines.md)",
    )
    p.add_argument(
        "--samples-per-pair",
        type=_int_at_least(1, 2**53, "2**53"),
        metavar="N",
        help="budget mode for gmbl: N samples of every (s, a) pair (at most 2^53); one budget is required",
    )
    p.add_argument(
        "--episodes",
        type=_int_at_least(1),
        metavar="K",
        help="budget mode for the online learners: K episodes of H steps each; one budget is required",
    )
    p.add_argument(
        "--bonus-scale",
        type=_nonnegative,
        metavar="X",
        help="baselines: factor on the reward and cost bonuses, never on a confidence radius "
        "(default 1 = the papers' constants)",
    )
    p.add_argument(
        "--k0",
        type=_int_at_least(0),
        metavar="K0",
        help="dope: episodes of the safe-baseline phase (default ceil(S^2 A H^3 / gamma^2))",
    )
    p.add_argument(
        "--eps",
        type=_open_unit,
        help="theory mode: accuracy in (0, 1); sample sizes from the paper's theorems; one budget is required",
    )
    p.add_argument(
        "--max-episodes",
        type=_int_at_least(1),
        metavar="K",
        help="cap on episodes in online-crl theory mode (required there)",
    )
    p.add_argument("--delta", type=_open_unit, default=0.1, help="failure probability in (0, 1)")
    p.add_argument("--seed", type=_int_at_least(0), default=0, help="root seed (integer >= 0)")
    p.add_argument(
        "--method",
        choices=METHODS,
        default="fast",
        help="extended-LP method: fast (column generation) or lp (the literal LP)",
    )
    p.add_argument(
        "--policy-out",
        type=_output,
        metavar="FILE.npy",
        help="save the learned policy as an (H, S, A) float64 .npy array (written atomically; default: not saved)",
    )
    p.add_argument(
        "--counts-out",
        type=_output,
        metavar="FILE",
        help="save the transition counts for cmdp-rl certify: FILE.npz as an (S*A, S) sparse matrix "
        "(scipy.sparse.save_npz), another name as an (S, A, S) int64 .npy array; with --env among the "
        "environment's states (steps into the absorbing state, i.e. terminations, are left out; default: not saved)",
    )
    p.add_argument(
        "--radius",
        choices=RADII,
        default="paper",
        help="the learner's confidence radius: the paper's Lemma 1 or a valid empirical Bernstein bound",
    )
    p.add_argument(
        "--safe",
        action="store_true",
        help="return the best policy certified safe from the data (cmdp-rl certify's test); exit 1 if none",
    )
    p.add_argument(
        "--from-log",
        metavar="FILE",
        help="plan on logged episodes only (CSV/Parquet: episode, step, state, action, next_state; no "
        "environment, no budget): writes the policy and prints its certificate (default: learn from MODEL or --env)",
    )
    p.add_argument("--force", action="store_true", help="overwrite an existing --policy-out/--counts-out file")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    _add_limits(p)
    p.set_defaults(func=_Command("_cmd_learn"))

    p = sub.add_parser(
        "bounds",
        help="the paper's sample-complexity numbers",
        formatter_class=_Help,
        description="Theory calculator: Theorem 1 (Optimistic-GMBL) and Theorem 2 / eq. m "
        "(Online-CRL) for given sizes, eps and delta.",
    )
    p.add_argument("--states", type=_int_at_least(1), required=True, help="|S|, number of states")
    p.add_argument("--actions", type=_int_at_least(1), required=True, help="|A|, number of actions")
    p.add_argument(
        "--horizon", "-H", type=_int_at_least(1), required=True, help="H, steps per episode (>= 3 for eq. m)"
    )
    p.add_argument("--constraints", type=_int_at_least(0), default=1, help="N, number of constraints")
    p.add_argument("--eps", type=_open_unit, required=True, help="accuracy in (0, 1)")
    p.add_argument("--delta", type=_open_unit, required=True, help="failure probability in (0, 1)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_Command("_cmd_bounds"))

    p = sub.add_parser(
        "scenarios",
        help="list the paper's grid-world scenarios",
        formatter_class=_Help,
        description="The paper's scenarios (docs/scenarios.md) with size, horizon, threshold and exact optimum.",
    )
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.set_defaults(func=_Command("_cmd_scenarios"))

    p = sub.add_parser(
        "certify",
        help="certify a policy's value and safety from data alone",
        formatter_class=_Help,
        description="Bound a policy's value and costs over every kernel of the confidence set built from the "
        "data (counts or a log of episodes). MODEL supplies r, c, c_bar, s0 and H; its kernel P is NOT used. "
        "Exit 0 if certified safe, 1 if not, 2 on bad input, 3 on an internal error.",
    )
    p.add_argument("model", help="a .npz model file or a registered problem (its P is not used)")
    p.add_argument("--policy", required=True, metavar="POLICY.npy", help="the (H, S, A) policy to certify")
    p.add_argument(
        "--counts",
        metavar="COUNTS",
        help="integer transition counts: an (S, A, S) .npy array, or a sparse (S*A, S) matrix in an .npz "
        "written by scipy.sparse.save_npz (row s*A + a holds n(s, a, .)); give --counts or --log",
    )
    p.add_argument(
        "--log",
        metavar="FILE",
        help="logged episodes: CSV/Parquet with episode, step, state, action, next_state; give --counts or --log",
    )
    p.add_argument("--delta", type=_open_unit, default=0.05, help="failure probability in (0, 1)")
    p.add_argument(
        "--radius",
        choices=_default_first(RADII, "empirical-bernstein"),
        default="empirical-bernstein",
        help="confidence radius: a valid empirical Bernstein bound, or the paper's Lemma 1",
    )
    p.add_argument(
        "--sampling",
        choices=SAMPLING,
        default="adaptive",
        help="sample sizes chosen by the data (learners, logs) or fixed in advance (generative model)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    _add_limits(p)
    p.set_defaults(func=_Command("_cmd_certify"))

    p = sub.add_parser(
        "envs",
        help="list the registered problems with their optimum and Slater gap",
        formatter_class=_Help,
        description="Every registered problem (a name usable wherever a model file is, with overrides "
        "NAME:key=value,...): S, A, H, N, the constrained optimum V*, the unconstrained optimum, the joint Slater "
        "gap and the safe baseline's cost, at the documented defaults (docs/environments.md).",
    )
    p.add_argument("--json", action="store_true", help="print a JSON list")
    p.set_defaults(func=_Command("_cmd_envs"))

    p = sub.add_parser(
        "import-gym",
        help="import a Gymnasium toy-text environment (FrozenLake, CliffWalking, Taxi) as a CMDP file",
        formatter_class=_Help,
        description="Convert a Gymnasium environment whose unwrapped object exposes the tabular model P "
        "into a CMDP (.npz with meta); the conversion is documented in docs/environments.md.",
    )
    p.add_argument("env_id", help="Gymnasium id, e.g. FrozenLake-v1, CliffWalking-v1, Taxi-v4")
    p.add_argument("--horizon", "-H", type=_int_at_least(1), required=True, help="H, steps per episode")
    p.add_argument(
        "--cost", help="named cost (FrozenLake: hole, CliffWalking: cliff, Taxi: illegal; default: none, N = 0)"
    )
    p.add_argument(
        "--c-bar",
        type=_nonnegative,
        metavar="X",
        help="the cost's threshold c_bar (expected total cost per episode; required with --cost)",
    )
    p.add_argument(
        "--env-kwargs",
        metavar="JSON",
        help="options for gymnasium.make, e.g. '{\"is_slippery\": true}' (default: none)",
    )
    p.add_argument(
        "--out", type=_output, required=True, metavar="FILE.npz", help="output model file (its folder must exist)"
    )
    p.add_argument("--force", action="store_true", help="overwrite an existing file")
    _add_limits(p)
    p.set_defaults(func=_Command("_cmd_import_gym"))

    p = sub.add_parser(
        "export",
        help="write a scenario (or copy a model) as a .npz model file",
        formatter_class=_Help,
        description="Write scenario NAME (1a, 1b, 2) in the library's file format (atomically; an "
        "existing file is only replaced with --force).",
    )
    p.add_argument("scenario", help="a registered problem (1a, garnet:S=50,seed=1, ...; see cmdp-rl envs) or a file")
    p.add_argument("path", type=_output, help="output .npz path (its folder must exist)")
    p.add_argument("--force", action="store_true", help="overwrite an existing file")
    _add_limits(p)
    p.set_defaults(func=_Command("_cmd_export"))

    p = sub.add_parser(
        "frontier",
        help="the optimal value against one constraint's threshold (exact, with certificates)",
        formatter_class=_Help,
        description="Trace the exact optimal value as a function of one constraint's threshold, the others "
        "fixed, from the smallest feasible threshold to the one above which the constraint is slack; with one "
        "constraint also the exact breakpoints. Writes OUT/frontier.csv (c_bar, value, gap) and "
        "OUT/frontier.png (and OUT/breakpoints.csv for one constraint).",
    )
    p.add_argument("model", help="a .npz model file or a registered problem (see cmdp-rl envs)")
    p.add_argument("--constraint", type=_int_at_least(0), default=0, metavar="I", help="the constraint to vary")
    p.add_argument("--points", type=_int_at_least(2), default=50, metavar="K", help="grid points")
    p.add_argument(
        "--breakpoints",
        action="store_true",
        help="one constraint: enumerate every exact breakpoint, however many (default: within a sweep budget)",
    )
    p.add_argument("--out", type=_output, required=True, metavar="DIR", help="output folder (created if missing)")
    p.add_argument("--force", action="store_true", help="replace the results of another configuration in --out")
    _add_limits(p)
    p.set_defaults(func=_Command("_cmd_frontier"))

    p = sub.add_parser(
        "pg",
        help="NPG-PD and CRPO on a discounted model: gap and violation per iteration",
        formatter_class=_Help,
        description="Run the policy-gradient primal-dual methods NPG-PD (Ding et al. 2020) and CRPO (Xu et al. "
        "2021) on a discounted model (e.g. ding-random:seed=10, the NPG-PD paper's instance), with exact "
        "gradients (default) or SAMPLES rollouts per state-action pair. Writes OUT/results.csv (one row per "
        "iteration: algorithm, iteration, value, value_gap, avg_value_gap, violation, signed_violation, "
        "multiplier_i), OUT/gap.png and OUT/violation.png; V* comes from the exact planner. Existing results "
        "in OUT are only replaced with --force.",
    )
    p.add_argument("model", help="a discounted .npz model or a registered problem (e.g. ding-random:seed=10)")
    p.add_argument(
        "--algorithms",
        "--algos",
        default="npg-pd",
        metavar="A[,B]",
        help="npg-pd, crpo, or both as npg-pd,crpo",
    )
    deprecated_option(p, "--algo", "--algorithms")
    p.add_argument("--iterations", type=_int_at_least(1), default=300, metavar="T", help="iterations")
    grad = p.add_mutually_exclusive_group()
    grad.add_argument("--exact", action="store_true", help="exact gradients (the default)")
    grad.add_argument(
        "--samples",
        type=_int_at_least(1),
        metavar="K",
        help="sample-based: K rollouts per pair per iteration (default: exact gradients)",
    )
    p.add_argument("--seed", type=_int_at_least(0), default=0, help="root seed of the rollouts (integer >= 0)")
    p.add_argument("--eta1", type=_positive, help="NPG-PD primal step size (default 1)")
    p.add_argument("--eta2", type=_positive, help="NPG-PD dual step size (default 1)")
    p.add_argument(
        "--lambda-max", type=_positive, metavar="L", help="NPG-PD multiplier bound (default 2 / ((1 - gamma) xi))"
    )
    p.add_argument("--eta", type=_positive, help="CRPO step size (default 0.4)")
    p.add_argument("--tol", type=_nonnegative, help="CRPO constraint tolerance (default 0.01)")
    p.add_argument(
        "--update",
        choices=PG_UPDATES,
        default="paper",
        help="primal step: the paper's natural gradient, or the authors' tabular script's (1e3 x policy gradient)",
    )
    p.add_argument(
        "--init",
        choices=PG_INITS,
        default="uniform",
        help="start from the uniform policy, or from the authors' script's random theta0 (ding-random)",
    )
    p.add_argument("--out", type=_output, required=True, metavar="DIR", help="output folder (created if missing)")
    p.add_argument("--force", action="store_true", help="replace the results of another configuration in --out")
    p.add_argument("--json", action="store_true", help="print a JSON summary instead of the text report")
    _add_limits(p)
    p.set_defaults(func=_Command("_cmd_pg"))

    p = sub.add_parser(
        "report",
        help="one self-contained HTML page of a results folder (compare, reproduce, study, pg)",
        formatter_class=_Help,
        description="Write DIR/report.html: the folder's summary and tables, every figure embedded, the first "
        "rows of its results.csv and its configuration, in one file that needs no server or network. DIR is the "
        "--out folder of compare, reproduce, study or pg; an existing report is only replaced with --force.",
    )
    p.add_argument("dir", metavar="DIR", help="a results folder (the --out of compare, reproduce, study or pg)")
    p.add_argument("--force", action="store_true", help="replace an existing DIR/report.html")
    p.set_defaults(func=_Command("_cmd_report"))

    p = sub.add_parser(
        "reproduce",
        help="run the paper's experiments: sweep, table, figures",
        formatter_class=_Help,
        description="Run the paper's experiment protocol (scenarios 1a, 1b, 2; Optimistic-GMBL and Online-CRL; "
        "25 runs each by default), then write results.csv, summary.md, config.toml and the figures "
        "into --out. Finished runs are kept in OUT/runs: rerunning the same command resumes an "
        "interrupted sweep (Ctrl-C or SIGTERM stop the workers and exit 130/143). A folder holding "
        "runs of another configuration is refused (exit 2, nothing written) unless --force.",
    )
    p.add_argument("--quick", action="store_true", help="small preset (5 runs, small budgets)")
    p.add_argument(
        "--config",
        metavar="FILE",
        help="TOML file overriding the preset (keys: the ExperimentConfig fields, optional preset = 'quick' | "
        "'full'; default: the preset alone)",
    )
    p.add_argument("--runs", type=_int_at_least(1), help="runs per (scenario, algorithm) (preset: 25; quick 5)")
    p.add_argument(
        "--out", type=_output, metavar="DIR", help="output folder (default results/paper; with --quick results/quick)"
    )
    p.add_argument("--jobs", type=_int_at_least(1), help="parallel workers (default: number of CPUs)")
    p.add_argument("--seed", type=_int_at_least(0), help="root seed (preset: 0)")
    p.add_argument("--backend", choices=BACKENDS, help="local processes (default) or Ray tasks")
    p.add_argument(
        "--address",
        metavar="ADDR",
        help="Ray cluster address, e.g. ray://HEAD:10001 (implies --backend ray); default: a local Ray instance",
    )
    p.add_argument("--force", action="store_true", help="replace finished runs of another configuration found in --out")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    _add_limits(p)
    p.set_defaults(func=_Command("_cmd_reproduce"))

    p = sub.add_parser(
        "compare",
        help="the online learners on one problem: runs, regret and violation table, figures",
        formatter_class=_Help,
        description="Run every learner of --algorithms for --runs runs of --episodes episodes on PROBLEM, scoring "
        "each episode's policy exactly, then write results.csv (problem, algorithm, run, episodes, samples, "
        "value_gap, violation, cum_value_gap, cum_violation, cum_abs_value_gap, violating_episodes, "
        "baseline_episodes), timings.csv, summary.md, config.toml and figures into --out. Resumable like "
        "reproduce; same seed, same results.csv bytes. --preset dope is the DOPE paper's media-control setting.",
    )
    p.add_argument("problem", nargs="?", help="a registered problem (cmdp-rl envs), e.g. media-control")
    p.add_argument(
        "--algorithms",
        "--algos",
        type=_algo_list,
        metavar="A,B,...",
        help=f"comma-separated learners (default: all of {', '.join(ONLINE_ALGORITHMS)})",
    )
    p.add_argument("--episodes", type=_int_at_least(1), metavar="K", help="episodes per run (default 2000)")
    p.add_argument("--runs", type=_int_at_least(1), help="runs per algorithm (default 5)")
    p.add_argument("--out", type=_output, metavar="DIR", required=True, help="output folder")
    p.add_argument("--jobs", type=_int_at_least(1), help="parallel workers (default: number of CPUs)")
    p.add_argument("--seed", type=_int_at_least(0), help="root seed (default 0)")
    p.add_argument("--delta", type=_open_unit, help="failure probability of every learner (default 0.1)")
    p.add_argument("--bonus-scale", type=_nonnegative, metavar="X", help="factor on the baselines' bonuses (default 1)")
    p.add_argument(
        "--checkpoints", type=_int_at_least(1), help="log-spaced and evenly spaced recorded episodes (default 25 each)"
    )
    p.add_argument(
        "--preset",
        choices=("dope",),
        help="dope: media-control, DOPE/OptPess-LP/OptCMDP/Online-CRL, 20,000 episodes, 5 runs, delta 0.01 "
        "(default: none; PROBLEM is then required)",
    )
    p.add_argument("--quick", action="store_true", help="smoke size: 200 episodes, 2 runs")
    p.add_argument("--backend", choices=BACKENDS, help="local processes (default) or Ray tasks")
    p.add_argument(
        "--address",
        metavar="ADDR",
        help="Ray cluster address, e.g. ray://HEAD:10001 (implies --backend ray); default: a local Ray instance",
    )
    p.add_argument("--force", action="store_true", help="replace finished runs of another configuration found in --out")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    _add_limits(p)
    p.set_defaults(func=_Command("_cmd_compare"))

    p = sub.add_parser(
        "study",
        help="studies beyond the paper: n-constraints (samples against the number of constraints)",
        formatter_class=_Help,
        description="n-constraints: both learners, both radii, on the copies and distinct families for N in "
        "1..64; samples needed until eps-good for good, fits a + b log N and a + b N, figures and summary.md "
        "in --out. Resumable like reproduce (rerun the same command); --force replaces runs of other settings.",
    )
    p.add_argument("name", choices=("n-constraints",), help="which study")
    p.add_argument("--quick", action="store_true", help="N in {1, 4, 16}, 2 runs, small budgets")
    p.add_argument("--runs", type=_int_at_least(1), help="runs per cell (default 10; quick 2)")
    p.add_argument("--out", type=_output, metavar="DIR", help="output folder (default results/n-constraints[-quick])")
    p.add_argument("--jobs", type=_int_at_least(1), help="parallel workers (default: number of CPUs)")
    p.add_argument("--seed", type=_int_at_least(0), help="root seed (default 0)")
    p.add_argument("--backend", choices=BACKENDS, help="local processes (default) or Ray tasks")
    p.add_argument(
        "--address", metavar="ADDR", help="Ray cluster address (implies --backend ray); default: a local Ray instance"
    )
    p.add_argument("--force", action="store_true", help="replace finished runs of other settings found in --out")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    _add_limits(p)
    p.set_defaults(func=_Command("_cmd_study"))
    return parser


__all__ = ["build_parser", "deprecated_option"]
