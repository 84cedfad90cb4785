"""Named problems: every built-in or imported CMDP one name away.

A problem spec is ``NAME`` or ``NAME:key=value,key=value`` (e.g. ``garnet:S=50,A=4,b=3,N=2,f=0.5,H=20,seed=0``,
``frozenlake8x8-hole:H=40,c_bar=0.1``, ``distinct:n=16,seed=3``). Every name has documented defaults; an override
must name a parameter of that problem and is parsed with the type of its default. Two
overrides work for every problem: ``H`` (the horizon) and ``c_bar`` (the thresholds: one number
for every constraint, or ``c_bar=0.1/0.2`` for one per constraint), applied to the built
model when its factory does not take them itself. ``threshold``, the former name of ``c_bar``,
is still read for one release (with a ``DeprecationWarning``).

[`make`][cmdp_rl.envs.registry.make] builds a problem from a spec (with ``meta``: name, source, parameters);
[`problem_table`][cmdp_rl.envs.registry.problem_table] lists the facts a researcher needs: sizes, ``V*``, the
unconstrained value, the Slater gap and the safe baseline's cost.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cmdp_rl.envs.scenarios import SCENARIOS, scenario_cmdp
from cmdp_rl.envs.specs import parse_spec, parse_thresholds, parse_value
from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.model.sparse import SPARSE_ABOVE_BYTES
from cmdp_rl.plumbing.limits import (
    DEFAULT_MAX_MEMORY,
    DEFAULT_MAX_SECONDS,
    Estimate,
    build_estimate,
    check_estimate,
    check_int64,
    exact_estimate,
    lp_estimate,
)
from cmdp_rl.plumbing.validation import CMDPInputError, as_float, plain, warn_renamed


@dataclass(frozen=True)
class Problem:
    """A registered problem.

    Attributes:
        name: registry key, e.g. ``"garnet"``.
        factory: builds the CMDP from keyword parameters.
        defaults: the documented default of every parameter.
        description: one line.
        source: where the problem comes from (paper, library).
        estimate: resources of a build from the factory's parameters (``None``: a problem of
            fixed size), checked by [`make`][cmdp_rl.envs.registry.make] before anything is built.
        discounted: the problem is a discounted CMDP (``gamma``; no horizon, so no episodic
            simulator: [`register_problems`][cmdp_rl.envs.gym_env.register_problems] skips it).
        sizes: ``(S, A, H, N)`` from the factory's parameters (``None``: read from a build), for a
            family whose build does work ([`problem_sizes`][cmdp_rl.envs.registry.problem_sizes]).
    """

    name: str
    factory: Callable[..., CMDP]
    defaults: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""
    source: str = ""
    estimate: Callable[..., Estimate] | None = None
    discounted: bool = False
    sizes: Callable[..., tuple[int, int, int, int]] | None = None


PROBLEMS: dict[str, Problem] = {}
"""Every registered problem, by name (see [`register`][cmdp_rl.envs.registry.register])."""


def register(problem: Problem) -> Problem:
    """Add ``problem`` to [`PROBLEMS`][cmdp_rl.envs.registry.PROBLEMS] (a name can be registered once)."""
    if problem.name in PROBLEMS:
        raise CMDPInputError(f"name: a problem called {problem.name!r} is already registered")
    if ":" in problem.name or "," in problem.name or "=" in problem.name:
        raise CMDPInputError(f"name: must not contain ':', ',' or '=', got {problem.name!r}")
    PROBLEMS[problem.name] = problem
    return problem


def is_spec(text: str) -> bool:
    """Whether ``text`` names a registered problem (with or without overrides)."""
    return isinstance(text, str) and text.partition(":")[0].strip() in PROBLEMS


def _resolved(spec: str) -> tuple[str, Problem, dict[str, Any], dict[str, str], int | None]:
    """``spec`` read and checked, nothing built: ``(name, problem, parameters, post, H)``: the factory's
    parameters (defaults, then the overrides with their types), the ``H``/``c_bar`` overrides the
    factory does not take (text, applied to the built model) and that ``H`` read (``None``)."""
    name, raw = parse_spec(spec)
    if name not in PROBLEMS:
        raise CMDPInputError(f"problem: unknown name {name!r}; registered problems: {', '.join(PROBLEMS)}")
    prob = PROBLEMS[name]
    accepted = set(inspect.signature(prob.factory).parameters)
    params = dict(prob.defaults)
    post: dict[str, str] = {}
    for key, text in raw.items():
        if key == "threshold":  # the former name of c_bar
            if "c_bar" in raw:
                raise CMDPInputError(f"{name}: threshold: the deprecated name of c_bar; give only c_bar")
            warn_renamed(f"{name}: threshold", "c_bar", stacklevel=3)
            key = "c_bar"
        if key in params:
            params[key] = parse_value(name, key, text, params[key])
        elif key in ("H", "c_bar") and key not in accepted:
            post[key] = text
        else:
            valid = sorted({*params, "H", "c_bar"})
            raise CMDPInputError(f"{name}: unknown parameter {key!r}; valid parameters are {', '.join(valid)}")
    for key, value in params.items():  # a size or horizon a model file cannot store: refused before the build
        if isinstance(value, int) and not isinstance(value, bool) and key != "seed":
            check_int64(f"{name}: parameter {key}", value)
    H_post = parse_value(name, "H", post["H"], 1) if "H" in post else None
    if H_post is not None:
        check_int64(f"{name}: parameter H", H_post)
    return name, prob, params, post, H_post


def problem_sizes(spec: str) -> tuple[int, int, int | None, int]:
    """``(S, A, H, N)`` of the problem ``spec`` names (``H`` ``None`` for a discounted one): from its
    parameters when its family declares them (``Problem.sizes``: the n-constraints families, whose
    build designs each threshold with an exact plan), else from a build (a fixed-size problem, or
    one whose build is cheap), with the parameters checked as a build checks them. A sweep checks
    and counts its problems with it before any work."""
    name, prob, params, post, H_post = _resolved(spec)
    if prob.sizes is None:
        model = make(spec)
        return model.S, model.A, model.H, model.N
    S, A, H, N = prob.sizes(**params)
    if "c_bar" in post:
        parse_thresholds(name, post["c_bar"], N)
    return S, A, H if H_post is None else H_post, N


def make(spec: str, *, max_memory: float = DEFAULT_MAX_MEMORY, max_seconds: float = DEFAULT_MAX_SECONDS) -> CMDP:
    """Build the problem named by ``spec`` (``NAME`` or ``NAME:key=value,...``).

    A sized family (``garnet``, ``random``, ``copies``, ``distinct``, ``cliff-grid``,
    ``ding-random``) is checked from its parameters before anything is built: a build whose
    estimated memory or time exceeds ``max_memory`` bytes or ``max_seconds`` is refused at once.
    Every other family has a fixed size (its parameters and the ``H``/``c_bar`` overrides
    change numbers, not sizes); an integer parameter beyond ``int64`` (which a model file cannot
    store) is refused for every family.

    Raises:
        CMDPInputError: unknown name (the message lists the names), a bad override
            (the message names the parameter and its type), or a build beyond the limits.
    """
    for key, limit in (("max_memory", max_memory), ("max_seconds", max_seconds)):
        if not as_float(key, limit, finite=False) > 0:
            raise CMDPInputError(f"{key}: must be a number > 0, got {plain(limit)}")
    name, prob, params, post, H_post = _resolved(spec)
    if prob.estimate is not None:
        check_estimate(prob.estimate(**params), f"problem {spec.strip()}", max_memory, max_seconds)
    model = prob.factory(**params)
    if H_post is not None:
        H = H_post
        model = model.replace(H=H)
        params["H"] = H
    if "c_bar" in post:
        model = model.replace(c_bar=parse_thresholds(name, post["c_bar"], model.N))
        params["c_bar"] = [float(v) for v in model.c_bar]
    built = dict(model.meta)
    if post:
        # the generator's facts (V*, Slater gap, active constraints, ...) describe the model before the
        # generic H/c_bar overrides: keep them apart, never as facts of the returned model
        kept = {k: built.pop(k) for k in list(built) if k not in ("source", "reward_map")}
        if kept:
            built["before_overrides"] = kept
    meta = {
        **built,
        "name": name,
        "spec": spec.strip(),
        "source": dict(model.meta).get("source", prob.source),
        "parameters": params,
    }
    return model.replace(names=name, meta=meta)


def problem_facts(model: CMDP) -> dict[str, Any]:
    """``S, A, H, N``, the kernel's ``nnz``, ``bytes`` and kind (``sparse``), ``V*``, the unconstrained
    value, the joint Slater gap and the safe baseline's costs."""
    from cmdp_rl.planning import solve
    from cmdp_rl.planning.baseline import safe_baseline, slater_gap
    from cmdp_rl.planning.solve import unconstrained_value

    res = solve(model)
    facts: dict[str, Any] = {
        "S": model.S,
        "A": model.A,
        "H": model.H,
        "gamma": model.gamma,
        "N": model.N,
        "nnz": model.nnz,
        "bytes": model.nbytes,
        "sparse": model.layout == "sparse",
        "c_bar": [float(v) for v in model.c_bar],
        "v_star": float(res.value) if res.feasible else None,
        "v_unconstrained": unconstrained_value(model),
        "slater_gap": float(slater_gap(model)) if model.N else None,
    }
    if model.N:
        base = safe_baseline(model)
        facts["baseline_costs"] = [float(v) for v in base.costs]
        facts["baseline_rule"] = base.rule
    else:
        facts["baseline_costs"] = []
        facts["baseline_rule"] = None
    return facts


