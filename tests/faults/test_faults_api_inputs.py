"""Class 8 of the hardening issue: every public function validates its arguments with the one-line
``CMDPInputError`` of ``CMDP`` (naming the argument and the rule), never a ``TypeError``,
``ValueError`` or ``MemoryError`` from deep inside.

Two kinds of Hypothesis tests per function. *Chaos*: every argument drawn from small valid values
mixed with wrong kinds (strings, booleans, ``None``, objects), non-finite and denormal numbers,
integers beyond 64 bits, rewards and costs of any size and arrays of the wrong shape; whatever
is drawn, the call succeeds or raises ``CMDPInputError`` with one line (``name: rule``), never
another exception. *One bad argument*: valid arguments with one of them replaced by a value that
breaks its rule (an oracle): the call must be refused, and the message must name that argument. The
issue's own cases (``certify`` with rewards that are not finite, strings and ``H = 10**30``; a
next-state index that would make a 75 GB allocation) are refused before any large allocation
(``tracemalloc`` peak below 64 MiB).
"""

from __future__ import annotations

import inspect
import math
import re
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import is_dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from faultkit import cases
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cmdp_rl
from cmdp_rl import CMDP, CMDPInputError, certify, evaluate, make, random_cmdp, read_log, solve, solve_safe
from cmdp_rl.confidence.sample_size import bounds_report, gmbl_bounds, online_crl_bounds
from cmdp_rl.envs.generators import garnet
from cmdp_rl.learners import checkpoints
from cmdp_rl.model.table_rows import read_table
from cmdp_rl.model.tables import from_table

CLASS = "8. Unvalidated API inputs"

SETTINGS = settings(
    max_examples=cases(20, 300),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,
)

#: a message names the argument (or the file or table), then the rule: "name: rule" on one line
MESSAGE = re.compile(r"^[^\n]{1,160}?: \S[^\n]*$")

#: scalars of the wrong kind or outside every range
BAD_SCALARS: list[Any] = [
    None,
    True,
    False,
    "1",
    "x",
    b"1",
    math.nan,
    math.inf,
    -math.inf,
    5e-324,
    -1,
    0,
    1.5,
    10**30,
    2**63,
    2**62,
    -(2**63),
    1e308,
    [],
    [1, "a"],
    {},
    object(),
    np.float64(np.nan),
    np.bool_(True),
    np.int64(-3),
    1 + 2j,
]
#: numbers an array entry is replaced with
SPECIAL = [-1.0, 2.0, -0.0, np.nan, np.inf, -np.inf, 1e308, -1e-300, 5e-324, 1.0 + 1e-6]


def refused_or_ok(call: Callable[[], object]) -> str:
    """``"ok"`` or ``"refused: MESSAGE"`` (a one-line ``CMDPInputError``, ``name: rule``); any other
    exception propagates and fails the test."""
    try:
        call()
    except CMDPInputError as exc:
        msg = str(exc)
        assert MESSAGE.match(msg), msg
        return f"refused: {msg}"
    return "ok"


def one_bad(valid: dict[str, Any], bad: dict[str, list[Any]]) -> st.SearchStrategy[tuple[str | None, dict[str, Any]]]:
    """``(None, valid)``, or ``(name, valid with argument name replaced by one of bad[name])``."""
    parts: list[st.SearchStrategy[tuple[str | None, dict[str, Any]]]] = [st.just((None, dict(valid)))]
    for key, values in bad.items():
        parts.append(st.sampled_from(values).map(lambda v, key=key: (key, {**valid, key: v})))
    return st.one_of(*parts)


def check_one_bad(case: tuple[str | None, dict[str, Any]], call: Callable[..., object], names: dict[str, str]) -> None:
    """The valid call succeeds; with one bad argument it is refused naming it (``names``: other
    words a message may name it by, e.g. ``policy`` for an ``H`` that does not match the policy)."""
    name, kwargs = case
    outcome = refused_or_ok(lambda: call(**kwargs))
    if name is None:
        assert outcome == "ok", outcome
        return
    assert outcome.startswith("refused: "), (name, kwargs[name], outcome)
    head = outcome.removeprefix("refused: ").split(": ")[0]
    assert any(word in head for word in (name, *names.get(name, "").split())), (name, outcome)


