"""What a run hands over (issue 35, item 4): ``deploy="last"`` keeps the last policy and says whether
the data certify it; ``deploy="certified"`` hands over the best policy certified safe, else the
baseline, else a record with status ``"uncertified"``. Checked against independent certificates."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from cmdp_rl import CMDPInputError, random_cmdp
from cmdp_rl.certificates.certify import certify
from cmdp_rl.envs.registry import make
from cmdp_rl.learners import EpisodicEnv, Scorer, make_learner


def _run(spec: str, algorithm: str, episodes: int, **kw: Any) -> Any:
    m = make(spec)
    learner = make_learner(algorithm, m, 0.1, episodes=episodes, **kw)
    return m, learner.fit(EpisodicEnv(m, np.random.default_rng(0)), Scorer.for_model(m))


def _certificate(m: Any, rec: Any, delta: float = 0.05) -> Any:
    return certify(rec.policy, rec.counts, m.r, m.c, m.c_bar, m.s0, m.H, delta=delta)


def test_last_keeps_the_policy_and_records_its_certificate() -> None:
    m, rec = _run("factored", "plugin", 200)
    cert = _certificate(m, rec)
    assert rec.certificate is not None and rec.certified == cert.safe
    np.testing.assert_array_equal(rec.certificate.cost_hi, cert.cost_hi)
    assert rec.status == "optimal" and rec.deploy_status is None


def test_certified_hands_over_a_policy_the_data_certify() -> None:
    m, rec = _run("factored", "plugin", 400, deploy="certified", deploy_delta=0.05)
    assert rec.status == "certified" and rec.certified
    cert = _certificate(m, rec)
    assert cert.safe and np.all(cert.cost_hi <= m.c_bar)
    assert rec.certificate is not None and rec.certificate.delta == 0.05


def test_certified_falls_back_to_the_baseline_then_to_uncertified() -> None:
    """Two episodes of a model whose thresholds sit just above the least achievable cost: no policy
    can be certified from so few counts, so DOPE hands over its baseline and the plug-in learner a
    record with status ``"uncertified"`` (its policy's certificate says it is not safe)."""
    m = random_cmdp(6, 3, 5, 1, seed=0, slack=0.05, support=3)
    env = EpisodicEnv(m, np.random.default_rng(0))
    dope = make_learner("dope", m, 0.1, episodes=2, deploy="certified")
    rec = dope.fit(env)
    assert rec.status == "baseline" and rec.mixture is None
    np.testing.assert_array_equal(rec.policy, dope.baseline)  # type: ignore[attr-defined]
    rec = make_learner("plugin", m, 0.1, episodes=2, deploy="certified").fit(EpisodicEnv(m, np.random.default_rng(0)))
    assert rec.status == "uncertified" and not rec.certified
    assert rec.certificate is not None and not rec.certificate.safe


def test_deploy_is_checked_before_any_work() -> None:
    m = make("factored")
    with pytest.raises(CMDPInputError, match=r"^deploy: must be one of \['last', 'certified'\]"):
        make_learner("plugin", m, episodes=5, deploy="best")
    with pytest.raises(CMDPInputError, match=r"^deploy_delta: "):
        make_learner("plugin", m, episodes=5, deploy="certified", deploy_delta=1.5)


def test_learn_from_a_simulator_hands_over_a_certified_policy() -> None:
    """``cmdp_rl.learn`` (``deploy="certified"``, its default) on estimated rewards, costs and start: the
    handed-over policy is certified from the counts and the estimates' intervals, and its exact cost
    on the true model (an independent evaluation) is within ``c_bar``; ``"last"`` keeps the last one."""
    from cmdp_rl import learn
    from cmdp_rl.envs.gym_env import CMDPEnv
    from cmdp_rl.evaluation.evaluate import value_and_costs

    m = make("factored")
    rec = learn(CMDPEnv(m), H=m.H, c_bar=m.c_bar, episodes=300, algorithm="plugin", seed=2)  # "certified": default
    assert rec.status == "certified" and rec.certified and rec.certificate is not None
    assert rec.policy.shape == (m.H, m.S, m.A)
    assert np.all(value_and_costs(m, rec.policy)[1] <= m.c_bar + 1e-9)
    assert np.all(rec.certificate.cost_hi <= m.c_bar)
    last = learn(CMDPEnv(m), H=m.H, c_bar=m.c_bar, episodes=300, algorithm="plugin", seed=2, deploy="last")
    assert last.deploy_status is None and last.certificate is not None
    np.testing.assert_array_equal(last.value, rec.value)  # the same episodes
    with pytest.raises(CMDPInputError, match=r"^deploy: "):
        learn(CMDPEnv(m), H=m.H, c_bar=m.c_bar, episodes=3, deploy="all")
