"""Learning from a black-box Gymnasium environment (``cmdp_rl.learn``, DESIGN section 17).

The black boxes are defined here: a random CMDP behind ``reset``/``step`` with a start
distribution, rewards and costs the learner does not know. Scores are computed in the tests on
the hidden model (with the start distribution as an added start state), independently of the
learner, by the library's exact evaluation.
"""

from __future__ import annotations

import json
import time
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from cmdp_rl import CMDP, CMDPInputError, evaluate, learn, random_cmdp, scenario_cmdp, solve
from cmdp_rl.learners import ONLINE_ALGORITHMS, SAFE_ALGORITHMS
from cmdp_rl.planning.baseline import safe_baseline
from cmdp_rl.simulators.blackbox import SimulatorError
from cmdp_rl.simulators.run_log import RunLogWarning

S, A, H = 20, 3, 8


class Hidden(gym.Env[int, int]):
    """A tabular CMDP that only answers ``reset`` and ``step`` (touching ``P`` fails the test)."""

    def __init__(self, m: CMDP, init: np.ndarray, style: str = "cost", terminal: int | None = None) -> None:
        self._m, self._init, self._style, self._terminal = m, init, style, terminal
        self.observation_space = gym.spaces.Discrete(m.S)
        self.action_space = gym.spaces.Discrete(m.A)
        self.seeds: list[int | None] = []

    @property
    def P(self) -> Any:  # the toy-text model table, which a learner must never read
        raise AssertionError("the learner read the environment's model")

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[int, dict[str, Any]]:
        super().reset(seed=seed)
        self.seeds.append(seed)
        self._s = int(self.np_random.choice(self._m.S, p=self._init))
        return self._s, {}

    def step(self, a: int) -> Any:
        m, s = self._m, self._s
        self._s = int(self.np_random.choice(m.S, p=m.P[s, a]))
        cost = m.c[:, s, a]
        done = self._terminal is not None and self._s == self._terminal
        if self._style == "six":
            return self._s, float(m.r[s, a]), float(cost[0]), done, False, {}
        info = {"cost": float(cost[0])} if self._style == "cost" else {self._style: cost.tolist()}
        return self._s, float(m.r[s, a]), done, False, info


def hidden_problem(seed: int = 3, N: int = 1, frac: float = 0.5) -> tuple[CMDP, np.ndarray, CMDP]:
    """``(m, init, true)``: the simulator's model, its start distribution over 4 states, and the
    true CMDP of the learner's problem (a start state ``S`` added, ``H + 1`` steps) with a binding
    threshold ``frac`` of the way from the least cost to the unconstrained optimum's cost."""
    m = random_cmdp(S, A, H, N, seed=seed, support=3)
    init = np.zeros(S)
    init[:4] = 0.25
    P = np.zeros((S + 1, A, S + 1))
    P[:S, :, :S] = m.P
    P[S, :, :S] = init
    r = np.zeros((S + 1, A))
    r[:S] = m.r
    c = np.zeros((N, S + 1, A))
    c[:, :S] = m.c
    free = solve(CMDP(P, r, c, np.full(N, 100.0), S, H + 1))
    least = solve(CMDP(P, 1.0 - c.mean(axis=0), c, np.full(N, 100.0), S, H + 1))
    true = CMDP(P, r, c, least.costs + frac * (free.costs - least.costs), S, H + 1)
    assert np.all(least.costs < true.c_bar) and np.all(true.c_bar < free.costs)
    return m, init, true


def score(true: CMDP, policy: np.ndarray) -> tuple[float, float]:
    """(value gap, violation) of an ``(H, S, A)`` learned policy on the hidden model."""
    pol = np.full((H + 1, S + 1, A), 1.0 / A)
    pol[1:, :S] = policy
    ev = evaluate(true, pol)
    return solve(true).value - ev.value, float(np.max(ev.costs - true.c_bar, initial=0.0))


@pytest.mark.slow
def test_online_crl_learns_a_hidden_model_with_unknown_start_rewards_and_costs() -> None:
    m, init, true = hidden_problem()
    few = learn(Hidden(m, init), H=H, c_bar=true.c_bar, episodes=300, seed=0)
    many = learn(Hidden(m, init), H=H, c_bar=true.c_bar, episodes=10_000, seed=0)
    viol_few = score(true, few.policy)[1]
    gap_many, viol_many = score(true, many.policy)
    assert gap_many <= 0.35 and viol_many <= 0.75
    assert viol_many < viol_few - 0.5  # optimism on unknown costs fades with the visits
    assert few.value_gap is None and few.violation is None and few.value is None and few.costs is None
    assert many.episodes == 10_000 and many.realized_return.shape == (10_000,)
    assert many.realized_costs.shape == (10_000, 1) and many.policy.shape == (H, S, A)
    assert many.settings["rewards"] == "estimated" and many.settings["virtual_start"] is True


