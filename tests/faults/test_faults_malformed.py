"""Class 6 of the hardening issue: malformed files.

Real outputs of ``cmdp-rl`` are produced first (a dense model from ``export``, a sparse one from
``CMDP.save``, a policy and counts from ``learn``, a log from ``write_log``, a transition table
from ``to_table``, a run log from ``learn --env --run-log``, a ``compare`` folder with its run
files), then cut at random offsets, garbled byte by byte, or rewritten with missing, renamed or
inconsistent keys, and fed back to the command (or function) that reads them. Every case is
decided exactly: a refusal is exit 2 with one line on stderr naming the file (and the line or
key where there is one) and nothing written; a file that is still valid after the damage (a log
cut at a line boundary, a zip field that is not read) gives the documented result of the
undamaged part. The one exception is resume: an incomplete last line of a run log is dropped with
a note and the run finishes as if uninterrupted.

Subprocesses (``faultkit.cli``) drive the installed entry point for a sample of each kind of
damage; the many structured cases run through the same entry point in-process
(``cmdp_rl.cli.main``) or through the public readers, and Hypothesis throws arbitrary bytes,
text and JSON at the readers, which may only answer with ``CMDPInputError``.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import struct
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from faultkit import (
    EXIT_BAD_INPUT,
    EXIT_INFEASIBLE,
    EXIT_OK,
    assert_one_line_refusal,
    cases,
    cli,
    run_main,
    tree,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cmdp_rl
from cmdp_rl import CMDP
from cmdp_rl.experiments.compare import load_compare_config
from cmdp_rl.experiments.config import load_config
from cmdp_rl.experiments.store import CorruptRunFile, load_record
from cmdp_rl.learners import EpisodicEnv
from cmdp_rl.model.transition_logs import read_log, write_log
from cmdp_rl.plumbing.errors import CMDPInputError

CLASS = "6. Malformed files"

#: the run-log command of these tests (scenario 1a as a black box, 5 episodes of 10 steps)
RUN = (
    "learn",
    "--env",
    "cmdp_rl/1a-v0",
    "--horizon",
    "10",
    "--c-bar",
    "2",
    "--episodes",
    "5",
    "--json",
    "--deploy",
    "last",
)
#: the note of a returned policy the run's data do not certify (RUN's is the last one played)
NOT_CERTIFIED = "note: the returned policy is not certified safe"
#: the compare folder's command (one short run of one learner)
COMPARE = ("compare", "1a", "--algos", "plugin", "--episodes", "20", "--runs", "1", "--jobs", "1")
COMPARE += ("--checkpoints", "2", "--no-progress")
#: the shape the run log of ``RUN`` must fit (1a: 9 states, 4 actions, 1 constraint)
SHAPE = {"S": 9, "A": 4, "N": 1, "H": 10, "K": 5, "s0": None}
#: a note of the first run only: the kernels were not compiled yet (the fixture compiles them)
COMPILING = "cmdp-rl: compiling the numerical kernels"
NL = b"\n"
HYPOTHESIS = settings(
    max_examples=cases(30, 300), deadline=None, suppress_health_check=list(HealthCheck), derandomize=True
)


# --------------------------------------------------------------------------- real outputs


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Real outputs of the library and the CLI, produced once (the numerical kernels compiled on the way)."""
    d = tmp_path_factory.mktemp("real")
    out: dict[str, Any] = {"dir": d}
    cmdp_rl.make("garnet:S=30,seed=1").to_sparse().save(d / "s.npz")
    model = cmdp_rl.make("1a")
    env = EpisodicEnv(model, np.random.default_rng(7))
    uniform = np.full((model.H, model.S, model.A), 1.0 / model.A)
    rolls = [env.rollout(uniform) for _ in range(20)]
    write_log(d / "log.csv", *(np.array([r[i] for r in rolls]) for i in range(3)))
    model.to_table(d / "table.csv")
    compared = subprocess.Popen(  # the sweep in its own process meanwhile (its run files and config.toml)
        [sys.executable, "-m", "cmdp_rl", *COMPARE, "--out", "cmp"], cwd=d, stderr=subprocess.PIPE, text=True
    )
    with _cwd(d):  # the other commands through the entry point in-process (the same code, no interpreter start)
        assert _main("export", "1a", "m.npz")[0] == EXIT_OK
        learn = ("learn", "1a", "--episodes", "5", "--policy-out", "policy.npy", "--counts-out", "counts.npz")
        code, _, err = _main(*learn)
        assert code == EXIT_OK, err
        code, _, err = _main("learn", "1a", "--from-log", "log.csv", "--counts-out", "counts.npy", "--json")
        assert code in (EXIT_OK, EXIT_INFEASIBLE), err
        code, stdout, err = _main(*RUN, "--run-log", "run.jsonl")
        assert code == EXIT_OK, err
        out["run_json"] = _without_run_log(stdout)
    assert compared.wait(timeout=300) == EXIT_OK, compared.stderr.read() if compared.stderr else ""
    from cmdp_rl.cli.common import _kernels_cached

    assert _kernels_cached(), "the kernels should be compiled by now (no first-run note in the cases below)"
    return out


