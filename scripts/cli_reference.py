"""Generate the command-line reference, ``docs/cli-reference.md``, from the parser itself.

Every command of ``cmdp_rl.cli.build_parser()``, its description, and a table of its
positional arguments and options: the flags, the metavariable, the default (as argparse
holds it), and the help text. It ends with the exit codes. ``tests/e2e/test_cli_reference.py``
fails when the committed page differs from this script's output, so the page cannot drift
from the parser.

    python scripts/cli_reference.py            # rewrite docs/cli-reference.md
    python scripts/cli_reference.py --check    # exit 1 if the page is stale
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "cli-reference.md"

EXIT_CODES = (
    ("0", "success (`solve`: optimal; `certify`: certified safe)"),
    ("1", "the problem is infeasible, or no certified-safe policy (`certify`, `learn --deploy certified`)"),
    ("2", "bad input or a refused job: one line on stderr naming the option or file, nothing written"),
    ("3", "an internal error or a solver failure: one line naming the file that holds the traceback"),
    ("4", "uncertified: a feasible plan whose certified gap could not be closed to `--gap-tol` (`solve`)"),
    ("130", "interrupted (Ctrl-C, SIGINT)"),
    ("143", "terminated (SIGTERM)"),
    ("141", "the reader of the output went away (`cmdp-rl ... | head`)"),
)


#: the canonical options: one name for one concept in every command that has it
CANONICAL = (
    ("--seed", "the root seed of every random draw (one SeedSequence)", ""),
    ("--out", "the output folder (or file) of the command", ""),
    ("--episodes", "the number of episodes of an online learner", ""),
    (
        "--delta",
        "the failure probability of a confidence set",
        "`certify` defaults to 0.05, a certificate's usual 95% level; the learners default to 0.1, the "
        "paper's experiments' value",
    ),
    ("--jobs", "worker processes (or Ray tasks) run at once", ""),
    ("--force", "replace existing outputs (without it an existing output is refused, nothing written)", ""),
    ("--json", "print one JSON object instead of the text report", ""),
    ("--horizon", "H, the number of steps per episode", ""),
    ("--c-bar", "the constraint thresholds c_bar (several as X/Y/...)", ""),
    (
        "--radius",
        "the confidence radius rule",
        "`certify` defaults to the valid empirical-Bernstein radius (a certificate must hold); `learn` to "
        "the paper's, to reproduce it",
    ),
)


def _canonical_table(commands: dict[str, argparse.ArgumentParser]) -> list[str]:
    rows = ["| option | meaning | commands (default) | why the defaults differ |", "|---|---|---|---|"]
    for option, meaning, why in CANONICAL:
        where = []
        for name, sub in commands.items():
            for action in sub._actions:
                if option in action.option_strings:
                    default = _default(action)
                    where.append(f"`{name}`" + (f" ({default})" if default else ""))
        rows.append(f"| `{option}` | {meaning} | {', '.join(where)} | {why} |")
    return rows


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _default(action: argparse.Action) -> str:
    if action.default is None or action.default is argparse.SUPPRESS:
        return ""
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
        return ""
    return f"`{action.default}`"


def _flags(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    name = ", ".join(f"`{s}`" for s in action.option_strings)
    if action.nargs == 0:
        return name
    meta = action.metavar or ("{" + ",".join(map(str, action.choices)) + "}" if action.choices else action.dest.upper())
    return f"{name} `{meta}`"


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _help_of(parser: argparse.ArgumentParser) -> dict[str, str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {choice.dest: choice.help or "" for choice in action._choices_actions}
    return {}


def render() -> str:
    """The page's Markdown."""
    from cmdp_rl.cli import build_parser

    parser = build_parser()
    helps = _help_of(parser)
    out = [
        "# Command-line reference",
        "",
        "Generated from the parser by `python scripts/cli_reference.py`; a test fails when it is stale.",
        "`cmdp-rl COMMAND --help` prints the same. Every command checks all its arguments before any work, and a",
        "refused command writes nothing.",
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    commands = _commands(parser)
    out += [f"| [`{name}`](#{name}) | {_cell(helps.get(name, ''))} |" for name in commands]
    out += ["", "## Canonical options", "", "The same concept has the same option name in every command:", ""]
    out += _canonical_table(commands)
    for name, sub in commands.items():
        out += ["", f"## {name}", "", f"`{' '.join(sub.format_usage().split())}`".replace("usage: ", ""), ""]
        if sub.description:
            out += [" ".join(sub.description.split()), ""]
        out += ["| argument | default | meaning |", "|---|---|---|"]
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
                continue  # a deprecated spelling (hidden from --help)
            out.append(f"| {_flags(action)} | {_cell(_default(action))} | {_cell(action.help or '')} |")
    out += ["", "## Exit codes", "", "| code | meaning |", "|---:|---|"]
    out += [f"| {code} | {meaning} |" for code, meaning in EXIT_CODES]
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="exit 1 if docs/cli-reference.md is stale")
    args = ap.parse_args()
    text = render()
    if args.check:
        stale = not PAGE.exists() or PAGE.read_text() != text
        print(f"{PAGE.relative_to(ROOT)}: {'stale' if stale else 'up to date'}")
        return 1 if stale else 0
    PAGE.write_text(text)
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
