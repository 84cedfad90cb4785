"""Write the table of ``docs/reliability.md`` from a run of the fault-injection suite.

``make faults`` runs ``tests/faults`` with every case (``CMDP_RL_FAULTS=full``) and its tally in
``docs/reliability.json`` (``CMDP_RL_FAULTS_REPORT``), then this script: one row per defect class
with the test module that covers it, its tests, the cases tried and the outcome. The table sits
between the page's ``<!-- reliability-table -->`` markers; the rest of the page is left as is::

    python scripts/reliability_table.py [docs/reliability.json]
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "reliability.md"
START, END = "<!-- reliability-table -->", "<!-- /reliability-table -->"


def _order(name: str) -> tuple[int, int, str]:
    """Round one's classes by number, then its new paths, then each later round's classes by number."""
    later = re.match(r"Round (\d+): (\d+)\.", name)
    if later:
        return (100 * int(later.group(1)), int(later.group(2)), name)
    number = re.match(r"(\d+)\.", name)
    return (0, int(number.group(1)), name) if number else (99, 0, name)


def render(report: dict[str, object]) -> str:
    classes = report["classes"]
    assert isinstance(classes, dict)
    lines = [
        f"Cases per test: {'all (`make faults`)' if report.get('full') else 'the sample of `make test`'}.",
        "",
        "| class | test module | tests | cases tried | outcome |",
        "|---|---|---:|---:|---|",
    ]
    for name in sorted(classes, key=_order):
        entry = classes[name]
        outcomes = list(entry["tests"].values())
        failed = [o for o in outcomes if o != "passed"]
        outcome = "every exit code as documented, nothing lost" if not failed else f"{len(failed)} failed"
        lines.append(
            f"| {name} | `tests/faults/{entry['module']}` | {len(outcomes)} | {entry['cases']:,} | {outcome} |"
        )
    return "\n".join(lines)


def main() -> None:
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "reliability.json"
    report = json.loads(source.read_text())
    text = PAGE.read_text()
    if START not in text or END not in text:
        raise SystemExit(f"{PAGE}: no {START} ... {END} markers")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    PAGE.write_text(f"{head}{START}\n{render(report)}\n{END}{tail}")
    print(f"wrote the table of {PAGE.relative_to(ROOT)} from {source}")


if __name__ == "__main__":
    main()
