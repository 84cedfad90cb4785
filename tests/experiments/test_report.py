"""``cmdp-rl report DIR``: one self-contained HTML page per results folder, checked in a real
headless browser (Debian's chromium, which .ci/run installs; skipped where it is absent)."""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from faultkit import run_main

from cmdp_rl.experiments.report import markdown_to_html


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``cmdp-rl ARGS`` in this process (``faultkit.run_main``), in ``cwd``."""
    return run_main(*args, cwd=cwd)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.imgs: list[str] = []
        self.tables = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            self.imgs.append(dict(attrs).get("src") or "")
        self.tables += tag == "table"


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("results")
    assert (
        _cli("pg", "ding-random", "--algos", "npg-pd,crpo", "--iterations", "20", "--out", "pg", cwd=root).returncode
        == 0
    )
    # one run per cell: the same figures and tables as more runs draw
    proc = _cli("reproduce", "--quick", "--runs", "1", "--out", "paper", "--no-progress", cwd=root)
    assert proc.returncode == 0, proc.stderr
    return {"pg": root / "pg", "reproduce": root / "paper"}


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["pg", "reproduce"])
def test_report_embeds_every_figure_and_table(folders: dict[str, Path], kind: str) -> None:
    folder = folders[kind]
    proc = _cli("report", str(folder), "--force", cwd=folder)
    assert proc.returncode == 0, proc.stderr
    page = (folder / "report.html").read_text()
    tags = _Tags()
    tags.feed(page)
    pngs = sorted(folder.glob("*.png")) + sorted((folder / "figures").glob("*.png"))
    assert pngs and len(tags.imgs) == len(pngs)
    assert all(src.startswith("data:image/png;base64,") for src in tags.imgs)  # self-contained
    assert tags.tables >= 1 and 'src="http' not in page and 'href="http' not in page


@pytest.mark.slow
def test_report_refusals_write_nothing(folders: dict[str, Path], tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    for argv in (["report", str(empty)], ["report", str(tmp_path / "missing")]):
        proc = _cli(*argv, cwd=tmp_path)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert list(empty.iterdir()) == []
    folder = folders["pg"]
    assert _cli("report", str(folder), "--force", cwd=tmp_path).returncode == 0
    before = (folder / "report.html").read_bytes()
    proc = _cli("report", str(folder), cwd=tmp_path)
    assert proc.returncode == 2 and "--force" in proc.stderr
    assert (folder / "report.html").read_bytes() == before


def test_summary_tables_become_html_tables() -> None:
    text = "# Title\n\nSome `code` and **bold**.\n\n| a | b |\n|---|--:|\n| 1 | 2 |\n\n* one\n* two\n"
    out = markdown_to_html(text)
    assert "<h1>Title</h1>" in out and "<code>code</code>" in out and "<strong>bold</strong>" in out
    assert "<th>a</th>" in out and "<td>2</td>" in out and "---" not in out and out.count("<li>") == 2


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["pg", "reproduce"])
def test_report_loads_in_a_headless_browser(folders: dict[str, Path], kind: str, tmp_path: Path) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("no chromium on this machine: the headless-browser check of the report is skipped")
    folder = folders[kind]
    assert _cli("report", str(folder), "--force", cwd=tmp_path).returncode == 0
    proc = subprocess.run(
        [
            browser,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=10000",
            "--dump-dom",
            (folder / "report.html").as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    loaded = re.search(r'data-figures-loaded="(\d+)/(\d+)"', proc.stdout)
    assert loaded, proc.stderr[-2000:]
    pngs = len(list(folder.glob("*.png"))) + len(list((folder / "figures").glob("*.png")))
    assert loaded.group(1) == loaded.group(2) == str(pngs)  # every figure decoded and shown
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    assert console == [], console  # the page logged nothing: no script error, no failed resource


def test_an_incomplete_sweep_folder_says_so(tmp_path: Path) -> None:
    """A sweep's folder without its COMPLETE marker (interrupted or running) is reported as
    incomplete; with the marker, or a folder of another kind, it is not."""
    from cmdp_rl.experiments.report import render_report

    (tmp_path / "runs").mkdir()
    (tmp_path / "config.toml").write_text("# cmdp-rl compare configuration\nruns = 1\n")
    (tmp_path / "summary.md").write_text("# cmdp-rl compare: 1a\n\nsome text\n")
    assert "Incomplete:" in render_report(tmp_path)
    (tmp_path / "COMPLETE").write_text("{}\n")
    assert "Incomplete:" not in render_report(tmp_path)
