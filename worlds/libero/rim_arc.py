"""Where round a hollow object's rim the fingers fit, judged with every box as the turned box
it is: the last resort of the rim grasp (``LiberoGeometry.grasp``) when the axis-aligned
room checks find no side free.

Those checks grow a turned wall's box along its length: a drawer standing turned 27 degrees
(LIBERO places the wooden cabinet with a turn, per initial state) has side walls 0.5 cm
thick whose axis-aligned boxes are 7.7 cm deep, so a bowl inside the opened drawer showed
no free side at all, and the grasp fell back to the side facing the robot, where the open
finger came down on the drawer's wall 4 cm above the rim three times (LIBERO-PRO
libero_spatial_object task 4, state 0), though the drawer leaves 6.7 cm between the bowl
and its far wall. Here each finger is the turned box it is and each geom the turned box
the simulator has, and of the rim's points where the fingers fit the middle of the widest
free arc is taken: the point with the most room on both sides for the controller's error.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from worlds.libero.control import Vec3, half_turned
from worlds.libero.holding import HAND_BOX_M, HAND_SPAN_M
from worlds.libero.oriented import oriented_blocked
from worlds.libero.reach import down_clear, wrist_turn_room
from worlds.libero.wrist import hand_yaw

__all__ = ["FINGER_HALF_M", "FINGER_OPEN_M", "NEAR_BASE_M", "free_arc_grasp", "roomier_yaw"]

FINGER_OPEN_M = 0.08
"""The Panda's fingers open this far apart."""
FINGER_HALF_M = (0.01, 0.012)
"""Half a finger's size across (along the closing direction) and wide (along the jaw)."""
NEAR_BASE_M = 0.28
"""Nearer the robot's base than this (horizontally) the arm does not come down to a rim: its
elbow reaches its limit (-3.07 rad) with the fingers 20 cm up and the gripper drifts away
(LIBERO-PRO libero_10_swap task 4: a mug's rim 0.25 m from the base; a can grasped 0.30 m
from it was reached)."""

STEP_DEG = 7.5
"""The rim is tried every this many degrees."""
FINGER_LENGTH_M = 0.08
"""How far above the grip site an open finger (and the hand's knuckle over it) reaches down
past things: the height of the finger boxes tried."""
COLUMN_M = 0.25
"""How far above the fingertips the hand's box is kept clear: the column it comes down."""
RAISES_M = (0.0, 0.005, 0.01)
"""How much shallower than planned (2.5 cm below the rim's top) a grasp may close so that
the hand's box, 3 cm above the fingertips, clears what stands about the rim: a drawer's
walls stand 0.5 cm over a bowl's rim inside it."""


def free_arc_grasp(
    geo: Any,
    ref: str,
    centre: Vec3,
    radius: float,
) -> tuple[Vec3, float, float] | None:
    """(grasp point in the base frame, finger yaw, width) on the rim of ``ref``
    (``centre``: its middle in the world frame at the grasp's height; the grasp ``radius``
    from it) where both open fingers come down turned as they are without meeting anything but
    ``ref``, nor the hand's box turned as it comes down (up to 1 cm shallower where that
    lets it: :data:`RAISES_M`), and the arm comes down clear (``down_clear``); the middle
    of the widest such arc first. None when no point of the rim fits."""
    angles = np.radians(np.arange(0.0, 360.0, STEP_DEG))
    fits: list[tuple[Vec3, float] | None] = []
    for angle in angles:
        u = np.array([math.cos(angle), math.sin(angle)])
        point = np.array(centre[:2]) - u * radius
        here = geo.frame.from_world((float(point[0]), float(point[1]), centre[2]))
        yaw = roomier_yaw(geo, float(angle))
        fit = None
        if math.hypot(here[0], here[1]) >= NEAR_BASE_M:
            for raised in RAISES_M:
                at = (here[0], here[1], here[2] + raised)
                if _fingers_fit(geo, ref, at, float(angle)) and _hand_fits(geo, ref, at, yaw):
                    fit = (at, yaw)
                    break
        fits.append(fit)
    for index in _by_room([fit is not None for fit in fits]):
        fit = fits[index]
        assert fit is not None
        at, yaw = fit
        if down_clear(geo.env, geo.frame, at, yaw):
            return at, yaw, 0.02
    return None


def roomier_yaw(geo: Any, angle: float) -> float:
    """Of the two finger turns that close along ``angle`` (the hand is the same turned half
    round), the one that leaves the wrist's last joint the more room from its limits when
    turned there from now (``reach.wrist_turn_room``). The carry to the place turns the
    arm's base, and the wrist with it: a bowl grasped in a turned drawer at -30 degrees, by
    the table side's convention, left that joint 0.25 rad from its stop, and the carry to
    the plate ran it into the stop (2.90 rad) and stalled, twice; at 150 it keeps 2.4."""
    now = hand_yaw(geo)
    turns = [angle, half_turned(angle)]
    return max(turns, key=lambda t: wrist_turn_room(geo.env, (t - now + math.pi) % TAU - math.pi))


TAU = 2 * math.pi


def _hand_fits(geo: Any, ref: str, at: Vec3, yaw: float) -> bool:
    """Whether the hand's box (``holding.HAND_BOX_M``), pointing down with the fingertips at
    ``at`` (base frame) and closing along ``yaw``, meets nothing but ``ref`` from where it
    begins above them up to :data:`COLUMN_M`: the column it comes down through."""
    low = HAND_SPAN_M[0]
    centre = (at[0], at[1], at[2] + (low + COLUMN_M) / 2)
    half = (*HAND_BOX_M, (COLUMN_M - low) / 2)
    return oriented_blocked(geo, centre, half, yaw, ignore=(ref,)) is None


def _fingers_fit(
    geo: Any,
    ref: str,
    here: Vec3,
    angle: float,
) -> bool:
    """Whether both open fingers about ``here`` (base frame), closing along ``angle``, from
    just under the grip site up :data:`FINGER_LENGTH_M`, meet nothing but ``ref``."""
    u = np.array([math.cos(angle), math.sin(angle)])
    half = (*FINGER_HALF_M, (FINGER_LENGTH_M + 0.005) / 2)
    for side in (-1.0, 1.0):
        x, y = np.array(here[:2]) + side * u * (FINGER_OPEN_M / 2 + FINGER_HALF_M[0])
        centre = (float(x), float(y), here[2] - 0.005 + half[2])
        if oriented_blocked(geo, centre, half, angle, ignore=(ref,)) is not None:
            return False
    return True


def _by_room(free: list[bool]) -> list[int]:
    """The indices of the free points of a ring of points, those with the most free points
    beside them on the ring (the nearer side counts) first."""
    n = len(free)
    if all(free):
        return list(range(n))

    def room(i: int) -> int:
        steps = []
        for direction in (1, -1):
            k = 0
            while free[(i + direction * (k + 1)) % n]:
                k += 1
            steps.append(k)
        return min(steps)

    return sorted((i for i in range(n) if free[i]), key=lambda i: -room(i))
