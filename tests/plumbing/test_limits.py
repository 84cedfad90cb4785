"""Functions that still need dense (S, A, S) arrays refuse a large sparse model before allocating."""

from __future__ import annotations

import numpy as np
import pytest

from cmdp_rl import CMDP, CMDPInputError, OnlineCRL, OptimisticGMBL, make_learner
from cmdp_rl.envs.generators import garnet_kernel


@pytest.fixture(scope="module")
def large() -> CMDP:
    rng = np.random.default_rng(0)
    S, A = 10_000, 4  # a dense (S, A, S) array would be 2.98 GiB
    return CMDP(garnet_kernel(S, A, 3, rng), rng.random((S, A)), rng.random((1, S, A)), [5.0], 0, 10)


def test_kernel_reads_are_refused(large: CMDP) -> None:
    with pytest.raises(CMDPInputError, match=r"cmdp\.P: this model's kernel is sparse .* use cmdp\.K"):
        _ = large.P
    with pytest.raises(CMDPInputError, match=r"cmdp\.to_dense\(\) needs a dense \(S, A, S\) kernel"):
        large.to_dense()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["online-crl", "gmbl", "optcmdp", "dope"])
def test_learners_refuse_before_allocating(large: CMDP, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import cmdp_rl.planning.baseline

    def no_baseline(*args: object, **kwargs: object) -> None:
        pytest.fail("the safe baseline's LP ran before the refusal")

    monkeypatch.setattr(cmdp_rl.planning.baseline, "safe_baseline", no_baseline)  # a safe learner refuses first
    with pytest.raises(CMDPInputError) as err:
        if name == "online-crl":
            OnlineCRL(large, 0.1, episodes=5)
        elif name == "gmbl":
            OptimisticGMBL(large, 0.1, samples_per_pair=2)
        else:
            make_learner(name, large, 0.1, episodes=5)
    msg = str(err.value)
    assert "keeps dense (S, A, S) statistics" in msg and "2.98 GiB" in msg and "\n" not in msg