@contextmanager
def _cwd(path: Path) -> Iterator[None]:
    """Run in ``path`` (the entry point's relative paths), then come back."""
    before = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def _without_run_log(stdout: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(stdout)
    data.pop("run_log", None)
    return data


@pytest.fixture
def case_dir(tmp_path: Path, real: dict[str, Any]) -> Callable[..., Path]:
    """``case_dir(name, data, support=False)``: a fresh folder holding ``name`` with ``data`` (and,
    with ``support``, copies of the real model, policy and counts a command needs beside it);
    returns the path of ``name``."""
    counter = iter(range(10**9))

    def make(name: str, data: bytes, support: bool = False) -> Path:
        d = tmp_path / f"case{next(counter)}"
        d.mkdir()
        for f in ("m.npz", "policy.npy", "counts.npz") if support else ():
            shutil.copy(real["dir"] / f, d / f)
        (d / name).write_bytes(data)
        return d / name

    return make


def _cli_many(calls: list[tuple[Path, tuple[str, ...]]]) -> list[subprocess.CompletedProcess[str]]:
    """Run ``cmdp-rl ARGV`` in each folder, two at a time (each case has its own folder)."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(lambda c: cli(*c[1], cwd=c[0]), calls))


def _main(*argv: str) -> tuple[int, str, str]:
    """The entry point in-process (``faultkit.run_main``): ``(exit code, stdout, stderr)``."""
    done = run_main(*argv)
    return done.returncode, done.stdout, done.stderr


def _refusal(code: int, stderr: str, name: str, *needles: str) -> str:
    """The documented refusal: exit 2, one line, no traceback, ``name`` and every needle in it."""
    proc = subprocess.CompletedProcess([], code, "", stderr)
    line = assert_one_line_refusal(proc, EXIT_BAD_INPUT)
    assert name in line, line
    for needle in needles:
        assert needle in line, (needle, line)
    return line


def _offsets(rng: np.random.Generator, size: int, n: int) -> list[int]:
    """``n`` distinct cut offsets in ``[0, size)`` (all of them when there are fewer)."""
    return sorted(int(k) for k in rng.choice(size, size=min(n, size), replace=False))


def _flip(rng: np.random.Generator, raw: bytes) -> bytes:
    """``raw`` with one byte replaced by a different random byte."""
    b = bytearray(raw)
    j = int(rng.integers(len(b)))
    b[j] = (b[j] + int(rng.integers(1, 256))) % 256
    return bytes(b)


# --------------------------------------------------------------------------- model files


@pytest.mark.parametrize("name", ["m.npz", "s.npz"])
def test_cut_model_files_are_refused_naming_the_file(
    real: dict[str, Any], case_dir: Any, tally: Any, name: str
) -> None:
    """A model file cut anywhere loses the zip directory at its end: always exit 2 naming the file."""
    raw = (real["dir"] / name).read_bytes()
    rng = np.random.default_rng(61 if name == "m.npz" else 62)
    api = _offsets(rng, len(raw), cases(30, 400))
    for k in api:  # the reader itself, at many offsets
        path = case_dir(name, raw[:k])
        with pytest.raises(CMDPInputError, match=name.replace(".", r"\.")) as err:
            CMDP.load(path)
        assert "\n" not in str(err.value)
    chosen = [int(k) for k in rng.choice(api, size=cases(1, 8), replace=False)]
    paths = [case_dir(name, raw[:k]) for k in chosen]
    before = [tree(p.parent) for p in paths]
    for p, snap, proc in zip(paths, before, _cli_many([(p.parent, ("solve", p.name)) for p in paths]), strict=True):
        _refusal(proc.returncode, proc.stderr, name)
        assert tree(p.parent) == snap  # nothing written
    tally(len(api) + len(chosen))


@pytest.mark.parametrize("name", ["m.npz", "s.npz"])
def test_garbled_model_files_are_refused_or_are_the_same_model(
    real: dict[str, Any], case_dir: Any, tally: Any, name: str
) -> None:
    """One byte changed: the reader refuses the file (naming it) or, when the byte is one the zip
    reader does not use, loads the very same model, and ``solve`` prints the same answer."""
    raw = (real["dir"] / name).read_bytes()
    good = CMDP.load(real["dir"] / name)
    rng = np.random.default_rng(63 if name == "m.npz" else 64)
    outcomes: list[str | None] = []
    flips = [_flip(rng, raw) for _ in range(cases(100, 1500))]
    paths = [case_dir(name, data) for data in flips]  # messages name the path: the CLI below reads the same
    for path in paths:
        try:
            back = CMDP.load(path)
        except CMDPInputError as exc:
            assert name in str(exc) and "\n" not in str(exc)
            outcomes.append(str(exc))
            continue
        assert back.S == good.S and np.array_equal(back.K.toarray(), good.K.toarray())
        assert np.array_equal(back.r, good.r) and np.array_equal(back.c, good.c) and back.H == good.H
        outcomes.append(None)
    assert any(o is not None for o in outcomes)
    # the CLI agrees with the reader, case by case: a refusal with the reader's message, or the same answer
    picked = [int(i) for i in rng.choice(len(flips), size=cases(2, 12), replace=False)]
    procs = _cli_many([(paths[i].parent, ("solve", str(paths[i]), "--json")) for i in picked])
    for i, proc in zip(picked, procs, strict=True):
        message = outcomes[i]
        if message is None:  # the same model: the same answer as the undamaged file's
            assert proc.returncode == EXIT_OK and proc.stdout == _main("solve", str(real["dir"] / name), "--json")[1]
        else:
            _refusal(proc.returncode, proc.stderr, name, message)
    tally(len(flips) + len(picked))


def _zip_field(raw: bytes, member: str, local: int, central: int, fmt: str, value: int) -> bytes:
    """``raw`` (a zip) with a header field of ``member`` set to ``value`` in its local and central headers."""
    b = bytearray(raw)
    name = member.encode()
    for sig, off in ((b"PK\x03\x04", local), (b"PK\x01\x02", central)):
        start = 0
        while True:
            at = raw.find(sig, start)
            assert at >= 0, (member, sig)
            name_at = at + (30 if sig == b"PK\x03\x04" else 46)
            if raw[name_at : name_at + len(name)] == name:
                struct.pack_into(fmt, b, at + off, value)
                break
            start = at + 4
    return bytes(b)


def _npz(arrays: dict[str, Any]) -> bytes:
    """The bytes of ``np.savez(**arrays)``."""
    out = io.BytesIO()
    np.savez(out, **arrays)
    return out.getvalue()


def _keys(path: Path) -> dict[str, Any]:
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def _sparse_cases(s: dict[str, Any], d: dict[str, Any], raw_s: bytes) -> list[tuple[str, bytes, str]]:
    """``(case, file bytes, needle)``: each damage to a sparse (``s``) or dense (``d``) model file
    and the words of its refusal."""
    S, SA = int(s["P_shape"][1]), int(s["P_shape"][0])
    A = SA // S
    row0 = int(s["P_indptr"][1])  # entries of row 0: 0 .. row0-1 (garnet rows hold several)
    assert row0 >= 2

    def sparse(**changes: Any) -> bytes:
        return _npz({k: v for k, v in {**s, **changes}.items() if v is not None})

    def dense(**changes: Any) -> bytes:
        return _npz({k: v for k, v in {**d, **changes}.items() if v is not None})

    nan, neg, half = (s["P_data"].copy() for _ in range(3))
    nan[3] = np.nan
    neg[0], neg[1] = -neg[0], neg[1] + 2 * neg[0]  # the row still sums to 1
    half[0] *= 0.5
    dup_idx = s["P_indices"].copy()
    dup_idx[1] = dup_idx[0]
    ptr_down = s["P_indptr"].copy()
    ptr_down[2] = ptr_down[1] - 1
    other = _kernel_keys(cmdp_rl.make("garnet:S=20,seed=2").to_sparse())
    P_nan = d["P"].copy()
    P_nan[1, 2, 3] = np.nan
    P_off = d["P"].copy()
    P_off[0, 0] *= 0.9
    renamed = {("P_index" if k == "P_indices" else k): v for k, v in s.items()}
    return [
        ("sparse: NaN entry", sparse(P_data=nan), "must be finite"),
        ("sparse: negative entry", sparse(P_data=neg), "must be non-negative"),
        ("sparse: duplicate entry", sparse(P_indices=dup_idx), "duplicate entry"),
        ("sparse: row not summing to 1", sparse(P_data=half), "must sum to 1"),
        ("sparse: P_shape of three numbers", sparse(P_shape=np.array([SA, S, 1])), "P_shape"),
        ("sparse: P_shape with infinity", sparse(P_shape=np.array([np.inf, S])), "P_shape"),
        ("sparse: P_shape not (S*A, S)", sparse(P_shape=np.array([SA, S + 1])), "positive multiple"),
        ("sparse: P_shape, one row more", sparse(P_shape=np.array([SA + 1, S])), "P_indptr"),
        ("sparse: P_data 2-d", sparse(P_data=s["P_data"].reshape(-1, 1)), "P_data"),
        ("sparse: P_data as text", sparse(P_data=s["P_data"].astype(str)), "'P_data'"),
        ("sparse: P_indices as floats", sparse(P_indices=s["P_indices"].astype(float)), "P_indices"),
        ("sparse: P_indices out of range", sparse(P_indices=s["P_indices"] + S), "P_indices"),
        ("sparse: P_indptr decreasing", sparse(P_indptr=ptr_down), "P_indptr"),
        ("sparse: P_indptr short", sparse(P_indptr=s["P_indptr"][:-1]), "P_indptr"),
        (
            "sparse: P_indptr of uint64 beyond int64",
            sparse(P_indptr=s["P_indptr"].astype(np.uint64) + 2**63),
            "P_indptr",
        ),
        ("sparse: missing P_indptr", sparse(P_indptr=None), "missing key(s) ['P_indptr']"),
        ("sparse: P_indices renamed", _npz(renamed), "missing key(s) ['P_indices']"),
        ("sparse: both P and P_*", sparse(P=np.zeros((S, A, S))), "holds both"),
        ("sparse: kernel of another model", sparse(**{k: other[k] for k in other if k.startswith("P_")}), "r: "),
        ("sparse: r of another shape", sparse(r=s["r"][:-1]), "r: "),
        ("sparse: meta not JSON", sparse(meta=np.str_("{oops")), "'meta'"),
        ("sparse: meta not an object", sparse(meta=np.str_("[1, 2]")), "meta"),
        ("sparse: unknown compression", _zip_field(raw_s, "P_data.npy", 8, 10, "<H", 99), "'P_data'"),
        ("sparse: member flagged encrypted", _zip_field(raw_s, "r.npy", 6, 8, "<H", 1), "'r'"),
        ("dense: NaN in P", dense(P=P_nan), "must be finite"),
        ("dense: row not summing to 1", dense(P=P_off), "must sum to 1"),
        ("dense: P of another shape", dense(P=d["P"][:, :, :-1]), "P: "),
        ("dense: missing r", dense(r=None), "missing key(s) ['r']"),
        ("dense: c_bar as text", dense(c_bar=np.array(["2"])), "'c_bar'"),
        ("dense: H and gamma", dense(gamma=np.float64(0.9)), "both 'H' and 'gamma'"),
        ("dense: s0 out of range", dense(s0=np.int64(99)), "s0"),
    ]


def _kernel_keys(model: CMDP) -> dict[str, Any]:
    """The ``P_*`` keys ``save`` writes for a sparse model."""
    K = model.K
    return {"P_data": K.data, "P_indices": K.indices, "P_indptr": K.indptr, "P_shape": np.array(K.shape)}


def test_damaged_sparse_and_dense_keys_are_refused_naming_the_file_and_key(
    real: dict[str, Any], case_dir: Any, tally: Any
) -> None:
    """NaN, negative or duplicate entries, rows not summing to one, wrong shapes, missing, renamed
    or inconsistent ``P_*`` keys, keys of the wrong type, an unknown compression method, an
    'encrypted' member: exit 2, one line naming the file and the key or entry."""
    found = _sparse_cases(
        _keys(real["dir"] / "s.npz"), _keys(real["dir"] / "m.npz"), (real["dir"] / "s.npz").read_bytes()
    )
    for case, data, needle in found:  # the entry point in-process: every case
        path = case_dir("bad.npz", data)
        before = tree(path.parent)
        code, _, err = _main("solve", str(path))
        _refusal(code, err, "bad.npz", needle)
        assert tree(path.parent) == before, case
    rng = np.random.default_rng(65)
    picked = [found[int(i)] for i in rng.choice(len(found), size=cases(2, len(found)), replace=False)]
    paths = [case_dir("bad.npz", data) for _, data, _ in picked]
    procs = _cli_many([(p.parent, ("solve", "bad.npz")) for p in paths])
    for (case, _, needle), proc in zip(picked, procs, strict=True):
        assert proc.returncode == EXIT_BAD_INPUT, case
        _refusal(proc.returncode, proc.stderr, "bad.npz", needle)
    tally(len(found) + len(picked))


# --------------------------------------------------------------------------- logs and tables


def _log_expectation(raw: bytes, k: int) -> tuple[str, int | None]:
    """What ``read_log`` must do with the log cut to ``raw[:k]``: ``("rows", n)`` (a valid log of its
    first ``n`` rows) or ``("refused", line)`` (``line``: the line the message names, if any).

    The real log (scenario 1a: 9 states, 4 actions, H = 10) has one-digit states, actions and
    steps, so a line cut before its end always lacks a field."""
    lines = raw[:k].decode().split("\n")
    whole = raw.decode().split("\n")
    complete, partial = lines[:-1], lines[-1]
    if not complete:  # empty, or inside the header
        return "refused", None
    rows = len(complete) - 1
    if partial:
        if partial != whole[len(complete)]:
            return "refused", len(complete) + 1
        rows += 1  # a whole line, only its newline cut
    return ("rows", rows) if rows else ("refused", None)


def test_cut_logs_are_refused_at_the_cut_line_or_read_up_to_it(real: dict[str, Any], case_dir: Any, tally: Any) -> None:
    """A log cut mid-line is refused naming the file and that line; cut at a line boundary it is a
    valid, shorter log (``certify --log`` certifies its rows: exit 0 or 1)."""
    raw = (real["dir"] / "log.csv").read_bytes()
    model = cmdp_rl.make("1a")
    rng = np.random.default_rng(66)
    cuts = _offsets(rng, len(raw), cases(60, 600))
    for k in cuts:
        path = case_dir("log.csv", raw[:k])
        kind, line = _log_expectation(raw, k)
        if kind == "rows":
            assert int(read_log(path, model.S, model.A, model.H).sum()) == line
            continue
        with pytest.raises(CMDPInputError) as err:
            read_log(path, model.S, model.A, model.H)
        assert "log.csv" in str(err.value) and "\n" not in str(err.value)
        if line is not None:
            assert f"line {line}" in str(err.value), (k, str(err.value))
    mid = [k for k in cuts if _log_expectation(raw, k)[1] is not None]
    chosen = [*rng.choice(mid, size=cases(1, 6), replace=False), *rng.choice(cuts, size=cases(1, 6), replace=False)]
    paths = [case_dir("log.csv", raw[: int(k)], support=True) for k in chosen]
    argv = ("certify", "m.npz", "--policy", "policy.npy", "--log", "log.csv", "--json")
    for k, _p, proc in zip(chosen, paths, _cli_many([(p.parent, argv) for p in paths]), strict=True):
        kind, line = _log_expectation(raw, int(k))
        if kind == "rows":
            assert proc.returncode in (EXIT_OK, EXIT_INFEASIBLE), proc.stderr
            assert json.loads(proc.stdout)["samples"] == line
        else:
            _refusal(proc.returncode, proc.stderr, "log.csv", *([f"line {line}"] if line else []))
    # learn --from-log reads the same way
    k = int(mid[0])
    path = case_dir("log.csv", raw[:k], support=True)
    code, _, err = _main("learn", str(path.parent / "m.npz"), "--from-log", str(path))
    _refusal(code, err, "log.csv", f"line {_log_expectation(raw, k)[1]}")
    tally(len(cuts) + len(chosen) + 1)


def test_garbled_logs_and_tables_are_refused_naming_the_file(real: dict[str, Any], case_dir: Any, tally: Any) -> None:
    """One byte changed in a log or a transition table: a refusal naming the file (with the line of
    a bad value, a short line or a byte that is not UTF-8), or a still valid file."""
    model = cmdp_rl.make("1a")
    rng = np.random.default_rng(67)
    n = cases(100, 1500)
    for name, read in (
        ("log.csv", lambda p: read_log(p, model.S, model.A, model.H)),
        ("table.csv", lambda p: CMDP.from_table(p, c_bar=model.c_bar, H=model.H)),
    ):
        raw = (real["dir"] / name).read_bytes()
        refused = 0
        for _ in range(n):
            data = _flip(rng, raw)
            path = case_dir(name, data)
            try:
                read(path)
            except CMDPInputError as exc:
                refused += 1
                assert name in str(exc) and "\n" not in str(exc)
                try:
                    data.decode("utf-8")
                except UnicodeDecodeError as bad:
                    assert f"line {data.count(NL, 0, bad.start) + 1}: not UTF-8" in str(exc)
        assert refused
    # the certify command agrees (a byte that is not UTF-8 in the middle of the log)
    raw = (real["dir"] / "log.csv").read_bytes()
    at = raw.index(b"\n", len(raw) // 2) + 3
    path = case_dir("log.csv", raw[:at] + b"\xff" + raw[at + 1 :], support=True)
    code, _, err = _main(
        "certify", str(path.parent / "m.npz"), "--policy", str(path.parent / "policy.npy"), "--log", str(path)
    )
    _refusal(code, err, "log.csv", f"line {raw.count(NL, 0, at) + 1}", "not UTF-8")
    tally(2 * n + 1)


def test_cut_tables_are_refused_naming_the_file_and_the_short_line(
    real: dict[str, Any], case_dir: Any, tally: Any
) -> None:
    """A transition table cut inside a line (before its last field) is refused naming that line;
    any other cut loses rows of its last pairs and is refused naming the file, unless only the
    end of the very last line was cut and the table still holds every pair."""
    raw = (real["dir"] / "table.csv").read_bytes()
    model = cmdp_rl.make("1a")
    last_line = raw.rstrip(b"\n").rfind(b"\n") + 1
    rng = np.random.default_rng(68)
    cuts = _offsets(rng, len(raw), cases(60, 600))
    for k in cuts:
        path = case_dir("table.csv", raw[:k])
        start = raw.rfind(b"\n", 0, k) + 1  # where the cut line starts
        partial = raw[start:k]
        whole = raw[start : raw.index(b"\n", start)]
        fields = partial.count(b",") + 1
        try:
            back = CMDP.from_table(path, c_bar=model.c_bar, H=model.H)
        except CMDPInputError as exc:
            assert "table.csv" in str(exc) and "\n" not in str(exc)
            if start > 0 and partial and fields < whole.count(b",") + 1:  # a data line lacks fields
                assert f"line {raw.count(NL, 0, k) + 1} has {fields} fields" in str(exc)
            continue
        assert k >= last_line and (back.S, back.A) == (model.S, model.A)  # only the last line's end was cut
    tally(len(cuts))


def test_parquet_logs_and_tables_that_are_cut_are_refused(real: dict[str, Any], tmp_path: Path, tally: Any) -> None:
    """Parquet (with pandas and pyarrow): a cut file is refused naming it, never a pyarrow traceback."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    model = cmdp_rl.make("1a")
    frame = pd.read_csv(real["dir"] / "log.csv")
    good = tmp_path / "log.parquet"
    frame.to_parquet(good)
    raw = good.read_bytes()
    rng = np.random.default_rng(69)
    cuts = _offsets(rng, len(raw), cases(20, 200))
    for k in cuts:
        path = tmp_path / "cut.parquet"
        path.write_bytes(raw[:k])
        with pytest.raises(CMDPInputError, match=r"cut\.parquet"):
            read_log(path, model.S, model.A, model.H)
        with pytest.raises(CMDPInputError, match=r"cut\.parquet"):
            CMDP.from_table(path, H=2)
    tally(2 * len(cuts))


# --------------------------------------------------------------------------- policies and counts


def test_damaged_policies_and_counts_are_refused_naming_the_file(
    real: dict[str, Any], case_dir: Any, tally: Any
) -> None:
    """``certify --policy`` / ``--counts`` (``.npy`` and sparse ``.npz``) and ``learn --baseline``:
    cut or wrong files are exit 2 naming the file."""
    d = real["dir"]
    pol = np.load(d / "policy.npy")

    def npy(arr: Any) -> bytes:
        buf = io.BytesIO()
        np.save(buf, arr)
        return buf.getvalue()

    def npz_counts(mat: Any) -> bytes:
        buf = io.BytesIO()
        sp.save_npz(buf, mat)
        return buf.getvalue()

    counts = sp.load_npz(d / "counts.npz").tocsr()
    neg = counts.copy()
    neg.data[0] = -3
    frac = counts.astype(np.float64)
    frac.data[0] = 0.5
    wild = _keys(d / "counts.npz")
    wild["indices"] = wild["indices"] + 10**6
    nan_pol = pol.copy()
    nan_pol[0, 0, 0] = np.nan
    off_pol = pol.copy()
    off_pol[1, 2] = 0.0
    dense_counts = np.load(d / "counts.npy")
    structured: list[tuple[str, str, bytes, str]] = [
        ("policy", "p.npy", npy(nan_pol), "entry [0, 0, 0] is nan"),
        ("policy", "p.npy", npy(pol.astype(str)), "must hold integers or real numbers"),
        ("policy", "p.npy", _npz({"policy": pol}), "an .npz archive"),
        ("policy", "p.npy", npy(pol[:-1]), "expected an (H, S, A)"),
        ("policy", "p.npy", npy(off_pol), "must sum to 1"),
        ("policy", "p.npy", b"\x80\x04garbage that is not an array", "not a readable .npy array"),
        ("counts", "c.npz", npz_counts(neg), "must be a non-negative integer"),
        ("counts", "c.npz", npz_counts(frac), "must be a non-negative integer"),
        ("counts", "c.npz", _npz(wild), "not a readable scipy.sparse"),
        ("counts", "c.npz", npz_counts(sp.csr_array(np.ones((3, 3)))), "expected a sparse (S*A, S)"),
        ("counts", "c.npz", _npz({"x": np.ones(3)}), "not a readable scipy.sparse"),
        ("counts", "c.npy", npy(-dense_counts - 1), "must be a non-negative integer"),
        ("counts", "c.npy", npy(dense_counts.astype(np.complex128)), "must hold integers or real numbers"),
    ]
    rng = np.random.default_rng(70)
    cuts: list[tuple[str, str, bytes, str]] = []
    for option, src, name in (
        ("policy", "policy.npy", "p.npy"),
        ("counts", "counts.npz", "c.npz"),
        ("counts", "counts.npy", "c.npy"),
    ):
        raw = (d / src).read_bytes()
        cuts += [(option, name, raw[:k], name) for k in _offsets(rng, len(raw), cases(10, 100))]
    for option, name, data, needle in [*structured, *cuts]:
        path = case_dir(name, data, support=True)
        argv = ["certify", str(path.parent / "m.npz"), "--policy", str(path.parent / "policy.npy")]
        argv += ["--counts", str(path.parent / "counts.npz")]
        argv[argv.index(f"--{option}") + 1] = str(path)
        before = tree(path.parent)
        code, _, err = _main(*argv)
        assert code == EXIT_BAD_INPUT, (option, name, needle, err)
        _refusal(code, err, name, f"{option}: ", needle)
        assert tree(path.parent) == before
    # the baseline of learn --env is read by the same reader
    path = case_dir("b.npy", npy(nan_pol))
    code, _, err = _main(*RUN, "--algo", "dope", "--baseline", str(path), "--baseline-costs", "1")
    _refusal(code, err, "b.npy", "baseline: ", "is nan")
    # two of them through the installed entry point
    picked = [structured[0], cuts[int(rng.integers(len(cuts)))]]
    paths = [case_dir(name, data, support=True) for _, name, data, _ in picked]
    calls = []
    for (option, name, _, _), p in zip(picked, paths, strict=True):
        argv = ["certify", "m.npz", "--policy", "policy.npy", "--counts", "counts.npz"]
        argv[argv.index(f"--{option}") + 1] = name
        calls.append((p.parent, tuple(argv)))
    for (_, name, _, needle), proc in zip(picked, _cli_many(calls), strict=True):
        _refusal(proc.returncode, proc.stderr, name, needle)
    tally(len(structured) + len(cuts) + 1 + len(picked))


# --------------------------------------------------------------------------- run logs (learn --env --run-log)


def test_run_log_cut_anywhere_resumes_to_the_uninterrupted_run(
    real: dict[str, Any], tmp_path: Path, tally: Any
) -> None:
    """The resume rule: a run log cut mid-line loses that line with one note naming the file and
    line; cut at a line boundary it resumes silently; either way the run ends with the same output
    and the same file as the uninterrupted run."""
    raw = (real["dir"] / "run.jsonl").read_bytes()
    rng = np.random.default_rng(71)
    mid = [k for k in range(1, len(raw)) if raw[k - 1 : k] != b"\n"]
    bounds = [0] + [k for k in range(1, len(raw)) if raw[k - 1 : k] == b"\n"]
    chosen = [*rng.choice(mid, size=cases(1, 8), replace=False), *rng.choice(bounds, size=cases(1, 4), replace=False)]
    dirs = []
    for i, k in enumerate(chosen):
        d = tmp_path / f"cut{i}"
        d.mkdir()
        (d / "run.jsonl").write_bytes(raw[: int(k)])
        dirs.append(d)
    for k, d, proc in zip(chosen, dirs, _cli_many([(d, (*RUN, "--run-log", "run.jsonl")) for d in dirs]), strict=True):
        assert proc.returncode == EXIT_OK, proc.stderr
        assert _without_run_log(proc.stdout) == real["run_json"]
        assert (d / "run.jsonl").read_bytes() == raw  # the same lines as the uninterrupted run
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and NOT_CERTIFIED not in ln]
        if int(k) in mid:
            line = raw.count(b"\n", 0, int(k)) + 1
            assert len(lines) == 1 and "run.jsonl" in lines[0] and f"line {line} was incomplete" in lines[0], lines
        else:
            assert lines == [], lines
    tally(len(chosen))


