"""The examples of the README (and of the docs pages that took over its sections) run as written
and print what the page shows.

* A ```python block that prints must be followed by a ```text block holding its exact
  output (numbers compared with a relative tolerance of 1e-6).
* In ```console blocks, every ``$ cmdp-rl ...`` line is run (in a scratch folder with
  ``examples/``, through the console script's entry point ``cmdp_rl.cli.main`` in this
  process, its words split as a POSIX shell splits them: ``shlex.split``, so quotes are
  needed where a shell needs them) and its output compared with the lines shown after it; it must exit 0,
  unless the shown output ends with a line ``[exit N]``. The seconds of a ``time`` line (a
  measured wall time) are the one thing not compared.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import shutil
from importlib.util import find_spec
from pathlib import Path

import pytest
from faultkit import run_main

ROOT = Path(__file__).resolve().parents[2]
#: the README and every docs page (the API pages are generated from docstrings)
PAGES = ("README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md") if "api" not in p.parts))
TEXTS = {page: (ROOT / page).read_text() for page in PAGES}
README = TEXTS["README.md"]
#: a block right after this marker is not run; the reason is reported as the test's skip reason
NOT_RUN = re.compile(r"<!-- example: not run: (.*?) -->\s*$")
#: a block right after this marker runs only where the optional package is installed (else it is
#: reported as not run, naming the package)
NEEDS = re.compile(r"<!-- example: needs (\w+) -->\s*$")
FENCE = re.compile(r"```(python|console|bash)\n(.*?)```\n(?:\n```text\n(.*?)```)?", flags=re.S)


def _blocks(kind: str) -> list[tuple[str, str, str | None, str | None]]:
    """``(page, code, shown output, reason not run)`` of every ``kind`` block of every page."""
    out = []
    for page, text in TEXTS.items():
        for m in FENCE.finditer(text):
            if m.group(1) != kind:
                continue
            before = text[: m.start()].rstrip() + "\n"
            marker, needs = NOT_RUN.search(before), NEEDS.search(before)
            reason = marker.group(1) if marker else None
            if needs and find_spec(needs.group(1)) is None:
                reason = f"needs {needs.group(1)}, which is not installed"
            out.append((page, m.group(2), m.group(3), reason))
    return out


PY_BLOCKS = _blocks("python")
CONSOLE = _blocks("console")
#: the ``cmdp-rl ...`` lines of ```bash blocks: run with a small budget where a flag allows it
#: (``SMALLER``), or reported as not run with the reason (``NOT_RUN_LINES``, matched by prefix)
BASH_LINES = [
    (page, line.split("  #")[0].strip())
    for page, code, _, _ in _blocks("bash")
    for line in code.splitlines()
    if line.strip().startswith("cmdp-rl ")
]
NOT_RUN_LINES = {
    "cmdp-rl reproduce --backend ray": "needs a running Ray cluster",
    "cmdp-rl reproduce --config my.toml": "needs the reader's own configuration file",
    "cmdp-rl study n-constraints --quick": "",
    "cmdp-rl study n-constraints": "the full study is 560 runs (its --quick line is run)",
    "cmdp-rl compare --preset dope": "the DOPE preset is 5 x 20,000 episodes (the compare line above it is run)",
    "cmdp-rl reproduce --quick": "",
    "cmdp-rl reproduce": "the full protocol is make demo (its --quick line is run)",
}
SMALLER = ((r"--episodes \d+", "--episodes 20"), (r"--runs \d+", "--runs 1"))
#: the sweeps (each takes ``--runs``): a line that gives no ``--runs`` runs one run per cell
SWEEPS = re.compile(r"^cmdp-rl (reproduce|compare|study)\b")
NUMBER = re.compile(r"^[-+]?(\d[\d,]*\.?\d*|\.\d+)(e[-+]?\d+)?$", re.I)


def _same_line(got: str, want: str) -> bool:
    g, w = got.split(), want.split()
    if len(g) != len(w):
        return False
    if g[:1] == w[:1] == ["time"] and len(g) > 1:  # a measured wall time: the seconds are not compared
        g, w = g[2:], w[2:]
    for a, b in zip(g, w, strict=True):
        if a == b:
            continue
        a_core, b_core = a.strip("[](),"), b.strip("[](),")
        if a.replace(a_core, "") != b.replace(b_core, "") or not (NUMBER.match(a_core) and NUMBER.match(b_core)):
            return False
        x, y = float(a_core.replace(",", "")), float(b_core.replace(",", ""))
        if abs(x - y) > 1e-6 * max(abs(x), abs(y)) + 1e-9:
            return False
    return True


def assert_same_output(got: str, want: str, where: str) -> None:
    g = [line.rstrip() for line in got.strip("\n").splitlines()]
    w = [line.rstrip() for line in want.strip("\n").splitlines()]
    assert len(g) == len(w), f"{where}: {len(g)} lines printed, the page shows {len(w)}:\n{got}"
    for a, b in zip(g, w, strict=True):
        assert _same_line(a, b), f"{where}: printed\n  {a}\nthe page shows\n  {b}"


def test_line_comparison_itself() -> None:
    assert _same_line("value 0.7500000001 [0.5]", "value 0.75 [0.5]")
    assert not _same_line("value 0.76 [0.5]", "value 0.75 [0.5]")
    assert not _same_line("status optimal", "status infeasible")
    assert _same_line("samples 20,000", "samples 20,000")
    assert _same_line("time 0.2 s (fast: 3 sweeps)", "time 0.01 s (fast: 3 sweeps)")
    assert not _same_line("time 0.2 s (fast: 3 sweeps)", "time 0.2 s (fast: 4 sweeps)")


def test_commands_are_split_as_a_shell_splits_them() -> None:
    """The JSON of an unquoted ``--env-kwargs {"map_name":"4x4"}`` loses its quotes in a shell (as the
    docs' import-gym line once did); quoted, it arrives whole. Every command line of the pages splits."""
    assert shlex.split('x --env-kwargs {"map_name":"4x4"}')[-1] == "{map_name:4x4}"
    assert shlex.split("""x --env-kwargs '{"map_name": "4x4"}'""")[-1] == '{"map_name": "4x4"}'
    for _, block, _, _ in CONSOLE:
        for cmd, _ in _commands(block):
            shlex.split(cmd)  # an unbalanced quote raises
    for _, line in BASH_LINES:
        shlex.split(line)


@pytest.mark.parametrize("index", range(len(PY_BLOCKS)))
def test_python_block_prints_what_the_readme_shows(index: int, tmp_path, monkeypatch) -> None:
    page, code, shown, not_run = PY_BLOCKS[index]
    if not_run:
        pytest.skip(f"{page}: python block not run: {not_run}")
    monkeypatch.chdir(tmp_path)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(code, f"{page} block {index}", "exec"), {"__name__": "__readme__"})
    if shown is None:
        assert buf.getvalue() == "", f"{page} python block {index} prints but shows no output"
    else:
        assert_same_output(buf.getvalue(), shown, f"{page} python block {index}")


