"""A model checker's file as the MODEL of every command that takes one (``solve``, ``export``,
``learn``, ``certify``, ``frontier``, ``pg``): ``*.prism``, ``*.nm``, ``*.pm`` (PRISM), ``*.jani``
(JANI) and ``*.drn`` (DRN), built through stormpy ([`cmdp_rl.model.storm`][cmdp_rl.model.storm], the
optional extra ``pip install "cmdp-rl[storm]"``), the model ``cmdp-rl import-prism/-jani/-drn``
would write.

What such a file does not name or carry comes from the command's options, as for a transition
table: ``--reward NAME`` and ``--cost NAME`` (repeatable; a reward structure or ``label:NAME``),
``--constants N=4,K=2`` (PRISM, JANI), ``--horizon H`` or ``--gamma G`` (those the command has),
``--c-bar X[/Y...]`` (one per ``--cost``) and ``--s0 S`` (a start state instead of the file's
initial states). A missing one is one line naming it; every check of the options is made before
stormpy is imported or the file is read. Any other MODEL refuses ``--constants``, ``--reward`` and
``--cost`` ([`refuse_checker_names`][cmdp_rl.cli.checker_model.refuse_checker_names]). Nothing here
loads NumPy or stormpy when it is imported."""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cmdp_rl.cli.options import parse_thresholds
from cmdp_rl.plumbing.errors import CMDPInputError

if TYPE_CHECKING:
    from cmdp_rl.model.cmdp import CMDP

#: the suffixes of a model checker's files among MODEL files, and their format
CHECKER_SUFFIXES = {".prism": "PRISM", ".nm": "PRISM", ".pm": "PRISM", ".jani": "JANI", ".drn": "DRN"}
#: the suffixes as a message lists them
CHECKER_FILES = ".prism, .nm, .pm, .jani or .drn"
#: the options that say what to take from a model checker's file (``args`` destinations)
CHECKER_NAMES = ("constants", "reward", "cost")


def checker_format(arg: str | None) -> str | None:
    """The format of MODEL ``arg`` when it is a model checker's file (an existing file named
    ``*.prism``, ``*.nm``, ``*.pm``: ``"PRISM"``; ``*.jani``: ``"JANI"``; ``*.drn``: ``"DRN"``), else ``None``."""
    if arg is None:
        return None
    kind = CHECKER_SUFFIXES.get(Path(arg).suffix.lower())
    return kind if kind is not None and os.path.isfile(arg) else None


def refuse_checker_names(args: argparse.Namespace | None, what: str) -> None:
    """Refuse ``--constants``, ``--reward`` or ``--cost`` for a MODEL that is not a model checker's
    file (``what`` names it, e.g. ``"the model file m.npz"``): it carries its own reward and costs."""
    own = {
        "constants": "has no constants to define",
        "reward": "carries its own reward",
        "cost": "carries its own costs",
    }
    for key in CHECKER_NAMES:
        if getattr(args, key, None) is not None:
            raise CMDPInputError(
                f"--{key}: {what} {own[key]}; the option is for a MODEL that is a model checker's file "
                f"({CHECKER_FILES})"
            )


def checker_thresholds(costs: Sequence[str], c_bar_text: str | None) -> list[float] | None:
    """``--c-bar X[/Y...]`` for the ``--cost`` names ``costs``: one threshold per cost, none without
    costs (``None`` when neither is given). The caller refuses thresholds missing for the costs."""
    if c_bar_text is None:
        return None
    if not costs:
        raise CMDPInputError("--c-bar: thresholds are for the costs; give --cost NAME for each")
    c_bar = parse_thresholds(c_bar_text, "c-bar")
    if len(c_bar) != len(costs):
        raise CMDPInputError(f"--c-bar: one threshold per --cost: {len(costs)} cost(s), got {len(c_bar)} threshold(s)")
    return c_bar


#: the import's argument names in its refusals, and the options that give them on the command line
_ARGUMENT_OPTIONS = (
    (re.compile(r"^reward: "), "--reward: "),
    (re.compile(r"^costs\[\d+\]: "), "--cost: "),
    (re.compile(r"^constants '(.*?)': "), r"--constants \1: "),
    (re.compile(r"^constants: "), "--constants: "),
    (re.compile(r"\be\.g\. constants='([^']*)'"), r"e.g. --constants \1"),
    (re.compile(r"\b[A-Z]\w*Exception: "), ""),  # Storm's exception class before its message
)