def _run_log_damage(raw: bytes) -> list[tuple[str, bytes, int]]:
    """``(case, file bytes, line)``: damage anywhere but an incomplete last line, and the line named."""
    lines = raw.decode().split("\n")[:-1]
    ep = [json.loads(x) for x in lines[1:-1]]

    def with_line(i: int, row: Any) -> bytes:
        out = list(lines)
        out[i - 1] = row if isinstance(row, str) else json.dumps(row)
        return ("\n".join(out) + "\n").encode()

    def episode(j: int, **changes: Any) -> Any:
        return {**ep[j], **changes}

    header = json.loads(lines[0])
    nx0 = ep[0]["next_state"][0]
    not_utf8 = raw.split(NL)
    not_utf8[3] = not_utf8[3].replace(b'"episode"', b'"epi\xffsode"')
    return [
        ("garbage in a middle line", with_line(3, lines[2][:20] + "#" + lines[2][20:]), 3),
        ("a byte that is not UTF-8", NL.join(not_utf8), 4),
        ("a blank line", with_line(3, ""), 3),
        ("a list instead of an object", with_line(2, [1, 2]), 2),
        ("a string header", with_line(1, '"config"'), 1),
        ("another run's header", with_line(1, {"config": {**header["config"], "seed": 9}}), 1),
        ("episodes out of order", with_line(2, ep[1]), 2),
        ("an episode number that is a bool", with_line(2, episode(0, episode=False)), 2),
        ("a missing key", with_line(2, {k: v for k, v in ep[0].items() if k != "reward"}), 2),
        ("an extra key", with_line(3, episode(1, note="x")), 3),
        ("lists of different lengths", with_line(2, episode(0, action=ep[0]["action"][:-1])), 2),
        ("a state outside the environment", with_line(2, episode(0, state=[99, *ep[0]["state"][1:]])), 2),
        ("a float action", with_line(2, episode(0, action=[0.5, *ep[0]["action"][1:]])), 2),
        ("a reward of 2", with_line(5, episode(3, reward=[2.0, *ep[3]["reward"][1:]])), 5),
        ("a NaN cost", with_line(2, re.sub(r'"costs": \[\[[^\]]*\]', '"costs": [[NaN]', lines[1], count=1)), 2),
        ("costs of another size", with_line(2, episode(0, costs=[[0.0, 0.0]] * len(ep[0]["state"]))), 2),
        ("a broken chain of states", with_line(2, episode(0, next_state=[(nx0 + 1) % 9, *ep[0]["next_state"][1:]])), 2),
        (
            "a short episode that does not end",
            with_line(2, {k: (v[:-1] if isinstance(v, list) else v) for k, v in ep[0].items()}),
            2,
        ),
        ("complete too early", with_line(3, {"complete": True}), 3),
        ("a line after the end", raw + b'{"complete": true}\n', len(lines) + 1),
        (
            "an integer beyond int64",
            with_line(2, lines[1].replace('"state": [', '"state": [99999999999999999999999, ', 1)),
            2,
        ),
        ("JSON nested too deeply", with_line(4, "[" * 100000 + "]" * 100000), 4),
    ]


