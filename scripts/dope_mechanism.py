"""Why DOPE stays on a low-value policy in the arena's ``dope`` preset: the measured mechanism.

Runs DOPE exactly as run 0 of ``cmdp-rl compare --preset dope`` does (media-control, ``delta``
0.01, 20,000 episodes, the safe baseline = the optimum at ``c_bar / 5``, the run's own seed
stream), with the library's learner and episode loop, and measures, from the counts DOPE plans
from at its first plan after the ``K0`` baseline episodes and at its last plan:

* for the fast action (the action with cost 1; both actions have the same reward, the fast one
  fills the buffer) and the slow one, at the states where the baseline or the optimal policy
  play fast: the visits ``n(s, a)``, ``beta_bar(s, a)`` (``dope_radius`` summed over the next
  states), DOPE's cost bonus ``H beta_bar`` and pessimistic per-step cost ``c + H beta_bar``,
  and its reward bonus ``(H^2 / gamma) beta_bar`` (``dope_bonuses``);
* DOPE's own plan (its extended LP rebuilt from the same counts, checked to be the policy DOPE
  played): its pessimistic cost against ``c_bar = 5`` and which pairs it is spent on, its
  expected fast steps, its exact value and value gap on the true model;
* the least pessimistic cost of any policy that plays fast at the first step (in the start
  state), and the pessimistic cost, minimized over DOPE's confidence set, of the baseline
  and of the optimal policy;
* three counterfactual plans from the same counts: without the cost bonus of the pair
  (start state, fast), without any cost bonus, without the reward bonus;
* over the episodes after ``K0``: the value gaps, the fast steps actually taken, and the
  expected fast steps of each played policy on the true model (a plan's policy is uniform at
  the states its plan does not reach, so this can be tiny but positive); ``V*``;
* the (start state, fast) cost bonus from the ``K0`` counts under either radius logarithm
  (``log_term`` ``"paper"`` and ``"code"``) at ``K`` and at the authors' 100,000 episodes.

The same is measured for a second run with ``bonus_scale = 0.1`` (both bonuses / 10), the
setting the docs quote. Writes ``docs/dope-mechanism.json`` (with the commit of the
``cmdp_rl`` source it ran against and the machine) and prints a short table. Under a
minute on 2 cores. Run it against a clean checkout::

    PYTHONPATH=<checkout>/src python scripts/dope_mechanism.py [--episodes 20000] [--seed 0]

``--episodes`` is the run's ``K``, which also enters DOPE's radius (``log(2 S A H K / delta)``),
so another value measures another run; ``--seed`` is the comparison's root seed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

import cmdp_rl
from cmdp_rl import evaluate, make, solve
from cmdp_rl.confidence.box import Box, evi, greedy_rows
from cmdp_rl.confidence.radii import empirical_kernel
from cmdp_rl.experiments.compare import PRESETS, CompareConfig
from cmdp_rl.learners import EpisodicEnv, Scorer, make_learner
from cmdp_rl.learners.bonuses import dope_bonuses, dope_radius
from cmdp_rl.learners.replan import WarmELP
from cmdp_rl.planning.baseline import safe_baseline

Array = NDArray[np.float64]
OUT = Path(__file__).resolve().parents[1] / "docs" / "dope-mechanism.json"
#: occupancy below which a state-action pair counts as not reached
REACH = 1e-12
#: the second run's factor on both bonuses (the setting the docs quote)
SMALL_SCALE = 0.1


def source_commit() -> dict[str, Any]:
    """The git commit of the ``cmdp_rl`` source imported, and whether its tree was clean."""
    where = Path(cmdp_rl.__file__).resolve().parent

    def git(*args: str) -> str:
        try:
            done = subprocess.run(["git", *args], cwd=where, capture_output=True, text=True, check=True)
        except (OSError, subprocess.CalledProcessError):
            return ""
        return done.stdout.strip()

    return {"commit": git("rev-parse", "HEAD") or None, "src_clean": git("status", "--porcelain", "--", ".") == ""}


def pessimistic_cost(box: Box, cost: Array, policy: Array, s0: int) -> float:
    """Expected cost of ``policy`` under ``cost (S, A)``, minimized over the kernels of ``box``
    (backward pass; each row is the box's greedy fill towards the cheapest next states)."""
    H, S = policy.shape[:2]
    V = np.zeros(S)
    for h in range(H - 1, -1, -1):
        rows = greedy_rows(box, np.argsort(V, kind="stable")[None].astype(np.int64))[0]  # (S, A, S)
        V = (policy[h] * (cost + rows @ V)).sum(-1)
    return float(V[s0])


def least_cost_first_action(box: Box, cost: Array, s0: int, a: int, H: int) -> float:
    """Least expected ``cost`` over every policy that plays ``a`` at the first step and every
    kernel of ``box`` (the later steps by extended value iteration on ``-cost``)."""
    later = -evi(box, -cost, H - 1)[0][0] if H > 1 else np.zeros(box.S)  # least cost-to-go after step 1
    rows = greedy_rows(box, np.argsort(later, kind="stable")[None].astype(np.int64))[0]
    return float(cost[s0, a] + rows[s0, a] @ later)


def snapshot(
    learner: Any,
    model: Any,
    counts: NDArray[np.int64],
    played: Array,
    fast: int,
    states: list[int],
    policies: dict[str, Array],
    v_star: float,
) -> dict[str, Any]:
    """Every measured quantity at one set of counts (module docstring)."""
    known, K, delta = learner.known, learner.episodes, learner.delta
    H, s0 = known.H, known.s0
    name = {fast: "fast", 1 - fast: "slow"}
    p_hat, n = empirical_kernel(counts)
    beta = dope_radius(counts, H, K, delta, learner.log_term)
    beta_bar = beta.sum(-1)
    rb, cb = dope_bonuses(counts, H, K, delta, learner.gamma, learner.bonus_scale, learner.log_term)
    c_pess = known.c[0] + cb  # DOPE's pessimistic per-step cost
    box = Box.from_radius(p_hat, beta)

    def plan_with(reward: Array, cost: Array) -> tuple[Any, Any]:
        plan = WarmELP()(known.replace(r=reward, c=cost[None]), p_hat, beta)
        return plan, evaluate(model, plan.policy)

    plan, ev = plan_with(known.r + rb, c_pess)
    occ = plan.occupancy.sum(0)  # (S, A) expected visits under the plan's own (optimistic) kernel
    reached = plan.occupancy.sum(-1) > REACH  # (H, S)
    c_cf = c_pess.copy()
    c_cf[s0, fast] = known.c[0][s0, fast]
    counterfactuals = {}
    for label, reward, cost in (
        ("no_cost_bonus_on_s0_fast", known.r + rb, c_cf),
        ("no_cost_bonus", known.r + rb, known.c[0]),
        ("no_reward_bonus", known.r, c_pess),
    ):
        cf, ev_cf = plan_with(reward, cost)
        counterfactuals[label] = {
            "pessimistic_cost": float(cf.costs[0]),
            "fast_steps_in_plan": float(cf.occupancy[..., fast].sum()),
            "true_value": float(ev_cf.value),
            "value_gap": float(v_star - ev_cf.value),
            "true_cost": float(ev_cf.costs[0]),
        }
    support = model.P[s0, fast] > 0

    def pair(s: int, a: int) -> dict[str, float]:
        return {
            "visits": int(n[s, a]),
            "beta_bar": float(beta_bar[s, a]),
            "cost_bonus": float(cb[s, a]),
            "pessimistic_step_cost": float(c_pess[s, a]),
            "reward_bonus": float(rb[s, a]),
        }

    return {
        "states": [{"s": s, "fast": pair(s, fast), "slow": pair(s, 1 - fast)} for s in states],
        "visits_by_state": {name[a]: [int(v) for v in n[:, a]] for a in (fast, 1 - fast)},
        "dope_plan": {
            "status": plan.status,
            "optimistic_value": float(plan.value),
            "pessimistic_cost": float(plan.costs[0]),
            "pessimistic_cost_by_pair": {
                f"s{s},{name[a]}": float(occ[s, a] * c_pess[s, a])
                for s in range(known.S)
                for a in (fast, 1 - fast)
                if occ[s, a] * c_pess[s, a] > 1e-9
            },
            "fast_steps_in_plan": float(occ[:, fast].sum()),
            "max_fast_probability_where_the_plan_goes": float(plan.policy[..., fast][reached].max(initial=0.0)),
            "true_value": float(ev.value),
            "value_gap": float(v_star - ev.value),
            "true_expected_fast_steps": float(ev.occupancy[..., fast].sum()),
            "max_abs_diff_to_played_policy": float(np.abs(plan.policy - played).max()),
        },
        "least_pessimistic_cost_fast_at_first_step": least_cost_first_action(box, c_pess, s0, fast, H),
        "least_pessimistic_cost_any_policy": float(-evi(box, -c_pess, H)[0][0, s0]),
        "least_pessimistic_cost_of": {k: pessimistic_cost(box, c_pess, pol, s0) for k, pol in policies.items()},
        "counterfactual_plans": counterfactuals,
        "beta_bar_s0_fast_over_true_support": float(beta[s0, fast][support].sum()),
        "true_support_s0_fast": [int(s) for s in np.flatnonzero(support)],
    }


def measure(episodes: int, seed: int, bonus_scale: float) -> dict[str, Any]:
    """Run 0 of the ``dope`` preset (with these overrides) and every snapshot's numbers."""
    config = CompareConfig.preset(
        "dope", algorithms=("dope",), runs=1, episodes=episodes, seed=seed, bonus_scale=bonus_scale
    )
    spec = config.run_specs()[0]
    model = make(spec.scenario)
    scorer = Scorer.for_model(model)
    base = safe_baseline(model)  # what the arena's runner hands the safe learners
    learner: Any = make_learner(
        spec.algorithm,
        model,
        spec.delta,
        episodes=spec.episodes,
        bonus_scale=spec.bonus_scale,
        baseline=(base.policy, base.costs),
    )
    K, K0, H = spec.episodes, learner.k0, model.H
    if not K0 < K - 1:
        raise SystemExit(f"--episodes must exceed K0 + 1 = {K0 + 1}")
    cost = model.c[0]
    fast = int(np.argmax(cost.mean(0)))
    if model.A != 2 or not (np.all(cost[:, fast] == 1.0) and np.all(cost[:, 1 - fast] == 0.0)):
        raise SystemExit("media-control should have one action of cost 1 and one of cost 0")
    optimal = solve(model).policy
    policies = {"baseline": base.policy, "optimal": optimal}
    fast_by_state = {k: evaluate(model, pol).occupancy[..., fast].sum(0) for k, pol in policies.items()}
    states = sorted({int(s) for occ in fast_by_state.values() for s in np.flatnonzero(occ > 1e-9)})

    counts_at: dict[int, NDArray[np.int64]] = {}
    played: dict[int, Array] = {}
    fast_expected = np.zeros(K - K0)

    def on_episode(k: int, counts: NDArray[np.int64], policy: Array) -> None:
        if k in (K0, K - 1):
            counts_at[k] = counts.copy()  # what the plan of episode k + 1 is made from
        if k in (K0 + 1, K):
            played[k] = policy.copy()
        if k > K0:
            fast_expected[k - K0 - 1] = evaluate(model, policy).occupancy[..., fast].sum()

    t0 = time.perf_counter()
    rec = learner.fit(EpisodicEnv(model, np.random.default_rng(spec.seed_sequence)), scorer, on_episode=on_episode)
    seconds = time.perf_counter() - t0
    final = rec.counts.toarray().reshape(model.S, model.A, model.S)
    gap = rec.value_gap[K0:]
    snaps = {}
    for label, k in (("first_plan_after_K0", K0 + 1), ("last_plan", K)):
        snaps[label] = {
            "plans_from_episodes": k - 1,
            **snapshot(learner, model, counts_at[k - 1], played[k], fast, states, policies, scorer.v_star),
        }
    # the (s0, fast) cost bonus from the K0 counts under either radius logarithm, at K and at the
    # authors' 100,000 episodes (the bonus grows with log K)
    s0, scale = model.s0, learner.bonus_scale
    by_log = {
        f"log_term={lt},K={kk}": float(
            dope_bonuses(counts_at[K0], H, kk, spec.delta, learner.gamma, scale, lt)[1][s0, fast]
        )
        for lt in ("paper", "code")
        for kk in (K, 100_000)
    }
    return {
        "setting": {
            "problem": spec.scenario,
            "S": model.S,
            "A": model.A,
            "H": H,
            "c_bar": float(model.c_bar[0]),
            "episodes": K,
            "root_seed": seed,
            "run": spec.run,
            "learner": learner.settings(),
            "K0": K0,
            "fast_action": fast,
            "same_reward_for_both_actions": bool(np.array_equal(model.r[:, fast], model.r[:, 1 - fast])),
            "buffer_up_probability": {"fast": float(model.P[1, fast, 2]), "slow": float(model.P[1, 1 - fast, 2])},
            "expected_fast_steps_by_state": {k: [round(float(x), 6) for x in v] for k, v in fast_by_state.items()},
            "states_where_baseline_or_optimal_play_fast": states,
        },
        "v_star": float(scorer.v_star),
        "baseline": {"value": base.value, "cost": float(base.costs[0]), "value_gap": float(scorer.v_star - base.value)},
        "run": {
            "regret": float(rec.cum_value_gap[-1]),
            "violating_episodes": rec.violating_episodes,
            "statuses": rec.status_counts(),
            "seconds": seconds,
        },
        "after_K0": {
            "episodes": K - K0,
            "value_gap_min": float(gap.min()),
            "value_gap_max": float(gap.max()),
            "value_gap_mean": float(gap.mean()),
            "steps": (K - K0) * H,
            "fast_steps_taken": int(final[:, fast].sum() - counts_at[K0][:, fast].sum()),
            "fast_visits_by_state_at_K0": [int(v) for v in counts_at[K0][:, fast].sum(-1)],
            "fast_visits_by_state_at_end": [int(v) for v in final[:, fast].sum(-1)],
            "share_of_episodes_with_fast_probability_on_a_reachable_state": float(np.mean(fast_expected > 0)),
            "expected_fast_steps_per_episode_max": float(fast_expected.max()),
            "expected_fast_steps_per_episode_mean": float(fast_expected.mean()),
        },
        "snapshots": snaps,
        "cost_bonus_s0_fast_at_K0_counts_by_radius_log": by_log,
    }


def print_table(label: str, m: dict[str, Any]) -> None:
    """The short table of one measured run."""
    st = m["setting"]
    print(f"{label}: K = {st['episodes']:,}, K0 = {st['K0']:,}, bonus_scale {st['learner']['bonus_scale']:g}")
    print("  first plan after K0:  s  action   n(s,a)  beta_bar  cost bonus  c + cost bonus")
    for row in m["snapshots"]["first_plan_after_K0"]["states"]:
        for a in ("fast", "slow"):
            d = row[a]
            print(
                f"  {'':20} {row['s']}  {a:6} {d['visits']:7d}  {d['beta_bar']:8.3f}  {d['cost_bonus']:10.3f}"
                f"  {d['pessimistic_step_cost']:14.3f}"
            )
    for name, snap in m["snapshots"].items():
        p, cf = snap["dope_plan"], snap["counterfactual_plans"]
        print(
            f"  {name}: plan's pessimistic cost {p['pessimistic_cost']:.3f} (c_bar {st['c_bar']:g}), fast steps "
            f"{p['fast_steps_in_plan']:.3g}, gap {p['value_gap']:.4f}; least pessimistic cost with fast at step 1 "
            f"{snap['least_pessimistic_cost_fast_at_first_step']:.3f}; fast steps / gap without the (s0, fast) "
            f"cost bonus {cf['no_cost_bonus_on_s0_fast']['fast_steps_in_plan']:.2f} / "
            f"{cf['no_cost_bonus_on_s0_fast']['value_gap']:.3f}, without the reward bonus "
            f"{cf['no_reward_bonus']['fast_steps_in_plan']:.2f} / {cf['no_reward_bonus']['value_gap']:.3f}"
        )
    a = m["after_K0"]
    print(
        f"  after K0: gap {a['value_gap_min']:.4f} .. {a['value_gap_max']:.4f}, fast steps taken "
        f"{a['fast_steps_taken']} of {a['steps']:,}; regret {m['run']['regret']:,.0f}; V* {m['v_star']:.4f}"
    )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=PRESETS["dope"]["episodes"], help="K (default: the preset's)")
    ap.add_argument("--seed", type=int, default=0, help="the comparison's root seed (its run 0 is measured)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    preset = measure(args.episodes, args.seed, 1.0)
    small = measure(args.episodes, args.seed, SMALL_SCALE)
    out: dict[str, Any] = {
        "what": "DOPE on media-control as run 0 of `cmdp-rl compare --preset dope`: why it never plays the fast action",
        "command": f"python scripts/dope_mechanism.py --episodes {args.episodes} --seed {args.seed}",
        "source": source_commit(),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "cpus": os.cpu_count(),
        },
        "preset": preset,
        f"bonus_scale_{SMALL_SCALE:g}": small,
        "seconds": time.perf_counter() - t0,
    }
    args.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print_table("preset", preset)
    print_table(f"bonus_scale {SMALL_SCALE:g}", small)
    print(f"wrote {args.out} ({out['seconds']:.0f} s)")
    return out


if __name__ == "__main__":
    main()
