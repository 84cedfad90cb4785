"""The step sizes of NPG-PD and CRPO: the default schedules, the papers' constants, and their checks.

Every quantity below is in the discounted model's own units: values ``V`` and advantages ``A``
lie within ``1 / (1 - gamma)`` (rewards and costs in [0, 1]), so ``(1 - gamma) A`` and
``(1 - gamma) (V_c - c_bar)`` lie in ``[-1, 1]`` whatever ``gamma`` is. The defaults are stated in
those normalized units, so one rule serves ``gamma = 0.8`` and ``gamma = 0.95`` alike.
``t = 1, 2, ...`` numbers the iterations.

**The defaults** (``update="paper"``, no step size given):

* NPG-PD: ``eta1 = 10 (1 - gamma)^2`` (so the primal step ``theta += eta1 / (1 - gamma) A_L``
  moves ``theta`` by at most ``10 (1 + lambda)`` per iteration), the dual step
  ``eta2_t = 6 (1 - gamma) / sqrt(t)`` (so ``lambda`` moves by at most ``6 / sqrt(t)``), and a
  proportional term ``kappa = 1``: the multiplier the primal step uses is
  ``lambda_t = Proj_[0, Lambda](mu_t + kappa (1 - gamma) (V_c - c_bar))``, where ``mu`` is the
  paper's projected dual iterate ``mu_{t+1} = Proj_[0, Lambda](mu_t + eta2_t (V_c - c_bar))``.
  With ``kappa = 0`` and constant steps this is the paper's update exactly.
* CRPO: ``eta_t = 20 (1 - gamma)^2 / sqrt(t)`` (``theta`` moves by at most ``20 / sqrt(t)``),
  ``tol = 0.01``.

Why: with constant steps in units that ignore ``1 / (1 - gamma)``, the primal step grows as
``1 / (1 - gamma)^2`` and the dual step as ``1 / (1 - gamma)``; at ``gamma = 0.95`` each NPG-PD
iteration nearly best-responds to the current multiplier, which swings between 0 and
``Lambda``, and the running averages stop improving (docs/discounted.md has the measurements).
Ding et al. (2020, Theorem 1) take ``eta2 = 2 (1 - gamma) / sqrt(T)`` for a horizon ``T`` fixed in
advance; the default is its anytime form ``c (1 - gamma) / sqrt(t)``. The primal step and the
multiplier's primal and dual updates both integrate (``theta`` sums advantages, ``mu`` sums
violations), which makes the pair oscillate; the proportional term damps that oscillation (it is
the P of a PI controller on the multiplier, as in Stooke, Achiam, Abbeel 2020's PID Lagrangian).
CRPO's analysis (Xu, Liang, Lan 2021, Theorem 1) takes its NPG step of order ``1 / sqrt(T)``;
the default is its anytime form.

**Given step sizes** are constants and keep their former meaning: giving any of NPG-PD's
``eta1``, ``eta2``, ``kappa`` selects constant steps, with the papers' values for the ones not
given (``eta1 = eta2 = 1``, ``kappa = 0``, the paper's update); giving CRPO's ``eta`` selects that
constant step. ``update="script"`` (the authors' tabular scripts) uses the scripts' constants
(``eta1 = eta2 = 1``, ``kappa = 0``; ``eta = 0.4``). ``Lambda`` (default
``2 / ((1 - gamma) xi)``) and ``tol`` (default 0.01) do not depend on the schedule.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any

from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.plumbing.validation import CMDPInputError, as_float, plain

#: the step sizes each algorithm takes, with their defaults (``None``: the default schedule, or for
#: ``Lambda`` the bound from the Slater margin; module docstring)
STEP_SIZES: dict[str, dict[str, float | None]] = {
    "npg-pd": {"eta1": None, "eta2": None, "kappa": None, "Lambda": None},
    "crpo": {"eta": None, "tol": 0.01},
}
#: the constant steps of the papers' experiments and the authors' scripts (``update="script"``, or a
#: step size given)
PAPER_STEPS: dict[str, dict[str, float]] = {
    "npg-pd": {"eta1": 1.0, "eta2": 1.0, "kappa": 0.0},
    "crpo": {"eta": 0.4},
}
#: the default schedules' constants: ``eta1 = NPG_PD_ETA1 (1 - gamma)^2``,
#: ``eta2_t = NPG_PD_ETA2 (1 - gamma) / sqrt(t)``, ``kappa = NPG_PD_KAPPA``
NPG_PD_ETA1, NPG_PD_ETA2, NPG_PD_KAPPA = 10.0, 6.0, 1.0
#: CRPO's default schedule: ``eta_t = CRPO_ETA (1 - gamma)^2 / sqrt(t)``
CRPO_ETA = 20.0
#: the script's damping: its "Fisher matrix" ``outer(g0, g0) + FISHER_DAMPING I`` with ``g0 = 0``
FISHER_DAMPING = 1e-3


@dataclass(frozen=True)
class Steps:
    """One run's step sizes: ``primal / sqrt(t)`` or ``primal`` (``decay``), likewise the dual
    step ``dual`` (NPG-PD), ``kappa`` (NPG-PD's proportional gain), ``Lambda`` (NPG-PD's bound on
    the multiplier), ``tol`` (CRPO's tolerance) and ``unit = 1 - gamma`` (the scale of ``kappa``'s
    term); ``schedule`` is ``"default"`` or ``"constant"``."""

    algorithm: str
    schedule: str
    primal: float
    dual: float = 0.0
    kappa: float = 0.0
    Lambda: float = 0.0
    tol: float = 0.0
    unit: float = 1.0

    @property
    def decay(self) -> bool:
        """Whether the default schedule's ``1 / sqrt(t)`` applies (CRPO's step, NPG-PD's dual step)."""
        return self.schedule == "default"

    def primal_step(self, t: int) -> float:
        """The primal step size of iteration ``t >= 1`` (``eta1`` or ``eta``)."""
        if self.decay and self.algorithm == "crpo":
            return self.primal / math.sqrt(t)
        return self.primal

    def dual_step(self, t: int) -> float:
        """NPG-PD's dual step size ``eta2`` of iteration ``t >= 1``."""
        return self.dual / math.sqrt(t) if self.decay else self.dual

    def settings(self) -> dict[str, Any]:
        """The step sizes for ``PGResult.settings``: numbers for constants, the rule's text otherwise."""
        if self.algorithm == "crpo":
            eta: Any = f"{self.primal:.6g} / sqrt(t)" if self.decay else self.primal
            return {"eta": eta, "tol": self.tol, "schedule": self.schedule}
        eta2: Any = f"{self.dual:.6g} / sqrt(t)" if self.decay else self.dual
        return {
            "eta1": self.primal,
            "eta2": eta2,
            "kappa": self.kappa,
            "Lambda": self.Lambda,
            "schedule": self.schedule,
        }


