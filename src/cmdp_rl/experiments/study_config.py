"""The settings of ``study n-constraints``
([`NConstraintsStudy`][cmdp_rl.experiments.study_config.NConstraintsStudy]), its problems' names and its
tables' columns (the study itself: [`cmdp_rl.experiments.study`][cmdp_rl.experiments.study])."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import tomli_w
from numpy.typing import NDArray

from cmdp_rl.experiments.config import ExperimentConfig, default_jobs
from cmdp_rl.plumbing.names import BACKENDS, RADII
from cmdp_rl.plumbing.validation import CMDPInputError, plain

Array = NDArray[np.float64]

FAMILIES: tuple[str, ...] = ("copies", "distinct")
STUDY_ALGORITHMS: tuple[str, ...] = ("gmbl", "online-crl")
FULL_NS: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)
QUICK_NS: tuple[int, ...] = (1, 4, 16)

RESULT_COLUMNS: tuple[str, ...] = (
    "n_constraints",
    "family",
    "algorithm",
    "radius",
    "run",
    "samples",
    "episodes",
    "n_per_pair",
    "value_gap",
    "violation",
    "v_star",
    "model",
    "cum_value_gap",
    "cum_violation",
    "cost_hi",
    "certified_safe",
)
"""Columns of ``results.csv`` before the ``bad_eps_<eps>`` counters (Online-CRL; blank for GMBL)."""

NEEDED_COLUMNS: tuple[str, ...] = (
    "n_constraints",
    "family",
    "algorithm",
    "radius",
    "run",
    "eps",
    "samples",
    "reached",
    "bad_episodes",
    "v_star",
    "model",
)
"""Columns of ``samples_needed.csv``: ``samples`` needed (blank if not ``reached`` within the budget)."""


def problem_spec(family: str, n: int) -> str:
    """The registry spec of an instance, e.g. ``"distinct:n=16"``."""
    return f"{family}:n={n}"


def model_file(family: str, n: int) -> str:
    """The instance's path relative to the output folder, e.g. ``models/distinct_n16.npz``."""
    return f"models/{family}_n{n}.npz"


@dataclass(frozen=True)
class NConstraintsStudy:
    """Settings of the ``log N`` study (validated on construction; errors name the field).

    Attributes:
        ns: numbers of constraints ``N``.
        families: ``"copies"`` and/or ``"distinct"``.
        algorithms: ``"gmbl"`` and/or ``"online-crl"``.
        radii: the learners' radius rules (``"paper"``, ``"empirical-bernstein"``).
        runs: runs per (N, family, algorithm, radius).
        seed: root seed (each run's stream as in ``reproduce``).
        delta: the learners' failure probability.
        episodes: Online-CRL episodes per run.
        gmbl_n_min, gmbl_n_max, gmbl_points: GMBL's grid of samples per pair.
        checkpoints: recorded Online-CRL episodes per run.
        eps: accuracies of the samples-needed statistic (and Theorem 2's eps-bad counts).
        jobs, backend, address: as in ``reproduce``.
    """

    ns: tuple[int, ...] = FULL_NS
    families: tuple[str, ...] = FAMILIES
    algorithms: tuple[str, ...] = STUDY_ALGORITHMS
    radii: tuple[str, ...] = RADII
    runs: int = 10
    seed: int = 0
    delta: float = 0.1
    episodes: int = 2000
    gmbl_n_min: int = 10
    gmbl_n_max: int = 20_000
    gmbl_points: int = 15
    checkpoints: int = 30
    eps: tuple[float, ...] = (0.1, 0.2, 0.4)
    jobs: int = dataclasses.field(default_factory=default_jobs)
    backend: str = "local"
    address: str | None = None

    def __post_init__(self) -> None:
        put = object.__setattr__
        ns = tuple(self.ns)
        if not ns or any(not isinstance(n, int) or isinstance(n, bool) or n < 1 for n in ns):
            raise CMDPInputError(f"ns: must be a non-empty list of integers >= 1, got {plain(self.ns)}")
        put(self, "ns", tuple(sorted(set(ns))))
        for name, allowed in (("families", FAMILIES), ("algorithms", STUDY_ALGORITHMS), ("radii", RADII)):
            vals = tuple(getattr(self, name))
            bad = [v for v in vals if v not in allowed]
            if not vals or bad:
                raise CMDPInputError(f"{name}: must be a non-empty subset of {list(allowed)}, got {plain(vals)}")
            put(self, name, vals)
        eps = tuple(self.eps)
        if not eps or any(isinstance(e, bool) or not isinstance(e, (int, float)) or not 0 < e < math.inf for e in eps):
            raise CMDPInputError(f"eps: must be a non-empty list of positive numbers, got {plain(self.eps)}")
        put(self, "eps", tuple(sorted({float(e) for e in eps})))
        if self.backend not in BACKENDS:
            raise CMDPInputError(f"backend: must be one of {list(BACKENDS)}, got {plain(self.backend)}")
        for cfg in self.experiment_configs().values():  # validates every other field (names them)
            del cfg

    @classmethod
    def quick(cls, **overrides: Any) -> NConstraintsStudy:
        """Both families, both learners, both radii, ``N`` in {1, 4, 16}: under 3 minutes on 2 cores."""
        base: dict[str, Any] = dict(
            ns=QUICK_NS, runs=2, episodes=300, gmbl_n_max=2000, gmbl_points=6, checkpoints=10, eps=(0.2, 0.4)
        )
        base.update(overrides)
        return cls(**base)

    def experiment_configs(self) -> dict[str, ExperimentConfig]:
        """One ``reproduce`` configuration per radius (same problems, runs and seeds)."""
        specs = tuple(problem_spec(f, n) for f in self.families for n in self.ns)
        eps = tuple(e for e in self.eps if e < 1) or (0.5,)
        return {
            radius: ExperimentConfig(
                scenarios=specs,
                algorithms=self.algorithms,
                runs=self.runs,
                seed=self.seed,
                delta=self.delta,
                gmbl_n_min=self.gmbl_n_min,
                gmbl_n_max=dict.fromkeys(specs, self.gmbl_n_max),
                gmbl_points=self.gmbl_points,
                episodes=dict.fromkeys(specs, self.episodes),
                checkpoints=self.checkpoints,
                eps=eps,
                radius=radius,
                jobs=self.jobs,
                backend=self.backend,
                address=self.address,
            )
            for radius in self.radii
        }

    def to_toml(self) -> str:
        data = {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(self).items()}
        data = {k: v for k, v in data.items() if v is not None}
        return "# cmdp-rl study n-constraints settings\n" + tomli_w.dumps(data)


# -- statistics ---------------------------------------------------------------------------


__all__ = [
    "FAMILIES",
    "FULL_NS",
    "NEEDED_COLUMNS",
    "QUICK_NS",
    "RESULT_COLUMNS",
    "STUDY_ALGORITHMS",
    "NConstraintsStudy",
    "model_file",
    "problem_spec",
]