def bad_arrays(base: np.ndarray, pokes: list[float]) -> list[Any]:
    """Always-invalid stand-ins for ``base``: the wrong kind, the wrong shape, and ``base`` with one
    entry set to each of ``pokes`` (numbers that break the argument's rule wherever they land)."""
    out: list[Any] = [base.astype(bool), base.astype(str), base[None], "x", None, True, object(), []]
    if base.shape[-1] > 1:  # a shorter last axis (a length-1 vector would stay valid)
        out.append(base[..., :1])
    if base.size > 1:  # a scalar (one threshold is a valid c_bar of length 1)
        out.append(5)
    listed = base.tolist()
    inner = listed
    while isinstance(inner[0], list):
        inner = inner[0]
    inner[0] = "0.5"
    out.append(listed)
    for k, v in enumerate(pokes):
        poked = base.astype(np.float64)
        poked.flat[k % base.size] = v
        out.append(poked)
    return out


@contextmanager
def small_allocations(limit: float = 64 * 2**20) -> Iterator[None]:
    """Fail when the block allocates more than ``limit`` bytes at its peak (NumPy reports to
    ``tracemalloc``): a refusal comes before the large array."""
    tracemalloc.start()
    try:
        yield
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < limit, f"peak allocation {peak / 2**20:.1f} MiB"


def variants(base: np.ndarray) -> st.SearchStrategy[Any]:
    """``base`` itself, with one entry replaced by a special number, as booleans, strings, a
    list, the wrong shape, float32, or a bad scalar."""
    index = st.tuples(*(st.integers(0, d - 1) for d in base.shape))

    def poke(i: tuple[int, ...], v: float) -> np.ndarray:
        out = base.astype(np.float64)  # a copy, able to hold the special numbers
        out[i] = v
        return out

    return st.one_of(
        st.just(base),
        st.just(base),
        st.builds(poke, index, st.sampled_from(SPECIAL)),
        st.just(base.astype(bool)),
        st.just(base.astype(str)),
        st.just(base.tolist()),
        st.just(base[..., :1]),
        st.just(base[None]),
        st.just(base.astype(np.float32)),
        st.just(base.astype(object)),
        st.sampled_from(BAD_SCALARS),
    )


def ints(valid: list[int]) -> st.SearchStrategy[Any]:
    """Small valid integers or a bad scalar (wrong kind, beyond 64 bits, negative...)."""
    return st.one_of(st.sampled_from(valid), st.sampled_from(valid), st.sampled_from(BAD_SCALARS))


def reals(valid: list[float]) -> st.SearchStrategy[Any]:
    return st.one_of(st.sampled_from(valid), st.sampled_from(valid), st.sampled_from(BAD_SCALARS + SPECIAL))


# a small valid model: S = 2, A = 2, N = 1, H = 3
S, A, H = 2, 2, 3
P0 = np.array([[[0.5, 0.5], [1.0, 0.0]], [[0.0, 1.0], [0.3, 0.7]]])
R0 = np.array([[0.1, 0.9], [0.4, 0.0]])
C0 = np.array([[[0.5, 0.2], [1.0, 0.0]]])
POL0 = np.full((H, S, A), 0.5)
COUNTS0 = np.array([[[3, 1], [0, 2]], [[1, 1], [4, 0]]])
MODEL0 = CMDP(P0, R0, C0, [1.0], 0, H)


# -- the public functions, drawn -----------------------------------------------------------------


@SETTINGS
@given(
    P=variants(P0),
    r=variants(R0),
    c=variants(C0),
    c_bar=variants(np.array([1.0])),
    s0=st.one_of(ints([0, 1]), variants(np.array([0.5, 0.5]))),
    H=st.one_of(ints([1, 3]), st.just(None)),
    gamma=st.one_of(st.just(None), reals([0.5, 0.9])),
)
def test_cmdp(P: Any, r: Any, c: Any, c_bar: Any, s0: Any, H: Any, gamma: Any, tally: Callable[[int], None]) -> None:
    refused_or_ok(lambda: CMDP(P, r, c, c_bar, s0, H, gamma))
    tally(1)


