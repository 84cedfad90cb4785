"""Pieces the command line's commands share: models by path or name, their one-line summary,
number and certificate formatting, output-file checks, ``.npy`` files, the first-run
compilation note, the sweeps' overrides and interrupts. (No import of the parser or the entry
point: the commands' modules import this one. Nothing here loads NumPy when it is imported:
the parser imports the commands' modules, and ``cmdp-rl --help`` stays light.)"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from cmdp_rl.cli.options import parse_thresholds
from cmdp_rl.plumbing.errors import CMDPInputError
from cmdp_rl.plumbing.limits import human_bytes, worker_processes

if TYPE_CHECKING:
    import numpy as np

    from cmdp_rl.model.cmdp import CMDP

T = TypeVar("T")


def check_output_file(path: str, force: bool, option: str) -> Path:
    """An output file path that can be written ([`check_output_path`][cmdp_rl.plumbing.paths.check_output_path],
    the one rule of every output file option): not a name ending in ``/``, not a folder, device,
    FIFO or socket (never replaced, even with ``--force``; ``/dev/null`` is written to directly),
    its folder exists and is writable, and an existing file is only replaced with ``--force``
    (checked before any work; ``force=True`` also for a file that is appended to, such as a run log)."""
    from cmdp_rl.plumbing.paths import check_output_path

    return check_output_path(path, option, force)


def given(args: argparse.Namespace, dest: str) -> bool:
    """Whether option ``dest`` was given on the command line (whatever its value; the parser
    records them in ``args.given``). A namespace built without the parser: whether its value is
    set (not ``None``, ``False`` or empty)."""
    recorded = getattr(args, "given", None)
    if recorded is not None:
        return dest in recorded
    return getattr(args, dest, None) not in (None, False, "", ())


def refuse_given(args: argparse.Namespace, dests: Sequence[str], rule: str) -> None:
    """Refuse the first of ``dests`` that was given, naming it: ``--OPTION: RULE`` (an option
    that would be ignored in this mode)."""
    for dest in dests:
        if given(args, dest):
            raise CMDPInputError(f"--{dest.replace('_', '-')}: {rule}")


def _same_file(a: str, b: str) -> bool:
    """Whether two paths name one file: the same real path (``./x`` and ``x``, a symlink and its
    target), or the same existing file (a hard link)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist yet
        return False


def check_distinct_paths(
    outputs: Sequence[tuple[str, str | os.PathLike[str] | None]],
    inputs: Sequence[tuple[str, str | os.PathLike[str] | None]] = (),
) -> None:
    """Refuse, before any work, two outputs that are one file, or an output that is an input:
    ``outputs`` and ``inputs`` are ``(name, path)`` pairs (``name`` as the message shows it, e.g.
    ``"--policy-out"``; a ``None`` path is skipped). Paths are compared by their real path
    (``./x`` and ``x``, symlinks) and, for files that exist, by ``os.path.samefile``."""
    seen: list[tuple[str, str]] = []
    for name, path in outputs:
        if path is None:
            continue
        p = os.fspath(path)
        for other, q in seen:
            if _same_file(p, q):
                raise CMDPInputError(f"{name}: {p} is also the {other} file; give each output its own path")
        for other, q in ((n, os.fspath(x)) for n, x in inputs if x is not None):
            if _same_file(p, q):
                raise CMDPInputError(f"{name}: {p} is the {other} file, an input it would overwrite; give another path")
        seen.append((name, p))


def parse_env_kwargs(text: str | None, option: str = "env-kwargs") -> dict[str, Any]:
    """``--env-kwargs``: a JSON object of keywords for ``gymnasium.make`` (none when not given),
    whose numbers are finite, of normal size and 64-bit integers (``cmdp_rl.plumbing.numbers``)."""
    from cmdp_rl.plumbing.numbers import NumberError, read_json_object

    if text is None:
        return {}
    try:
        return read_json_object(text)
    except NumberError as exc:
        raise CMDPInputError(f"{option}: {exc}") from None


#: compiled functions whose cache files mark the kernels as compiled (``folder/module.function`` under
#: ``cmdp_rl/``; numba names a cache file ``module.function-LINE.pyXY.nbi`` in the module's ``__pycache__``)
COMPILED_MARKS: tuple[str, ...] = (
    "kernels/colgen_loop.colgen_loop",
    "learners/batched._crl_batch",
    "kernels/sampling.rollout_compiled",
)


