"""The library's exception classes, in a module without imports, so that the command line
catches them without loading NumPy (``cmdp-rl --help`` stays fast).

Each is re-exported where it was first defined: :class:`CMDPInputError` by
:mod:`cmdp_rl.validation` and the top-level package, :class:`SolverError` by
:mod:`cmdp_rl.planning` and :mod:`cmdp_rl.planning.result`.
"""


class CMDPInputError(ValueError):
    """Bad input to a cmdp-rl function: the message names the culprit and the rule."""


class SolverError(RuntimeError):
    """The LP solver stopped for a reason other than optimality or infeasibility."""


__all__ = ["CMDPInputError", "SolverError"]
