"""``cmdp_rl.learn``'s records and run logs of fixed seeds, against a fixture of the code before issue 34.

Issue 34 (item 2) rebuilt how a simulator run hands the learner its estimates (the learner is built
from known parts instead of a stand-in model); nothing the run computes may change. The fixture
``tests/data/learning_records.npz`` holds, for the cases of ``NAMES``, every array of the
record and the run log's text, as computed by the code at commit ``ac2e304`` (before the change),
by running this module as a script from the repository's root::

    .venv/bin/python tests/simulators/test_learning_records.py

The cases cover every online learner on a black box with unknown rewards, costs and start (the
virtual start state), one that terminates early (the absorbing state joins the planner
mid-run), known ``r, c, s0`` on a library environment (scored exactly), and the sparse statistics
of a simulator too large for dense ``(S', A, S')`` arrays.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from cmdp_rl import CMDP, learn, random_cmdp, scenario_cmdp
from cmdp_rl.envs.generators import garnet
from cmdp_rl.envs.gym_env import CMDPEnv
from cmdp_rl.learners import SAFE_ALGORITHMS
from cmdp_rl.planning.baseline import safe_baseline

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "learning_records.npz"
#: the record's arrays compared (``settings`` gains ``radius`` for online-crl, see the test)
ARRAYS = (
    "realized_return",
    "realized_costs",
    "planned_value",
    "episode_status",
    "iterations",
    "min_visits",
    "baseline",
    "policy",
    "value",
    "costs",
    "value_gap",
    "violation",
)


class Box(gym.Env[int, int]):
    """A random CMDP behind ``reset``/``step``: a start distribution over 4 states, the step
    cost in ``info["cost"]``, and (``terminal``) an episode that ends on reaching that state."""

    def __init__(self, m: CMDP, terminal: int | None = None) -> None:
        self._m, self._terminal = m, terminal
        self._init = np.zeros(m.S)
        self._init[:4] = 0.25
        self.observation_space = gym.spaces.Discrete(m.S)
        self.action_space = gym.spaces.Discrete(m.A)

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[int, dict[str, Any]]:
        super().reset(seed=seed)
        self._s = int(self.np_random.choice(self._m.S, p=self._init))
        return self._s, {}

    def step(self, a: int) -> Any:
        m, s = self._m, self._s
        self._s = int(self.np_random.choice(m.S, p=m.P[s, a]))
        done = self._terminal is not None and self._s == self._terminal
        return self._s, float(m.r[s, a]), done, False, {"cost": float(m.c[0, s, a])}


def _baseline(H: int, S: int, A: int) -> tuple[np.ndarray, np.ndarray]:
    """A uniform policy with a generous cost bound: the safe learners' input (their numbers depend
    on it only through the plans, which the fixture records)."""
    return np.full((H, S, A), 1.0 / A), np.array([0.5])


#: the cases, by name: every online learner with unknown rewards, costs and start, then on a black box
#: that terminates early; five learners with known ``r, c, s0``; two with sparse statistics
#: the online learners of the fixture's code (issue 34); later learners have no "before" to compare with
FIXED = ("online-crl", "plugin", "optcmdp", "optcmdp-bonus", "optdual", "optpess", "dope")
NAMES = (
    *(f"{algo}-{kind}" for algo in FIXED for kind in ("unknown", "terminating")),
    *(f"{algo}-known" for algo in ("online-crl", "optdual", "plugin", "optpess", "dope")),
    *(f"{algo}-sparse" for algo in ("online-crl", "optcmdp")),
)


def case(name: str) -> dict[str, Any]:
    """``learn``'s keywords of the case ``name`` (a fresh environment each time)."""
    algo, kind = name.rsplit("-", 1)
    if kind == "known":
        s1 = scenario_cmdp("1a")
        known: dict[str, Any] = {}
        if algo in SAFE_ALGORITHMS:  # the model's own safe baseline (strictly safe): the plans leave it
            base = safe_baseline(s1)
            known = {"baseline": (base.policy, base.costs), "bonus_scale": 0.0, **({"k0": 2} if algo == "dope" else {})}
        return dict(
            env=CMDPEnv(s1),
            H=s1.H,
            c_bar=s1.c_bar,
            episodes=12,
            algorithm=algo,
            r=s1.r,
            c=s1.c,
            s0=s1.s0,
            seed=1,
            **known,
        )
    if kind == "sparse":  # 1,500 states and the virtual start: dense (S', A, S') arrays would be 36 MB
        big = garnet(1500, 2, 2, 1, 0.5, 3, 0).to_sparse()
        return dict(env=CMDPEnv(big), H=3, c_bar=big.c_bar, episodes=4, algorithm=algo, seed=5)
    m = random_cmdp(12, 3, 6, 1, seed=7, support=3)
    extra: dict[str, Any] = {"k0": 3} if algo == "dope" else {}
    if algo in SAFE_ALGORITHMS:
        extra["baseline"] = _baseline(6, 12, 3)
    env = Box(m) if kind == "unknown" else Box(m, terminal=5)
    seed = 3 if kind == "unknown" else 4
    return dict(env=env, H=6, c_bar=np.array([1.5]), episodes=14, algorithm=algo, seed=seed, **extra)


def run_case(kwargs: dict[str, Any], log: Path) -> dict[str, Any]:
    """The record's arrays, its counts (COO triplets) and the run log's text of one case."""
    rec = learn(run_log=log, deploy="last", **kwargs)  # the fixture's code handed over the last policy
    out: dict[str, Any] = {k: np.asarray(getattr(rec, k)) for k in ARRAYS if getattr(rec, k) is not None}
    coo = rec.counts.tocoo()
    out["counts"] = np.stack([coo.row, coo.col, coo.data]).astype(np.int64)
    out["counts_shape"] = np.array(rec.counts.shape)
    out["run_log"] = np.array(log.read_text())
    return out


def _saved() -> dict[str, np.ndarray]:
    with np.load(FIXTURE, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_records_and_run_logs_of_fixed_seeds_are_unchanged(name: str, tmp_path: Path) -> None:
    saved = _saved()
    got = run_case(case(name), tmp_path / "run.jsonl")
    keys = {k.split("/", 1)[1] for k in saved if k.startswith(f"{name}/")}
    assert keys == set(got), (sorted(keys), sorted(got))
    for key in sorted(keys):
        want, have = saved[f"{name}/{key}"], got[key]
        if key == "run_log":  # the run log's path is not in it; the text is the same byte for byte
            assert str(have) == str(want)
        else:
            np.testing.assert_array_equal(have, want, err_msg=f"{name}: {key}")


def main() -> None:
    """Write the fixture (run from the repository's root, before a change to compare against)."""
    import tempfile

    arrays: dict[str, np.ndarray] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, name in enumerate(NAMES):
            for key, value in run_case(case(name), Path(tmp) / f"{i}.jsonl").items():
                arrays[f"{name}/{key}"] = value
            print(name, file=sys.stderr)
    np.savez_compressed(FIXTURE, **arrays)  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
