"""The library's exception classes, in a module without imports, so that the command line
catches them without loading NumPy (``cmdp-rl --help`` stays fast).

Each is re-exported where it was first defined: [`CMDPInputError`][cmdp_rl.errors.CMDPInputError] by
[`cmdp_rl.validation`][cmdp_rl.validation] and the top-level package, [`SolverError`][cmdp_rl.errors.SolverError] by
``cmdp_rl.planning`` and [`cmdp_rl.planning.result`][cmdp_rl.planning.result].
"""


class CMDPInputError(ValueError):
    """Bad input to a cmdp-rl function: the message names the culprit and the rule."""


class CMDPTypeError(CMDPInputError, TypeError):
    """Bad input of the wrong kind (e.g. a string where a model is expected): a
    [`CMDPInputError`][cmdp_rl.errors.CMDPInputError] that is also a ``TypeError``, so code that caught
    the ``TypeError`` these checks raised before keeps working."""


class SolverError(RuntimeError):
    """The LP solver stopped for a reason other than optimality or infeasibility."""


__all__ = ["CMDPInputError", "CMDPTypeError", "SolverError"]
