"""The options that several ``cmdp-rl`` commands share, each declared once, and the argument types.

A command's module ([`cmdp_rl.cli.parser`][cmdp_rl.cli.parser] lists them) declares its own options
and calls these for the shared ones (``--seed``, ``--jobs``, ``--out``/``--force``, ``--delta``,
``--horizon``/``-H``, ``--c-bar``, ``--algorithms``/``--algos``, ``--backend``/``--address``, the
resource limits, ...); where the commands' help texts differ, the command passes its own and
the rest (flags, type, metavariable) stays here. Nothing here loads NumPy.

Every numeric option obeys the rules of [`cmdp_rl.plumbing.numbers`][cmdp_rl.plumbing.numbers] (an
integer typed as one, within 64 bits; a real number finite, and 0 or of normal size; -0 reads as
0), then its own range. Each type has a user-facing ``__name__``, in case argparse ever names it.
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from cmdp_rl.cli.reach import add_reach
from cmdp_rl.plumbing.errors import CMDPInputError
from cmdp_rl.plumbing.limits import parse_duration, parse_size
from cmdp_rl.plumbing.names import BACKENDS, METHODS, ONLINE_ALGORITHMS, RADII
from cmdp_rl.plumbing.numbers import MAX_INT, MAX_INT_TEXT, NumberError, read_int, read_real, shown

# -- argument types: each names the rule it checks ------------------------------------------

T = TypeVar("T")


def int_at_least(minimum: int, maximum: int = MAX_INT, maximum_text: str = MAX_INT_TEXT) -> Callable[[str], int]:
    """An integer type: ``read_int``'s rules, at least ``minimum`` and at most ``maximum``."""

    def parse(text: str) -> int:
        try:
            return read_int(text, minimum, maximum, maximum_text)
        except NumberError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = f"integer >= {minimum}"
    return parse


def real(rule: str, check: Callable[[float], bool], name: str) -> Callable[[str], float]:
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
open_unit = real("a number in the open interval (0, 1)", lambda v: 0.0 < v < 1.0, "number in (0, 1)")
nonnegative = real("a finite number >= 0", lambda v: v >= 0.0, "number >= 0")
positive = real("a finite number > 0", lambda v: v > 0.0, "number > 0")
finite = real("a finite number", lambda v: True, "number")
#: --step-timeout: positive, and at most the longest wait the platform supports
seconds = real(
    f"a number of seconds > 0 and at most {threading.TIMEOUT_MAX:.3g}",
    lambda v: 0.0 < v <= threading.TIMEOUT_MAX,
    "seconds",
)


