"""Experiment configuration: what ``cmdp-rl reproduce`` runs (the protocol of the docs page 'Scenarios').

[`ExperimentConfig`][cmdp_rl.experiments.config.ExperimentConfig] is a frozen, validated dataclass. Its defaults are the
full protocol; [`ExperimentConfig.quick`][cmdp_rl.experiments.config.ExperimentConfig.quick] is a smoke-size preset.
Both read their budgets from the module constants below, the **one place to change the
default budgets**:

* ``FULL_GMBL_N_MAX``, ``FULL_EPISODES`` (and the grid sizes next to them),
* ``QUICK_GMBL_N_MAX``, ``QUICK_EPISODES``, ``QUICK_RUNS``.

A TOML file ([`load_config`][cmdp_rl.experiments.config.load_config]) starts from a preset (key ``preset``, default
``"full"``) and overrides it key by key; per-scenario tables are merged entry by
entry. Every key is a field name of [`ExperimentConfig`][cmdp_rl.experiments.config.ExperimentConfig]::

    preset = "quick"              # optional: "full" (default) or "quick"
    scenarios = ["1a", "2"]
    runs = 5
    gmbl_n_max = 5000             # one number for every scenario, or a table:
    [episodes]
    1a = 3000
    2 = 2000

Unknown keys and bad values raise [`CMDPInputError`][cmdp_rl.plumbing.errors.CMDPInputError]
naming the key.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import tomli_w
from numpy.typing import NDArray

from cmdp_rl.envs.scenarios import SCENARIOS
from cmdp_rl.learners import checkpoints as _log_checkpoints
from cmdp_rl.plumbing.atomic import write_atomic
from cmdp_rl.plumbing.decoding import detail
from cmdp_rl.plumbing.limits import check_allocation, grid_covers_integers
from cmdp_rl.plumbing.names import BACKENDS, METHODS, RADII
from cmdp_rl.plumbing.paths import check_input_path
from cmdp_rl.plumbing.validation import CMDPInputError, check_positive_int, check_probability, plain

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

# ---------------------------------------------------------------------------
# Default budgets: the one place to tune them.
# ---------------------------------------------------------------------------

#: Optimistic-GMBL: largest per-pair sample count ``n`` of the full protocol, per scenario.
FULL_GMBL_N_MAX: dict[str, int] = {"1a": 20_000, "1b": 20_000, "2": 20_000}
#: Optimistic-GMBL: smallest ``n`` and number of log-spaced grid points (full protocol).
FULL_GMBL_N_MIN: int = 10
FULL_GMBL_POINTS: int = 10
#: Online-CRL: episodes ``K`` per run of the full protocol, per scenario.
FULL_EPISODES: dict[str, int] = {"1a": 20_000, "1b": 30_000, "2": 10_000}
#: Online-CRL: number of log-spaced checkpoints (episodes ``1 .. K``) to record.
FULL_CHECKPOINTS: int = 30
#: Independent runs per (scenario, algorithm) of the full protocol (the paper's 25).
FULL_RUNS: int = 25

#: Quick preset (about a minute on 2 cores): runs, GMBL grid, Online-CRL episodes.
QUICK_RUNS: int = 5
QUICK_GMBL_N_MIN: int = 10
QUICK_GMBL_N_MAX: dict[str, int] = {"1a": 5_000, "1b": 5_000, "2": 5_000}
QUICK_GMBL_POINTS: int = 6
QUICK_EPISODES: dict[str, int] = {"1a": 3_000, "1b": 2_000, "2": 3_000}
QUICK_CHECKPOINTS: int = 12

# ---------------------------------------------------------------------------

ALGORITHMS: tuple[str, ...] = ("gmbl", "online-crl")
"""Algorithm names: Optimistic-GMBL (Algorithm 1) and Online-CRL (Algorithm 2)."""
PRESETS: tuple[str, ...] = ("full", "quick")


def default_jobs() -> int:
    """Worker count used when none is given: ``os.cpu_count()`` (1 if unknown)."""
    return os.cpu_count() or 1


def _names(name: str, value: Any, allowed: Iterable[str] | None) -> tuple[str, ...]:
    """A non-empty tuple of distinct names (from ``allowed``, unless ``None``)."""
    allowed = tuple(allowed) if allowed is not None else ()
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise CMDPInputError(f"{name}: must be a list of names, got {plain(value)}")
    out = tuple(str(v) if isinstance(v, (str, int)) and not isinstance(v, bool) else v for v in value)
    if not out:
        raise CMDPInputError(f"{name}: must not be empty")
    odd = [v for v in out if not isinstance(v, str)]
    if odd:
        raise CMDPInputError(f"{name}: must be a list of names, got the entry {plain(odd[0])}")
    for v in out:
        if allowed and v not in allowed:
            raise CMDPInputError(f"{name}: unknown name {plain(v)}; valid names are {list(allowed)}")
    if len(set(out)) != len(out):
        raise CMDPInputError(f"{name}: names must be distinct, got {list(out)}")
    return out


def _problems(value: Any) -> tuple[str, ...]:
    """A non-empty tuple of distinct registered problem specs (``1a``, ``garnet:S=50,seed=1``, ...)."""
    from cmdp_rl.envs.registry import PROBLEMS, is_spec

    out = _names("scenarios", value, None)
    for v in out:
        if not is_spec(v):
            raise CMDPInputError(f"scenarios: unknown name {plain(v)}; registered problems are {list(PROBLEMS)}")
        if v not in SCENARIOS:
            _built(v)  # overrides checked now, before any run
    return out


@cache
def _built(spec: str) -> None:
    """Check ``spec``'s overrides and parameters once per process
    ([`problem_sizes`][cmdp_rl.envs.registry.problem_sizes]: a family that declares its sizes is not
    built): a study validates the same problems in several configurations, and a refusal must
    not wait for builds."""
    from cmdp_rl.envs.registry import problem_sizes

    problem_sizes(spec)


def _per_scenario(name: str, value: Any, minimum: int, scenarios: tuple[str, ...] = ()) -> dict[str, int]:
    """A ``{scenario: int}`` dict from a mapping (or one int for the paper's and the configured scenarios)."""
    from cmdp_rl.envs.registry import is_spec

    if isinstance(value, Mapping):
        out: dict[str, int] = {}
        for key, v in value.items():
            k = str(key)
            if not is_spec(k):
                raise CMDPInputError(f"{name}: unknown scenario {plain(key)}; use a registered problem name")
            out[k] = check_positive_int(f"{name}[{plain(k)}]", v, minimum)
        return out
    if isinstance(value, bool):
        raise CMDPInputError(f"{name}: must be an integer or a table {{scenario = integer}}, got {plain(value)}")
    try:
        v = check_positive_int(name, value, minimum)
    except CMDPInputError:
        raise CMDPInputError(
            f"{name}: must be an integer >= {minimum} or a table {{scenario = integer}}, got {plain(value)}"
        ) from None
    return {k: v for k in (*SCENARIOS, *scenarios)}


def int_field(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool):
        raise CMDPInputError(f"{name}: must be an integer >= {minimum}, got {plain(value)}")
    return check_positive_int(name, value, minimum)


@dataclass(frozen=True)
class ExperimentConfig:
    """One sweep of the paper's experiments: scenarios x algorithms x runs.

    The defaults are the full protocol; budgets come from the
    module constants ``FULL_*`` (see the module docstring). Construction validates
    every field and raises [`CMDPInputError`][cmdp_rl.plumbing.errors.CMDPInputError] naming it.
    Use ``dataclasses.replace`` (or [`replace`][cmdp_rl.experiments.config.ExperimentConfig.replace]) to change fields.

    Attributes:
        scenarios: problem names: the paper's scenarios or any registered problem spec
            (``cmdp-rl envs``; e.g. ``"garnet:S=30,seed=1"``), each with an entry in
            ``episodes``/``gmbl_n_max`` unless it is one of the paper's (which have defaults).
        algorithms: ``"gmbl"`` (Optimistic-GMBL) and/or ``"online-crl"``.
        runs: independent runs per (scenario, algorithm).
        seed: root seed; run ``i`` of (scenario, algorithm) draws from
            ``SeedSequence(seed, spawn_key=(key(scenario), key(algorithm), i))``,
            so its numbers depend on nothing else (not on workers or order).
        delta: failure probability of both algorithms' confidence sets.
        gmbl_n_min: smallest per-pair sample count ``n`` of the GMBL grid.
        gmbl_n_max: ``{scenario: largest n}`` of the GMBL grid.
        gmbl_points: number of log-spaced grid points from ``gmbl_n_min`` to
            ``gmbl_n_max`` (rounded; duplicates after rounding are dropped).
        episodes: ``{scenario: K}`` Online-CRL episodes per run (budget mode,
            union-bound count ``U = K``).
        checkpoints: number of log-spaced episodes ``1 .. K`` recorded per
            Online-CRL run ([`checkpoints`][cmdp_rl.learners.online_crl.checkpoints]; ``K`` always included).
        eps: accuracies for Theorem 2's count of eps-bad episodes
            (value gap > eps or violation > eps).
        method: extended-LP method, ``"fast"`` (column generation) or ``"lp"``.
        radius: both learners' confidence radius, ``"paper"`` (Lemma 1, the default, for
            reproduction) or ``"empirical-bernstein"`` (a valid bound;
            [`cmdp_rl.confidence.radii`][cmdp_rl.confidence.radii]).
        jobs: parallel workers (local processes or Ray CPUs); results do not depend on it.
        backend: ``"local"`` (process pool; ``jobs=1`` runs inline) or ``"ray"``.
        address: Ray cluster address for ``ray.init(address=...)``; ``None``
            starts (or reuses) a local Ray instance with ``jobs`` CPUs.
    """

    scenarios: tuple[str, ...] = ("1a", "1b", "2")
    algorithms: tuple[str, ...] = ALGORITHMS
    runs: int = FULL_RUNS
    seed: int = 0
    delta: float = 0.1
    gmbl_n_min: int = FULL_GMBL_N_MIN
    gmbl_n_max: Mapping[str, int] = field(default_factory=lambda: dict(FULL_GMBL_N_MAX))
    gmbl_points: int = FULL_GMBL_POINTS
    episodes: Mapping[str, int] = field(default_factory=lambda: dict(FULL_EPISODES))
    checkpoints: int = FULL_CHECKPOINTS
    eps: tuple[float, ...] = (0.05, 0.1, 0.2)
    method: str = "fast"
    radius: str = "paper"
    jobs: int = field(default_factory=default_jobs)
    backend: str = "local"
    address: str | None = None

    def __post_init__(self) -> None:
        put = object.__setattr__
        put(self, "scenarios", _problems(self.scenarios))
        put(self, "algorithms", _names("algorithms", self.algorithms, ALGORITHMS))
        put(self, "runs", int_field("runs", self.runs, 1))
        put(self, "seed", int_field("seed", self.seed, 0))
        put(self, "delta", check_probability("delta", self.delta))
        put(self, "gmbl_n_min", int_field("gmbl_n_min", self.gmbl_n_min, 1))
        put(self, "gmbl_n_max", _per_scenario("gmbl_n_max", self.gmbl_n_max, self.gmbl_n_min, self.scenarios))
        put(self, "gmbl_points", int_field("gmbl_points", self.gmbl_points, 1))
        put(self, "episodes", _per_scenario("episodes", self.episodes, 1, self.scenarios))
        put(self, "checkpoints", int_field("checkpoints", self.checkpoints, 1))
        put(self, "jobs", int_field("jobs", self.jobs, 1))
        for fname in ("gmbl_n_max", "episodes"):
            if fname == "gmbl_n_max" and "gmbl" not in self.algorithms:
                continue
            if fname == "episodes" and "online-crl" not in self.algorithms:
                continue
            table: Mapping[str, int] = getattr(self, fname)
            missing = [s for s in self.scenarios if s not in table]
            if missing:
                raise CMDPInputError(f"{fname}: no entry for scenario(s) {missing}")
        eps = self.eps
        if isinstance(eps, (int, float)) and not isinstance(eps, bool):
            eps = (eps,)
        if isinstance(eps, str) or not isinstance(eps, Iterable):
            raise CMDPInputError(f"eps: must be a list of numbers in (0, 1), got {plain(self.eps)}")
        eps_t = tuple(check_probability("eps", e) for e in eps)
        if len(set(eps_t)) != len(eps_t):
            raise CMDPInputError(f"eps: values must be distinct, got {list(eps_t)}")
        put(self, "eps", eps_t)
        if self.method not in METHODS:
            raise CMDPInputError(f"method: must be one of {list(METHODS)}, got {plain(self.method)}")
        if self.radius not in RADII:
            raise CMDPInputError(f"radius: must be one of {list(RADII)}, got {plain(self.radius)}")
        if self.backend not in BACKENDS:
            raise CMDPInputError(f"backend: must be one of {list(BACKENDS)}, got {plain(self.backend)}")
        if self.address is not None:
            if not isinstance(self.address, str) or not self.address:
                raise CMDPInputError(f"address: must be a non-empty string, got {plain(self.address)}")
            if self.backend != "ray":
                raise CMDPInputError("address: only used with backend = 'ray'")

    # -- presets ------------------------------------------------------------

    @classmethod
    def full(cls, **overrides: Any) -> ExperimentConfig:
        """The full protocol (the dataclass defaults), with ``overrides`` applied as in
        [`replace`][cmdp_rl.experiments.config.ExperimentConfig.replace]."""
        return cls().replace(**overrides)

    @classmethod
    def quick(cls, **overrides: Any) -> ExperimentConfig:
        """A smoke-size sweep (about a minute on 2 cores): all scenarios and algorithms,
        ``QUICK_RUNS`` runs, small budgets (``QUICK_GMBL_N_MAX``, ``QUICK_EPISODES``);
        ``overrides`` as in [`replace`][cmdp_rl.experiments.config.ExperimentConfig.replace]."""
        base: dict[str, Any] = dict(
            runs=QUICK_RUNS,
            gmbl_n_min=QUICK_GMBL_N_MIN,
            gmbl_n_max=dict(QUICK_GMBL_N_MAX),
            gmbl_points=QUICK_GMBL_POINTS,
            episodes=dict(QUICK_EPISODES),
            checkpoints=QUICK_CHECKPOINTS,
        )
        return cls(**base).replace(**overrides)

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> ExperimentConfig:
        """The preset called ``name`` (``"full"`` or ``"quick"``) with ``overrides``."""
        if name == "full":
            return cls.full(**overrides)
        if name == "quick":
            return cls.quick(**overrides)
        raise CMDPInputError(f"preset: must be one of {list(PRESETS)}, got {plain(name)}")

    def replace(self, **changes: Any) -> ExperimentConfig:
        """A validated copy with ``changes``; per-scenario tables are merged entry by entry."""
        for key in ("gmbl_n_max", "episodes"):
            if key in changes and isinstance(changes[key], Mapping):
                changes[key] = {**getattr(self, key), **changes[key]}
        return dataclasses.replace(self, **changes)

    # -- derived quantities -------------------------------------------------

    def gmbl_budgets(self, scenario: str) -> tuple[int, ...]:
        """Strictly increasing per-pair budgets ``n`` of the GMBL grid for ``scenario``.

        ``gmbl_points`` log-spaced values from ``gmbl_n_min`` to ``gmbl_n_max[scenario]``,
        rounded to integers, duplicates dropped; always ends at ``gmbl_n_max``.
        """
        hi = self.gmbl_n_max[scenario]
        lo = self.gmbl_n_min
        if self.gmbl_points == 1 or hi == lo:
            return (hi,)
        if grid_covers_integers(lo, hi, self.gmbl_points):  # every budget: no grid of gmbl_points values
            check_allocation("gmbl_points", 48.0 * (hi - lo + 1), f"every budget from {lo} to {hi}")
            return tuple(range(lo, hi + 1))
        check_allocation("gmbl_points", 8.0 * self.gmbl_points, f"a grid of {self.gmbl_points} budgets")
        grid = np.round(np.logspace(math.log10(lo), math.log10(hi), self.gmbl_points))
        out = np.unique(np.clip(grid.astype(np.int64), lo, hi))
        return tuple(int(v) for v in out)

    def crl_checkpoints(self, scenario: str) -> tuple[int, ...]:
        """Episodes ``k`` (1-based, increasing, ending at ``K``) recorded for ``scenario``."""
        ks: NDArray[np.int64] = _log_checkpoints(self.episodes[scenario], self.checkpoints)
        return tuple(int(k) for k in ks)

    # -- (de)serialization ----------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON/TOML-ready dict (tuples become lists; ``address`` omitted when ``None``)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v is None:
                continue
            if isinstance(v, tuple):
                v = list(v)
            elif isinstance(v, Mapping):
                v = {k: v[k] for k in sorted(v)}
            out[f.name] = v
        return out

    def to_toml(self) -> str:
        """The configuration as TOML text (written by ``tomli-w``) that
        [`load_config`][cmdp_rl.experiments.config.load_config] reads back exactly."""
        header = "# cmdp-rl reproduce configuration (load with: cmdp-rl reproduce --config FILE)\n"
        return header + tomli_w.dumps(self.to_dict())

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write [`to_toml`][cmdp_rl.experiments.config.ExperimentConfig.to_toml] (``.toml``) or
        [`to_dict`][cmdp_rl.experiments.config.ExperimentConfig.to_dict] as JSON (any other suffix)."""
        p = Path(path)
        text = self.to_toml() if p.suffix == ".toml" else json.dumps(self.to_dict(), indent=2) + "\n"
        write_atomic(p, text)
        return p


CONFIG_KEYS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(ExperimentConfig))
"""Keys a configuration file may set (besides ``preset``)."""


def config_from_mapping(
    data: Mapping[str, Any], base: ExperimentConfig | None = None, source: str = "config"
) -> ExperimentConfig:
    """Build a config from a plain mapping (e.g. parsed TOML or JSON).

    Starts from ``data["preset"]`` if present, else from ``base``, else the full
    preset; the other keys override it (per-scenario tables merge entry by entry).

    Raises:
        CMDPInputError: unknown key or bad value; the message starts with ``source``
            and names the key.
    """
    unknown = [k for k in data if k not in CONFIG_KEYS and k != "preset"]
    if unknown:
        raise CMDPInputError(
            f"{source}: unknown key {plain(unknown[0])}; valid keys are {', '.join(('preset', *CONFIG_KEYS))}"
        )
    try:
        if "preset" in data:
            cfg = ExperimentConfig.preset(str(data["preset"]))
        else:
            cfg = base if base is not None else ExperimentConfig()
        changes = {k: v for k, v in data.items() if k != "preset"}
        return cfg.replace(**changes)
    except CMDPInputError as exc:
        raise CMDPInputError(f"{source}: {exc}") from None


def load_config(path: str | os.PathLike[str], base: ExperimentConfig | None = None) -> ExperimentConfig:
    """Read an [`ExperimentConfig`][cmdp_rl.experiments.config.ExperimentConfig] from a TOML (or ``.json``) file.

    Args:
        path: the file; keys are [`CONFIG_KEYS`][cmdp_rl.experiments.config.CONFIG_KEYS] plus an optional ``preset``.
        base: configuration the file's keys override when it has no ``preset``
            key (default: the full protocol).

    Raises:
        CMDPInputError: missing/unreadable file, invalid TOML, unknown key or bad value.
    """
    p = Path(path)
    check_input_path(p, f"config {p}", "a TOML or JSON file")
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise CMDPInputError(f"config {p}: cannot read ({exc.strerror or exc})") from None
    try:
        data = json.loads(raw.decode("utf-8")) if p.suffix == ".json" else tomllib.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # not UTF-8, not TOML or JSON, nested too deeply
        kind = "JSON" if p.suffix == ".json" else "TOML"
        raise CMDPInputError(f"config {p}: not valid {kind} ({detail(exc)})") from None
    if not isinstance(data, dict):
        raise CMDPInputError(f"config {p}: expected a JSON object at the top level")
    return config_from_mapping(data, base, source=f"config {p}")


__all__ = [
    "ALGORITHMS",
    "BACKENDS",
    "CONFIG_KEYS",
    "FULL_CHECKPOINTS",
    "FULL_EPISODES",
    "FULL_GMBL_N_MAX",
    "FULL_GMBL_N_MIN",
    "FULL_GMBL_POINTS",
    "FULL_RUNS",
    "PRESETS",
    "QUICK_CHECKPOINTS",
    "QUICK_EPISODES",
    "QUICK_GMBL_N_MAX",
    "QUICK_GMBL_N_MIN",
    "QUICK_GMBL_POINTS",
    "QUICK_RUNS",
    "ExperimentConfig",
    "config_from_mapping",
    "default_jobs",
    "load_config",
]
