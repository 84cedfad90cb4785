"""Shared helpers of the benchmark suite: timing, tables, result files and instances.

* :func:`measure` times a callable with pytest-benchmark's timer and statistics
  (repeated, garbage collected between repeats, with a time budget) and returns a
  :class:`Measurement` whose :attr:`~Measurement.median` is what the tables report.
* Results are written only from a clean tree (no change to tracked files under ``src/``
  or ``benchmarks/``), unless ``python -m benchmarks --allow-dirty`` says otherwise.
* :class:`Table` prints aligned tables and writes them as JSON and CSV into
  ``benchmarks/results/`` (``<name>.json``/``.csv``; ``<name>-quick.*`` for ``--quick``).
* :class:`ELPInstance`, :func:`scenario_instance` and :func:`random_instance`
  build extended-LP inputs from a realistic Online-CRL state: counts ``C``, the
  plan on ``C`` (to warm-start from) and the counts ``C'`` after one more
  episode played with that plan. Every solver is timed on ``C'``.
"""

from __future__ import annotations

import csv
import datetime as _dt
import gc
import json
import math
import os
import platform
import subprocess
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np
from numpy.typing import NDArray
from pytest_benchmark.stats import Stats
from pytest_benchmark.timers import default_timer
from tabulate import tabulate

from cmdp_rl.confidence.radii import confidence_set, delta_1
from cmdp_rl.envs.generators import random_cmdp
from cmdp_rl.envs.scenarios import scenario_cmdp
from cmdp_rl.learners import EpisodicEnv, OnlineCRL
from cmdp_rl.learners.episodes import play_episodes
from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.planning.elp import solve_elp
from cmdp_rl.planning.result import PlanResult

T = TypeVar("T")
Array = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: where tables are written (committed with the code)
RESULTS_DIR = Path(__file__).resolve().parent / "results"
#: Online-CRL's failure probability in every instance
DELTA = 0.1
#: budget-mode episode count entering Online-CRL's union bound (``U``) and ``delta_1``
BUDGET_EPISODES = 10_000
#: episodes of Online-CRL played to reach a realistic state on the scenarios
SCENARIO_EPISODES = 200
#: the paper's scenarios
SCENARIOS = ("1a", "1b", "2")


# --------------------------------------------------------------------------- timing


@dataclass
class Measurement(Generic[T]):
    """Wall times of repeated calls of one callable, with pytest-benchmark's statistics.

    Attributes:
        stats: a ``pytest_benchmark.stats.Stats`` over the timed calls (seconds).
        result: the return value of the last call.
    """

    stats: Stats
    result: T

    @property
    def times(self) -> list[float]:
        """Seconds per call, in call order."""
        return list(self.stats.data)

    @property
    def median(self) -> float:
        """Median wall time in seconds."""
        return float(self.stats.median)

    @property
    def n(self) -> int:
        """Number of timed calls."""
        return int(self.stats.rounds)


def measure(
    fn: Callable[[], T], reps: int, *, min_reps: int = 1, budget: float | None = None, warmup: int = 0
) -> Measurement[T]:
    """Time ``fn()`` up to ``reps`` times with pytest-benchmark's timer (fewer if the budget runs out).

    Args:
        fn: the call to time (its result is kept from the last call).
        reps: maximum number of timed calls.
        min_reps: calls made even when the budget is exhausted.
        budget: stop repeating once the timed calls have taken this many seconds.
        warmup: untimed calls made first (caches, lazy imports).

    Returns:
        The :class:`Measurement`; the garbage collector runs (untimed) before each call.
    """
    for _ in range(warmup):
        fn()
    stats = Stats()
    result: Any = None
    total = 0.0
    while len(stats.data) < max(reps, 1):  # Stats' summaries are cached properties: read them only at the end
        gc.collect()
        t0 = default_timer()
        result = fn()
        dt = default_timer() - t0
        stats.update(dt)
        total += dt
        if budget is not None and len(stats.data) >= min_reps and total >= budget:
            break
    return Measurement(stats, result)


