"""Confidence sets of transition kernels: the paper's radii, the dense box with extended value
iteration over it, the sparse box with its robust sweeps, and the sample sizes they imply."""
