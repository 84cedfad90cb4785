"""How a learner plays its plans (``configure_play``): Markov tables, or the plans' columns as mixtures.

Independent checks: each episode of a mixture follows one deterministic column all the way (read
from the trajectory itself); its recorded value is the weighted sum of the columns' values computed
by ``evaluate`` on their one-hot tables; on the model the plan was solved for (the plug-in learner's
``p_hat``) the mixture has the Markov table's value and costs; a baseline given as a mixture is
drawn with its weights (frequencies within 4 standard errors).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import mixture_by_tables

from cmdp_rl import CMDP, CMDPInputError, evaluate, random_cmdp
from cmdp_rl.certificates.safe import one_hot
from cmdp_rl.confidence.radii import empirical_kernel
from cmdp_rl.evaluation.mixture import MixturePolicy, mixture_policy
from cmdp_rl.learners import EpisodicEnv, Scorer, make_learner
from cmdp_rl.learners.base import LEARNER_TABLES, tables_fit
from cmdp_rl.planning.baseline import safe_baseline

COLUMN_LEARNERS = ("plugin", "optcmdp", "optcmdp-bonus", "optpess", "dope", "dope-plus", "online-crl")
TABLE_LEARNERS = ("optdual", "safe-crl", "optpess-pd", "rpd")


@pytest.fixture(scope="module")
def small() -> CMDP:
    return random_cmdp(5, 2, 3, 1, seed=8, slack=0.4, support=3)


def _env(model: CMDP, seed: int) -> EpisodicEnv:
    return EpisodicEnv(model, np.random.default_rng(np.random.SeedSequence(seed)))


def _safe_pair(m: CMDP) -> tuple[np.ndarray, np.ndarray]:
    """The model's safe baseline (its LP at c_bar / 5) and its exact costs, strictly below c_bar."""
    base = safe_baseline(m)
    assert np.all(base.costs < m.c_bar)
    return base.policy, base.costs


def test_play_refusals_name_the_rule(small: CMDP) -> None:
    learner = make_learner("plugin", small, 0.1, episodes=2)
    with pytest.raises(CMDPInputError, match="play"):
        learner.configure_play("columns")
    with pytest.raises(CMDPInputError, match="max_memory"):
        learner.configure_play("auto", 0)
    for name in TABLE_LEARNERS:
        extra = {"baseline": _safe_pair(small)} if name in ("safe-crl", "optpess-pd") else {}
        other = make_learner(name, small, 0.1, episodes=2, **extra)  # type: ignore[arg-type]
        with pytest.raises(CMDPInputError, match="Markov table by construction"):
            other.configure_play("mixture")
        other.configure_play("auto", 1.0)  # auto: a table learner plays tables whatever the memory
        assert not other.plays_mixtures


def test_auto_plays_tables_while_they_fit(small: CMDP) -> None:
    need = LEARNER_TABLES * 8.0 * small.H * small.S * small.A
    assert tables_fit(small.H, small.S, small.A, need) and not tables_fit(small.H, small.S, small.A, need - 1)
    learner = make_learner("online-crl", small, 0.1, episodes=2)
    assert not learner.plays_mixtures  # the default: 8 GiB
    learner.configure_play("auto", need - 1)
    assert learner.plays_mixtures
    learner.configure_play("table", 1.0)
    assert not learner.plays_mixtures
    assert make_learner("plugin", small, 0.1, episodes=2, play="auto", max_memory=need - 1).plays_mixtures


@pytest.mark.parametrize("name", ["plugin", "online-crl", "optpess"])
def test_each_episode_follows_one_column_and_is_scored_as_the_mixture(small: CMDP, name: str) -> None:
    extra = {"baseline": _safe_pair(small), "bonus_scale": 0.0} if name == "optpess" else {}
    learner = make_learner(name, small, 0.1, episodes=12, play="mixture", **extra)  # type: ignore[arg-type]
    env = _env(small, 3)
    drawn: list[tuple[MixturePolicy, int, np.ndarray, np.ndarray]] = []
    original = env.rollout_mixture

    def spy(mix: MixturePolicy, counts: Any = None) -> Any:
        k, states, actions, nexts = original(mix, counts)
        drawn.append((mix, k, states, actions))
        return k, states, actions, nexts

    env.rollout_mixture = spy  # type: ignore[method-assign]
    played: list[Any] = []
    rec = learner.fit(env, Scorer.for_model(small), on_episode=lambda k, counts, pol: played.append(pol))
    mixtures = [p for p in played if isinstance(p, MixturePolicy)]
    assert len(drawn) == len(mixtures) > 0  # every mixture episode went through one drawn column
    for mix, k, states, actions in drawn:
        assert np.array_equal(actions, mix.columns[k][np.arange(small.H), states])
    for e, pol in enumerate(played):  # the record's exact score: the columns' one-hot tables by evaluate
        value, costs = mixture_by_tables(small, pol) if isinstance(pol, MixturePolicy) else (None, None)
        if value is not None:
            assert rec.value[e] == pytest.approx(value, abs=1e-10)
            np.testing.assert_allclose(rec.costs[e], costs, atol=1e-10)
    assert rec.settings["play"] == "mixture"


