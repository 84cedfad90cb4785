"""Online-CRL's compiled episode batches give the numbers of the one-by-one loop, bit for bit."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from cmdp_rl import CMDPInputError, EpisodicEnv, OnlineCRL, random_cmdp
from cmdp_rl.envs.scenarios import scenario_cmdp
from cmdp_rl.learners import batched
from cmdp_rl.learners.episodes import play_episodes
from cmdp_rl.learners.metrics import Scorer

FIELDS = ("value", "costs", "value_gap", "violation", "planned_value", "iterations", "min_visits", "counts", "policy")


def _fit(name: str, episodes: int, batched_: bool, seed: int = 3, **kw: Any) -> tuple[Any, EpisodicEnv]:
    m = scenario_cmdp(name)
    env = EpisodicEnv(m, np.random.default_rng(seed))
    rec = OnlineCRL(m, 0.1, episodes=episodes, **kw).fit(env, Scorer.for_model(m), batched=batched_)
    return rec, env


def _assert_same(a: Any, b: Any) -> None:
    for f in FIELDS:  # counts: the records' CSR matrices, compared dense
        x, y = (v.toarray() if f == "counts" else v for v in (getattr(a, f), getattr(b, f)))
        np.testing.assert_array_equal(x, y, err_msg=f)
    assert list(a.episode_status) == list(b.episode_status)
    # realized sums: the same steps, summed in another order (compiled loop against NumPy's sum)
    np.testing.assert_allclose(a.realized_return, b.realized_return, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.realized_costs, b.realized_costs, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", ["1a", "1b", "2"])
def test_batches_equal_one_by_one(name: str) -> None:
    one, env1 = _fit(name, 400, False)
    many, env2 = _fit(name, 400, True)
    _assert_same(one, many)
    # the environment is left where the one-by-one loop leaves it: same generator state and counters
    assert (env1.state, env1.t, env1.samples_drawn) == (env2.state, env2.t, env2.samples_drawn)
    assert env1.rng.random() == env2.rng.random()
    # what the episodes returned agrees with the exact values of the policies played, within noise
    K = one.episodes
    noise = 4.0 * one.realized_return.std() / np.sqrt(K) + 1e-9
    assert abs(one.realized_return.mean() - one.value.mean()) <= noise


def test_batches_with_the_valid_radius_equal_one_by_one() -> None:
    one, _ = _fit("1a", 300, False, radius="empirical-bernstein")
    many, _ = _fit("1a", 300, True, radius="empirical-bernstein")
    _assert_same(one, many)


@pytest.mark.slow
def test_on_episode_at_checkpoints_and_every_episode() -> None:
    m = scenario_cmdp("1a")
    seen: dict[str, list[tuple[int, np.ndarray, np.ndarray]]] = {"one": [], "many": [], "every": []}

    def keep(key: str) -> Any:
        return lambda k, counts, policy: seen[key].append((k, counts.copy(), policy.copy()))

    marks = [1, 7, 50, 300, 301, 640]
    for key, flag in (("one", False), ("many", True)):
        learner = OnlineCRL(m, 0.1, episodes=640)
        learner.fit(EpisodicEnv(m, np.random.default_rng(0)), on_episode=keep(key), checkpoints=marks, batched=flag)
    assert [k for k, _, _ in seen["many"]] == marks
    for (k1, c1, p1), (k2, c2, p2) in zip(seen["one"], seen["many"], strict=True):
        assert k1 == k2 and np.array_equal(c1, c2) and np.array_equal(p1, p2)
    OnlineCRL(m, 0.1, episodes=20).fit(EpisodicEnv(m, np.random.default_rng(0)), on_episode=keep("every"))
    assert [k for k, _, _ in seen["every"]] == list(range(1, 21))
    assert int(seen["every"][-1][1].sum()) == 20 * m.H


def test_python_path_inside_a_batch_gives_the_same_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every other compiled call plays only one episode: the next one goes through the Python
    path (HiGHS fallback, larger pool) and the batch goes on with the remaining uniforms."""
    real = batched._crl_batch
    calls = {"n": 0}

    def stingy(*args: Any) -> Any:
        calls["n"] += 1
        args = list(args)
        if calls["n"] % 2 == 0:
            args[12] = args[12][:1]  # u: one episode only
        out = real(*args)
        return out

    monkeypatch.setattr(batched, "_crl_batch", stingy)
    monkeypatch.setattr(batched, "BATCH", 8)
    many, env2 = _fit("1b", 300, True)
    one, env1 = _fit("1b", 300, False)
    _assert_same(one, many)
    assert env1.rng.random() == env2.rng.random()
    assert calls["n"] > 10


def test_stopping_rule_draws_exactly_the_played_episodes() -> None:
    m = random_cmdp(3, 2, 4, seed=1)
    learner = OnlineCRL(m, 0.1, episodes=2000)
    env1, env2 = EpisodicEnv(m, np.random.default_rng(5)), EpisodicEnv(m, np.random.default_rng(5))
    stop_count = 3
    one = play_episodes(
        learner.known, learner.planner(), env1, 2000, stop=lambda c: bool(c.sum(-1).min() >= stop_count)
    )
    many = batched.play_crl_batched(learner, env2, 2000, stop_count=stop_count)
    assert 0 < len(many.min_visits) < 2000 and many.min_visits[-1] >= stop_count
    for f in ("planned_value", "iterations", "min_visits", "counts", "policy"):
        np.testing.assert_array_equal(getattr(one, f), getattr(many, f))
    assert env1.rng.random() == env2.rng.random() and env1.samples_drawn == env2.samples_drawn


def test_batched_refused_where_it_does_not_apply() -> None:
    m = scenario_cmdp("1a")
    with pytest.raises(CMDPInputError, match="batched: needs method='fast'"):
        OnlineCRL(m, 0.1, episodes=5, warm_start=False).fit(EpisodicEnv(m, np.random.default_rng(0)), batched=True)
    with pytest.raises(CMDPInputError, match="checkpoints"):
        OnlineCRL(m, 0.1, episodes=5).fit(EpisodicEnv(m, np.random.default_rng(0)), checkpoints=[0])


def test_environment_batch_bookkeeping_refuses_bad_input() -> None:
    env = EpisodicEnv(scenario_cmdp("1a"), np.random.default_rng(0))
    with pytest.raises(CMDPInputError, match="episodes"):
        env.episode_uniforms(0)
    with pytest.raises(CMDPInputError, match="last_state"):
        env.played(1, 9)
    with pytest.raises(TypeError, match="batched"):
        OnlineCRL(scenario_cmdp("1a"), 0.1, episodes=5).fit(env, batched="yes")  # type: ignore[arg-type]
    assert env.episode_uniforms(3).shape == (3, 10, 2) and env.samples_drawn == 0
