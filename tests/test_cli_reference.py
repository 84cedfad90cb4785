"""docs/cli-reference.md is generated from the parser (scripts/cli_reference.py) and must not drift."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


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