@pytest.mark.slow
def test_optcmdp_is_near_feasible_after_3000_episodes() -> None:
    # measured over seeds 0-2: violation 2.12 after 300 episodes, 0.52-0.83 after 3000
    # (Online-CRL after 10,000: 0.48-0.51, value gap -0.19 to -0.14; scripts/simulator_curve.py)
    m, init, true = hidden_problem()
    few = learn(Hidden(m, init), H=H, c_bar=true.c_bar, episodes=300, algorithm="optcmdp", seed=1)
    many = learn(Hidden(m, init), H=H, c_bar=true.c_bar, episodes=3000, algorithm="optcmdp", seed=1)
    viol_few, viol_many = score(true, few.policy)[1], score(true, many.policy)[1]
    assert viol_many <= 0.85 and viol_many < viol_few / 2


def test_record_arrays_are_what_the_environment_returned() -> None:
    m, init, true = hidden_problem()
    rec = learn(Hidden(m, init), H=H, c_bar=true.c_bar, episodes=40, seed=5)
    K = rec.episodes
    np.testing.assert_allclose(rec.mean_realized_return, np.cumsum(rec.realized_return) / np.arange(1, K + 1))
    np.testing.assert_allclose(rec.mean_realized_costs[-1], rec.realized_costs.mean(axis=0))
    assert np.array_equal(rec.cost_exceedances, np.any(rec.realized_costs > true.c_bar, axis=1))
    assert np.all((rec.realized_return >= 0) & (rec.realized_return <= H))
    # counts (S'*A, S'), S' = S + 2: H transitions per episode from the environment's states, one reset
    # per episode under each action of the virtual start S + 1
    counts = rec.counts.toarray().reshape(S + 2, A, S + 2)
    assert counts[:S].sum() == K * H and counts[S + 1, 0].sum() == K and counts[S].sum() == 0


def test_same_seed_same_run_and_resets_seeded_by_the_episode_child() -> None:
    m, init, true = hidden_problem()
    env1, env2 = Hidden(m, init), Hidden(m, init)
    a = learn(env1, H=H, c_bar=true.c_bar, episodes=30, seed=11)
    b = learn(env2, H=H, c_bar=true.c_bar, episodes=30, seed=11)
    c = learn(Hidden(m, init), H=H, c_bar=true.c_bar, episodes=30, seed=12)
    assert np.array_equal(a.realized_return, b.realized_return) and np.array_equal(a.policy, b.policy)
    assert not np.array_equal(a.realized_return, c.realized_return)
    children = np.random.SeedSequence(11).spawn(30)
    assert env1.seeds == [int(ch.generate_state(1)[0]) for ch in children]


@pytest.mark.parametrize("algo", ONLINE_ALGORITHMS)
def test_every_online_learner_runs_on_a_black_box(algo: str) -> None:
    m, init, true = hidden_problem()
    baseline = None
    if algo in SAFE_ALGORITHMS:
        # the library's safe baseline of the hidden model, with its exact costs (strictly safe)
        base = safe_baseline(true)
        baseline = (base.policy[1:, :S], base.costs)
        assert base.costs[0] < true.c_bar[0]
    options = {"k0": 5} if algo == "dope" else {}
    rec = learn(
        Hidden(m, init), H=H, c_bar=true.c_bar, episodes=12, algorithm=algo, seed=0, baseline=baseline, **options
    )
    assert rec.algorithm == algo and rec.episodes == 12 and rec.policy.shape == (H, S, A)
    assert np.allclose(rec.policy.sum(-1), 1.0)
    if algo == "dope":
        assert rec.baseline[:5].all()


@pytest.mark.parametrize("algo", SAFE_ALGORITHMS)
def test_safe_learners_need_a_baseline(algo: str) -> None:
    m, init, true = hidden_problem()
    with pytest.raises(CMDPInputError, match=r"^baseline: .*needs a known safe policy"):
        learn(Hidden(m, init), H=H, c_bar=true.c_bar, episodes=3, algorithm=algo)


@pytest.mark.parametrize("style", ["cost", "costs", "six", "my_cost"])
def test_cost_conventions_give_the_same_run(style: str) -> None:
    m, init, true = hidden_problem()
    ref = learn(Hidden(m, init), H=H, c_bar=true.c_bar, episodes=20, seed=2)
    key = "my_cost" if style == "my_cost" else None
    rec = learn(Hidden(m, init, style), H=H, c_bar=true.c_bar, episodes=20, seed=2, cost_key=key)
    assert np.array_equal(rec.realized_costs, ref.realized_costs) and np.array_equal(rec.policy, ref.policy)


