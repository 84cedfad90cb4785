"""One self-contained HTML page for a results folder of ``compare``, ``reproduce``, ``study`` or ``pg``.

``write_report(folder)`` writes ``folder/report.html``: the folder's summary (``summary.md``,
its Markdown tables as HTML tables), every figure (PNG files, embedded as ``data:`` URIs, so the
page is one file that can be mailed or archived), the first rows of its results table
(``results.csv``) and its configuration (``config.toml``). It needs no network and no server. A
few lines of inline script set ``data-figures-loaded`` on ``<body>`` once every figure has
decoded, which the tests read in a headless browser.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import os
import re
from pathlib import Path

from cmdp_rl.plumbing.atomic import atomic_path
from cmdp_rl.plumbing.decoding import detail, utf8_text
from cmdp_rl.plumbing.errors import CMDPInputError
from cmdp_rl.plumbing.results_folder import CONFIG_NAME, LOCK_NAME, is_complete

#: the files that make a folder a results folder (one of them is enough)
MARKERS = ("summary.md", "results.csv")
#: results-table rows shown in the page (the CSV holds them all)
MAX_ROWS = 200
#: figures larger than this are linked by name instead of embedded
MAX_FIGURE_BYTES = 8 * 2**20

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 72em; padding: 0 1em; color: #222; }
h1, h2, h3 { font-weight: 600; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th { background: #f3f3f3; }
td:first-child, th:first-child { text-align: left; }
figure { display: inline-block; margin: 1em; vertical-align: top; }
figure img { max-width: 34em; border: 1px solid #ddd; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; }
.note { color: #666; font-size: 0.9em; }
"""

_SCRIPT = """
window.addEventListener("load", function () {
  var imgs = Array.prototype.slice.call(document.images);
  var ok = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;
  document.body.setAttribute("data-figures-loaded", ok + "/" + imgs.length);
});
"""


def _inline(text: str) -> str:
    """Inline Markdown of a summary line: code spans, bold, links' text (escaped)."""
    out = html.escape(text)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    out = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", out)
    return re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", out)


def markdown_to_html(text: str) -> str:
    """The Markdown subset the library's summaries use: headings, paragraphs, bullet lists, pipe
    tables (the row of dashes after the header) and fenced code."""
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            out.append("<pre>" + html.escape("\n".join(lines[i + 1 : j])) + "</pre>")
            i = j + 1
            continue
        heading = re.match(r"^(#{1,4}) (.*)$", line)
        if heading:
            level = len(heading.group(1))
            out.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
            i += 1
            continue
        if line.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                rows.append([c.strip() for c in lines[i].strip().strip("|").split("|")])
                i += 1
            body = [r for r in rows if not all(re.fullmatch(r":?-+:?", c or "-") for c in r)]
            if body:
                head = "".join(f"<th>{_inline(c)}</th>" for c in body[0])
                cells = "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>" for r in body[1:])
                out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{cells}</tbody></table>")
            continue
        if line.startswith(("* ", "- ")):
            items = []
            while i < len(lines) and lines[i].startswith(("* ", "- ", "  ")):
                if lines[i].startswith(("* ", "- ")):
                    items.append(lines[i][2:])
                else:
                    items[-1] += " " + lines[i].strip()
                i += 1
            out.append("<ul>" + "".join(f"<li>{_inline(t)}</li>" for t in items) + "</ul>")
            continue
        if line.strip():
            para = [line]
            i += 1
            while i < len(lines) and lines[i].strip() and not lines[i].startswith(("#", "|", "```", "* ", "- ")):
                para.append(lines[i])
                i += 1
            out.append("<p>" + _inline(" ".join(para)) + "</p>")
            continue
        i += 1
    return "\n".join(out)


def _text(path: Path) -> str:
    """A results folder's text file, or a one-line error naming it (and the line of a byte that is not UTF-8)."""
    return utf8_text(path.read_bytes(), f"DIR: {path}")


