"""The model checkers' formats through stormpy (an optional extra: ``pip install "cmdp-rl[storm]"``):
PRISM ([`from_prism`][cmdp_rl.model.storm.from_prism]), JANI ([`from_jani`][cmdp_rl.model.storm.from_jani]),
DRN ([`from_drn`][cmdp_rl.model.storm.from_drn]) and Storm's own models
([`from_storm`][cmdp_rl.model.storm.from_storm]); the way back:
[`to_drn`][cmdp_rl.model.drn.to_drn] (no stormpy needed) and [`to_storm`][cmdp_rl.model.storm.to_storm]
(through UMB written with NumPy).

Storm builds the model (constants, labels, reward structures, choice labels); the arrays leave it
through its UMB binary format, written by Storm's C++ code and read with NumPy alone
([`read_umb`][cmdp_rl.model.umb.read_umb]): 61,456 choices in 19 ms, 59 ms with the CMDP built, where
a Python loop over Storm's matrix rows takes 1.1 s and Storm's DRN text export alone 0.18 s (DRN
also drops transition rewards; ``benchmarks/results/storm_import.json``).
[`checker_cmdp`][cmdp_rl.model.checker.checker_cmdp] makes the CMDP: rewards and costs from reward
structures (state, state-action and the expectation of transition rewards) or labels,
several initial states as a uniform start, choice labels as action names, labels kept.
Without stormpy every entry point says, in one line, what to install.
"""

from __future__ import annotations

import importlib
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from cmdp_rl.model.checker import checker_cmdp, raw_of_cmdp
from cmdp_rl.model.checks import check_horizon
from cmdp_rl.model.cmdp import CMDP
from cmdp_rl.model.umb import CheckerModel, read_umb, write_umb
from cmdp_rl.plumbing.paths import check_input_path
from cmdp_rl.plumbing.validation import CMDPInputError, CMDPTypeError

#: the one line every entry point says without stormpy
INSTALL_HINT = 'pip install "cmdp-rl[storm]"'


def stormpy_module(what: str) -> ModuleType:
    """The ``stormpy`` module, or a one-line [`CMDPInputError`][cmdp_rl.plumbing.errors.CMDPInputError]:
    ``WHAT needs stormpy: pip install "cmdp-rl[storm]"``."""
    try:
        return importlib.import_module("stormpy")
    except ImportError:
        raise CMDPInputError(f"{what} needs stormpy: {INSTALL_HINT}") from None


