"""One vocabulary (issue 34, item 5): every result type's ``status`` is in the documented set,
each renamed argument or option keeps working with one deprecation warning, and ``learn`` and
``certify`` print the ``delta`` and radius they used."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from faultkit import cli, run_main

import cmdp_rl
from cmdp_rl import EpisodicEnv, OnlineCRL, certify, frontier, make, solve, solve_safe
from cmdp_rl.envs.generators import random_cmdp
from cmdp_rl.envs.gym_env import CMDPEnv
from cmdp_rl.envs.gymnasium_import import from_gymnasium
from cmdp_rl.envs.literature import cliff_grid, factored_cmdp, inventory_control, media_control
from cmdp_rl.learners import EPISODE_STATUSES, STATUSES, GenerativeModel, OptimisticGMBL, learn, make_learner
from cmdp_rl.planning.baseline import safe_baseline
from cmdp_rl.plumbing.names import RESULT_STATUSES
from cmdp_rl.plumbing.validation import CMDPInputError

#: the documented set (docs/models.md), written out here rather than read from the code
DOCUMENTED = {"optimal", "infeasible", "uncertified", "certified", "baseline"}


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    """``cmdp-rl ARGV`` in this process (``faultkit.run_main``: what is printed is the entry
    point's, not the process's); the first deprecated option below is also run by the installed
    command (``faultkit.cli``)."""
    return run_main(*argv)


@pytest.fixture(scope="module")
def problem() -> dict[str, Any]:
    """Scenario 1a (one constraint, ``c_bar = 2``, binding at the optimum), the same with a
    threshold below every cost (``-1``: nothing is feasible, nothing can be certified), and 2,000
    generative samples of every pair."""
    m = make("1a")
    counts = GenerativeModel(m, np.random.default_rng(0)).sample_counts(2000)
    return {"m": m, "bad": m.replace(c_bar=np.array([-1.0])), "counts": counts}


def test_the_documented_set() -> None:
    assert set(RESULT_STATUSES) == DOCUMENTED and len(RESULT_STATUSES) == 5
    assert STATUSES == EPISODE_STATUSES == ("optimistic", "baseline", "infeasible")


def test_plan_results(problem: dict[str, Any]) -> None:
    m, bad = problem["m"], problem["bad"]
    assert solve(m).status == "optimal"
    assert solve(bad).status == "infeasible"  # costs are >= 0 > c_bar
    assert solve(make("garnet"), "fast", max_iter=1).status == "uncertified"  # stopped before its gap closed


def test_certificates_and_safe_plans(problem: dict[str, Any]) -> None:
    m, bad, counts = problem["m"], problem["bad"], problem["counts"]
    base = safe_baseline(m).policy  # a strict Slater margin: certified with 2,000 samples per pair
    cert = certify(base, counts, m.r, m.c, m.c_bar, m.s0, m.H)
    assert (cert.status, cert.safe) == ("certified", True)
    # the optimum spends its budget exactly (C = c_bar), so any radius puts cost_hi above c_bar
    tight = certify(solve(m).policy, counts, m.r, m.c, m.c_bar, m.s0, m.H)
    assert (tight.status, tight.safe) == ("uncertified", False)
    found = solve_safe(counts, m.r, m.c, m.c_bar, m.s0, m.H)
    assert found.status == "certified" and found.policy is not None and found.safe
    none = solve_safe(counts, bad.r, bad.c, bad.c_bar, bad.s0, bad.H)  # cost_hi >= 0 > -1 for every policy
    assert none.status == "uncertified" and none.policy is None and not none.safe


def test_learner_records(problem: dict[str, Any]) -> None:
    m, bad = problem["m"], problem["bad"]
    crl = OnlineCRL(m, 0.1, episodes=3).fit(EpisodicEnv(m, np.random.default_rng(0)))
    assert crl.status == "optimal" and list(crl.episode_status) == ["optimistic"] * 3
    dope = make_learner("dope", m, 0.1, episodes=3, k0=5).fit(EpisodicEnv(m, np.random.default_rng(0)))
    assert dope.status == "baseline" and list(dope.episode_status) == ["baseline"] * 3  # 3 < K0 = 5
    plug = make_learner("plugin", bad, 0.1, episodes=2).fit(EpisodicEnv(bad, np.random.default_rng(0)))
    assert plug.status == "infeasible" and list(plug.episode_status) == ["infeasible"] * 2
    for rec in (crl, dope, plug):
        assert rec.status in DOCUMENTED and set(rec.episode_status) <= set(EPISODE_STATUSES)
        assert rec.value is not None and rec.value.shape == (rec.episodes,) and rec.policy.shape == (m.H, m.S, m.A)


def test_gmbl_pg_and_frontier(problem: dict[str, Any]) -> None:
    m, bad = problem["m"], problem["bad"]
    g = OptimisticGMBL(m, 0.1, samples_per_pair=5).fit(GenerativeModel(m, np.random.default_rng(0)))
    assert g.status == g.plan.status == "optimal" and g.value == g.plan.value and g.costs is g.plan.costs
    g_bad = OptimisticGMBL(bad, 0.1, samples_per_pair=5).fit(GenerativeModel(bad, np.random.default_rng(0)))
    assert g_bad.status == "infeasible"
    pg = cmdp_rl.pg.methods.run(make("ding-random:S=4,A=2"), "crpo", 3)
    assert pg.status == "uncertified" and pg.value is pg.values and np.array_equal(pg.policy, pg.policies[-1])
    fr = frontier(m, points=5)
    assert fr.status == "optimal" and fr.gap_tol > 0 and np.all(fr.gap <= fr.gap_tol)
    assert dataclasses.replace(fr, gap_tol=-1.0).status == "uncertified"  # every gap >= 0 is above it


def _one_warning(call: Callable[[], Any], old: str, new: str) -> Any:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = call()
    dep = [w for w in seen if issubclass(w.category, DeprecationWarning)]
    assert len(dep) == 1, [str(w.message) for w in dep]
    assert str(dep[0].message).startswith(f"{old} is deprecated, use {new}")
    assert dep[0].filename == __file__  # points at the caller's line
    return out


def _no_warning(call: Callable[[], Any]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        return call()


def test_renamed_python_arguments_warn_once_and_behave_alike() -> None:
    old = _one_warning(lambda: random_cmdp(4, 2, 3, 1, rng=7), "rng", "seed")
    new = _no_warning(lambda: random_cmdp(4, 2, 3, 1, seed=7))
    assert np.array_equal(old.P, new.P) and np.array_equal(old.c_bar, new.c_bar)

    m = make("1a")
    a = _one_warning(lambda: make_learner(name="optcmdp", cmdp=m, episodes=2), "name", "algorithm")
    b = _no_warning(lambda: make_learner(algorithm="optcmdp", cmdp=m, episodes=2))
    assert type(a) is type(b) and type(a).name == "optcmdp"

    d = make("ding-random:S=4,A=2")
    old_pg = _one_warning(lambda: cmdp_rl.pg.methods.run(d, algo="crpo", iterations=2), "algo", "algorithm")
    new_pg = _no_warning(lambda: cmdp_rl.pg.methods.run(d, algorithm="crpo", iterations=2))
    assert old_pg.algorithm == "crpo" and np.array_equal(old_pg.values, new_pg.values)

    small = random_cmdp(3, 2, 3, 1, seed=1)
    kw: dict[str, Any] = {"H": 3, "c_bar": small.c_bar, "episodes": 2, "seed": 0}
    old_rec = _one_warning(lambda: learn(CMDPEnv(small), algo="plugin", **kw), "algo", "algorithm")
    new_rec = _no_warning(lambda: learn(CMDPEnv(small), algorithm="plugin", **kw))
    assert old_rec.algorithm == "plugin" and np.array_equal(old_rec.realized_return, new_rec.realized_return)

    for factory in (media_control, inventory_control, factored_cmdp, cliff_grid):
        got = _one_warning(lambda f=factory: f(threshold=0.7), "threshold", "c_bar")
        assert got.c_bar.tolist() == [0.7] and np.array_equal(got.P, _no_warning(lambda f=factory: f(c_bar=0.7)).P)

    # two renamed names in one call: one warning each
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        fl_old = from_gymnasium("FrozenLake-v1", horizon=6, cost="hole", threshold=0.1)
    messages = sorted(str(w.message).split(" (")[0] for w in seen if issubclass(w.category, DeprecationWarning))
    assert messages == ["horizon is deprecated, use H", "threshold is deprecated, use c_bar"]
    fl_new = _no_warning(lambda: from_gymnasium("FrozenLake-v1", H=6, cost="hole", c_bar=0.1))
    assert (fl_old.H, fl_old.c_bar.tolist()) == (fl_new.H, fl_new.c_bar.tolist()) == (6, [0.1])
    assert fl_new.meta["parameters"]["H"] == 6 and fl_new.meta["parameters"]["c_bar"] == 0.1

    spec_old = _one_warning(lambda: make("1a:threshold=1.5"), "1a: threshold", "c_bar")
    spec_new = _no_warning(lambda: make("1a:c_bar=1.5"))
    assert spec_old.c_bar.tolist() == spec_new.c_bar.tolist() == [1.5]
    assert spec_new.meta["parameters"] == {"c_bar": [1.5]}


def test_giving_both_names_is_refused() -> None:
    with pytest.raises(CMDPInputError, match=r"^rng: the deprecated name of seed; give only seed"):
        random_cmdp(3, 2, 3, 1, rng=1, seed=1)
    with pytest.raises(CMDPInputError, match=r"^algo: the deprecated name of algorithm"):
        cmdp_rl.pg.methods.run(make("ding-random:S=4,A=2"), algo="crpo", algorithm="crpo", iterations=2)
    with pytest.raises(CMDPInputError, match=r"^1a: threshold: the deprecated name of c_bar"):
        make("1a:threshold=1,c_bar=1")


def test_cli_deprecated_option_one_line_and_the_short_forms(tmp_path: Any) -> None:
    base = ("pg", "ding-random:S=4,A=2", "--iterations", "2", "--json", "--force")
    old = cli(*base, "--algo", "crpo", "--out", str(tmp_path / "old"))  # the installed command: all it prints
    assert old.returncode == 0, old.stderr
    assert old.stderr.splitlines() == ["cmdp-rl: warning: --algo is deprecated, use --algorithms"]
    here = _cli(*base, "--algo", "crpo", "--out", str(tmp_path / "old"))
    assert (here.returncode, here.stdout, here.stderr) == (old.returncode, old.stdout, old.stderr)
    for spelling in ("--algorithms", "--algos"):
        new = _cli(*base, spelling, "crpo", "--out", str(tmp_path / spelling))
        assert new.returncode == 0 and new.stderr == "", new.stderr
        a, b = json.loads(old.stdout), json.loads(new.stdout)
        assert list(b["algorithms"]) == ["crpo"] and a["algorithms"] == b["algorithms"]
    # a refusal stays one line: the deprecation note comes only with a result
    refused = _cli("pg", "ding-random:S=4,A=2", "--algo", "crpo", "--eta", "-1", "--out", str(tmp_path / "no"))
    assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1 and "deprecated" not in refused.stderr
    refused_spec = _cli("solve", "1a:threshold=nan")
    assert refused_spec.returncode == 2 and len(refused_spec.stderr.splitlines()) == 1, refused_spec.stderr
    # learn: --algorithm and its short form --algo, no warning; the JSON key is "algorithm" only
    outs = []
    for spelling in ("--algorithm", "--algo"):
        proc = _cli("learn", "1a", spelling, "plugin", "--episodes", "2", "--json")
        # no warning; at most the note that the returned (last) policy is not certified safe
        assert proc.returncode == 0, proc.stderr
        assert all("note: the returned policy is not certified" in ln for ln in proc.stderr.splitlines()), proc.stderr
        out = json.loads(proc.stdout)
        out.pop("seconds_per_episode")  # a measurement
        outs.append(out)
    assert outs[0] == outs[1] and outs[0]["algorithm"] == "plugin" and "algo" not in outs[0]
    # -H, the short form of --horizon
    long, short = (_cli("bounds", "--states", "4", "--actions", "2", flag, "5", "--eps", "0.1", "--delta", "0.1")
                   for flag in ("--horizon", "-H"))  # fmt: skip
    assert long.returncode == short.returncode == 0 and long.stdout == short.stdout and short.stderr == ""
    # a deprecated name in a problem spec: one warning line, the same answer
    spec_old = _cli("solve", "1a:threshold=1.5", "--json")
    spec_new = _cli("solve", "1a:c_bar=1.5", "--json")
    assert spec_old.returncode == spec_new.returncode == 0 and spec_old.stdout == spec_new.stdout
    assert len(spec_old.stderr.splitlines()) == 1 and "threshold is deprecated, use c_bar" in spec_old.stderr
    assert spec_new.stderr == ""


def test_learn_and_certify_print_the_delta_and_radius_they_used(tmp_path: Any) -> None:
    text = _cli("learn", "1a", "--episodes", "2", "--delta", "0.2", "--radius", "empirical-bernstein")
    assert text.returncode == 0, text.stderr
    assert "delta 0.2" in text.stdout and "radius empirical-bernstein" in text.stdout
    default = _cli("learn", "1a", "--episodes", "2", "--json")
    got = json.loads(default.stdout)
    assert (got["delta"], got["radius"]) == (0.1, "paper")  # the learners' defaults: the paper's
    policy, counts = tmp_path / "p.npy", tmp_path / "c.npy"
    m = make("1a")
    np.save(policy, safe_baseline(m).policy)
    np.save(counts, GenerativeModel(m, np.random.default_rng(1)).sample_counts(50))
    cert = _cli("certify", "1a", "--policy", str(policy), "--counts", str(counts))
    assert cert.returncode in (0, 1), cert.stderr
    assert "radius empirical-bernstein" in cert.stdout and "delta 0.05" in cert.stdout  # the certificates' defaults
    cert_json = json.loads(_cli("certify", "1a", "--policy", str(policy), "--counts", str(counts), "--json").stdout)
    assert (cert_json["delta"], cert_json["radius"]) == (0.05, "empirical-bernstein")