def check_steps(algo: str, step_sizes: dict[str, Any]) -> dict[str, float | None]:
    """The given step sizes of ``algo`` checked (finite numbers ``> 0``; ``tol`` and ``kappa``
    ``>= 0``, ``-0`` read as 0; ``Lambda`` may be ``None``), over a copy of the defaults
    (``None`` where the default schedule applies)."""
    allowed = STEP_SIZES[algo]
    unknown = sorted(set(step_sizes) - set(allowed))
    if unknown:
        raise CMDPInputError(
            f"{unknown[0]}: not a step size of {algo}; it takes {', '.join(allowed)} "
            f"(defaults {', '.join(f'{k}={_default_text(algo, k)}' for k in allowed)})"
        )
    out: dict[str, float | None] = dict(allowed)
    for key, value in step_sizes.items():
        if value is None and key == "Lambda":
            continue
        v = as_float(key, value)
        nonneg = key in ("tol", "kappa")
        if not (v >= 0.0 if nonneg else v > 0.0):
            raise CMDPInputError(f"{key}: must be {'>= 0' if nonneg else '> 0'}, got {plain(value)}")
        out[key] = v + 0.0  # -0 is 0
    return out


def _default_text(algo: str, key: str) -> str:
    texts = {
        "eta1": f"{NPG_PD_ETA1:g} (1 - gamma)^2",
        "eta2": f"{NPG_PD_ETA2:g} (1 - gamma) / sqrt(t)",
        "kappa": f"{NPG_PD_KAPPA:g}",
        "Lambda": "2 / ((1 - gamma) xi)",
        "eta": f"{CRPO_ETA:g} (1 - gamma)^2 / sqrt(t)",
        "tol": f"{STEP_SIZES['crpo']['tol']}",
    }
    return texts[key]


