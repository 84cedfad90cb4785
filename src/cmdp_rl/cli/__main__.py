"""``python -m cmdp_rl.cli``: the ``cmdp-rl`` command line (as ``python -m cmdp_rl``)."""

from cmdp_rl.cli import console

console()
