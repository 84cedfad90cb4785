"""``python -m cmdp_rl.cli``: the ``cmdp-rl`` command line (as ``python -m cmdp_rl``)."""

import sys

from . import main

sys.exit(main())