@SETTINGS
@given(
    policy=variants(POL0),
    counts=st.one_of(variants(COUNTS0), st.just(sp.csr_array(COUNTS0.reshape(S * A, S)))),
    r=variants(R0),
    c=variants(C0),
    c_bar=variants(np.array([1.0])),
    s0=ints([0, 1]),
    H=ints([3]),
    delta=reals([0.05, 0.5]),
    radius=st.sampled_from(["empirical-bernstein", "paper", "x", None, 1]),
    sampling=st.sampled_from(["adaptive", "fixed", "", 0]),
)
def test_certify(
    policy: Any,
    counts: Any,
    r: Any,
    c: Any,
    c_bar: Any,
    s0: Any,
    H: Any,
    delta: Any,
    radius: Any,
    sampling: Any,
    tally: Callable[[int], None],
) -> None:
    refused_or_ok(lambda: certify(policy, counts, r, c, c_bar, s0, H, delta, radius, sampling))
    tally(1)


@SETTINGS
@given(
    counts=st.one_of(variants(COUNTS0), st.just(sp.csr_array(COUNTS0.reshape(S * A, S)))),
    r=variants(R0),
    c=variants(C0),
    c_bar=variants(np.array([1.0])),
    s0=ints([0, 1]),
    H=ints([3]),
    delta=reals([0.05]),
    iterations=ints([2]),
)
def test_solve_safe(
    counts: Any, r: Any, c: Any, c_bar: Any, s0: Any, H: Any, delta: Any, iterations: Any, tally: Callable[[int], None]
) -> None:
    refused_or_ok(lambda: solve_safe(counts, r, c, c_bar, s0, H, delta=delta, iterations=iterations))
    tally(1)


@SETTINGS
@given(
    policy=variants(POL0),
    kernel=st.one_of(st.just(None), variants(P0)),
    method=st.sampled_from(["fast", "lp", "x", None]),
    gap_tol=st.one_of(st.just(None), reals([1e-6, 0.0])),
)
def test_evaluate_and_solve(policy: Any, kernel: Any, method: Any, gap_tol: Any, tally: Callable[[int], None]) -> None:
    refused_or_ok(lambda: evaluate(MODEL0, policy, kernel))
    refused_or_ok(lambda: solve(MODEL0, method, gap_tol=gap_tol))
    tally(2)


#: a cell of a transition table: valid indices and probabilities, and every kind of bad text
CELLS = st.sampled_from(
    ["0", "1", "0", "1", "0.5", "1.0", "", "x", "nan", "inf", "-1", "1e30", "10000000000", "9" * 30, "5e-324", "2"]
)


@SETTINGS
@given(
    rows=st.lists(st.tuples(CELLS, CELLS, CELLS, CELLS, CELLS), min_size=1, max_size=6),
    c_bar=variants(np.array([1.0])),
    s0=ints([0]),
    H=ints([1, 3]),
    sparse=st.sampled_from([None, True, False, "yes", 1]),
)
def test_tables(
    rows: list[tuple[str, ...]],
    c_bar: Any,
    s0: Any,
    H: Any,
    sparse: Any,
    tmp_path_factory: pytest.TempPathFactory,
    tally: Callable[[int], None],
) -> None:
    path = tmp_path_factory.mktemp("table") / "t.csv"
    header = "state,action,next_state,prob,reward"
    path.write_text("\n".join([header, *(",".join(row) for row in rows)]) + "\n")
    with small_allocations():
        refused_or_ok(lambda: read_table(path, sparse))
        refused_or_ok(lambda: from_table(path, None, s0, H, sparse=sparse))
    tally(2)


@SETTINGS
@given(
    rows=st.lists(st.tuples(CELLS, CELLS, CELLS, CELLS, CELLS), min_size=1, max_size=6),
    S_=ints([2, 3]),
    A_=ints([2]),
    H_=ints([3, 9]),
)
def test_read_log(
    rows: list[tuple[str, ...]],
    S_: Any,
    A_: Any,
    H_: Any,
    tmp_path_factory: pytest.TempPathFactory,
    tally: Callable[[int], None],
) -> None:
    path = tmp_path_factory.mktemp("log") / "log.csv"
    path.write_text("\n".join(["episode,step,state,action,next_state", *(",".join(row) for row in rows)]) + "\n")
    with small_allocations():
        refused_or_ok(lambda: read_log(path, S_, A_, H_))
    tally(1)