def _csv_table(path: Path) -> str:
    reader = csv.reader(io.StringIO(_text(path), newline=""))
    try:
        rows = list(reader)
    except csv.Error as exc:
        raise CMDPInputError(f"DIR: {path}: line {reader.line_num}: not valid CSV ({detail(exc)})") from None
    if not rows:
        return ""
    head, body = rows[0], rows[1:]
    shown = body[:MAX_ROWS]
    note = (
        f'<p class="note">The first {len(shown):,} of {len(body):,} rows; all of them are in {path.name}.</p>'
        if len(body) > len(shown)
        else f'<p class="note">{len(body):,} rows ({path.name}).</p>'
    )
    cells = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in shown)
    header = "".join(f"<th>{html.escape(c)}</th>" for c in head)
    return f"<table><thead><tr>{header}</tr></thead><tbody>{cells}</tbody></table>{note}"


def _figures(folder: Path) -> list[Path]:
    """The PNG figures of ``folder``: its own and those of ``figures/`` (not the per-run files)."""
    found = sorted(folder.glob("*.png")) + sorted((folder / "figures").glob("*.png"))
    return [p for p in found if p.is_file()]


def render_report(folder: str | os.PathLike[str]) -> str:
    """The report page of a results folder (module docstring), as HTML text.

    Raises:
        CMDPInputError: ``folder`` is not a folder, or holds none of ``summary.md``,
            ``results.csv`` (not a results folder of ``compare``, ``reproduce``, ``study`` or ``pg``),
            or one of its text files is not UTF-8 text or not valid CSV (named, with the line).
    """
    root = Path(folder)
    if not root.is_dir():
        raise CMDPInputError(f"DIR: {root} is not a folder")
    if not any((root / name).is_file() for name in MARKERS):
        raise CMDPInputError(
            f"DIR: {root} holds neither summary.md nor results.csv: not a results folder of compare, reproduce, "
            "study or pg"
        )
    parts = [f"<h1>Results: {html.escape(root.resolve().name)}</h1>"]
    resumable = (root / CONFIG_NAME).is_file() and (root / "runs").is_dir()
    if (root / LOCK_NAME).exists() or (resumable and not is_complete(root)):
        # a sweep's folder without its COMPLETE marker: its run was interrupted or is running
        parts.append(
            '<p class="note"><strong>Incomplete:</strong> this folder has no COMPLETE marker (its run was '
            "interrupted or is still running); rerun the same command to finish it.</p>"
        )
    summary = root / "summary.md"
    if summary.is_file():
        body = markdown_to_html(_text(summary))
        # the page has its own title: the summary's first heading becomes a section heading
        parts.append(body.replace("<h1>", "<h2>", 1).replace("</h1>", "</h2>", 1))
    figures = _figures(root)
    if figures:
        parts.append("<h2>Figures</h2>")
        for fig in figures:
            name = html.escape(str(fig.relative_to(root)))
            if fig.stat().st_size > MAX_FIGURE_BYTES:
                parts.append(f'<p class="note">{name}: too large to embed; see the file.</p>')
                continue
            data = base64.b64encode(fig.read_bytes()).decode("ascii")
            parts.append(
                f'<figure><img alt="{name}" src="data:image/png;base64,{data}"><figcaption>{name}</figcaption></figure>'
            )
    results = root / "results.csv"
    if results.is_file():
        parts += ["<h2>Results table</h2>", _csv_table(results)]
    config = root / "config.toml"
    if config.is_file():
        parts += ["<h2>Configuration</h2>", f"<pre>{html.escape(_text(config))}</pre>"]
    buf = io.StringIO()
    buf.write('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">')
    buf.write(f"<title>cmdp-rl results: {html.escape(root.resolve().name)}</title>")
    buf.write(f"<style>{_STYLE}</style><script>{_SCRIPT}</script></head>\n<body>\n")
    buf.write("\n".join(parts))
    buf.write("\n</body></html>\n")
    return buf.getvalue()


def write_report(folder: str | os.PathLike[str]) -> Path:
    """Write ``folder/report.html`` (atomically) and return its path (see
    [`render_report`][cmdp_rl.experiments.report.render_report])."""
    text = render_report(folder)
    path = Path(folder) / "report.html"
    with atomic_path(path) as tmp:
        tmp.write_text(text)
    return path


__all__ = ["MARKERS", "markdown_to_html", "render_report", "write_report"]
