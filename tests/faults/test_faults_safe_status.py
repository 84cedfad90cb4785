"""Class 7: the safe planner's solver status.

``learn --safe`` crashed on a HiGHS status (a ``SolverError``, exit 3) on random problems: the
restricted master LP of column generation stops with "Not Set" ("dual simplex ratio test failed
due to excessive dual values") or "Unknown" when the costs lie near the solver's tolerances. Now
HiGHS retries (a cold start, the primal simplex, the interior point method, presolve), then
``solve_safe`` solves the candidate with the other method, then skips it: never an exception,
and whatever it returns is checked here by an independent certificate.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from faultkit import EXIT_INFEASIBLE, EXIT_OK, cases, cli_batch

from cmdp_rl import CMDP, random_cmdp
from cmdp_rl.certificates.certify import certify
from cmdp_rl.certificates.safe import solve_safe

CLASS = "7. The safe planner's solver status"

#: seeds of ``_scaled_problem`` on which ``solve_safe`` raised ``SolverError`` at faults-base
#: ("restricted master LP: HiGHS model status Not Set")
CRASHED_AT_BASE = (19, 162, 193, 222, 495, 574, 842, 895, 1007, 1079, 1173, 1237)

#: ``cmdp-rl learn MODEL ARGS --safe`` on the model of ``_scaled_problem(seed)`` exited 3 at
#: faults-base (a HiGHS status: "Not Set" or "Unknown"): (seed, ARGS)
CLI_CRASHED_AT_BASE: tuple[tuple[int, tuple[str, ...]], ...] = (
    (16, ("--algo", "gmbl", "--samples-per-pair", "2")),
    (18, ("--episodes", "10")),
    (19, ("--episodes", "10")),
    (29, ("--algo", "gmbl", "--samples-per-pair", "2")),
    (84, ("--algo", "gmbl", "--samples-per-pair", "2")),
    (117, ("--algo", "gmbl", "--samples-per-pair", "2")),
)

Problem = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, int, dict[str, Any]]


def _counts(g: np.random.Generator, P: np.ndarray, n: int) -> np.ndarray:
    """``n`` samples of every pair (a fifth of the pairs get 0 to 2: ragged data)."""
    S, A = P.shape[:2]
    counts = np.zeros((S, A, S), dtype=np.int64)
    for s in range(S):
        for a in range(A):
            k = n if g.random() > 0.2 else int(g.integers(0, 3))
            counts[s, a] = g.multinomial(k, P[s, a] / P[s, a].sum())
    return counts


def _dense(m: CMDP) -> np.ndarray:
    P = m.P
    return np.asarray(P.toarray() if hasattr(P, "toarray") else P).reshape(m.S, m.A, m.S)


def _scaled_problem(seed: int) -> tuple[CMDP, Problem]:
    """A small random problem whose costs (and thresholds) are scaled by ``1e-5 .. 1e-12``, where the
    master LP meets the solver's tolerances; tight, loose and infeasible thresholds, duplicated
    constraints, 1 to 10^12 samples per pair."""
    g = np.random.default_rng(30_000 + seed)
    S, A, H, N = int(g.integers(1, 10)), int(g.integers(1, 4)), int(g.integers(1, 60)), int(g.integers(1, 5))
    slack = float(g.choice([-0.2, 0.0, 1e-9, 0.3, 1.0]))
    m = random_cmdp(S, A, H, N, seed=seed, slack=slack, support=int(g.integers(1, S + 1)))
    c, cb = m.c.copy(), m.c_bar.copy()
    scale = float(10.0 ** -g.integers(5, 13))
    c, cb = c * scale, cb * scale * float(g.choice([1.0, 1.0 + 1e-9, 0.999]))
    if g.random() < 0.3:  # N copies of one constraint: parallel rows in the master LP
        c[:] = c[0]
        cb[:] = cb[0]
    counts = _counts(g, _dense(m), int(g.choice([1, 2, 10, 100, 10**6, 10**12])))
    options = {
        "delta": float(g.choice([0.01, 0.1, 0.5])),
        "radius": str(g.choice(["empirical-bernstein", "paper"])),
        "sampling": str(g.choice(["adaptive", "fixed"])),
    }
    return m.replace(c=c, c_bar=cb), (counts, m.r, c, cb, m.s0, H, options)


def _random_problem(seed: int) -> Problem:
    """The sweep: random problems of every kind (costs at scale 1 down to 1e-10, thresholds from
    infeasible to loose, zero thresholds, duplicated constraints), few to many samples."""
    g = np.random.default_rng(70_000 + seed)
    S, A, H, N = int(g.integers(1, 10)), int(g.integers(1, 4)), int(g.integers(1, 60)), int(g.integers(1, 5))
    slack = float(g.choice([-0.3, 0.0, 1e-9, 0.1, 0.5, 1.0]))
    m = random_cmdp(S, A, H, N, seed=seed, slack=slack, support=int(g.integers(1, S + 1)))
    c, cb = m.c.copy(), m.c_bar.copy()
    scale = float(g.choice([1.0, 1e-3, 1e-6, 1e-8, 1e-9, 1e-9, 1e-10, 1e-10]))
    c, cb = c * scale, cb * scale
    kind = g.random()
    if kind < 0.1:
        cb[:] = 0.0
    elif kind < 0.3:
        c[:] = c[0]
        cb[:] = cb[0]
    counts = _counts(g, _dense(m), int(g.choice([0, 1, 3, 20, 500, 10**6])))
    options = {
        "delta": float(g.choice([0.01, 0.1, 0.5])),
        "radius": str(g.choice(["empirical-bernstein", "paper"])),
        "sampling": str(g.choice(["adaptive", "fixed"])),
        "method": str(g.choice(["fast", "lp"])),
    }
    return counts, m.r, c, cb, m.s0, H, options


def _check_honest(problem: Problem, plan: Any) -> None:
    """The result is a documented outcome, and a "certified" policy really is certified: an
    independent call of ``certify`` on the same data says safe, every cost bound is at most its
    threshold, and the policy is a distribution per state and step."""
    counts, r, c, cb, s0, H, options = problem
    opts = {k: v for k, v in options.items() if k != "method"}
    assert plan.status in ("certified", "uncertified")
    assert plan.skipped >= 0 and plan.method in ("fast", "lp", "fast+lp", "none")
    if plan.status == "uncertified":
        assert plan.policy is None and not plan.certificate.safe
        return
    policy = plan.policy
    assert policy is not None and policy.shape == (H, *r.shape)
    assert np.all(policy >= 0) and np.allclose(policy.sum(-1), 1.0)
    cert = certify(policy, counts, r, c, cb, s0, H, **opts)
    assert cert.safe and plan.certificate.safe
    assert np.all(cert.cost_hi <= cb)
    assert np.isclose(cert.value_lo, plan.certificate.value_lo, rtol=1e-9, atol=1e-12)


def test_problems_that_crashed_at_base_now_plan(tally: Callable[[int], None]) -> None:
    """The problems on which ``solve_safe`` raised a HiGHS status at faults-base return a
    documented result (certified and re-certified, or uncertified)."""
    seeds = CRASHED_AT_BASE[: cases(6, len(CRASHED_AT_BASE))]
    for seed in seeds:
        _, problem = _scaled_problem(seed)
        counts, r, c, cb, s0, H, options = problem
        plan = solve_safe(counts, r, c, cb, s0, H, **options)
        _check_honest(problem, plan)
    tally(len(seeds))


def test_sweep_of_random_problems(tally: Callable[[int], None]) -> None:
    """A sweep of random problems through the API: no exception, and every result checked."""
    n = cases(30, 300)
    statuses: dict[str, int] = {}
    for seed in range(n):
        problem = _random_problem(seed)
        counts, r, c, cb, s0, H, options = problem
        plan = solve_safe(counts, r, c, cb, s0, H, **options)
        _check_honest(problem, plan)
        statuses[plan.status] = statuses.get(plan.status, 0) + 1
    assert set(statuses) <= {"certified", "uncertified"}
    tally(n)


def test_every_non_optimal_highs_status_is_retried(tally: Callable[[int], None]) -> None:
    """Every HiGHS model status other than optimal gets the retries (cold start, primal simplex,
    interior point, presolve); their options are restored afterwards; a status that never turns
    optimal is reported, not hidden."""
    import highspy

    from cmdp_rl.planning import master as colgen

    optimal = highspy.HighsModelStatus.kOptimal
    bad = [s for s in highspy.HighsModelStatus.__members__.values() if s != optimal]

    class FakeHighs:
        """Stops with ``status`` for the first ``fails`` runs, then optimal; records options."""

        def __init__(self, status: Any, fails: int) -> None:
            self.status, self.fails, self.runs = status, fails, 0
            self.options: dict[str, Any] = dict(colgen._HIGHS_OPTIONS)
            self.seen: list[dict[str, Any]] = []

        def run(self) -> None:
            self.seen.append(dict(self.options))
            self.runs += 1

        def getModelStatus(self) -> Any:
            return self.status if self.runs <= self.fails else optimal

        def setOptionValue(self, key: str, value: Any) -> None:
            self.options[key] = value

        def clearSolver(self) -> None:
            pass

    tried = 0
    retries = len(colgen._HIGHS_RETRIES)
    for status in bad:
        for fails in range(1, retries + 2):
            h = FakeHighs(status, fails)
            out = colgen.run_highs(h)  # type: ignore[arg-type]
            tried += 1
            assert out == (optimal if fails <= retries else status)
            assert h.runs == min(fails, retries) + 1
            assert h.options == colgen._HIGHS_OPTIONS  # restored
            # each retry ran with its own options
            for run, options in zip(h.seen[1:], colgen._HIGHS_RETRIES, strict=False):
                assert all(run[k] == v for k, v in options.items())
    tally(tried)


def test_a_candidate_both_methods_fail_on_is_skipped(
    monkeypatch: pytest.MonkeyPatch, tally: Callable[[int], None]
) -> None:
    """A ``SolverError`` from the candidates' LPs (one method, both methods, every call) never
    escapes ``solve_safe``: the candidate is solved with the other method or skipped, the
    result stays honest, and ``method`` / ``skipped`` say what happened."""
    import cmdp_rl.certificates.safe as safe
    from cmdp_rl.planning import SolverError, solve

    tried = 0
    for seed in range(cases(3, 12)):
        problem = _random_problem(1000 + seed)
        counts, r, c, cb, s0, H, options = problem
        options = {**options, "method": "fast"}
        for failing in ({"fast"}, {"fast", "lp"}, {"lp"}):

            def flaky(cmdp: CMDP, method: str = "fast", _failing: set[str] = failing, **kw: Any) -> Any:
                if method in _failing:
                    raise SolverError(f"HiGHS stopped with status 4: numerical difficulties ({method}, injected)")
                return solve(cmdp, method, **kw)

            monkeypatch.setattr(safe, "solve", flaky)
            plan = solve_safe(counts, r, c, cb, s0, H, **options)
            _check_honest(problem, plan)
            if plan.exact and plan.skipped == 0 and plan.method == "none":  # proven before any LP ran
                assert plan.candidates == 1 and plan.status == "uncertified"
            elif failing == {"fast", "lp"}:
                assert plan.skipped > 0 and plan.candidates == 1 and plan.method == "none"  # the robust one alone
            else:  # the other method solved them (or, where it fails too, the candidate was skipped)
                assert plan.method in ({"fast", "lp"} - failing) or plan.method == "none"
                assert plan.candidates + plan.skipped >= 3
            tried += 1
    tally(tried)


def test_linprog_status_other_than_optimal_is_retried(
    monkeypatch: pytest.MonkeyPatch, tally: Callable[[int], None]
) -> None:
    """``method="lp"``: a ``linprog`` status other than optimal or infeasible (1 iteration limit,
    3 unbounded, 4 numerical difficulties) is retried with HiGHS' interior point method and dual
    simplex before it raises; the retried solve is the right optimum."""
    from scipy.optimize import OptimizeResult

    from cmdp_rl.planning import lp, solve

    m = random_cmdp(4, 2, 5, 1, seed=3)
    want = solve(m, "lp").value
    real = lp.linprog
    tried = 0
    for status in (1, 3, 4):
        for fails in (1, 2, 3):
            calls = {"n": 0}

            def flaky(*args: Any, _s: int = status, _f: int = fails, _calls: dict[str, int] = calls, **kw: Any) -> Any:
                _calls["n"] += 1
                if _calls["n"] <= _f:
                    return OptimizeResult(status=_s, message=f"injected status {_s}", x=None)
                return real(*args, **kw)

            monkeypatch.setattr(lp, "linprog", flaky)
            tried += 1
            if fails <= len(lp._LINPROG_RETRIES):
                assert np.isclose(solve(m, "lp").value, want, rtol=1e-9)
            else:
                with pytest.raises(lp.SolverError, match=f"status {status}"):
                    solve(m, "lp")
    tally(tried)


def _learn_cases(tmp_path: Path, n: int) -> list[tuple[Path, Path, list[str]]]:
    """The model files of the first ``n`` problems that crashed ``learn --safe`` at base, each with
    a log of episodes (for ``--from-log``) and the ``learn`` arguments that crashed."""
    from cmdp_rl.model.transition_logs import write_log

    out = []
    for seed, argv in CLI_CRASHED_AT_BASE[:n]:
        model, _ = _scaled_problem(seed)
        path = tmp_path / f"m{seed}.npz"
        model.save(path)
        # a log of 20 episodes of the uniform policy on the true kernel
        g = np.random.default_rng(seed)
        P, H, E = _dense(model), model.horizon("test"), 20
        states, nexts = np.zeros((E, H), dtype=np.int64), np.zeros((E, H), dtype=np.int64)
        actions = g.integers(0, model.A, size=(E, H))
        for e in range(E):
            s = int(model.s0)
            for h in range(H):
                states[e, h] = s
                row = P[s, actions[e, h]]
                s = int(g.choice(model.S, p=row / row.sum()))
                nexts[e, h] = s
        log = tmp_path / f"log{seed}.csv"
        write_log(log, states, actions, nexts)
        out.append((path, log, list(argv)))
    return out


def test_learn_safe_through_the_cli(tmp_path: Path, tally: Callable[[int], None]) -> None:
    """``cmdp-rl learn --safe`` (after a learner, and on a log with ``--from-log``) on the problems
    that crashed at base: exit 0 or 1, stdout exactly one JSON object (HiGHS' banner kept off it),
    and a policy written on exit 0 is certified safe by an independent ``certify`` on the counts
    the command wrote."""
    from cmdp_rl.cli.common import load_model

    jobs = []  # (model file, argv, policy, counts): every run in one fresh interpreter (faultkit.cli_batch)
    for path, log, argv in _learn_cases(tmp_path, cases(2, len(CLI_CRASHED_AT_BASE))):
        for mode in (argv, ["--from-log", str(log)]):
            pol, cnt = tmp_path / f"p{len(jobs)}.npy", tmp_path / f"c{len(jobs)}.npy"
            outputs = ("--policy-out", str(pol), "--counts-out", str(cnt))
            jobs.append((path, ["learn", str(path), *mode, "--deploy", "certified", "--json", *outputs], pol, cnt))
    runs = len(jobs)
    for (path, argv, pol, cnt), proc in zip(jobs, cli_batch([job[1] for job in jobs]), strict=True):
        assert proc.returncode in (EXIT_OK, EXIT_INFEASIBLE), proc.stderr[-2000:]
        out = json.loads(proc.stdout)  # one JSON object, nothing else on stdout (file descriptor 1)
        assert out["certificate"]["safe"] == (proc.returncode == EXIT_OK)
        assert pol.exists() == (proc.returncode == EXIT_OK)
        if proc.returncode == EXIT_OK:
            model = load_model(str(path))
            s0, H = model.episodic("test")
            sampling = "fixed" if "gmbl" in argv else "adaptive"
            cert = certify(
                np.load(pol), np.load(cnt), model.r, model.c, model.c_bar, s0, H, delta=0.1, sampling=sampling
            )
            assert cert.safe
    tally(runs)
