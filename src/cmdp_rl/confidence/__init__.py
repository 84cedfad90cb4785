"""Confidence sets of transition kernels: transition counts and their one validator, the paper's
radii, one confidence-set type with a dense layout (the box, with extended value iteration over
it) and a sparse one (with its robust sweeps), and the sample sizes they imply."""