def test_the_plug_in_mixture_has_the_tables_value_on_p_hat(small: CMDP) -> None:
    """Radius 0: the plan is the LP on p_hat; its columns mixed have the table's value and costs there."""
    env = _env(small, 5)
    counts = np.zeros((small.S, small.A, small.S), dtype=np.int64)
    for _ in range(40):
        env.rollout(np.full((small.H, small.S, small.A), 1.0 / small.A), counts)
    table_learner = make_learner("plugin", small, 0.1, episodes=2, play="table")
    mix_learner = make_learner("plugin", small, 0.1, episodes=2, play="mixture")
    table, mix = table_learner.planner()(counts).policy, mix_learner.planner()(counts).policy
    assert isinstance(mix, MixturePolicy) and not isinstance(table, MixturePolicy)
    on_p_hat = small.replace(P=empirical_kernel(counts)[0])
    value, costs = mixture_by_tables(on_p_hat, mix)
    ev = evaluate(on_p_hat, table)
    assert value == pytest.approx(ev.value, abs=1e-8)
    np.testing.assert_allclose(costs, ev.costs, atol=1e-8)


def test_a_mixture_baseline_is_drawn_with_its_weights(small: CMDP) -> None:
    """DOPE's baseline phase (k0 = every episode) playing two different deterministic columns."""
    cols = np.stack([np.zeros((small.H, small.S)), np.ones((small.H, small.S))]).astype(np.uint8)
    mix = mixture_policy(cols, [0.3, 0.7], small.A)
    costs = mixture_by_tables(small, mix)[1]
    assume = small.replace(c_bar=costs + 0.5)  # strictly safe by construction
    n = 400
    learner = make_learner("dope", assume, 0.1, episodes=n, baseline=(mix, costs), k0=n)
    env = _env(assume, 9)
    ks: list[int] = []
    original = env.rollout_mixture

    def spy(m: MixturePolicy, counts: Any = None) -> Any:
        out = original(m, counts)
        ks.append(out[0])
        return out

    env.rollout_mixture = spy  # type: ignore[method-assign]
    rec = learner.fit(env, Scorer.for_model(assume))
    freq = np.mean(np.array(ks) == 1)
    assert len(ks) == n and abs(freq - 0.7) <= 4 * np.sqrt(0.21 / n)
    assert np.all(rec.baseline) and isinstance(rec.policy, MixturePolicy)
    np.testing.assert_allclose(rec.costs, np.broadcast_to(costs, rec.costs.shape), atol=1e-10)


def test_baseline_components_and_the_safety_test_see_the_same_policy(small: CMDP) -> None:
    """A mixture of two copies of one column is that column's one-hot table: OptPess's safety
    test decides the same on the same counts, and Safe-CRL mixes its one-hot table."""
    col = np.zeros((small.H, small.S), dtype=np.uint8)
    table = one_hot(col.astype(np.intp), small.A)
    costs = evaluate(small, table).costs
    model = small.replace(c_bar=costs + 0.2)
    twice = mixture_policy(np.stack([col, col]), [0.5, 0.5], small.A)
    counts = np.zeros((small.S, small.A, small.S), dtype=np.int64)
    _env(model, 2).rollout(table, counts)
    plans = []
    for base in (table, twice):
        learner = make_learner("optpess", model, 0.1, episodes=5, baseline=(base, costs))
        tables, weights = learner.baseline_components()  # type: ignore[attr-defined]
        np.testing.assert_array_equal(weights @ tables.reshape(len(weights), -1), table.reshape(-1))
        plans.append(learner.planner()(counts))
    assert plans[0].status == plans[1].status and plans[0].baseline == plans[1].baseline
    crl = make_learner("safe-crl", model, 0.1, episodes=4, baseline=(twice, costs))
    rec = crl.fit(_env(model, 1), Scorer.for_model(model))
    assert rec.violation.max() <= 1e-9
