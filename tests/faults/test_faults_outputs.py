"""Class 5: options silently ignored and outputs that collide.

* An option a mode ignores is refused, naming it (exit 2, one line, nothing written), whatever
  its value (``--seed 0`` is given even though 0 is the default); ``--from-log`` honours
  ``--algo`` and ``--method`` (or refuses them) and ``--json`` reports the ``algorithm`` and
  ``method`` that ran.
* Two outputs that are one file (the same path, ``./x`` and ``x``, ``a/../x``, a symlink, a hard
  link), or an output that is an input (the model, the log, the baseline), are refused before
  any work.
* A write that fails (``ENOSPC``, ``EFBIG``, ``EDQUOT``, ``EROFS``, ``EIO``, a short write) or is
  cut short by a file-size limit (``RLIMIT_FSIZE``: the CLI ignores ``SIGXFSZ``) is exit 2 with
  one line naming the destination and the system's reason, and leaves no temporary file and no
  partial file (a run log keeps only complete lines).
"""

from __future__ import annotations

import errno
import json
import os
import resource
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from faultkit import EXIT_BAD_INPUT, EXIT_OK, assert_one_line_refusal, cases, cli, run_main, tree

CLASS = "5. Ignored options and colliding outputs"

#: the write errors a full, limited, read-only or failing disk gives
ERRNOS = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EROFS, errno.EIO)


