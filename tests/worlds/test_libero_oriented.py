"""The overlap test of boxes turned about the vertical (``worlds/libero/oriented.py``),
against an oracle written apart from it: two such boxes overlap when their height ranges do
and their footprints (rectangles) do, a corner of one inside the other or two edges
crossing. No simulator needed."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.tiers import examples
from worlds.libero.oriented import boxes_overlap

Box = tuple[float, float, float, float, float, float, float]
"""x, y, z, half x, half y, half z, yaw."""


def _axes(yaw: float) -> np.ndarray:
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]])


def _corners(box: Box) -> list[tuple[float, float]]:
    x, y, _, hx, hy, _, yaw = box
    c, s = math.cos(yaw), math.sin(yaw)
    return [
        (x + a * hx * c - b * hy * s, y + a * hx * s + b * hy * c)
        for a, b in ((-1, -1), (1, -1), (1, 1), (-1, 1))
    ]


def _inside(point: tuple[float, float], polygon: list[tuple[float, float]]) -> bool:
    signs = []
    for (ax, ay), (bx, by) in zip(polygon, polygon[1:] + polygon[:1], strict=True):
        signs.append((bx - ax) * (point[1] - ay) - (by - ay) * (point[0] - ax))
    return all(s >= 0 for s in signs) or all(s <= 0 for s in signs)


def _cross(p, q, r, s) -> bool:  # type: ignore[no-untyped-def]
    def side(a, b, c):  # type: ignore[no-untyped-def]
        return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])

    return side(p, q, r) * side(p, q, s) < 0 and side(r, s, p) * side(r, s, q) < 0


def oracle(a: Box, b: Box) -> bool:
    if abs(a[2] - b[2]) > a[5] + b[5]:
        return False
    pa, pb = _corners(a), _corners(b)
    if any(_inside(p, pb) for p in pa) or any(_inside(p, pa) for p in pb):
        return True
    edges_a = list(zip(pa, pa[1:] + pa[:1], strict=True))
    edges_b = list(zip(pb, pb[1:] + pb[:1], strict=True))
    return any(_cross(p, q, r, s) for p, q in edges_a for r, s in edges_b)


coordinate = st.floats(-0.4, 0.4)
half = st.floats(0.005, 0.15)
boxes = st.tuples(
    coordinate, coordinate, coordinate, half, half, half, st.floats(-math.pi, math.pi)
)


def _margin(a: Box, b: Box) -> float:
    """How far from touching the two footprints are, roughly (cases within a hair of
    touching are skipped: either answer is right there)."""
    nudged = [oracle((*a[:3], a[3] + d, a[4] + d, a[5] + d, a[6]), b) for d in (-1e-6, 1e-6)]
    return 0.0 if nudged[0] != nudged[1] else 1.0


def turned_overlap(a: Box, b: Box) -> bool:
    """``boxes_overlap`` of two boxes given as (x, y, z, half sizes, yaw)."""
    return boxes_overlap(
        *(np.array(a[:3]), _axes(a[6]), np.array(a[3:6])),
        *(np.array(b[:3]), _axes(b[6]), np.array(b[3:6])),
    )


@settings(max_examples=examples(1500), deadline=None)
@given(a=boxes, b=boxes)
def test_turned_boxes_overlap_as_their_footprints_and_heights_do(a: Box, b: Box) -> None:
    if _margin(a, b) == 0.0:
        return
    got = turned_overlap(a, b)
    assert got == oracle(a, b)


def test_a_turned_panel_does_not_reach_as_far_as_its_axis_aligned_box() -> None:
    """A panel 22 cm wide, 2 cm deep, turned 6 degrees (the microwave's top): a box 1 cm in
    front of its face misses it, though the axis-aligned box around the panel reaches 2.3
    cm further out and meets it."""
    yaw = math.radians(6.0)
    panel = (0.0, 0.0, 0.0, 0.11, 0.01, 0.01, yaw)
    c, s = math.cos(yaw), math.sin(yaw)
    front = np.array([-s, c]) * (0.01 + 0.01 + 0.01)  # 1 cm clear of the face, along its normal
    box = (float(front[0]), float(front[1]), 0.0, 0.05, 0.01, 0.01, yaw)
    assert not oracle(panel, box)
    assert not turned_overlap(panel, box)
    reach_y = 0.11 * s + 0.01 * c  # the axis-aligned box's half height in y
    assert reach_y > float(front[1]) - 0.01 * c - 0.05 * s


def test_boxes_apart_only_along_the_turned_ones_faces_do_not_overlap() -> None:
    """A square turned 45 degrees, its face 1.3 cm clear of the corner of an upright one:
    their projections on the upright square's axes overlap; only the turned one's face
    normals separate them."""
    a = (0.0, 0.0, 0.0, 0.1, 0.1, 0.1, 0.0)
    b = (0.2, 0.2, 0.0, 0.1, 0.1, 0.1, math.pi / 4)
    assert not oracle(a, b)
    assert not turned_overlap(a, b)
