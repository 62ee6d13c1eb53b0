"""The askew grasps of a low box (``worlds/libero/askew.py``) without a simulator: every
grasp it offers has the fingers closing on the box's two long faces, away from their ends,
and opening wide enough round it, and they come least turn first, then least slide."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.tiers import examples
from worlds.libero.askew import TURN_STEP_DEG, grips
from worlds.libero.geometry import GRIP_END_M
from worlds.libero.rim_arc import FINGER_OPEN_M


def faces_met(half_long: float, half_short: float, turn: float, slide: float) -> list[float]:
    """Where (along the long faces, from their middle) the line through the point ``slide``
    along the box's middle, turned ``turn`` off square across it, meets the two long faces:
    the box's own intersection, walked from the point both ways."""
    direction = (math.sin(turn), math.cos(turn))  # (along the length, across it)
    met = []
    for way in (1.0, -1.0):
        t = half_short / direction[1]  # to the face at +-half_short across
        met.append(slide + way * t * direction[0])
    return met


def width_round(half_long: float, half_short: float, turn: float) -> float:
    """How wide the box is along the fingers' closing direction turned ``turn``: the
    furthest apart its corners lie along it."""
    corners = [(a * half_long, b * half_short) for a in (-1, 1) for b in (-1, 1)]
    along = [x * math.sin(turn) + y * math.cos(turn) for x, y in corners]
    return max(along) - min(along)


boxes = st.tuples(st.floats(0.005, 0.037), st.floats(1.0, 4.0)).map(
    lambda t: (t[0] * t[1], t[0])  # (half its length, half its width): never the longer
)


@settings(max_examples=examples(300), deadline=None)
@given(box=boxes)
def test_every_askew_grasp_closes_on_the_long_faces_and_fits_the_open_fingers(
    box: tuple[float, float],
) -> None:
    half_long, half_short = box
    offered = grips(half_long, half_short)
    for turn, slide in offered:
        assert width_round(half_long, half_short, turn) <= FINGER_OPEN_M - 0.004 + 1e-12
        for at in faces_met(half_long, half_short, turn, slide):
            assert abs(at) <= half_long - GRIP_END_M + 1e-12, (turn, slide, at)
    keys = [(round(abs(turn), 9), abs(slide)) for turn, slide in offered]
    assert keys == sorted(keys)  # least turn first, then least slide
    square = [slide for turn, slide in offered if turn == 0.0]
    if half_long - GRIP_END_M >= 0.0 and 2 * half_short <= FINGER_OPEN_M - 0.004:
        assert 0.0 in square  # square across the middle whenever it fits at all


def test_the_cream_cheese_box_is_offered_the_turn_that_cleared_the_milk() -> None:
    """libero_10 task 1, state 44 (8.1 x 4.3 cm): turned 25 degrees and slid 2.5 cm, the
    grasp the simulator picked it with; 27.5 still fits the fingers, 30 does not."""
    offered = grips(0.0406, 0.0213)
    turns = {round(math.degrees(abs(turn)), 1) for turn, _ in offered}
    assert max(turns) == 27.5 and 30.0 not in turns
    assert any(
        math.isclose(abs(turn), math.radians(25.0)) and math.isclose(abs(slide), 0.025)
        for turn, slide in offered
    )
    assert all(math.isclose(turn / TURN_STEP_DEG, round(turn / TURN_STEP_DEG)) for turn in turns)