@contextmanager
def storm_errors(stormpy: ModuleType, label: str) -> Iterator[None]:
    """Storm's logger silenced (it would print its errors on stderr as well), and its exceptions as
    one line naming ``label``: the first line of Storm's message (e.g. a parse error's position)."""
    developer = stormpy.developer
    level = developer.get_log_level()
    developer.set_log_level(developer.LogLevel.OFF)
    try:
        yield
    except (RuntimeError, stormpy.exceptions.StormError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise CMDPInputError(f"{label}: {first}") from None
    finally:
        developer.set_log_level(level)


def _check_request(costs: Sequence[str] | str, H: Any, gamma: Any, c_bar: Any) -> None:
    """The cheap checks of an import's request, before Storm builds anything: ``H`` or ``gamma``,
    and thresholds for the costs (their count is checked against the costs later)."""
    check_horizon(H, gamma)
    if c_bar is None and costs:
        raise CMDPInputError(
            f"c_bar: required, one threshold per cost ({[costs] if isinstance(costs, str) else costs})"
        )


def storm_raw(model: Any) -> CheckerModel:
    """The raw arrays of a stormpy sparse MDP or DTMC with float values (through a UMB archive in a
    temporary folder; [`read_umb`][cmdp_rl.model.umb.read_umb])."""
    stormpy = stormpy_module("from_storm")
    kinds = (stormpy.models.ModelType.MDP, stormpy.models.ModelType.DTMC)
    if not getattr(model, "is_sparse_model", False) or model.model_type not in kinds:
        raise CMDPInputError(f"model: expected a stormpy sparse MDP or DTMC, got {type(model).__name__}")
    if model.is_exact or model.has_parameters or model.supports_uncertainty:
        raise CMDPInputError("model: expected a model with float probabilities (stormpy.build_model's default)")
    options = stormpy.io.UmbExportOptions()
    options.compression = stormpy.io.CompressionMode.NO_COMPRESSION
    renames = {"default": ""} if "" in model.reward_models else {}
    with tempfile.TemporaryDirectory(prefix="cmdp-rl-umb-") as folder, storm_errors(stormpy, "model"):
        path = Path(folder) / "model.umb"
        stormpy.io.export_to_umb(model, path, options=options)
        return read_umb(path, renames)


def from_storm(
    model: Any,
    reward: str | None = None,
    costs: Sequence[str] | str = (),
    H: int | None = None,
    gamma: float | None = None,
    c_bar: Any = None,
    *,
    names: str = "",
    meta: Mapping[str, Any] | None = None,
) -> CMDP:
    """The CMDP of a stormpy sparse MDP (or DTMC) ``model`` with float values.

    Args:
        model: e.g. ``stormpy.build_model(program)``; its reward structures, labels and choice
            labels are what it was built with.
        reward: a reward structure's name (``""``: PRISM's unnamed one) or ``label:NAME`` (1 per
            step in a state of the label), or ``None`` (reward 0).
        costs: one name per constraint, as ``reward``.
        H: the horizon (Storm's ``C<=H``); exactly one of ``H`` and ``gamma``.
        gamma: the discount factor in ``(0, 1)``.
        c_bar: one threshold per cost, in the model's units.
        names: the model's ``names``.
        meta: extra metadata for the model's ``meta``.

    Returns:
        A sparse CMDP ([`checker_cmdp`][cmdp_rl.model.checker.checker_cmdp] says how the model's
        ragged choices and units become today's CMDP, and what ``meta`` records).
    """
    _check_request(costs, H, gamma, c_bar)
    raw = storm_raw(model)
    info = {"source": "storm", **dict(meta or {})}
    return checker_cmdp(raw, reward, costs, H, gamma, c_bar, names=names, meta=info)


def _builder_options(stormpy: ModuleType) -> Any:
    """Builder options for every reward structure, every label and the choice labels (no state
    valuations or choice origins: they cost time and the CMDP does not keep them)."""
    options = stormpy.BuilderOptions()
    options.set_build_all_reward_models()
    options.set_build_all_labels()
    options.set_build_choice_labels()
    return options


def _instantiated(stormpy: ModuleType, program: Any, constants: Any, label: str) -> Any:
    """``program`` with ``constants`` (``"N=4,K=2"`` or a mapping) defined; a constant left
    undefined is a one-line error naming it."""
    if constants:
        if not isinstance(constants, (str, Mapping)):
            raise CMDPInputError(f"constants: a string 'N=4,K=2' or a mapping, got {type(constants).__name__}")
        with storm_errors(stormpy, f"constants {constants!r}"):
            program = stormpy.instantiate_constants(program, constants)[0]
    if program.has_undefined_constants:
        undefined = program.get_undefined_constants() if hasattr(program, "get_undefined_constants") else []
        names = ", ".join(sorted(c.name for c in undefined)) or "some"
        raise CMDPInputError(f"constants: {label} leaves {names} undefined; give them, e.g. constants='{names}=...'")
    return program


def _build(stormpy: ModuleType, program: Any, label: str) -> Any:
    with storm_errors(stormpy, label):
        return stormpy.build_model(program, options=_builder_options(stormpy))


def _file_cmdp(
    model: Any,
    kind: str,
    path: str | os.PathLike[str],
    constants: Any,
    reward: str | None,
    costs: Sequence[str] | str,
    H: int | None,
    gamma: float | None,
    c_bar: Any,
    names: str | None,
) -> CMDP:
    """The CMDP of a stormpy model built from the ``kind`` file at ``path`` (``from_prism``'s,
    ``from_jani``'s and ``from_drn``'s shared last step): its source recorded in ``meta``, named by
    the file's stem unless ``names`` is given."""
    meta: dict[str, Any] = {"source": kind, "file": Path(path).name}
    if constants:
        meta["constants"] = constants if isinstance(constants, str) else {str(k): v for k, v in constants.items()}
    raw = storm_raw(model)
    return checker_cmdp(raw, reward, costs, H, gamma, c_bar, names=names or Path(path).stem, meta=meta)


def from_prism(
    path: str | os.PathLike[str],
    constants: str | Mapping[str, Any] | None = None,
    reward: str | None = None,
    costs: Sequence[str] | str = (),
    H: int | None = None,
    gamma: float | None = None,
    c_bar: Any = None,
    *,
    names: str | None = None,
) -> CMDP:
    """The CMDP of the PRISM MDP (or DTMC) at ``path`` (``.nm``, ``.prism``, ``.pm``), its undefined
    constants given by ``constants`` (``"N=4,K=2"`` or ``{"N": 4, "K": 2}``); the other arguments
    as [`from_storm`][cmdp_rl.model.storm.from_storm] (``names``: the file's stem by default).

    Raises:
        CMDPInputError: one line: stormpy missing (what to install), the file missing or not
            PRISM (Storm's parse error with its position), a constant left undefined, an
            unknown reward structure or label, or the model's own rules.
    """
    stormpy = stormpy_module("from_prism")
    label = _file_label(path, "PRISM")
    _check_request(costs, H, gamma, c_bar)
    with storm_errors(stormpy, label):
        program = stormpy.parse_prism_program(os.fspath(path))
    model = _build(stormpy, _instantiated(stormpy, program, constants, label), label)
    request = (reward, costs, H, gamma, c_bar, names)
    return _file_cmdp(model, "prism", path, constants, *request)


def _file_label(path: Any, kind: str) -> str:
    """The label naming the ``kind`` file at ``path`` in messages, once ``path`` is checked: a path
    ([`CMDPTypeError`][cmdp_rl.plumbing.errors.CMDPTypeError] otherwise) to a readable file."""
    if not isinstance(path, (str, os.PathLike)):
        raise CMDPTypeError(f"path: must be the path of a {kind} file (str or os.PathLike), got {type(path).__name__}")
    label = f"{kind} file {os.fspath(path)!r}"
    check_input_path(path, label, f"a {kind} file")
    return label


def from_jani(
    path: str | os.PathLike[str],
    constants: str | Mapping[str, Any] | None = None,
    reward: str | None = None,
    costs: Sequence[str] | str = (),
    H: int | None = None,
    gamma: float | None = None,
    c_bar: Any = None,
    *,
    names: str | None = None,
) -> CMDP:
    """The CMDP of the JANI model at ``path`` (e.g. one stormpy wrote from a PRISM program); the
    arguments as [`from_prism`][cmdp_rl.model.storm.from_prism]."""
    stormpy = stormpy_module("from_jani")
    label = _file_label(path, "JANI")
    _check_request(costs, H, gamma, c_bar)
    with storm_errors(stormpy, label):
        jani = stormpy.parse_jani_model(os.fspath(path))[0]
    model = _build(stormpy, _instantiated(stormpy, jani, constants, label), label)
    request = (reward, costs, H, gamma, c_bar, names)
    return _file_cmdp(model, "jani", path, constants, *request)


def from_drn(
    path: str | os.PathLike[str],
    reward: str | None = None,
    costs: Sequence[str] | str = (),
    H: int | None = None,
    gamma: float | None = None,
    c_bar: Any = None,
    *,
    names: str | None = None,
) -> CMDP:
    """The CMDP of the DRN file at ``path`` (Storm's explicit format, e.g. written by
    ``stormpy.export_to_drn`` or [`to_drn`][cmdp_rl.model.drn.to_drn]); the arguments as
    [`from_storm`][cmdp_rl.model.storm.from_storm]."""
    stormpy = stormpy_module("from_drn")
    label = _file_label(path, "DRN")
    _check_request(costs, H, gamma, c_bar)
    options = stormpy.io.DirectEncodingParserOptions()
    options.build_choice_labeling = True  # the action names
    with storm_errors(stormpy, label):
        model = stormpy.build_model_from_drn(os.fspath(path), options=options)
    request = (reward, costs, H, gamma, c_bar, names)
    return _file_cmdp(model, "drn", path, None, *request)


def to_storm(model: CMDP) -> Any:
    """``model`` as a stormpy sparse MDP: reward structures ``reward``, ``cost_0``, ... (in the model's
    units), its labels, initial states and action names as choice labels,
    each state's own choices ([`raw_of_cmdp`][cmdp_rl.model.checker.raw_of_cmdp] says what is
    written). Through a UMB archive written with NumPy ([`write_umb`][cmdp_rl.model.umb.write_umb])
    in a temporary folder: 61,456 choices in 13 ms (through DRN text, Storm's parser alone takes
    1.8 s; ``benchmarks/results/storm_import.json``)."""
    stormpy = stormpy_module("to_storm")
    raw = raw_of_cmdp(model)
    options = stormpy.io.UmbImportOptions()
    options.build_state_valuations = False
    options.build_choice_labeling = True
    with tempfile.TemporaryDirectory(prefix="cmdp-rl-umb-") as folder, storm_errors(stormpy, "model"):
        path = Path(folder) / "model.umb"
        write_umb(raw, path)
        return stormpy.build_model_from_umb(path, options=options)


__all__ = [
    "INSTALL_HINT",
    "from_drn",
    "from_jani",
    "from_prism",
    "from_storm",
    "storm_errors",
    "stormpy_module",
    "to_storm",
]