@dataclass
class GrowthEstimator:
    """Predicts a solver's time on a bigger instance from the ones measured so far.

    Fits ``log t = k log size + b`` by least squares over the measured points and
    extrapolates from each of them with ``k`` at least ``min_exponent`` (one point
    only: ``k = min_exponent``); the prediction is the largest of these
    extrapolations. Used to skip solves expected to exceed a limit.
    """

    min_exponent: float = 1.5
    sizes: list[float] = field(default_factory=list)
    times: list[float] = field(default_factory=list)

    def add(self, size: float, seconds: float) -> None:
        """Record a measured median time at ``size``."""
        self.sizes.append(float(size))
        self.times.append(float(seconds))

    def predict(self, size: float) -> float:
        """Predicted seconds at ``size`` (0 when nothing was measured yet)."""
        if not self.sizes:
            return 0.0
        k = self.min_exponent
        if len(set(self.sizes)) >= 2:
            k = max(k, fit_exponent(self.sizes, self.times))
        return float(max(t * (float(size) / n) ** k for n, t in zip(self.sizes, self.times, strict=True)))


def fit_exponent(sizes: Sequence[float], values: Sequence[float]) -> float:
    """Least-squares slope of ``log value`` against ``log size``."""
    x = np.log(np.asarray(sizes, dtype=float))
    y = np.log(np.asarray(values, dtype=float))
    return float(np.polyfit(x, y, 1)[0])


def rel_diff(value: float, reference: float) -> float:
    """``|value - reference| / max(|reference|, 1e-12)``."""
    return abs(value - reference) / max(abs(reference), 1e-12)


# --------------------------------------------------------------------------- formatting


def fmt_time(seconds: float | None) -> str:
    """``12.3 ms``-style wall time (``-`` when missing)."""
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} us"
    if seconds < 1.0:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds:.3g} s"


def fmt_ratio(ratio: float | None) -> str:
    """``123x``-style ratio (``-`` when missing)."""
    if ratio is None or (isinstance(ratio, float) and math.isnan(ratio)):
        return "-"
    return f"{ratio:.0f}x" if ratio >= 100 else f"{ratio:.3g}x"


def fmt_sci(x: float | None) -> str:
    """``1.2e-09``-style number (``-`` when missing)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.1e}"


def fmt_float(x: float | None, digits: int = 4) -> str:
    """A float with ``digits`` significant digits (``-`` when missing)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.{digits}g}"


def fmt_mb(nbytes: float | None) -> str:
    """Bytes as ``12.3 MB`` or ``1.23 GB`` (``-`` when missing)."""
    if nbytes is None:
        return "-"
    if nbytes >= 2**30:
        return f"{nbytes / 2**30:.3g} GB"
    return f"{nbytes / 2**20:.3g} MB"


def ratio(num: float | None, den: float | None) -> float | None:
    """``num / den`` when both are positive numbers, else ``None``."""
    if not isinstance(num, (int, float)) or not isinstance(den, (int, float)) or den <= 0:
        return None
    return float(num) / float(den)


# --------------------------------------------------------------------------- tables


@dataclass(frozen=True)
class Col:
    """One printed column: row key, header, formatter (strings print as they are), alignment."""

    key: str
    header: str
    fmt: Callable[[Any], str] = str
    left: bool = False