def episodic_problems() -> list[str]:
    """The names of the registered finite-horizon problems (the ones the episodic learners and the
    Gymnasium simulators take)."""
    return [name for name, prob in PROBLEMS.items() if not prob.discounted]


def problem_table(names: list[str] | None = None) -> list[dict[str, Any]]:
    """One row per registered problem (or per spec in ``names``): name, description, source and
    [`problem_facts`][cmdp_rl.envs.registry.problem_facts] at the defaults."""
    rows = []
    for spec in names if names is not None else list(PROBLEMS):
        model = make(spec)
        prob = PROBLEMS[parse_spec(spec)[0]]
        rows.append({"name": spec, "description": prob.description, "source": prob.source, **problem_facts(model)})
    return rows


# -- the built-in problems ---------------------------------------------------------------------------------------


def _scenario_factory(name: str) -> Callable[[], CMDP]:
    def build() -> CMDP:
        return scenario_cmdp(name)

    build.__name__ = f"scenario_{name}"
    return build


for _name, _sc in SCENARIOS.items():
    register(
        Problem(
            _name,
            _scenario_factory(_name),
            {},
            _sc.description,
            "HasanzadeZonuzy et al. 2021, section 5 (defined in docs/scenarios.md)",
        )
    )


def _garnet(S: int, A: int, b: int, N: int, f: float, H: int, seed: int) -> CMDP:
    from cmdp_rl.envs.generators import garnet

    return garnet(S, A, b, N, f, H, seed)