def output_name(text: str) -> str:
    """An output file or folder name: not empty (an empty name would write into the current folder)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"must name a file or folder, got {shown(text)}")
    return text


output_name.__name__ = "file or folder name"


def _limit(parse: Callable[[str], T], name: str, doc: str) -> Callable[[str], T]:
    """A resource limit's type: ``parse``'s rules (a ``CMDPInputError`` becomes argparse's
    one-line usage error, without the parser's own label)."""

    def read(text: str) -> T:
        try:
            return parse(text)
        except CMDPInputError as exc:
            raise argparse.ArgumentTypeError(str(exc).split(": ", 1)[1]) from None

    read.__name__, read.__doc__ = name, doc
    return read


#: ``--max-memory``: a size such as ``16G`` or ``500M``, in bytes
size = _limit(parse_size, "size", "A size such as 16G or 500M, in bytes.")
#: ``--max-time``: a duration such as ``3d``, ``2h`` or ``90s``, in seconds
duration = _limit(parse_duration, "duration", "A duration such as 3d, 2h or 90s, in seconds.")


def learner_list(text: str) -> tuple[str, ...]:
    """``A,B,...``: online learners of [`ONLINE_ALGORITHMS`][cmdp_rl.plumbing.names.ONLINE_ALGORITHMS], at least one."""
    names = tuple(a.strip() for a in text.split(",") if a.strip())
    for a in names:
        if a not in ONLINE_ALGORITHMS:
            raise argparse.ArgumentTypeError(f"unknown learner {a!r}; valid names are {', '.join(ONLINE_ALGORITHMS)}")
    if not names:
        raise argparse.ArgumentTypeError("give at least one learner, e.g. dope,optpess")
    return names


def default_first(choices: Sequence[str], default: str) -> tuple[str, ...]:
    """``choices`` with ``default`` first (the order ``--help`` lists them in)."""
    return (default, *(c for c in choices if c != default))


def parse_thresholds(text: str, option: str, negative: bool = False) -> list[float]:
    """``X[/Y...]``: one finite number >= 0 per constraint (``cmdp_rl.plumbing.numbers``' rules; ``-0`` is 0);
    ``negative``: any finite numbers (costs in other units, ``learn --env --cost-range``)."""
    out = []
    for part in text.split("/"):
        try:
            value = read_real(part, "a finite number" if negative else "a finite number >= 0")
        except NumberError as exc:
            raise CMDPInputError(f"{option}: expected numbers separated by '/', each {exc}") from None
        if value < 0 and not negative:
            raise CMDPInputError(f"{option}: each threshold must be a finite number >= 0, got {shown(part)}")
        out.append(value)
    return out


# -- renamed options ------------------------------------------------------------------------


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
        if not getattr(parser, "_given_pass", False):  # the parser's re-parse of the given options: say it once
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


# -- the shared options -----------------------------------------------------------------------

#: the resource limits' defaults as a user types them (DEFAULT_MAX_MEMORY, DEFAULT_MAX_SECONDS)
MAX_MEMORY_TEXT, MAX_TIME_TEXT = "8G", "1d"
#: MODEL of the commands that solve or score it
MODEL_HELP = (
    "a registered problem (see cmdp-rl envs), a .npz model file, a CSV/Parquet transition table, or a model "
    "checker's file .prism/.nm/.pm, .jani or .drn (through stormpy; with the options below for what a table or "
    "such a file does not carry)"
)
#: what a MODEL given as a transition table or a model checker's file takes from the command line (the options' help)
TABLE_FILL_HELP = {
    "horizon": "MODEL a transition table or a model checker's file: its horizon H, steps per episode (required "
    "there: such a file carries none)",
    "gamma": "MODEL a transition table or a model checker's file: its discount factor in (0, 1) (required there, "
    "or --horizon where the command has it)",
    "c_bar": "MODEL a transition table or a model checker's file: its thresholds, one per cost column cost_0, "
    "cost_1, ... of a table or per --cost (required there when it has costs)",
    "s0": "MODEL a transition table: its start state, 0-based (required there); a model checker's file: a start "
    "state instead of the file's initial states (default: the file's)",
}
#: what ``--reward`` and ``--cost`` name in a model checker's file
CHECKER_NAME_RULE = (
    "a reward structure of the model ('' for PRISM's unnamed one) or label:NAME (1 per step in a state of the label)"
)
#: --force of the commands that write one file
FORCE_FILE_HELP = "overwrite an existing file"
#: --force of the commands that write a results folder of one run
FORCE_FOLDER_HELP = "replace the results of another configuration in --out"
#: --force of the resumable sweeps
FORCE_RUNS_HELP = "replace finished runs of another configuration found in --out"
#: --out of the commands that write a results folder of one run
OUT_FOLDER_HELP = "output folder (created if missing)"
#: --address of the sweeps
ADDRESS_HELP = "Ray cluster address, e.g. ray://HEAD:10001 (implies --backend ray); default: a local Ray instance"
#: --delta where it is a confidence level
DELTA_HELP = "failure probability in (0, 1)"


def _typed(type: Callable[[str], object] | None) -> dict[str, Any]:
    """``type=`` for ``add_argument`` when there is one (an untyped option keeps argparse's ``None``)."""
    return {} if type is None else {"type": type}


def add_limits(p: argparse.ArgumentParser) -> None:
    """``--max-memory SIZE`` and ``--max-time DURATION`` (refuse a job estimated beyond them) and
    ``--threads N``: every command that runs numerics has them."""
    add_threads(p)
    p.add_argument(
        "--max-memory",
        type=size,
        default=MAX_MEMORY_TEXT,  # a string default goes through the type, as if typed
        metavar="SIZE",
        help="refuse jobs estimated to need more memory (e.g. 16G, 500M)",
    )
    p.add_argument(
        "--max-time",
        type=duration,
        default=MAX_TIME_TEXT,
        metavar="DURATION",
        help="refuse jobs estimated to run longer (e.g. 3d, 2h, 90s)",
    )


def add_threads(p: argparse.ArgumentParser) -> None:
    """``--threads N``: threads of the compiled kernels, checked against the cores and applied around
    the command by [`main`][cmdp_rl.cli.entry.main] ([`threads_for`][cmdp_rl.plumbing.threads.threads_for])."""
    p.add_argument(
        "--threads",
        type=int_at_least(1),
        metavar="N",
        help="threads of the sweeps and evaluations, at most the cores (default: CMDP_RL_THREADS, else all "
        "cores; each worker of --jobs: 1 unless set); results are the same for any count",
    )


def add_model(p: argparse.ArgumentParser, help: str = MODEL_HELP, optional: bool = False) -> None:
    """``MODEL``: a ``.npz`` model file or a registered problem (``optional``: may be left out)."""
    p.add_argument("model", nargs="?" if optional else None, help=help)


def add_json(p: argparse.ArgumentParser, help: str = "print one JSON object") -> None:
    """``--json``: print the result as JSON instead of text."""
    p.add_argument("--json", action="store_true", help=help)


def add_force(p: argparse.ArgumentParser, help: str) -> None:
    """``--force``: replace existing outputs (``help`` says which)."""
    p.add_argument("--force", action="store_true", help=help)


def add_policy_out(p: argparse.ArgumentParser, help: str, metavar: str = "FILE.npy") -> None:
    """``--policy-out FILE.npy``: save the command's policy, the format chosen by the extension
    ([`cmdp_rl.cli.policy_io`][cmdp_rl.cli.policy_io]; ``help`` says which)."""
    p.add_argument("--policy-out", type=output_name, metavar=metavar, help=help)


def add_out(p: argparse.ArgumentParser, help: str, metavar: str = "DIR", required: bool = False) -> None:
    """``--out``: the output folder (or file) of the command (not an empty name)."""
    p.add_argument("--out", type=output_name, required=required, metavar=metavar, help=help)


def add_seed(p: argparse.ArgumentParser, help: str, default: int | None = None) -> None:
    """``--seed``: the root seed, an integer >= 0."""
    p.add_argument("--seed", type=int_at_least(0), default=default, help=help)


def add_delta(
    p: argparse.ArgumentParser, help: str = DELTA_HELP, default: float | None = None, required: bool = False
) -> None:
    """``--delta``: a failure probability in (0, 1)."""
    p.add_argument("--delta", type=open_unit, default=default, required=required, help=help)


def add_eps(p: argparse.ArgumentParser, help: str, required: bool = False) -> None:
    """``--eps``: an accuracy in (0, 1)."""
    p.add_argument("--eps", type=open_unit, required=required, help=help)


class Arguments(Protocol):
    """What options are added to: a parser, or a group of one (e.g. a mutually exclusive group)."""

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action: ...


def add_horizon(p: Arguments, help: str, required: bool = False, metavar: str | None = None) -> None:
    """``--horizon``/``-H``: steps per episode, an integer >= 1."""
    p.add_argument("--horizon", "-H", type=int_at_least(1), required=required, metavar=metavar, help=help)


def add_gamma(p: Arguments, help: str) -> None:
    """``--gamma G``: the discount factor, in (0, 1)."""
    p.add_argument("--gamma", type=open_unit, metavar="G", help=help)


def add_c_bar(p: argparse.ArgumentParser, help: str, metavar: str, type: Callable[[str], float] | None = None) -> None:
    """``--c-bar``: the constraint thresholds (text ``X[/Y...]`` read by the command, or one number)."""
    p.add_argument("--c-bar", metavar=metavar, help=help, **_typed(type))


def add_table_fill(p: argparse.ArgumentParser, options: Sequence[str]) -> None:
    """The options of a command's MODEL: what a transition table (CSV/Parquet MODEL) or a model
    checker's file does not carry, among ``horizon``, ``gamma``, ``c_bar`` and ``s0`` (those the
    command can use: ``--horizon`` where it works on finite-horizon models, ``--gamma`` on discounted
    ones), what to take from a model checker's file (``--constants``, ``--reward``, ``--cost``:
    [`add_checker_names`][cmdp_rl.cli.options.add_checker_names]), then the reach-avoid options
    ``--avoid``/``--reach`` ([`add_reach`][cmdp_rl.cli.reach.add_reach]); read by
    ``cmdp_rl.cli.common.load_model``."""
    if "horizon" in options:
        add_horizon(p, TABLE_FILL_HELP["horizon"], metavar="H")
    if "gamma" in options:
        add_gamma(p, TABLE_FILL_HELP["gamma"])
    if "c_bar" in options:
        add_c_bar(p, TABLE_FILL_HELP["c_bar"], "X[/Y...]")
    if "s0" in options:
        p.add_argument("--s0", type=int_at_least(0), metavar="S", help=TABLE_FILL_HELP["s0"])
    add_checker_names(p, "MODEL a model checker's file: ", constants=True)
    add_reach(p)


def add_checker_names(p: argparse.ArgumentParser, where: str, constants: bool) -> None:
    """What to take from a model checker's file (PRISM, JANI, DRN; [`cmdp_rl.model.storm`][cmdp_rl.model.storm]):
    ``--constants N=4,K=2`` (``constants``: the format has undefined constants to give), ``--reward
    NAME`` and ``--cost NAME`` (repeatable, one constraint each); ``where`` starts their help (``""``
    for the import commands, e.g. ``"MODEL a PRISM/JANI/DRN file: "`` for a MODEL)."""
    if constants:
        p.add_argument(
            "--constants",
            metavar="N=4,K=2",
            help=f"{where}values of the model's undefined constants (PRISM, JANI), comma-separated (required when "
            "it has any; default: none)",
        )
    p.add_argument(
        "--reward",
        metavar="NAME",
        help=f"{where}the reward, {CHECKER_NAME_RULE}; default: none (reward 0)",
    )
    add_cost(
        p,
        f"{where}a constraint's cost, named as --reward; repeat for several constraints (default: none, N = 0)",
        repeatable=True,
    )


def add_cost(p: argparse.ArgumentParser, help: str, repeatable: bool) -> None:
    """``--cost NAME``: a named cost (``repeatable``: one constraint per ``--cost``, collected in a list)."""
    p.add_argument("--cost", action="append" if repeatable else "store", default=None, metavar="NAME", help=help)


def add_env_kwargs(p: argparse.ArgumentParser, help: str) -> None:
    """``--env-kwargs JSON``: keywords of ``gymnasium.make``."""
    p.add_argument("--env-kwargs", metavar="JSON", help=help)


def add_method(p: argparse.ArgumentParser, help: str) -> None:
    """``--method``: the LP method (fast column generation or the literal LP)."""
    p.add_argument("--method", choices=METHODS, default="fast", help=help)


def add_radius(p: argparse.ArgumentParser, help: str, default: str) -> None:
    """``--radius``: the confidence radius rule, ``default`` listed first."""
    p.add_argument("--radius", choices=default_first(RADII, default), default=default, help=help)


def add_episodes(p: argparse.ArgumentParser, help: str) -> None:
    """``--episodes K``: episodes of an online learner."""
    p.add_argument("--episodes", type=int_at_least(1), metavar="K", help=help)


def add_bonus_scale(p: argparse.ArgumentParser, help: str) -> None:
    """``--bonus-scale X``: the baselines' factor on their bonuses."""
    p.add_argument("--bonus-scale", type=nonnegative, metavar="X", help=help)


def add_algorithms(
    p: argparse.ArgumentParser,
    help: str,
    metavar: str,
    type: Callable[[str], object] | None = None,
    default: str | None = None,
) -> None:
    """``--algorithms`` (short form ``--algos``): the algorithms to run, comma-separated."""
    p.add_argument("--algorithms", "--algos", default=default, metavar=metavar, help=help, **_typed(type))


def add_quick(p: argparse.ArgumentParser, help: str) -> None:
    """``--quick``: the small preset."""
    p.add_argument("--quick", action="store_true", help=help)


def add_runs(p: argparse.ArgumentParser, help: str) -> None:
    """``--runs``: runs per cell of a sweep."""
    p.add_argument("--runs", type=int_at_least(1), help=help)


def add_jobs(p: argparse.ArgumentParser) -> None:
    """``--jobs``: worker processes (or Ray tasks) run at once."""
    p.add_argument("--jobs", type=int_at_least(1), help="parallel workers (default: number of CPUs)")


def add_sweep_options(
    p: argparse.ArgumentParser, force_help: str = FORCE_RUNS_HELP, address_help: str = ADDRESS_HELP
) -> None:
    """The options every resumable sweep ends with: ``--backend`` and ``--address`` (where its
    runs go), ``--force`` (replace finished runs of another configuration), ``--no-progress``
    and the resource limits."""
    p.add_argument("--backend", choices=BACKENDS, help="local processes (default) or Ray tasks")
    p.add_argument("--address", metavar="ADDR", help=address_help)
    add_force(p, force_help)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_limits(p)


__all__ = [
    "ADDRESS_HELP",
    "CHECKER_NAME_RULE",
    "DELTA_HELP",
    "FORCE_FILE_HELP",
    "FORCE_FOLDER_HELP",
    "FORCE_RUNS_HELP",
    "MAX_MEMORY_TEXT",
    "MAX_TIME_TEXT",
    "MODEL_HELP",
    "OUT_FOLDER_HELP",
    "TABLE_FILL_HELP",
    "Arguments",
    "add_algorithms",
    "add_bonus_scale",
    "add_c_bar",
    "add_checker_names",
    "add_cost",
    "add_delta",
    "add_env_kwargs",
    "add_episodes",
    "add_eps",
    "add_force",
    "add_gamma",
    "add_horizon",
    "add_jobs",
    "add_json",
    "add_limits",
    "add_method",
    "add_model",
    "add_out",
    "add_policy_out",
    "add_quick",
    "add_radius",
    "add_runs",
    "add_seed",
    "add_sweep_options",
    "add_table_fill",
    "add_threads",
    "default_first",
    "deprecated_option",
    "duration",
    "finite",
    "int_at_least",
    "learner_list",
    "nonnegative",
    "open_unit",
    "output_name",
    "parse_thresholds",
    "positive",
    "real",
    "seconds",
    "size",
]