def _episodes(model: Any, episodes: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``episodes`` episodes of the uniform policy on ``model``'s kernel: states, actions, next states."""
    g = np.random.default_rng(seed)
    P = model.P.toarray().reshape(model.S, model.A, model.S) if hasattr(model.P, "toarray") else model.P
    H = model.horizon("test")
    states, nexts = np.zeros((episodes, H), dtype=np.int64), np.zeros((episodes, H), dtype=np.int64)
    actions = g.integers(0, model.A, size=(episodes, H))
    for e in range(episodes):
        s = int(model.s0)
        for h in range(H):
            states[e, h] = s
            s = int(g.choice(model.S, p=P[s, actions[e, h]]))
            nexts[e, h] = s
    return states, actions, nexts


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of inputs: ``m.npz`` (scenario 1a), ``log.csv`` (30 episodes on it), ``base.npy``
    (a uniform policy), ``dr.npz`` (the discounted ``ding-random:seed=10``), ``full.toml`` (a
    reproduce configuration with ``preset = "full"``)."""
    from cmdp_rl import scenario_cmdp
    from cmdp_rl.model.transition_logs import write_log

    folder = tmp_path_factory.mktemp("inputs")
    m = scenario_cmdp("1a")
    m.save(folder / "m.npz")
    write_log(folder / "log.csv", *_episodes(m, 30, 0))
    np.save(folder / "base.npy", np.full((m.horizon("test"), m.S, m.A), 1.0 / m.A))
    from cmdp_rl.envs.registry import make

    make("ding-random:seed=10").save(folder / "dr.npz")
    (folder / "full.toml").write_text('preset = "full"\n')
    return folder


@pytest.fixture
def work(inputs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh copy of the inputs as the current folder."""
    for p in inputs.iterdir():
        shutil.copy(p, tmp_path / p.name)
    monkeypatch.chdir(tmp_path)
    yield tmp_path


# --------------------------------------------------------------------------- ignored options

LOG = ["learn", "m.npz", "--from-log", "log.csv"]
ENV = ["learn", "--env", "cmdp_rl/1a-v0", "--deploy", "last", "--horizon", "5", "--c-bar", "1", "--episodes", "2"]
#: the options of ``learn --env`` alone
ENV_ONLY = (
    ("--horizon", ["5"]),
    ("--c-bar", ["1"]),
    ("--cost-key", ["cost"]),
    ("--reward-range", ["0", "1"]),
    ("--cost-range", ["0", "1"]),
    ("--step-timeout", ["1"]),
    ("--run-log", ["r.jsonl"]),
    ("--baseline", ["base.npy"]),
    ("--baseline-costs", ["1"]),
    ("--figure", ["f.png"]),
    ("--env-kwargs", ["{}"]),
)
#: (argv, the option the refusal names): each option that its mode ignores
IGNORED: tuple[tuple[list[str], str], ...] = (
    # learn --from-log: the log is the data, and the plan is the learner's or the safe planner's
    ([*LOG, "--seed", "3"], "--seed"),
    ([*LOG, "--seed", "0"], "--seed"),  # the default's value, typed
    ([*LOG, "--max-episodes", "5"], "--max-episodes"),
    ([*LOG, "--episodes", "5"], "--episodes"),
    ([*LOG, "--samples-per-pair", "5"], "--samples-per-pair"),
    ([*LOG, "--eps", "0.5"], "--eps"),
    ([*LOG, "--bonus-scale", "2"], "--bonus-scale"),
    ([*LOG, "--k0", "3"], "--k0"),
    ([*LOG, "--algo", "dope"], "--algorithm"),
    ([*LOG, "--algo", "plugin"], "--algorithm"),
    ([*LOG, "--algo", "optcmdp"], "--algorithm"),
    ([*LOG, "--deploy", "certified", "--algo", "gmbl"], "--algorithm"),
    ([*LOG, "--deploy", "certified", "--algo", "online-crl"], "--algorithm"),  # the default's value, typed
    ([*LOG, "--deploy", "certified", "--radius", "empirical-bernstein"], "--radius"),
    ([*LOG, "--deploy", "certified", "--radius", "paper"], "--radius"),
    ([*LOG, "--force"], "--force"),
    # --env's options without --env, with a budget or a log
    *(
        (["learn", "m.npz", *mode, opt, *value], opt)
        for mode in (["--episodes", "3"], ["--from-log", "log.csv"])
        for opt, value in ENV_ONLY
    ),
    # learn MODEL: another learner's options
    (["learn", "m.npz", "--algo", "plugin", "--episodes", "3", "--radius", "paper"], "--radius"),
    (["learn", "m.npz", "--algo", "plugin", "--episodes", "3", "--method", "fast"], "--method"),
    (["learn", "m.npz", "--algo", "dope", "--episodes", "3", "--method", "lp"], "--method"),
    (["learn", "m.npz", "--algo", "optcmdp", "--episodes", "3", "--k0", "1"], "--k0"),
    (["learn", "m.npz", "--algo", "gmbl", "--samples-per-pair", "3", "--bonus-scale", "1"], "--bonus-scale"),
    (["learn", "m.npz", "--algo", "online-crl", "--episodes", "3", "--max-episodes", "4"], "--max-episodes"),
    (["learn", "m.npz", "--episodes", "3", "--force"], "--force"),
    # learn --env: options that only a model-based run uses
    ([*ENV, "--algo", "optcmdp", "--method", "lp"], "--method"),
    ([*ENV, "--algo", "plugin", "--radius", "paper"], "--radius"),
    ([*ENV, "--force"], "--force"),
    # the other commands
    (["pg", "ding-random:seed=10", "--out", "D", "--seed", "3"], "--seed"),  # exact gradients
    (["pg", "ding-random:seed=10", "--out", "D", "--seed", "0", "--init", "script"], "--seed"),  # its own seed
    (["frontier", "distinct:n=2", "--breakpoints", "--out", "F"], "--breakpoints"),  # N = 2
    (["reproduce", "--quick", "--config", "full.toml", "--out", "R"], "--quick"),  # the file's preset decides
    (["compare", "media-control", "--algos", "online-crl", "--bonus-scale", "2", "--out", "C"], "--bonus-scale"),
)


def _refused(proc: subprocess.CompletedProcess[str], option: str, before: dict[str, bytes], folder: Path) -> None:
    line = assert_one_line_refusal(proc)
    assert f"{option}:" in line, line
    assert tree(folder) == before, "a refusal wrote something"


def test_options_a_mode_ignores_are_refused(work: Path, tally: Callable[[int], None]) -> None:
    """Every option of the enumeration that its mode would ignore is refused, naming it, and
    nothing is written."""
    for argv, option in IGNORED:
        before = tree(work)
        _refused(run_main(*argv), option, before, work)
    tally(len(IGNORED))


def test_ignored_options_refused_by_the_installed_command(work: Path, tally: Callable[[int], None]) -> None:
    """A sample of the enumeration through the real ``cmdp-rl`` in a fresh interpreter."""
    picks = IGNORED[:: max(1, len(IGNORED) // cases(3, len(IGNORED)))][: cases(3, len(IGNORED))]
    for argv, option in picks:
        before = tree(work)
        _refused(cli(*argv, cwd=work), option, before, work)
    tally(len(picks))


def test_resource_limits_of_every_mode_are_checked(work: Path, tally: Callable[[int], None]) -> None:
    """``--max-memory`` and ``--max-time`` are never accepted and then ignored: ``pg`` on a model
    file and ``learn --from-log`` check their estimates (exit 2, one line naming the driver and the
    option to raise; the model file's own size is checked first, from its headers)."""
    runs = (
        (["pg", "dr.npz", "--iterations", "2", "--out", "D", "--max-memory", "1K"], "model file", "--max-memory"),
        (["pg", "dr.npz", "--iterations", "100000", "--out", "D", "--max-time", "1s"], "iterations:", "--max-time"),
        ([*LOG, "--max-memory", "1K"], "from-log:", "--max-memory"),
        ([*LOG, "--deploy", "certified", "--max-memory", "1K"], "from-log:", "--max-memory"),
        ([*LOG, "--algo", "gmbl", "--method", "lp", "--max-time", "0.000001s"], "from-log:", "--max-time"),
    )
    for argv, driver, option in runs:
        before = tree(work)
        line = assert_one_line_refusal(run_main(*argv))
        # the model file's own size (from its headers) may be the first estimate to refuse
        assert (f"error: {driver}" in line or "error: model file" in line) and option in line, line
        assert tree(work) == before
    tally(len(runs))


def test_from_log_honours_algo_and_method(
    work: Path, monkeypatch: pytest.MonkeyPatch, tally: Callable[[int], None]
) -> None:
    """``--from-log`` passes ``--method`` to the learner that plans (and ``--algo`` picks it), or to
    the safe planner; ``--json`` reports the ``algorithm`` and ``method`` that ran; so do the model
    and ``--env`` modes."""
    import cmdp_rl.certificates.safe as safe
    import cmdp_rl.learners as learners
    import cmdp_rl.simulators.learning as simulator

    seen: list[tuple[str, str]] = []

    def spy(cls: type) -> type:
        class Spy(cls):  # type: ignore[valid-type, misc]
            def __init__(self, *args: Any, method: str = "fast", **kw: Any) -> None:
                seen.append((cls.__name__, method))
                super().__init__(*args, method=method, **kw)

        return Spy

    monkeypatch.setattr(learners, "OnlineCRL", spy(learners.OnlineCRL))
    monkeypatch.setattr(learners, "OptimisticGMBL", spy(learners.OptimisticGMBL))
    real_safe, real_learn = safe.solve_safe, simulator.learn

    def safe_spy(*args: Any, method: str = "fast", **kw: Any) -> Any:
        seen.append(("solve_safe", method))
        return real_safe(*args, method=method, **kw)

    def learn_spy(*args: Any, **kw: Any) -> Any:
        seen.append(("simulator", kw.get("method", "fast")))
        return real_learn(*args, **kw)

    monkeypatch.setattr(safe, "solve_safe", safe_spy)
    monkeypatch.setattr(simulator, "learn", learn_spy)
    runs = (
        # (argv, the learner's class or solve_safe, the JSON's algorithm, method)
        ([*LOG, "--method", "lp"], "OnlineCRL", "online-crl", "lp"),
        ([*LOG, "--algo", "gmbl", "--method", "lp"], "OptimisticGMBL", "gmbl", "lp"),
        ([*LOG, "--algo", "gmbl"], "OptimisticGMBL", "gmbl", "fast"),
        ([*LOG, "--deploy", "certified", "--method", "lp"], "solve_safe", "safe", "lp"),
        (["learn", "m.npz", "--episodes", "3", "--method", "lp"], "OnlineCRL", "online-crl", "lp"),
        (
            [*L1[:2], "--algo", "plugin", "--episodes", "3", "--deploy", "certified", "--method", "lp"],
            "solve_safe",
            "plugin",
            None,
        ),
        ([*ENV, "--method", "lp"], "simulator", "online-crl", "lp"),
    )
    for argv, who, algorithm, method in runs:
        seen.clear()
        proc = run_main(*argv, "--json")
        assert proc.returncode in (0, 1), proc.stderr
        out = json.loads(proc.stdout)
        assert out["algorithm"] == algorithm and out["method"] == method, (argv, out)
        want = "lp" if "lp" in argv else "fast"
        assert (who, want) in seen, (argv, seen)
        if "certified" in argv:
            assert out["safe_method"] in ("fast", "lp", "fast+lp", "none")
    tally(len(runs))


# --------------------------------------------------------------------------- colliding outputs

L1 = ["learn", "m.npz", "--episodes", "2"]
COLLISIONS: tuple[tuple[list[str], str], ...] = (
    # (argv, the option the refusal names); set up by _collision_files
    ([*L1, "--policy-out", "x.npy", "--counts-out", "x.npy"], "--counts-out"),
    ([*L1, "--policy-out", "x.npy", "--counts-out", "./x.npy"], "--counts-out"),
    ([*L1, "--policy-out", "sub/../x.npy", "--counts-out", "x.npy"], "--counts-out"),
    ([*L1, "--policy-out", "x.npy", "--counts-out", "link.npy"], "--counts-out"),  # a symlink to x.npy
    ([*L1, "--policy-out", "m.npz", "--force"], "--policy-out"),  # the model
    ([*L1, "--counts-out", "./m.npz", "--force"], "--counts-out"),
    ([*L1, "--policy-out", "hard.npz", "--force"], "--policy-out"),  # a hard link of the model
    ([*LOG, "--counts-out", "log.csv", "--force"], "--counts-out"),  # the log
    ([*LOG, "--policy-out", "log-link.csv", "--force"], "--policy-out"),  # a symlink to the log
    ([*ENV, "--figure", "o.png", "--run-log", "o.png"], "--run-log"),
    ([*ENV, "--policy-out", "o.npy", "--counts-out", "o.npy"], "--counts-out"),
    ([*ENV, "--policy-out", "base.npy", "--baseline", "base.npy", "--baseline-costs", "0", "--force"], "--policy-out"),
    (["export", "m.npz", "m.npz", "--force"], "path"),
    (["export", "m.npz", "sub/../m.npz", "--force"], "path"),
    (["pg", "D/results.csv", "--out", "D", "--force"], "--out results.csv"),
    (["frontier", "F/frontier.csv", "--out", "F"], "--out frontier.csv"),
)


def _collision_files(folder: Path) -> None:
    (folder / "sub").mkdir(exist_ok=True)
    for name, target in (("link.npy", "x.npy"), ("log-link.csv", "log.csv")):
        if not (folder / name).is_symlink():
            (folder / name).symlink_to(target)  # x.npy does not exist: a dangling link
    if not (folder / "hard.npz").exists():
        os.link(folder / "m.npz", folder / "hard.npz")
    for d, name in (("D", "results.csv"), ("F", "frontier.csv")):
        (folder / d).mkdir(exist_ok=True)
        shutil.copy(folder / "m.npz", folder / d / name)


def test_colliding_outputs_are_refused(work: Path, tally: Callable[[int], None]) -> None:
    """Two outputs that are one file, or an output that is an input, are refused before any work:
    one line naming the option, every file (inputs included) as it was."""
    _collision_files(work)
    for argv, option in COLLISIONS:
        before = tree(work)
        proc = run_main(*argv)
        line = assert_one_line_refusal(proc)
        assert line.split(": error: ", 1)[1].startswith(f"{option}:"), line
        assert "also the" in line or "an input it would overwrite" in line, line
        assert tree(work) == before
    tally(len(COLLISIONS))


def test_colliding_outputs_refused_by_the_installed_command(work: Path, tally: Callable[[int], None]) -> None:
    """A sample of the collisions through the real ``cmdp-rl``."""
    _collision_files(work)
    picks = COLLISIONS[: cases(2, len(COLLISIONS))]
    for argv, option in picks:
        before = tree(work)
        line = assert_one_line_refusal(cli(*argv, cwd=work))
        assert f"{option}:" in line
        assert tree(work) == before
    tally(len(picks))


# --------------------------------------------------------------------------- write failures


def _leftovers(folder: Path) -> list[str]:
    """Temporary files of the atomic writer anywhere under ``folder``."""
    return [str(p) for p in folder.rglob("*") if p.name.startswith(".tmp-")]


def _fail(code: int) -> OSError:
    return OSError(code, os.strerror(code))


def test_write_errors_name_the_destination(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tally: Callable[[int], None]
) -> None:
    """The atomic writers (``write_atomic``, ``atomic_stream`` behind ``np.save``, ``atomic_path``,
    ``append_line``): every write error at every stage (creating the temporary file, writing,
    flushing to disk, moving it into place), and a short write, raise one ``OutputError`` naming
    the destination with the system's reason; no temporary file is left, an existing destination
    is untouched and an appended file is cut back to its size before."""
    import cmdp_rl.plumbing.atomic as atomic
    from cmdp_rl.plumbing.atomic import OutputError, append_line, atomic_path, atomic_stream, write_atomic

    dest = tmp_path / "out.bin"

    def stream() -> None:
        with atomic_stream(dest) as fh:
            np.save(fh, np.arange(1000.0))

    def path() -> None:
        with atomic_path(dest) as tmp:
            tmp.write_bytes(b"x" * 5000)

    writers: dict[str, Callable[[], None]] = {
        "write_atomic": lambda: write_atomic(dest, "y" * 5000),
        "atomic_stream": stream,
        "atomic_path": path,
    }
    real_open = open

    class Failing:
        """A file whose ``write`` fails with ``code`` (``None``: writes half and says so)."""

        def __init__(self, fh: Any, code: int | None) -> None:
            self.fh, self.code = fh, code

        def write(self, data: bytes) -> int:
            if self.code is not None:
                raise _fail(self.code)
            half = len(data) // 2
            self.fh.write(data[:half])
            return half

        def __getattr__(self, name: str) -> Any:
            return getattr(self.fh, name)

        def __enter__(self) -> Failing:
            return self

        def __exit__(self, *exc: object) -> None:
            self.fh.close()

    def opener(code: int | None) -> Callable[..., Any]:
        def open_(file: Any, mode: str = "r", *args: Any, **kw: Any) -> Any:
            fh = real_open(file, mode, *args, **kw)
            return Failing(fh, code) if "w" in mode else fh

        return open_

    def raiser(code: int) -> Callable[..., Any]:
        def fail(*args: Any, **kw: Any) -> Any:
            raise _fail(code)

        return fail

    def inject(m: pytest.MonkeyPatch, stage: str, code: int | None) -> None:
        if stage == "write":
            m.setattr(atomic, "open", opener(code), raising=False)
        else:
            assert code is not None
            target = {"create": (atomic.tempfile, "mkstemp"), "fsync": (atomic.os, "fsync")}
            obj, name = target.get(stage, (atomic.os, "replace"))
            m.setattr(obj, name, raiser(code))

    tried = 0
    for name, write in writers.items():
        for stage in ("create", "write", "fsync", "replace"):
            if name == "atomic_path" and stage == "write":
                continue  # its caller writes the temporary file itself
            for code in (*ERRNOS, *((None,) if stage == "write" else ())):
                dest.write_bytes(b"old")
                with monkeypatch.context() as m:
                    inject(m, stage, code)
                    with pytest.raises(OutputError) as info:
                        write()
                exc = info.value
                reason = "short write" if code is None else os.strerror(code)
                assert str(exc).startswith(f"cannot write {dest}: {reason}"), (name, stage, str(exc))
                assert isinstance(exc, OSError) and exc.filename == str(dest)
                assert dest.read_bytes() == b"old" and _leftovers(tmp_path) == [], (name, stage)
                tried += 1
    # append_line: a failed or short append is cut back to the size before
    log = tmp_path / "run.jsonl"
    real_write = os.write
    for code in (*ERRNOS, None):
        log.write_bytes(b'{"config": 1}\n')
        calls = {"n": 0}

        def partial(fd: int, data: bytes, _c: int | None = code, _calls: dict[str, int] = calls) -> int:
            _calls["n"] += 1
            if _calls["n"] == 1:
                return real_write(fd, bytes(data[:5]))  # a partial first write, then the failure
            if _c is None:
                return 0
            raise _fail(_c)

        with log.open("ab", buffering=0) as fh, monkeypatch.context() as m:
            m.setattr(atomic.os, "write", partial)
            with pytest.raises(OutputError, match=f"cannot write {log}: "):
                append_line(fh, log, json.dumps({"episode": 0, "state": list(range(50))}) + "\n")
        assert log.read_bytes() == b'{"config": 1}\n'
        tried += 1
    tally(tried)


def _fresh_outputs(folder: Path) -> None:
    """The pg folder ``D`` (for ``report``) from a normal run."""
    if not (folder / "D" / "results.csv").exists():
        assert run_main("pg", "ding-random:seed=10", "--iterations", "2", "--out", "D").returncode == 0


#: (argv, the files it writes): every kind of output of the command line (``--json`` where the
#: command would otherwise draw a progress bar on stderr)
#: about the size of a results folder's lock (pid, host, start time, command as one JSON line)
LOCK_BYTES = 90

WRITERS: tuple[tuple[list[str], list[str]], ...] = (
    (["learn", "m.npz", "--algo", "gmbl", "--samples-per-pair", "2", "--policy-out", "p.npy"], ["p.npy"]),
    (["learn", "m.npz", "--algo", "gmbl", "--samples-per-pair", "2", "--counts-out", "c.npz"], ["c.npz"]),
    ([*LOG, "--policy-out", "p.npy", "--counts-out", "c.npy"], ["p.npy", "c.npy"]),
    (["export", "garnet:S=12,seed=1", "g.npz"], ["g.npz"]),
    (
        ["pg", "ding-random:seed=10", "--iterations", "2", "--out", "P", "--json"],
        # the folder's configuration and lock are written first (the lock is removed again)
        ["P/config.toml", "P/.lock", "P/results.csv", "P/gap.png", "P/violation.png"],
    ),
    (["report", "D", "--force"], ["D/report.html"]),
    # a run log is held by its lock, F.lock, written first and removed at the end
    ([*ENV, "--run-log", "r.jsonl", "--figure", "f.png", "--json"], ["r.jsonl.lock", "r.jsonl", "f.png"]),
)


@pytest.mark.parametrize("code", ERRNOS, ids=[errno.errorcode[c] for c in ERRNOS])
def test_cli_write_errors_are_one_line(
    code: int, work: Path, monkeypatch: pytest.MonkeyPatch, tally: Callable[[int], None]
) -> None:
    """Every command's output with the disk failing as ``code`` (``os.fsync``, which every write
    reaches): exit 2, one line ``cannot write FILE: <reason>`` naming an output, no temporary file,
    no partial file (a run log is removed when its header could not be written)."""
    _fresh_outputs(work)
    picks = WRITERS if code == errno.ENOSPC else WRITERS[: cases(2, len(WRITERS))]
    for argv, outputs in picks:
        assert not any((work / name).exists() for name in outputs)
        with monkeypatch.context() as m:
            m.setattr(os, "fsync", lambda fd: (_ for _ in ()).throw(_fail(code)))
            proc = run_main(*argv)
        line = assert_one_line_refusal(proc)
        named, reason = line.split("cannot write ", 1)[1].rsplit(": ", 1)
        assert named in outputs and reason == os.strerror(code), line
        assert _leftovers(work) == []
        assert not any((work / name).exists() for name in outputs), "a partial output"
    tally(len(picks))


# --------------------------------------------------------------------------- a file-size limit

#: the limits of RLIMIT_FSIZE tried (bytes): nothing, a header, a small array, a figure
LIMITS = (0, 300, 2000, 20000)


@pytest.fixture(scope="module")
def reference(inputs: Path, tmp_path_factory: pytest.TempPathFactory) -> Callable[[int], Path]:
    """``reference(w)``: a folder where ``WRITERS[w]`` ran without a limit (its complete outputs),
    run on first use; each holds the inputs and a ``pg`` folder ``D`` (for ``report``)."""
    root = tmp_path_factory.mktemp("reference")
    assert cli("pg", "ding-random:seed=10", "--iterations", "2", "--out", "D", cwd=root).returncode == 0
    done: dict[int, Path] = {}

    def get(w: int) -> Path:
        if w not in done:
            folder = root / f"w{w}"
            folder.mkdir()
            for p in inputs.iterdir():
                shutil.copy(p, folder / p.name)
            shutil.copytree(root / "D", folder / "D")
            proc = cli(*WRITERS[w][0], cwd=folder)
            assert proc.returncode == EXIT_OK, proc.stderr
            done[w] = folder
        return done[w]

    return get


def _limit(n: int) -> Callable[[], None]:
    def set_limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (n, n))

    return set_limit


def _pairs() -> list[tuple[int, int]]:
    """(writer, limit) pairs, interleaved so that a sample covers several commands and limits."""
    return [(w, LIMITS[(w + k) % len(LIMITS)]) for k in range(len(LIMITS)) for w in range(len(WRITERS))]


def test_file_size_limit(
    reference: Callable[[int], Path], inputs: Path, tmp_path: Path, tally: Callable[[int], None]
) -> None:
    """The real ``cmdp-rl`` under ``RLIMIT_FSIZE`` (``ulimit -f``): a command whose output exceeds
    the limit exits 2 with one line ``cannot write FILE: File too large`` (it is not killed by
    ``SIGXFSZ``), leaves no temporary file, and every file it leaves is complete (byte for byte the
    unlimited run's; a run log: complete lines, a prefix of the unlimited log); a command whose
    outputs fit exits 0."""
    pairs = _pairs()[: cases(3, len(WRITERS) * len(LIMITS))]
    for w, n in pairs:
        argv, outputs = WRITERS[w]
        ref = reference(w)
        folder = tmp_path / f"w{w}-{n}"
        folder.mkdir()
        for p in inputs.iterdir():
            shutil.copy(p, folder / p.name)
        shutil.copytree(ref / "D", folder / "D")
        (folder / "D" / "report.html").unlink(missing_ok=True)  # report's output
        # a lock is removed when its run ends: its size is that of its one JSON line
        sizes = {name: (ref / name).stat().st_size if (ref / name).exists() else LOCK_BYTES for name in outputs}
        proc = cli(*argv, cwd=folder, preexec_fn=_limit(n), env={"PYTHONDONTWRITEBYTECODE": "1"})
        if max(sizes.values()) <= n:
            assert proc.returncode == EXIT_OK, (argv, n, proc.stderr[-1000:])
        else:
            line = assert_one_line_refusal(proc, EXIT_BAD_INPUT)
            named, reason = line.split("cannot write ", 1)[1].rsplit(": ", 1)
            assert reason == os.strerror(errno.EFBIG) and named in outputs and sizes[named] > n, (line, sizes)
        assert _leftovers(folder) == []
        for name in outputs:
            got = folder / name
            if not got.exists():
                continue
            if name.endswith(".lock"):
                raise AssertionError(f"{name} left behind")
            want = (ref / name).read_bytes()
            if name.endswith(".jsonl"):  # appended: complete lines only, a prefix of the whole log
                data = got.read_bytes()
                assert want.startswith(data) and (data == b"" or data.endswith(b"\n")), name
                assert all(json.loads(x) is not None for x in data.splitlines())
            else:
                assert got.read_bytes() == want, f"{name} is partial under a {n}-byte limit"
    tally(len(pairs))


def test_run_log_resumes_after_a_failed_append(
    work: Path, monkeypatch: pytest.MonkeyPatch, tally: Callable[[int], None]
) -> None:
    """A run log whose append fails at episode ``k`` keeps ``k`` complete episodes (exit 2, one
    line); rerunning the same command resumes from it and finishes with the same log as a run
    that never failed."""
    import cmdp_rl.plumbing.atomic as atomic

    run = [*ENV[:-2], "--episodes", "4"]
    argv = [*run, "--run-log", "r.jsonl", "--json"]
    assert run_main(*run, "--run-log", "whole.jsonl").returncode == 0
    whole = (work / "whole.jsonl").read_bytes()
    tried = 0
    for k in range(1, cases(2, 4) + 1):
        (work / "r.jsonl").unlink(missing_ok=True)
        calls = {"n": 0}

        def fsync(fd: int, _k: int = k, _calls: dict[str, int] = calls, _real: Any = os.fsync) -> None:
            _calls["n"] += 1
            if _calls["n"] > _k:  # the header and k - 1 episodes get through
                raise _fail(errno.ENOSPC)
            _real(fd)

        with monkeypatch.context() as m:
            m.setattr(atomic.os, "fsync", fsync)
            proc = run_main(*argv)
        line = assert_one_line_refusal(proc)
        assert line.endswith(f"cannot write r.jsonl: {os.strerror(errno.ENOSPC)}"), line
        part = (work / "r.jsonl").read_bytes()
        assert len(part.splitlines()) == k and whole.startswith(part)
        assert run_main(*argv).returncode == 0
        assert (work / "r.jsonl").read_bytes() == whole
        tried += 1
    tally(tried)
