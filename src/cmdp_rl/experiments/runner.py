"""One run of the sweep: a (scenario, algorithm, run index) with its own random stream.

[`run_specs`][cmdp_rl.experiments.runner.run_specs] lists the runs of a configuration;
[`execute_run`][cmdp_rl.experiments.runner.execute_run] performs one and returns a
[`RunRecord`][cmdp_rl.experiments.runner.RunRecord] (plain data, picklable, JSON-ready). The function is pure given its
[`RunSpec`][cmdp_rl.experiments.runner.RunSpec]: the random stream is
``SeedSequence(seed, spawn_key=(name_key(scenario), name_key(algorithm), run))``, so a run's numbers depend only on the
root seed, the scenario, the algorithm, the run index and the budgets, never on the worker that runs it or the order.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from functools import cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.certificates.certify import certify
from cmdp_rl.envs.registry import make
from cmdp_rl.evaluation.evaluate import evaluate
from cmdp_rl.experiments.config import ExperimentConfig
from cmdp_rl.learners import (
    ONLINE_ALGORITHMS,
    SAFE_ALGORITHMS,
    EpisodicEnv,
    GenerativeModel,
    OnlineCRL,
    OptimisticGMBL,
    Scorer,
    make_learner,
)
from cmdp_rl.learners.episodes import Played
from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.planning.baseline import safe_baseline as safe_baseline_of
from cmdp_rl.plumbing.validation import CMDPInputError, plain
from cmdp_rl.plumbing.version import VERSION as __version__

RUN_FORMAT = "cmdp-rl-run/3"
"""Format tag written into every run file; files with another tag are rerun."""

GMBL_COLUMNS: tuple[str, ...] = (
    "n_per_pair",
    "samples",
    "value_gap",
    "violation",
    "optimistic_value",
    "elp_status",
    "cost",
    "cost_hi",
    "certified_safe",
)
"""Per-point columns of an Optimistic-GMBL run (one point per budget ``n``)."""

CERTIFICATE_COLUMNS: tuple[str, ...] = ("cost", "cost_hi", "certified_safe")
"""The certificate of the current policy at every recorded point
([`checkpoint_certificate`][cmdp_rl.experiments.runner.checkpoint_certificate]): ``cost_hi`` the certified upper bound
of the constraint with the largest certified excess ``cost_hi_i - c_bar_i``, ``cost`` that constraint's true cost,
``certified_safe`` 1 if every certified upper bound is within its threshold
([`certify`][cmdp_rl.certificates.certify.certify] with
its valid default radius at the run's ``delta``; ``sampling="fixed"`` for GMBL, ``"adaptive"`` for Online-CRL)."""

CRL_BASE_COLUMNS: tuple[str, ...] = (
    "episodes",
    "samples",
    "value_gap",
    "violation",
    "optimistic_value",
    "elp_status",
    "cum_value_gap",
    "cum_violation",
    "infeasible_episodes",
    "min_visits",
    "cost",
    "cost_hi",
    "certified_safe",
)
"""Per-checkpoint columns of an Online-CRL run, before the ``bad_eps_<eps>`` counters."""


ARENA_COLUMNS: tuple[str, ...] = (
    "episodes",
    "samples",
    "value_gap",
    "violation",
    "cum_value_gap",
    "cum_violation",
    "cum_abs_value_gap",
    "violating_episodes",
    "baseline_episodes",
    "strong_violation",
    "first_departure",
)
"""Per-checkpoint columns of a ``compare`` run (any online learner): the episode's exact value gap
and violation, the regret ``cum_value_gap``, ``cum_violation``, the DOPE code's regret
``cum_abs_value_gap``, the counts of violating and baseline episodes up to the checkpoint, the
``strong_violation`` up to it (every constraint's excess summed, none cancelled) and the
``first_departure`` from the safe baseline when it came by the checkpoint (else empty)."""


def eps_column(eps: float) -> str:
    """Column name of the eps-bad episode counter, e.g. ``bad_eps_0.1``."""
    return f"bad_eps_{eps:g}"


def file_stem(name: str) -> str:
    """A problem spec as a file-name part: ``garnet:S=50,seed=1`` -> ``garnet_S-50_seed-1`` (names without
    ``:``, ``,``, ``=`` or ``/`` are unchanged)."""
    return name.replace(":", "_").replace(",", "_").replace("=", "-").replace("/", "-")


def name_key(name: str) -> int:
    """A stable non-negative integer for a name (its UTF-8 bytes, little-endian).

    Distinct names give distinct keys; used in ``SeedSequence.spawn_key``.
    """
    return int.from_bytes(name.encode("utf-8"), "little")


@dataclass(frozen=True)
class RunSpec:
    """Everything that determines one run's numbers.

    Attributes:
        scenario: scenario name.
        algorithm: ``"gmbl"`` or ``"online-crl"``.
        run: run index ``0 .. runs-1`` (the ``run`` column of the results).
        root_seed: the configuration's root seed.
        delta: confidence parameter.
        method: extended-LP method.
        budgets: GMBL per-pair budgets ``n`` (increasing); empty for Online-CRL.
        episodes: Online-CRL episodes ``K``; 0 for GMBL.
        checkpoints: Online-CRL recorded episodes (1-based, increasing, ending at ``K``);
            empty for GMBL.
        eps: accuracies of the eps-bad episode counters (Online-CRL).
        radius: the learners' radius rule, ``"paper"`` or ``"empirical-bernstein"``.
        bonus_scale: the baselines' factor on their bonuses (``compare``).
        arena: a ``compare`` run: any online learner, [`ARENA_COLUMNS`][cmdp_rl.experiments.runner.ARENA_COLUMNS], no
            certificates.
    """

    scenario: str
    algorithm: str
    run: int
    root_seed: int
    delta: float
    method: str
    budgets: tuple[int, ...] = ()
    episodes: int = 0
    checkpoints: tuple[int, ...] = ()
    eps: tuple[float, ...] = ()
    radius: str = "paper"
    bonus_scale: float = 1.0
    arena: bool = False

    @property
    def run_id(self) -> str:
        """File-name stem ``<scenario>__<algorithm>__<run:03d>``."""
        return f"{file_stem(self.scenario)}__{self.algorithm}__{self.run:03d}"

    @property
    def seed_sequence(self) -> np.random.SeedSequence:
        """The run's own stream: ``SeedSequence(root_seed, spawn_key=(scenario, algorithm, run))``."""
        return np.random.SeedSequence(
            self.root_seed, spawn_key=(name_key(self.scenario), name_key(self.algorithm), self.run)
        )

    @property
    def n_points(self) -> int:
        """Number of recorded points (budgets for GMBL, checkpoints for Online-CRL)."""
        return len(self.budgets) if self.algorithm == "gmbl" else len(self.checkpoints)

    @property
    def columns(self) -> tuple[str, ...]:
        """Names of the per-point columns this run records."""
        if self.algorithm == "gmbl":
            return GMBL_COLUMNS
        if self.arena:
            return ARENA_COLUMNS
        return CRL_BASE_COLUMNS + tuple(eps_column(e) for e in self.eps)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (tuples become lists)."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunSpec:
        """Inverse of [`to_dict`][cmdp_rl.experiments.runner.RunSpec.to_dict] (raises ``KeyError``/``TypeError`` on
        malformed input)."""
        return cls(
            scenario=str(data["scenario"]),
            algorithm=str(data["algorithm"]),
            run=int(data["run"]),
            root_seed=int(data["root_seed"]),
            delta=float(data["delta"]),
            method=str(data["method"]),
            budgets=tuple(int(v) for v in data["budgets"]),
            episodes=int(data["episodes"]),
            checkpoints=tuple(int(v) for v in data["checkpoints"]),
            eps=tuple(float(v) for v in data["eps"]),
            radius=str(data.get("radius", "paper")),
            bonus_scale=float(data.get("bonus_scale", 1.0)),
            arena=bool(data.get("arena", False)),
        )


@dataclass(frozen=True)
class RunRecord:
    """What one run produced.

    Attributes:
        spec: the run.
        columns: ``{name: tuple of length n_points}`` per recorded point; numbers are
            Python ``int``/``float``, ``elp_status`` is a string (see
            [`RunSpec.columns`][cmdp_rl.experiments.runner.RunSpec.columns]).
        v_star: the scenario's exact constrained optimum ``V*(s0)``.
        seconds: wall time of the run (informational; not part of the results table).
        version: library version that produced it (informational).
        timing: per-episode wall times of an online run (informational): ``plan_ms`` and
            ``act_ms`` (medians over episodes), ``episode_ms`` (mean of plan + act).
    """

    spec: RunSpec
    columns: Mapping[str, tuple[Any, ...]]
    v_star: float
    seconds: float
    version: str = __version__
    timing: Mapping[str, float] = field(default_factory=dict)

    def to_json_dict(self) -> dict[str, Any]:
        """The run file's content."""
        return {
            "format": RUN_FORMAT,
            "spec": self.spec.to_dict(),
            "v_star": self.v_star,
            "seconds": self.seconds,
            "version": self.version,
            "columns": {k: list(v) for k, v in self.columns.items()},
            **({"timing": dict(self.timing)} if self.timing else {}),
        }


def run_specs(config: ExperimentConfig) -> list[RunSpec]:
    """All runs of ``config``, ordered scenario, algorithm, run index (config order)."""
    out: list[RunSpec] = []
    for sc in config.scenarios:
        for algo in config.algorithms:
            budget: dict[str, Any] = (
                {"budgets": config.gmbl_budgets(sc)}
                if algo == "gmbl"
                else {"episodes": config.episodes[sc], "checkpoints": config.crl_checkpoints(sc), "eps": config.eps}
            )
            for i in range(config.runs):
                out.append(
                    RunSpec(sc, algo, i, config.seed, config.delta, config.method, radius=config.radius, **budget)
                )
    return out


@cache
def _model_and_scorer(scenario: str) -> tuple[CMDP, Scorer]:
    """The scenario's model and exact scorer, built once per process."""
    model = make(scenario)
    return model, Scorer.for_model(model)


def _num(x: Any) -> float:
    """A Python float with ``-0.0`` normalised to ``0.0``."""
    return float(x) + 0.0


def checkpoint_certificate(
    model: CMDP, policy: Played, counts: NDArray[np.int64], delta: float, sampling: str
) -> tuple[float, float, int]:
    """``(cost, cost_hi, certified_safe)`` of ``policy`` from ``counts``
    ([`CERTIFICATE_COLUMNS`][cmdp_rl.experiments.runner.CERTIFICATE_COLUMNS])."""
    if model.N == 0:
        return 0.0, 0.0, 1
    cert = certify(
        policy, counts, model.r, model.c, model.c_bar, *model.episodic("certify"), delta=delta, sampling=sampling
    )
    i = int(np.argmax(cert.cost_hi - model.c_bar))
    true_cost = float(evaluate(model, policy).costs[i])
    return _num(true_cost), _num(cert.cost_hi[i]), int(cert.safe)


def _certificate_columns(certs: list[tuple[float, float, int]]) -> dict[str, tuple[Any, ...]]:
    return {name: tuple(c[j] for c in certs) for j, name in enumerate(CERTIFICATE_COLUMNS)}


def _run_gmbl(spec: RunSpec, model: CMDP, scorer: Scorer, rng: np.random.Generator) -> dict[str, tuple[Any, ...]]:
    learner = OptimisticGMBL(
        model, spec.delta, samples_per_pair=spec.budgets[0], method=spec.method, radius=spec.radius
    )
    path = learner.fit_path(GenerativeModel(model, rng), spec.budgets, scorer)
    certs = [checkpoint_certificate(model, r.policy, r.counts, spec.delta, "fixed") for r in path]
    return {
        "n_per_pair": tuple(int(r.n_per_pair) for r in path),
        "samples": tuple(int(r.samples) for r in path),
        "value_gap": tuple(_num(r.value_gap) for r in path),
        "violation": tuple(_num(r.violation) for r in path),
        "optimistic_value": tuple(_num(r.plan.value) for r in path),
        "elp_status": tuple(str(r.plan.status) for r in path),
        **_certificate_columns(certs),
    }


def _run_crl(spec: RunSpec, model: CMDP, scorer: Scorer, rng: np.random.Generator) -> dict[str, tuple[Any, ...]]:
    learner = OnlineCRL(model, spec.delta, episodes=spec.episodes, method=spec.method, radius=spec.radius)
    marks = set(spec.checkpoints)
    certs: list[tuple[float, float, int]] = []

    def certify_checkpoint(k: int, counts: NDArray[np.int64], policy: Played) -> None:
        if k in marks:
            certs.append(checkpoint_certificate(model, policy, counts, spec.delta, "adaptive"))

    env = EpisodicEnv(model, rng)
    res = learner.fit(env, scorer, progress=False, on_episode=certify_checkpoint, checkpoints=marks)
    if res.episodes != spec.episodes:
        raise RuntimeError(f"Online-CRL played {res.episodes} episodes, expected {spec.episodes}")
    idx = np.asarray(spec.checkpoints, dtype=np.int64) - 1  # (P,) 0-based episodes
    gap, viol = res.scored()[:2]  # (K,)
    out: dict[str, tuple[Any, ...]] = {
        "episodes": tuple(int(k) for k in spec.checkpoints),
        "samples": tuple(int(k) * model.horizon("the experiment") for k in spec.checkpoints),
        "value_gap": tuple(_num(v) for v in gap[idx]),
        "violation": tuple(_num(v) for v in viol[idx]),
        "optimistic_value": tuple(_num(v) for v in res.optimistic_value[idx]),
        "elp_status": tuple("infeasible" if b else "optimal" for b in res.infeasible[idx]),
        "cum_value_gap": tuple(_num(v) for v in np.cumsum(gap)[idx]),
        "cum_violation": tuple(_num(v) for v in np.cumsum(viol)[idx]),
        "infeasible_episodes": tuple(int(v) for v in np.cumsum(res.infeasible)[idx]),
        "min_visits": tuple(int(v) for v in res.min_visits[idx]),
        **_certificate_columns(certs),
    }
    for e in spec.eps:
        bad = np.cumsum((gap > e) | (viol > e))
        out[eps_column(e)] = tuple(int(v) for v in bad[idx])
    return out


@cache
def _safe_baseline(problem: str) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The problem's safe baseline policy and exact costs (computed from the true model, as in the
    papers' experiments), once per process."""
    model, _ = _model_and_scorer(problem)
    base = safe_baseline_of(model)
    return base.policy, base.costs


def _run_arena(spec: RunSpec, model: CMDP, scorer: Scorer, rng: np.random.Generator) -> RunRecord:
    """A ``compare`` run: ``spec.algorithm`` for ``spec.episodes`` episodes,
    [`ARENA_COLUMNS`][cmdp_rl.experiments.runner.ARENA_COLUMNS]."""
    t0 = time.perf_counter()
    baseline = _safe_baseline(spec.scenario) if spec.algorithm in SAFE_ALGORITHMS else None
    options: dict[str, Any] = {"radius": spec.radius} if spec.algorithm == "online-crl" else {}
    learner = make_learner(
        spec.algorithm,
        model,
        spec.delta,
        episodes=spec.episodes,
        bonus_scale=spec.bonus_scale,
        baseline=baseline,
        **options,
    )
    rec = learner.fit(EpisodicEnv(model, rng), scorer)
    if rec.episodes != spec.episodes:
        raise RuntimeError(f"{spec.algorithm} played {rec.episodes} episodes, expected {spec.episodes}")
    first = rec.first_departure
    idx = np.asarray(spec.checkpoints, dtype=np.int64) - 1
    cols: dict[str, tuple[Any, ...]] = {
        "episodes": tuple(int(k) for k in spec.checkpoints),
        "samples": tuple(int(k) * model.horizon("the experiment") for k in spec.checkpoints),
        "value_gap": tuple(_num(v) for v in rec.scored()[0][idx]),
        "violation": tuple(_num(v) for v in rec.scored()[1][idx]),
        "cum_value_gap": tuple(_num(v) for v in rec.cum_value_gap[idx]),
        "cum_violation": tuple(_num(v) for v in rec.cum_violation[idx]),
        "cum_abs_value_gap": tuple(_num(v) for v in rec.cum_abs_value_gap[idx]),
        "violating_episodes": tuple(int(v) for v in np.cumsum(rec.violating)[idx]),
        "baseline_episodes": tuple(int(v) for v in np.cumsum(rec.baseline)[idx]),
        "strong_violation": tuple(_num(v) for v in rec.strong_violation[idx]),
        "first_departure": tuple(None if first is None or first > k else first for k in spec.checkpoints),
    }
    timing = {
        "plan_ms": 1e3 * float(np.median(rec.plan_seconds)),
        "act_ms": 1e3 * float(np.median(rec.act_seconds)),
        "episode_ms": 1e3 * float(np.mean(rec.plan_seconds + rec.act_seconds)),
    }
    return RunRecord(spec, cols, float(scorer.v_star), time.perf_counter() - t0, timing=timing)


def execute_run(spec: RunSpec) -> RunRecord:
    """Perform one run and return its record (pure given ``spec``; no files touched).

    Optimistic-GMBL: one nested sample path over ``spec.budgets``
    ([`fit_path`][cmdp_rl.learners.optimistic_gmbl.OptimisticGMBL.fit_path]), one point per budget with
    ``samples = n |S| |A|``. Online-CRL: ``spec.episodes`` episodes, each episode's
    policy scored exactly, recorded at ``spec.checkpoints`` with ``samples = k H``,
    cumulative gap/violation over episodes ``1 .. k``, the number of infeasible
    ELPs and, per eps, the number of eps-bad episodes up to ``k``.

    Raises:
        CMDPInputError: unknown algorithm or scenario.
    """
    t0 = time.perf_counter()
    model, scorer = _model_and_scorer(spec.scenario)
    rng = np.random.default_rng(spec.seed_sequence)
    if spec.arena:
        if spec.algorithm not in ONLINE_ALGORITHMS:
            raise CMDPInputError(f"algorithm: unknown online learner {plain(spec.algorithm)}")
        return _run_arena(spec, model, scorer, rng)
    if spec.algorithm == "gmbl":
        cols = _run_gmbl(spec, model, scorer, rng)
    elif spec.algorithm == "online-crl":
        cols = _run_crl(spec, model, scorer, rng)
    else:
        raise CMDPInputError(f"algorithm: unknown name {plain(spec.algorithm)}")
    return RunRecord(spec, cols, float(scorer.v_star), time.perf_counter() - t0)


__all__ = [
    "ARENA_COLUMNS",
    "CERTIFICATE_COLUMNS",
    "CRL_BASE_COLUMNS",
    "GMBL_COLUMNS",
    "RUN_FORMAT",
    "RunRecord",
    "RunSpec",
    "checkpoint_certificate",
    "eps_column",
    "execute_run",
    "name_key",
    "run_specs",
]
