"""Sampling interfaces the learners use: a generative model and an episodic environment.

Both are backed by a true :class:`~cmdp_rl.model.CMDP` and draw only from an
explicit ``np.random.Generator``, through the library's one categorical sampler
(:mod:`cmdp_rl.sampling`). The learners see next states (and the known rewards
and costs), never the kernel.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..model import CMDP
from ..sampling import cumulative, rollout, sample_many
from ..validation import CMDPInputError, as_index, check_positive_int

IntArray = NDArray[np.int64]


class GenerativeModel:
    """A simulator that returns next states for any ``(s, a)`` on request (Algorithm 1's oracle)."""

    def __init__(self, cmdp: CMDP, rng: np.random.Generator) -> None:
        self.cmdp = check_cmdp("cmdp", cmdp)
        self.rng = check_generator("rng", rng)
        self._cum = cumulative(cmdp.P)
        self.samples_drawn = 0

    def sample(self, s: int, a: int, size: int = 1) -> IntArray:
        """``size`` independent next states of ``(s, a)``."""
        s = as_index("s", s, self.cmdp.S)
        a = as_index("a", a, self.cmdp.A)
        size = check_positive_int("size", size)
        self.samples_drawn += size
        return sample_many(self._cum[s, a], self.rng.random(size))

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
        self.cmdp = check_cmdp("cmdp", cmdp)
        self.rng = check_generator("rng", rng)
        self._cum = cumulative(cmdp.P)
        self.state = cmdp.s0
        self.t = 0
        self.samples_drawn = 0

    @property
    def cum_kernel(self) -> NDArray[np.float64]:
        """``(S, A, S)`` cumulative rows of the true kernel, what the sampler draws next states from."""
        return self._cum

    def reset(self) -> int:
        """Start an episode at ``s0``."""
        self.state, self.t = self.cmdp.s0, 0
        return self.state

    def step(self, a: int) -> tuple[int, float, NDArray[np.float64], bool]:
        """Act ``a`` in the current state."""
        if self.t >= self.cmdp.H:
            raise CMDPInputError("step: the episode is over (H steps taken); call reset()")
        a = as_index("a", a, self.cmdp.A)
        s = self.state
        nxt = int(sample_many(self._cum[s, a], np.array([self.rng.random()]))[0])
        self.state, self.t = nxt, self.t + 1
        self.samples_drawn += 1
        return nxt, float(self.cmdp.r[s, a]), self.cmdp.c[:, s, a], self.t >= self.cmdp.H

    def rollout(
        self, policy: NDArray[np.float64], counts: IntArray | None = None
    ) -> tuple[IntArray, IntArray, IntArray]:
        """Play one whole episode with an ``(H, S, A)`` policy; return states, actions, next states.

        The policy's rows are trusted to be distributions (the learners' hot path);
        its shape is checked against the environment's sizes.

        Same distribution as ``reset()`` then ``H`` calls of ``step`` with actions
        drawn from ``policy``; draws all uniforms of the episode in one call. ``counts``
        (int64 ``(S, A, S)``), when given, gets the episode's transitions added in place.
        """
        m = self.cmdp
        if np.shape(policy) != (m.H, m.S, m.A):
            raise CMDPInputError(
                f"policy: shape {np.shape(policy)} does not fit the environment "
                f"(H={m.H}, S={m.S}, A={m.A}): expected {(m.H, m.S, m.A)}"
            )
        u = self.rng.random((m.H, 2))
        states, actions, nexts = rollout(policy, self._cum, m.s0, u, counts)
        self.state, self.t = int(nexts[-1]), self.cmdp.H
        self.samples_drawn += self.cmdp.H
        return states, actions, nexts

    def episode_uniforms(self, episodes: int) -> NDArray[np.float64]:
        """``(episodes, H, 2)`` uniforms of the next ``episodes`` episodes: the same numbers as that
        many :meth:`rollout` calls draw, for a caller that plays them itself (the compiled
        episode batches of :mod:`cmdp_rl.learners.batched`) and then reports :meth:`played`."""
        episodes = check_positive_int("episodes", episodes)
        return self.rng.random((episodes, self.cmdp.H, 2))

    def played(self, episodes: int, last_state: int) -> None:
        """Record ``episodes`` whole episodes played with :meth:`episode_uniforms`, the last
        ending in ``last_state``."""
        episodes = check_positive_int("episodes", episodes)
        self.state, self.t = as_index("last_state", last_state, self.cmdp.S), self.cmdp.H
        self.samples_drawn += episodes * self.cmdp.H


def check_cmdp(name: str, value: Any) -> CMDP:
    """``value`` must be a :class:`~cmdp_rl.model.CMDP`."""
    if not isinstance(value, CMDP):
        raise TypeError(f"{name}: must be a cmdp_rl.CMDP, got {type(value).__name__}")
    return value


def check_generator(name: str, value: Any) -> np.random.Generator:
    """``value`` must be a ``numpy.random.Generator`` (spawned from the run's SeedSequence)."""
    if not isinstance(value, np.random.Generator):
        raise TypeError(
            f"{name}: must be a numpy.random.Generator (e.g. np.random.default_rng(seed)), got {type(value).__name__}"
        )
    return value
