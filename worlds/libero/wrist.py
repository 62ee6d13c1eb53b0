"""Which of the two finger turns that grasp alike the arm can reach from where it is.

The Panda's hand is the same turned half round its axis, so a grasp from above with the
fingers closing along a direction may be taken at ``yaw`` or at ``yaw + pi``; the skills
choose one by the side of the table (``geometry.grasp``). The controller turns the wrist
the shorter way from wherever the last skill left it, and that way can run the wrist's
last joint into its limit: after setting a mug down at the robot's right with the fingers
at -3.0 rad, a pick wanting 0 rad turned the wrist (joint 7) to its -2.9 rad stop a
quarter turn short, and the arm strayed 6 cm off its path three times (LIBERO-PRO
libero_10_task 4, the white mug; the same grasp at pi needs no turn). The arm's joints
at the grasp are solved from the current ones first (``reach.solve``, inverse kinematics
on a scratch copy of the state): the skill's own choice stays unless the arm cannot hold
it and can hold the other.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from worlds.libero.control import Vec3, down_matrix, half_turned
from worlds.libero.reach import solve, wrist_turn_room

if TYPE_CHECKING:
    from worlds.libero.geometry import LiberoGeometry

__all__ = ["TURN_STEPS", "hand_yaw", "reached_yaw", "turn_held"]


def reached_yaw(geo: LiberoGeometry, yaw: float, points: list[Vec3]) -> float:
    """``yaw`` when the arm can hold the gripper pointing down at ``yaw`` at each of
    ``points`` (base frame) in turn from its joints now, and the wrist's last joint turning
    there the shorter way stays :data:`WRIST_ROOM_RAD` inside its limits; else the
    half-turned yaw if it can so; else the first of the two the arm can hold; else ``yaw``
    (the skill runs as it would have)."""
    other = half_turned(yaw)
    now = hand_yaw(geo)
    held: list[float] = []
    for candidate in (yaw, other):
        poses = [(geo.frame.to_world(p), down_matrix(candidate)) for p in points]
        _, why = solve(geo.env, poses)
        if why is not None:
            continue
        turn = (candidate - now + math.pi) % (2 * math.pi) - math.pi
        if wrist_turn_room(geo.env, turn) >= WRIST_ROOM_RAD:
            return candidate
        held.append(candidate)
    return held[0] if held else yaw


WRIST_ROOM_RAD = 0.1
"""Kept between the wrist's last joint and its limits by the turn to a grasp's yaw
(``reach.wrist_turn_room``)."""


TURN_STEPS = 4
"""Wrist turns a half turn of a held thing is split into (each under a quarter turn, so the
controller turns the way it is sent, not the shorter way round)."""


def hand_yaw(geo: LiberoGeometry) -> float:
    """The fingers' closing direction now, in the convention of ``down_matrix``."""
    robot = geo.env.robots[0]
    m = geo.env.sim.data.site_xmat[robot.eef_site_id]
    return math.atan2(float(m[3]), float(m[0]))


def turn_held(geo: LiberoGeometry, at: Vec3, turn: float) -> float | None:
    """The wrist turn about the vertical, ``turn`` or the same turn the other way round
    (the shorter first), that the arm can make pointing down at ``at`` (base frame) in
    :data:`TURN_STEPS` steps, from its joints now; None when it can make neither."""
    yaw = hand_yaw(geo)
    other = turn - 2 * math.pi if turn > 0 else turn + 2 * math.pi
    for candidate in sorted((turn, other), key=abs):
        poses = [
            (geo.frame.to_world(at), down_matrix(yaw + candidate * k / TURN_STEPS))
            for k in range(1, TURN_STEPS + 1)
        ]
        if solve(geo.env, poses)[1] is None:
            return candidate
    return None
