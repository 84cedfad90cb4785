"""Compiled kernels (numba): sweeps over a CSR kernel, extended value iteration's inner loops, the
greedy fills of a sparse confidence set, and the one categorical sampler with the episode rollout
built on it."""