def _kernels_cached() -> bool:
    """Whether numba's on-disk cache holds the compiled kernels (else the first call compiles them)."""
    pkg = Path(__file__).resolve().parent.parent  # the cmdp_rl package
    return all(any((pkg / Path(m).parent / "__pycache__").glob(f"{Path(m).name}-*.nbi")) for m in COMPILED_MARKS)


def note_compilation() -> None:
    # a note for a person at a terminal: a script reading stderr (or a test) gets only the one
    # refusal line a bad input produces, even on a fresh install
    if sys.stderr.isatty() and not _kernels_cached():
        print("cmdp-rl: compiling the numerical kernels (first run only, up to about a minute) ...", file=sys.stderr)


#: a job estimated to run longer than this says so when it starts
ANNOUNCE_SECONDS = 60.0


def announce_long(command: str, what: str, seconds: float, note: str = "finished runs are kept if you stop it") -> None:
    """Say on stderr, before the work starts, that ``command`` will take more than a minute (the
    estimate is the resource guard's, an upper bound: the measured full reproduction took 2 min 15 s
    where it estimates 7.6 min)."""
    from cmdp_rl.plumbing.limits import human_seconds

    if seconds > ANNOUNCE_SECONDS:
        print(
            f"cmdp-rl {command}: {what}: more than a minute of work (estimated at most {human_seconds(seconds)}); "
            + note,
            file=sys.stderr,
        )


