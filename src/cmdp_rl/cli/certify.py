"""``cmdp-rl certify MODEL --policy POLICY.npy|POLICY.npz``: a policy's value and safety from data alone
(``POLICY.npz``, a compact mixture, is certified by the weighted sum of its columns' bounds,
[`mixture_certificate`][cmdp_rl.certificates.certify.mixture_certificate])."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from cmdp_rl.cli.exit_codes import EXIT_INFEASIBLE, EXIT_OK
from cmdp_rl.cli.options import add_delta, add_json, add_limits, add_model, add_radius, add_table_fill
from cmdp_rl.plumbing.errors import CMDPInputError
from cmdp_rl.plumbing.names import SAMPLING

if TYPE_CHECKING:
    from cmdp_rl.model.cmdp import CMDP

NAME = "certify"
HELP = "certify a policy's value and safety from data alone"
DESCRIPTION = (
    "Bound a policy's value and costs over every kernel of the confidence set built from the "
    "data (counts or a log of episodes). MODEL supplies r, c, c_bar, s0 and H; its kernel P is NOT used. "
    "Exit 0 if certified safe, 1 if not, 2 on bad input, 3 on an internal error."
)


def add_options(p: argparse.ArgumentParser) -> None:
    """``certify``'s arguments."""
    add_model(
        p,
        "a registered problem, a .npz model file, a CSV/Parquet transition table or a model checker's file "
        ".prism/.nm/.pm, .jani or .drn (with the options below for what such a file does not carry); its P is not "
        "used",
    )
    add_table_fill(p, ("horizon", "c_bar", "s0"))
    p.add_argument(
        "--policy",
        required=True,
        metavar="POLICY.npy|POLICY.npz",
        help="the policy to certify: POLICY.npy its (H, S, A) table, POLICY.npz a compact mixture of deterministic "
        "policies (cmdp-rl solve --policy-out FILE.npz), bounded by the weighted sum of its columns' bounds",
    )
    p.add_argument(
        "--counts",
        metavar="COUNTS",
        help="integer transition counts: an (S, A, S) .npy array, or a sparse (S*A, S) matrix in an .npz "
        "written by scipy.sparse.save_npz (row s*A + a holds n(s, a, .)); give --counts or --log",
    )
    p.add_argument(
        "--log",
        metavar="FILE",
        help="logged episodes: CSV/Parquet with episode, step, state, action, next_state; give --counts or --log",
    )
    add_delta(p, default=0.05)
    add_radius(p, "confidence radius: a valid empirical Bernstein bound, or the paper's Lemma 1", "empirical-bernstein")
    p.add_argument(
        "--sampling",
        choices=SAMPLING,
        default="adaptive",
        help="sample sizes chosen by the data (learners, logs) or fixed in advance (generative model)",
    )
    add_json(p)
    add_limits(p)


def _load_sparse_counts(path: str, model: CMDP, args: argparse.Namespace) -> Any:
    """Validated sparse ``(S*A, S)`` counts from an ``.npz`` written by ``scipy.sparse.save_npz``, or
    a one-line error naming the file: missing, truncated or damaged (SciPy's decoder, behind
    [`decoding`][cmdp_rl.plumbing.decoding.decoding], and a full check of the CSR arrays), another shape,
    entries that are not non-negative integers. Their size is checked from the members' headers
    against ``--max-memory`` first."""
    import scipy.sparse as sp

    from cmdp_rl.cli.common import checked_content, resource_limits
    from cmdp_rl.confidence.sparse_box import validate_sparse_counts
    from cmdp_rl.plumbing.decoding import decoding
    from cmdp_rl.plumbing.limits import check_estimate, model_file_estimate
    from cmdp_rl.plumbing.paths import check_input_path

    label = f"counts: {path}"
    check_input_path(path, label, "an .npz or .npy file")
    check_estimate(model_file_estimate(path, label), label, *resource_limits(args))
    with open(path, "rb") as fh, decoding(label, "not a readable scipy.sparse .npz matrix"):  # fh: ours to close
        counts = sp.load_npz(fh)
        if counts.format in ("csr", "csc", "bsr"):
            counts.check_format(full_check=True)  # indices in range, indptr consistent
        else:
            counts = counts.tocsr()  # COO/DIA: SciPy checks the entries while converting
    want = (model.S * model.A, model.S)
    if counts.shape != want:
        raise CMDPInputError(f"{label}: expected a sparse (S*A, S) = {want} matrix, got {counts.shape}")
    return checked_content(label, validate_sparse_counts, counts)


def _load_counts(args: argparse.Namespace, model: CMDP, H: int) -> Any:
    """The data: ``--counts`` (a sparse ``.npz`` or a dense ``.npy``) or ``--log``, checked against the model."""
    from cmdp_rl.cli.common import checked_content, load_npy
    from cmdp_rl.confidence.radii import validate_counts
    from cmdp_rl.model.transition_logs import read_log

    if args.counts is not None and str(args.counts).endswith(".npz"):
        return _load_sparse_counts(args.counts, model, args)
    if args.counts is not None:
        counts = load_npy(args.counts, "counts", args)
        if counts.shape != (model.S, model.A, model.S):
            raise CMDPInputError(
                f"counts: {args.counts}: expected an (S, A, S) = {(model.S, model.A, model.S)} array, "
                f"got {counts.shape}"
            )
        return checked_content(f"counts: {args.counts}", validate_counts, counts)
    return read_log(args.log, model.S, model.A, H)


def run(args: argparse.Namespace) -> int:
    """Certify ``--policy`` on the data (see ``cmdp-rl certify --help``): exit 0 if certified safe, else 1."""
    from cmdp_rl.certificates.certify import certify
    from cmdp_rl.cli.common import certificate_json, load_model, print_certificate, resource_limits
    from cmdp_rl.cli.policy_io import model_policy, read_policy
    from cmdp_rl.plumbing.limits import certify_estimate, check_estimate

    model = load_model(args.model, args)
    if (args.counts is None) == (args.log is None):
        raise CMDPInputError("--counts/--log: give exactly one source of data")
    s0, H = model.episodic(NAME)
    est = certify_estimate(model.S, model.A, H, model.N, float(model.S) * model.A * min(model.S, 64))
    check_estimate(est, "model", *resource_limits(args))
    policy = model_policy(read_policy(args.policy, "policy", args), args.policy, "policy", model, H)
    counts = _load_counts(args, model, H)
    cert = certify(
        policy,
        counts,
        model.r,
        model.c,
        model.c_bar,
        s0,
        H,
        delta=args.delta,
        radius=args.radius,
        sampling=args.sampling,
        actions=model.actions,
    )
    if args.json:
        print(json.dumps(certificate_json(cert)))
    else:
        print_certificate(cert, model)
    return EXIT_OK if cert.safe else EXIT_INFEASIBLE


__all__ = ["DESCRIPTION", "HELP", "NAME", "add_options", "run"]