def _commands(block: str) -> list[tuple[str, str]]:
    out: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif out:
            out[-1][1].append(line)
    return [(cmd, "\n".join(lines)) for cmd, lines in out]


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(CONSOLE)))
def test_console_block_prints_what_the_readme_shows(index: int, tmp_path) -> None:
    page, block, _, not_run = CONSOLE[index]
    if not_run:
        pytest.skip(f"{page}: console block not run: {not_run}")
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    for cmd, shown in _commands(block):
        argv = shlex.split(cmd)  # as a shell reads the line: an unquoted {"a":"b"} loses its quotes
        assert argv[0] == "cmdp-rl", cmd
        proc = run_main(*argv[1:], cwd=tmp_path)  # the console script's entry point, in this process
        want_code = 0
        exit_line = re.search(r"\n?\[exit (\d+)\]\s*$", shown)
        if exit_line:
            want_code, shown = int(exit_line.group(1)), shown[: exit_line.start()]
        assert proc.returncode == want_code, (cmd, proc.returncode, proc.stderr)
        assert_same_output(proc.stdout, shown, f"{page} console block {index}: {cmd}")


def _not_run_reason(line: str) -> str | None:
    for prefix, reason in sorted(NOT_RUN_LINES.items(), key=lambda kv: -len(kv[0])):
        if line == prefix or line.startswith(prefix + " "):
            return reason or None
    return None


def _smaller(line: str) -> str:
    """``line`` with the small budgets of ``SMALLER`` (and ``--runs 1`` added to a sweep without it)."""
    for pattern, small in SMALLER:
        line = re.sub(pattern, small, line)
    if SWEEPS.match(line) and "--runs" not in shlex.split(line):
        line += " --runs 1"
    return line


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(BASH_LINES)))
def test_bash_cmdp_rl_lines_run(index: int, tmp_path) -> None:
    """Every ``cmdp-rl ...`` line of a bash block exits 0 (with a small budget where a flag allows)."""
    page, line = BASH_LINES[index]
    reason = _not_run_reason(line)
    if reason:
        pytest.skip(f"{page}: not run: {line!r}: {reason}")
    line = _smaller(line)
    first = next(i for i, (_, other) in enumerate(BASH_LINES) if _smaller(other) == line)
    if first < index:  # the same command in the same scratch setup: run once
        pytest.skip(f"{page}: not run again: {line!r}: the same line as in {BASH_LINES[first][0]}, which is run")
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    proc = run_main(*shlex.split(line)[1:], cwd=tmp_path)
    assert proc.returncode == 0, (page, line, proc.stderr)
