"""``--avoid SET:P`` and ``--reach SET``, the reach-avoid options of every command that takes a
MODEL: the products of [`cmdp_rl.model.reach`][cmdp_rl.model.reach] applied to the loaded model,
each ``--avoid`` in the order given (one more constraint each), then ``--reach`` (the value
becomes the probability of entering the set). ``SET`` is a label of the model or, for a model
without labels (a registered problem, a transition table), comma-separated state indices such as
``3,7``. Nothing here loads NumPy when it is imported."""

from __future__ import annotations

import argparse
import re
from typing import TYPE_CHECKING, Any

from cmdp_rl.plumbing.errors import CMDPInputError
from cmdp_rl.plumbing.numbers import NumberError, read_real, shown

if TYPE_CHECKING:
    from cmdp_rl.model.cmdp import CMDP

#: the options' help texts
AVOID_HELP = (
    "constrain the probability of entering SET to at most P (repeatable, one constraint each): SET a label of "
    "MODEL or state indices such as 3,7; finite horizon, some state s_0..s_H in SET; discounted, "
    "sum_t gamma^t P(first entry at t) (docs/reach.md; default: no such constraint)"
)
REACH_HELP = (
    "make the value the probability of entering SET (a label of MODEL or state indices such as 3,7), "
    "constraints kept (docs/reach.md; default: the model's reward)"
)
#: why a transition log (``certify --log``, ``learn --from-log``) refuses the options: its states are
#: the loaded model's, and the product's flags would be read as flag 0
LOG_NO_FLAGS = (
    "a transition log holds the model's states, not the product's flags; certify or plan on --counts of the "
    "product (cmdp-rl learn MODEL --avoid/--reach ... --counts-out FILE writes them)"
)
#: state indices typed on the command line
STATES = re.compile(r"\d+(,\d+)*")


def add_reach(p: argparse.ArgumentParser) -> None:
    """``--avoid SET:P`` (repeatable) and ``--reach SET``, read by
    [`apply_reach`][cmdp_rl.cli.reach.apply_reach]."""
    p.add_argument("--avoid", action="append", metavar="SET:P", help=AVOID_HELP)
    p.add_argument("--reach", metavar="SET", help=REACH_HELP)


def parse_avoid(text: str) -> tuple[str, float]:
    """``SET:P`` as ``(SET, P)``: the last ``:`` splits them (a label may hold one), ``P`` a
    probability in ``[0, 1]``; a one-line error naming ``--avoid`` otherwise."""
    where, sep, prob = text.rpartition(":")
    if not sep or not where:
        raise CMDPInputError(
            f"--avoid: expected SET:P (a label or state indices such as 3,7, then the largest probability of "
            f"entering it), got {shown(text)}"
        )
    rule = "a probability in [0, 1]"
    try:
        p = read_real(prob, rule)
    except NumberError as exc:
        raise CMDPInputError(f"--avoid: {where}: P {exc}") from None
    if not 0.0 <= p <= 1.0:
        raise CMDPInputError(f"--avoid: {where}: P must be {rule}, got {shown(prob)}")
    return where, p


def target(model: CMDP, text: str, option: str) -> Any:
    """The set named by ``text`` for ``option``: a label of ``model`` (by name), else state indices
    ``I,J,...`` in ``[0, S)``; else one line naming the labels the model has."""
    if text in model.labels:
        return text
    if STATES.fullmatch(text):
        states = [int(x) for x in text.split(",")]
        bad = [s for s in states if s >= model.S]
        if bad:
            raise CMDPInputError(f"--{option}: state {bad[0]} is out of range: the model has S = {model.S} states")
        return states
    have = ", ".join(model.labels) if model.labels else "none"
    raise CMDPInputError(
        f"--{option}: the model has no label {shown(text)} (its labels: {have}); give a label or state indices "
        f"such as 3,7"
    )


def copies(where: Any, base: int, S: int) -> Any:
    """A set of the loaded model's ``base`` states on a product of ``S`` states: a label as it is
    (labels are tiled over the copies), state indices on every copy (``s + k * base``)."""
    if isinstance(where, str):
        return where
    return [s + k * base for k in range(S // base) for s in where]


def apply_reach(model: CMDP, args: argparse.Namespace | None) -> CMDP:
    """``model`` with the products of ``--avoid`` (in the order given) and then ``--reach``; the
    model itself when neither was given (or ``args`` has neither option). Every set is read on the
    loaded model (state indices are its states, on every copy) before any product is built; with a
    transition log (``--log``, ``--from-log``) the options are refused (``LOG_NO_FLAGS``)."""
    avoid: list[str] = list(getattr(args, "avoid", None) or [])
    goal: str | None = getattr(args, "reach", None)
    if not avoid and goal is None:
        return model
    from cmdp_rl.model.reach import reach_constraint, reach_objective

    for log in ("log", "from_log"):  # certify --log, learn --from-log: refused before any product is built
        if getattr(args, log, None) is not None:
            raise CMDPInputError(f"--{'avoid' if avoid else 'reach'}: {LOG_NO_FLAGS}")
    sets = [(target(model, where, "avoid"), p) for where, p in (parse_avoid(text) for text in avoid)]
    reach = None if goal is None else target(model, goal, "reach")
    base = model.S
    for where, p in sets:
        model = reach_constraint(model, copies(where, base, model.S), p)
    if reach is not None:
        model = reach_objective(model, copies(reach, base, model.S))
    return model


__all__ = [
    "AVOID_HELP",
    "LOG_NO_FLAGS",
    "REACH_HELP",
    "STATES",
    "add_reach",
    "apply_reach",
    "copies",
    "parse_avoid",
    "target",
]
