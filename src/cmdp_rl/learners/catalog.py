"""The online learners by name, and how to build one for a problem (``learn``, ``compare``).

=================  =====================================================  ================
name               algorithm                                              safe baseline
=================  =====================================================  ================
``online-crl``     Online-CRL (the paper's Algorithm 2)                   no
``plugin``         certainty equivalence (LP on ``p_hat``)                no
``optcmdp``        OptCMDP (Efroni et al. 2020)                           no
``optcmdp-bonus``  OptCMDP-bonus (Efroni et al. 2020)                     no
``optdual``        OptDual-CMDP (Efroni et al. 2020)                      no
``optpess``        OptPess-LP (Liu et al. 2021)                           yes
``dope``           DOPE (Bura et al. 2022)                                yes
``safe-crl``       Safe-CRL (certified-safe optimism, this library)       yes
``dope-plus``      DOPE+ (Yu et al. 2025)                                 yes
``optpess-pd``     OptPess-PrimalDual (Liu et al. 2021)                   its gap only
``rpd``            regularized primal-dual (Mueller et al. 2024)          no
=================  =====================================================  ================

The safe learners take a safe baseline policy and its cost as inputs; ``make_learner``
supplies the problem's [`safe_baseline`][cmdp_rl.planning.baseline.safe_baseline], computed from the true
model as in the papers' experiments, unless one is given. A problem without a Slater gap
(no policy meets every threshold strictly, e.g. scenario ``2`` whose threshold is 0) is
refused for them with an error naming the gap.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.evaluation.mixture import MixturePolicy
from cmdp_rl.learners.base import STATISTICS, OnlineLearner, known_parts
from cmdp_rl.learners.deploy import DEPLOY_DELTA, check_deploy
from cmdp_rl.learners.dope import DOPE
from cmdp_rl.learners.dope_plus import DOPEPlus
from cmdp_rl.learners.online_crl import OnlineCRL
from cmdp_rl.learners.optcmdp import OptCMDP
from cmdp_rl.learners.optcmdp_bonus import OptCMDPBonus
from cmdp_rl.learners.optdual import OptDual
from cmdp_rl.learners.optpess import OptPess
from cmdp_rl.learners.optpess_pd import OptPessPD
from cmdp_rl.learners.plugin import Plugin
from cmdp_rl.learners.rpd import RPD
from cmdp_rl.learners.safe import SafeLearner
from cmdp_rl.learners.safe_crl import SafeCRL
from cmdp_rl.model.cmdp import CMDP, KnownParts
from cmdp_rl.plumbing.names import ONLINE_ALGORITHMS, SAFE_ALGORITHMS
from cmdp_rl.plumbing.validation import CMDPInputError, check_choice, plain, renamed_arguments

LEARNERS: dict[str, type[OnlineLearner]] = {
    cls.name: cls
    for cls in (
        OnlineCRL,
        Plugin,
        OptCMDP,
        OptCMDPBonus,
        OptDual,
        OptPess,
        DOPE,
        SafeCRL,
        DOPEPlus,
        OptPessPD,
        RPD,
    )
}
"""Every online learner by its name (the ``algorithm`` column and ``--algo`` value), in the order
of [`ONLINE_ALGORITHMS`][cmdp_rl.plumbing.names.ONLINE_ALGORITHMS]
([`cmdp_rl.plumbing.names`][cmdp_rl.plumbing.names], where the command line
reads the names)."""

LABELS: dict[str, str] = {
    "online-crl": "Online-CRL",
    "plugin": "Plug-in",
    "optcmdp": "OptCMDP",
    "optcmdp-bonus": "OptCMDP-bonus",
    "optdual": "OptDual-CMDP",
    "optpess": "OptPess-LP",
    "dope": "DOPE",
    "safe-crl": "Safe-CRL",
    "dope-plus": "DOPE+",
    "optpess-pd": "OptPess-PD",
    "rpd": "RPD",
}
"""Display names."""


@renamed_arguments(name="algorithm")
def make_learner(
    algorithm: str,
    cmdp: CMDP | KnownParts,
    delta: float = 0.1,
    *,
    episodes: int,
    bonus_scale: float = 1.0,
    baseline: tuple[NDArray[np.float64] | MixturePolicy, NDArray[np.float64]] | None = None,
    deploy: str = "last",
    deploy_delta: float = DEPLOY_DELTA,
    play: str = "auto",
    max_memory: float | None = None,
    **options: Any,
) -> OnlineLearner:
    """Build the learner ``algorithm`` for ``cmdp`` with budget ``episodes``: every learner the
    same way, ``LEARNERS[algorithm](cmdp, delta, episodes=..., bonus_scale=..., **options)``, a safe
    one with its ``baseline`` too.

    Args:
        algorithm: one of [`ONLINE_ALGORITHMS`][cmdp_rl.plumbing.names.ONLINE_ALGORITHMS] (``name``: its
            deprecated name, for one release).
        cmdp: what is known of the problem ([`KnownParts`][cmdp_rl.model.cmdp.KnownParts]), or a
            [`CMDP`][cmdp_rl.model.cmdp.CMDP]: the learner keeps only its known parts, and a safe
            learner's default baseline is computed from it (the true model, as in the papers'
            experiments).
        delta: failure probability.
        episodes: the budget ``K``.
        bonus_scale: factor on the bonuses (Online-CRL has none: checked, then ignored).
        baseline: ``(policy (H, S, A), costs (N,))`` for a safe learner; ``None`` uses
            [`safe_baseline`][cmdp_rl.planning.baseline.safe_baseline] of the model (known parts alone
            have none: then it must be given).
        deploy: what the learner's ``fit`` hands over: ``"last"`` (default, the last policy played)
            or ``"certified"`` (the best policy certified safe from the run's counts, else the
            baseline, else record status ``"uncertified"``: [`deployed`][cmdp_rl.learners.deploy.deployed]).
        play: how the learner plays its plans, ``"auto"`` (default: Markov tables while they fit in
            ``max_memory``, else mixtures of the plans' columns), ``"table"`` or ``"mixture"``
            ([`configure_play`][cmdp_rl.learners.base.OnlineLearner.configure_play]). A learner playing
            mixtures gets the model's default baseline as its plan's columns too.
        max_memory: the bytes ``"auto"`` weighs the tables against (``None``: ``DEFAULT_MAX_MEMORY``).
        deploy_delta: the failure probability of that certificate (default 0.05).
        options: learner-specific keywords (e.g. ``k0`` for DOPE, ``radius`` for Online-CRL).

    Raises:
        CMDPInputError: unknown name, or a safe learner on a problem without a Slater gap.
    """
    name = algorithm
    if not isinstance(name, str) or name not in LEARNERS:
        raise CMDPInputError(f"algorithm: unknown learner {plain(name)}; valid names are {list(LEARNERS)}")
    check_deploy(deploy, deploy_delta)
    cls = LEARNERS[name]
    compact_baseline = None
    if issubclass(cls, SafeLearner):
        if baseline is None:  # the learner's own refusals of the problem come before the baseline's LP
            statistics = check_choice("statistics", options.get("statistics", "dense"), STATISTICS)
            known_parts(cmdp, statistics, cls.name or cls.__name__)
        if baseline is not None:
            policy, costs = baseline
        else:
            policy, costs, compact_baseline = _model_baseline(name, cmdp)
        options = {**options, "baseline": policy, "baseline_costs": costs}
    learner = cls(cmdp, delta, episodes=episodes, bonus_scale=bonus_scale, **options)
    learner.configure_play(play, max_memory)
    if compact_baseline is not None and learner.plays_mixtures:  # the model's baseline, played as its columns
        learner = cls(
            cmdp, delta, episodes=episodes, bonus_scale=bonus_scale, **{**options, "baseline": compact_baseline}
        )
        learner.configure_play(play, max_memory)
    learner.configure_deploy(deploy, deploy_delta)
    return learner


def _model_baseline(
    name: str, cmdp: CMDP | KnownParts
) -> tuple[NDArray[np.float64], NDArray[np.float64], MixturePolicy | None]:
    """The safe learner ``name``'s default baseline: the model's
    [`safe_baseline`][cmdp_rl.planning.baseline.safe_baseline] (policy, costs and its compact form)."""
    from cmdp_rl.planning.baseline import safe_baseline

    if not isinstance(cmdp, CMDP):
        raise CMDPInputError(
            f"baseline: {name} built from known parts (no model) needs baseline=(policy (H, S, A), costs (N,)), "
            "a policy known to be safe and its expected costs"
        )
    if cmdp.N == 0:
        raise CMDPInputError(f"{name}: needs a constrained problem (N >= 1); this one has no constraint")
    base = safe_baseline(cmdp)
    if not base.slater_gap > 0.0:
        raise CMDPInputError(
            f"{name}: the problem has no Slater gap (the safest policy's worst slack "
            f"min_i (c_bar_i - C_i) = {base.slater_gap:.6g} <= 0), so there is no strictly safe "
            "baseline policy for a safe learner"
        )
    return base.policy, base.costs, base.mixture


def check_baseline_given(
    algorithm: str,
    given: bool,
    name: str = "baseline",
    form: str = "pass baseline=(policy (H, S, A), costs (N,)), a policy whose expected costs are below c_bar",
) -> None:
    """A safe learner (``SAFE_ALGORITHMS``) on a simulator needs its known safe policy: without a
    model there is no LP to find one. ``name`` and ``form`` say in the message how the caller gives
    it (the CLI: ``--baseline``, its options)."""
    if algorithm in SAFE_ALGORITHMS and not given:
        raise CMDPInputError(f"{name}: {algorithm} needs a known safe policy: {form}")


__all__ = ["LABELS", "LEARNERS", "ONLINE_ALGORITHMS", "SAFE_ALGORITHMS", "check_baseline_given", "make_learner"]