def test_run_log_damage_other_than_an_incomplete_last_line_is_refused(
    real: dict[str, Any], tmp_path: Path, tally: Any
) -> None:
    """Garbage in a middle line, a wrong header, a line that parses but is not a valid episode:
    exit 2 naming the file and the line, and the file is left as it was."""
    from cmdp_rl.simulators.run_log import RunShape, read_run_log

    raw = (real["dir"] / "run.jsonl").read_bytes()
    damage = _run_log_damage(raw)
    config = json.loads(raw.split(b"\n", 1)[0])["config"]
    for case, data, line in damage:  # the reader: every case
        path = tmp_path / "r.jsonl"
        path.write_bytes(data)
        with pytest.raises(CMDPInputError) as err:
            read_run_log(path, config, RunShape(**SHAPE))
        assert re.search(rf"r\.jsonl line {line}[: ]", str(err.value)), (case, str(err.value))
        assert "\n" not in str(err.value)
        assert path.read_bytes() == data, case
    # random garbage in a random middle line, through the installed entry point
    rng = np.random.default_rng(72)
    lines = raw.split(b"\n")
    calls, expect = [], []
    for i in range(cases(1, 6)):
        j = int(rng.integers(2, len(lines) - 1))  # 1-based line 2 .. K + 1: the episode lines
        at = int(rng.integers(len(lines[j - 1])))
        hurt = list(lines)
        hurt[j - 1] = lines[j - 1][:at] + b"#" + lines[j - 1][at:]
        d = tmp_path / f"mid{i}"
        d.mkdir()
        (d / "run.jsonl").write_bytes(NL.join(hurt))
        calls.append((d, (*RUN, "--run-log", "run.jsonl")))
        expect.append((d, j, tree(d)))
    for (d, j, before), proc in zip(expect, _cli_many(calls), strict=True):
        line = _refusal(proc.returncode, proc.stderr, "run.jsonl")
        assert re.search(rf"run\.jsonl line {j}[: ]", line), line
        assert tree(d) == before  # nothing written, nothing repaired
    tally(len(damage) + len(calls))


