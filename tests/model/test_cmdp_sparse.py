"""Sparse models in and out: .npz save/load, transition tables, and the Gymnasium import's sparse kernel."""

from __future__ import annotations

import numpy as np
import pytest

import cmdp_rl.envs.gymnasium_import as gymnasium_import
from cmdp_rl import CMDP, CMDPInputError, random_cmdp
from cmdp_rl.envs.generators import garnet_kernel
from cmdp_rl.model.sparse import MAX_DENSE_BYTES, SPARSE_ABOVE_BYTES, dense_bytes
from cmdp_rl.model.tables import from_table, to_table


def _sparse_model(S: int = 30, A: int = 3, b: int = 4, N: int = 2, H: int = 7, seed: int = 0) -> CMDP:
    rng = np.random.default_rng(seed)
    K = garnet_kernel(S, A, b, rng)
    return CMDP(K, rng.random((S, A)), rng.random((N, S, A)), np.full(N, H / 2), s0=2, H=H, names="garnet-ish")


def _assert_same_model(x: CMDP, y: CMDP) -> None:
    assert x.is_sparse and y.is_sparse
    for a, b in ((x.K.data, y.K.data), (x.K.indices, y.K.indices), (x.K.indptr, y.K.indptr)):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert x.K.shape == y.K.shape
    for a, b in ((x.r, y.r), (x.c, y.c), (x.c_bar, y.c_bar)):
        assert np.array_equal(a, b)
    assert (x.s0, x.H) == (y.s0, y.H)


# ---------------------------------------------------------------- save / load


def test_save_load_round_trip_of_a_sparse_model(tmp_path) -> None:
    m = _sparse_model()
    m = m.replace(meta={"source": "test", "b": 4})
    path = tmp_path / "m.npz"
    m.save(path)
    with np.load(path) as data:
        keys = set(data.files)
    assert {"P_data", "P_indices", "P_indptr", "P_shape", "r", "c", "c_bar", "s0", "H"} <= keys
    assert "P" not in keys
    back = CMDP.load(path)
    _assert_same_model(back, m)
    assert back.names == m.names and dict(back.meta) == dict(m.meta)
    dense_path = tmp_path / "d.npz"
    m.to_dense().save(dense_path)
    with np.load(dense_path) as data:
        assert "P" in data.files and "P_data" not in data.files
    assert np.array_equal(CMDP.load(dense_path).P, m.to_dense().P)


def _write(path, m: CMDP, **overrides) -> None:
    K = m.K
    arrays = {
        "P_data": K.data,
        "P_indices": K.indices,
        "P_indptr": K.indptr,
        "P_shape": np.array(K.shape),
        "r": m.r,
        "c": m.c,
        "c_bar": m.c_bar,
        "s0": np.int64(m.s0),
        "H": np.int64(m.H),
    }
    arrays.update(overrides)
    np.savez(path, **{k: v for k, v in arrays.items() if v is not None})


def _bad_indptr(m: CMDP) -> np.ndarray:
    ptr = m.K.indptr.copy()
    ptr[3], ptr[4] = ptr[4], ptr[3]  # non-monotone
    return ptr


def _out_of_range(m: CMDP) -> np.ndarray:
    ind = m.K.indices.copy()
    ind[5] = m.S
    return ind


