"""The text users read: no pointer into the internal design document, and docstrings written for
MkDocs (mkdocstrings cross-references ``[name][dotted.path]``), never Sphinx roles, which the site
would show literally."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
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


# --------------------------------------------------------------------------- stated times

#: a time stated in the text: a number and a time unit ("281 ms", "2 min 15 s", "90s"; the unit in
#: lower case, so the horizon ``H`` is not read as hours), a number in words ("about a minute",
#: "after one second"), or a vague duration ("in seconds", "takes minutes", "(seconds)")
STATED_TIME = re.compile(
    r"(?<![\w.\-^])\d[\d,]*(?:\.\d+)?\s?(?:us|µs|ms|s|secs?|seconds?|min|mins|minutes?|h|hrs?|hours?|days?)\b"
    r"|\b(?:about|under|within|up to|over|than|nearly|almost|after|in|takes?|took)\s+"
    r"(?:a|an|one|two|three|four|five|ten|fifteen|twenty|thirty|a few|several)\s+(?:seconds?|minutes?|hours?|days?)\b"
    r"|\b(?:in|takes?|took|taking|within)\s+(?:seconds|minutes|hours)\b"
    r"|[(,]\s*(?:seconds|minutes|hours)\)"
)
#: what the pattern must find, and what it must not
TIMES: tuple[str, ...] = ("takes 281 ms", "2 min 15 s", "about 15 min", "about a minute", "0.5 ms", "90s")
TIMES += ("within about a second", "after one second", "in seconds", "takes minutes", "in about 4\nminutes")
TIMES += ("2 runs (seconds)",)
NOT_TIMES: tuple[str, ...] = ("1,000 states", "gap 1e-6 H", "S=9 A=4 H=10", "10 sweeps", "S1e4-A4-b3-N1-H50")
NOT_TIMES += ("8d/100", "3 seeds", "log(2 S A H K / delta)", "A second run into the same folder", "`plan_seconds`")
#: a citation: a path that names an existing measurement or measuring script (below), or the suite
CITED_PATH = re.compile(r"[\w./-]+\.(?:json|csv|py)\b")
CITED_SUITE = "python -m benchmarks"
#: where the stored measurements (JSON, CSV) and the scripts that take them live
SOURCE_DIRS = ("benchmarks/", "scripts/", "docs/")
#: the allow-list: lines that state a time that is not a claim about how long something runs, by
#: page and a fragment of the line; an entry whose line is gone fails the test
NOT_MEASURED_CLAIMS: dict[str, list[str]] = {
    # examples of the --max-time syntax, not run times
    "docs/cli-reference.md": ["refuse jobs estimated to run longer (e.g. 3d, 2h, 90s)"],
    "docs/cli.md": ["durations like `90s`, `2h`, `3d`"],
    # a constant of the code (cmdp_rl.cli.models: the solve's progress line shows after 1.0 s)
    "docs/scale.md": ["shows its progress on a terminal after one second"],
}
#: lines whose measurement is cited elsewhere on their page: page -> (fragment of the line, the
#: citation that must be on the page). The README's set-up lines are sourced under Install.
CITED_ON_THE_PAGE: dict[str, list[tuple[str, str]]] = {
    "README.md": [
        ("make demo    # creates .venv", "docs/setup-times.json"),
        ("make test    # creates .venv", "docs/setup-times.json"),
    ],
}
#: the ``time`` line of a console transcript: the output of the run shown, whose seconds
#: tests/e2e/test_readme.py does not compare; not a claim about how long the command takes
TRANSCRIPT_TIME = re.compile(r"^time\s+[\d.]+ s\b")


def _blocks(text: str) -> list[tuple[str, list[tuple[int, str]]]]:
    """The page as ``(kind, [(line number, line), ...])`` blocks: runs of non-blank lines, a
    fenced block as one block; kind ``console`` (a transcript), ``code``, ``table``, ``list``
    or ``prose``."""
    raw: list[tuple[str, list[tuple[int, str]]]] = []
    current: list[tuple[int, str]] = []
    fence = ""
    for lineno, line in enumerate(text.splitlines(), 1):
        fenced = line.strip().startswith("```")
        if fence:
            current.append((lineno, line))
            if fenced:
                raw.append((fence, current))
                current, fence = [], ""
        elif fenced:
            if current:
                raw.append(("", current))
            current = [(lineno, line)]
            fence = "console" if line.strip() in ("```console", "```text") else "code"
        elif line.strip():
            current.append((lineno, line))
        elif current:
            raw.append(("", current))
            current = []
    if current:
        raw.append((fence, current))
    blocks = []
    for kind, lines in raw:
        first = lines[0][1].lstrip()
        if not kind:
            kind = "table" if first.startswith("|") else "list" if first[:2] in ("* ", "- ") else "prose"
        blocks.append((kind, lines))
    return blocks


def _cites_a_measurement(text: str, page: Path) -> bool:
    """Whether ``text`` names the benchmark suite or an existing file under :data:`SOURCE_DIRS`
    (from the repository's root, or relative to ``page`` as a link is)."""
    if CITED_SUITE in text:
        return True
    for match in CITED_PATH.finditer(text):
        for candidate in (ROOT / match.group(0).lstrip("./"), page.parent / match.group(0)):
            if candidate.is_file():
                rel = candidate.resolve().relative_to(ROOT).as_posix()
                if rel.startswith(SOURCE_DIRS) and not rel.startswith("docs/api/"):
                    return True
    return False


def _stated_times_without_source() -> list[str]:
    """``page:line: text`` of every stated time whose paragraph cites no measurement."""
    found: list[str] = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("docs/api/"):
            continue
        text = path.read_text(encoding="utf-8")
        allowed = NOT_MEASURED_CLAIMS.get(rel, [])
        elsewhere = CITED_ON_THE_PAGE.get(rel, [])
        for fragment in allowed:
            assert fragment in text, f"{rel}: {fragment!r} is gone; remove it from NOT_MEASURED_CLAIMS"
        for fragment, citation in elsewhere:
            assert fragment in text, f"{rel}: {fragment!r} is gone; remove it from CITED_ON_THE_PAGE"
            assert citation in text, f"{rel}: {fragment!r} is said to be cited by {citation}, not on the page"
        exempt = allowed + [fragment for fragment, _ in elsewhere]
        blocks = _blocks(text)
        for i, (kind, lines) in enumerate(blocks):
            context = [line for _, line in lines]
            j = i
            while j > 0 and blocks[j][0] != "prose":  # a table, list or code block: with its caption
                j -= 1
                context = [line for _, line in blocks[j][1]] + context
            if _cites_a_measurement("\n".join(context), path):
                continue
            body = "\n".join(line for _, line in lines)
            for match in STATED_TIME.finditer(body):  # across a line break too ("about 4\nminutes")
                lineno, line = lines[body.count("\n", 0, match.start())]
                if (kind == "console" and TRANSCRIPT_TIME.match(line)) or any(f in line for f in exempt):
                    continue
                entry = f"{rel}:{lineno}: {line.strip()}"
                if entry not in found:
                    found.append(entry)
    return found


def test_stated_time_pattern() -> None:
    assert all(STATED_TIME.search(claim) for claim in TIMES), [c for c in TIMES if not STATED_TIME.search(c)]
    assert not any(STATED_TIME.search(other) for other in NOT_TIMES), [o for o in NOT_TIMES if STATED_TIME.search(o)]


def test_every_stated_time_cites_its_measurement() -> None:
    """Every time stated in the README and the docs comes from a measurement: its paragraph (for a
    table, list or code block, with the paragraph introducing it) names the stored result file
    or the script that measured it (``benchmarks/results/*.json``, ``docs/*.json``,
    ``scripts/*.py``, ``python -m benchmarks``), which stores the machine it ran on. Exempt: the
    ``time`` line of a console transcript and the short allow-list above."""
    found = _stated_times_without_source()
    assert not found, (
        "a stated time without the measurement behind it: name the result file or the script in "
        "its paragraph, or say it without the time:\n" + "\n".join(found)
    )


def test_readme_set_up_times_are_the_measured_range() -> None:
    """The README's two set-up lines quote ``docs/setup-times.json`` (written by
    ``scripts/measure_setup.py`` from fresh clones with an empty pip cache), ``make demo`` stays
    within five minutes and ``make test`` within six there (on the project's 2-core machine)."""
    times = json.loads((ROOT / "docs" / "setup-times.json").read_text())
    lines = (ROOT / "README.md").read_text().splitlines()
    for target in ("demo", "test"):
        line = next(line for line in lines if line.startswith(f"make {target} "))
        assert f"({times[target]['text']} on a fresh clone" in line, (target, line, times[target]["text"])
        assert all(run["exit_code"] == 0 for run in times[target]["runs"]), target
    assert times["cold_pip_cache"] is True
    assert times["demo"]["max"] <= 300.0
    assert times["test"]["max"] <= 360.0
    if "test-fast" in times:  # the inner loop (measure_setup.py --only test-fast), when measured
        assert times["test-fast"]["max"] <= 90.0 and all(r["exit_code"] == 0 for r in times["test-fast"]["runs"])
    assert "pip's download cache empty" in (ROOT / "README.md").read_text()
