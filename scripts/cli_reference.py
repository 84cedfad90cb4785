"""Generate the command-line reference, ``docs/cli-reference.md``, from the parser itself.

Every command of ``cmdp_rl.cli.build_parser()``, its description, and a table of its
positional arguments and options: the flags, the metavariable, the default (as argparse
holds it), and the help text. It ends with the exit codes. ``tests/test_cli_reference.py``
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
    ("1", "the problem is infeasible, or no certified-safe policy (`certify`, `learn --safe`)"),
    ("2", "bad input or a refused job: one line on stderr naming the option or file, nothing written"),
    ("3", "an internal error or a solver failure: one line naming the file that holds the traceback"),
    ("130", "interrupted (Ctrl-C, SIGINT)"),
    ("143", "terminated (SIGTERM)"),
    ("141", "the reader of the output went away (`cmdp-rl ... | head`)"),
)


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
    for name, sub in commands.items():
        out += ["", f"## {name}", "", f"`{' '.join(sub.format_usage().split())}`".replace("usage: ", ""), ""]
        if sub.description:
            out += [" ".join(sub.description.split()), ""]
        out += ["| argument | default | meaning |", "|---|---|---|"]
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
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
