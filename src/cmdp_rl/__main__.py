"""``python -m cmdp_rl``: the ``cmdp-rl`` command line."""

from cmdp_rl.cli import console

console()