@SETTINGS
@given(
    S_=ints([1, 5]),
    A_=ints([1, 3]),
    H_=ints([3, 10]),
    N=ints([0, 2]),
    eps=reals([0.1, 0.5]),
    delta=reals([0.1, 0.01]),
)
def test_bounds(S_: Any, A_: Any, H_: Any, N: Any, eps: Any, delta: Any, tally: Callable[[int], None]) -> None:
    for f in (gmbl_bounds, online_crl_bounds, bounds_report):
        refused_or_ok(lambda f=f: f(S_, A_, H_, N, eps, delta))  # type: ignore[misc]
    tally(3)


@SETTINGS
@given(
    S_=ints([2, 3]),
    A_=ints([1, 2]),
    H_=ints([1, 3]),
    N=ints([0, 1]),
    rng=st.one_of(ints([0, 7]), st.just(None)),
    support=st.one_of(st.just(None), ints([1, 2])),
    slack=reals([0.5, -0.5, 1.0]),
    b=ints([1, 2]),
    f=reals([0.5, 0.0, 1.0]),
)
def test_generators(
    S_: Any, A_: Any, H_: Any, N: Any, rng: Any, support: Any, slack: Any, b: Any, f: Any, tally: Callable[[int], None]
) -> None:
    with small_allocations(256 * 2**20):
        refused_or_ok(lambda: random_cmdp(S_, A_, H_, N, rng, support=support, slack=slack))
        refused_or_ok(lambda: garnet(S_, A_, b, N if N != 0 else 1, f, H_, rng if rng is not None else 0))
    tally(2)


#: override values: valid ones, and every kind of bad text
VALUES = st.sampled_from(
    [
        "2",
        "3",
        "1",
        "0.5",
        "-0",
        "0",
        "-1",
        "3.0",
        "1e3",
        "nan",
        "inf",
        "5e-324",
        "1e400",
        "",
        "x",
        str(2**63),
        "9" * 30,
    ]
)


@SETTINGS
@given(
    name=st.sampled_from(["garnet", "random", "1a", "ding-random", "copies", "nope", ""]),
    keys=st.lists(
        st.sampled_from(["S", "A", "H", "N", "b", "f", "seed", "c_bar", "threshold", "gamma", "n", "zz"]), max_size=3
    ),
    values=st.lists(VALUES, min_size=3, max_size=3),
)
def test_make(name: str, keys: list[str], values: list[str], tally: Callable[[int], None]) -> None:
    spec = name + (
        ":" + ",".join(f"{k}={v}" for k, v in zip(dict.fromkeys(keys), values, strict=False)) if keys else ""
    )
    with small_allocations(512 * 2**20):
        refused_or_ok(lambda: make(spec))
    tally(1)


@SETTINGS
@given(
    K=ints([1, 5, 100]),
    points=ints([1, 3, 30]),
    constraint=ints([0]),
    grid=ints([2, 3]),
    gap_tol=st.one_of(st.just(None), reals([1e-6])),
)
def test_checkpoints_and_frontier(
    K: Any, points: Any, constraint: Any, grid: Any, gap_tol: Any, tally: Callable[[int], None]
) -> None:
    with small_allocations():
        refused_or_ok(lambda: checkpoints(K, points))
    refused_or_ok(lambda: cmdp_rl.frontier(MODEL0, constraint=constraint, points=grid, gap_tol=gap_tol))
    tally(2)


# -- one bad argument at a time: refused, and named ------------------------------------------------------

