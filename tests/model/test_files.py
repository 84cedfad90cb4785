"""The model's file format: ``read_model`` gives the constructor's arguments and names the file."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from cmdp_rl import CMDP, CMDPInputError
from cmdp_rl.model.files import read_model, write_model


def test_read_model_gives_the_constructor_arguments(tmp_path) -> None:
    K = sp.csr_array(np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0], [0.0, 1.0]]))
    m = CMDP(K, np.full((2, 2), 0.5), np.zeros((1, 2, 2)), [1.0], s0=np.array([0.25, 0.75]), H=3, meta={"k": 1})
    path = tmp_path / "m.npz"
    m.save(path)
    arrays, names, meta, label = read_model(path)
    assert sorted(arrays) == ["H", "P", "c", "c_bar", "r", "s0"] and meta == {"k": 1} and names == ""
    assert label == f"model file {str(path)!r}"
    assert isinstance(arrays["P"], sp.csr_array) and np.array_equal(arrays["P"].toarray(), K.toarray())
    assert arrays["s0"].dtype == np.float64 and int(arrays["H"]) == 3


def test_read_model_names_the_file_and_the_key(tmp_path) -> None:
    path = tmp_path / "bad.npz"
    write_model(
        path,
        {
            "P": np.eye(2)[:, None, :],
            "r": np.zeros((2, 1)),
            "c": np.zeros((0, 2, 1)),
            "c_bar": np.zeros(0),
            "s0": np.int64(0),
            "H": np.int64(2),
            "meta": np.str_("{"),
        },
    )
    with pytest.raises(CMDPInputError, match=r"model file '.*bad.npz': key 'meta' is not valid JSON"):
        read_model(path)
