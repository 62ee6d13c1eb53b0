"""Which top geoms of a hollow object form its rim (``worlds/libero/handles.py``), on
synthetic boxes (no simulator): a pan's long handle is left out, a mug's short one is not.

The oracle is built with the boxes: the ring's segments are known by construction, so the
test checks the indices returned against them, over random ring sizes, positions, turns of
the handle and numbers of segments.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.tiers import examples
from worlds.libero.handles import ring


def _ring(centre: np.ndarray, radius: float, top: float, n: int, bottom: float = 0.0) -> list:
    parts = []
    for k in range(n):
        angle = 2 * math.pi * k / n
        middle = centre + radius * np.array([math.cos(angle), math.sin(angle)])
        parts.append((np.array([*(middle - 0.015), bottom]), np.array([*(middle + 0.015), top])))
    return parts


def _bar(centre: np.ndarray, angle: float, start: float, end: float, z: tuple[float, float]):
    """A handle part: a box from ``start`` to ``end`` out along ``angle`` from ``centre``."""
    u = np.array([math.cos(angle), math.sin(angle)])
    a, b = centre + u * start, centre + u * end
    low, high = np.minimum(a, b) - 0.012, np.maximum(a, b) + 0.012
    return (np.array([*low, z[0]]), np.array([*high, z[1]]))


@settings(max_examples=examples(200), deadline=None)
@given(
    x=st.floats(0.3, 0.7),
    y=st.floats(-0.3, 0.3),
    radius=st.floats(0.07, 0.12),
    n=st.integers(10, 24),
    angle=st.floats(0.0, 2 * math.pi),
    rise=st.floats(0.0, 0.03),
    floor=st.integers(0, 6),
)
def test_a_long_handle_is_left_out_of_the_rim(
    x: float, y: float, radius: float, n: int, angle: float, rise: float, floor: int
) -> None:
    centre = np.array([x, y])
    wall = _ring(centre, radius, 0.03, n, bottom=-0.01)
    floor_parts = _ring(centre, 0.03, -0.001, floor, bottom=-0.011) if floor else []
    root = _bar(centre, angle, radius + 0.02, radius + 0.05, (0.0, 0.027))
    handle = _bar(centre, angle, radius + 0.03, radius + 0.16, (0.017, 0.03 + rise))
    parts = [*wall, *floor_parts, root, handle]
    got = ring(parts)
    assert sorted(got) == list(range(n))  # the wall's segments, nothing else
    rim = np.vstack([parts[i][0][:2] for i in got] + [parts[i][1][:2] for i in got])
    middle = (rim.min(axis=0) + rim.max(axis=0)) / 2
    assert float(np.linalg.norm(middle - centre)) < 0.01


@settings(max_examples=examples(200), deadline=None)
@given(
    radius=st.floats(0.035, 0.05),
    n=st.integers(8, 24),
    angle=st.floats(0.0, 2 * math.pi),
    top=st.floats(0.08, 0.13),
)
def test_a_mugs_short_handle_keeps_the_rim_as_before(
    radius: float, n: int, angle: float, top: float
) -> None:
    centre = np.array([0.5, -0.1])
    wall = _ring(centre, radius, top, n)
    handle = _bar(centre, angle, radius, radius + 0.02, (top - 0.045, top - 0.012))
    parts = [*wall, handle]
    near = [i for i, (_, high) in enumerate(parts) if high[2] >= top - 0.02]
    assert ring(parts) == near  # every part near the top, as the rim was always read


def test_nothing_and_few_parts() -> None:
    assert ring([]) == []
    one = (np.array([0.0, 0.0, 0.0]), np.array([0.01, 0.01, 0.05]))
    assert ring([one]) == [0]
