"""The one base class of the online learners: built from what is known, handed new estimates.

Every learner (Online-CRL included) is an ``OnlineLearner`` built from ``KnownParts`` or from a
``CMDP`` (whose known parts it takes); the two give the same run. ``update_known`` is the one way
to hand a learner new rewards and costs (the simulator path's estimates); it refuses parts of
another problem, and ``known`` cannot be assigned from outside.
"""

from __future__ import annotations

import numpy as np
import pytest

from cmdp_rl import CMDP, CMDPInputError, random_cmdp
from cmdp_rl.learners import (
    LEARNERS,
    ONLINE_ALGORITHMS,
    SAFE_ALGORITHMS,
    EpisodicEnv,
    OnlineCRL,
    OnlineLearner,
    Scorer,
    make_learner,
)
from cmdp_rl.model.cmdp import KnownParts
from cmdp_rl.plumbing.validation import CMDPTypeError


@pytest.fixture(scope="module")
def small() -> CMDP:
    return random_cmdp(5, 2, 3, 1, seed=8, slack=0.4, support=3)


def _env(model: CMDP, seed: int) -> EpisodicEnv:
    return EpisodicEnv(model, np.random.default_rng(np.random.SeedSequence(seed)))


def _safe_pair(m: CMDP) -> tuple[np.ndarray, np.ndarray]:
    """A uniform policy and a made-up cost below the threshold: a baseline that is 'known to be safe'."""
    return np.full((m.H, m.S, m.A), 1.0 / m.A), m.c_bar / 2.0


def test_every_learner_class_is_an_online_learner() -> None:
    assert set(LEARNERS) == set(ONLINE_ALGORITHMS)
    assert all(issubclass(cls, OnlineLearner) for cls in LEARNERS.values())
    assert issubclass(OnlineCRL, OnlineLearner)


@pytest.mark.parametrize("name", ONLINE_ALGORITHMS)
def test_known_parts_and_the_model_give_the_same_run(small: CMDP, name: str) -> None:
    extra = {"baseline": _safe_pair(small), "bonus_scale": 0.0} if name in SAFE_ALGORITHMS else {}
    known = KnownParts(small.r, small.c, small.c_bar, small.s0, small.H)
    from_known = make_learner(name, known, 0.1, episodes=12, **extra)  # type: ignore[arg-type]
    from_model = make_learner(name, small, 0.1, episodes=12, **extra)  # type: ignore[arg-type]
    assert isinstance(from_known, LEARNERS[name]) and type(from_known) is type(from_model)
    assert from_known.settings() == from_model.settings()
    sc = Scorer.for_model(small)
    a, b = from_known.fit(_env(small, 4), sc), from_model.fit(_env(small, 4), sc)
    for field in ("planned_value", "episode_status", "realized_return", "value", "baseline"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=f"{name}.{field}")
    np.testing.assert_array_equal(a.counts.toarray(), b.counts.toarray())
    # the learner keeps read-only copies of the given parts: the caller's arrays are not shared
    assert not from_known.known.r.flags.writeable and from_known.known.r is not known.r


def test_online_crl_from_known_parts_has_the_model_path_numbers(small: CMDP) -> None:
    known = KnownParts.of(small)
    a = OnlineCRL(known, 0.1, episodes=30).fit(_env(small, 9))
    b = OnlineCRL(small, 0.1, episodes=30).fit(_env(small, 9))
    np.testing.assert_array_equal(a.planned_value, b.planned_value)
    np.testing.assert_array_equal(a.policy, b.policy)
    assert a.settings == b.settings == {"delta": 0.1, "episodes": 30, "radius": "paper"}


def test_update_known_changes_what_the_next_plan_uses(small: CMDP) -> None:
    # a learner handed r' plans, from the same counts, as one built with r' from the start
    r2 = np.clip(1.0 - small.r, 0.0, 1.0)
    known2 = KnownParts(r2, small.c, small.c_bar, small.s0, small.H)
    counts = np.ones((small.S, small.A, small.S), dtype=np.int64)
    for name in ("plugin", "optcmdp", "online-crl"):
        learner = make_learner(name, small, 0.1, episodes=10)
        planner = learner.planner()
        before = planner(counts)
        learner.update_known(known2)
        assert learner.known is known2
        after = planner(counts)
        fresh = make_learner(name, known2, 0.1, episodes=10).planner()(counts)
        assert after.value == fresh.value and np.array_equal(after.policy, fresh.policy), name
        assert after.value != before.value, name  # the rewards did change the plan


