"""The resting lean of a thin thing in a slot (``worlds/libero/slot_lean.py``), on boxes
given here (no simulator): the oracle is the closed form of a box whose bottom stands on
the floor against the far wall and whose face rests on the lower wall's top edge,
``low_face - low_height * tan(lean) - thickness * cos(lean) = far_face``, and its body
(the middle of its bottom, 2 mm under it, as a book's) raised by that lean.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.tiers import examples
from worlds.libero.slot_lean import MAX_LEAN_RAD, STEP_RAD, SlotWalls, rest_lean

HEIGHT = 0.134
GRIP_DEPTH = 0.034
"""How far below its top the fingers hold it."""


def _book(thickness: float) -> tuple[np.ndarray, np.ndarray]:
    """(the corners of a book standing upright, its body), from the fingers."""
    corners = np.array(
        [
            [x * thickness / 2, y * 0.055, z]
            for x in (-1, 1)
            for y in (-1, 1)
            for z in (GRIP_DEPTH - HEIGHT, GRIP_DEPTH)
        ]
    )
    return corners, np.array([0.0, 0.0, GRIP_DEPTH - HEIGHT - 0.002])


def _walls(width: float, low: float) -> SlotWalls:
    return SlotWalls(
        floor=0.0, toward=(1.0, 0.0), low_face=width, low_top=low, far_face=0.0, far_top=0.15
    )


def _closed_form(width: float, low: float, thickness: float) -> float:
    """The lean at which the face meets the edge, by bisection of the closed form."""
    lo, hi = 0.0, math.radians(60)
    for _ in range(60):
        mid = (lo + hi) / 2
        if low * math.tan(mid) + thickness * math.cos(mid) < width:
            lo = mid
        else:
            hi = mid
    return lo


def test_the_caddys_back_compartment_leans_a_book_21_degrees_and_raises_its_body() -> None:
    """The caddy's back compartment (6.03 cm between its walls, the divider's edge 8.48 cm
    over the floor) and the book (2.87 cm thick): at rest it leans 22 degrees and its body
    is 3.5 mm higher than upright, which is what LIBERO's ``In`` lacks (3.9 mm less the
    2 mm it sits under the book's bottom)."""
    corners, body = _book(0.0287)
    found = rest_lean(_walls(0.0603, 0.0848), corners, body, 0.0)
    assert found is not None
    lean, height = found
    assert abs(lean - _closed_form(0.0603, 0.0848, 0.0287)) <= STEP_RAD
    assert 20.0 < math.degrees(lean) < 23.0
    assert height - (-0.002) > 0.0035


@settings(max_examples=examples(200), deadline=None)
@given(
    width=st.floats(0.04, 0.08),
    low=st.floats(0.04, 0.11),
    thickness=st.floats(0.01, 0.035),
    turn=st.sampled_from([0.0, math.pi]),
)
def test_the_rest_lean_is_the_closed_forms(
    width: float, low: float, thickness: float, turn: float
) -> None:
    """Wherever the face meets the edge before the book's middle has passed over its
    bottom edge (it would stand back up), or only past the most the hand leans, there is
    no rest; elsewhere the lean is the
    closed form's (within the search's step), either way round in the fingers, and the
    body is raised by half the thickness times its sine."""
    corners, body = _book(thickness)
    found = rest_lean(_walls(width, low), corners, body, turn)
    expected = _closed_form(width, low, thickness)
    tips = math.atan(thickness / HEIGHT)
    if expected < tips - STEP_RAD or expected > MAX_LEAN_RAD + STEP_RAD:
        assert found is None
        return
    if found is None:
        assert expected <= tips + STEP_RAD or expected >= MAX_LEAN_RAD - STEP_RAD
        return
    lean, height = found
    assert abs(lean - expected) <= STEP_RAD + 1e-9
    want = thickness / 2 * math.sin(lean) - 0.002 * math.cos(lean)
    assert abs(height - want) < 1e-6