@given(
    value=st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(
                st.sampled_from(["episode", "state", "action", "next_state", "reward", "costs", "complete", "config"])
                | st.text(max_size=4),
                inner,
                max_size=6,
            )
        ),
        max_leaves=20,
    )
)
@HYPOTHESIS
def test_any_json_line_in_a_run_log_is_read_or_refused_with_its_line(
    real: dict[str, Any], tally: Any, value: Any
) -> None:
    """Any JSON value as an episode line: the reader refuses it naming the file and line 2 (no other exception)."""
    import tempfile

    from cmdp_rl.simulators.run_log import RunShape, read_run_log

    raw = (real["dir"] / "run.jsonl").read_bytes()
    lines = raw.split(b"\n")
    config = json.loads(lines[0])["config"]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "r.jsonl"
        path.write_bytes(b"\n".join([lines[0], json.dumps(value).encode(), *lines[2:]]))
        with pytest.raises(CMDPInputError, match=r"r\.jsonl line 2[: ]"):
            read_run_log(path, config, RunShape(**SHAPE))
    tally(1)


# --------------------------------------------------------------------------- run files, configs, report


def test_cut_run_files_of_a_sweep_are_redone_and_the_results_are_the_same(
    real: dict[str, Any], tmp_path: Path, tally: Any
) -> None:
    """``compare`` on a folder whose run file was cut: the file is named in one warning, deleted and
    redone, and the results table is byte for byte the uninterrupted one (a cut that only drops the
    final newline leaves a valid file, which is kept)."""
    src = real["dir"] / "cmp"
    run = next((src / "runs").glob("*.json"))
    raw = run.read_bytes()
    rng = np.random.default_rng(73)
    chosen = _offsets(rng, len(raw), cases(1, 4))
    dirs = []
    for i, k in enumerate(chosen):
        d = tmp_path / f"cmp{i}"
        shutil.copytree(src, d)
        (d / "runs" / run.name).write_bytes(raw[:k])
        dirs.append(d)
    procs = _cli_many([(d.parent, (*COMPARE, "--out", d.name)) for d in dirs])
    for k, d, proc in zip(chosen, dirs, procs, strict=True):
        assert proc.returncode == EXIT_OK, proc.stderr
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and NOT_CERTIFIED not in ln]
        if raw[:k] == raw.rstrip(b"\n"):
            assert lines == []
        else:
            assert len(lines) == 1 and run.name in lines[0] and "the run is redone" in lines[0], lines
        assert (d / "results.csv").read_bytes() == (src / "results.csv").read_bytes()
    tally(len(chosen))