def resolve_steps(algo: str, given: dict[str, float | None], gamma: float, update: str, Lambda: float) -> Steps:
    """The run's [`Steps`][cmdp_rl.pg.steps.Steps] from the checked step sizes ``given``
    ([`check_steps`][cmdp_rl.pg.steps.check_steps]; ``None``: not given) and NPG-PD's bound ``Lambda``
    (module docstring: the default schedule, or constants)."""
    h = 1.0 - gamma
    if algo == "crpo":
        tol = float(given["tol"] if given["tol"] is not None else 0.01)
        if given["eta"] is not None or update == "script":
            eta = given["eta"] if given["eta"] is not None else PAPER_STEPS["crpo"]["eta"]
            return Steps("crpo", "constant", float(eta), tol=tol)
        return Steps("crpo", "default", CRPO_ETA * h * h, tol=tol)
    keys = ("eta1", "eta2", "kappa")
    if update == "script" or any(given[k] is not None for k in keys):
        v = {k: PAPER_STEPS["npg-pd"][k] if given[k] is None else float(given[k] or 0.0) for k in keys}
        return Steps("npg-pd", "constant", v["eta1"], v["eta2"], v["kappa"], Lambda, unit=h)
    return Steps("npg-pd", "default", NPG_PD_ETA1 * h * h, NPG_PD_ETA2 * h, NPG_PD_KAPPA, Lambda, unit=h)


def check_step_range(steps: Steps, cmdp: CMDP, update: str) -> None:
    """Refuse step sizes whose largest possible move of ``theta`` in one iteration overflows float64:
    advantages are at most ``(1 + Lambda N) / (1 - gamma)`` in size (rewards and costs in [0, 1]), and
    the step multiplies them by ``eta / (1 - gamma)`` (``"paper"``) or ``eta / FISHER_DAMPING``; the
    first iteration's step is the largest."""
    eta_key = "eta1" if steps.algorithm == "npg-pd" else "eta"
    eta = steps.primal_step(1)
    lam = steps.Lambda if steps.algorithm == "npg-pd" else 0.0
    horizon = cmdp.max_return
    factor = horizon if update == "paper" else 1.0 / FISHER_DAMPING
    bound = eta * factor * (1.0 + lam * cmdp.N) * horizon  # Python floats overflow to inf, refused below
    if not bound <= sys.float_info.max / 16:  # room for sums of a few such steps
        names = f"{eta_key}, Lambda" if lam else eta_key
        raise CMDPInputError(
            f"{names}: {eta_key} = {eta:g}"
            + (f" with Lambda = {lam:g}" if lam else "")
            + f" can move the policy's parameters by up to {bound:.3g} in one iteration, beyond the float64 "
            f"range (gamma = {cmdp.gamma:g}); use a smaller step size"
        )


__all__ = [
    "CRPO_ETA",
    "FISHER_DAMPING",
    "NPG_PD_ETA1",
    "NPG_PD_ETA2",
    "NPG_PD_KAPPA",
    "PAPER_STEPS",
    "STEP_SIZES",
    "Steps",
    "check_step_range",
    "check_steps",
    "resolve_steps",
]
