"""``rpd``: the regularized primal-dual algorithm of Mueller, Alatur, Cevher, Ramponi and He (2024,
"Truly No-Regret Learning in Constrained MDPs", ICML, arXiv 2402.15776).

A primal-dual scheme on the regularized Lagrangian (maximize over ``pi``, minimize over ``lambda >= 0``)::

    L_tau(pi, lambda) = V_r(pi) - lambda . (C(pi) - c_bar) + tau Ent(pi) + (tau / 2) |lambda|^2

(``Ent(pi) = E_pi[sum_h -log pi_h(a_h | s_h)]``), whose last iterate converges, so the policy
played each episode, not only the average of the played policies, approaches the optimum: the
paper's claim is a sublinear *strong* violation (no error cancellation). The paper's body could
not be read here; the steps below are cmdp-rl's reading of its abstract and summary
(``docs/baselines.md``, section ``rpd``). Each episode ``k >= 2``:

* optimistic model: ``p_hat`` with the bonus ``b = bonus_scale * H sqrt(2 S) beta``,
  ``beta = sqrt(L / max(n, 1))``, ``L = log(32 S^2 H K / delta)``
  ([`rpd_bonus`][cmdp_rl.learners.rpd.rpd_bonus]);
* truncated policy evaluation of the previous policy ``pi = pi_{k-1}`` on it: reward
  ``Q_r = min(r + b + p_hat V_r, H - h)``, costs ``Q_c = clip(c - b + p_hat V_c, 0, H - h)``
  (optimistic both), and the entropy to go ``Q_e = p_hat V_e``, ``V_e = sum_a pi (Q_e - log pi)``;
* policy step (closed-form softmax, the exact maximizer of
  ``<p, Q> + tau Ent(p) - KL(p | pi) / eta`` per state and step)::

      pi_k(a | s) ∝ exp( (log pi(a | s) + eta (Q_r - lambda . Q_c + tau Q_e)(s, a)) / (1 + eta tau) )

* dual step (gradient descent on ``L_tau`` in ``lambda``, the regularizer keeping ``lambda <= H / tau``)::

      lambda_k = max(0, (1 - eta tau) lambda_{k-1} + eta (C_hat(pi_{k-1}) - c_bar))

with ``pi_1`` uniform and ``lambda_1 = 0``, the step ``eta = K^(-3/14) / H`` and the
regularization ``tau = K^(-1/14) / H`` ([`rpd_parameters`][cmdp_rl.learners.rpd.rpd_parameters]).
Every episode's multipliers are recorded (``record.info["multipliers"]``, ``(K, N)``).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray
from scipy.special import xlogy

from cmdp_rl.learners.base import OnlineLearner
from cmdp_rl.learners.bonuses import optpess_log
from cmdp_rl.learners.episodes import EpisodePlan, EpisodePlanner
from cmdp_rl.learners.optpess_pd import flat_counts, next_values
from cmdp_rl.model.actions import masked, uniform_rows
from cmdp_rl.model.cmdp import CMDP, KnownParts
from cmdp_rl.plumbing.validation import CMDPInputError, as_float, check_positive_int, plain

Array = NDArray[np.float64]

#: the floor under a probability before its logarithm (an action the softmax drove to 0)
TINY = 1e-300


def rpd_parameters(H: int, K: int) -> tuple[float, float]:
    """RPD's default ``(eta, tau) = (K^(-3/14) / H, K^(-1/14) / H)``.

    cmdp-rl's choice (the paper's theorem values could not be read, ``docs/baselines.md``):
    ``tau ~ K^(-1/14)`` is the regularization whose bias ``K tau`` is of the paper's strong-regret
    order ``K^(13/14) ~ K^0.93``; ``eta / tau = K^(-1/7)`` keeps the step small against the
    regularization and ``1 / (eta tau) = H^2 K^(2/7)`` episodes (the contraction time of the
    regularized scheme) is a vanishing fraction of ``K``; ``1 / H`` scales both to values in ``[0, H]``.

    Args:
        H: horizon (>= 1).
        K: number of episodes (>= 1).
    """
    H, K = check_positive_int("H", H), check_positive_int("K", K)
    return K ** (-3.0 / 14.0) / H, K ** (-1.0 / 14.0) / H


def rpd_bonus(n: NDArray[np.int64], H: int, L: float, bonus_scale: float = 1.0) -> Array:
    """RPD's optimism ``b(s, a) = bonus_scale * H sqrt(2 S L / max(n(s, a), 1))``.

    The L1 (Weissman) deviation ``|p_hat - P|_1 <= sqrt(2 S L / n)`` of a pair's empirical row
    times the largest value ``H``; an unvisited pair gets ``H sqrt(2 S L)``.

    Args:
        n: ``(S, A)`` samples per pair.
        H: horizon.
        L: the logarithm (``optpess_log``).
        bonus_scale: factor (>= 0).
    """
    S = n.shape[0]
    out: Array = bonus_scale * H * np.sqrt(2.0 * S * L / np.maximum(n, 1))
    return out


def softmax_step(policy: Array, q: Array, eta: float, tau: float) -> Array:
    """``p ∝ exp((log policy + eta q) / (1 + eta tau))`` over the last axis (``policy`` floored at ``TINY``)."""
    z = (np.log(np.maximum(policy, TINY)) + eta * q) / (1.0 + eta * tau)
    z -= z.max(axis=-1, keepdims=True)
    p = np.exp(z)
    out: Array = p / p.sum(axis=-1, keepdims=True)
    return out


def rpd_step(
    flat: Any, n: NDArray[np.int64], known: KnownParts, bonus: Array, policy: Array, lam: Array, eta: float, tau: float
) -> tuple[Array, float, Array]:
    """One backward sweep: the truncated optimistic evaluation of ``policy`` and its softmax step.

    Args:
        flat: [`flat_counts`][cmdp_rl.learners.optpess_pd.flat_counts]'s ``(S*A, S)`` matrix.
        n: ``(S, A)`` samples per pair.
        known: ``r (S, A)``, ``c (N, S, A)``, ``s0``, ``H``.
        bonus: ``(S, A)`` the optimism ``b``.
        policy: ``(H, S, A)`` the previous policy (every entry of an available action > 0; the
            softmax is over the available actions of a ragged model).
        lam: ``(N,)`` the previous multipliers.
        eta: the step.
        tau: the regularization.

    Returns:
        ``(new policy (H, S, A), optimistic reward value of policy at s0, optimistic costs (N,) at s0)``.
    """
    H, S, N = known.H, known.S, known.N
    r_opt, c_opt = known.r + bonus, np.maximum(known.c - bonus[None], 0.0)
    V = np.zeros((S, 2 + N))  # columns: reward, entropy to go, costs
    new = np.empty_like(policy)
    for h in range(H - 1, -1, -1):
        ev = next_values(flat, n, V)  # (S, A, 2 + N)
        q_r = np.minimum(r_opt + ev[:, :, 0], H - h)
        q_c = np.clip(c_opt + np.moveaxis(ev[:, :, 2:], -1, 0), 0.0, H - h)  # (N, S, A)
        q_e = ev[:, :, 1]
        pol = policy[h]
        q = masked(q_r - np.einsum("i,isa->sa", lam, q_c) + tau * q_e, known.actions)  # -inf: unavailable
        new[h] = softmax_step(pol, q, eta, tau)
        V = np.empty((S, 2 + N))
        V[:, 0] = np.einsum("sa,sa->s", pol, q_r)
        V[:, 1] = np.einsum("sa,sa->s", pol, q_e) - xlogy(pol, pol).sum(axis=1)
        V[:, 2:] = np.einsum("sa,isa->si", pol, q_c)
    return new, float(V[known.s0, 0]), V[known.s0, 2:].copy()


class RPD(OnlineLearner):
    """Regularized primal-dual with an optimistic model (module docstring).

    Args:
        cmdp: what is known (``KnownParts``), or a ``CMDP`` whose ``r, c, c_bar, s0, H`` are kept (never ``P``).
        delta: failure probability (in the bonus' logarithm).
        episodes: the budget ``K`` (in the logarithm and the default ``eta``, ``tau``).
        bonus_scale: factor on the bonus.
        eta: the policy and dual step (> 0; default ``rpd_parameters``).
        tau: the regularization (> 0, with ``eta tau < 1``; default ``rpd_parameters``).
    """

    name: ClassVar[str] = "rpd"

    def __init__(
        self,
        cmdp: CMDP | KnownParts,
        delta: float = 0.1,
        *,
        episodes: int,
        bonus_scale: float = 1.0,
        eta: float | None = None,
        tau: float | None = None,
        statistics: str = "dense",
    ) -> None:
        super().__init__(cmdp, delta, episodes=episodes, bonus_scale=bonus_scale, statistics=statistics)
        default_eta, default_tau = rpd_parameters(self.known.H, self.episodes)
        self.eta = _positive("eta", default_eta if eta is None else eta)
        self.tau = _positive("tau", default_tau if tau is None else tau)
        if not self.eta * self.tau < 1.0:
            raise CMDPInputError(
                "eta, tau: the dual step needs eta * tau < 1 (a contraction), "
                f"got eta * tau = {plain(self.eta * self.tau)}"
            )
        self._multipliers: list[Array] = []

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "eta": self.eta, "tau": self.tau}

    def planner(self) -> EpisodePlanner:
        """Each call after the first: evaluate the previous policy, then the policy and dual steps."""
        k0 = self.known
        H, S, A = k0.H, k0.S, k0.A
        L = optpess_log(S, H, self.episodes, self.delta)
        eta, tau, scale = self.eta, self.tau, self.bonus_scale
        policy = np.broadcast_to(uniform_rows(k0.actions, S, A), (H, S, A)).copy()
        lam = np.zeros(k0.N)
        history = self._multipliers = []
        first = [True]

        def plan_next(counts: NDArray[np.int64]) -> EpisodePlan:
            nonlocal policy, lam
            known = self.known
            flat, n, _, _ = flat_counts(counts)
            if first[0]:  # pi_1 uniform, lambda_1 = 0
                first[0] = False
                history.append(lam.copy())
                return EpisodePlan(policy, "optimistic", math.nan, 0)
            new, value, costs = rpd_step(flat, n, known, rpd_bonus(n, H, L, scale), policy, lam, eta, tau)
            lam = np.maximum(0.0, (1.0 - eta * tau) * lam + eta * (costs - known.c_bar))
            policy = new
            history.append(lam.copy())
            return EpisodePlan(policy, "optimistic", value, 1)

        return plan_next

    def _info(self) -> dict[str, Any]:
        N = self.known.N
        return {"multipliers": np.array(self._multipliers).reshape(len(self._multipliers), N)}


def _positive(name: str, value: Any) -> float:
    v = as_float(name, value)
    if not v > 0.0:
        raise CMDPInputError(f"{name}: must be > 0, got {plain(value)}")
    return v


__all__ = ["RPD", "TINY", "rpd_bonus", "rpd_parameters", "rpd_step", "softmax_step"]
