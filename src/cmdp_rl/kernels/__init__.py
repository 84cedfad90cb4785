"""Compiled kernels (numba): sweeps over a CSR kernel, extended value iteration's inner loops,
and the one categorical sampler with the episode rollout built on it."""