def test_bad_spaces_and_arguments_are_refused_before_any_step() -> None:
    m, init, _ = hidden_problem()
    env = Hidden(m, init)
    env.observation_space = gym.spaces.Box(0.0, 1.0, (2,))
    with pytest.raises(CMDPInputError, match=r"observation space must be Discrete, got Box"):
        learn(env, H=H, c_bar=1.0, episodes=2)
    env = Hidden(m, init)
    env.action_space = gym.spaces.MultiDiscrete([2, 2])
    with pytest.raises(CMDPInputError, match=r"action space must be Discrete, got MultiDiscrete"):
        learn(env, H=H, c_bar=1.0, episodes=2)
    env = Hidden(m, init)
    for kwargs, pattern in [
        ({"H": 0}, r"^H: "),
        ({"episodes": 0}, r"^episodes: "),
        ({"c_bar": -1.0}, r"^c_bar: "),
        ({"algorithm": "nope"}, r"^algorithm: "),
        ({"delta": 1.0}, r"^delta: "),
        ({"reward_range": (1.0, 1.0)}, r"^reward_range: "),
        ({"step_timeout": 0.0}, r"^step_timeout: "),
        ({"r": np.zeros((2, 2))}, r"^r: expected shape"),
        ({"c": np.full((1, S, A), 2.0)}, r"^c: entries"),
        ({"s0": S}, r"^s0: "),
        ({"env_kwargs": {"x": 1}}, r"^env_kwargs: "),
    ]:
        args: dict[str, Any] = {"H": H, "c_bar": 1.0, "episodes": 2, **kwargs}
        with pytest.raises(CMDPInputError, match=pattern):
            learn(env, **args)
    assert env.seeds == []  # refused before any reset


class Scripted(gym.Env[int, int]):
    """Two states; ``step`` returns what the test scripts (reward, costs, ends, errors)."""

    def __init__(self, reward: float = 0.5, info: Any = None, end: tuple[str, int] | None = None, boom: int = -1):
        self.observation_space, self.action_space = gym.spaces.Discrete(2), gym.spaces.Discrete(2)
        self.reward, self.info, self.end, self.boom = reward, info if info is not None else {"cost": 0.1}, end, boom
        self.t = 0
        self.steps = 0

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[int, dict[str, Any]]:
        self.t = 0
        return 0, {}

    def step(self, a: int) -> Any:
        self.t += 1
        self.steps += 1
        if self.steps == self.boom:
            raise RuntimeError("sensor failure")
        term = self.end is not None and self.end[0] == "terminate" and self.t == self.end[1]
        trunc = self.end is not None and self.end[0] == "truncate" and self.t == self.end[1]
        return 1, self.reward, term, trunc, self.info


def test_environment_faults_name_the_episode_and_step(tmp_path) -> None:
    with pytest.raises(SimulatorError, match=r"^episode 0, step 0: reward 3.0 outside \[0, 1\] \(give reward_range"):
        learn(Scripted(reward=3.0), H=4, c_bar=1.0, episodes=2)
    rec = learn(Scripted(reward=3.0), H=4, c_bar=1.0, episodes=2, reward_range=(-1.0, 3.0))
    # the learner saw 1.0 per step; the record is in the environment's units: 4 steps of 3.0
    assert np.allclose(rec.realized_return, 12.0) and rec.settings["reward_range"] == [-1.0, 3.0]
    with pytest.raises(SimulatorError, match=r"^episode 0, step 0: cost 0 = 1.5 outside \[0, 1\]"):
        learn(Scripted(info={"cost": 1.5}), H=4, c_bar=1.0, episodes=2)
    with pytest.raises(SimulatorError, match=r"^episode 0, step 0: info has neither 'cost' nor 'costs'"):
        learn(Scripted(info={"other": 1}), H=4, c_bar=1.0, episodes=2)
    with pytest.raises(SimulatorError, match=r"reported 1 cost\(s\) but c_bar has N = 2"):
        learn(Scripted(), H=4, c_bar=[1.0, 1.0], episodes=2)
    early = r"^episode 0, step 1: the environment truncated the episode after 2 steps, before the horizon H = 4"
    with pytest.raises(SimulatorError, match=early):
        learn(Scripted(end=("truncate", 2)), H=4, c_bar=1.0, episodes=2)
    learn(Scripted(end=("truncate", 4)), H=4, c_bar=1.0, episodes=2)  # a truncation at H is the end
    log = tmp_path / "run.jsonl"
    env = Scripted(boom=6)  # the 6th step sent: episode 1, step 0 (H = 5)
    raised = r"^episode 1, step 0: the environment raised RuntimeError in step\(\): sensor failure"
    with pytest.raises(SimulatorError, match=raised):
        learn(env, H=5, c_bar=1.0, episodes=3, run_log=log)
    lines = log.read_text().splitlines()
    assert json.loads(lines[0])["config"]["H"] == 5 and json.loads(lines[1])["episode"] == 0 and len(lines) == 2


