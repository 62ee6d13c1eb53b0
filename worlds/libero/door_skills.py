"""Skills on hinged doors (LIBERO's microwave): sweeping the leaf along its hinge, and
putting a thing in through the opening.

Both are plans of :class:`~worlds.libero.skills.Segment` like every other skill, so the
envelope sees every point the gripper is sent to. The leaf is pushed with the flat side of
the hand (pointing down, its long side along the leaf), which follows the leaf's arc in
short chords, the wrist turning with the leaf; a door is shut by a last press past its
closed face, since LIBERO's Close needs the joint within 0.005 rad of shut.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from worlds.libero.control import HOME_YAW, Vec3
from worlds.libero.doors import Door, as_point, nearest_yaw

if TYPE_CHECKING:
    from worlds.libero.skills import Segment, SkillPlanner

__all__ = ["sweep_door"]

HAND_LONG_M = 0.105
"""Half the Panda hand's length along the fingers' closing direction (its collision box)."""
HAND_THICK_M = 0.032
"""Half its thickness across that."""
HAND_ABOVE_M = 0.03
"""The hand's collision box begins this far above the gripper's site."""
GAP_M = 0.006
"""How far from the leaf the hand's face starts a sweep."""
PRESS_M = 0.02
"""How far past the leaf's closed face the last press aims (it stalls on the shut leaf)."""
CHORD_RAD = 0.3
"""The largest turn of the leaf one straight move of a sweep follows."""
SWEEP = 0.2
"""How fast (m/s) the hand sweeps a leaf."""


def sweep_door(planner: SkillPlanner, door: Door, shut: bool, ee: Vec3) -> list[Segment] | str:
    """Push the leaf of ``door`` along its arc to LIBERO's closed (``shut``) or open
    position with the flat of the hand, from the side opposite the way it moves; or why
    it cannot be done."""
    from worlds.libero.skills import SLOW, Segment

    goal = door.closed if shut else door.opened
    if abs(goal - door.angle) < 0.01:
        return f"{door.ref} is already {'closed' if shut else 'open'}"
    grows = 1.0 if goal > door.angle else -1.0
    side = -grows  # the hand stands on the side the leaf moves away from
    # where along the leaf the hand pushes: where the leaf stands out least on that side
    # (away from a handle), and among those the furthest from the hinge (more leverage)
    choices = []
    for radius in np.arange(0.08, max(door.length - 0.02, 0.081), 0.01):
        reach = door.reach(side, radius - HAND_LONG_M, radius + HAND_LONG_M)
        choices.append((round(reach, 3), -float(radius)))
    reach, radius = min(choices)
    radius = -radius
    across = side * (reach + HAND_THICK_M + GAP_M)
    z = min(door.top - HAND_ABOVE_M - 0.04, ee[2])
    z = max(z, door.bottom + 0.03, planner.floor_z + 0.03)
    if z + HAND_ABOVE_M > door.top - 0.01:
        return f"{door.ref}'s door is too low for the hand to push"
    carry = planner._carry(z + 0.12, ee[2], door.top + 0.08)
    steps = max(1, math.ceil(abs(goal - door.angle) / CHORD_RAD))
    yaw = nearest_yaw(_yaw(door, door.angle), HOME_YAW)
    start = door.point(door.angle, radius, across + side * 0.03)
    segments: list[Segment] = [
        Segment("grip", "close", close=True, yaw=yaw),
        *planner._rise(ee, carry),
        Segment("move", "approach", as_point(start, carry), yaw=yaw),
        Segment("move", "lower", as_point(start, z), speed=SLOW, yaw=yaw),
    ]
    for angle in np.linspace(door.angle, goal, steps + 1):
        yaw = nearest_yaw(_yaw(door, float(angle)), yaw)
        point = door.point(float(angle), radius, across)
        segments.append(Segment("move", "sweep", as_point(point, z), speed=SWEEP, yaw=yaw))
    if shut:
        press = door.point(goal, radius, across - side * (GAP_M + PRESS_M))
        segments.append(
            Segment("move", "press", as_point(press, z), speed=SLOW, yaw=yaw, tolerance=0.003)
        )
    back = door.point(goal, radius, across + side * 0.06)
    segments += [
        Segment("move", "back off", as_point(back, z), speed=SLOW, yaw=yaw),
        Segment("move", "clear", as_point(back, carry), yaw=yaw),
        Segment("twist", "turn back", yaw=HOME_YAW),
    ]
    return segments


def _yaw(door: Door, angle: float) -> float:
    """The finger yaw that lays the hand's long side along the leaf at ``angle``."""
    along, _ = door.axes(angle)
    return math.atan2(float(along[1]), float(along[0]))
