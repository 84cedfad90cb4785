"""docs/cli-reference.md is generated from the parser (scripts/cli_reference.py) and must not drift."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_cli_reference_page_matches_the_parser() -> None:
    spec = importlib.util.spec_from_file_location("cli_reference", ROOT / "scripts" / "cli_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = module.render()
    assert (ROOT / "docs" / "cli-reference.md").read_text() == text, (
        "docs/cli-reference.md is stale: run python scripts/cli_reference.py"
    )
    from cmdp_rl.cli import build_parser

    names = list(module._commands(build_parser()))
    assert len(names) >= 12 and all(f"\n## {name}\n" in text for name in names)


def test_help_shows_real_defaults() -> None:
    """No ``(default: None)`` or ``(default: False)``; the resource limits show what a user types."""
    import argparse

    from cmdp_rl.cli import build_parser
    from cmdp_rl.cli.parser import MAX_MEMORY_TEXT, MAX_TIME_TEXT
    from cmdp_rl.plumbing.limits import DEFAULT_MAX_MEMORY, DEFAULT_MAX_SECONDS, parse_duration, parse_size

    assert parse_size(MAX_MEMORY_TEXT) == DEFAULT_MAX_MEMORY and parse_duration(MAX_TIME_TEXT) == DEFAULT_MAX_SECONDS
    parser = build_parser()
    pages = [parser.format_help()]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            pages += [sub.format_help() for sub in action.choices.values()]
    assert len(pages) > 12
    for page in pages:
        flat = " ".join(page.split())
        assert "(default: None)" not in flat and "(default: False)" not in flat, page
    solve = " ".join(next(p for p in pages if p.startswith("usage: cmdp-rl solve")).split())
    assert "(default: 8G)" in solve and "(default: 1d)" in solve


def test_every_option_without_a_default_says_what_happens_without_it() -> None:
    """An option whose default is ``None`` says in its help what happens when it is left out:
    a stated default, that it is required (with what), or that one of a group must be given."""
    import argparse

    from cmdp_rl.cli import build_parser

    said = ("default", "required", "give ", "preset:")
    silent = []
    for action in build_parser()._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        for name, sub in action.choices.items():
            for option in sub._actions:
                if option.default is None and option.option_strings and option.nargs != 0 and not option.required:
                    if not any(word in (option.help or "") for word in said):
                        silent.append(f"{name} {'/'.join(option.option_strings)}")
    assert not silent, f"options whose help does not say what happens without them: {silent}"
