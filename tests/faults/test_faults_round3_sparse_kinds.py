"""Round three, class 3: sparse inputs skipped the checks dense inputs get.

A complex sparse kernel or counts matrix lost its imaginary part silently (a ``ComplexWarning``
at most) and boolean sparse counts were accepted, where the same data dense is refused naming
``P`` or ``counts``. Now one rule (``validation.check_real_kind``) reads a dense array and a
sparse one's stored entries: complex, boolean and string entries are refused in every SciPy
format, by ``CMDP``, ``certify``, ``solve_safe``, a model file and the command line.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from faultkit import EXIT_BAD_INPUT, assert_one_line_refusal, cases, cli_batch

from cmdp_rl import CMDP, CMDPInputError, certify, make, solve_safe

CLASS = "Round 3: 3. Sparse inputs get the dense checks"

FORMATS = ("csr_array", "coo_matrix", "csc_array", "lil_matrix", "dok_array", "bsr_array", "dia_matrix")


def _kinds(K: np.ndarray, integer: bool) -> dict[str, np.ndarray]:
    """The same entries as complex (with and without an imaginary part) and as booleans."""
    out = {"complex": K.astype(complex), "complex+imag": K.astype(complex) + 1e-3j * (K > 0)}
    if integer:
        out["bool"] = K > 0
    else:  # a boolean kernel with one True per row (rows that would sum to 1)
        b = np.zeros(K.shape, dtype=bool)
        b[np.arange(K.shape[0]), np.argmax(K, axis=1)] = True
        out["bool"] = b
    return out


def _refused(name: str, fn: Callable[..., object], *args: object) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a ComplexWarning would mean a silent cast
        with pytest.raises(CMDPInputError, match=rf"^{name}: cannot be read as a numeric array: it holds"):
            fn(*args)


def test_sparse_kernel_and_counts_refused_in_every_format(tally: Callable[[int], None]) -> None:
    model = make("1a")
    S, A, H = model.S, model.A, model.H
    K = model.P.reshape(S * A, S)
    counts = np.round(model.P * 10).reshape(S * A, S)
    policy = np.full((H, S, A), 1.0 / A)
    n = 0
    known = (model.r, model.c, model.c_bar, model.s0, H)
    for fmt in FORMATS[: cases(3, len(FORMATS))]:
        build = getattr(sp, fmt)
        for data in _kinds(K, integer=False).values():
            _refused("P", CMDP, build(data), *known)
            _refused("P", CMDP, data.reshape(S, A, S), *known)  # the same data dense
            n += 2
        for data in _kinds(counts, integer=True).values():
            _refused("counts", certify, policy, build(data), *known)
            _refused("counts", certify, policy, data.reshape(S, A, S), *known)
            n += 2
            if fmt == "csr_array" or cases(0, 1):  # solve_safe: one format in the sample, all in full
                _refused("counts", solve_safe, build(data), *known)
                n += 1
    tally(n)


def test_sparse_where_dense_is_expected(tally: Callable[[int], None]) -> None:
    model = make("1a")
    with pytest.raises(CMDPInputError, match=r"^r: expected a dense array, got a scipy.sparse"):
        CMDP(model.P, sp.csr_array(model.r), model.c, model.c_bar, model.s0, model.H)
    tally(1)


def test_cli_sparse_counts_and_model_files(tmp_path: Path, tally: Callable[[int], None]) -> None:
    model = make("1a")
    S, A, H = model.S, model.A, model.H
    counts = np.round(model.P * 10).reshape(S * A, S)
    np.save(tmp_path / "policy.npy", np.full((H, S, A), 1.0 / A))
    files = {"bool": sp.csr_array(counts > 0), "complex": sp.csr_array(counts.astype(complex) + 1j * (counts > 0))}
    argvs = []
    for kind, matrix in list(files.items())[: cases(1, 2)]:
        sp.save_npz(tmp_path / f"{kind}.npz", matrix)
        argvs.append(
            ["certify", "1a", "--policy", str(tmp_path / "policy.npy"), "--counts", str(tmp_path / f"{kind}.npz")]
        )
    # a model file whose sparse kernel holds complex entries (P_data, P_indices, P_indptr, P_shape)
    K = sp.csr_array(model.P.reshape(S * A, S))
    np.savez(
        tmp_path / "m.npz",
        P_data=K.data.astype(complex),
        P_indices=K.indices,
        P_indptr=K.indptr,
        P_shape=np.array(K.shape),
        r=model.r,
        c=model.c,
        c_bar=model.c_bar,
        s0=np.array(model.s0),
        H=np.array(H),
    )
    *counts_files, model_file = cli_batch([*argvs, ["solve", str(tmp_path / "m.npz")]])  # one interpreter
    for proc in counts_files:
        line = assert_one_line_refusal(proc, EXIT_BAD_INPUT)
        assert "counts" in line and ("booleans" in line or "complex" in line), line
    line = assert_one_line_refusal(model_file, EXIT_BAD_INPUT)
    assert "P_data" in line and "complex" in line, line
    tally(cases(1, 2) + 1)
