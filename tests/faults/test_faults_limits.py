"""Class 1: limits checked before the expensive work.

Every size and memory guard is estimated from the arguments (or a file's headers) before
anything is built, allocated or read: a far-too-large job is refused with exit 2 and one line
naming the argument (and ``--max-memory`` / ``--max-time`` where those raise the limit). Each
case runs the real ``cmdp-rl`` in a subprocess (address space capped, so a run of an unfixed
build cannot take the machine; a test's cases share one interpreter, its first case excepted,
run by the installed command) and then, once refused there, again in this process, watched
(``faultkit.work_done``): "before any work" is checked by what the refusal did, not by how long
it took (no model built, no planner, learner, sampler or run entered, nothing allocated, nothing
written); how long refusals take is measured in ``benchmarks/refusals.py``. Before this class
was fixed, a ``garnet:N=10**6`` or ``distinct:n=10**5`` build, ``learn --env`` with
``--episodes 10**12``, ``reproduce``/``study`` with ``--runs 10**9`` computed for minutes;
``learn --env --horizon 10**9``, ``pg --iterations 10**12``, ``frontier --points 10**9``, a
model file declaring huge arrays and ``import-gym --horizon 10**20`` ended in a MemoryError or
OverflowError (exit 3); a model file or a counts file beyond ``--max-memory`` was read whole.
"""

from __future__ import annotations

