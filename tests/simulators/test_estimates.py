"""The learner's side of a simulator run: estimates, and a learner built from what is known.

With ``r``, ``c`` and ``s0`` given, on an environment that never terminates, ``learn`` plans as the
model path does: replaying the episodes of its run log through a learner built from the model
(``make_learner(name, model)``, its planner fed the counts of those episodes) gives every episode's
plan, status and the last policy, bit for bit (the docs page 'Learn from a simulator' says so).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from cmdp_rl import learn, scenario_cmdp
from cmdp_rl.envs.gym_env import CMDPEnv
from cmdp_rl.learners import ONLINE_ALGORITHMS, SAFE_ALGORITHMS, make_learner
from cmdp_rl.planning.baseline import safe_baseline
from cmdp_rl.simulators.estimates import Estimates, LearnerRun, RunSpec


@pytest.mark.parametrize("name", ONLINE_ALGORITHMS)
def test_a_black_box_with_known_r_c_s0_plans_exactly_as_the_model_path(name: str, tmp_path: Path) -> None:
    m = scenario_cmdp("1a")
    K = 15
    extra: dict = {}
    if name in SAFE_ALGORITHMS:  # the model's own strictly safe policy; no bonus, so the plans leave it
        base = safe_baseline(m)
        extra = {
            "baseline": (base.policy, base.costs),
            "bonus_scale": 0.0,
            **({"k0": 3} if name in ("dope", "dope-plus") else {}),
        }
    log = tmp_path / "run.jsonl"
    rec = learn(CMDPEnv(m), H=m.H, c_bar=m.c_bar, episodes=K, algorithm=name, r=m.r, c=m.c, s0=m.s0, seed=6,
                run_log=log, deploy="last", **extra)  # fmt: skip
    assert rec.settings["virtual_start"] is False and rec.settings["absorbing_state"] is False
    episodes = [json.loads(line) for line in log.read_text().splitlines()[1:-1]]
    assert len(episodes) == K
    # the model path: a learner built from the model, planning from the counts of the same episodes
    baseline = extra.pop("baseline", None)
    learner = make_learner(name, m, 0.1, episodes=K, baseline=baseline, **extra)
    plan_next = learner.planner()
    counts = np.zeros((m.S, m.A, m.S), dtype=np.int64)
    for k, row in enumerate(episodes):
        plan = plan_next(counts)
        assert plan.status == rec.episode_status[k] and plan.baseline == rec.baseline[k], (name, k)
        assert plan.value == rec.planned_value[k] or (math.isnan(plan.value) and math.isnan(rec.planned_value[k]))
        np.add.at(counts, (row["state"], row["action"], row["next_state"]), 1)
    if plan.mixture is None:
        np.testing.assert_array_equal(plan.policy, rec.policy)
    else:  # the record holds the component the last episode drew
        assert any(np.array_equal(pol, rec.policy) for pol in plan.mixture[0]), name
    # the record's counts are the episodes' transitions in the (S*A, S) layout, plus the absorbing state's
    # row and column (empty: the environment never terminated)
    public = rec.counts.toarray().reshape(m.S + 1, m.A, m.S + 1)
    np.testing.assert_array_equal(public[: m.S, :, : m.S], counts)
    assert public[m.S].sum() == 0 and public[:, :, m.S].sum() == 0
    assert set(rec.episode_status) >= {"optimistic"}, name  # the learner's own plans were played


def test_estimates_by_hand() -> None:
    # two states, one action, one cost: state 0 visited twice (rewards 0.2, 0.6; costs 0.5, 0.1)
    est = Estimates(2, 1, 1, 3, 0.05, None, None)
    est.add(np.array([0, 0]), np.array([0, 0]), np.array([0.2, 0.6]), np.array([[0.5], [0.1]]))
    radius = math.sqrt(math.log(2 / 0.05) / (2 * 2))
    r, c = est.parts("optimistic")
    assert r.shape == (3, 1) and c.shape == (1, 3, 1)
    assert r[0, 0] == pytest.approx(min(0.4 + radius, 1.0)) and r[1, 0] == 1.0 and r[2, 0] == 0.0
    assert c[0, 0, 0] == pytest.approx(max(0.3 - radius, 0.0)) and c[0, 1, 0] == 0.0
    r, c = est.parts("safe")
    assert c[0, 0, 0] == pytest.approx(min(0.3 + radius, 1.0)) and c[0, 1, 0] == 1.0 and c[0, 2, 0] == 0.0
    r, c = est.parts("plugin")
    assert r[0, 0] == pytest.approx(0.4) and c[0, 0, 0] == pytest.approx(0.3)


def test_a_run_hands_its_learner_the_current_estimates() -> None:
    spec = RunSpec("plugin", 0.1, 5, 3, 2, 1, 2, np.array([1.0]), None, None, {}, None, None, "plugin")
    run = LearnerRun(spec, absorbing=False)
    assert run.n_states == 4 and run.start == 3 and run.learner.known.H == 3  # the virtual start: one more step
    run.plan()
    r0 = run.learner.known.r.copy()
    assert np.all(r0[:3] == 1.0) and np.all(r0[3] == 0.0)  # nothing seen: every pair counts as worth 1
    run.add(([0, 1], [1, 0], [1, 2], [0.0, 0.25], [np.array([0.5]), np.array([0.0])]))
    run.plan()
    r1, c1 = run.est.parts("plugin")
    np.testing.assert_array_equal(run.learner.known.r, r1)  # handed over by update_known
    np.testing.assert_array_equal(run.learner.known.c, c1)
    assert r1[0, 1] == 0.0 and r1[1, 0] == 0.25 and r1[2, 0] == 1.0  # the means of the visited pairs
    assert c1[0, 0, 1] == 0.5 and c1[0, 1, 0] == 0.0
    # the reset counted under every action of the virtual start (3 -> 0)
    counts = run.planner_counts()
    assert counts[3, 0, 0] == 1 and counts[3, 1, 0] == 1 and counts.sum() == 4


def test_the_estimates_radii_are_hoeffdings() -> None:
    """``Estimates.radii``: ``sqrt(log(2 / delta1) / (2 n))`` per visited pair (computed here from the
    formula), 1 at an unvisited pair (anything in [0, 1]), 0 on the planner's own states, ``None``
    for what is known."""
    from cmdp_rl.simulators.estimates import Estimates

    est = Estimates(2, 2, 1, 3, 0.01, None, None)
    states, actions = np.array([0, 0, 0, 1]), np.array([1, 1, 0, 1])
    est.add(states, actions, np.full(4, 0.5), np.full((4, 1), 0.25))
    r_rad, c_rad = est.radii()
    want = np.array([[math.sqrt(math.log(200) / 2), math.sqrt(math.log(200) / 4)], [1.0, math.sqrt(math.log(200) / 2)]])
    want = np.minimum(want, 1.0)
    assert r_rad is not None and c_rad is not None
    np.testing.assert_allclose(r_rad[:2], want, rtol=1e-12)
    np.testing.assert_array_equal(r_rad[2], [0.0, 0.0])
    np.testing.assert_array_equal(c_rad[0], r_rad)
    known = Estimates(2, 2, 1, 3, 0.01, np.zeros((2, 2)), np.zeros((1, 2, 2)))
    assert known.radii() == (None, None)
