"""Sampling interfaces the learners use: a generative model and an episodic environment.

Both are backed by a true :class:`~cmdp_rl.model.CMDP` and draw only from an
explicit ``np.random.Generator``. The learners see next states (and the known
rewards and costs), never the kernel.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ..model import CMDP
from ..planning._kernels import rollout_kernel
from ..validation import CMDPInputError, check_positive_int

IntArray = NDArray[np.int64]


class GenerativeModel:
    """A simulator that returns next states for any ``(s, a)`` on request (Algorithm 1's oracle)."""

    def __init__(self, cmdp: CMDP, rng: np.random.Generator) -> None:
        self.cmdp = cmdp
        self.rng = rng
        self.samples_drawn = 0

    def sample(self, s: int, a: int, size: int = 1) -> IntArray:
        """``size`` independent next states of ``(s, a)``."""
        if not (0 <= s < self.cmdp.S and 0 <= a < self.cmdp.A):
            raise CMDPInputError(f"(s, a): out of range for S={self.cmdp.S}, A={self.cmdp.A}: {(s, a)}")
        self.samples_drawn += size
        return self.rng.choice(self.cmdp.S, size=size, p=self.cmdp.P[s, a])

    def sample_counts(self, n: int) -> IntArray:
        """Draw ``n`` next states for every ``(s, a)`` at once; return ``(S, A, S)`` counts.

        Equivalent in distribution to calling :meth:`sample` ``n`` times per pair
        (a multinomial draw per pair), vectorized.
        """
        n = check_positive_int("n", n)
        self.samples_drawn += n * self.cmdp.S * self.cmdp.A
        return self.rng.multinomial(n, self.cmdp.P)


class EpisodicEnv:
    """Episodes of length ``H`` from ``s0`` on the true kernel (Algorithm 2's environment).

    ``step`` returns ``(next_state, reward, costs (N,), done)``, costs beside the
    reward as in Safety-Gymnasium.
    """

    def __init__(self, cmdp: CMDP, rng: np.random.Generator) -> None:
        self.cmdp = cmdp
        self.rng = rng
        self._cum = np.cumsum(cmdp.P, axis=-1)
        self._cum[..., -1] = 1.0
        self.state = cmdp.s0
        self.t = 0
        self.samples_drawn = 0

    def reset(self) -> int:
        """Start an episode at ``s0``."""
        self.state, self.t = self.cmdp.s0, 0
        return self.state

    def step(self, a: int) -> tuple[int, float, NDArray[np.float64], bool]:
        """Act ``a`` in the current state."""
        if self.t >= self.cmdp.H:
            raise CMDPInputError("step: the episode is over (H steps taken); call reset()")
        s = self.state
        nxt = int(np.searchsorted(self._cum[s, a], self.rng.random(), side="right"))
        self.state, self.t = nxt, self.t + 1
        self.samples_drawn += 1
        return nxt, float(self.cmdp.r[s, a]), self.cmdp.c[:, s, a], self.t >= self.cmdp.H

    def rollout(self, policy: NDArray[np.float64]) -> tuple[IntArray, IntArray, IntArray]:
        """Play one whole episode with an ``(H, S, A)`` policy; return states, actions, next states.

        The policy is trusted (the learners' hot path): rows must be distributions.

        Same distribution as ``reset()`` then ``H`` calls of ``step`` with actions
        drawn from ``policy``; draws all uniforms of the episode in one call.
        """
        u = self.rng.random((self.cmdp.H, 2))
        states, actions, nexts = rollout_kernel(np.cumsum(policy, axis=-1), self._cum, self.cmdp.s0, u)
        self.state, self.t = int(nexts[-1]), self.cmdp.H
        self.samples_drawn += self.cmdp.H
        return states, actions, nexts