def sweep_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The sweep options given on the command line (``--runs/--jobs/--seed/--backend/--address``);
    an ``--address`` implies the Ray backend."""
    changes = {
        k: getattr(args, k) for k in ("runs", "jobs", "seed", "backend", "address") if getattr(args, k) is not None
    }
    if args.address is not None and args.backend is None:
        changes["backend"] = "ray"
    return changes


def sweep_driver(what: str, runs: int, cfg: Any) -> str:
    """The options a sweep's estimate names: ``jobs/`` first when it starts worker processes
    (each counts its own footprint, so fewer jobs need less memory)."""
    return f"jobs/{what}" if worker_processes(cfg.jobs, runs, cfg.backend) else what


@contextmanager
def resumable(command: str, out: Path) -> Iterator[None]:
    """A resumable sweep of ``cmdp-rl command`` into ``out``: when it is interrupted, say on stderr
    that its finished runs are kept and how to resume, then let the interrupt go on."""
    try:
        yield
    except KeyboardInterrupt:
        print(
            f"cmdp-rl {command}: finished runs are saved in {out}/runs; rerun the same command to resume",
            file=sys.stderr,
        )
        raise


def save_npy(path: Path, array: np.ndarray) -> None:
    """``array`` as a ``.npy`` file, atomically; a failed or short write is one line naming ``path``
    (through [`atomic_stream`][cmdp_rl.plumbing.atomic.atomic_stream]: NumPy's ``fwrite`` to a real file
    loses the error of a write cut short by a file-size limit)."""
    import numpy as np

    from cmdp_rl.plumbing.atomic import atomic_stream

    with atomic_stream(path) as fh:
        np.save(fh, array)


def save_counts(path: Path, counts: Any, S: int, A: int) -> None:
    """Transition counts to ``path``: ``FILE.npz`` an ``(S*A, S)`` CSR matrix
    (``scipy.sparse.save_npz``, what ``cmdp-rl certify --counts`` reads), any other name a dense
    ``(S, A, S)`` int64 ``.npy`` array. ``counts``: dense ``(S, A, S)`` or sparse ``(S*A, S)``."""
    import numpy as np
    import scipy.sparse as sp

    from cmdp_rl.model.sparse import dense_counts, sparse_counts
    from cmdp_rl.plumbing.atomic import atomic_path

    if path.suffix == ".npz":
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            sp.save_npz(fh, sparse_counts(counts, S, A))
        return
    save_npy(path, np.asarray(dense_counts(counts, S, A), dtype=np.int64).reshape(S, A, S))


def load_npy(path: str, option: str, args: argparse.Namespace | None = None) -> np.ndarray:
    """A finite array of integers or reals from a ``.npy`` file, or a one-line error naming the
    option and the file: missing, truncated or damaged (NumPy's decoder, behind
    [`decoding`][cmdp_rl.plumbing.decoding.decoding]), an ``.npz`` archive or pickled data instead of
    an array, other data than numbers, a NaN or an infinity (with its index). The array's size is
    checked from the file's header against the command's ``--max-memory`` (when it has one; else
    the default limit) before its data are read."""
    import numpy as np

    from cmdp_rl.plumbing.decoding import decoding
    from cmdp_rl.plumbing.limits import check_estimate, npy_file_estimate
    from cmdp_rl.plumbing.paths import check_input_path

    label = f"{option}: {path}"
    check_input_path(path, label, "an .npy file")
    check_estimate(npy_file_estimate(path, label), label, *_limits_of(args))
    with open(path, "rb") as fh:  # ours to close, whatever NumPy's reader raises
        with decoding(label, "not a readable .npy array"):
            loaded = np.load(fh, allow_pickle=False)
        if not isinstance(loaded, np.ndarray):  # an .npz archive
            raise CMDPInputError(f"{label}: an .npz archive, not an .npy array (np.save writes one)")
    if loaded.dtype.kind not in "iuf":
        raise CMDPInputError(f"{label}: must hold integers or real numbers, not {loaded.dtype.name} data")
    bad = ~np.isfinite(loaded)
    if bad.any():
        idx = [int(i) for i in np.argwhere(bad)[0]]
        raise CMDPInputError(f"{label}: entry {idx} is {loaded[tuple(idx)].item()!r}; entries must be finite")
    return loaded


def checked_content(label: str, check: Callable[..., T], *args: Any) -> T:
    """``check(*args)`` on arrays read from a file; its one-line refusal is prefixed with ``label``
    (e.g. ``"policy: FILE"``), so the message names the file as well as the rule."""
    try:
        return check(*args)
    except CMDPInputError as exc:
        raise CMDPInputError(f"{label}: {exc}") from None


def fmt(x: Sequence[float] | np.ndarray) -> str:
    """A vector as ``[v, ...]`` with 6 significant digits."""
    import numpy as np

    return "[" + ", ".join(f"{v:.6g}" for v in np.asarray(x, dtype=float)) + "]"


#: the suffixes of transition tables (CSV, Parquet: ``cmdp_rl.model.tables``) among MODEL files
TABLE_SUFFIXES = (".csv", ".parquet")
#: the options a transition table takes its horizon or discount, thresholds and start from
TABLE_FILLS = ("horizon", "gamma", "c_bar", "s0")


def is_table(arg: str | None) -> bool:
    """Whether MODEL ``arg`` is a transition table: an existing file named ``*.csv`` or ``*.parquet``."""
    return arg is not None and Path(arg).suffix.lower() in TABLE_SUFFIXES and os.path.isfile(arg)


def load_model(arg: str, args: argparse.Namespace | None = None) -> CMDP:
    """A model from a ``.npz`` path, a CSV/Parquet transition table, a model checker's file or a
    registered problem ([`base_model`][cmdp_rl.cli.common.base_model]), with the reach-avoid products of ``--avoid`` and
    ``--reach`` when the command has them and they were given
    ([`apply_reach`][cmdp_rl.cli.reach.apply_reach])."""
    from cmdp_rl.cli.reach import apply_reach

    return apply_reach(base_model(arg, args), args)


def base_model(arg: str, args: argparse.Namespace | None = None) -> CMDP:
    """A model from a ``.npz`` path, a CSV/Parquet transition table (``*.csv``, ``*.parquet``;
    [`table_model`][cmdp_rl.cli.common.table_model]), a model checker's file (``*.prism``, ``*.nm``,
    ``*.pm``, ``*.jani``, ``*.drn``; [`checker_model`][cmdp_rl.cli.checker_model.checker_model]) or a
    registered problem spec such as ``1a`` or ``garnet:S=50,seed=1`` (an existing file of that name
    wins). A spec is checked against the command's ``--max-memory`` / ``--max-time`` (when it has
    them) from its parameters, before it is built. ``--horizon``/``--gamma``/``--c-bar``/``--s0`` are
    for a table or a model checker's file only, ``--constants``/``--reward``/``--cost`` for the
    latter only: a model that carries them refuses them, naming the option."""
    from cmdp_rl.cli.checker_model import CHECKER_FILES, checker_format, checker_model, refuse_checker_names
    from cmdp_rl.envs.registry import PROBLEMS, is_spec, make
    from cmdp_rl.model.cmdp import CMDP
    from cmdp_rl.plumbing.limits import check_estimate, model_file_estimate

    if os.path.exists(arg) or not is_spec(arg):
        if not os.path.exists(arg):
            raise CMDPInputError(
                f"model: {arg!r} is neither a file nor a registered problem (cmdp-rl envs lists them: "
                f"{', '.join(PROBLEMS)}); a transition table is a .csv or .parquet file, a model checker's file "
                f"{CHECKER_FILES}"
            )
        if checker_format(arg) is not None:
            return checker_model(arg, args)
        refuse_checker_names(args, f"the {'transition table' if is_table(arg) else 'model file'} {arg}")
        if is_table(arg):
            return table_model(arg, args)
        _refuse_fills(args, f"the model file {arg} carries its own")
        if os.path.isfile(arg):  # the arrays' sizes from the members' headers, before any data are read
            check_estimate(model_file_estimate(arg, f"model file {arg}"), f"model file {arg}", *_limits_of(args))
        return CMDP.load(arg)
    refuse_checker_names(args, f"the registered problem {arg}")
    hint = " (a registered problem takes overrides such as NAME:H=5,c_bar=1)"
    _refuse_fills(args, f"the registered problem {arg} carries its own", hint)
    max_memory, max_seconds = _limits_of(args)
    return make(arg, max_memory=max_memory, max_seconds=max_seconds)


def _fills(args: argparse.Namespace | None) -> dict[str, Any]:
    """``--horizon``, ``--gamma``, ``--c-bar``, ``--s0`` as given (``None``: not given, or not an
    option of the command)."""
    return {k: None if args is None else getattr(args, k, None) for k in TABLE_FILLS}


def _refuse_fills(args: argparse.Namespace | None, carries: str, hint: str = "") -> None:
    """Refuse the first table option given for a model that is not a table."""
    what = {"horizon": "horizon", "gamma": "horizon or discount", "c_bar": "thresholds", "s0": "start"}
    for key, value in _fills(args).items():
        if value is not None:
            raise CMDPInputError(
                f"--{key.replace('_', '-')}: {carries} {what[key]}; the option is for a MODEL that is a "
                f"CSV/Parquet transition table or a model checker's file{hint}"
            )


def table_model(path: str, args: argparse.Namespace | None) -> CMDP:
    """A model from the transition table ``path`` ([`cmdp_rl.model.tables`][cmdp_rl.model.tables]) and
    what a table does not carry, from the command's options: ``--horizon H`` or ``--gamma G`` (those
    the command has), ``--c-bar X[/Y...]`` (one per cost column; none without cost columns) and
    ``--s0 S``. One line names every missing option, or the option whose value does not fit the table."""
    from cmdp_rl.model.cmdp import CMDP
    from cmdp_rl.model.table_rows import read_table

    fills = _fills(args)
    H, gamma, c_bar_text, s0 = fills["horizon"], fills["gamma"], fills["c_bar"], fills["s0"]
    if H is not None and gamma is not None:
        raise CMDPInputError("--horizon/--gamma: give one (a finite horizon or a discount), not both")
    kernel, r, c, actions = read_table(path)
    S, N = r.shape[0], c.shape[0]
    missing = []
    if H is None and gamma is None:
        lengths = [opt for key, opt in (("horizon", "--horizon H"), ("gamma", "--gamma G")) if hasattr(args, key)]
        missing.append(" (or ".join(lengths) + ")" * (len(lengths) - 1))
    if c_bar_text is None and N:
        missing.append(f"--c-bar X{'/Y' * (N - 1)} (one threshold per cost column)")
    if s0 is None:
        missing.append("--s0 S")
    if missing:
        listed = ", ".join(missing[:-1]) + " and " * (len(missing) > 1) + missing[-1]
        raise CMDPInputError(
            f"model: {path} is a transition table, which carries no horizon, thresholds or start state: give {listed}"
        )
    c_bar = [] if c_bar_text is None else parse_thresholds(c_bar_text, "c-bar")
    if len(c_bar) != N:
        raise CMDPInputError(
            f"--c-bar: {path} has {N} cost column{'s' * (N != 1)}, so {N} threshold{'s' * (N != 1)} "
            f"X{'/Y' * max(N - 1, 0)}; got {len(c_bar)}"
        )
    if s0 >= S:
        raise CMDPInputError(f"--s0: {path} has S = {S} states (0 .. {S - 1}), got {s0}")
    try:
        return CMDP(kernel, r, c, c_bar, s0, H, gamma, names=Path(path).stem, actions=actions)
    except CMDPInputError as exc:  # e.g. a horizon whose (H, S, A) policies cannot fit in memory
        raise CMDPInputError(f"model: {path}: {exc}") from None


def _limits_of(args: argparse.Namespace | None) -> tuple[float, float]:
    """The command's ``--max-memory`` and ``--max-time`` when it has them, else the defaults."""
    from cmdp_rl.plumbing.limits import DEFAULT_MAX_MEMORY, DEFAULT_MAX_SECONDS

    if args is not None and hasattr(args, "max_memory"):
        return resource_limits(args)
    return float(DEFAULT_MAX_MEMORY), DEFAULT_MAX_SECONDS


