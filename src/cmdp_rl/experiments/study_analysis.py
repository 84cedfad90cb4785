"""The analysis of ``study n-constraints``: samples needed until eps-good for good, the fits of
``a + b log N`` and ``a + b N`` with their intervals, the theory's own growth in ``N``, and the
tables and summary built from them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from cmdp_rl.experiments.aggregate import fmt, pm
from cmdp_rl.experiments.runner import RunRecord, eps_column
from cmdp_rl.experiments.study_config import NConstraintsStudy, model_file, problem_spec

Array = NDArray[np.float64]


def samples_to_eps(samples: Sequence[float], gap: Sequence[float], violation: Sequence[float], eps: float) -> float:
    """The first recorded ``samples`` from which on the policy is eps-optimal and eps-feasible at every
    later recorded point (``gap <= eps`` and ``violation <= eps``); ``nan`` if the last point is not.

    Points are taken in increasing ``samples`` order.
    """
    x = np.asarray(samples, dtype=np.float64)
    order = np.argsort(x, kind="stable")
    good = (np.asarray(gap, dtype=np.float64)[order] <= eps) & (np.asarray(violation, dtype=np.float64)[order] <= eps)
    if good.size == 0 or not good[-1]:
        return float("nan")
    bad = np.flatnonzero(~good)
    first = 0 if bad.size == 0 else int(bad[-1]) + 1
    return float(x[order][first])


@dataclass(frozen=True)
class Fit:
    """Least-squares fit ``y = a + b g(N)`` with 95% Student-t intervals.

    Attributes:
        a, b: intercept and slope; a_half, b_half: their 95% half-widths.
        r2: coefficient of determination; rss: residual sum of squares; points: data points.
    """

    a: float
    b: float
    a_half: float
    b_half: float
    r2: float
    rss: float
    points: int


def linear_fit(g: Array, y: Array) -> Fit:
    """Ordinary least squares of ``y`` on ``[1, g]`` (each run one point), with 95% t intervals."""
    g, y = np.asarray(g, dtype=np.float64), np.asarray(y, dtype=np.float64)
    n = y.size
    if n < 2 or np.ptp(g) == 0:
        return Fit(float(np.mean(y)) if n else math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, n)
    X = np.column_stack([np.ones(n), g])
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ coef
    rss = float(resid @ resid)
    tss = float(((y - y.mean()) ** 2).sum())
    if n > 2:
        s2 = rss / (n - 2)
        cov = s2 * np.linalg.inv(X.T @ X)
        t = float(stats.t.ppf(0.975, n - 2))
        a_half, b_half = t * math.sqrt(cov[0, 0]), t * math.sqrt(cov[1, 1])
    else:
        a_half = b_half = math.nan
    r2 = 1.0 - rss / tss if tss > 0 else math.nan
    return Fit(float(coef[0]), float(coef[1]), a_half, b_half, r2, rss, n)


def theory_growth(algorithm: str, ns: Sequence[int], S: int, A: int, H: int, eps: float, delta: float) -> Array:
    """The theory bound's samples at each ``N`` divided by its value at ``ns[0]`` (the bounds' own
    N-dependence: Theorem 1's ``n`` for GMBL, eq. "m"'s ``m`` for Online-CRL)."""
    from cmdp_rl.confidence.sample_size import gmbl_bounds, online_crl_bounds

    vals = []
    for n in ns:
        if algorithm == "gmbl":
            vals.append(float(gmbl_bounds(S, A, H, n, eps, delta).n_per_pair))
        else:
            vals.append(float(online_crl_bounds(S, A, H, n, eps, delta).m))
    arr = np.asarray(vals)
    out: Array = arr / arr[0]
    return out


# -- the tables ----------------------------------------------------------------------------


def family_n(spec: str) -> tuple[str, int]:
    family, _, rest = spec.partition(":n=")
    return family, int(rest)


def results_rows(eps: Sequence[float], radius: str, records: list[RunRecord]) -> list[list[Any]]:
    rows = []
    for rec in records:
        family, n = family_n(rec.spec.scenario)
        cols = rec.columns
        k = len(cols["samples"])
        for i in sorted(range(k), key=lambda j: cols["samples"][j]):

            def get(name: str, i: int = i, cols: Any = cols) -> Any:
                return cols[name][i] if name in cols else None

            row = [n, family, rec.spec.algorithm, radius, rec.spec.run, get("samples"), get("episodes")]
            row += [get("n_per_pair"), get("value_gap"), get("violation"), rec.v_star, model_file(family, n)]
            row += [get("cum_value_gap"), get("cum_violation"), get("cost_hi"), get("certified_safe")]
            row += [get(eps_column(e)) for e in eps]
            rows.append(row)
    return rows


def needed_rows(study: NConstraintsStudy, radius: str, records: list[RunRecord]) -> list[list[Any]]:
    rows = []
    for rec in records:
        family, n = family_n(rec.spec.scenario)
        c = rec.columns
        for e in study.eps:
            x = samples_to_eps(c["samples"], c["value_gap"], c["violation"], e)
            # Theorem 2's count over all episodes (Online-CRL records it for eps < 1 only)
            bad = c[eps_column(e)][-1] if eps_column(e) in c else None
            rows.append(
                [
                    n,
                    family,
                    rec.spec.algorithm,
                    radius,
                    rec.spec.run,
                    e,
                    None if math.isnan(x) else int(x),
                    int(not math.isnan(x)),
                    bad,
                    rec.v_star,
                    model_file(family, n),
                ]
            )
    return rows


def fit_rows(study: NConstraintsStudy, needed: list[list[Any]]) -> list[dict[str, Any]]:
    out = []
    for family in study.families:
        for algo in study.algorithms:
            for radius in study.radii:
                for e in study.eps:
                    pts = [r for r in needed if r[1] == family and r[2] == algo and r[3] == radius and r[5] == e]
                    ok = [r for r in pts if r[7]]
                    N = np.array([r[0] for r in ok], dtype=np.float64)
                    y = np.array([r[6] for r in ok], dtype=np.float64)
                    flog, flin = linear_fit(np.log(N), y), linear_fit(N, y)
                    out.append(
                        {
                            "family": family,
                            "algorithm": algo,
                            "radius": radius,
                            "eps": e,
                            "runs": len(pts),
                            "reached": len(ok),
                            "log_a": flog.a,
                            "log_b": flog.b,
                            "log_b_half": flog.b_half,
                            "log_r2": flog.r2,
                            "lin_a": flin.a,
                            "lin_b": flin.b,
                            "lin_b_half": flin.b_half,
                            "lin_r2": flin.r2,
                        }
                    )
    return out


def summary_text(
    study: NConstraintsStudy, needed: list[list[Any]], fits: list[dict[str, Any]], v_star: dict[str, float]
) -> str:
    from cmdp_rl.envs.registry import make

    lines = ["# Study: samples needed against the number of constraints N", ""]
    lines.append(
        f"{study.runs} runs per cell; N in {list(study.ns)}; families {list(study.families)}; "
        f"delta {study.delta}; Online-CRL {study.episodes:,} episodes; GMBL up to {study.gmbl_n_max:,} "
        "samples per pair. `samples` = first recorded point from which the policy stays eps-optimal and "
        "eps-feasible (runs that never get there are left out of the fits and counted)."
    )
    lines += ["", "## Optimum of each instance", "", "| family | N | V* |", "|---|--:|--:|"]
    for spec, v in v_star.items():
        family, n = family_n(spec)
        lines.append(f"| {family} | {n} | {v:.4f} |")
    lines += ["", "## Mean samples needed (runs that reached eps)", ""]
    head = "| family | algorithm | radius | eps | " + " | ".join(f"N={n}" for n in study.ns) + " |"
    lines += [head, "|---|---|---|--:|" + "--:|" * len(study.ns)]
    for family in study.families:
        for algo in study.algorithms:
            for radius in study.radii:
                for e in study.eps:
                    cells = []
                    for n in study.ns:
                        pts = [r for r in needed if (r[0], r[1], r[2], r[3], r[5]) == (n, family, algo, radius, e)]
                        got = [r[6] for r in pts if r[7]]
                        cells.append(f"{np.mean(got):,.0f} ({len(got)}/{len(pts)})" if got else f"- (0/{len(pts)})")
                    lines.append(f"| {family} | {algo} | {radius} | {e:g} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Fits (each run one point; 95% intervals on the slope)",
        "",
        "n/a: too few runs reached the target for a fit (or an interval) at that setting.",
        "",
    ]
    lines += [
        "| family | algorithm | radius | eps | reached | a + b log N: b | R^2 | a + b N: b | R^2 |",
        "|---|---|---|--:|--:|--:|--:|--:|--:|",
    ]
    for f in fits:
        lines.append(
            f"| {f['family']} | {f['algorithm']} | {f['radius']} | {f['eps']:g} | {f['reached']}/{f['runs']} | "
            f"{pm(f['log_b'], f['log_b_half'], ',.0f')} | {fmt(f['log_r2'], '.2f')} | "
            f"{pm(f['lin_b'], f['lin_b_half'], ',.1f')} | {fmt(f['lin_r2'], '.2f')} |"
        )
    m = make(problem_spec(study.families[0], study.ns[0]))
    lines += ["", "## The theory's own N-dependence (bound at N divided by the bound at N = 1)", ""]
    lines += ["| algorithm | " + " | ".join(f"N={n}" for n in study.ns) + " |", "|---|" + "--:|" * len(study.ns)]
    for algo in study.algorithms:
        g = theory_growth(algo, study.ns, m.S, m.A, m.horizon("study"), 0.1, study.delta)
        lines.append(f"| {algo} | " + " | ".join(f"{v:.3f}" for v in g) + " |")
    return "\n".join(lines) + "\n"


__all__ = [
    "Fit",
    "family_n",
    "fit_rows",
    "linear_fit",
    "needed_rows",
    "results_rows",
    "samples_to_eps",
    "summary_text",
    "theory_growth",
]
