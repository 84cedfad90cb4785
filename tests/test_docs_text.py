"""The text users read: no pointer into the internal design document, and docstrings written for
MkDocs (mkdocstrings cross-references ``[name][dotted.path]``), never Sphinx roles, which the site
would show literally."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
DESIGN = re.compile(r"DESIGN(\s+sec|\.md)")
SPHINX_ROLE = re.compile(r":(func|class|meth|attr|data|mod|exc|obj):`")

#: runtime strings allowed to name a design section (none: the last ones were reworded)
KNOWN_RUNTIME_STRINGS: dict[str, list[str]] = {}


def _user_text_files() -> list[Path]:
    files = sorted(p for p in SRC.rglob("*.py") if "__pycache__" not in p.parts)
    files += sorted(p for p in (ROOT / "docs").rglob("*.md") if p.parent.name != "api")
    files.append(ROOT / "README.md")
    return files


def test_no_reference_to_the_design_document() -> None:
    found = []
    for path in _user_text_files():
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text(encoding="utf-8")
        for known in KNOWN_RUNTIME_STRINGS.get(rel, []):
            assert known in text, f"{rel}: {known} is gone; remove it from KNOWN_RUNTIME_STRINGS"
            text = text.replace(known, "", 1)
        for match in DESIGN.finditer(text):  # across a line break too ("DESIGN\nsection")
            lineno = text.count("\n", 0, match.start()) + 1
            found.append(f"{rel}:{lineno}: {text.splitlines()[lineno - 1].strip()}")
    assert not found, "the design document is internal; say what it says instead:\n" + "\n".join(found)


def test_no_sphinx_roles_in_docstrings() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if SPHINX_ROLE.search(line):
                found.append(f"{path.relative_to(ROOT).as_posix()}:{lineno}: {line.strip()}")
    assert not found, "MkDocs shows Sphinx roles literally; write [`name`][dotted.path]:\n" + "\n".join(found)