ONE_BAD = settings(
    max_examples=cases(60, 600),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=True,
)
#: entries that break a distribution (a kernel row, a policy row, a start distribution)
NOT_PROBABILITY = [-1.0, 2.0, math.nan, math.inf, -math.inf, 1e308, -1e-300]
#: entries no reward or cost can be (any finite number is one, in the user's units, unless a
#: return of H = 3 steps overflows)
NOT_UNIT = [math.nan, math.inf, -math.inf, 1e308, -1e308]
#: entries no count can be
NOT_COUNT = [-1.0, 0.5, math.nan, math.inf, -math.inf, 1e308, 2.0**60]
NOT_INDEX = [-1, 2, 1.5, None, True, "0", 10**30, 2**63, math.nan, math.inf, object(), [0.5, 0.6]]
NOT_POSITIVE_INT = [0, -1, 1.5, None, True, "3", 10**30, 2**63, math.nan, math.inf, object()]
NOT_PROBABILITY_SCALAR = [0, 0.0, 1, 1.0, -0.5, 1.5, math.nan, math.inf, 5e-324, "0.1", True, None, [0.1]]
NOT_THRESHOLD = [*bad_arrays(np.array([1.0]), [math.nan, math.inf, -math.inf]), [1.0, 1.0], ["1"]]


@ONE_BAD
@given(
    case=one_bad(
        dict(P=P0, r=R0, c=C0, c_bar=np.array([1.0]), s0=0, H=H, gamma=None),
        dict(
            P=bad_arrays(P0, NOT_PROBABILITY),
            r=bad_arrays(R0, NOT_UNIT),
            c=bad_arrays(C0, NOT_UNIT),
            c_bar=NOT_THRESHOLD,
            s0=NOT_INDEX + bad_arrays(np.array([0.5, 0.5]), NOT_PROBABILITY)[1:],
            H=[*NOT_POSITIVE_INT[1:], 2**62],
            gamma=[0.5, 0.0, 1.0, math.nan, "0.5", True],  # with H given: both is refused too
        ),
    )
)
def test_cmdp_one_bad_argument(case: tuple[str | None, dict[str, Any]], tally: Callable[[int], None]) -> None:
    check_one_bad(case, CMDP, {"gamma": "H", "H": "gamma"})
    tally(1)


CERTIFY_OK = dict(
    policy=POL0,
    counts=COUNTS0,
    r=R0,
    c=C0,
    c_bar=np.array([1.0]),
    s0=0,
    H=H,
    delta=0.05,
    radius="paper",
    sampling="fixed",
)
CERTIFY_BAD: dict[str, list[Any]] = dict(
    policy=bad_arrays(POL0, NOT_PROBABILITY),
    counts=bad_arrays(COUNTS0, NOT_COUNT),
    r=bad_arrays(R0, NOT_UNIT),
    c=bad_arrays(C0, NOT_UNIT),
    c_bar=NOT_THRESHOLD,
    s0=NOT_INDEX,
    H=[*NOT_POSITIVE_INT, 2, 2**62],
    delta=NOT_PROBABILITY_SCALAR,
    radius=["x", None, 1, ""],
    sampling=["x", None, 0],
)


@ONE_BAD
@given(case=one_bad(CERTIFY_OK, CERTIFY_BAD))
def test_certify_one_bad_argument(case: tuple[str | None, dict[str, Any]], tally: Callable[[int], None]) -> None:
    # an H that does not match the policy is named by the policy's shape; counts of the wrong
    # shape by the rewards' shape they imply
    check_one_bad(case, certify, {"H": "policy", "counts": "r"})
    tally(1)


@ONE_BAD
@given(
    case=one_bad(
        {k: v for k, v in CERTIFY_OK.items() if k != "policy"} | {"iterations": 3},
        {k: v for k, v in CERTIFY_BAD.items() if k != "policy"}
        | {
            "iterations": NOT_POSITIVE_INT,
            "c": [*bad_arrays(C0, NOT_UNIT), np.zeros((0, S, A))],
            "H": [*NOT_POSITIVE_INT, 2**62],  # no policy here: any other H is valid
        },
    )
)
def test_solve_safe_one_bad_argument(case: tuple[str | None, dict[str, Any]], tally: Callable[[int], None]) -> None:
    check_one_bad(case, solve_safe, {"counts": "r", "H": "policy"})
    tally(1)


