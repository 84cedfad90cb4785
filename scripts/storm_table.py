"""Write the 'Storm side by side' table of ``docs/model-checkers.md`` from ``benchmarks/results/storm.json``.

``python -m benchmarks --only storm`` measures; this script renders its rows (one per model: size,
horizon, thresholds, both values, the difference and our certified gap, both tools' build and solve
medians) and the shipped MDPs left out with their reasons, between the page's
``<!-- storm-table -->`` markers; the rest of the page is left as is::

    python scripts/storm_table.py [benchmarks/results/storm.json]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "model-checkers.md"
RESULTS = ROOT / "benchmarks" / "results" / "storm.json"
START, END = "<!-- storm-table -->", "<!-- /storm-table -->"


def _seconds(x: float) -> str:
    if x < 1e-3:
        return f"{x * 1e6:.0f} us"
    if x < 1.0:
        return f"{x * 1e3:.3g} ms"
    return f"{x:.3g} s"


def _number(x: float) -> str:
    return f"{x:.6g}"


def _term(term: str) -> str:
    """``P:a&b`` as ``P(a & b)`` (entered within H), a reward structure as ``R{"name"}`` (``R``: unnamed)."""
    if term.startswith("P:"):
        return f"`P({' & '.join(term[2:].split('&'))})`"
    return "`R`" if "(unnamed)" in term else f'`R{{"{term}"}}`'


def _times(x: float) -> str:
    return f"{x:.2g}" if x < 10 else f"{x:.0f}"


def _speed(rows: list[dict[str, Any]]) -> str:
    """Which tool solves faster, row by row (Storm's solve median over cmdp_rl's)."""
    ratio = {row["name"]: row["storm_solve"] / row["ours_solve"] for row in rows}
    slower = [f"{name} ({_times(1 / r)} times slower)" for name, r in ratio.items() if r < 1]
    faster = [r for r in ratio.values() if r >= 1]
    text = f"cmdp_rl's solve is faster than Storm's on {len(faster)} of {len(rows)} rows"
    if faster:
        text += f" ({_times(min(faster))} to {_times(max(faster))} times)"
    return text + (f"; slower on {', '.join(slower)}." if slower else ".")


def render(results: dict[str, Any]) -> str:
    """The table, its legend and the skipped models as Markdown."""
    meta = results["meta"]
    lines = [
        "Measured by `python -m benchmarks --only storm` (`benchmarks/results/storm.json`) at commit "
        f"`{meta['git_commit'][:10]}` on {meta['cpus']} CPUs "
        f"(load {meta['load_average']}), median of up to {results['params']['reps']} runs.",
        "",
        "| model | states | choices | H | objective; cost <= threshold | cmdp_rl | Storm | \\|diff\\| | gap "
        "| build cmdp_rl | build Storm | solve cmdp_rl | solve Storm |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in results["rows"]:
        costs = ", ".join(f"{_term(c)} <= {_number(t)}" for c, t in zip(row["costs"], row["thresholds"], strict=True))
        if len(row["costs"]) > 1:
            costs = f"{len(row['costs'])} costs (Garnet thresholds, f = 0.5)"
        lines.append(
            f"| {row['name']} | {row['states']:,} | {row['choices']:,} | {row['horizon']} "
            f"| {_term(row['objective'])}; {costs} | {row['value_ours']:.12g} | {row['value_storm']:.12g} "
            f"| {row['diff']:.1e} | {row['gap']:.1e} | {_seconds(row['ours_build'])} "
            f"| {_seconds(row['storm_build'])} | {_seconds(row['ours_solve'])} | {_seconds(row['storm_solve'])} |"
        )
    agree = sum(bool(r["agree"]) for r in results["rows"])
    binds = sum(bool(r["binds"]) for r in results["rows"])
    lines += [
        "",
        f"Agreement (`|diff| <= 1e-8 + gap`) on {agree} of {len(results['rows'])} rows; the cost binds "
        f"on {binds} of them (every threshold strictly between Storm's minimum and maximum of its cost, "
        "and the constrained optimum below the unconstrained one).",
        "",
        _speed(results["rows"]),
        "",
        "The shipped MDPs left out, and why:",
        "",
    ]
    for entry in results["params"]["skipped"]:
        measured = "; ".join(f"`{q}` = {v:.10g}" for q, v in entry["measured"].items())
        lines.append(f"- `{entry['file']}`: {entry['reason']}" + (f" (measured: {measured})" if measured else ""))
    return "\n".join(lines)


def write(results_path: Path = RESULTS, page: Path = PAGE) -> None:
    """Replace the table between the markers of ``page`` with :func:`render` of ``results_path``."""
    text = page.read_text()
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    table = render(json.loads(results_path.read_text()))
    page.write_text(f"{head}{START}\n{table}\n{END}{tail}")


if __name__ == "__main__":
    write(Path(sys.argv[1]) if len(sys.argv) > 1 else RESULTS)
