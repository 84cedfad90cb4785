"""The library's exception classes, in a module without imports, so that the command line
catches them without loading NumPy (``cmdp-rl --help`` stays fast).

Each is re-exported where it was first defined: [`CMDPInputError`][cmdp_rl.plumbing.errors.CMDPInputError] by
[`cmdp_rl.plumbing.validation`][cmdp_rl.plumbing.validation] and the top-level package,
[`SolverError`][cmdp_rl.plumbing.errors.SolverError] by
``cmdp_rl.planning`` and [`cmdp_rl.planning.result`][cmdp_rl.planning.result].
"""


def one_line(text: object) -> str:
    """``text`` as one printable line, for a message: every run of whitespace (newlines, tabs,
    Unicode line separators) becomes one space, every other unprintable character (an escape
    sequence's ``ESC``, ``NUL``, a bidirectional override) is written as its escape (``\\x1b``),
    and leading and trailing space is dropped. Text that is already one printable line is
    returned as it is. Used wherever a message embeds foreign text (an environment's exception)
    and by the command line for every line it prints on stderr."""
    s = str(text)
    if s.isprintable():
        return s.strip()
    out: list[str] = []
    space = False
    for ch in s:
        if ch.isspace():
            space = True
            continue
        if space and out:
            out.append(" ")
        space = False
        out.append(ch if ch.isprintable() else ascii(ch)[1:-1])
    return "".join(out)


def foreign(exc: BaseException) -> str:
    """An exception raised by foreign code (an environment, Gymnasium) for a message:
    ``Type: text`` on one line (``one_line``), or the type alone when the text is empty."""
    text = one_line(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class CMDPInputError(ValueError):
    """Bad input to a cmdp-rl function: the message names the culprit and the rule."""


class CMDPTypeError(CMDPInputError, TypeError):
    """Bad input of the wrong kind (e.g. a string where a model is expected): a
    [`CMDPInputError`][cmdp_rl.plumbing.errors.CMDPInputError] that is also a ``TypeError``, so code that caught
    the ``TypeError`` these checks raised before keeps working."""


class SolverError(RuntimeError):
    """The LP solver stopped for a reason other than optimality or infeasibility."""


__all__ = ["CMDPInputError", "CMDPTypeError", "SolverError", "foreign", "one_line"]