@ONE_BAD
@given(
    case=one_bad(
        dict(policy=POL0, kernel=None),
        dict(
            policy=bad_arrays(POL0, NOT_PROBABILITY),
            kernel=[k for k in bad_arrays(P0, NOT_PROBABILITY) if k is not None],
        ),
    ),
    solve_case=one_bad(
        dict(method="fast", gap_tol=None),
        dict(method=["x", None, 1], gap_tol=[-1.0, math.nan, math.inf, "1", True, [0.1]]),
    ),
)
def test_evaluate_and_solve_one_bad_argument(
    case: tuple[str | None, dict[str, Any]], solve_case: tuple[str | None, dict[str, Any]], tally: Callable[[int], None]
) -> None:
    check_one_bad(case, lambda **kw: evaluate(MODEL0, **kw), {})
    check_one_bad(solve_case, lambda **kw: solve(MODEL0, **kw), {})
    tally(2)


@ONE_BAD
@given(
    case=one_bad(
        dict(S=2, A=2, H=3),
        dict(S=[*NOT_POSITIVE_INT, 10**10], A=NOT_POSITIVE_INT, H=NOT_POSITIVE_INT),
    )
)
def test_read_log_one_bad_argument(
    case: tuple[str | None, dict[str, Any]], tmp_path_factory: pytest.TempPathFactory, tally: Callable[[int], None]
) -> None:
    path = tmp_path_factory.mktemp("log") / "log.csv"
    path.write_text("episode,step,state,action,next_state\n0,0,0,0,1\n0,1,1,1,0\n")
    with small_allocations():
        check_one_bad(case, lambda **kw: read_log(path, kw["S"], kw["A"], kw["H"]), {})
    tally(1)


@ONE_BAD
@given(
    case=one_bad(
        dict(S=3, A=2, H=5, N=1, eps=0.1, delta=0.1),
        dict(
            S=NOT_POSITIVE_INT,
            A=NOT_POSITIVE_INT,
            H=NOT_POSITIVE_INT,
            N=[-1, 1.5, None, True, "1", 10**30],
            eps=NOT_PROBABILITY_SCALAR,
            delta=NOT_PROBABILITY_SCALAR,
        ),
    )
)
def test_bounds_one_bad_argument(case: tuple[str | None, dict[str, Any]], tally: Callable[[int], None]) -> None:
    words = {"S": "states", "A": "actions", "H": "horizon", "N": "constraints"}
    for f in (gmbl_bounds, online_crl_bounds, bounds_report):
        check_one_bad(case, lambda f=f, **kw: f(kw["S"], kw["A"], kw["H"], kw["N"], kw["eps"], kw["delta"]), words)
    tally(3)


@ONE_BAD
@given(
    case=one_bad(
        dict(S=3, A=2, H=3, N=1, seed=0, support=None, slack=0.5),
        dict(
            S=NOT_POSITIVE_INT,
            A=NOT_POSITIVE_INT,
            H=NOT_POSITIVE_INT,
            N=[-1, 1.5, None, True, "1", 10**30],
            seed=["x", -1, 1.5, True, 10**30, object()],
            support=[0, -1, 1.5, True, "2", 10**30],
            slack=[1.5, math.nan, math.inf, "0.5", True, None],
        ),
    ),
    garnet_case=one_bad(
        dict(S=3, A=2, b=2, N=1, f=0.5, H=3, seed=0),
        dict(
            S=NOT_POSITIVE_INT,
            A=NOT_POSITIVE_INT,
            b=[*NOT_POSITIVE_INT, 4],
            N=NOT_POSITIVE_INT,
            f=[-0.1, 1.1, math.nan, math.inf, "0.5", True, None],
            H=NOT_POSITIVE_INT,
            seed=[-1, 1.5, True, 10**30, "1", None],
        ),
    ),
)
def test_generators_one_bad_argument(
    case: tuple[str | None, dict[str, Any]],
    garnet_case: tuple[str | None, dict[str, Any]],
    tally: Callable[[int], None],
) -> None:
    with small_allocations(256 * 2**20):
        check_one_bad(case, random_cmdp, {"S": "S, A, H", "A": "S, A, H", "H": "S, A, H"})
        check_one_bad(garnet_case, garnet, {"S": "S, A, b", "A": "S, A, b", "H": "S, A, b, H", "b": "S, A, b"})
    tally(2)


