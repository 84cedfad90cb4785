"""A simulator run playing its plans' columns (``learn(..., play=...)``) and a compact baseline.

The scores are checked against ``evaluate`` of the columns' one-hot tables on the environment's own
model (a second path), and the columns' actions against the trajectories the run log records.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import mixture_by_tables

from cmdp_rl import CMDPInputError, evaluate, learn, scenario_cmdp, solve
from cmdp_rl.certificates.safe import one_hot
from cmdp_rl.evaluation.mixture import MixturePolicy
from cmdp_rl.plumbing.limits import simulator_estimate
from cmdp_rl.simulators.played import plays_tables

ENV = "cmdp_rl/Scenario1a-v0"


def test_plays_tables_follows_the_learner_and_the_memory() -> None:
    assert plays_tables("online-crl", "table", 1e12, 1.0)
    assert plays_tables("rpd", "auto", 1e12, 1.0)  # its policy is a table by construction
    assert plays_tables("online-crl", "auto", 1000.0, 1000.0)
    assert not plays_tables("online-crl", "auto", 1001.0, 1000.0)
    assert not plays_tables("dope", "mixture", 0.0, 1e12)


def test_beyond_the_tables_memory_auto_plays_mixtures_and_table_is_refused() -> None:
    """A limit between the run's estimate with mixtures and with tables: ``auto`` plays mixtures (and
    records it), ``table`` is refused before any step, naming the estimate."""
    m = scenario_cmdp("1a")
    with_tables = simulator_estimate(m.S, m.A, 10, 1, 3).bytes
    without = simulator_estimate(m.S, m.A, 10, 1, 3, tables=False).bytes
    assert without < with_tables
    limit = (without + with_tables) / 2
    rec = learn(ENV, H=10, c_bar=2, episodes=3, max_memory=limit, deploy="last")
    assert rec.settings["play"] == "mixture" and isinstance(rec.policy, MixturePolicy)
    with pytest.raises(CMDPInputError, match="max-memory"):
        learn(ENV, H=10, c_bar=2, episodes=3, max_memory=limit, play="table")
    assert "play" not in learn(ENV, H=10, c_bar=2, episodes=3, deploy="last").settings  # fits: tables


def test_a_bad_play_is_refused_before_the_environment_is_made() -> None:
    with pytest.raises(CMDPInputError, match="play"):
        learn("NoSuchEnv-v9", H=10, c_bar=2, episodes=2, play="columns")
    with pytest.raises(CMDPInputError, match="Markov table by construction"):
        learn(ENV, H=10, c_bar=2, episodes=2, algorithm="rpd", play="mixture")


def test_a_run_playing_mixtures_follows_its_columns(tmp_path: Path) -> None:
    m = scenario_cmdp("1a")
    log = tmp_path / "run.jsonl"
    rec = learn(ENV, H=10, c_bar=2, episodes=6, play="mixture", deploy="last", run_log=log)
    assert isinstance(rec.policy, MixturePolicy) and rec.policy.columns.shape[1:] == (m.H, m.S)
    value, costs = mixture_by_tables(m, rec.policy)  # the last episode's mixture, scored by a second path
    assert rec.value[-1] == pytest.approx(value, abs=1e-10)
    np.testing.assert_allclose(rec.costs[-1], costs, atol=1e-10)
    last = [json.loads(line) for line in log.read_text().splitlines()[1:] if '"episode"' in line][-1]
    states, actions = np.array(last["state"]), np.array(last["action"])
    steps = np.arange(len(states))
    followed = [np.array_equal(col[steps, states], actions) for col in rec.policy.columns]
    assert any(followed)  # the last episode played one of its plan's columns all the way
    assert rec.settings["play"] == "mixture"


def test_a_compact_baseline_is_played_and_handed_over() -> None:
    m = scenario_cmdp("1a")
    plan = solve(m.replace(c_bar=m.c_bar / 5))
    mix = MixturePolicy.of_plan(plan)
    assert mix.K == 2  # a true mixture of two deterministic policies
    costs = evaluate(m, mix).costs
    rec = learn(ENV, H=10, c_bar=2, episodes=4, algorithm="dope", baseline=(mix, costs), k0=4)
    assert np.all(rec.baseline)
    np.testing.assert_allclose(rec.costs, np.broadcast_to(mixture_by_tables(m, mix)[1], rec.costs.shape), atol=1e-10)
    assert rec.status == "baseline" and isinstance(rec.policy, MixturePolicy)  # no policy certified: the baseline
    np.testing.assert_array_equal(rec.policy.columns, mix.columns)


def test_a_one_policy_baseline_keeps_its_run_log_digest() -> None:
    """A compact baseline of one deterministic policy digests as its one-hot table (how runs before
    mixtures recorded it), so their logs resume; a true mixture digests its columns and weights."""
    from cmdp_rl.evaluation.mixture import mixture_policy
    from cmdp_rl.simulators.run_log import config_digest

    col = np.array([[0, 2, 1]], dtype=np.uint8)[None]  # (1, H = 1, S = 3)
    one = mixture_policy(col, [1.0], 3)
    assert config_digest(one, 3) == config_digest(one_hot(col[0].astype(np.intp), 3))
    two = mixture_policy(np.concatenate([col, col + 0]), [0.5, 0.5], 3)
    assert config_digest(two, 3) == config_digest(one_hot(col[0].astype(np.intp), 3))  # one policy twice
    other = mixture_policy(np.concatenate([col, 2 - col]), [0.5, 0.5], 3)
    assert config_digest(other, 3) != config_digest(one, 3)