import io
import json
import os
import resource
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pytest
from faultkit import (
    EXIT_BAD_INPUT,
    REFUSAL_BYTES,
    ROOT,
    Work,
    assert_one_line_refusal,
    cases,
    cli,
    cli_batch,
    missing_work_modules,
    tree,
    work_done,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cmdp_rl.cli import main
from cmdp_rl.envs.registry import make
from cmdp_rl.plumbing.errors import CMDPInputError

CLASS = "1. Limits checked before the work"

#: address space of a subprocess: a build that was not refused fails fast instead of swapping
ADDRESS_SPACE = 10 * 2**30
#: a guard against a hang, not a bound: an unfixed run computes for minutes, and is stopped
#: after this many seconds (the test then fails); a refusal ends as soon as the interpreter has
#: started, whatever the machine's load
HANG = 300

BIG_H = str(10**20)  # beyond int64

#: work a refusal may do first, by command: ``certify`` builds the problem it names (garnet's
#: threshold is an exact plan) and evaluates the policy on it before it reads the counts' header
#: (a model within the limits: the refused file's data are still not read), and the memory that
#: work may take (garnet:S=400's 5 MiB kernel)
ALLOWED_BYTES = 64 * 2**20
ALLOWED_WORK = {
    "certify": ("cmdp_rl.envs.generators", "cmdp_rl.planning", "cmdp_rl.kernels.csr", "cmdp_rl.evaluation.evaluate"),
}

#: (argv, what the line names, the limit option it suggests or None); a registered problem beyond
#: the limits, refused from its parameters before it is built
REGISTRY: list[tuple[list[str], str, str | None]] = [
    (["export", "garnet:S=10000000", "OUT.npz"], "problem garnet:S=10000000", "--max-memory"),
    (["export", "garnet:N=1000000", "OUT.npz"], "problem garnet:N=1000000", "--max-memory"),
    (["export", "distinct:n=100000", "OUT.npz"], "problem distinct:n=100000", "--max-memory"),
    (["export", "copies:n=1000000", "OUT.npz"], "problem copies:n=1000000", "--max-memory"),
    (["export", "random:N=100000000", "OUT.npz"], "problem random:N=100000000", "--max-memory"),
    (["solve", "random:N=1000000", "--max-time", "10s"], "problem random:N=1000000", "--max-time"),
    (["export", "cliff-grid:width=100000,height=10000", "OUT.npz"], "problem cliff-grid", "--max-memory"),
    (["export", "ding-random:S=100000", "OUT.npz"], "problem ding-random:S=100000", "--max-memory"),
    (["export", "garnet:H=1000000000", "OUT.npz"], "problem garnet:H=1000000000", "--max-memory"),
    (["export", f"media-control:H={BIG_H}", "OUT.npz"], "media-control: parameter H", None),
    (["export", f"1a:H={BIG_H}", "OUT.npz"], "1a: parameter H", None),
    (["export", f"taxi-illegal:H={BIG_H}", "OUT.npz"], "taxi-illegal: parameter H", None),
    (["solve", "1a:H=1000000000"], "H", None),  # the horizon's own check: more than the machine has
    (["solve", "frozenlake8x8-hole:H=1000000000"], "H", None),
    (["solve", "garnet:S=200000", "--max-time", "1s"], "problem garnet:S=200000", "--max-time"),
]

#: a command whose budget (episodes, runs, iterations, points, horizon) is beyond the limits
BUDGETS: list[tuple[list[str], str, str | None]] = [
    (["learn", "1a", "--episodes", str(10**12)], "episodes", "--max-memory"),
    (["learn", "--env", "cmdp_rl/1a-v0", "--horizon", str(10**9), "--c-bar", "1", "--episodes", "2"],
     "horizon", "--max-memory"),
    (["learn", "--env", "cmdp_rl/1a-v0", "--horizon", "10", "--c-bar", "1", "--episodes", str(10**12)],
     "episodes", "--max-memory"),
    (["learn", "--env", "cmdp_rl/1a-v0", "--horizon", "10", "--c-bar", "1", "--episodes", str(10**7),
      "--max-time", "10s"], "episodes", "--max-time"),
    (["pg", "ding-random", "--iterations", str(10**12), "--out", "OUT"], "iterations", "--max-memory"),
    (["pg", "ding-random", "--samples", str(10**9), "--iterations", "2", "--out", "OUT"], "iterations/samples",
     "--max-memory"),
    (["pg", "ding-random", "--iterations", str(10**8), "--max-time", "60s", "--out", "OUT"], "iterations",
     "--max-"),
    (["frontier", "1a", "--points", str(10**9), "--out", "OUT"], "points", "--max-memory"),
    (["compare", "1a", "--algos", "plugin", "--episodes", str(10**12), "--out", "OUT"], "episodes/runs",
     "--max-memory"),
    (["compare", "1a", "--algos", "plugin", "--runs", str(10**9), "--out", "OUT"], "episodes/runs", "--max-time"),
    (["compare", "garnet:N=1000000", "--algos", "plugin", "--out", "OUT"], "problem garnet:N=1000000",
     "--max-memory"),
    (["reproduce", "--quick", "--runs", str(10**9), "--out", "OUT"], "episodes/runs", "--max-time"),
    (["study", "n-constraints", "--quick", "--runs", str(10**9), "--out", "OUT"], "runs (study)", "--max-time"),
    (["import-gym", "FrozenLake-v1", "--horizon", BIG_H, "--out", "OUT.npz"], "horizon", None),
    (["import-gym", "FrozenLake-v1", "--horizon", "10", "--out", "OUT.npz", "--max-memory", "10M", "--env-kwargs",
      json.dumps({"desc": ["S" + "F" * 59] + ["F" * 60] * 58 + ["F" * 59 + "G"]})], "env_kwargs: desc", "--max-memory"),
]  # fmt: skip


def _guard() -> None:
    """In the subprocess: cap the address space (an unfixed build fails instead of filling the machine)."""
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def test_the_work_modules_exist() -> None:
    """``faultkit.WORK_MODULES`` names modules that exist: a move of one of them must update the
    list, or the refusals below would be checked against nothing."""
    assert missing_work_modules() == []


@pytest.fixture(scope="module")
def warm() -> None:
    """Import what the commands import (an import is not work: the watch starts with them done)."""
    from cmdp_rl.simulators.blackbox import make_env

    make_env("cmdp_rl/1a-v0", None).close()  # registers the library's environments


def _refused(
    chosen: list[tuple[list[str], str, str | None]],
    work: Path,
    capsys: pytest.CaptureFixture[str],
) -> list[Work]:
    """Each ``cmdp-rl ARGV`` of ``chosen`` (``OUT`` -> a path in ``work``) is refused with one line
    naming its ``names`` (and ``option``), writing nothing: first in subprocesses (the installed
    command for the first case, one interpreter for the others: ``faultkit.cli_batch``), then,
    once refused there, in this process, where it enters no work module and allocates nothing;
    returns what each in-process refusal did."""
    argvs = [[str(work / a) if a.startswith("OUT") else a for a in argv] for argv, _, _ in chosen]
    for stale in work.glob("OUT*"):  # an in-process run refused before writing leaves nothing; be sure
        raise AssertionError(f"{stale} exists")
    before = tree(work)
    try:
        procs = [cli(*argvs[0], cwd=work, timeout=HANG, preexec_fn=_guard)]
        procs += cli_batch(argvs[1:], cwd=work, timeout=HANG, preexec_fn=_guard) if argvs[1:] else []
    except subprocess.TimeoutExpired:
        pytest.fail(f"cmdp-rl {argvs}: still working after {HANG} s (not all refused up front)")
    for argv, proc, (_, names, option) in zip(argvs, procs, chosen, strict=True):
        line = assert_one_line_refusal(proc)
        assert names in line, (argv, names, line)
        if option is not None:
            assert option in line, (argv, option, line)
    assert tree(work) == before, "a refused command wrote files"
    done_all = []
    for argv, (_, names, _) in zip(argvs, chosen, strict=True):
        capsys.readouterr()
        code, done = work_done(lambda argv=argv: main(argv))
        err = capsys.readouterr().err.strip().splitlines()
        assert code == EXIT_BAD_INPUT and err and names in err[-1], (argv, code, err)
        allow = ALLOWED_WORK.get(argv[0], ())
        done.assert_none(" ".join(argv), allow=allow, max_bytes=ALLOWED_BYTES if allow else REFUSAL_BYTES)
        assert tree(work) == before
        done_all.append(done)
    return done_all


def _sample(items: list[tuple[list[str], str, str | None]]) -> list[tuple[list[str], str, str | None]]:
    """Every case with ``CMDP_RL_FAULTS=full``; a spread sample otherwise (every third one)."""
    n = cases((len(items) + 2) // 3, len(items))
    step = len(items) / n
    return [items[int(i * step)] for i in range(n)]


def test_registered_problems_beyond_the_limits_are_refused_before_the_build(
    tmp_path: Path, warm: None, capsys: pytest.CaptureFixture[str], tally
) -> None:
    """Every family: sized ones from their parameters (the master LP of ``N`` constraints, the
    random family's threshold passes included), any family's size or horizon beyond int64."""
    chosen = _sample(REGISTRY)
    for (argv, names, _), done in zip(chosen, _refused(chosen, tmp_path, capsys), strict=True):
        if names != "H":  # refused from the parameters: no model built (the horizon's own check builds it)
            assert not done.entered("cmdp_rl.model.cmdp"), (argv, done.entered("cmdp_rl.model.cmdp"))
    tally(len(chosen))


def test_command_budgets_beyond_the_limits_are_refused_before_any_work(
    tmp_path: Path, warm: None, capsys: pytest.CaptureFixture[str], tally
) -> None:
    """Episodes, horizons, runs, iterations, rollouts and grid points, estimated from the arguments."""
    chosen = _sample(BUDGETS)
    for done in _refused(chosen, tmp_path, capsys):
        assert not done.entered("cmdp_rl.learners.episodes") and not done.entered("cmdp_rl.experiments.runner")
    tally(len(chosen))


def _npy_header_only(shape: tuple[int, ...], dtype: str = "<f8") -> bytes:
    """An ``.npy`` header declaring ``shape`` followed by no data."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": dtype, "fortran_order": False, "shape": shape})
    return buf.getvalue()  # the magic string and the header


def _npy_bytes(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def _huge_model_file(path: Path, compressed: bool) -> None:
    """A model file whose ``P`` member declares ``(10^5, 10, 10^5)`` float64 (8 TB); the other
    members are those of a real model."""
    S, A = 100_000, 10
    how = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED
    with zipfile.ZipFile(path, "w", how) as zf:
        zf.writestr("P.npy", _npy_header_only((S, A, S)))
        zf.writestr("r.npy", _npy_header_only((S, A)))
        zf.writestr("c.npy", _npy_header_only((1, S, A)))
        zf.writestr("c_bar.npy", _npy_bytes(np.array([1.0])))
        zf.writestr("s0.npy", _npy_bytes(np.array(0)))
        zf.writestr("H.npy", _npy_bytes(np.array(10)))


def test_files_are_checked_from_their_headers_before_their_data_are_read(
    tmp_path: Path, warm: None, capsys: pytest.CaptureFixture[str], tally
) -> None:
    """A model file (plain or compressed) declaring 8 TB of arrays; a real model file, and real
    counts, above ``--max-memory``; a policy or counts ``.npy`` declaring a huge array: refused
    from the zip directory and the ``.npy`` headers, nothing read or written."""
    _huge_model_file(tmp_path / "huge.npz", compressed=False)
    _huge_model_file(tmp_path / "huge-z.npz", compressed=True)
    assert main(["export", "garnet:S=400", str(tmp_path / "g400.npz")]) == 0  # dense: 5 MiB of kernel
    np.save(tmp_path / "counts400.npy", np.ones((400, 4, 400), dtype=np.int64))
    np.save(tmp_path / "pol400.npy", np.full((20, 400, 4), 0.25))
    (tmp_path / "huge-policy.npy").write_bytes(_npy_header_only((10**6, 10**6, 4)))
    (tmp_path / "huge-counts.npy").write_bytes(_npy_header_only((10**6, 4, 10**6), "<i8"))
    np.save(tmp_path / "pol1a.npy", np.full((10, 9, 4), 0.25))
    np.save(tmp_path / "counts1a.npy", np.ones((9, 4, 9), dtype=np.int64))
    capsys.readouterr()
    env = ["learn", "--env", "cmdp_rl/1a-v0", "--horizon", "10", "--c-bar", "1", "--episodes", "2", "--algo", "dope"]
    file_cases: list[tuple[list[str], str, str | None]] = [
        (["solve", "{w}/huge.npz"], "model file {w}/huge.npz", "--max-memory"),
        (["solve", "{w}/huge-z.npz"], "model file {w}/huge-z.npz", "--max-memory"),
        (["learn", "{w}/huge-z.npz", "--episodes", "2"], "model file {w}/huge-z.npz", "--max-memory"),
        (["solve", "{w}/g400.npz", "--max-memory", "4M"], "model file {w}/g400.npz", "--max-memory"),
        (["certify", "garnet:S=400", "--policy", "{w}/pol400.npy", "--counts", "{w}/counts400.npy", "--max-memory",
          "8M"], "counts: {w}/counts400.npy", "--max-memory"),
        (["certify", "1a", "--policy", "{w}/huge-policy.npy", "--counts", "{w}/counts1a.npy"],
         "policy: {w}/huge-policy.npy", "--max-memory"),
        (["certify", "1a", "--policy", "{w}/pol1a.npy", "--counts", "{w}/huge-counts.npy"],
         "counts: {w}/huge-counts.npy", "--max-memory"),
        ([*env, "--baseline", "{w}/huge-policy.npy", "--baseline-costs", "0.5"], "baseline: {w}/huge-policy.npy",
         "--max-memory"),
    ]  # fmt: skip
    chosen = file_cases if cases(0, 1) else [file_cases[i] for i in (0, 1, 3, 4, 6, 7)]
    chosen = [([a.format(w=tmp_path) for a in argv], n.format(w=tmp_path), option) for argv, n, option in chosen]
    for (_, names, _), done in zip(chosen, _refused(chosen, tmp_path, capsys), strict=True):
        refused_file = names.split()[-1]
        assert refused_file not in done.read and "P.npy" not in done.read, (refused_file, done.read)
    tally(len(chosen))


def _python(code: str, timeout: float = HANG) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter with the address space capped (and faultkit importable)."""
    try:
        return subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            capture_output=True,
            text=True,
            timeout=timeout,
            preexec_fn=_guard,
            env={
                **os.environ,
                "PYTHONPATH": os.pathsep.join([str(ROOT / "tests" / "faults"), os.environ.get("PYTHONPATH", "")]),
            },
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"still working after {timeout} s (not refused up front):\n{code}")


#: the probes' calls, run in a fresh interpreter by ``_watched``: each is refused
PROBES = {
    "frozenlake-desc": """
        from cmdp_rl.envs.gymnasium_import import from_gymnasium
        desc = ["S" + "F" * 4999] + ["F" * 5000] * 4998 + ["F" * 4999 + "G"]
        call = lambda: from_gymnasium("FrozenLake-v1", 10, desc=desc)
        """,
    "frozenlake-map": """
        from cmdp_rl.envs.gymnasium_import import from_gymnasium
        call = lambda: from_gymnasium("FrozenLake-v1", 10, map_name="100x100")
        """,
    "table-index": """
        import os, tempfile
        from cmdp_rl.model.tables import from_table
        path = os.path.join(tempfile.mkdtemp(), "t.csv")
        with open(path, "w") as fh:
            fh.write("state,action,next_state,prob\\n0,0,0,1.0\\n1000000000000,0,0,1.0\\n")
        call = lambda: from_table(path)
        """,
    "simulator": """
        from cmdp_rl import learn
        call = lambda: learn("cmdp_rl/1a-v0", H=10**9, c_bar=1.0, episodes=2)
        """,
}

#: what a probe runs after its set-up: the call watched, and what it did, as one JSON line
_WATCH = """
import json
from faultkit import work_done
exc, done = work_done(call)
print(json.dumps({"error": f"{type(exc).__name__} {exc}", "modules": sorted(done.modules), "peak": done.peak_bytes}))
"""


def _watched(names: list[str]) -> dict[str, tuple[str, Work]]:
    """The probes ``names``, one after the other in one fresh interpreter: the error each ended
    with and what it did (the set-up above each call, imports and the map's strings, is not
    watched; an import is not work, so what an earlier probe imported changes nothing)."""
    proc = _python("".join(textwrap.dedent(PROBES[name]) + _WATCH for name in names))
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0 and len(lines) == len(names), (names, proc.stderr[-1500:])
    outs = [json.loads(line) for line in lines]
    return {name: (out["error"], Work(set(out["modules"]), out["peak"])) for name, out in zip(names, outs, strict=True)}


def test_api_imports_and_tables_are_refused_from_their_sizes(tally) -> None:
    """The library's own entry points: a FrozenLake map of 25 million cells is refused before
    Gymnasium builds it, a transition table naming state 10^12 before any ``(S, A)`` array,
    ``learn`` on a simulator from ``H`` and ``episodes`` before the first ``reset``, and an
    unknown FrozenLake map is a one-line input error; each before any work."""
    expect = {
        "frozenlake-desc": "env_kwargs: desc",
        "frozenlake-map": "env_kwargs:",
        "table-index": "1,000,000,000,001 states and 1 actions make",
        "simulator": "H = 1,000,000,000",
    }
    names = list(PROBES) if cases(0, 1) else ["frozenlake-desc", "table-index", "simulator"]
    for name, (error, done) in _watched(names).items():
        assert error.startswith("CMDPInputError ") and expect[name] in error, (name, error)
        done.assert_none(name)
        if name == "frozenlake-desc":  # Gymnasium's FrozenLake not even imported, let alone built
            assert not done.entered("gymnasium.envs.toy_text.frozen_lake"), done.entered("gymnasium")
        if name == "simulator":  # the environment never made, reset or stepped
            assert not done.entered("cmdp_rl.envs.gym_env") and not done.entered("cmdp_rl.learners.environment")
            assert not done.entered("gymnasium.envs.registration"), done.entered("gymnasium")
    tally(len(names))


#: the families of a fixed size (their parameters and overrides change numbers, not sizes)
FIXED_SIZE = ["1a", "1b", "2", "media-control", "inventory", "factored", "frozenlake4x4-hole", "taxi-illegal"]
FIXED_SIZE += ["cliffwalking-cliff"]

#: a registered problem's parameters drawn far beyond any limit, per family
HUGE = st.one_of(
    st.builds(lambda S: f"garnet:S={S}", st.integers(10**5, 10**12)),
    st.builds(lambda N: f"garnet:N={N}", st.integers(10**5, 10**9)),
    st.builds(lambda H: f"garnet:H={H}", st.integers(10**7, 10**15)),
    st.builds(lambda S: f"random:S={S}", st.integers(10**5, 10**12)),
    st.builds(lambda N: f"random:N={N}", st.integers(10**5, 10**9)),
    st.builds(lambda k, v: f"{k}:n={v}", st.sampled_from(["copies", "distinct"]), st.integers(10**5, 10**9)),
    st.builds(lambda k, v: f"{k}:size={v}", st.sampled_from(["copies", "distinct"]), st.integers(10**3, 10**6)),
    st.builds(lambda k, v: f"{k}:H={v}", st.sampled_from(["copies", "distinct"]), st.integers(10**7, 10**15)),
    st.builds(lambda w: f"cliff-grid:width={w}", st.integers(10**5, 10**9)),
    st.builds(lambda S: f"ding-random:S={S}", st.integers(10**5, 10**9)),
    st.builds(lambda A: f"ding-random:A={A}", st.integers(10**6, 10**9)),
    st.builds(
        lambda name, H: f"{name}:H={H}",
        st.sampled_from(
            [
                "1a",
                "1b",
                "2",
                "media-control",
                "inventory",
                "factored",
                "frozenlake4x4-hole",
                "taxi-illegal",
                "cliffwalking-cliff",
            ]
        ),
        st.integers(2**63, 10**30),
    ),
)


@settings(max_examples=cases(25, 300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=HUGE)
def test_hypothesis_far_too_large_specs_are_refused_before_the_build(spec: str, warm: None, tally) -> None:
    """Hypothesis: any family with a parameter far beyond the limits (64 MiB, 5 s here), or a
    horizon beyond int64, is refused in ``make`` before any of its arrays is built (no model, no
    generator entered, nothing allocated), naming the spec or the parameter."""
    exc, done = work_done(lambda: make(spec, max_memory=64 * 2**20, max_seconds=5.0))
    assert isinstance(exc, CMDPInputError), (spec, exc)
    done.assert_none(spec)
    assert not done.entered("cmdp_rl.model.cmdp"), (spec, done.entered("cmdp_rl.model.cmdp"))
    text = str(exc)
    name, _, rest = spec.partition(":")
    param = rest.split("=")[0]
    assert f"problem {spec}" in text or f"{name}: parameter {param}" in text or text.startswith(f"{param}:"), text
    assert any(rule in text for rule in ("--max-memory", "--max-time", "2^63 - 1", "2**63 - 1", "machine has")), text
    tally(1)


def test_estimates_stay_honest_for_what_works(warm: None, tally) -> None:
    """The guards refuse nothing that runs within the default limits: the families at their
    defaults and at the sizes the studies use are built, and a long but feasible job is
    announced, not refused."""
    specs = ["garnet", "garnet:N=16", "random", "random:S=20000", "copies:n=64", "distinct:n=64", "cliff-grid",
             "ding-random", "media-control:H=1000", "1a:H=1000000", "frozenlake4x4-hole"]  # fmt: skip
    chosen = specs if cases(0, 1) else specs[::2]
    for spec in chosen:
        model = make(spec)
        assert model.S >= 1
    proc = cli(
        "learn",
        "--env",
        "cmdp_rl/1a-v0",
        "--horizon",
        "10",
        "--c-bar",
        "1",
        "--episodes",
        "3",
        "--json",
        "--deploy",
        "last",
    )
    assert proc.returncode == 0 and json.loads(proc.stdout)["episodes"] == 3, proc.stderr[-1500:]
    tally(len(chosen) + 1)