class Table:
    """An aligned text table whose raw rows are saved as JSON and CSV.

    Args:
        name: file stem in ``benchmarks/results/``.
        title: printed above the table.
        columns: the printed columns; rows may carry further raw keys (saved, not printed).
        notes: lines printed under the table and saved with it.
    """

    def __init__(self, name: str, title: str, columns: Sequence[Col], notes: Iterable[str] = ()) -> None:
        self.name, self.title = name, title
        self.columns = list(columns)
        self.notes = list(notes)
        self.rows: list[dict[str, Any]] = []

    def add(self, **row: Any) -> None:
        """Append a row (values: numbers, strings such as ``"skipped (>60 s)"``, or ``None``)."""
        self.rows.append(row)

    def _cell(self, col: Col, row: dict[str, Any]) -> str:
        value = row.get(col.key)
        if isinstance(value, str):
            return value
        return col.fmt(value) if value is not None else "-"

    def render(self) -> str:
        """The table as text (tabulate; first and ``left`` columns left-aligned, the rest right)."""
        cells = [[self._cell(c, row) for c in self.columns] for row in self.rows]
        align = ["left" if j == 0 or c.left else "right" for j, c in enumerate(self.columns)]
        body = tabulate(cells, headers=[c.header for c in self.columns], colalign=align, disable_numparse=True)
        return "\n".join([self.title, body, *[f"  {n}" for n in self.notes]])

    def print(self) -> None:
        """Print :meth:`render` followed by a blank line."""
        print(self.render(), end="\n\n", flush=True)

    def save(self, quick: bool, params: dict[str, Any] | None = None) -> tuple[Path, Path]:
        """Write ``<name>[-quick].json`` (meta, notes, rows) and ``.csv`` (rows) to the results.

        Raises:
            DirtyTree: the source tree has uncommitted changes and ``ALLOW_DIRTY`` is off.
        """
        check_clean_tree()
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        stem = self.name + ("-quick" if quick else "")
        keys: list[str] = []
        for row in self.rows:
            keys += [k for k in row if k not in keys]
        payload = {
            "benchmark": self.name,
            "title": self.title,
            "meta": run_metadata(quick),
            "params": params or {},
            "notes": self.notes,
            "columns": [{"key": c.key, "header": c.header} for c in self.columns],
            "rows": [{k: _jsonable(v) for k, v in row.items()} for row in self.rows],
        }
        jpath, cpath = RESULTS_DIR / f"{stem}.json", RESULTS_DIR / f"{stem}.csv"
        jpath.write_text(json.dumps(payload, indent=2) + "\n")
        with cpath.open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=keys)
            writer.writeheader()
            for row in self.rows:
                writer.writerow({k: _jsonable(row.get(k)) for k in keys})
        return jpath, cpath


def _jsonable(v: Any) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return v


def run_metadata(quick: bool) -> dict[str, Any]:
    """Machine, library versions and git state recorded with every table; ``load_average`` is the
    1-minute load average when the table is written (the benchmark's own work included)."""
    import scipy

    root = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    return {
        "date": _dt.datetime.now().isoformat(timespec="seconds"),
        "quick": quick,
        "host": platform.node(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "git_commit": git("rev-parse", "HEAD"),
        "src_modified": bool(_dirty_files()),
        "load_average": load_average(),
    }


def load_average() -> float | None:
    """The 1-minute load average (``None`` where the platform has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


#: the wall time of every benchmark's last run (``python -m benchmarks`` merges into it)
WALL_FILE = RESULTS_DIR / "wall.json"


def record_wall_time(name: str, seconds: float, quick: bool, load_before: float | None) -> None:
    """Merge one benchmark's wall time (with the machine, the load average before it and the git
    state) into :data:`WALL_FILE` under ``name`` (``name-quick`` for ``--quick``)."""
    check_clean_tree()
    data = json.loads(WALL_FILE.read_text()) if WALL_FILE.exists() else {}
    data[f"{name}-quick" if quick else name] = {
        "seconds": round(seconds, 1),
        "load_before": load_before,
        "meta": run_metadata(quick),
    }
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    WALL_FILE.write_text(json.dumps(dict(sorted(data.items())), indent=2) + "\n")


class DirtyTree(RuntimeError):
    """Results would come from a tree with uncommitted changes."""


#: set by ``python -m benchmarks --allow-dirty``: write results from a modified tree (recorded as such)
ALLOW_DIRTY = False


def _dirty_files() -> list[str]:
    """Tracked files changed, and untracked ``.py`` files, under ``src/`` and ``benchmarks/``."""
    root = Path(__file__).resolve().parent.parent
    try:
        out = subprocess.run(
            ["git", "status", "--porcelain", "--", "src", "benchmarks"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return ["(git unavailable)"]
    files = []
    for line in out.splitlines():
        status, name = line[:2], line[3:]
        if name.startswith("benchmarks/results/"):
            continue
        if status != "??" or name.endswith(".py"):
            files.append(name)
    return files


def check_clean_tree() -> None:
    """Refuse to write results from a modified tree unless :data:`ALLOW_DIRTY`."""
    dirty = _dirty_files()
    if dirty and not ALLOW_DIRTY:
        raise DirtyTree(
            f"refusing to write benchmark results from a modified tree ({', '.join(dirty[:5])}); "
            "commit first, or pass --allow-dirty (recorded as src_modified: true)"
        )


def banner(text: str) -> None:
    """Print a section header."""
    print(f"== {text} ==", flush=True)


# --------------------------------------------------------------------------- instances


def online_crl_delta(S: int, N: int) -> float:
    """Online-CRL's per-entry failure probability ``delta_1`` for ``DELTA``, ``BUDGET_EPISODES``."""
    return delta_1(DELTA, S, N, float(BUDGET_EPISODES))


