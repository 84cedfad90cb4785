"""Round 3, class 5: outputs and inputs that are not regular files.

* An existing output that is not a regular file (a character device, a FIFO, a socket, a
  folder) is never replaced, even with ``--force``: exit 2, one line naming the option, and the
  node is still what it was. ``/dev/null`` (here a link to it, so that a regression could only
  replace the link) is written to directly.
* An output name ending in ``/`` is refused naming the option (never taken for the name
  without the slash).
* An input that is a FIFO, a device, ``/dev/stdin`` or a folder gets a message that says what it
  is, not "no such file", and the command does not wait on it.
* The library's atomic writers follow the same rule.
"""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from faultkit import EXIT_OK, assert_one_line_refusal, cases, cli

CLASS = "Round 3: 5. Outputs and inputs that are not regular files"

ROOT_USER = hasattr(os, "geteuid") and os.geteuid() == 0


def _node(folder: Path, kind: str) -> Path:
    """A non-regular file of ``kind`` in ``folder``: ``chr`` (a copy of /dev/null's device
    numbers, made with mknod: needs root), ``fifo``, ``sock``, ``dir``."""
    path = folder / f"node-{kind}"
    if kind == "chr":
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "sock":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(path))
        s.close()
    else:
        path.mkdir()
    return path


KINDS = ("fifo", "sock", "dir", *(("chr",) if ROOT_USER else ()))
#: what the refusal says each kind is
SAYS = {"chr": "character device", "fifo": "FIFO", "sock": "socket", "dir": "folder"}

#: (argv with OUT for the output, the option the refusal names): every option naming an output file
OUTPUTS: list[tuple[list[str], str]] = [
    (["export", "1a", "OUT", "--force"], "path"),
    (["learn", "1a", "--algo", "gmbl", "--samples-per-pair", "2", "--policy-out", "OUT", "--force"], "policy-out"),
    (["learn", "1a", "--algo", "gmbl", "--samples-per-pair", "2", "--counts-out", "OUT", "--force"], "counts-out"),
    (["import-gym", "FrozenLake-v1", "--horizon", "3", "--out", "OUT", "--force"], "out"),
    (
        ["learn", "--env", "cmdp_rl/1a-v0", "--horizon", "3", "--c-bar", "1", "--episodes", "2", "--figure", "OUT"],
        "figure",
    ),
    (
        ["learn", "--env", "cmdp_rl/1a-v0", "--horizon", "3", "--c-bar", "1", "--episodes", "2", "--run-log", "OUT"],
        "run-log",
    ),
]


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    yield tmp_path


def _with(argv: list[str], path: str) -> list[str]:
    return [path if a == "OUT" else a for a in argv]


def _cases() -> list[tuple[list[str], str, str]]:
    return [(argv, option, kind) for argv, option in OUTPUTS for kind in (*KINDS, "slash")]


@pytest.mark.parametrize("index", range(cases(3, len(_cases()))))
def test_a_non_regular_output_is_never_replaced(index: int, work: Path, tally: Callable[[int], None]) -> None:
    step = max(1, len(_cases()) // cases(3, len(_cases())))
    argv, option, kind = _cases()[(index * step) % len(_cases())]
    if kind == "slash":
        target = "newdir/"
        proc = cli(*_with(argv, target), cwd=work, timeout=120)
        line = assert_one_line_refusal(proc)
        assert option in line and "ends in '/'" in line, line
        assert not (work / "newdir").exists()
    else:
        node = _node(work, kind)
        before = os.lstat(node)
        proc = cli(*_with(argv, str(node)), cwd=work, timeout=120)
        line = assert_one_line_refusal(proc)
        assert option in line and SAYS[kind] in line, line
        after = os.lstat(node)
        assert stat.S_IFMT(after.st_mode) == stat.S_IFMT(before.st_mode) and after.st_ino == before.st_ino
    assert not [p for p in work.iterdir() if p.name.startswith(".tmp-")]
    tally(1)


def test_dev_null_is_written_to_directly(work: Path, tally: Callable[[int], None]) -> None:
    """An output that is (a link to) /dev/null: the command succeeds and the link is untouched."""
    link = work / "discard.npz"
    link.symlink_to(os.devnull)
    proc = cli("export", "1a", str(link), cwd=work, timeout=120)
    assert proc.returncode == EXIT_OK, proc.stderr
    assert link.is_symlink() and os.readlink(link) == os.devnull
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
    assert not [p for p in work.iterdir() if p.name.startswith(".tmp-")]
    tally(1)


#: (argv with IN for the input, the label the refusal starts with)
INPUTS: list[tuple[list[str], str]] = [
    (["solve", "IN"], "model file"),
    (["certify", "1a", "--policy", "IN", "--counts", "c.npy"], "policy"),
    (["certify", "1a", "--policy", "p.npy", "--counts", "IN"], "counts"),
    (["certify", "1a", "--policy", "p.npy", "--log", "IN"], "log"),
    (["learn", "1a", "--from-log", "IN"], "from-log"),
    (["reproduce", "--config", "IN", "--out", "o"], "config"),
]
#: kinds of input and what the message says
INPUT_KINDS = {"fifo": "FIFO", "dir": "folder", "stdin": "standard input", "zero": "character device"}


def _input_cases() -> list[tuple[list[str], str, str]]:
    return [(argv, label, kind) for argv, label in INPUTS for kind in INPUT_KINDS]


@pytest.mark.parametrize("index", range(cases(2, len(_input_cases()))))
def test_an_input_that_is_not_a_regular_file_says_what_it_is(
    index: int, work: Path, tally: Callable[[int], None]
) -> None:
    step = max(1, len(_input_cases()) // cases(2, len(_input_cases())))
    argv, label, kind = _input_cases()[(index * step + index) % len(_input_cases())]
    np.save(work / "p.npy", np.full((10, 9, 4), 0.25))
    np.save(work / "c.npy", np.ones((9, 4, 9), dtype=np.int64))
    path = {"stdin": "/dev/stdin", "zero": "/dev/zero"}.get(kind) or str(_node(work, kind))
    # stdin a pipe that nobody writes to: a command that read it would wait (the timeout fails it)
    r, w = os.pipe()
    try:
        import subprocess
        import sys

        proc = subprocess.run(
            [sys.executable, "-m", "cmdp_rl", *[path if a == "IN" else a for a in argv]],
            stdin=r,
            capture_output=True,
            text=True,
            cwd=work,
            timeout=120,
        )
    finally:
        os.close(r)
        os.close(w)
    line = assert_one_line_refusal(proc)
    assert label in line and INPUT_KINDS[kind] in line and "no such file" not in line, line
    tally(1)


def test_the_atomic_writers_never_replace_a_non_regular_file(tmp_path: Path, tally: Callable[[int], None]) -> None:
    from cmdp_rl import scenario_cmdp
    from cmdp_rl.plumbing.atomic import OutputError, write_atomic

    n = 0
    for kind in KINDS:
        node = _node(tmp_path, kind)
        before = os.lstat(node)
        for write in (lambda p: write_atomic(p, "x"), lambda p: scenario_cmdp("1a").save(p)):
            with pytest.raises(OutputError, match="never replaced"):
                write(node)
            assert os.lstat(node).st_ino == before.st_ino
            n += 1
    with pytest.raises(OutputError, match="ends in '/'"):
        write_atomic(str(tmp_path / "newdir") + "/", "x")
    assert not (tmp_path / "newdir").exists()
    link = tmp_path / "null"
    link.symlink_to(os.devnull)
    write_atomic(link, "discarded")
    scenario_cmdp("1a").save(link)
    assert link.is_symlink()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]
    tally(n + 3)