@ONE_BAD
@given(
    case=one_bad(dict(K=50, points=5), dict(K=NOT_POSITIVE_INT, points=NOT_POSITIVE_INT)),
    frontier_case=one_bad(
        dict(constraint=0, points=3, gap_tol=None),
        dict(
            constraint=[-1, 1, 1.5, True, "0", 10**30, None],
            points=[1, 0, -1, 1.5, True, "3", 10**30, 2**62],
            gap_tol=[-1.0, math.nan, math.inf, "1", True],
        ),
    ),
)
def test_checkpoints_and_frontier_one_bad_argument(
    case: tuple[str | None, dict[str, Any]],
    frontier_case: tuple[str | None, dict[str, Any]],
    tally: Callable[[int], None],
) -> None:
    with small_allocations():
        check_one_bad(case, checkpoints, {})
    check_one_bad(frontier_case, lambda **kw: cmdp_rl.frontier(MODEL0, **kw), {})
    tally(2)


#: problem specs no registered problem takes
BAD_SPECS = [
    "",
    ":S=2",
    "nope",
    "garnet:S",
    "garnet:S=",
    "garnet:zz=1",
    "garnet:S=1e3",
    "garnet:S=3.0",
    f"garnet:S={2**63}",
    "garnet:S=0",
    "garnet:f=nan",
    "garnet:f=5e-324",
    "garnet:f=2",
    "garnet:seed=-1",
    "garnet:S=2,S=3",
    "1a:c_bar=nan",
    "1a:c_bar=1e400",
    "1a:c_bar=1/2",
    "1a:H=0",
    f"1a:H={2**63}",
    "ding-random:gamma=1",
    "ding-random:gamma=-0",
    "ding-random:S=0",
    f"garnet:S={10**9}",
]


def test_make_refuses_bad_specs(tally: Callable[[int], None]) -> None:
    """Each bad spec: one line, before anything large is built."""
    for spec in BAD_SPECS:
        with small_allocations():
            outcome = refused_or_ok(lambda spec=spec: make(spec))  # type: ignore[misc]
        assert outcome.startswith("refused: "), (spec, outcome)
    tally(len(BAD_SPECS))


# -- every public name, and the issue's own cases ----------------------------------------------------


def _public_callables() -> list[tuple[str, Callable[..., Any]]]:
    """The callables of ``cmdp_rl.__all__`` that validate arguments (not the exceptions, not the
    result records)."""
    out = []
    for name in cmdp_rl.__all__:
        obj = getattr(cmdp_rl, name)
        if not callable(obj) or inspect.ismodule(obj):
            continue
        if isinstance(obj, type) and (issubclass(obj, BaseException) or (is_dataclass(obj) and name != "Scorer")):
            continue
        out.append((name, obj))
    return out


