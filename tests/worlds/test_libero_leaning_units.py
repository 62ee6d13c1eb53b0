"""The leaned pick's geometry without a simulator (``worlds.libero.leaning``): the lean turns
the hand about its closing line so its axis points out and down, and the closing tried
first is the one square to the way out (only that one leans the hand out)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from worlds.libero.control import down_matrix, lean_matrix
from worlds.libero.geometry import Box
from worlds.libero.leaning import closings, lean_vector
from worlds.libero.reach import outward_hand


@pytest.mark.parametrize("yaw", [math.pi / 2, -math.pi / 2, 1.29, -1.85])
def test_the_leaned_hand_points_out_and_down_and_its_fingers_stay_level(yaw: float) -> None:
    outward = np.array([0.96, -0.28])
    hand = lean_matrix(np.array(lean_vector(yaw, math.radians(25), outward))) @ down_matrix(yaw)
    axis, closing = hand[:, 2], hand[:, 0]
    assert axis[2] == pytest.approx(-math.cos(math.radians(25)), abs=1e-6)
    assert float(axis[:2] @ outward) > 0.3  # out, away from the robot
    assert abs(closing[2]) < 1e-6  # both fingertips at the grasp's height


def test_the_closing_square_to_the_way_out_is_tried_first_when_it_fits() -> None:
    ketchup = Box(centre=(0.831, -0.240, 0.073), size=(0.037, 0.056, 0.146))
    options = closings(ketchup, (0.831, -0.240, 0.106), 0.0)
    way = math.atan2(-0.240, 0.831)
    assert abs(math.sin(options[0][0] - way)) == pytest.approx(1.0)
    assert options[-1][0] == 0.0  # the skill's own (closing along the way out) last
    wide = Box(centre=(0.831, -0.240, 0.073), size=(0.09, 0.09, 0.146))
    assert [o[0] for o in closings(wide, (0.831, -0.240, 0.106), 0.0)] == [0.0]


@pytest.mark.parametrize("yaw", [0.26, -2.88, 1.3])
@pytest.mark.parametrize("point", [(0.832, -0.072, 0.0), (0.1, 0.85, 0.0), (-0.3, -0.8, 0.0)])
def test_the_hand_tilted_out_points_away_from_the_base_by_the_tilt(
    yaw: float, point: tuple[float, float, float]
) -> None:
    """``reach.outward_hand``: whatever the fingers' turn, the hand's axis (its z column)
    leans from straight down by the tilt, in the vertical plane through the base's axis and
    the point, away from the base; the closing direction stays square to the axis."""
    tilt = math.radians(15)
    hand = outward_hand(point, yaw, tilt)
    axis = hand[:, 2]
    out = np.array(point[:2]) / np.hypot(*point[:2])
    assert math.isclose(float(-axis[2]), math.cos(tilt), abs_tol=1e-9)
    assert math.isclose(float(axis[:2] @ out), math.sin(tilt), abs_tol=1e-9)
    assert abs(float(axis[0] * out[1] - axis[1] * out[0])) < 1e-9  # no sideways part
    assert abs(float(hand[:, 0] @ axis)) < 1e-9


@pytest.mark.parametrize("yaw", [1.25, -1.89])
def test_a_hand_leaned_in_points_towards_the_base_and_its_fingers_stay_level(yaw: float) -> None:
    """By the robot's base the hand leans the other way (``far_pick`` passes the way in):
    its axis points down and towards the base, so the wrist stands further out."""
    outward = np.array([0.95, -0.31])
    hand = lean_matrix(np.array(lean_vector(yaw, math.radians(15), -outward))) @ down_matrix(yaw)
    axis, closing = hand[:, 2], hand[:, 0]
    assert axis[2] == pytest.approx(-math.cos(math.radians(15)), abs=1e-6)
    assert float(axis[:2] @ outward) < -0.2  # in, towards the robot
    assert abs(closing[2]) < 1e-6