@pytest.mark.parametrize(
    "overrides, match",
    [
        ({"P": np.zeros((30, 3, 30))}, r"holds both a dense kernel 'P' and sparse kernel keys"),
        ({"P_indptr": None, "P_shape": None}, r"missing key\(s\) \['P_indptr', 'P_shape'\]"),
        ({"P_indices": "out_of_range"}, r"P_indices: column indices must lie in \[0, 29\]"),
        ({"P_indices": np.array([-1])}, r"P_data: must be 1-d with one entry per index"),
        ({"P_indptr": "non_monotone"}, r"P_indptr: must be non-decreasing"),
        ({"P_indptr": np.array([0, 1])}, r"P_indptr: .*have 91 entries"),
        ({"P_indices": "float"}, r"P_indices: must be a 1-d integer array"),
        ({"P_shape": np.array([90])}, r"P_shape: must be two positive integers"),
    ],
    ids=["both", "missing", "out-of-range", "short-indices", "non-monotone", "indptr-length", "float", "shape"],
)
def test_load_refuses_malformed_sparse_files(tmp_path, overrides: dict, match: str) -> None:
    m = _sparse_model()
    fixed = dict(overrides)
    if fixed.get("P_indices") is not None and isinstance(fixed["P_indices"], str):
        fixed["P_indices"] = _out_of_range(m) if fixed["P_indices"] == "out_of_range" else m.K.indices.astype(float)
    if isinstance(fixed.get("P_indptr"), str):
        fixed["P_indptr"] = _bad_indptr(m)
    path = tmp_path / "bad.npz"
    _write(path, m, **fixed)
    with pytest.raises(CMDPInputError, match=match) as ex:
        CMDP.load(path)
    assert "\n" not in str(ex.value) and "bad.npz" in str(ex.value)


def test_load_checks_the_kernel_rules_of_a_sparse_file(tmp_path) -> None:
    m = _sparse_model()
    data = m.K.data.copy()
    data[0] += 0.5
    path = tmp_path / "sum.npz"
    _write(path, m, P_data=data)
    with pytest.raises(CMDPInputError, match=r"sum\.npz': P\[0, :\] \(state 0, action 0\): each kernel row must sum"):
        CMDP.load(path)


# ---------------------------------------------------------------- transition tables


def test_table_round_trip_of_a_sparse_model_is_exact(tmp_path) -> None:
    m = _sparse_model(S=40, A=3, b=5, N=2, seed=1)
    path = tmp_path / "t.csv"
    text = to_table(m, path)
    assert text == to_table(m.to_dense())  # the same table as the dense twin's
    assert len(text.splitlines()) == 1 + m.nnz
    back = from_table(path, c_bar=m.c_bar, s0=m.s0, H=m.H, sparse=True)
    _assert_same_model(back, m)
    dense_back = CMDP.from_table(path, c_bar=m.c_bar, s0=m.s0, H=m.H)  # small: dense by default
    assert not dense_back.is_sparse and np.array_equal(dense_back.P, m.to_dense().P)
    assert np.array_equal(dense_back.r, m.r) and np.array_equal(dense_back.c, m.c)


def test_dense_table_round_trip_is_exact_too(tmp_path) -> None:
    m = random_cmdp(7, 3, 5, 2, seed=4, support=3)
    m.to_table(tmp_path / "t.csv")
    back = CMDP.from_table(tmp_path / "t.csv", c_bar=m.c_bar, s0=m.s0, H=m.H)
    assert np.array_equal(back.P, m.P) and np.array_equal(back.r, m.r) and np.array_equal(back.c, m.c)
    forced = CMDP.from_table(tmp_path / "t.csv", c_bar=m.c_bar, s0=m.s0, H=m.H, sparse=True)
    assert forced.is_sparse and np.array_equal(forced.to_dense().P, m.P)


def test_a_large_sparse_model_is_written_and_read_without_densifying(tmp_path) -> None:
    S, A = 6000, 1  # its dense kernel is refused (above MAX_DENSE_BYTES); tables never build it
    assert dense_bytes(S, A) > MAX_DENSE_BYTES
    rng = np.random.default_rng(2)
    m = CMDP(garnet_kernel(S, A, 2, rng), rng.random((S, A)), None, None, 0, 3)
    path = tmp_path / "big.csv"
    m.to_table(path)
    back = from_table(path, s0=0, H=3)  # sparse=None: sparse, the dense kernel would exceed SPARSE_ABOVE_BYTES
    _assert_same_model(back, m)