@dataclass(frozen=True)
class ELPInstance:
    """An extended LP from a realistic Online-CRL state, plus the state one episode earlier.

    Attributes:
        name: label in the tables (``"1b"``, ``"rand S=25 H=10"``).
        cmdp: the model (its ``r, c, c_bar, s0, H`` define the ELP).
        counts: ``(S, A, S)`` counts ``C'`` the solvers are timed on.
        p_hat, beta: ``(S, A, S)`` empirical kernel and Online-CRL radii of ``counts``.
        previous: the fast plan on the counts one episode earlier (warm start).
        delta_prime: the per-entry failure probability of the radii.
    """

    name: str
    cmdp: CMDP
    counts: IntArray
    p_hat: Array
    beta: Array
    previous: PlanResult
    delta_prime: float

    @property
    def n_q(self) -> int:
        """Number of variables of the literal ELP, ``H |S|^2 |A|``."""
        return self.cmdp.H * self.cmdp.S**2 * self.cmdp.A

    def describe(self) -> dict[str, Any]:
        """Size fields for a table row."""
        m = self.cmdp
        return {
            "instance": self.name,
            "S": m.S,
            "A": m.A,
            "H": m.H,
            "N": m.N,
            "n_q": self.n_q,
            "min_visits": int(self.counts.sum(-1).min()),
            "mean_visits": float(self.counts.sum(-1).mean()),
        }


def _next_instance(
    name: str, cmdp: CMDP, counts: IntArray, previous: PlanResult, env: EpisodicEnv, delta_prime: float
) -> ELPInstance:
    """Play one episode with ``previous.policy``, add it to ``counts`` and package the ELP."""
    states, actions, nexts = env.rollout(previous.policy)
    counts = counts.copy()
    np.add.at(counts, (states, actions, nexts), 1)
    cs = confidence_set(counts, delta_prime)
    return ELPInstance(name, cmdp, counts, cs.p_hat, cs.beta, previous, delta_prime)


def scenario_instance(name: str, episodes: int = SCENARIO_EPISODES, seed: int = 0) -> ELPInstance:
    """Scenario ``name`` after ``episodes`` episodes of Online-CRL (fast, warm starts), plus one."""
    cmdp = scenario_cmdp(name)
    learner = OnlineCRL(cmdp, DELTA, episodes=BUDGET_EPISODES)
    env = EpisodicEnv(cmdp, np.random.default_rng(seed))
    planner = learner.planner()  # the library's loop and planner, played for `episodes` episodes
    counts = play_episodes(cmdp, planner, env, episodes).counts
    plan = learner.replan(counts, None)
    return _next_instance(name, cmdp, counts, plan, env, learner.delta_1)


