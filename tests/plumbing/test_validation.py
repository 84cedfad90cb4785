"""Unit tests of the shared input rules of issue 33's classes 2, 3, 10 and 11 (``validation``,
``errors``): expected values from the formulas, not from the code under test."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from cmdp_rl.plumbing.errors import foreign, one_line
from cmdp_rl.plumbing.validation import (
    CMDPInputError,
    check_derived_probability,
    check_real_kind,
    distribution_rows,
    log_ratio,
    rounded_up,
)


def test_log_ratio_is_log_of_the_ratio_and_finite_beyond_it() -> None:
    assert log_ratio(8.0, 0.05) == math.log(8.0 / 0.05)  # bit for bit where the ratio is finite
    assert log_ratio(8.0, 3e-308) == pytest.approx(math.log(8.0) - math.log(3e-308))  # 8 / 3e-308 = inf
    assert math.isfinite(log_ratio(2 * 10**200 * 10**200, 1e-300))  # an int product beyond float


def test_rounded_up_never_below() -> None:
    for x in (1.23e-305, 9.99e-5, 0.5, 7.21e-306, 1.0000001e-273):
        assert float(rounded_up(x)) >= x
    assert rounded_up(1.23e-305) == "1.3e-305"


def test_check_derived_probability() -> None:
    assert check_derived_probability("delta", 0.1, 4, "delta / 4") == 0.025
    floor = sys.float_info.min * 1000
    with pytest.raises(CMDPInputError, match=r"^delta: 1e-306 is too small: .* delta must be at least 2\.3e-305"):
        check_derived_probability("delta", 1e-306, 1000, "delta / 1000")
    check_derived_probability("delta", floor * 1.001, 1000, "delta / 1000")


@pytest.mark.parametrize(
    ("data", "what"),
    [(np.array([1 + 0j]), "complex"), (np.array([True]), "booleans"), (np.array(["0.5"]), "strings"),
     (np.array([None], dtype=object), "None")],
)  # fmt: skip
def test_check_real_kind(data: np.ndarray, what: str) -> None:
    with pytest.raises(CMDPInputError, match=rf"^x: cannot be read as a numeric array: it holds .*{what}"):
        check_real_kind("x", data, data)


def test_check_real_kind_accepts_numbers() -> None:
    for data in (np.array([1, 2]), np.array([0.5], dtype=np.float32), np.array([1.0, 2], dtype=object)):
        check_real_kind("x", data, data)


def test_distribution_rows_by_dtype() -> None:
    rows32 = np.array([[0.6720976233482361, 0.28466862440109253, 0.04323370009660721]], dtype=np.float32)
    off = abs(float(rows32.astype(np.float64).sum()) - 1.0)
    assert 1e-8 < off < 1e-6  # a float32 row that float64 rules would refuse
    arr = rows32.astype(np.float64)
    distribution_rows("policy", rows32, arr, "rows")
    assert arr.sum() == pytest.approx(1.0, abs=1e-15)  # renormalized in the float64 copy
    with pytest.raises(CMDPInputError, match=r"tolerance 1e-08"):
        distribution_rows("policy", rows32.astype(np.float64), rows32.astype(np.float64), "rows")


def test_one_line() -> None:
    assert one_line("a\nb\r\n c\x1b[0m\x00") == "a b c\\x1b[0m\\x00"
    assert one_line("plain text") == "plain text"
    assert foreign(KeyError("9x9")) == "KeyError: '9x9'"
    assert foreign(RuntimeError("")) == "RuntimeError"