def resource_limits(args: argparse.Namespace) -> tuple[float, float]:
    """The command's ``--max-memory`` (bytes) and ``--max-time`` (seconds)."""
    return float(args.max_memory), float(args.max_time)


def model_summary(label: str, model: CMDP) -> str:
    """``label: S=.. A=.. H=..|gamma=.. N=.. s0=.., dense|sparse, nnz=.., <memory>`` (one line)."""
    from cmdp_rl.model.cmdp import length_label, start_label

    return (
        f"{label}: S={model.S} A={model.A} {length_label(model)} N={model.N} s0={start_label(model)}, "
        f"{model.layout}, nnz={model.nnz:,}, {human_bytes(model.nbytes)}"
    )


def certificate_json(cert: Any) -> dict[str, Any]:
    """The certificate as JSON: ``value`` [lo, hi], ``costs`` [[lo, hi], ...], ``safe``, ``delta_prime``
    (the smallest per-entry failure probability used; ``delta_prime_max`` the largest), ``radius``,
    ``sampling``, ``samples``, ``delta``."""
    return {
        "value": [cert.value_lo, cert.value_hi],
        "costs": [[float(lo), float(hi)] for lo, hi in zip(cert.cost_lo, cert.cost_hi, strict=True)],
        "safe": cert.safe,
        "delta_prime": float(cert.delta_prime.min()),
        "delta_prime_max": float(cert.delta_prime.max()),
        "radius": cert.radius,
        "sampling": cert.sampling,
        "samples": cert.samples,
        "delta": cert.delta,
    }


