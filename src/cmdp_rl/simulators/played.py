"""What a simulator run ([`learn`][cmdp_rl.simulators.learning.learn]) records of its episodes, and
how it plays: the per-episode arrays ([`PlayedArrays`][cmdp_rl.simulators.played.PlayedArrays]), the
exact score of a policy on the planner's states cut to the environment's
([`env_values`][cmdp_rl.simulators.played.env_values]) and whether the learner plays ``(H, S, A)``
tables or its plans' columns ([`plays_tables`][cmdp_rl.simulators.played.plays_tables]).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.learners.catalog import LEARNERS
from cmdp_rl.learners.episodes import Played
from cmdp_rl.simulators.estimates import LearnerRun

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]


def plays_tables(algorithm: str, play: str, table_bytes: float, max_memory: float) -> bool:
    """Whether the learner ``algorithm`` plays ``(H, S, A)`` Markov tables in a simulator run
    (``OnlineLearner.configure_play``): ``"table"``, a learner whose policy is a table by
    construction, or ``"auto"`` while the run's memory with tables, ``table_bytes``
    ([`simulator_estimate`][cmdp_rl.plumbing.limits.simulator_estimate]), fits in ``max_memory``."""
    if play == "table" or not LEARNERS[algorithm].column_plans:
        return True
    return play == "auto" and table_bytes <= max_memory


@dataclass
class PlayedArrays:
    """Per-episode arrays of a simulator run (the [`LearnerRecord`][cmdp_rl.learners.records.LearnerRecord]
    fields of the same names) and the last policy played, on the environment's states."""

    realized_return: Array
    realized_costs: Array
    planned_value: Array
    iterations: IntArray
    episode_status: NDArray[np.object_]
    baseline: NDArray[np.bool_]
    min_visits: IntArray
    plan_seconds: Array
    act_seconds: Array
    score_seconds: Array
    value: Array
    costs: Array
    policy: Played
    mixture: tuple[Array, Array] | None = None
    table: Played | None = None  # the last policy played, on the planner's states

    @classmethod
    def empty(cls, K: int, N: int, S: int, A: int, H: int) -> PlayedArrays:
        """Arrays for ``K`` episodes (scores ``nan`` until scored) and a uniform ``(H, S, A)`` policy
        (a broadcast view: no table is allocated)."""
        return cls(
            np.zeros(K), np.zeros((K, N)), np.empty(K), np.zeros(K, dtype=np.int64), np.empty(K, dtype=object),
            np.zeros(K, dtype=bool), np.zeros(K, dtype=np.int64), np.zeros(K), np.zeros(K), np.zeros(K),
            np.full(K, np.nan), np.full((K, N), np.nan), np.broadcast_to(np.full(1, 1.0 / A), (H, S, A)),
        )  # fmt: skip


def env_values(scorer: Any, run: LearnerRun, policy: Played) -> tuple[float, Array]:
    """The scorer's exact ``(value, costs)`` of a policy on the planner's states, cut to the environment's."""
    value, costs = scorer.values(run.on_env(policy))
    return float(value), np.asarray(costs)


__all__ = ["PlayedArrays", "env_values", "plays_tables"]
