"""Merging the breakpoints of a certified concave curve, on hand-made curves (heights worked out by hand)."""

from __future__ import annotations

import numpy as np
import pytest

from cmdp_rl import CMDPInputError
from cmdp_rl.planning.breakpoints import count_vertices, merge_breakpoints

# (0, 0), (1, 1), (2, 1.9), (4, 2): the vertex at x = 1 lies 1 - 0.95 = 0.05 above the chord from
# (0, 0) to (2, 1.9); the one at x = 2 lies 1.9 - 4/3 = 0.5667 above the chord from (1, 1) to (4, 2),
# and, once x = 1 is merged, 1.9 - 1 = 0.9 above the chord from (0, 0) to (4, 2).
CURVE = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 1.9], [4.0, 2.0]])


def test_a_vertex_within_tol_is_merged_and_its_height_joins_the_certificate() -> None:
    kept, cert = merge_breakpoints(CURVE, np.zeros(3), 0.06)
    np.testing.assert_array_equal(kept, CURVE[[0, 2, 3]])
    np.testing.assert_allclose(cert, [0.05, 0.0], atol=1e-15)


def test_nothing_is_merged_below_the_smallest_height_or_when_certificates_use_up_tol() -> None:
    for cert_in, tol in [(np.zeros(3), 0.04), (np.array([0.02, 0.0, 0.0]), 0.06)]:  # 0.05 + 0.02 > 0.06
        kept, cert = merge_breakpoints(CURVE, cert_in, tol)
        np.testing.assert_array_equal(kept, CURVE)
        np.testing.assert_array_equal(cert, cert_in)


def test_merges_chain_until_the_chord_would_leave_tol() -> None:
    # tol 1: x = 1 first (cost 0.05), then x = 2 (0.9 + 0.05 = 0.95 <= 1): one segment, certificate 0.95
    kept, cert = merge_breakpoints(CURVE, np.zeros(3), 1.0)
    np.testing.assert_array_equal(kept, CURVE[[0, 3]])
    np.testing.assert_allclose(cert, [0.95])
    # tol 0.9: the second merge would cost 0.95
    kept, _ = merge_breakpoints(CURVE, np.zeros(3), 0.9)
    assert len(kept) == 3


def test_collinear_points_go_and_the_inputs_stay() -> None:
    x = np.arange(6.0)
    pts = np.column_stack([x, np.minimum(2 * x, 5.0)])  # V = 0, 2, 4, 5, 5, 5: the kink at x = 2.5
    before = pts.copy()
    kept, cert = merge_breakpoints(pts, np.zeros(5), 0.0)
    # x = 1 and x = 4 lie on straight runs (height 0); x = 2 and x = 3 are 0.5 above their chords
    np.testing.assert_array_equal(kept[:, 0], [0.0, 2.0, 3.0, 5.0])
    np.testing.assert_array_equal(pts, before)
    assert np.all(cert == 0.0)
    assert count_vertices([tuple(p) for p in pts], 0.0) == 4
    assert count_vertices([tuple(p) for p in pts], 0.5) == 2 and count_vertices([(0.0, 1.0)], 0.0) == 1


@pytest.mark.parametrize(
    "points, certificates, tol, fragment",
    [
        (np.zeros((1, 2)), np.zeros(0), 0.0, "points: expected shape (B, 2)"),
        (np.zeros((3, 3)), np.zeros(2), 0.0, "points: expected shape (B, 2)"),
        (np.array([[0.0, 0.0], [0.0, 1.0]]), np.zeros(1), 0.0, "strictly increasing"),
        (CURVE, np.zeros(2), 0.0, "certificates: expected shape (3,)"),
        (CURVE, np.array([0.0, -1.0, 0.0]), 0.0, "certificates: must be >= 0"),
        (CURVE, np.zeros(3), -1e-3, "tol: must be >= 0"),
        (CURVE, np.array([0.0, np.inf, 0.0]), 0.0, "must be finite"),
    ],
)
def test_bad_input_is_refused(points, certificates, tol, fragment) -> None:
    with pytest.raises(CMDPInputError) as err:
        merge_breakpoints(points, certificates, tol)
    assert fragment in str(err.value)
