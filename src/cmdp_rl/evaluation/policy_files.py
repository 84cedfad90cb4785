"""Policy files, chosen by extension: ``FILE.npy`` the dense randomized table (``(H, S, A)``, or
``(S, A)`` for a discounted model: what ``np.save`` writes), ``FILE.npz`` the compact form of a
[`MixturePolicy`][cmdp_rl.evaluation.mixture.MixturePolicy] (keys ``columns`` ``(K, H, S)`` or
``(K, S)`` unsigned integers, ``weights`` ``(K,)`` floats, ``kind`` the string ``"mixture"``).

Writes are atomic ([`cmdp_rl.plumbing.atomic`][cmdp_rl.plumbing.atomic]); every refusal is one line
naming the file (and the key).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from cmdp_rl.evaluation.mixture import MIXTURE_KIND, MixturePolicy, mixture_policy
from cmdp_rl.plumbing.atomic import atomic_path, atomic_stream
from cmdp_rl.plumbing.decoding import decoding
from cmdp_rl.plumbing.paths import check_input_path
from cmdp_rl.plumbing.validation import CMDPInputError, CMDPTypeError, as_float_array

#: the keys of a compact ``.npz`` policy file
NPZ_KEYS = ("columns", "weights", "kind")


def _suffix(path: str | os.PathLike[str], name: str) -> str:
    """The extension of a policy file's ``path`` (``.npy`` or ``.npz``), else a one-line refusal naming ``name``."""
    if not isinstance(path, (str, os.PathLike)):
        raise CMDPTypeError(f"{name}: must be the path of a .npy or .npz file, got {type(path).__name__}")
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    if suffix not in (".npy", ".npz"):
        raise CMDPInputError(
            f"{name}: {os.fspath(path)}: a policy file is FILE.npy (the dense table) or FILE.npz (the compact "
            f"mixture), got {suffix or 'no extension'}"
        )
    return suffix


def save_policy(path: str | os.PathLike[str], policy: Any) -> None:
    """Write ``policy`` to ``path``, the format chosen by the extension.

    Args:
        path: ``FILE.npy`` or ``FILE.npz``.
        policy: a dense randomized table (an array: ``.npy`` only), a
            [`MixturePolicy`][cmdp_rl.evaluation.mixture.MixturePolicy] (``.npz`` only: its dense
            table needs the model's state distributions, ``PlanResult.policy``), or a
            ``PlanResult`` (``.npy``: its ``policy``; ``.npz``: its columns and weights, refused
            for a plan without columns).
    """
    suffix = _suffix(path, "path")
    target = os.fspath(path)
    if suffix == ".npz":
        mix = policy if isinstance(policy, MixturePolicy) else MixturePolicy.of_plan(_plan_or_refuse(policy, target))
        with atomic_path(target) as tmp, open(tmp, "wb") as fh:
            np.savez(fh, columns=mix.columns, weights=mix.weights, kind=np.array(MIXTURE_KIND))
        return
    if isinstance(policy, MixturePolicy):
        raise CMDPInputError(
            f"path: {target}: a MixturePolicy is saved compact, as FILE.npz (its dense table is the plan's "
            "policy, mixed by occupancy on the model)"
        )
    table = policy.policy if hasattr(policy, "columns") and hasattr(policy, "policy") else policy
    arr = as_float_array("policy", table, int(np.ndim(table)) if np.ndim(table) in (2, 3) else 3)
    with atomic_stream(target) as fh:
        np.save(fh, arr)


def _plan_or_refuse(policy: Any, target: str) -> Any:
    if hasattr(policy, "columns") and hasattr(policy, "weights"):
        return policy
    raise CMDPInputError(
        f"path: {target}: FILE.npz holds a compact mixture (a MixturePolicy or a PlanResult with columns), "
        f"got {type(policy).__name__}; save a dense table as FILE.npy"
    )


def load_policy(path: str | os.PathLike[str]) -> np.ndarray | MixturePolicy:
    """Read a policy file: ``FILE.npy`` gives the dense float64 table, ``FILE.npz`` a validated
    [`MixturePolicy`][cmdp_rl.evaluation.mixture.MixturePolicy] (the file does not name the model:
    [`evaluate`][cmdp_rl.evaluation.evaluate.evaluate] checks its shape and actions against
    it). Damaged files, missing keys, pickled data and wrong kinds are refused in one line naming
    the file and the key."""
    suffix = _suffix(path, "policy")
    label = f"policy: {os.fspath(path)}"
    check_input_path(path, label, f"a {suffix} file")
    with open(path, "rb") as fh:
        with decoding(label, f"not a readable {suffix} file"):
            loaded = np.load(fh, allow_pickle=False)
            if suffix == ".npy":
                if not isinstance(loaded, np.ndarray):
                    raise CMDPInputError(f"{label}: an .npz archive, not an .npy array (name it FILE.npz)")
                return as_float_array(label, loaded, loaded.ndim)
            if isinstance(loaded, np.ndarray):
                raise CMDPInputError(f"{label}: an .npy array, not an .npz archive (name it FILE.npy)")
            with loaded:
                return _mixture_from(label, {key: loaded[key] for key in loaded.files if key in NPZ_KEYS}, loaded.files)


def _mixture_from(label: str, arrays: dict[str, np.ndarray], files: list[str]) -> MixturePolicy:
    for key in NPZ_KEYS:
        if key not in arrays:
            keys = ", ".join(NPZ_KEYS)
            raise CMDPInputError(f"{label}: no key {key!r} (a compact policy has keys {keys}; this file has {files})")
    kind = arrays["kind"]
    if kind.dtype.kind != "U" or kind.shape != () or str(kind) != MIXTURE_KIND:
        raise CMDPInputError(f"{label}: key 'kind': must be the string {MIXTURE_KIND!r}, got {kind!r}")
    columns = arrays["columns"]
    if columns.dtype.kind not in "iu" or columns.size == 0:
        raise CMDPInputError(f"{label}: key 'columns': must be a non-empty integer array, got {columns.dtype.name}")
    try:
        return mixture_policy(columns, arrays["weights"])
    except CMDPInputError as exc:
        raise CMDPInputError(f"{label}: {exc}") from None


__all__ = ["NPZ_KEYS", "load_policy", "save_policy"]