@given(
    body=st.dictionaries(
        st.sampled_from(["format", "spec", "v_star", "seconds", "version", "timing", "columns"]),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
            max_leaves=12,
        ),
    )
)
@HYPOTHESIS
def test_run_files_with_a_valid_checksum_but_any_content_are_corrupt_or_refused(
    real: dict[str, Any], tally: Any, body: dict[str, Any]
) -> None:
    """A run file that parses and carries a valid checksum but holds anything: the store calls it
    corrupt (it is redone) or, for a complete run of another configuration, refuses; nothing else."""
    import tempfile

    run = next((real["dir"] / "cmp" / "runs").glob("*.json"))
    good = json.loads(run.read_text())
    spec = _spec_of(good)
    content = {**body, "format": body.get("format", good["format"])}
    content["checksum"] = hashlib.sha256(
        json.dumps(content, sort_keys=True, separators=(",", ":")).encode("utf-8")
    ).hexdigest()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / run.name
        path.write_text(json.dumps(content))
        try:
            load_record(path, spec)
        except (CorruptRunFile, CMDPInputError):
            pass
    tally(1)


def _spec_of(data: dict[str, Any]) -> Any:
    from cmdp_rl.experiments.runner import RunSpec

    return RunSpec.from_dict(data["spec"])