def print_certificate(cert: Any, model: Any) -> None:
    """The certificate as text: data, value and cost intervals, verdict."""
    print(
        f"data        {cert.samples:,} transitions; radius {cert.radius}, sampling {cert.sampling}, "
        f"delta {cert.delta:g} (per entry {cert.delta_prime.min():.3g} .. {cert.delta_prime.max():.3g})"
    )
    print(f"value       [{cert.value_lo:.6f}, {cert.value_hi:.6f}]")
    for i in range(model.N):
        print(f"cost {i:<6} [{cert.cost_lo[i]:.6f}, {cert.cost_hi[i]:.6f}]  (threshold {model.c_bar[i]:g})")
    verdict = "certified safe" if cert.safe else "NOT certified safe"
    print(f"verdict     {verdict} with probability >= {1 - cert.delta:g}")


__all__ = [
    "TABLE_FILLS",
    "TABLE_SUFFIXES",
    "base_model",
    "certificate_json",
    "check_distinct_paths",
    "check_output_file",
    "checked_content",
    "fmt",
    "given",
    "is_table",
    "load_model",
    "load_npy",
    "model_summary",
    "note_compilation",
    "parse_env_kwargs",
    "parse_thresholds",
    "print_certificate",
    "refuse_given",
    "resource_limits",
    "resumable",
    "save_counts",
    "save_npy",
    "sweep_driver",
    "sweep_overrides",
    "table_model",
]
