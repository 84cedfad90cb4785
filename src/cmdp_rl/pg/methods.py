"""Policy-gradient primal-dual methods for discounted CMDPs: NPG-PD and CRPO.

``run(cmdp, algorithm, iterations)`` runs one of them on a discounted model (``cmdp.gamma`` set) with
the softmax parametrization ``pi_theta(a|s) ∝ exp(theta(s, a))``:

* **NPG-PD** (Ding, Zhang, Basar, Jovanovic, NeurIPS 2020). The paper states it for a utility
  constraint ``V_g >= b``; the library's costs are ``c = 1 - g`` with ``c_bar = 1/(1 - gamma) - b``,
  so ``V_g - b = c_bar - V_c`` and the Lagrangian ``r + lambda g`` has the advantage
  ``A_L = A_r - lambda . A_c``. From the uniform policy and ``lambda = 0``, each iteration uses
  the current iterate ``pi_t`` for both updates, as in the paper:
  ``theta += eta1 / (1 - gamma) * A_L`` (so ``pi_{t+1} ∝ pi_t exp(eta1 A_L / (1 - gamma))``) and
  ``lambda = Proj_[0, Lambda](lambda + eta2 (V_c - c_bar))``, with ``Lambda = 2 / ((1 - gamma) xi)``
  by default, ``xi = max_pi min_i (c_bar_i - V_ci(pi))`` the Slater margin (computed by the
  exact planner). That is the update with step sizes given; by default the steps follow the
  schedule of [`cmdp_rl.pg.steps`][cmdp_rl.pg.steps] (a decaying dual step and a proportional term
  ``kappa (1 - gamma) (V_c - c_bar)`` added to the multiplier the primal step uses).
* ``update="script"``: the step of the authors' published tabular script instead
  (``tliu1997/ARNPG-MORL``, ``Tabular MDP (oracle)/NPG-PD.py``), whose "Fisher matrix" is
  ``outer(g0, g0) + 1e-3 I`` with ``g0 = 0`` (the softmax gradients of a constant cancel):
  ``theta += eta1 * 1e3 * sum_s d_rho(s) sum_a A_L(s, a) grad pi(a|s)``, that is
  ``theta(s, a) += eta1 * 1e3 * d_rho(s) pi(a|s) A_L(s, a)``, about 1,000 times the plain policy
  gradient (and without its ``1 / (1 - gamma)``). ``init="script"`` starts from the script's
  random ``theta0`` for the ``ding-random`` instance (of the model's own seed)
  ([`script_theta0`][cmdp_rl.envs.ding.script_theta0]) instead of the uniform policy; the script then
  reports the running average over the policies *before* each update
  ([`PGResult.avg_value_gap`][cmdp_rl.pg.methods.PGResult.avg_value_gap] with ``before=True``).
* **CRPO** (Xu, Liang, Lan, ICML 2021): an NPG step on the reward when every constraint holds
  with a margin (``V_ci <= c_bar_i - tol``), else a step that lowers the most violated cost
  (``theta -= eta / (1 - gamma) * A_ci``); defaults ``eta_t = 20 (1 - gamma)^2 / sqrt(t)``
  ([`cmdp_rl.pg.steps`][cmdp_rl.pg.steps]), ``tol = 0.01``. It has no multipliers (its
  ``multipliers`` are zeros).

Gradients are exact by default (one policy evaluation per iteration:
[`policy_system`][cmdp_rl.evaluation.stationary.policy_system]). ``exact=False`` is the papers' sample-based
variant: every state-action pair's ``Q`` is estimated by ``samples`` rollouts from a generative
model, each of geometric length (continued with probability ``gamma`` after every step, which
makes the undiscounted sum an unbiased estimate of ``Q``), and ``V_c(rho)`` by ``samples``
rollouts from ``rho``. Every iterate is scored exactly either way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.evaluation.stationary import next_expectation, policy_system, small_solves
from cmdp_rl.model.actions import masked
from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.model.units import unit_model
from cmdp_rl.pg.steps import FISHER_DAMPING, STEP_SIZES, Steps, check_step_range, check_steps, resolve_steps
from cmdp_rl.plumbing.limits import check_allocation, pg_estimate
from cmdp_rl.plumbing.names import PG_ALGORITHMS, PG_INITS, PG_UPDATES
from cmdp_rl.plumbing.validation import (
    CMDPInputError,
    CMDPTypeError,
    check_choice,
    check_positive_int,
    plain,
    renamed_arguments,
)

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: the algorithms of ``run``
ALGORITHMS = PG_ALGORITHMS
#: the primal step: the papers' natural gradient, or the authors' tabular scripts' ``1e3 *`` policy gradient
UPDATES = PG_UPDATES
#: the starting policy: uniform (``theta = 0``), or the script's random ``theta0``
INITS = PG_INITS


@dataclass(frozen=True)
class PGResult:
    """The iterates of one run of [`run`][cmdp_rl.pg.methods.run].

    Attributes:
        algorithm: ``"npg-pd"`` or ``"crpo"``.
        policies: ``(T, S, A)``; ``policies[t]`` is the policy after iteration ``t + 1``.
        multipliers: ``(T, N)`` the multipliers after iteration ``t + 1`` (zeros for CRPO).
        values: ``(T,)`` the exact value ``V_r(rho)`` of ``policies[t]``.
        costs: ``(T, N)`` the exact costs ``V_ci(rho)`` of ``policies[t]``.
        initial: ``(S, A)`` the policy before the first iteration.
        initial_value: its exact value; ``initial_costs``: its ``(N,)`` exact costs.
        settings: the step sizes and options used (``eta1, eta2, kappa, Lambda`` or ``eta, tol``,
            with ``schedule`` ``"default"`` or ``"constant"``: a decaying step is the text of its
            rule, e.g. ``"1.5 / sqrt(t)"``; ``update``, ``init``, ``exact``, ``samples``, ``seed``).
        status: (property) always ``"uncertified"``: a policy-gradient iterate comes with no
            certificate of optimality or feasibility (compare it with the exact planner's ``V*``).
        value: (property) ``values``, per iteration (as ``LearnerRecord.value`` is per episode).
        policy: (property) ``(S, A)`` the last iterate, ``policies[-1]``.
    """

    algorithm: str
    policies: Array
    multipliers: Array
    values: Array
    costs: Array
    initial: Array
    initial_value: float
    initial_costs: Array
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def status(self) -> str:
        """``"uncertified"``: the iterates carry no certificate (class docstring)."""
        return "uncertified"

    @property
    def value(self) -> Array:
        """``(T,)`` the exact value of each iterate (``values``)."""
        return self.values

    @property
    def policy(self) -> Array:
        """``(S, A)`` the last iterate."""
        out: Array = self.policies[-1]
        return out

    @property
    def iterations(self) -> int:
        """``T``, the number of iterations run."""
        return int(self.values.shape[0])

    def value_gap(self, v_star: float) -> Array:
        """``(T,)`` ``V* - V_r(policies[t])``."""
        out: Array = v_star - self.values
        return out

    def avg_value_gap(self, v_star: float, before: bool = False) -> Array:
        """``(T,)`` running average of the value gap: entry ``t`` averages the gaps of the policies
        after iterations ``1 .. t+1`` (the CSV's ``avg_value_gap``), or with ``before`` of the
        policies before each of those updates (the initial policy and iterations ``1 .. t``: what
        the authors' script reports)."""
        gaps = self.value_gap(v_star)
        if before:
            gaps = np.concatenate([[v_star - self.initial_value], gaps[:-1]])
        out: Array = np.cumsum(gaps) / np.arange(1, gaps.size + 1)
        return out

    def avg_violation(self, c_bar: Array) -> Array:
        """``(T,)`` the violation of the running average: entry ``t`` is
        ``max_i max(0, mean_{k <= t+1} V_ci(policies[k]) - c_bar_i)``, the violation of the mixture of
        the iterates after iterations ``1 .. t+1`` (the constraint violation of Ding et al. 2020,
        Theorem 1; ``avg_value_gap`` is that mixture's gap). ``0`` without constraints."""
        if self.costs.shape[1] == 0:
            return np.zeros(self.iterations)
        mean = np.cumsum(self.costs, axis=0) / np.arange(1, self.iterations + 1)[:, None]
        out: Array = np.maximum(mean - np.asarray(c_bar)[None], 0.0).max(axis=1)
        return out

    def signed_violation(self, c_bar: Array) -> Array:
        """``(T,)`` ``max_i (V_ci(policies[t]) - c_bar_i)`` (negative when every constraint holds
        with room; ``0`` without constraints): what the papers plot."""
        if self.costs.shape[1] == 0:
            return np.zeros(self.iterations)
        out: Array = (self.costs - np.asarray(c_bar)[None]).max(axis=1)
        return out

    def __repr__(self) -> str:
        return (
            f"PGResult(algorithm={self.algorithm!r}, iterations={self.iterations}, "
            f"value={self.values[-1]:.6g}, costs={[round(float(c), 6) for c in self.costs[-1]]})"
        )


# --------------------------------------------------------------------------- exact quantities


@dataclass
class _Exact:
    """One policy's exact ``V (S, 1 + N)`` (reward, then each cost) and ``Q (S, A, 1 + N)``."""

    V: Array
    Q: Array
    rho_values: Array  # (1 + N,) values from rho

    def advantage(self) -> Array:
        """``(S, A, 1 + N)`` ``A = Q - V``."""
        out: Array = self.Q - self.V[:, None, :]
        return out


def _tables(cmdp: CMDP) -> Array:
    """``(S, A, 1 + N)`` the reward and every cost."""
    return np.ascontiguousarray(np.concatenate([cmdp.r[..., None], np.moveaxis(cmdp.c, 0, -1)], axis=-1))


def _exact(cmdp: CMDP, tables: Array, policy: Array) -> _Exact:
    """Exact values and ``Q`` of a stationary policy: one solve ``(I - gamma P_pi) V = [r_pi, c_pi]``."""
    assert cmdp.gamma is not None
    system = policy_system(cmdp, policy)
    V = system.solve(np.einsum("sa,sam->sm", policy, tables)).reshape(cmdp.S, -1)
    return _Exact(V, tables + cmdp.gamma * next_expectation(cmdp, V), cmdp.rho @ V)


def discounted_state_distribution(cmdp: CMDP, policy: Array) -> Array:
    """``d_rho (S,)``: the normalized discounted state distribution ``(1 - gamma) rho^T (I - gamma P_pi)^{-1}``."""
    assert cmdp.gamma is not None
    out: Array = (1.0 - cmdp.gamma) * policy_system(cmdp, policy).solve(np.array(cmdp.rho), transpose=True)
    return out


# --------------------------------------------------------------------------- sampled quantities


class _Sampler:
    """The sample-based estimates of the papers' Algorithm 2 on a generative model of ``cmdp``."""

    def __init__(self, cmdp: CMDP, tables: Array, samples: int, rng: np.random.Generator) -> None:
        from cmdp_rl.kernels.sampling import row_offsets_cumulative

        assert cmdp.gamma is not None
        self.cmdp, self.tables, self.samples, self.rng = cmdp, tables, samples, rng
        self.K = cmdp.K
        self.cum = row_offsets_cumulative(self.K)
        self.gamma = cmdp.gamma

    def _rollouts(self, states: IntArray, actions: IntArray, policy: Array) -> Array:
        """``(n, 1 + N)`` undiscounted sums of the tables along rollouts that start at the pairs
        ``(states[j], actions[j])``, follow ``policy`` and stop after each step with probability
        ``1 - gamma`` (so each sum is an unbiased estimate of ``Q(s, a)``)."""
        from cmdp_rl.kernels.sampling import sample_rows

        A = self.cmdp.A
        cum_pol = np.cumsum(policy, axis=1)
        total = np.zeros((states.size, self.tables.shape[-1]))
        alive = np.arange(states.size)
        s, a = states.copy(), actions.copy()
        while alive.size:
            total[alive] += self.tables[s, a]
            u = self.rng.random((alive.size, 3))
            go = u[:, 0] < self.gamma
            alive, s, a, u = alive[go], s[go], a[go], u[go]
            s = sample_rows(self.cum, self.K, s * A + a, u[:, 1])
            a = np.minimum((cum_pol[s] < u[:, 2:3]).sum(axis=1), A - 1)
        return total

    def q_and_values(self, policy: Array) -> tuple[Array, Array]:
        """``(Q_hat (S, A, 1 + N), V_hat(rho) (1 + N,))`` from ``samples`` rollouts per pair and
        ``samples`` rollouts from ``rho``."""
        S, A, n = self.cmdp.S, self.cmdp.A, self.samples
        ps, pa = np.nonzero(self.cmdp.available)  # every pair in order; a ragged model's available ones
        sums = self._rollouts(np.repeat(ps, n), np.repeat(pa, n), policy)
        Q = np.zeros((S, A, sums.shape[-1]))  # 0 at an unavailable pair: the policy never plays it
        Q[ps, pa] = sums.reshape(ps.size, n, -1).mean(axis=1)
        starts = self.rng.choice(S, size=n, p=self.cmdp.rho)
        first = np.minimum((np.cumsum(policy, axis=1)[starts] < self.rng.random((n, 1))).sum(axis=1), A - 1)
        V = self._rollouts(starts, first, policy).mean(axis=0)
        return Q, V


# --------------------------------------------------------------------------- the runs


def _softmax(theta: Array) -> Array:
    z = theta - theta.max(axis=1, keepdims=True)
    e = np.exp(z)
    out: Array = e / e.sum(axis=1, keepdims=True)
    return out


def slater_margin(cmdp: CMDP) -> float:
    """``xi = max_pi min_i (c_bar_i - V_ci(pi))``: how strictly the thresholds can be met
    ([`slater_gap`][cmdp_rl.planning.solve.slater_gap]; ``inf`` without constraints)."""
    from cmdp_rl.planning.solve import slater_gap

    return slater_gap(cmdp)


def instance_seed(cmdp: CMDP, seed: int) -> int:
    """The seed of a ``ding-random`` instance (its ``meta``), else ``seed``: the script's ``theta0``
    continues the instance's own random stream."""
    meta = dict(cmdp.meta)
    if meta.get("name") == "ding-random" and isinstance(meta.get("parameters"), dict):
        return int(meta["parameters"].get("seed", seed))
    return seed


def _checked_run(
    cmdp: CMDP,
    algorithm: str,
    iterations: int,
    exact: bool,
    samples: int,
    seed: int,
    update: str,
    init: str,
    step_sizes: dict[str, Any],
) -> tuple[int, int, int, Steps]:
    """Every check of [`run`][cmdp_rl.pg.methods.run]'s arguments, before any work: ``(T, samples, seed,
    steps)`` with NPG-PD's default ``Lambda`` filled in ([`resolve_steps`][cmdp_rl.pg.steps.resolve_steps])."""
    if not isinstance(cmdp, CMDP):
        raise CMDPTypeError(f"cmdp: must be a cmdp_rl.CMDP, got {type(cmdp).__name__}")
    gamma = cmdp.discount("policy-gradient methods")
    check_choice("algorithm", algorithm, ALGORITHMS)
    T = check_positive_int("iterations", iterations)
    check_choice("update", update, UPDATES)
    check_choice("init", init, INITS)
    if not isinstance(exact, (bool, np.bool_)):
        raise CMDPInputError(f"exact: must be True or False, got {plain(exact)}")
    n_samples = check_positive_int("samples", samples)
    seed_ = check_positive_int("seed", seed, 0)
    given = check_steps(algorithm, step_sizes)
    S, A, N = cmdp.S, cmdp.A, cmdp.N
    check_allocation("iterations", pg_estimate(S, A, N, gamma, 0.0, T, None).bytes, f"keeping the {T:,} iterates")
    if not exact:
        rollouts = pg_estimate(S, A, N, gamma, 0.0, 0, n_samples).bytes
        check_allocation("samples", rollouts, f"{n_samples:,} rollouts per state-action pair")
    Lambda = given.get("Lambda") or 0.0
    if algorithm == "npg-pd" and given["Lambda"] is None:
        xi = slater_margin(cmdp)
        if not xi > 0.0:
            raise CMDPInputError(
                f"c_bar: no policy meets every threshold strictly (Slater margin xi = {xi:.3g}), so NPG-PD's "
                f"default bound Lambda = 2 / ((1 - gamma) xi) does not exist; give Lambda"
            )
        Lambda = 2.0 / ((1.0 - gamma) * xi) if math.isfinite(xi) else 0.0
    steps = resolve_steps(algorithm, given, gamma, update, Lambda)
    check_step_range(steps, cmdp, update)
    return T, n_samples, seed_, steps


def _direction(
    steps: Steps, t: int, adv: Array, lam: Array, mu: Array, excess: Array
) -> tuple[float, Array, Array, Array]:
    """Iteration ``t``'s primal step size, ascent direction ``(S, A)`` and next multipliers
    ``(lambda, mu)`` (each ``(N,)``) from the advantages ``adv (S, A, 1 + N)`` (reward, then costs)
    and ``excess = V_c - c_bar``. NPG-PD ascends the Lagrangian's advantage at ``lambda`` and moves
    the dual iterate by projected dual descent, ``mu <- Proj(mu + eta2_t excess)``; the next
    ``lambda = Proj(mu + kappa (1 - gamma) excess)`` (``= mu`` for ``kappa = 0``, the paper's
    update; [`cmdp_rl.pg.steps`][cmdp_rl.pg.steps]). CRPO ascends the reward while every constraint
    holds within ``tol``, else lowers the most violated cost."""
    eta = steps.primal_step(t)
    if steps.algorithm == "npg-pd":
        direction: Array = adv[..., 0] - adv[..., 1:] @ lam  # A_L, the Lagrangian's advantage
        new_mu: Array = np.clip(mu + steps.dual_step(t) * excess, 0.0, steps.Lambda)
        new_lam: Array = new_mu
        if steps.kappa:  # the proportional term (default schedule)
            new_lam = np.clip(new_mu + steps.kappa * steps.unit * excess, 0.0, steps.Lambda)
        return eta, direction, new_lam, new_mu
    if excess.size == 0 or np.all(excess <= -steps.tol):
        return eta, adv[..., 0], lam, mu
    return eta, -adv[..., 1 + int(np.argmax(excess))], lam, mu


def _on_unit_image(
    cmdp: CMDP, algorithm: str, iterations: int, progress: bool, options: dict[str, Any], steps: dict[str, Any]
) -> PGResult:
    """[`run`][cmdp_rl.pg.methods.run] on the unit image of a model in other units, its result in the
    model's units (values and costs as returns, multipliers ``lambda w_r / w_i``)."""
    image, units = unit_model(cmdp)
    on_image = run(image, algorithm, iterations, progress=progress, **options, **steps)
    return replace(
        on_image,
        values=units.value(on_image.values),
        costs=units.costs(on_image.costs),
        multipliers=units.multipliers(on_image.multipliers),
        initial_value=float(units.value(on_image.initial_value)),
        initial_costs=units.costs(on_image.initial_costs),
    )


@renamed_arguments(algo="algorithm")
def run(
    cmdp: CMDP,
    algorithm: str,
    iterations: int,
    *,
    exact: bool = True,
    seed: int = 0,
    samples: int = 10,
    update: str = "paper",
    init: str = "uniform",
    progress: bool = False,
    **step_sizes: Any,
) -> PGResult:
    """Run NPG-PD or CRPO on a discounted CMDP (module docstring).

    Args:
        cmdp: a discounted model (``gamma`` set), dense or sparse, ``s0`` a state or a distribution.
        algorithm: ``"npg-pd"`` or ``"crpo"`` (``algo``: its deprecated name, for one release).
        iterations: ``T >= 1``.
        exact: exact gradients (default); ``False``: the sample-based variant.
        seed: seeds the sampler (``exact=False``) and, for a model that is not a ``ding-random``
            instance (whose own seed is used), the script's ``theta0`` (``init="script"``).
        samples: rollouts per state-action pair (and from ``rho``) per iteration, ``exact=False``.
        update: the primal step, ``"paper"`` (default: the natural gradient) or ``"script"`` (the
            authors' tabular scripts' step, for NPG-PD and CRPO alike).
        init: ``"uniform"`` (default) or ``"script"`` (the script's random ``theta0``).
        progress: show a progress bar.
        **step_sizes: NPG-PD: ``eta1``, ``eta2``, ``kappa``, ``Lambda`` (``2 / ((1 - gamma) xi)``);
            CRPO: ``eta``, ``tol`` (0.01). Not given: the default schedule (``eta1 = 10 (1 - gamma)^2``,
            ``eta2_t = 6 (1 - gamma) / sqrt(t)``, ``kappa = 1``; ``eta_t = 20 (1 - gamma)^2 / sqrt(t)``);
            given: constant steps, with the papers' ``eta1 = eta2 = 1``, ``kappa = 0`` for the ones
            not given; ``update="script"``: the scripts' constants ([`cmdp_rl.pg.steps`][cmdp_rl.pg.steps]).

    Any finite rewards and costs: the run is on the model's unit image, where steps, ``Lambda`` and
    ``tol`` are read; the result is in the model's units ([`unit_model`][cmdp_rl.model.units.unit_model]).

    Returns:
        A [`PGResult`][cmdp_rl.pg.methods.PGResult].

    Raises:
        CMDPInputError: a finite-horizon model, an unknown algorithm, option or step size; a step
            size that is not a finite number > 0 (``tol``, ``kappa``: >= 0, ``-0`` read as 0) or so large that
            one step can overflow the policy's parameters; ``iterations`` or ``samples`` whose
            arrays exceed this machine's memory; or (NPG-PD without ``Lambda``) thresholds with no
            strictly feasible policy. A ``CMDPTypeError`` (also a ``TypeError``) for a ``cmdp``
            that is not a ``CMDP``.
    """
    from cmdp_rl.plumbing.progress import progress_bar

    if isinstance(cmdp, CMDP) and not cmdp.units.identity:
        options = {"exact": exact, "seed": seed, "samples": samples, "update": update, "init": init}
        return _on_unit_image(cmdp, algorithm, iterations, progress, options, step_sizes)
    T, n_samples, seed_, steps = _checked_run(
        cmdp, algorithm, iterations, exact, samples, seed, update, init, step_sizes
    )
    gamma, S, A, N = cmdp.discount("policy-gradient methods"), cmdp.S, cmdp.A, cmdp.N
    tables = _tables(cmdp)
    c_bar = np.asarray(cmdp.c_bar)
    theta = np.zeros((S, A))
    if init == "script":
        from cmdp_rl.envs.ding import script_theta0

        theta = script_theta0(instance_seed(cmdp, seed_), S, A)
    theta = masked(theta, cmdp.actions)  # -inf: the softmax is over a ragged model's available actions
    sampler = None
    if not exact:
        sampler = _Sampler(cmdp, tables, n_samples, np.random.default_rng(np.random.SeedSequence(seed_)))
    lam, mu = np.zeros(N), np.zeros(N)
    policies = np.empty((T, S, A))
    mults = np.zeros((T, N))
    values, costs = np.empty(T), np.empty((T, N))
    pi = _softmax(theta)
    initial = pi
    first = _exact(cmdp, tables, pi)
    current = first
    scale = 1.0 / (1.0 - gamma)
    with small_solves(S), progress_bar(T, algorithm, "it", show=progress) as bar:
        for t in range(T):
            if sampler is None:
                adv, v_rho = current.advantage(), current.rho_values
            else:
                Q_hat, v_rho = sampler.q_and_values(pi)
                adv = Q_hat - np.einsum("sa,sam->sm", pi, Q_hat)[:, None, :]
            eta, direction, lam, mu = _direction(steps, t + 1, adv, lam, mu, v_rho[1:] - c_bar)
            if update == "paper":
                theta = theta + eta * scale * direction
            else:
                d = discounted_state_distribution(cmdp, pi)
                theta = theta + eta / FISHER_DAMPING * d[:, None] * pi * direction
            theta = theta - theta.max(axis=1, keepdims=True)  # the policy is shift-invariant per state
            if np.isnan(theta).any():  # sampled advantages beyond the bound of _check_step_range
                raise CMDPInputError(
                    f"{'eta1' if algorithm == 'npg-pd' else 'eta'}: the step overflowed the policy's parameters in "
                    f"iteration {t + 1}; use a smaller step size"
                )
            pi = _softmax(theta)
            current = _exact(cmdp, tables, pi)
            policies[t], mults[t] = pi, lam
            values[t], costs[t] = current.rho_values[0], current.rho_values[1:]
            bar.update()
    settings: dict[str, Any] = {
        **steps.settings(),
        "update": update,
        "init": init,
        "exact": bool(exact),
        "samples": n_samples if not exact else None,
        "seed": seed_,
    }
    return PGResult(
        algorithm=algorithm,
        policies=policies,
        multipliers=mults,
        values=values,
        costs=costs,
        initial=initial,
        initial_value=float(first.rho_values[0]),
        initial_costs=np.array(first.rho_values[1:]),
        settings=settings,
    )


__all__ = [
    "ALGORITHMS",
    "INITS",
    "STEP_SIZES",
    "UPDATES",
    "PGResult",
    "discounted_state_distribution",
    "run",
    "slater_margin",
]