#: where the thresholds of the random instances sit between the smallest
#: optimistic cost and the optimistic cost of the unconstrained plan
THRESHOLD_FRACTION = 0.5


@dataclass(frozen=True)
class RandomState:
    """A random CMDP with sampled counts: the state a random instance starts from."""

    cmdp: CMDP
    counts: IntArray
    delta_prime: float
    rng: np.random.Generator


def binding_thresholds(
    cmdp: CMDP, p_hat: Array, beta: Array, fraction: float = THRESHOLD_FRACTION
) -> NDArray[np.float64]:
    """Thresholds ``lo + fraction (hi - lo)``: the costs bind in the ELP of ``(p_hat, beta)``.

    ``lo_i`` is the smallest optimistic cost ``i`` (the ELP maximizing ``1 - c_i``),
    ``hi_i`` the cost ``i`` of the unconstrained optimistic plan. With thresholds
    from :func:`~cmdp_rl.model.cmdp.random_cmdp` the optimistic plan often meets
    them with room to spare, and the ELP is then a single EVI sweep.
    """
    H, N = cmdp.H, cmdp.N
    free = solve_elp(cmdp.replace(c_bar=np.full(N, H + 1.0)), p_hat, beta)
    lo = np.array(
        [H - solve_elp(cmdp.replace(r=1.0 - cmdp.c[i], c_bar=np.full(N, H + 1.0)), p_hat, beta).value for i in range(N)]
    )
    return np.asarray(lo + fraction * (free.costs - lo), dtype=np.float64)


def random_state(
    S: int,
    A: int,
    H: int,
    N: int = 1,
    seed: int = 0,
    *,
    support: int | None = None,
    visits: tuple[int, int] = (20, 50),
) -> RandomState:
    """A :func:`~cmdp_rl.model.cmdp.random_cmdp` with counts drawn from its kernel.

    Every pair ``(s, a)`` gets ``n(s, a)`` uniform in ``visits`` (inclusive) next
    states drawn from the true kernel; the thresholds are then replaced by
    :func:`binding_thresholds` of the confidence set of those counts.
    """
    rng = np.random.default_rng(seed)
    cmdp = random_cmdp(S, A, H, N, rng, support=support)
    n = rng.integers(visits[0], visits[1] + 1, size=(S, A))
    counts = rng.multinomial(n, cmdp.P).astype(np.int64)
    delta_prime = online_crl_delta(S, N)
    cs = confidence_set(counts, delta_prime)
    cmdp = cmdp.replace(c_bar=binding_thresholds(cmdp, cs.p_hat, cs.beta))
    return RandomState(cmdp, counts, delta_prime, rng)


def instance_from_state(state: RandomState, name: str) -> ELPInstance:
    """Plan on the state's counts (fast, cold), play one episode with that plan, add it."""
    cs = confidence_set(state.counts, state.delta_prime)
    previous = solve_elp(state.cmdp, cs.p_hat, cs.beta, method="fast")
    env = EpisodicEnv(state.cmdp, state.rng)
    return _next_instance(name, state.cmdp, state.counts, previous, env, state.delta_prime)


def random_instance(
    S: int,
    A: int,
    H: int,
    N: int = 1,
    seed: int = 0,
    *,
    support: int | None = None,
    visits: tuple[int, int] = (20, 50),
    name: str | None = None,
) -> ELPInstance:
    """:func:`random_state` then :func:`instance_from_state` (named ``rand S=.. H=..``)."""
    state = random_state(S, A, H, N, seed, support=support, visits=visits)
    return instance_from_state(state, name or f"rand S={S} H={H}")
