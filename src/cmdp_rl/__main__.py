"""``python -m cmdp_rl``: the ``cmdp-rl`` command line."""

from .cli import console

console()