def test_early_termination_spends_the_rest_in_the_absorbing_state() -> None:
    env = Scripted(reward=1.0, end=("terminate", 2))
    rec = learn(env, H=5, c_bar=1.0, episodes=3, seed=0)
    assert env.steps == 6  # 2 steps per episode were sent to the environment
    assert np.allclose(rec.realized_return, 2.0) and np.allclose(rec.realized_costs, 0.2)
    counts = rec.counts.toarray().reshape(4, 2, 4)  # states 0, 1, the absorbing state S = 2, the start 3
    assert counts[:2, :, 2].sum() == 3 and counts[2].sum() == 0  # the terminating steps; the pin removed
    assert rec.settings["absorbing_state"] is True and counts[3, 1].sum() == 3


def test_step_timeout() -> None:
    class Slow(Scripted):
        def step(self, a: int) -> Any:
            time.sleep(0.2)
            return super().step(a)

    with pytest.raises(SimulatorError, match=r"^episode 0, step 0: step\(\) took longer than step_timeout = 0.05 s"):
        learn(Slow(), H=3, c_bar=1.0, episodes=1, step_timeout=0.05)


def test_run_log_lines_and_resume_gives_the_uninterrupted_policy(tmp_path) -> None:
    m, init, true = hidden_problem()
    full = tmp_path / "full.jsonl"
    ref = learn(Hidden(m, init), H=H, c_bar=true.c_bar, episodes=25, seed=4, run_log=full)
    lines = full.read_text().splitlines()
    assert len(lines) == 1 + 25 + 1 and json.loads(lines[-1]) == {"complete": True}
    row = json.loads(lines[3])
    assert row["episode"] == 2 and set(row) == {"episode", "state", "action", "next_state", "reward", "costs"}
    assert len(row["state"]) == H and len(row["costs"]) == H and len(row["costs"][0]) == 1
    # an interrupted run: 10 episodes and half a line; the resumed run finishes the same way
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:11]) + "\n" + lines[11][:30])
    env = Hidden(m, init)
    with pytest.warns(RunLogWarning, match=r"cut\.jsonl line 12 was incomplete .* resuming after 10 logged episode"):
        again = learn(env, H=H, c_bar=true.c_bar, episodes=25, seed=4, run_log=cut)
    assert len(env.seeds) == 15  # only the missing episodes were played
    assert np.array_equal(again.policy, ref.policy) and np.array_equal(again.realized_return, ref.realized_return)
    assert cut.read_text().splitlines() == lines
    with pytest.raises(CMDPInputError, match=r"^run_log: .* holds a run with other settings \(differing: seed\)"):
        learn(Hidden(m, init), H=H, c_bar=true.c_bar, episodes=25, seed=5, run_log=cut)


def test_a_library_environment_as_a_black_box_is_scored_exactly() -> None:
    m = scenario_cmdp("1a")
    rec = learn(
        "cmdp_rl/Scenario1a-v0", H=m.H, c_bar=m.c_bar, episodes=30, r=m.r, c=m.c, s0=m.s0, seed=0, deploy="last"
    )
    assert rec.value_gap is not None and rec.violation is not None and rec.value is not None
    v, costs = evaluate(m, rec.policy).value, evaluate(m, rec.policy).costs
    assert rec.settings["virtual_start"] is False and rec.policy.shape == (m.H, m.S, m.A)
    # the last episode's scored policy is the returned one
    assert abs(rec.value[-1] - v) <= 1e-12 and np.allclose(rec.costs[-1], costs)


def _cli(*argv: str, cwd: Any) -> Any:
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "cmdp_rl", *argv], capture_output=True, text=True, cwd=cwd)


