"""The policy a run hands over: the last one played, or the best one its data certify safe.

A learner's ``deploy`` setting
([`OnlineLearner.configure_deploy`][cmdp_rl.learners.base.OnlineLearner.configure_deploy],
``make_learner(..., deploy=...)``, ``cmdp-rl learn --deploy``):

* ``"last"`` (the learners' default: the paper's reproduction and the arena keep it): the record's
  ``policy`` is the last one played; its certificate from the run's counts is recorded.
* ``"certified"``: the best policy certified safe from the run's counts
  ([`solve_safe`][cmdp_rl.certificates.safe.solve_safe] at ``deploy_delta``, the certificates'
  valid radius; with estimated rewards and costs their intervals, ``r_radius`` and ``c_radius``);
  when none is certified, the safe baseline if the learner has one (record status
  ``"baseline"``), else the last policy with record status ``"uncertified"``.

Every record then has ``certified`` (whether its ``policy`` is certified safe: every upper cost
bound within ``c_bar``) and ``certificate`` (its [`Certificate`][cmdp_rl.certificates.certify.Certificate]).
``deploy_delta`` (0.05) and the empirical Bernstein radius are the certificates' defaults, not the
learner's ``delta`` and radius: a certificate must hold for deployment, the learner's constants
reproduce the papers (docs page 'Certificates').
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from cmdp_rl.certificates.certify import Certificate, certify
from cmdp_rl.certificates.safe import solve_safe
from cmdp_rl.evaluation.mixture import MixturePolicy
from cmdp_rl.model.cmdp import KnownParts
from cmdp_rl.plumbing.names import DEPLOY
from cmdp_rl.plumbing.validation import check_choice, check_probability

Array = NDArray[np.float64]

#: the certificates' failure probability for the handed-over policy (``deploy_delta``)
DEPLOY_DELTA = 0.05

R = TypeVar("R")


def check_deploy(deploy: Any, deploy_delta: Any) -> tuple[str, float]:
    """``deploy`` one of ``DEPLOY``, ``deploy_delta`` a probability in (0, 1)."""
    return check_choice("deploy", deploy, DEPLOY), check_probability("deploy_delta", deploy_delta)


def deployed(
    record: R,
    known: KnownParts,
    deploy: str,
    deploy_delta: float,
    baseline: Array | MixturePolicy | None = None,
    r_radius: Array | None = None,
    c_radius: Array | None = None,
    compact: bool = False,
) -> R:
    """``record`` (a [`LearnerRecord`][cmdp_rl.learners.records.LearnerRecord]) with the policy ``deploy`` hands
    over, ``certified``, ``certificate`` and, for ``"certified"``, its own status (module docstring).
    ``known`` holds the rewards and costs the certificates use (estimates with ``r_radius (S, A)``
    and ``c_radius (N, S, A)``), the thresholds, the start and the horizon of the record's counts.
    ``compact`` (a learner playing mixtures): the certified policy is handed over as its plan's
    columns ([`solve_safe`][cmdp_rl.certificates.safe.solve_safe]'s ``compact``), certified as a
    mixture; ``policy`` and ``baseline`` may be [`MixturePolicy`][cmdp_rl.evaluation.mixture.MixturePolicy]
    objects (certified by their columns' weighted bounds)."""
    rec: Any = record
    counts = rec.counts
    args = (known.r, known.c, known.c_bar, known.s0, known.H)

    def certificate(policy: Array | MixturePolicy) -> Certificate:
        return certify(
            policy, counts, *args, delta=deploy_delta, r_radius=r_radius, c_radius=c_radius, actions=known.actions
        )

    if deploy == "last" or known.N == 0:  # without a constraint every policy is safe
        cert = certificate(rec.policy)
        return dataclasses.replace(rec, certified=cert.safe, certificate=cert)  # type: ignore[no-any-return]
    plan = solve_safe(
        counts, *args, delta=deploy_delta, r_radius=r_radius, c_radius=c_radius, actions=known.actions, compact=compact
    )
    if plan.safe:
        return dataclasses.replace(  # type: ignore[no-any-return]
            rec,
            policy=plan.policy,
            mixture=None,
            certified=True,
            certificate=plan.certificate,
            deploy_status="certified",
        )
    if baseline is not None:
        cert = certificate(baseline)
        return dataclasses.replace(  # type: ignore[no-any-return]
            rec,
            policy=baseline if isinstance(baseline, MixturePolicy) else np.array(baseline),
            mixture=None,
            certified=cert.safe,
            certificate=cert,
            deploy_status="baseline",
        )
    cert = certificate(rec.policy)
    return dataclasses.replace(  # type: ignore[no-any-return]
        rec, certified=cert.safe, certificate=cert, deploy_status="certified" if cert.safe else "uncertified"
    )


__all__ = ["DEPLOY", "DEPLOY_DELTA", "check_deploy", "deployed"]
