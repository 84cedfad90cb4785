"""Table cells never show ``nan`` (they say ``n/a``, and the table's note says why) or ``-0``."""

from __future__ import annotations

import math

from cmdp_rl.experiments.aggregate import _num, fmt, plus_minus, pm


def test_cells_say_na_and_never_minus_zero() -> None:
    nan = math.nan
    assert fmt(nan, ",.0f") == "n/a" and _num(nan) == "n/a" and plus_minus(nan, nan) == "n/a"
    assert pm(nan, nan, ",.1f") == "n/a" and pm(2.0, nan, ".1f") == "2.0" and pm(2.0, 0.25, ".2f") == "2.00 ± 0.25"
    for x, spec in ((-0.0003, ",.0f"), (-0.4, ".0f"), (-0.0, ".2f"), (-0.00004, ".2%"), (-1e-9, ".3f")):
        assert not fmt(x, spec).startswith("-"), (x, spec, fmt(x, spec))
    assert fmt(-1234.5, ",.1f") == "-1,234.5" and fmt(-0.5, ".1f") == "-0.5"
    assert fmt(math.inf, ".1f") == "inf"