def test_sparse_by_size_and_forced(tmp_path) -> None:
    S = 1500  # 1500 * 1 * 1500 * 8 bytes = 18 MB, above SPARSE_ABOVE_BYTES
    assert dense_bytes(S, 1) > SPARSE_ABOVE_BYTES
    rows = ["state,action,next_state,prob"] + [f"{s},0,{(s + 1) % S},1" for s in range(S)]
    path = tmp_path / "ring.csv"
    path.write_text("\n".join(rows) + "\n")
    assert from_table(path).is_sparse
    assert not from_table(path, sparse=False).is_sparse
    small = tmp_path / "small.csv"
    small.write_text("state,action,next_state,prob\n0,0,1,1\n1,0,0,1\n")
    assert not from_table(small).is_sparse and from_table(small, sparse=True).is_sparse
    with pytest.raises(CMDPInputError, match=r"sparse: must be True, False or None"):
        from_table(small, sparse="yes")


def test_repeated_rows_are_summed_as_in_the_dense_path(tmp_path) -> None:
    rows = [
        "state,action,next_state,prob,reward,cost_0",
        "0,0,0,0.1,1,0",
        "0,0,1,0.3,0,1",
        "0,0,0,0.2,1,0",
        "0,0,0,0.4,0.5,0.5",
        "0,1,1,1,0,0",
        "1,0,1,0.7,0,0",
        "1,0,1,0.3,0,0",
        "1,1,0,0.5,0,0",
        "1,1,1,0.5,0.25,1",
        "1,1,0,0,1,1",
    ]
    path = tmp_path / "t.csv"
    path.write_text("\n".join(rows) + "\n")
    s = from_table(path, c_bar=[1.0], H=2, sparse=True)
    d = from_table(path, c_bar=[1.0], H=2, sparse=False)
    assert np.array_equal(s.to_dense().P, d.P) and np.array_equal(s.r, d.r) and np.array_equal(s.c, d.c)
    assert s.nnz == 6 and s.K[2, 1] == 1.0  # (1, 0, 1): 0.7 + 0.3
    assert s.r[0, 0] == pytest.approx(0.1 + 0.2 + 0.2) and s.r[1, 1] == pytest.approx(0.125)


@pytest.mark.parametrize(
    "rows, match",
    [
        (["state,action,next_state,prob", "0,0,0,0.5", "0,0,1,0.4", "1,0,1,1"], r"\(state 0, action 0\) sum to"),
        (["state,action,next_state,prob", "0,0,2,1", "2,1,2,1"], r"state 1 has no rows, so no available action"),
        (
            ["state,action,next_state,prob", "0,0,1,0", "0,1,0,1", "1,0,1,1", "1,1,1,1"],
            r"\(state 0, action 0\) sum to 0.0, not 1",
        ),
        (["state,action,next_state,prob", "0,0,x,1"], "non-number 'x'"),
        (["state,action,next_state,prob", "0,0,0,-1"], "must be non-negative"),
    ],
)
def test_table_errors_are_the_same_for_a_sparse_kernel(tmp_path, rows, match) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("\n".join(rows) + "\n")
    for sparse in (True, False):
        with pytest.raises(CMDPInputError, match=match) as ex:
            from_table(path, H=2, sparse=sparse)
        assert "\n" not in str(ex.value)


# ---------------------------------------------------------------- Gymnasium import


@pytest.mark.parametrize(
    "env_id, cost, kw",
    [
        ("FrozenLake-v1", "hole", {"is_slippery": True}),
        ("CliffWalking-v1", "cliff", {}),
        ("Taxi-v4", "illegal", {}),
    ],
)
def test_gymnasium_sparse_kernel_equals_the_dense_one(monkeypatch, env_id: str, cost: str, kw: dict) -> None:
    dense = gymnasium_import.from_gymnasium(env_id, 10, cost, 0.2, **kw)
    assert not dense.is_sparse  # toy-text imports stay dense
    monkeypatch.setattr(gymnasium_import, "SPARSE_ABOVE_BYTES", 0)
    sparse = gymnasium_import.from_gymnasium(env_id, 10, cost, 0.2, **kw)
    assert sparse.is_sparse and (sparse.S, sparse.A, sparse.s0) == (dense.S, dense.A, dense.s0)
    assert np.array_equal(sparse.K.indptr, dense.K.indptr) and np.array_equal(sparse.K.indices, dense.K.indices)
    # rows normalized by a sum over the stored entries: equal up to the order of that sum
    np.testing.assert_allclose(sparse.K.data, dense.K.data, rtol=1e-15, atol=1e-16)
    assert np.array_equal(sparse.r, dense.r) and np.array_equal(sparse.c, dense.c)
    assert dict(sparse.meta) == dict(dense.meta)


