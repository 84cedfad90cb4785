"""The installed distribution's version, read once (``cmdp_rl.__version__``, ``cmdp-rl --version``)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    VERSION: str = version("cmdp-rl")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without installing
    VERSION = "0.0.0+unknown"

__all__ = ["VERSION"]
