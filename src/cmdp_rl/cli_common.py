"""Pieces the command line's commands share: output-file checks, ``.npy`` files, the
first-run compilation note. (No import of :mod:`cmdp_rl.cli`: the commands' modules import
this one.)"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from .validation import CMDPInputError


def check_output_file(path: str, force: bool, option: str) -> Path:
    """An output file path that can be written: its folder exists and is writable, it is not a
    folder, and an existing file is only replaced with ``--force`` (checked before any work;
    ``force=True`` also for a file that is appended to, such as a run log)."""
    p = Path(path)
    if p.is_dir():
        raise CMDPInputError(f"{option}: {path} is a folder; give a file name")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.exists():
        raise CMDPInputError(f"{option}: folder {parent} does not exist")
    if not parent.is_dir():
        raise CMDPInputError(f"{option}: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CMDPInputError(f"{option}: cannot write into {parent} (permission denied)")
    if p.exists() and not force:
        raise CMDPInputError(f"{option}: {path} exists; use --force to overwrite it")
    return p


def _kernels_cached() -> bool:
    """Whether numba's on-disk cache holds the compiled kernels (else the first call compiles them)."""
    pkg = Path(__file__).resolve().parent
    marks = ("planning/_kernels.colgen_loop", "learners/batched._crl_batch", "sampling._rollout")
    return all(any((pkg / Path(m).parent / "__pycache__").glob(f"{Path(m).name}-*.nbi")) for m in marks)


def note_compilation() -> None:
    if not _kernels_cached():
        print("cmdp-rl: compiling the numerical kernels (first run only, up to about a minute) ...", file=sys.stderr)


def save_npy(path: Path, array: np.ndarray) -> None:
    from .atomic import atomic_path

    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.save(fh, array)


def save_counts(path: Path, counts: Any, S: int, A: int) -> None:
    """Transition counts to ``path``: ``FILE.npz`` an ``(S*A, S)`` CSR matrix
    (``scipy.sparse.save_npz``, what ``cmdp-rl certify --counts`` reads), any other name a dense
    ``(S, A, S)`` int64 ``.npy`` array. ``counts``: dense ``(S, A, S)`` or sparse ``(S*A, S)``."""
    import scipy.sparse as sp

    from .atomic import atomic_path

    if path.suffix == ".npz":
        csr = sp.csr_array(counts) if sp.issparse(counts) else sp.csr_array(np.asarray(counts).reshape(S * A, S))
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            sp.save_npz(fh, csr)
        return
    dense = counts.toarray() if sp.issparse(counts) else np.asarray(counts)
    save_npy(path, np.asarray(dense, dtype=np.int64).reshape(S, A, S))


def load_npy(path: str, option: str) -> np.ndarray:
    """An array from a ``.npy`` file, or a one-line error naming the option."""
    if not os.path.isfile(path):
        raise CMDPInputError(f"{option}: {path}: no such file")
    try:
        return np.asarray(np.load(path, allow_pickle=False))
    except (OSError, ValueError, EOFError) as exc:
        raise CMDPInputError(f"{option}: {path}: not a readable .npy array ({exc})") from None


__all__ = ["check_output_file", "load_npy", "note_compilation", "save_counts", "save_npy"]