@contextmanager
def option_terms(costs: Sequence[str]) -> Iterator[None]:
    """The one-line refusals of an import ([`from_prism`][cmdp_rl.model.storm.from_prism] and the
    others) in the command line's terms: ``--reward``, ``--cost``, ``--constants`` for the
    arguments ``reward``, ``costs[i]``, ``constants``, without Storm's exception class names."""
    try:
        yield
    except CMDPInputError as exc:
        message = str(exc)
        for pattern, option in _ARGUMENT_OPTIONS:
            message = pattern.sub(option, message)
        raise CMDPInputError(message) from None


def _missing(path: str, kind: str, args: argparse.Namespace, costs: Sequence[str]) -> None:
    """One line naming every option a model checker's file needs and was not given: ``--horizon H``
    or ``--gamma G`` (those the command has), ``--c-bar`` when there are costs."""
    H, gamma = getattr(args, "horizon", None), getattr(args, "gamma", None)
    if H is not None and gamma is not None:
        raise CMDPInputError("--horizon/--gamma: give one (a finite horizon or a discount), not both")
    missing = []
    if H is None and gamma is None:
        lengths = [opt for key, opt in (("horizon", "--horizon H"), ("gamma", "--gamma G")) if hasattr(args, key)]
        missing.append(" (or ".join(lengths) + ")" * (len(lengths) - 1))
    if costs and getattr(args, "c_bar", None) is None:
        missing.append(f"--c-bar X{'/Y' * (len(costs) - 1)} (one threshold per --cost)")
    if missing:
        raise CMDPInputError(
            f"model: {path} is a {kind} file, which carries no horizon or thresholds: give {' and '.join(missing)}"
        )


def checker_model(path: str, args: argparse.Namespace | None) -> CMDP:
    """The model of the model checker's file ``path`` (PRISM, JANI or DRN:
    [`checker_format`][cmdp_rl.cli.checker_model.checker_format]) with the command's options: the
    reward and costs ``--reward``/``--cost`` name, the constants ``--constants`` defines, the horizon
    ``--horizon`` or discount ``--gamma``, the thresholds ``--c-bar`` (in the model's units) and, with
    ``--s0 S``, the start state ``S`` (Storm's state numbering) instead of the file's initial states.

    Raises:
        CMDPInputError: one line: a missing or misfitting option (naming it), stormpy missing (what
            to install), or the import's own refusal in the options' terms (an unknown reward
            structure or label, a constant left undefined, Storm's parse error).
    """
    from cmdp_rl.model import storm

    kind = checker_format(path) or CHECKER_SUFFIXES[Path(path).suffix.lower()]
    args = args if args is not None else argparse.Namespace()
    costs = list(getattr(args, "cost", None) or [])
    constants, s0 = getattr(args, "constants", None), getattr(args, "s0", None)
    if kind == "DRN" and constants is not None:
        raise CMDPInputError(f"--constants: {path} is a DRN file, an explicit model without constants to define")
    _missing(path, kind, args, costs)
    c_bar = checker_thresholds(costs, getattr(args, "c_bar", None))
    storm.stormpy_module(f"model: {path} is a {kind} file; reading it")
    common: dict[str, Any] = {
        "reward": getattr(args, "reward", None),
        "costs": costs,
        "H": getattr(args, "horizon", None),
        "gamma": getattr(args, "gamma", None),
        "c_bar": c_bar,
    }
    with option_terms(costs):
        if kind == "DRN":
            model = storm.from_drn(path, **common)
        else:
            reader = storm.from_prism if kind == "PRISM" else storm.from_jani
            model = reader(path, constants, **common)
    if s0 is None:
        return model
    if s0 >= model.S:
        raise CMDPInputError(f"--s0: {path} has S = {model.S} states (0 .. {model.S - 1}), got {s0}")
    return model.replace(s0=s0)


__all__ = [
    "CHECKER_FILES",
    "CHECKER_NAMES",
    "CHECKER_SUFFIXES",
    "checker_format",
    "checker_model",
    "checker_thresholds",
    "option_terms",
    "refuse_checker_names",
]
