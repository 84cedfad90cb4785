"""Helpers of the fault-injection suite: one module per defect class of the hardening issue.

Every module sets ``CLASS`` (the class's number and name, as the docs' reliability page shows
it) and drives the real ``cmdp-rl`` in subprocesses (``cli``, where the process is what is
tested: signals, the console script's exit, memory caps), in this process (``run_main``: the
same entry point, without a fresh interpreter's second of imports) or the public API. The number of
cases each test tries comes from ``cases``: a sample under ``make test``, the whole with
``CMDP_RL_FAULTS=full`` (``make faults``). Each test reports the cases it tried with the
``tally`` fixture (in ``tests/conftest.py``); with ``CMDP_RL_FAULTS_REPORT=FILE`` the session writes, per class, the
tests, the cases tried and the outcome to ``FILE`` (JSON), from which
``scripts/reliability_table.py`` writes the table of ``docs/reliability.md``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import signal
import subprocess
import sys
import tracemalloc
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

#: ``full`` runs every case (``make faults``); anything else a sample (``make test``)
FULL = os.environ.get("CMDP_RL_FAULTS", "") == "full"

#: the documented exit codes
EXIT_OK, EXIT_INFEASIBLE, EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_UNCERTIFIED = 0, 1, 2, 3, 4
EXIT_SIGINT, EXIT_SIGTERM, EXIT_BROKEN_PIPE = 130, 143, 141


def cases(sample: int, full: int) -> int:
    """How many cases a test tries: ``sample`` under ``make test``, ``full`` with ``CMDP_RL_FAULTS=full``."""
    return full if FULL else sample


def cli(
    *argv: str,
    cwd: Path | str | None = None,
    timeout: float = 300,
    env: dict[str, str] | None = None,
    preexec_fn: Callable[[], Any] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``cmdp-rl ARGV`` in a fresh interpreter; its exit code, stdout and stderr."""
    return subprocess.run(
        [sys.executable, "-m", "cmdp_rl", *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        env={**os.environ, "MPLBACKEND": "Agg", **(env or {})},
        preexec_fn=preexec_fn,
    )


#: the warning filters of a fresh interpreter (``python -c "import warnings; print(warnings.filters)"``):
#: ``run_main`` runs under them, not under pytest's (which shows every DeprecationWarning and
#: turns a RuntimeWarning into an error)
FRESH_FILTERS: tuple[tuple[str, type[Warning], str], ...] = (
    ("default", DeprecationWarning, "__main__"),
    ("ignore", DeprecationWarning, ""),
    ("ignore", PendingDeprecationWarning, ""),
    ("ignore", ImportWarning, ""),
    ("ignore", ResourceWarning, ""),
)


@contextlib.contextmanager
def _fresh_warnings() -> Iterator[None]:
    """The warning filters (and once-per-place registries) of a fresh interpreter, restored after."""
    with warnings.catch_warnings():
        warnings.resetwarnings()
        for action, category, module in reversed(FRESH_FILTERS):  # each insert goes first
            warnings.filterwarnings(action, category=category, module=module)
        yield


def run_main(*argv: str, cwd: Path | str | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``cmdp-rl ARGV`` in this process: ``cmdp_rl.cli.main``, the console script's entry point,
    in ``cwd``, with stdout and stderr captured and a fresh interpreter's warning filters; its exit
    code, stdout and stderr, as ``cli`` returns them. For what the process boundary is not part of
    (a refusal's line, a result's output, files written); signals, the console script's own exit,
    an import-time property or a memory cap need ``cli``."""
    from cmdp_rl.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.ExitStack() as stack:
        if cwd is not None:
            stack.enter_context(contextlib.chdir(cwd))
        stack.enter_context(_fresh_warnings())
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        code = main(list(argv))
    return subprocess.CompletedProcess(["cmdp-rl", *argv], code, out.getvalue(), err.getvalue())


#: the child of ``cli_batch``: each case through ``_batch_case``, its result as one marked JSON line
_BATCH = """
import json, sys
sys.path.insert(0, sys.argv[1])
from faultkit import _batch_case
for argv in json.loads(sys.argv[2]):
    print(sys.argv[3] + json.dumps(_batch_case(argv)), flush=True)
"""
_MARK = "faultkit-case: "


def _batch_case(argv: list[str]) -> tuple[int, str, str]:
    """In ``cli_batch``'s child: ``cmdp_rl.cli.main(argv)`` with file descriptors 1 and 2 sent to
    files (so what compiled code or a worker process prints is caught too, as a subprocess's
    pipes would), under a fresh interpreter's warning filters; its code, stdout and stderr."""
    import tempfile

    from cmdp_rl.cli import main

    saved = os.dup(1), os.dup(2)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, _fresh_warnings():
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            code = main(argv)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
        texts = []
        for fh in (out, err):
            fh.seek(0)
            texts.append(fh.read().decode(errors="replace"))
    os.close(saved[0])
    os.close(saved[1])
    return code, texts[0], texts[1]


def cli_batch(
    argvs: list[list[str]],
    cwd: Path | str | None = None,
    timeout: float = 300,
    env: dict[str, str] | None = None,
    preexec_fn: Callable[[], Any] | None = None,
) -> list[subprocess.CompletedProcess[str]]:
    """Run ``cmdp-rl ARGV`` for each of ``argvs`` in ONE fresh interpreter (``cmdp_rl.cli.main``
    there, one case after the other, in ``cwd``, its file descriptors 1 and 2 caught per case): a
    process per case would spend most of its time importing. For cases that need a process apart
    (a memory cap, this process kept clean, what compiled code prints) but not its exit; each
    result as ``cli`` returns it. ``subprocess.TimeoutExpired`` if the batch
    outlives ``timeout``; an assertion error if the child dies."""
    proc = subprocess.run(
        [sys.executable, "-c", _BATCH, str(Path(__file__).parent), json.dumps(argvs), _MARK],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        env={**os.environ, "MPLBACKEND": "Agg", **(env or {})},
        preexec_fn=preexec_fn,
    )
    rows = [json.loads(line[len(_MARK) :]) for line in proc.stdout.splitlines() if line.startswith(_MARK)]
    assert proc.returncode == 0 and len(rows) == len(argvs), (proc.returncode, proc.stderr[-2000:])
    return [subprocess.CompletedProcess(["cmdp-rl", *argv], *row) for argv, row in zip(argvs, rows, strict=True)]


def _default_sigint() -> None:
    """In the child: SIGINT as a terminal delivers it. A command started in the background of a
    non-interactive shell inherits SIGINT ignored, and the CLI keeps it ignored (as ``nohup``
    asks), so a test run from such a shell would see every SIGINT case time out."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def popen(*argv: str, cwd: Path | str | None = None, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """Start ``cmdp-rl ARGV`` (to signal it while it runs); stdout and stderr are pipes, SIGINT
    has its default disposition whatever this process inherited."""
    return subprocess.Popen(
        [sys.executable, "-m", "cmdp_rl", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env={**os.environ, "MPLBACKEND": "Agg", **(env or {})},
        preexec_fn=_default_sigint,
    )


def assert_one_line_refusal(proc: subprocess.CompletedProcess[str], code: int = EXIT_BAD_INPUT) -> str:
    """The documented refusal: exit ``code``, exactly one line on stderr, no traceback; returns the line."""
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == code, (proc.returncode, proc.stderr[-2000:])
    assert len(lines) == 1, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    return lines[0]


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes (to check that a refusal wrote nothing)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


#: the library's work, by module: building a model's arrays, planning, evaluating, sampling,
#: learning episodes, running a sweep's runs or the policy-gradient loop, certifying. A refusal
#: "before any work" enters none of them (``Work.assert_none``); each name must exist (a test
#: checks it), so that a module's move updates this list instead of silently emptying it.
WORK_MODULES = (
    "cmdp_rl.envs.generators",
    "cmdp_rl.planning",
    "cmdp_rl.evaluation.evaluate",
    "cmdp_rl.kernels.csr",
    "cmdp_rl.kernels.sampling",
    "cmdp_rl.certificates.certify",
    "cmdp_rl.certificates.safe",
    "cmdp_rl.learners.episodes",
    "cmdp_rl.learners.batched",
    "cmdp_rl.experiments.runner",
    "cmdp_rl.experiments.store",
    "cmdp_rl.simulators.process",
    "cmdp_rl.pg.methods",
)

#: "nothing allocated": the most a refusal may allocate (traced Python and NumPy memory, bytes);
#: every refused job here would need gigabytes, and a refusal needs well under a MiB of it
REFUSAL_BYTES = 16 * 2**20


@dataclass
class Work:
    """What a call did: the modules whose Python functions it entered (an import, the module's own
    code and what it calls, does not count), and its peak of traced memory (``tracemalloc``:
    Python objects and NumPy's arrays) above what was held before it."""

    modules: set[str] = field(default_factory=set)
    peak_bytes: int = 0
    #: the files (or ``.npz`` members) whose array data NumPy read (``numpy.lib.format.read_array``)
    read: set[str] = field(default_factory=set)

    def entered(self, prefix: str) -> list[str]:
        """The modules entered that are ``prefix`` or inside it."""
        return sorted(m for m in self.modules if m == prefix or m.startswith(prefix + "."))

    def assert_none(self, what: str, allow: tuple[str, ...] = (), max_bytes: int = REFUSAL_BYTES) -> None:
        """No work module entered (but those in ``allow``) and at most ``max_bytes`` allocated."""
        done = [m for p in WORK_MODULES if p not in allow for m in self.entered(p)]
        assert not done, f"{what}: refused only after work in {done}"
        assert self.peak_bytes <= max_bytes, f"{what}: allocated {self.peak_bytes / 2**20:.1f} MiB first"


def import_library() -> None:
    """Import every module of ``cmdp_rl`` (those an absent extra needs excepted): imports are not
    work, and their memory must not count as the watched call's."""
    import pkgutil

    import cmdp_rl

    for info in pkgutil.walk_packages(cmdp_rl.__path__, "cmdp_rl."):
        if info.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(info.name)
        except ImportError:
            pass


def work_done(call: Callable[[], Any]) -> tuple[Any, Work]:
    """Run ``call()`` watching what it does (``Work``): its result, or the exception it raised
    (returned, not raised), and the work. Not a timer: it records calls and memory, nothing
    that a busy machine changes."""
    import_library()
    work = Work()
    importing = [0]  # how many module bodies (imports) are running: what they call is not the call's work

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if frame.f_code.co_name == "<module>":
            importing[0] += {"call": 1, "return": -1}.get(event, 0)
            return
        if event == "call" and not importing[0]:
            module = frame.f_globals.get("__name__", "?")
            work.modules.add(module)
            if frame.f_code.co_name == "read_array" and module.startswith("numpy"):
                work.read.add(str(getattr(frame.f_locals.get("fp"), "name", "?")))

    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    old = sys.getprofile()
    sys.setprofile(profile)
    try:
        result: Any = call()
    except BaseException as exc:  # returned to the test, which checks it
        result = exc
    finally:
        sys.setprofile(old)
        work.peak_bytes = max(0, tracemalloc.get_traced_memory()[1] - before)
        if not was_tracing:
            tracemalloc.stop()
    return result, work


def missing_work_modules() -> list[str]:
    """The names of ``WORK_MODULES`` that no longer exist (a module moved: update the list)."""
    return [m for m in WORK_MODULES if importlib.util.find_spec(m) is None]


__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_BROKEN_PIPE",
    "EXIT_INFEASIBLE",
    "EXIT_INTERNAL",
    "EXIT_OK",
    "EXIT_SIGINT",
    "EXIT_SIGTERM",
    "EXIT_UNCERTIFIED",
    "FULL",
    "REFUSAL_BYTES",
    "ROOT",
    "WORK_MODULES",
    "Work",
    "assert_one_line_refusal",
    "cases",
    "cli",
    "cli_batch",
    "missing_work_modules",
    "popen",
    "run_main",
    "tree",
    "work_done",
]