register(
    Problem(
        "garnet",
        _garnet,
        {"S": 20, "A": 4, "b": 3, "N": 1, "f": 0.5, "H": 20, "seed": 0},
        "Garnet random CMDP: b next states per pair, thresholds at fraction f of the way to the unconstrained "
        "optimum's costs",
        "Archibald, McKinnon, Thomas 1995; Bhatnagar et al. 2009",
        lambda S, A, b, N, f, H, seed: build_estimate(S, A, H, N, float(S) * A * min(b, S)),
    )
)


def _grid_estimate(S: int, H: int, N: int) -> Estimate:
    """A grid family (``A = 4``, at most 5 successors): the kernel, one exact solve and the LPs of
    its thresholds and facts (the occupation LP of ``H * S * 4`` variables)."""
    nnz = 5.0 * S * 4
    return build_estimate(S, 4, H, N, nnz, solves=2 + N) + lp_estimate(S, 4, H, N, 5.0)


def _family_sizes(n: int, seed: int, f: float, size: int, H: int) -> tuple[int, int, int, int]:
    from cmdp_rl.envs.n_constraints import family_sizes

    return family_sizes(n, seed, f, size, H)


def _copies(n: int, seed: int, f: float, size: int, H: int) -> CMDP:
    from cmdp_rl.envs.n_constraints import copies

    return copies(n, seed, f=f, size=size, H=H)


