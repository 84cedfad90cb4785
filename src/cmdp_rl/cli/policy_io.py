"""Policy files on the command line (``--policy``, ``--policy-out``, ``--baseline``), chosen by
extension: ``FILE.npy`` the dense randomized table, ``FILE.npz`` the compact mixture of
deterministic columns ([`cmdp_rl.evaluation.policy_files`][cmdp_rl.evaluation.policy_files]).

Every refusal is one line naming the option and the file (exit 2): another extension, a
damaged file, missing keys, a shape or an action that does not fit the model, a dense table
above ``--max-memory`` (with the estimate).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cmdp_rl.plumbing.errors import CMDPInputError

if TYPE_CHECKING:
    import numpy as np

    from cmdp_rl.evaluation.mixture import MixturePolicy
    from cmdp_rl.model.cmdp import CMDP

#: the extensions of a policy file
POLICY_SUFFIXES = (".npy", ".npz")


def policy_suffix(path: str | os.PathLike[str], option: str) -> str:
    """``".npy"`` or ``".npz"``, the extension of the policy file ``path``, else a one-line refusal
    naming ``--option``."""
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    if suffix not in POLICY_SUFFIXES:
        raise CMDPInputError(
            f"--{option}: {os.fspath(path)}: a policy file is FILE.npy (the dense table) or FILE.npz (the compact "
            f"mixture of deterministic policies), got {suffix or 'no extension'}"
        )
    return suffix


def policy_out_file(args: argparse.Namespace, compact: bool = True) -> Path:
    """``--policy-out`` checked before any work: a writable path
    ([`check_output_file`][cmdp_rl.cli.common.check_output_file]) named ``.npy`` or ``.npz``
    (``.npz`` only where the command's policy is a mixture: ``compact``)."""
    from cmdp_rl.cli.common import check_output_file

    path = check_output_file(args.policy_out, args.force, "policy-out")
    if policy_suffix(path, "policy-out") == ".npz" and not compact:
        raise CMDPInputError(
            f"--policy-out: {path}: this command's policy is a learner's randomized Markov table, saved as FILE.npy "
            "(FILE.npz holds a mixture of deterministic policies, what cmdp-rl solve writes)"
        )
    return path


def learned_play(args: argparse.Namespace) -> str:
    """``learn``'s ``--play`` with ``--policy-out``'s extension, checked before any work: ``FILE.npz``
    (a mixture of deterministic policies) makes the learner play its plans' columns (``"mixture"``;
    ``--play table`` is refused with it, as is a learner whose policy is a table by construction),
    ``FILE.npy`` (a Markov table) makes it play tables (``"table"``: a run whose tables do not fit
    is refused before any step) and refuses ``--play mixture``; else ``--play`` (default ``"auto"``)."""
    from cmdp_rl.learners.catalog import LEARNERS

    play = getattr(args, "play", None)
    suffix = None if args.policy_out is None else policy_suffix(args.policy_out, "policy-out")
    if suffix == ".npz":
        if play == "table":
            raise CMDPInputError(
                f"--play: table hands over a Markov table, but --policy-out {args.policy_out} (FILE.npz) holds a "
                "mixture of deterministic policies: drop --play table or write FILE.npy"
            )
        learner = LEARNERS.get(args.algorithm)
        if learner is not None and not learner.column_plans:
            raise CMDPInputError(
                f"--policy-out: {args.policy_out}: {args.algorithm}'s policy is a Markov table by construction, not "
                "a mixture of deterministic policies: write FILE.npy"
            )
        return "mixture"
    if suffix == ".npy" and play == "mixture":
        raise CMDPInputError(
            f"--play: mixture hands over a mixture of deterministic policies, but --policy-out {args.policy_out} "
            "(FILE.npy) holds a Markov table: write FILE.npz"
        )
    if suffix == ".npy":  # the table is written: played as such, refused before any step where it does not fit
        return "table" if play in (None, "auto") else str(play)
    return "auto" if play is None else str(play)


def check_baseline_output(baseline: Any, policy_out: Path | None) -> None:
    """``--baseline FILE.npz`` holding a true mixture (several deterministic policies) with
    ``--policy-out FILE.npy``: refused before any work, since the policy handed over may be that
    baseline, which has no Markov table without the environment's kernel."""
    import numpy as np

    from cmdp_rl.evaluation.mixture import MixturePolicy

    if policy_out is None or policy_out.suffix.lower() != ".npy" or not isinstance(baseline, MixturePolicy):
        return
    used = baseline.columns[baseline.weights > 0.0]
    if not bool(np.all(used == used[0])):
        raise CMDPInputError(
            f"--policy-out: {policy_out}: the policy handed over may be the --baseline mixture of {len(used)} "
            "deterministic policies, which FILE.npy (a Markov table) cannot hold: write FILE.npz"
        )


def write_learned_policy(path: Path, policy: Any) -> None:
    """``learn``'s ``--policy-out``: ``FILE.npz`` the compact mixture
    ([`save_policy`][cmdp_rl.evaluation.policy_files.save_policy]; a deterministic ``(H, S, A)`` table,
    e.g. a safe baseline, as its one column), ``FILE.npy`` the ``(H, S, A)`` table. A policy that has
    no such form (a randomized table for ``.npz``, a mixture for ``.npy``) is refused in one line."""
    import numpy as np

    from cmdp_rl.cli.common import save_npy
    from cmdp_rl.evaluation.mixture import MixturePolicy
    from cmdp_rl.evaluation.policy_files import save_policy
    from cmdp_rl.planning.mixture_table import table_mixture

    if path.suffix.lower() == ".npz":
        if not isinstance(policy, MixturePolicy):  # a deterministic table (a baseline): its one column
            policy = table_mixture(policy, f"--policy-out: {path}: the policy handed over")
        save_policy(path, policy)
        return
    if isinstance(policy, MixturePolicy):
        raise CMDPInputError(
            f"--policy-out: {path}: the learner played its plans' columns (a mixture of deterministic policies, "
            "--play): write FILE.npz"
        )
    save_npy(path, np.asarray(policy, dtype=np.float64))


def policy_shape(policy: Any) -> str:
    """How a report names a written policy's form: ``shape (H, S, A)`` of a table, or ``K columns of
    shape (H, S)`` of a mixture."""
    columns = getattr(policy, "columns", None)
    if columns is not None:
        K, shape = columns.shape[0], tuple(columns.shape[1:])
        return f"{K} deterministic column{'s' * (K != 1)} of shape {shape}"
    return f"shape {tuple(policy.shape)}"


def read_policy(path: str, option: str, args: argparse.Namespace | None = None) -> np.ndarray | MixturePolicy:
    """The policy file given to ``--option``: ``.npy`` a finite array
    ([`load_npy`][cmdp_rl.cli.common.load_npy]: its size checked from the header against
    ``--max-memory`` first), ``.npz`` a validated [`MixturePolicy`][cmdp_rl.evaluation.mixture.MixturePolicy]
    ([`load_policy`][cmdp_rl.evaluation.policy_files.load_policy]: its members' sizes checked from
    their headers first). Refusals name ``option`` and the file."""
    from cmdp_rl.cli.common import load_npy, resource_limits
    from cmdp_rl.evaluation.policy_files import load_policy
    from cmdp_rl.plumbing.limits import check_estimate, model_file_estimate
    from cmdp_rl.plumbing.paths import check_input_path

    if policy_suffix(path, option) == ".npy":
        return load_npy(path, option, args)
    label = f"{option}: {path}"
    check_input_path(path, label, "an .npz file")
    if args is not None and hasattr(args, "max_memory"):
        check_estimate(model_file_estimate(path, label), label, *resource_limits(args))
    try:
        mix = load_policy(path)
    except CMDPInputError as exc:
        text = str(exc)
        raise CMDPInputError(label + text[len(f"policy: {path}") :] if text.startswith("policy: ") else text) from None
    return mix


def model_policy(policy: Any, path: str, option: str, model: CMDP, H: int) -> Any:
    """A policy read by [`read_policy`][cmdp_rl.cli.policy_io.read_policy] checked against ``model``:
    a dense table of shape ``(H, S, A)`` whose rows are distributions (a copy), or a mixture whose
    columns are ``(K, H, S)`` with actions the model has; one line naming ``option`` and the file
    otherwise."""
    import numpy as np

    from cmdp_rl.cli.common import checked_content
    from cmdp_rl.evaluation.evaluate import validate_policy
    from cmdp_rl.evaluation.mixture import MixturePolicy, check_mixture_fits

    label = f"{option}: {path}"
    if isinstance(policy, MixturePolicy):
        checked_content(label, check_mixture_fits, "columns", policy, model)
        return policy
    if np.shape(policy) != (H, model.S, model.A):
        raise CMDPInputError(f"{label}: expected an (H, S, A) = {(H, model.S, model.A)} array, got {np.shape(policy)}")
    return checked_content(label, validate_policy, policy, H, model.S, model.A)


def write_plan_policy(path: Path, plan: Any, model: CMDP, args: argparse.Namespace) -> None:
    """``solve``'s ``--policy-out``: ``FILE.npz`` the plan's columns and weights (the compact mixture,
    no dense table built), ``FILE.npy`` its dense table ``plan.policy`` (``(H, S, A)``, or ``(S, A)``
    discounted), refused first when that table's estimate is above ``--max-memory``. A plan
    without columns (the LP's) is a Markov table: ``FILE.npy`` only."""
    import numpy as np

    from cmdp_rl.cli.common import resource_limits, save_npy
    from cmdp_rl.evaluation.mixture import mixture_policy
    from cmdp_rl.evaluation.policy_files import save_policy
    from cmdp_rl.planning.mixing import table_bytes
    from cmdp_rl.plumbing.limits import Estimate, check_estimate

    if path.suffix.lower() == ".npz":
        if plan.columns is None:
            raise CMDPInputError(
                f"--policy-out: {path}: this plan ({plan.method or 'lp'}) is a randomized Markov table, not a mixture "
                "of deterministic policies: save it as FILE.npy"
            )
        save_policy(path, mixture_policy(plan.columns, plan.weights, model.A))
        return
    limit = resource_limits(args)[0]
    if plan.columns is not None:
        est = Estimate(table_bytes(plan.table_shape, model.is_ragged), 0.0)
        check_estimate(est, f"--policy-out {path} (the dense policy table; FILE.npz holds the compact mixture)", limit)
    save_npy(path, np.asarray(plan.markov_policy(max_memory=limit), dtype=np.float64))


def plan_policy_line(plan: Any) -> str:
    """What ``solve`` prints about the plan's policy, without building a dense table for a plan of
    columns: ``deterministic`` (one column carries all the weight) or ``a mixture of K
    deterministic policies``, with the columns' shape; an LP plan's table: its shape."""
    import numpy as np

    if plan.columns is None:
        det = np.isclose(plan.policy.max(-1), 1.0).all()
        return f"{'deterministic' if det else 'randomized'}, shape {plan.policy.shape}"
    w = np.asarray(plan.weights)
    used = plan.columns[w > 0.0]
    shape = tuple(plan.columns.shape[1:])
    if used.shape[0] <= 1 or bool((used == used[0]).all()):
        return f"deterministic, actions of shape {shape}"
    return f"a mixture of {used.shape[0]} deterministic policies (played one per episode), actions of shape {shape}"


__all__ = [
    "POLICY_SUFFIXES",
    "model_policy",
    "plan_policy_line",
    "policy_out_file",
    "policy_suffix",
    "read_policy",
    "write_plan_policy",
]