def test_every_public_function_refuses_arguments_of_the_wrong_kind(tally: Callable[[int], None]) -> None:
    """Each public function (and class) of ``cmdp_rl`` called with every required argument set to a
    string, None, a boolean, nan, 10**30, -1, a list mixing kinds or an object: a one-line
    ``CMDPInputError`` (a ``CMDPTypeError`` is one) and nothing else."""
    n = 0
    funcs = _public_callables()
    assert len(funcs) >= 15, [name for name, _ in funcs]
    for name, f in funcs:
        sig = inspect.signature(f)
        params = [p for p in sig.parameters.values() if p.default is p.empty]
        if not params:  # nothing required to set to a wrong kind (e.g. get_threads())
            continue
        for bad in ["x", None, True, math.nan, 10**30, -1, [1, "a"], object()]:
            pos = [bad for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            kw = {p.name: bad for p in params if p.kind == p.KEYWORD_ONLY}
            assert refused_or_ok(lambda: f(*pos, **kw)).startswith("refused: "), (name, bad)  # noqa: B023
            n += 1
    tally(n)


def test_certify_refuses_the_issues_inputs(tally: Callable[[int], None]) -> None:
    """Rewards and costs that are not finite (any finite ones are in the user's units), strings,
    H = 10**30: refused, naming the argument."""
    cases_ = [
        (dict(r=R0 + math.inf), "r["),
        (dict(r=R0 * math.nan), "r["),
        (dict(r=R0 * 1e308), "r:"),
        (dict(c=C0 - math.inf), "c["),
        (dict(r=R0.astype(str)), "r:"),
        (dict(r="abc"), "r:"),
        (dict(c=[[["x", 0.1], [0.2, 0.3]], [[0.1, 0.1], [0.1, 0.1]]]), "c:"),
        (dict(c_bar=["1"]), "c_bar:"),
        (dict(H=10**30), "H:"),
        (dict(H=1e30), "H:"),
        (dict(H=True), "H:"),
        (dict(s0="0"), "s0:"),
        (dict(delta=5e-324), "delta:"),
        (dict(counts=COUNTS0 * 2**60), "counts["),
        (dict(counts=COUNTS0.astype(bool)), "counts:"),
        (dict(policy=POL0.astype(bool)), "policy:"),
    ]
    base = dict(policy=POL0, counts=COUNTS0, r=R0, c=C0, c_bar=[1.0], s0=0, H=H)
    for change, name in cases_:
        with pytest.raises(CMDPInputError) as ex:
            certify(**{**base, **change})  # type: ignore[arg-type]
        assert str(ex.value).startswith(name), (change, str(ex.value))
        assert MESSAGE.match(str(ex.value))
    tally(len(cases_))


def test_huge_indices_are_refused_before_allocating(tmp_path: Path, tally: Callable[[int], None]) -> None:
    """A next-state index of 10**10 (a 75 GB array of row pointers) in a table, sparse counts, a
    sparse kernel or a log's state count: one line, and the peak allocation stays small."""
    table = tmp_path / "t.csv"
    table.write_text("state,action,next_state,prob\n0,0,0,0.5\n0,0,10000000000,0.5\n")
    huge = sp.coo_array(([1.0], ([0], [10**10 - 1])), shape=(2 * 10**10, 10**10))
    kernel = sp.coo_array(([1.0], ([0], [10**10])), shape=(10**10 + 1, 10**10 + 1))
    log = tmp_path / "log.csv"
    log.write_text("episode,step,state,action,next_state\n0,0,0,0,0\n")
    calls: list[tuple[Callable[[], object], str]] = [
        (lambda: from_table(table), "table"),  # "table FILE: ..." names the file
        (lambda: read_table(table), "table"),  # "table FILE: ..." names the file
        (lambda: certify(POL0, huge, R0, C0, [1.0], 0, H), "r:"),
        (lambda: solve_safe(huge, R0, C0, [1.0], 0, H), "r:"),
        (lambda: CMDP(kernel, np.zeros((10, 1)), None, None, 0, H), "P:"),
        (lambda: read_log(log, 10**10, 2, 3), "S:"),
        (lambda: CMDP(P0, R0, C0, [1.0], 0, 2**62), "H:"),
        (lambda: checkpoints(2**62, 2**62), "points:"),
        (lambda: random_cmdp(10**6, 10**3, 3), "S, A, H:"),
    ]
    for call, name in calls:
        with small_allocations(), pytest.raises(CMDPInputError) as ex:
            call()
        assert str(ex.value).startswith(name), str(ex.value)
        assert MESSAGE.match(str(ex.value))
    tally(len(calls))


def test_type_errors_stay_type_errors(tally: Callable[[int], None]) -> None:
    """An argument of the wrong kind raises ``CMDPTypeError``: a ``CMDPInputError`` for the new
    rule, and still a ``TypeError`` for code written against the old one."""
    from cmdp_rl.plumbing.errors import CMDPTypeError

    for call in (lambda: solve("x"), lambda: evaluate("x", POL0), lambda: cmdp_rl.pg.methods.run("x", "crpo", 1)):
        with pytest.raises(CMDPTypeError) as ex:
            call()
        assert isinstance(ex.value, TypeError) and isinstance(ex.value, CMDPInputError)
    tally(3)