@pytest.mark.slow
def test_cli_learn_env_writes_policy_counts_figure_and_log(tmp_path) -> None:
    import scipy.sparse as sp

    out = _cli(
        "learn", "--env", "cmdp_rl/Scenario1a-v0", "--horizon", "10", "--c-bar", "2", "--episodes", "30",
        "--policy-out", "pol.npy", "--counts-out", "counts.npz", "--figure", "fig.png", "--run-log", "run.jsonl",
        "--json", "--deploy", "last", cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    m = scenario_cmdp("1a")
    assert res["episodes"] == 30 and res["c_bar"] == [2.0] and "value_gap" in res
    assert np.load(tmp_path / "pol.npy").shape == (10, m.S, m.A)
    counts = sp.load_npz(tmp_path / "counts.npz")
    assert counts.shape == (m.S * m.A, m.S) and counts.sum() == 30 * 10
    assert (tmp_path / "fig.png").stat().st_size > 0
    assert json.loads((tmp_path / "run.jsonl").read_text().splitlines()[-1]) == {"complete": True}
    cert = _cli("certify", "1a", "--policy", "pol.npy", "--counts", "counts.npz", "--json", cwd=tmp_path)
    assert cert.returncode in (0, 1), cert.stderr
    report = json.loads(cert.stdout)
    assert report["samples"] == 300 and report["value"][0] <= report["value"][1]


ENV = ["--env", "cmdp_rl/Scenario1a-v0", "--episodes", "2"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--env", "CartPole-v1", "--horizon", "5", "--c-bar", "1", "--episodes", "2"], "space must be Discrete"),
        ([*ENV, "--c-bar", "1"], "--horizon: required"),
        ([*ENV, "--horizon", "5", "--c-bar", "1/x"], "c-bar: expected numbers"),
        ([*ENV, "--horizon", "5", "--c-bar", "1", "--algo", "dope"], "--baseline: dope needs"),
        ([*ENV, "--horizon", "5", "--c-bar", "1", "--env-kwargs", "[1]"], "env-kwargs: must be a JSON object"),
        ([*ENV, "--horizon", "5", "--c-bar", "1", "--step-timeout", "0"], "--step-timeout"),
        (["1a", "--horizon", "5", "--episodes", "2"], "--horizon: the registered problem 1a carries its own"),
        (["--episodes", "2"], "give a MODEL"),
    ],
)  # fmt: skip
def test_cli_learn_env_refusals_are_one_line_and_write_nothing(tmp_path, argv: list[str], needle: str) -> None:
    outputs = ["--policy-out", "pol.npy"] + (["--figure", "fig.png"] if "--env" in argv else [])
    out = _cli("learn", *argv, *outputs, cwd=tmp_path)
    assert out.returncode == 2 and needle in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_black_box_with_known_r_c_s0_learns_like_the_model_path() -> None:
    """Scenario 1a through its Gymnasium environment (r, c, s0 given; it never terminates, so the
    planner has the model's states) against Online-CRL on the model: 10 seeds each, exact value
    gaps at checkpoints. The two are the same learner on the same problem with other random
    streams, so their means may differ only by noise: within 3 standard errors of the difference.
    (Each mean inside the other's 95% band, the stricter rule, fails about one checkpoint in five
    between two samples of one distribution: measured on the model path with two seed sets.)"""
    from cmdp_rl import EpisodicEnv, OnlineCRL, Scorer

    m = scenario_cmdp("1a")
    K, marks = 100, np.array([10, 30, 60, 100]) - 1
    scorer = Scorer.for_model(m)
    black = np.array(
        [
            learn("cmdp_rl/Scenario1a-v0", H=m.H, c_bar=m.c_bar, episodes=K, r=m.r, c=m.c, s0=m.s0, seed=s).value_gap
            for s in range(10)
        ]
    )
    model = np.array(
        [
            OnlineCRL(m, 0.1, episodes=K).fit(EpisodicEnv(m, np.random.default_rng(s)), scorer).value_gap
            for s in range(10)
        ]
    )
    a, b = black[:, marks], model[:, marks]
    se = np.sqrt(a.var(axis=0, ddof=1) / 10 + b.var(axis=0, ddof=1) / 10)
    assert np.all(np.abs(a.mean(axis=0) - b.mean(axis=0)) <= 3.0 * se + 1e-9)
    assert a[:, -1].mean() < a[:, 0].mean() - 1.0 and b[:, -1].mean() < b[:, 0].mean() - 1.0  # both learn


def test_cli_learn_on_a_model_writes_sparse_counts_too(tmp_path) -> None:
    import scipy.sparse as sp

    out = _cli("learn", "1a", "--episodes", "20", "--counts-out", "c.npz", "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    m = scenario_cmdp("1a")
    counts = sp.load_npz(tmp_path / "c.npz")
    assert counts.shape == (m.S * m.A, m.S) and counts.sum() == 20 * m.H
