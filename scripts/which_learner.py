"""Write ``docs/which-learner.md`` from the ``safe_learning`` benchmark's result file.

Every number of the page's tables comes from ``benchmarks/results/safe_learning.json``
(``python -m benchmarks --only safe_learning``, written from a clean tree; its commit, date and
machine are quoted on the page)::

    python scripts/which_learner.py
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from cmdp_rl.learners.catalog import LABELS, SAFE_ALGORITHMS

ROOT = Path(__file__).resolve().parents[1]
RESULT = ROOT / "benchmarks" / "results" / "safe_learning.json"
PAGE = ROOT / "docs" / "which-learner.md"
#: the learners that promise no violating episode (a known safe baseline, played or mixed in):
#: bold in the tables, with their first departure from the baseline
ZERO_VIOLATION = ("safe-crl", "dope", "optpess", "dope-plus")

GUIDE = """# Which learner?

Three questions decide it. Every answer below rests on the measured table at the end of the page.

1. **Must no episode violate while it learns?** Use **`safe-crl`**. It needs what DOPE and
   OptPess-LP need: a policy known to be safe and its expected costs (`baseline=(policy, costs)`;
   on a model, `make_learner` computes one, the optimum at `c_bar / 5`). Every episode it plays
   a mixed policy whose cost the data certify within `c_bar` ([How it works](method.md#safe-learning-safe-crl)):
   with probability `1 - delta` no episode violates. In the table it never violated, left its
   baseline in the first episode and had the lowest regret of the four zero-violation
   learners on every problem. DOPE, OptPess-LP and DOPE+ never violate either, but their
   per-step cost bonuses keep them on their baseline: OptPess-LP for all 20,000 episodes on every
   problem, DOPE for its `K0` episodes (676 to 12,500) or all of them, DOPE+ for fewer (585 to
   3,926) or all of them, and what DOPE and DOPE+ play afterwards learns little (DOPE+ is
   cmdp-rl's reconstruction from its paper's abstract: [Baselines](baselines.md)).
2. **Do you need a policy to deploy at the end?** Whatever learned the data, certify the
   result from the counts: `make_learner(..., deploy="certified")` hands over the best policy
   the run's data certify safe (at `deploy_delta = 0.05`, the certificates' valid radius), else
   the baseline, else a record with status `"uncertified"`; `cmdp_rl.learn` on a simulator and
   `cmdp-rl learn --env` do so by default, `solve_safe(counts, ...)` does the same for any counts,
   and `cmdp-rl learn --deploy certified` on the command line. A policy certified from
   data is safe with probability `1 - deploy_delta`, not just on average over runs.
3. **Are violations allowed while learning, and you want the lowest regret?** The optimistic
   learners (`online-crl`, `optcmdp`, `optcmdp-bonus`, `optdual`) and `plugin` reach a low or
   negative regret, bought with violating episodes (negative regret means policies better
   than the constrained optimum, which only an infeasible policy can be). Count the violating
   episodes and the strong violation before you choose one. The primal-dual `optpess-pd` and
   `rpd` (reconstructed from their papers' abstracts, [Baselines](baselines.md)) violate too and,
   at their papers' constants, learn slowly here. OptPess-PD's violations come early and stop, as
   its claim of a bounded cumulative violation says (seed 0, 20,000 episodes: media-control's all
   within its first 1,060 episodes, 1b's within its first 11,160); RPD stays near its uniform start
   on 1a and 1b, violating in every episode.

A learner that must not violate but has no safe policy to start from has nothing to fall back
on: no learner here can promise zero violation then.
"""


def _fmt_int(v: float) -> str:
    return f"{v:,.0f}"


def _first(v: Any, safe: bool) -> str:
    """The first departure: an episode, ``never`` for a safe learner that never left its baseline
    (stored as null: the result file holds no infinity), empty for a learner without one."""
    if not safe:
        return ""
    return "never" if v is None or math.isinf(float(v)) else f"{float(v):,.0f}"


def _time(ms: float) -> str:
    return f"{ms * 1e3:.0f} µs" if ms < 1 else f"{ms:.2f} ms"


def table(data: dict[str, Any]) -> str:
    """The measured tables, one per problem, the zero-violation learners first."""
    rows = data["rows"]
    out = []
    for problem in data["params"]["problems"]:
        out += [
            f"### {problem}",
            "",
            f"{problem}, from `benchmarks/results/safe_learning.json`:",
            "",
            "| learner | violating episodes | strong violation (largest run) | regret, median | "
            "regret, mean ± 95% | first departure | time per episode |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        mine = [r for r in rows if r["problem"] == problem]
        for r in sorted(mine, key=lambda r: r["algorithm"] not in ZERO_VIOLATION):  # stable: the run's order
            name = LABELS.get(r["algorithm"], r["algorithm"])
            if r["algorithm"] in ZERO_VIOLATION:
                name = f"**{name}**"
            out.append(
                f"| {name} | {r['violating_episodes']:,} | {r['strong_violation']:,.4g} | "
                f"{_fmt_int(r['regret_median'])} | {_fmt_int(r['regret_mean'])} ± {_fmt_int(r['regret_band'])} | "
                f"{_first(r.get('first_departure'), r['algorithm'] in SAFE_ALGORITHMS)} | {_time(r['episode_ms'])} |"
            )
        out.append("")
    return "\n".join(out)


def render() -> str:
    """The page's text, from the result file."""
    data = json.loads(RESULT.read_text())
    meta, params = data["meta"], data["params"]
    verdicts = [n for n in data["notes"] if ": safe-crl regret" in n]
    text = [
        GUIDE,
        "## Measured",
        "",
        f"Every online learner, side by side in one `compare` run per problem (the same seeds), "
        f"{params['runs']} runs x {params['episodes']:,} episodes, at the DOPE preset's settings "
        "(`delta = 0.01`; the safe learners' baseline is the optimum at `c_bar / 5`, with its exact "
        "costs). Violating episodes are summed over all runs; regret is `cum_value_gap` at the last "
        "episode; strong violation sums every constraint's excess in every episode (no "
        "cancellation); first departure is the first episode not played on the baseline alone "
        "(median over runs); time per episode is plan + act, re-plans included. Written by "
        f"`python -m benchmarks --only safe_learning` at commit `{meta['git_commit'][:7]}` on "
        f"{meta['date'][:10]} ({meta['cpus']} cores, load average {meta['load_average']:.2g} at the end) into "
        "`benchmarks/results/safe_learning.json`; this page by `python scripts/which_learner.py`.",
        "",
        "Targets of the safe learner (issue 35), checked by the benchmark:",
        "",
        *[f"* {v}" for v in verdicts],
        "",
        table(data),
    ]
    return "\n".join(text).rstrip() + "\n"


def main() -> None:
    PAGE.write_text(render())
    print(f"wrote {PAGE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