def _distinct(n: int, seed: int, f: float, size: int, H: int) -> CMDP:
    from cmdp_rl.envs.n_constraints import distinct

    return distinct(n, seed, f=f, size=size, H=H)


register(
    Problem(
        "copies",
        _copies,
        {"n": 4, "seed": 0, "f": 0.5, "size": 3, "H": 10},
        "N-constraints family: one random move-price constraint repeated n times on scenario 1's grid "
        "(V* independent of n)",
        "cmdp_rl.envs.n_constraints",
        lambda n, seed, f, size, H: _grid_estimate(size * size, H, n),
        sizes=_family_sizes,
    )
)
register(
    Problem(
        "distinct",
        _distinct,
        {"n": 4, "seed": 0, "f": 0.5, "size": 3, "H": 10},
        "N-constraints family: n different random move-price constraints on scenario 1's grid, "
        "thresholds at fraction f (several bind)",
        "cmdp_rl.envs.n_constraints",
        lambda n, seed, f, size, H: _grid_estimate(size * size, H, n),
        sizes=_family_sizes,
    )
)


def _frozenlake(map_name: str) -> Callable[..., CMDP]:
    def build(H: int, c_bar: float, slippery: bool) -> CMDP:
        from cmdp_rl.envs.gymnasium_import import from_gymnasium

        return from_gymnasium("FrozenLake-v1", H, cost="hole", c_bar=c_bar, map_name=map_name, is_slippery=slippery)

    build.__name__ = f"frozenlake{map_name}"
    return build


def _cliffwalking(H: int, c_bar: float, slippery: bool) -> CMDP:
    from cmdp_rl.envs.gymnasium_import import from_gymnasium

    return from_gymnasium("CliffWalking-v1", H, cost="cliff", c_bar=c_bar, is_slippery=slippery)


def _taxi(H: int, c_bar: float, rainy: bool) -> CMDP:
    from cmdp_rl.envs.gymnasium_import import from_gymnasium

    return from_gymnasium("Taxi-v4", H, cost="illegal", c_bar=c_bar, is_rainy=rainy)


register(
    Problem(
        "frozenlake4x4-hole",
        _frozenlake("4x4"),
        {"H": 20, "c_bar": 0.05, "slippery": True},
        "FrozenLake 4x4 (Gymnasium), cost = probability of entering a hole; binds (optimum's 0.094)",
        "Gymnasium FrozenLake-v1 (docs/environments.md)",
    )
)
register(
    Problem(
        "frozenlake8x8-hole",
        _frozenlake("8x8"),
        {"H": 40, "c_bar": 0.06, "slippery": True},
        "FrozenLake 8x8 (Gymnasium), cost = probability of entering a hole; binds (optimum's 0.121)",
        "Gymnasium FrozenLake-v1, map 8x8 (docs/environments.md)",
    )
)
register(
    Problem(
        "cliffwalking-cliff",
        _cliffwalking,
        {"H": 30, "c_bar": 0.01, "slippery": True},
        "CliffWalking (Gymnasium, slippery), cost = probability of entering the cliff; does not bind",
        "Gymnasium CliffWalking-v1 (docs/environments.md)",
    )
)
register(
    Problem(
        "taxi-illegal",
        _taxi,
        {"H": 50, "c_bar": 0.1, "rainy": False},
        "Taxi (Gymnasium, 500 states + start), cost = probability of an illegal pick-up/drop-off; does not bind",
        "Gymnasium Taxi-v4 (docs/environments.md)",
    )
)