def test_damaged_configs_and_results_folders_are_refused_naming_the_file(
    real: dict[str, Any], tmp_path: Path, tally: Any
) -> None:
    """``reproduce --config`` and ``load_compare_config`` on cut or garbled TOML, and ``report`` on a
    results folder with a file that is not UTF-8 or not CSV: one line naming the file; a cut that
    leaves valid TOML gives a configuration."""
    root = Path(__file__).resolve().parents[2]
    n = 0
    rng = np.random.default_rng(74)
    for src, read in (
        (root / "docs" / "paper-config.toml", load_config),
        (real["dir"] / "cmp" / "config.toml", load_compare_config),
    ):
        raw = src.read_bytes()
        for k in _offsets(rng, len(raw), cases(30, 300)):
            path = tmp_path / "c.toml"
            path.write_bytes(raw[:k])
            try:
                read(path)
            except CMDPInputError as exc:
                assert "c.toml" in str(exc) and "\n" not in str(exc)
            n += 1
        for _ in range(cases(30, 300)):
            path = tmp_path / "c.toml"
            path.write_bytes(_flip(rng, raw))
            try:
                read(path)
            except CMDPInputError as exc:
                assert "c.toml" in str(exc) and "\n" not in str(exc)
            n += 1
    (tmp_path / "odd.toml").write_text("scenarios = [[1]]\n")
    with pytest.raises(CMDPInputError, match=r"odd\.toml: scenarios: must be a list of names"):
        load_config(tmp_path / "odd.toml")
    (tmp_path / "few.toml").write_text("episodes = 20\n")
    with pytest.raises(CMDPInputError, match=r"few\.toml: missing key\(s\) \['problem'\]"):
        load_compare_config(tmp_path / "few.toml")
    # the CLI: a binary config, and a results folder with damaged files
    (tmp_path / "bin.toml").write_bytes(b"runs = 3\n\xff\xfe\x00\x01")
    code, _, err = _main("reproduce", "--config", str(tmp_path / "bin.toml"), "--out", str(tmp_path / "never"))
    _refusal(code, err, "bin.toml", "not valid TOML")
    assert not (tmp_path / "never").exists()
    for name, data, needle in (
        ("summary.md", b"# Results\n\nfine\n\xc3\x28 broken\n", "line 4: not UTF-8"),
        ("results.csv", b"a,b\n1,2\n" + b'"' + b"x" * 200_000 + b"\n", "line 3"),
        ("config.toml", b"\x00\xff", "line 1: not UTF-8"),
    ):
        d = tmp_path / f"report-{name}"
        shutil.copytree(real["dir"] / "cmp", d)
        (d / name).write_bytes(data)
        before = tree(d)
        code, _, err = _main("report", str(d))
        _refusal(code, err, name, needle)
        assert tree(d) == before
        n += 1
    proc = cli("reproduce", "--config", "bin.toml", "--out", "never", cwd=tmp_path)
    _refusal(proc.returncode, proc.stderr, "bin.toml")
    tally(n + 4)