class _BigTabular:
    """A tabular environment of Gymnasium's shape (``P[s][a]`` lists, Discrete spaces), large enough
    for a sparse kernel, with terminal transitions and a random initial state."""

    def __init__(self, S: int, A: int, seed: int) -> None:
        import gymnasium as gym

        rng = np.random.default_rng(seed)
        self.observation_space = gym.spaces.Discrete(S)
        self.action_space = gym.spaces.Discrete(A)
        self.spec = None
        self.P = {
            s: {
                a: [
                    (0.5, int(rng.integers(S)), float(rng.integers(-1, 2)), bool(rng.random() < 0.01)),
                    (0.25, int(rng.integers(S)), 0.0, False),
                    (0.25, (s + 1) % S, 1.0, False),
                ]
                for a in range(A)
            }
            for s in range(S)
        }
        init = np.zeros(S)
        init[:5] = 0.2
        self.initial_state_distrib = init

    @property
    def unwrapped(self) -> _BigTabular:
        return self


def test_gymnasium_import_of_a_large_tabular_env_is_sparse(monkeypatch) -> None:
    env = _BigTabular(1500, 2, seed=0)
    assert dense_bytes(1501, 2) > SPARSE_ABOVE_BYTES
    sparse = gymnasium_import.from_gymnasium(env, 5)
    assert sparse.is_sparse and sparse.S == 1501 and sparse.s0 == 1500
    assert sparse.meta["start_state_added"] is True and sparse.meta["reward_map"] == {"lo": -1.0, "hi": 1.0}
    monkeypatch.setattr(gymnasium_import, "SPARSE_ABOVE_BYTES", 2**62)
    dense = gymnasium_import.from_gymnasium(env, 5)
    assert not dense.is_sparse
    assert np.array_equal(sparse.K.indptr, dense.K.indptr) and np.array_equal(sparse.K.indices, dense.K.indices)
    np.testing.assert_allclose(sparse.K.data, dense.K.data, rtol=1e-15, atol=1e-16)
    assert np.array_equal(sparse.r, dense.r) and np.array_equal(sparse.c, dense.c)
    # absorbing terminal states and the added start state's row
    Kd = dense.K.toarray()
    start = Kd[1500 * 2 : 1501 * 2]
    assert np.allclose(start[:, :5], 0.2) and np.all(start[:, 5:] == 0)


# ---------------------------------------------------------------- the kernel's layout


def test_the_model_asks_its_layout() -> None:
    """``layout``, ``P``/``K``, ``nnz``, ``nbytes``, ``to_dense``/``to_sparse`` and ``repr`` of a
    sparse model and of its dense twin, from the arrays themselves."""
    s = _sparse_model(S=6, A=2, b=2, N=1, H=3)
    d = s.to_dense()
    assert (s.layout, d.layout) == ("sparse", "dense") and s.is_sparse and not d.is_sparse
    assert s.to_sparse() is s and d.to_dense() is d
    assert s.kernel is s.K and d.kernel is d.P
    assert s.nnz == d.nnz == int(np.count_nonzero(d.P)) == 6 * 2 * 2  # b = 2 successors per pair
    assert s.nbytes == s.K.data.nbytes + s.K.indices.nbytes + s.K.indptr.nbytes + s.r.nbytes + s.c.nbytes + 8
    assert d.nbytes == d.P.nbytes + d.r.nbytes + d.c.nbytes + 8
    assert np.array_equal(d.to_sparse().K.toarray(), s.K.toarray())
    assert "sparse, nnz=24" in repr(s) and "dense" in repr(d)
    assert d.dense_kernel("x") is d.P and np.array_equal(s.dense_kernel("x"), d.P)
    with pytest.raises(CMDPInputError, match=r"cmdp.P: this model's kernel is sparse \(S=6, A=2\); use cmdp.K"):
        _ = s.P
