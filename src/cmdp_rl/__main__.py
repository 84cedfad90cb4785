"""``python -m cmdp_rl``: the ``cmdp-rl`` command line."""

from .cli import main

raise SystemExit(main())