# --------------------------------------------------------------------------- arbitrary bytes (Hypothesis)


@given(data=st.binary(max_size=600) | st.binary(max_size=400).map(lambda b: b"PK\x03\x04" + b))
@HYPOTHESIS
def test_any_bytes_as_a_model_file_are_refused_naming_it(tally: Any, data: bytes) -> None:
    """``CMDP.load`` on arbitrary bytes (and bytes that start like a zip): ``CMDPInputError`` naming the file."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "any.npz"
        path.write_bytes(data)
        with pytest.raises(CMDPInputError, match=r"any\.npz"):
            CMDP.load(path)
    tally(1)


@given(data=st.data())
@HYPOTHESIS
def test_any_bytes_written_into_a_real_model_file_are_refused_or_change_nothing(
    real: dict[str, Any], tally: Any, data: st.DataObject
) -> None:
    """Arbitrary bytes overwriting a stretch of the real sparse file: refused naming the file, or the same model."""
    import tempfile

    raw = (real["dir"] / "s.npz").read_bytes()
    at = data.draw(st.integers(0, len(raw) - 1))
    patch = data.draw(st.binary(min_size=1, max_size=16))
    hurt = raw[:at] + patch + raw[at + len(patch) :]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.npz"
        path.write_bytes(hurt)
        try:
            back = CMDP.load(path)
        except CMDPInputError as exc:
            assert "s.npz" in str(exc) and "\n" not in str(exc)
        else:
            good = CMDP.load(real["dir"] / "s.npz")
            assert (back.K != good.K).nnz == 0 and np.array_equal(back.r, good.r)
    tally(1)


@given(
    text=st.text(max_size=300)
    | st.lists(
        st.lists(
            st.sampled_from(["0", "1", "2", "3", "-1", "x", "", " ", "1.5", "nan", "9", '"']), min_size=1, max_size=6
        ).map(",".join),
        max_size=8,
    ).map(lambda rows: "episode,step,state,action,next_state\n" + "\n".join(rows))
)
@HYPOTHESIS
def test_any_text_as_a_log_is_read_or_refused_naming_it(tally: Any, text: str) -> None:
    """``read_log`` on arbitrary text (and on near-logs): counts, or ``CMDPInputError`` naming the file."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "any.csv"
        path.write_text(text, encoding="utf-8")
        try:
            counts = read_log(path, 9, 4, 10)
        except CMDPInputError as exc:
            assert "any.csv" in str(exc) and "\n" not in str(exc)
        else:
            assert counts.shape == (9, 4, 9) and counts.min() >= 0
    tally(1)
