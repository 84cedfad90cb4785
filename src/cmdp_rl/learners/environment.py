"""Sampling interfaces the learners use: a generative model and an episodic environment.

Both are backed by a true [`CMDP`][cmdp_rl.model.cmdp.CMDP] and draw only from an
explicit ``np.random.Generator``, through the library's one categorical sampler
([`KernelDraws`][cmdp_rl.kernels.sampling.KernelDraws], which draws in the model's own layout).
The learners see next states (and the known rewards and costs), never the kernel.

A sparse model (``cmdp.layout == "sparse"``) is sampled from the rows of its ``(S*A, S)`` CSR
kernel ``cmdp.K`` (running sums of ``K.data`` per row, ``O(nnz)`` memory), never from an
``(S, A, S)`` array; a uniform draws the same next state as from the dense twin of the
model (``cmdp.to_dense()``), so [`GenerativeModel.sample`][cmdp_rl.learners.environment.GenerativeModel.sample],
[`EpisodicEnv.step`][cmdp_rl.learners.environment.EpisodicEnv.step] and
[`EpisodicEnv.rollout`][cmdp_rl.learners.environment.EpisodicEnv.rollout] give the same results on both for the same
generator.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from cmdp_rl.evaluation.mixture import MixturePolicy, check_mixture_fits
from cmdp_rl.kernels.column_rollout import draw_columns, rollout_column
from cmdp_rl.kernels.sampling import KernelDraws
from cmdp_rl.model.actions import available_count, check_policy_support
from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.plumbing.validation import CMDPInputError, CMDPTypeError, as_index, check_positive_int

IntArray = NDArray[np.int64]


class GenerativeModel:
    """A simulator that returns next states for any ``(s, a)`` on request (Algorithm 1's oracle).

    Works on a dense or a sparse model; a sparse one is sampled from the rows of ``cmdp.K``.
    """

    def __init__(self, cmdp: CMDP, rng: np.random.Generator) -> None:
        self.cmdp = check_cmdp("cmdp", cmdp)
        self.rng = check_generator("rng", rng)
        #: draws from the kernel in its own layout (never densified)
        self._draws = KernelDraws(self.cmdp)
        self.samples_drawn = 0

    def sample(self, s: int, a: int, size: int = 1) -> IntArray:
        """``size`` independent next states of ``(s, a)``."""
        s = as_index("s", s, self.cmdp.S)
        a = as_index("a", a, self.cmdp.A)
        size = check_positive_int("size", size)
        if self.cmdp.actions is not None and not self.cmdp.actions[s, a]:
            raise CMDPInputError(f"a: action {a} is not available in state {s} (cmdp.actions[{s}, {a}] is False)")
        self.samples_drawn += size
        return self._draws.next_states(s, a, self.rng.random(size))

    def sample_counts(self, n: int) -> IntArray | sp.csr_array:
        """Draw ``n`` next states for every ``(s, a)`` at once; return the counts.

        Equivalent in distribution to calling [`sample`][cmdp_rl.learners.environment.GenerativeModel.sample] ``n``
        times per pair (a multinomial draw per pair), vectorized. A dense model gives int64 ``(S, A, S)``
        counts; a sparse model an int64 ``(S*A, S)`` CSR array with ``cmdp.K``'s sparsity
        structure (row ``s*A + a`` holds the counts of ``(s, a)``; ``counts.data`` lines up
        with ``K.data``, entries never drawn are explicit zeros), never an ``(S, A, S)`` array. A
        ragged model's unavailable pairs are not sampled: their counts are 0.
        """
        n = check_positive_int("n", n)
        m = self.cmdp
        self.samples_drawn += n * available_count(m.actions, m.S, m.A)
        out = self._draws.counts(self.rng, n)
        if m.actions is not None and isinstance(out, np.ndarray):  # sparse: an unavailable row has no entry
            out[~m.actions] = 0
        return out


class EpisodicEnv:
    """Episodes of length ``H`` from ``s0`` on the true kernel (Algorithm 2's environment).

    ``step`` returns ``(next_state, reward, costs (N,), done)``, costs beside the
    reward as in Safety-Gymnasium. Works on a dense or a sparse model; a sparse one is
    sampled from the rows of ``cmdp.K`` (same draws as its dense twin for the same generator).
    """

    def __init__(self, cmdp: CMDP, rng: np.random.Generator) -> None:
        self.cmdp = check_cmdp("cmdp", cmdp)
        self.rng = check_generator("rng", rng)
        #: draws from the kernel in its own layout (never densified)
        self._draws = KernelDraws(self.cmdp)
        #: the start state and horizon (a discounted model or an initial distribution is refused)
        self.s0, self.H = self.cmdp.episodic("EpisodicEnv")
        self.state = self.s0
        self.t = 0
        self.samples_drawn = 0

    @property
    def cum_kernel(self) -> NDArray[np.float64]:
        """``(S, A, S)`` cumulative rows of the true kernel, what the compiled dense rollouts draw
        next states from. A sparse model's are built once, on first access, from a dense copy of
        its kernel (refused with a one-line error, before allocating, for a large model); its
        own sampling ([`step`][cmdp_rl.learners.environment.EpisodicEnv.step],
        [`rollout`][cmdp_rl.learners.environment.EpisodicEnv.rollout]) never needs them."""
        return self._draws.dense_cumulative("EpisodicEnv.cum_kernel")

    def reset(self) -> int:
        """Start an episode at ``s0``."""
        self.state, self.t = self.s0, 0
        return self.state

    def step(self, a: int) -> tuple[int, float, NDArray[np.float64], bool]:
        """Act ``a`` in the current state."""
        if self.t >= self.H:
            raise CMDPInputError("step: the episode is over (H steps taken); call reset()")
        a = as_index("a", a, self.cmdp.A)
        s = self.state
        if self.cmdp.actions is not None and not self.cmdp.actions[s, a]:
            raise CMDPInputError(f"a: action {a} is not available in state {s} (cmdp.actions[{s}, {a}] is False)")
        nxt = int(self._draws.next_states(s, a, np.array([self.rng.random()]))[0])
        self.state, self.t = nxt, self.t + 1
        self.samples_drawn += 1
        return nxt, float(self.cmdp.r[s, a]), self.cmdp.c[:, s, a], self.t >= self.H

    def rollout(
        self, policy: NDArray[np.float64] | MixturePolicy, counts: IntArray | None = None
    ) -> tuple[IntArray, IntArray, IntArray]:
        """Play one whole episode with an ``(H, S, A)`` policy; return states, actions, next states.
        A compact policy (a [`MixturePolicy`][cmdp_rl.evaluation.mixture.MixturePolicy]) is played as a
        mixture: [`rollout_mixture`][cmdp_rl.learners.environment.EpisodicEnv.rollout_mixture].

        The policy's rows are trusted to be distributions (the learners' hot path);
        its shape is checked against the environment's sizes, and on a ragged model that it puts no
        mass on an unavailable action (a one-line error naming the state and action).

        Same distribution as ``reset()`` then ``H`` calls of ``step`` with actions
        drawn from ``policy``; draws all uniforms of the episode in one call. ``counts``
        (int64 ``(S, A, S)``), when given, gets the episode's transitions added in place; for a
        sparse model ``counts`` may instead be int64 ``(nnz,)``, one count per entry of ``cmdp.K``
        (aligned with ``K.data``), which never needs an ``(S, A, S)`` array.
        """
        if isinstance(policy, MixturePolicy):
            return self.rollout_mixture(policy, counts)[1:]
        m = self.cmdp
        if np.shape(policy) != (self.H, m.S, m.A):
            raise CMDPInputError(
                f"policy: shape {np.shape(policy)} does not fit the environment "
                f"(H={self.H}, S={m.S}, A={m.A}): expected {(self.H, m.S, m.A)}"
            )
        check_policy_support("policy", policy, m.actions)
        u = self.rng.random((self.H, 2))
        states, actions, nexts = self._draws.rollout(policy, self.s0, u, counts)
        self.state, self.t = int(nexts[-1]), self.H
        self.samples_drawn += self.H
        return states, actions, nexts

    def rollout_mixture(
        self, mix: MixturePolicy, counts: IntArray | None = None
    ) -> tuple[int, IntArray, IntArray, IntArray]:
        """One episode of a compact policy played as a mixture: column ``k`` drawn with its weight
        (one uniform of the environment's generator,
        [`draw_columns`][cmdp_rl.kernels.column_rollout.draw_columns]), then followed for the whole
        episode ([`rollout_column`][cmdp_rl.kernels.column_rollout.rollout_column], with the
        ``(H, 2)`` uniforms a [`rollout`][cmdp_rl.learners.environment.EpisodicEnv.rollout] of a table
        draws next). Returns ``(k, states, actions, next_states)``; ``counts`` as in
        [`rollout`][cmdp_rl.learners.environment.EpisodicEnv.rollout]. The mixture is checked against
        the model (columns ``(K, H, S)``, actions it has) on every call: play many episodes with
        [`mixture_episodes`][cmdp_rl.learners.environment.EpisodicEnv.mixture_episodes]."""
        check_mixture_fits("policy", mix, self.cmdp)
        return self._mixture_episode(mix, self.rng.random(1 + 2 * self.H), counts)

    def mixture_episodes(
        self, mix: MixturePolicy, episodes: int, counts: IntArray | None = None
    ) -> tuple[IntArray, IntArray, IntArray, IntArray]:
        """``episodes`` episodes of a compact policy, each drawing its own column (the same episodes
        as that many [`rollout_mixture`][cmdp_rl.learners.environment.EpisodicEnv.rollout_mixture]
        calls: the generator's numbers in the same order), the mixture checked once. Returns the
        columns drawn ``(n,)`` and the states, actions and next states ``(n, H)``."""
        check_mixture_fits("policy", mix, self.cmdp)
        n = check_positive_int("episodes", episodes)
        u = self.rng.random((n, 1 + 2 * self.H))
        out = [np.empty((n, self.H), dtype=np.int64) for _ in range(3)]
        cols = np.empty(n, dtype=np.int64)
        for e in range(n):
            cols[e], out[0][e], out[1][e], out[2][e] = self._mixture_episode(mix, u[e], counts)
        return cols, out[0], out[1], out[2]

    def _mixture_episode(
        self, mix: MixturePolicy, u: NDArray[np.float64], counts: IntArray | None
    ) -> tuple[int, IntArray, IntArray, IntArray]:
        """One episode of a checked mixture with its ``1 + 2 H`` uniforms (the column's first)."""
        k = int(draw_columns(mix.weights, u[:1])[0])
        draws = self._draws
        states, actions, nexts = rollout_column(
            mix.columns[k], draws.cum, self.s0, u[1:].reshape(self.H, 2), counts, draws.K
        )
        self.state, self.t = int(nexts[-1]), self.H
        self.samples_drawn += self.H
        return k, states, actions, nexts

    def episode_uniforms(self, episodes: int) -> NDArray[np.float64]:
        """``(episodes, H, 2)`` uniforms of the next ``episodes`` episodes: the same numbers as that
        many [`rollout`][cmdp_rl.learners.environment.EpisodicEnv.rollout] calls draw, for a caller that plays them
        itself (the compiled episode batches of [`cmdp_rl.learners.batched`][cmdp_rl.learners.batched]) and then reports
        [`played`][cmdp_rl.learners.environment.EpisodicEnv.played]."""
        episodes = check_positive_int("episodes", episodes)
        return self.rng.random((episodes, self.H, 2))

    def played(self, episodes: int, last_state: int) -> None:
        """Record ``episodes`` whole episodes played with
        [`episode_uniforms`][cmdp_rl.learners.environment.EpisodicEnv.episode_uniforms], the last ending in
        ``last_state``."""
        episodes = check_positive_int("episodes", episodes)
        self.state, self.t = as_index("last_state", last_state, self.cmdp.S), self.H
        self.samples_drawn += episodes * self.H


def check_cmdp(name: str, value: Any) -> CMDP:
    """``value`` must be a [`CMDP`][cmdp_rl.model.cmdp.CMDP]."""
    if not isinstance(value, CMDP):
        raise CMDPTypeError(f"{name}: must be a cmdp_rl.CMDP, got {type(value).__name__}")
    return value


def check_generator(name: str, value: Any) -> np.random.Generator:
    """``value`` must be a ``numpy.random.Generator`` (spawned from the run's SeedSequence)."""
    if not isinstance(value, np.random.Generator):
        raise CMDPTypeError(
            f"{name}: must be a numpy.random.Generator (e.g. np.random.default_rng(seed)), got {type(value).__name__}"
        )
    return value