def _register_literature() -> None:
    from cmdp_rl.envs.literature import LITERATURE

    for name, (factory, defaults, description, source) in LITERATURE.items():
        estimate = None
        if name == "cliff-grid":
            estimate = lambda H, c_bar, width, height, slip: _grid_estimate(width * height, H, 1)  # noqa: E731
        register(Problem(name, factory, defaults, description, source, estimate))


def _threshold_passes(S: int, A: int, H: int, N: int, nnz: float) -> Estimate:
    """The random family's thresholds: two dynamic-programming passes over the horizon per
    constraint (its largest and its least cost), each step at least 10 us of Python and a pass
    over the kernel; the ``(N, S, A)`` costs and the ``(H, S, A)`` greedy policy."""
    return Estimate(8.0 * S * A * (N + H), 2.0 * N * H * (1e-5 + 2e-9 * (nnz + float(S) * A)))


def _random(S: int, A: int, H: int, N: int, support: int, slack: float, seed: int) -> CMDP:
    from cmdp_rl.envs.generators import random_cmdp

    return random_cmdp(S, A, H, N, seed=seed, support=support, slack=slack)


_register_literature()
register(
    Problem(
        "random",
        _random,
        {"S": 10, "A": 3, "H": 10, "N": 2, "support": 4, "slack": 0.3, "seed": 0},
        "random CMDP: Dirichlet rows on `support` next states, thresholds between the cheapest and the "
        "largest cost (slack)",
        "cmdp_rl.envs.generators.random_cmdp",
        lambda S, A, H, N, support, slack, seed: (
            exact_estimate(S, A, H, 0, float(S) * A * min(support, S))  # the evaluation; no column generation
            + Estimate(
                8.0 * S * A * S if 8.0 * S * A * S <= SPARSE_ABOVE_BYTES else 120.0 * S * A * min(support, S), 0.0
            )
            + _threshold_passes(S, A, H, N, float(S) * A * min(support, S))
        ),
    )
)


def _ding_random(seed: int, S: int, A: int, gamma: float, b: float) -> CMDP:
    from cmdp_rl.envs.ding import ding_random

    return ding_random(seed, S, A, gamma, b)


register(
    Problem(
        "ding-random",
        _ding_random,
        {"seed": 10, "S": 20, "A": 10, "gamma": 0.8, "b": 3.0},
        "discounted random CMDP of the NPG-PD paper's tabular experiment (uniform kernel rows, "
        "c = 1 - utility, c_bar = 1/(1 - gamma) - b, uniform start)",
        "Ding et al. NeurIPS 2020; tliu1997/ARNPG-MORL 'Tabular MDP (oracle)' scripts",
        lambda seed, S, A, gamma, b: Estimate(8.0 * S * A * S * 3, 1e-8 * S * A * S),
        discounted=True,
    )
)


def _register_discounted() -> None:
    from cmdp_rl.envs.discounted import DISCOUNTED

    for name, (factory, defaults, description, source) in DISCOUNTED.items():
        register(Problem(name, factory, defaults, description, source, discounted=True))


_register_discounted()

__all__ = [
    "PROBLEMS",
    "Problem",
    "episodic_problems",
    "is_spec",
    "make",
    "parse_spec",
    "problem_facts",
    "problem_sizes",
    "problem_table",
    "register",
]
