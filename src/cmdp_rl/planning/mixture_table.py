"""The dense Markov table of a compact policy, for the few consumers that need one (a learner's
baseline policy, a ``.npy`` policy file), built with a memory check first.

A mixture of deterministic Markov policies ``pi_k`` with weights ``w_k`` (a
[`MixturePolicy`][cmdp_rl.evaluation.mixture.MixturePolicy]) has the occupancy
``mu[h, s, a] = sum_k w_k d_k(h, s) 1[pi_k(h, s) = a]`` on a model, ``d_k`` the state distribution of
column ``k``; the randomized Markov table ``mu / sum_a mu`` (uniform where no mass arrives) has the
same occupancy, so the same value and costs on that model (the paper's eq. "occupancy-measure";
Altman 1999, Thm. 3.1). It depends on the model's kernel: [`markov_table`][cmdp_rl.planning.mixture_table.markov_table]
needs the model, [`deterministic_table`][cmdp_rl.planning.mixture_table.deterministic_table] (a mixture
whose weighted columns agree: one deterministic policy) does not.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.evaluation.mixture import MixturePolicy, check_mixture_fits, mixture_policy
from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.planning.mixing import markov_mixer
from cmdp_rl.planning.result import REACH_TOL
from cmdp_rl.plumbing.limits import DEFAULT_MAX_MEMORY, Estimate, check_estimate
from cmdp_rl.plumbing.validation import CMDPInputError, CMDPTypeError, as_float_array

Array = NDArray[np.float64]


def markov_table(cmdp: CMDP, mix: MixturePolicy, name: str = "policy", max_memory: float = DEFAULT_MAX_MEMORY) -> Array:
    """``(H, S, A)`` the randomized Markov table with the mixture's occupancy on ``cmdp`` (module
    docstring), mixed as a plan's own table is ([`markov_mixer`][cmdp_rl.planning.mixing.markov_mixer]:
    one forward pass of each column's state distribution through the CSR kernel, ``O(K H nnz)``,
    then ``mu / sum_a mu``, uniform over the available actions where the mass is below ``REACH_TOL``).

    Args:
        cmdp: a finite-horizon model (a discounted mixture's stationary table is refused).
        mix: a mixture that fits ``cmdp`` (refused naming ``name`` otherwise).
        name: what the mixture is called in errors (e.g. ``"baseline: FILE.npz"``).
        max_memory: bytes; a table whose estimate exceeds it is refused, with the estimate, before
            anything is allocated.
    """
    if not isinstance(cmdp, CMDP):
        raise CMDPTypeError(f"cmdp: must be a cmdp_rl.CMDP, got {type(cmdp).__name__}")
    if not isinstance(mix, MixturePolicy):
        raise CMDPTypeError(f"{name}: must be a MixturePolicy, got {type(mix).__name__}")
    if cmdp.is_discounted:
        raise CMDPInputError(f"{name}: the dense table of a discounted mixture is not built here (finite horizon only)")
    check_mixture_fits(name, mix, cmdp)
    K = cmdp.K
    tables = markov_mixer(
        np.ascontiguousarray(K.indptr, dtype=np.int64),
        np.ascontiguousarray(K.indices, dtype=np.int64),
        np.ascontiguousarray(K.data, dtype=np.float64),
        np.ascontiguousarray(cmdp.rho, dtype=np.float64),
        cmdp.actions,
        mix.columns,
        mix.weights,
        REACH_TOL,
    )
    policy: Array = tables.get(f"{name} (its dense {tables.shape} table)", max_memory)[0]
    return policy


def deterministic_table(
    mix: MixturePolicy, A: int, name: str = "policy", max_memory: float = DEFAULT_MAX_MEMORY
) -> Array:
    """``(H, S, A)`` (or ``(S, A)`` for stationary columns) the one-hot table of a mixture whose
    columns of positive weight all play the same actions (one deterministic policy: no model
    needed); any other mixture is refused, naming ``name`` (its table mixes by the occupancy on a
    model: [`markov_table`][cmdp_rl.planning.mixture_table.markov_table])."""
    if not isinstance(mix, MixturePolicy):
        raise CMDPTypeError(f"{name}: must be a MixturePolicy, got {type(mix).__name__}")
    used = mix.columns[mix.weights > 0.0]
    if (used != used[0]).any():
        raise CMDPInputError(
            f"{name}: a mixture of {used.shape[0]} different deterministic policies has no Markov table "
            "without the model's kernel (its table mixes them by occupancy); give the dense table FILE.npy "
            "(cmdp-rl solve MODEL --policy-out FILE.npy)"
        )
    if int(used.max(initial=0)) >= A:
        idx = [int(i) for i in np.argwhere(used[0] >= A)[0]]
        raise CMDPInputError(f"{name}: column plays action {int(used[0][tuple(idx)])} at {idx}, there are A = {A}")
    shape = (*used.shape[1:], A)
    check_estimate(Estimate(8.0 * float(np.prod(shape)), 0.0), f"{name} (its dense {shape} table)", max_memory)
    out: Array = np.zeros(shape)
    np.put_along_axis(out, used[0][..., None].astype(np.intp), 1.0, axis=-1)
    return out


def table_mixture(table: Any, name: str = "policy") -> MixturePolicy:
    """The one-column [`MixturePolicy`][cmdp_rl.evaluation.mixture.MixturePolicy] of a deterministic
    ``(H, S, A)`` (or ``(S, A)``) table, every row one-hot (the inverse of
    [`deterministic_table`][cmdp_rl.planning.mixture_table.deterministic_table]); a randomized table
    is refused, naming ``name`` (it is no mixture of deterministic policies without the model)."""
    arr = as_float_array(name, table, np.ndim(table))
    if arr.ndim not in (2, 3) or arr.shape[-1] < 1:
        raise CMDPInputError(f"{name}: expected an (H, S, A) or (S, A) table, got shape {arr.shape}")
    if not (np.isclose(arr.max(-1), 1.0, rtol=0.0, atol=1e-12).all() and np.isclose(arr.sum(-1), 1.0).all()):
        raise CMDPInputError(
            f"{name}: a randomized Markov table, not one deterministic policy: it has no compact form without the "
            "model's kernel (write FILE.npy)"
        )
    return mixture_policy(arr.argmax(-1)[None], np.ones(1), arr.shape[-1])


__all__ = ["deterministic_table", "markov_table", "table_mixture"]
