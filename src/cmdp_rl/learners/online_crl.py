"""Online-CRL (paper Algorithm 2): re-plan optimistically before every episode, act, count."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from tqdm.auto import tqdm

from ..confidence import delta_1, empirical_kernel, radius
from ..model import CMDP
from ..planning.colgen import solve_colgen
from ..planning.elp import METHODS, solve_elp
from ..planning.evi import Box
from ..planning.result import PlanResult
from ..theory import online_crl_bounds
from ..validation import CMDPInputError, check_choice, check_open_unit, check_positive_int
from .environment import EpisodicEnv
from .metrics import Scorer

Array = NDArray[np.float64]


@dataclass(frozen=True)
class OnlineCRLResult:
    """Per-episode record of one Online-CRL run (arrays have one entry per episode).

    Attributes:
        value_gap: ``(K,)`` exact ``V* - V^{pi_k}(s0)`` of the policy played in episode k.
        violation: ``(K,)`` exact ``max_i max(C_i^{pi_k} - c_bar_i, 0)``.
        optimistic_value: ``(K,)`` the ELP's optimistic value.
        infeasible: ``(K,)`` whether the ELP was infeasible before episode k.
        min_visits: ``(K,)`` ``min_{s,a} n(s, a)`` after episode k.
        counts: ``(S, A, S)`` final transition counts.
        policy: ``(H, S, A)`` the last policy played.
        H: episode length (samples after k episodes are ``k * H``).
        delta_1, U: the per-entry failure probability and union-bound count used.
        stopped: ``"budget"``, ``"theory"`` (every ``n(s,a) >= |S| m H``) or ``"max_episodes"``.
    """

    value_gap: Array
    violation: Array
    optimistic_value: Array
    infeasible: NDArray[np.bool_]
    min_visits: NDArray[np.int64]
    counts: NDArray[np.int64]
    policy: Array
    H: int
    delta_1: float
    U: float
    stopped: str
    replan_iterations: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))

    @property
    def episodes(self) -> int:
        return int(self.value_gap.size)

    @property
    def samples(self) -> NDArray[np.int64]:
        """``(K,)`` samples drawn after each episode, ``k * H``."""
        return np.arange(1, self.episodes + 1) * self.H

    def bad_episodes(self, eps: float) -> int:
        """Episodes whose policy was not eps-optimal or not eps-feasible (Theorem 2's count)."""
        return int(np.sum((self.value_gap > eps) | (self.violation > eps)))


class OnlineCRL:
    """Online Constrained RL.

    The learner knows ``r``, ``c``, ``c_bar``, ``s0`` and ``H`` from ``cmdp`` and
    never reads ``cmdp.P``; it learns from episodes of an :class:`EpisodicEnv`.

    Args:
        cmdp: the known parts of the problem.
        delta: failure probability; the radii use ``delta_1`` (Algorithm 2).
        episodes: budget mode: play ``K`` episodes; the union bound counts
            ``U = K`` model updates.
        eps: theory mode: ``m`` from eq. "m", ``U = U_max``, stop when every
            ``n(s, a) >= |S| m H`` (or after ``max_episodes``, which is then required
            because the theory's count is astronomically large).
        method: extended-LP method, ``"fast"`` (warm-started) or ``"lp"``.
        warm_start: re-use the previous episode's columns (``"fast"`` only).
    """

    def __init__(
        self,
        cmdp: CMDP,
        delta: float = 0.1,
        *,
        episodes: int | None = None,
        eps: float | None = None,
        max_episodes: int | None = None,
        method: str = "fast",
        warm_start: bool = True,
    ) -> None:
        self.cmdp = cmdp
        self.delta = check_open_unit("delta", delta)
        if (episodes is None) == (eps is None):
            raise CMDPInputError("episodes/eps: give exactly one (budget mode or theory mode)")
        check_choice("method", method, METHODS)
        self.method, self.warm_start = method, warm_start
        if eps is not None:
            b = online_crl_bounds(cmdp.S, cmdp.A, cmdp.H, cmdp.N, eps, self.delta)
            if max_episodes is None:
                raise CMDPInputError(
                    f"max_episodes: required in theory mode (the stopping rule needs "
                    f"every n(s,a) >= |S| m H = {b.stop_count:.3g})"
                )
            self.max_episodes = check_positive_int("max_episodes", max_episodes)
            self.U: float = float(b.U_max)
            self.stop_count: int | None = b.stop_count
        else:
            self.max_episodes = check_positive_int("episodes", episodes)
            self.U = float(self.max_episodes)
            self.stop_count = None
        self.delta_1 = delta_1(self.delta, cmdp.S, cmdp.N, self.U)

    def replan(self, counts: NDArray[np.int64], previous: PlanResult | None) -> PlanResult:
        """Lines 6-8 of Algorithm 2: empirical model, confidence set, ELP."""
        p_hat, n = empirical_kernel(counts)
        beta = radius(p_hat, n, self.delta_1)
        m = self.cmdp
        if self.method == "fast":
            warm = previous.info if (previous is not None and self.warm_start) else {}
            return solve_colgen(
                Box.from_radius(p_hat, beta),
                m.r,
                m.c,
                m.c_bar,
                m.s0,
                m.H,
                warm_start=warm.get("columns", ()),
                warm_duals=warm.get("duals"),
                want_kernel=False,
            )
        return solve_elp(m, p_hat, beta, method="lp")

    def fit(self, env: EpisodicEnv, scorer: Scorer | None = None, progress: bool = False) -> OnlineCRLResult:
        """Run Algorithm 2; score every episode's policy exactly when ``scorer`` is given."""
        m = self.cmdp
        K = self.max_episodes
        counts = np.zeros((m.S, m.A, m.S), dtype=np.int64)
        gap, viol, opt = np.full(K, np.nan), np.full(K, np.nan), np.empty(K)
        infeas = np.zeros(K, dtype=bool)
        min_visits = np.zeros(K, dtype=np.int64)
        iters = np.zeros(K, dtype=np.int64)
        plan: PlanResult | None = None
        policy = np.full((m.H, m.S, m.A), 1.0 / m.A)  # replaced by every episode's plan (K >= 1)
        stopped = "budget" if self.stop_count is None else "max_episodes"
        k = 0
        bar = tqdm(total=K, desc="Online-CRL episodes", unit="ep", disable=not progress, mininterval=0.5)
        for k in range(K):
            plan = self.replan(counts, plan)
            policy = plan.policy
            opt[k], infeas[k], iters[k] = plan.value, not plan.feasible, plan.iterations
            states, actions, nexts = env.rollout(plan.policy)
            np.add.at(counts, (states, actions, nexts), 1)
            if scorer is not None:
                gap[k], viol[k] = scorer(plan.policy)
            min_visits[k] = counts.sum(-1).min()
            bar.update()
            if self.stop_count is not None and min_visits[k] >= self.stop_count:
                stopped = "theory"
                break
        bar.close()
        n_ep = k + 1
        return OnlineCRLResult(
            gap[:n_ep],
            viol[:n_ep],
            opt[:n_ep],
            infeas[:n_ep],
            min_visits[:n_ep],
            counts,
            policy,
            m.H,
            self.delta_1,
            self.U,
            stopped,
            iters[:n_ep],
        )


def checkpoints(K: int, points: int = 30) -> NDArray[np.int64]:
    """Log-spaced episode indices ``1 .. K`` (unique, increasing) for recording curves."""
    K = check_positive_int("K", K)
    return np.unique(np.round(np.logspace(0, np.log10(K), points)).astype(np.int64))


__all__: Sequence[str] = ["OnlineCRL", "OnlineCRLResult", "checkpoints"]