def test_update_known_refuses_another_problem(small: CMDP) -> None:
    learner = make_learner("plugin", small, 0.1, episodes=5)
    with pytest.raises(CMDPTypeError, match=r"^known: must be a cmdp_rl.model.cmdp.KnownParts, got CMDP"):
        learner.update_known(small)  # type: ignore[arg-type]
    k = learner.known
    others = {
        "r": KnownParts(np.zeros((small.S + 1, small.A)), k.c, k.c_bar, k.s0, k.H),
        "c_bar": KnownParts(k.r, k.c, k.c_bar + 0.5, k.s0, k.H),
        "s0": KnownParts(k.r, k.c, k.c_bar, (k.s0 + 1) % small.S, k.H),
        "H": KnownParts(k.r, k.c, k.c_bar, k.s0, k.H + 1),
    }
    for what, other in others.items():
        with pytest.raises(CMDPInputError, match=r"^known: only r and c may change"):
            learner.update_known(other)
        assert learner.known is k, what  # nothing taken
    with pytest.raises(AttributeError):
        learner.known = k  # type: ignore[misc]  # only update_known hands a learner its parts


def test_construction_refuses_what_is_not_a_problem() -> None:
    with pytest.raises(CMDPTypeError, match=r"^cmdp: must be a cmdp_rl.CMDP or its KnownParts, got dict"):
        OnlineCRL({}, 0.1, episodes=3)  # type: ignore[arg-type]
    with pytest.raises(CMDPTypeError, match=r"^cmdp: must be a cmdp_rl.CMDP or its KnownParts, got str"):
        make_learner("optcmdp", "model.npz", 0.1, episodes=3)  # type: ignore[arg-type]
    bad = KnownParts(np.zeros((3, 2)), np.zeros((1, 3, 2)), np.array([1.0]), 5, 2)  # s0 outside the states
    with pytest.raises(CMDPInputError, match=r"^s0: must be a state index in \[0, 2\], got 5"):
        make_learner("plugin", bad, 0.1, episodes=3)


def test_dense_statistics_of_huge_known_parts_are_refused_before_allocation() -> None:
    # 200,000 states: dense (S, A, S) counts would need 320 GB (more than this machine has)
    S = 200_000
    known = KnownParts(np.zeros((S, 1)), np.zeros((1, S, 1)), np.array([1.0]), 0, 1)
    with pytest.raises(CMDPInputError, match=r"^statistics: optcmdp's dense \(S, A, S\) counts .* would need"):
        make_learner("optcmdp", known, 0.1, episodes=3)
    assert make_learner("optcmdp", known, 0.1, episodes=3, statistics="sparse").statistics == "sparse"


def test_online_crl_takes_bonus_scale_as_every_learner_and_has_none(small: CMDP) -> None:
    a = make_learner("online-crl", small, 0.1, episodes=8, bonus_scale=3.0)
    b = make_learner("online-crl", small, 0.1, episodes=8)
    assert "bonus_scale" not in a.settings()
    np.testing.assert_array_equal(a.fit(_env(small, 1)).planned_value, b.fit(_env(small, 1)).planned_value)
    with pytest.raises(CMDPInputError, match=r"^bonus_scale: must be >= 0"):
        make_learner("online-crl", small, 0.1, episodes=8, bonus_scale=-1.0)


@pytest.mark.parametrize("name", SAFE_ALGORITHMS)
def test_a_safe_learner_from_known_parts_needs_its_baseline(small: CMDP, name: str) -> None:
    with pytest.raises(CMDPInputError, match=rf"^baseline: {name} built from known parts \(no model\) needs baseline="):
        make_learner(name, KnownParts.of(small), 0.1, episodes=3)


def test_repr_names_the_sizes_and_budget(small: CMDP) -> None:
    assert repr(OnlineCRL(small, 0.1, episodes=7)) == "OnlineCRL(S=5, A=2, H=3, N=1, episodes=7)"
    assert repr(OnlineCRL(small, 0.1, eps=0.5, max_episodes=9)) == "OnlineCRL(S=5, A=2, H=3, N=1, episodes=9)"
