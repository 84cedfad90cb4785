"""A large sparse model runs end to end in 2 GiB of address space (DESIGN section 16).

A child process caps its address space (``RLIMIT_AS``) at 2 GiB before importing the library,
then builds a Garnet model with ``S = 10,000``, ``A = 10``, 5 successors per pair (a dense
``(S, A, S)`` kernel would be 8 GB) and runs on it: exact evaluation of the uniform policy (an
``(H, S, A)`` float array, 80 MB), the exact planner, the generative model's batch counts,
``certify`` and ``solve_safe`` on those (CSR) counts, a few episodes, save/load, a
transition-table round trip, the Gymnasium importer on a 10,000 x 10 table and the command
line's ``export`` and ``solve``. Any ``(S, A, S)`` array would fail the child with a ``MemoryError``.

Address space, measured (Linux, Python 3.11): importing the library (NumPy, SciPy with its
OpenBLAS, numba/llvmlite, HiGHS) needs about 500 MiB; the whole run peaks at about 1.2-1.3 GiB
(VmPeak, numba compiling into a cold cache included), so 2 GiB leaves room. Below about 450 MiB
the import fails, sometimes with a clean ``MemoryError``, sometimes by spinning inside SciPy's
OpenBLAS initialization, hence the child's timeout.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

LIMIT_BYTES = 2 * 2**30

CHILD = textwrap.dedent(
    """
    import resource, sys

    LIMIT = int(sys.argv[1])
    _soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT if _hard == resource.RLIM_INFINITY else min(LIMIT, _hard), _hard))

    import json, os, subprocess, time

    T0 = time.perf_counter()
    MARKS = {}


    def mark(name):
        with open("/proc/self/status") as fh:
            peak = next(int(line.split()[1]) for line in fh if line.startswith("VmPeak:"))
        MARKS[name] = {"s": round(time.perf_counter() - T0, 2), "vm_peak_mib": peak // 1024}


    import numpy as np
    import scipy.sparse as sp

    import gymnasium as gym

    from cmdp_rl import CMDP, EpisodicEnv, GenerativeModel, certify, evaluate, solve, solve_safe
    from cmdp_rl.envs.gymnasium_import import from_gymnasium
    from cmdp_rl.envs.generators import garnet_kernel


    class TableEnv:  # Gymnasium's tabular shape: P[s][a] lists of (p, s2, reward, done)

        def __init__(self, S, A, B, rng):
            self.observation_space, self.action_space, self.spec = gym.spaces.Discrete(S), gym.spaces.Discrete(A), None
            nxt, rew = rng.integers(S, size=(S, A, B)).tolist(), rng.random((S, A)).tolist()
            row = lambda s, a: [(1.0 / B, nxt[s][a][k], rew[s][a], False) for k in range(B)]
            self.P = {s: {a: row(s, a) for a in range(A)} for s in range(S)}

        @property
        def unwrapped(self):
            return self


    mark("import")
    S, A, B, N, H = 10_000, 10, 5, 3, 100
    rng = np.random.default_rng(0)
    model = CMDP(garnet_kernel(S, A, B, rng), rng.random((S, A)), rng.random((N, S, A)), np.full(N, float(H)), 0, H)
    assert model.is_sparse and model.nnz == S * A * B
    mark("build")

    uniform = np.full((H, S, A), 1.0 / A)
    ev = evaluate(model, uniform)
    assert np.isfinite(ev.value) and ev.costs.shape == (N,)
    mark("evaluate")

    model = model.replace(c_bar=ev.costs)  # the uniform policy meets them: feasible
    plan = solve(model, gap_tol=1e-6 * H)
    assert plan.status == "optimal" and plan.gap <= 1e-6 * H and plan.value >= ev.value - 1e-6 * H
    mark("solve")

    counts = GenerativeModel(model, np.random.default_rng(1)).sample_counts(4)
    assert isinstance(counts, sp.csr_array) and counts.shape == (S * A, S)
    assert np.all(np.asarray(counts.sum(axis=1)).ravel() == 4)
    mark("sample_counts")

    cert = certify(plan.policy, counts, model.r, model.c, model.c_bar, model.s0, H, 0.05)
    assert cert.value_lo <= cert.value_hi and cert.cost_hi.shape == (N,)
    mark("certify")

    # H = 10 keeps the robust planner's iterations short; the sizes are what is tested
    safe = solve_safe(counts, model.r, model.c, np.full(N, 9.0), model.s0, 10, 0.05, iterations=2)
    assert safe.policy.shape == (10, S, A)
    mark("solve_safe")

    env = EpisodicEnv(model, np.random.default_rng(2))
    entry = np.zeros(model.nnz, dtype=np.int64)
    for _ in range(5):
        states, actions, nexts = env.rollout(uniform, entry)
        rows = states * A + actions
        K = model.K
        for row, nxt in zip(rows.tolist(), nexts.tolist()):
            assert nxt in K.indices[K.indptr[row] : K.indptr[row + 1]]
    env.reset()
    for t in range(H):
        env.step(t % A)
    assert entry.sum() == 5 * H
    mark("episodes")

    path = os.path.join(sys.argv[2], "big.npz")
    model.save(path)
    back = CMDP.load(path)
    assert back.is_sparse and (back.K != model.K).nnz == 0
    mark("save_load")

    table = os.path.join(sys.argv[2], "big.csv")
    model.to_table(table)
    again = CMDP.from_table(table, c_bar=model.c_bar, s0=model.s0, H=H, sparse=True)
    assert again.is_sparse and (again.K != model.K).nnz == 0 and np.array_equal(again.r, model.r)
    mark("table")

    imported = from_gymnasium(TableEnv(S, A, B, np.random.default_rng(3)), H)
    assert imported.is_sparse and imported.S == S and imported.nnz <= S * A * B
    mark("gymnasium_import")

    exported = subprocess.run(
        [sys.executable, "-m", "cmdp_rl", "export", path, os.path.join(sys.argv[2], "copy.npz")],
        capture_output=True, text=True, timeout=300,
    )
    assert exported.returncode == 0 and "sparse, nnz=500,000" in exported.stdout, exported.stderr
    mark("export")

    cli = subprocess.run(
        # a loose gap: this checks the command's memory on the model, not its optimality (solved above)
        [sys.executable, "-m", "cmdp_rl", "solve", path, "--gap-tol", str(1e-2 * H)],
        capture_output=True, text=True, timeout=300,
    )
    mark("cli")
    print(json.dumps({"marks": MARKS, "cli_rc": cli.returncode, "cli_out": cli.stdout, "cli_err": cli.stderr[-2000:]}))
    """
)


@pytest.mark.slow
def test_large_sparse_model_end_to_end_in_2_gib(tmp_path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(LIMIT_BYTES), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, f"child failed (rc {out.returncode}):\n{out.stderr[-4000:]}"
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["cli_rc"] in (0, 1), report["cli_err"]
    assert "sparse" in report["cli_out"] and "status" in report["cli_out"]
    assert report["marks"]["cli"]["vm_peak_mib"] < LIMIT_BYTES // 2**20
