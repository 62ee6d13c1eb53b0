"""A low thing whose every grasp has the hand come down on a neighbour, pushed clear first.

LIBERO-PRO libero_object_temp_y0.3 task 1: the cream cheese box (8.1 x 4.3 x 1.8 cm) lies
3.3 cm from the basket's wall, its long side along the wall. It is wider than the fingers
open along its length, so the fingers close across it, along the way to the basket; the
Panda's hand is 20 cm long that way and came down on the basket's rim 10 cm above the
table, three times (contact ``basket_1_main`` / ``gripper0_right_gripper``), the fingers
closing on nothing. Sliding the grasp along the box does not take the hand off the wall.

A low thing (lower than ``geometry.FLAT_M``: it slides, it does not tip) is pushed along
the table first: the closed fingertips come down just behind one of its ends, the hand's
length along the push (6 cm across it, clear of what stands beside), and push it the least
distance (:data:`PUSHES_M`) after which the open fingers and the hand above them come down
free at the grasp, moved with it; along the thing's length first, then across. The way of
the fingers and the hand is checked free of everything but the thing itself before
anything moves, as the envelope requires. The closed fingertips' footprint is the whole
finger's bound first; where that finds no room, the fingers' taper to their tips
(:data:`TIPS_TAPER_M`: a box 5.8 cm from the stove, a bowl 1.2 cm from its other side),
along the thing's middle and then just off it (:data:`OFF_MIDDLE_M`), pushed on by the gap
it came down behind so it moves as far as the grasp after it assumes.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from worlds.libero.control import Vec3, down_matrix, half_turned
from worlds.libero.geometry import (
    FINGER_HALF_M,
    FINGER_OPEN_M,
    FLAT_M,
    HAND_ABOVE_M,
    HAND_HALF_M,
    Box,
)
from worlds.libero.reach import solve
from worlds.libero.segments import SLOW, Segment
from worlds.libero.wrist import reached_yaw

if TYPE_CHECKING:
    from worlds.libero.geometry import LiberoGeometry
    from worlds.libero.skills import SkillPlanner

__all__ = ["PUSHES_M", "hand_free", "nudge"]

PUSHES_M = (0.04, 0.06, 0.08, 0.1, 0.12)
"""How far a thing may be pushed, least first."""
TIPS_HALF_M = (0.03, 0.012)
"""Half the closed fingers' footprint along the hand's length (the push) and across it
(``dragging.FINGERS_HALF_M``): the bound of their meshes, the whole finger's."""
TIPS_TAPER_M = ((0.01, 0.02), (0.02, 0.023), (0.03, 0.026))
"""(height above ``tip_z``, half the closed fingers' footprint along the push below it): the
fingers taper to their tips. Measured on the Panda's finger meshes, closed, from their
middle: 1.43 cm at the tips (9 mm below the grip site, so 3 mm above ``tip_z``), 1.74 at
1 cm up, 2.06 at 2 cm, 2.37 at 3 cm, 2.6 at 4-5 cm; each band's widest with 3 mm to spare.
Above the last, :data:`TIPS_HALF_M`. With the whole finger's bound all the way down, the
tips found no room to come down between a cream cheese box and the stove 5.8 cm from it,
its top 3 cm above the table (LIBERO-PRO libero_goal_object task 6, state 1: the bigger
bowl 1.2 cm from the box's other side, where the hand has no room for any grasp)."""
OFF_MIDDLE_M = 0.008
"""How far to one side of the thing's middle the tips may push it (they are 2.4 cm wide, a
cream cheese box 4.3 cm: they still bear on it): where the hand above them, 6 cm wide,
grazes a bowl standing 5 mm beside the box as it pushes along its middle (LIBERO-PRO
libero_goal_object task 6, state 2)."""
GAP_M = 0.012
"""How far behind the thing's end the fingertips come down."""
TIP_Z_M = 0.012
"""How far below the grip site the fingertips reach."""
ABOVE_FLOOR_M = 0.006
"""How far above the table the fingertips push."""


def hand_free(geo: LiberoGeometry, ref: str, xy: np.ndarray, yaw: float, z: float) -> bool:
    """Whether the open fingers closing along ``yaw`` either side of ``xy`` (base frame)
    and the hand above them come down to ``z`` meeting nothing but ``ref``."""
    u = np.array([math.cos(yaw), math.sin(yaw)])
    v = np.array([-u[1], u[0]])
    boxes = []
    half = np.abs(u) * FINGER_HALF_M[0] + np.abs(v) * FINGER_HALF_M[1]
    for side in (-1.0, 1.0):
        centre = xy + side * u * (FINGER_OPEN_M / 2 + FINGER_HALF_M[0])
        boxes.append((centre - half, centre + half, z - 0.005, z + HAND_ABOVE_M))
    size = np.abs(u) * HAND_HALF_M[0] + np.abs(v) * HAND_HALF_M[1]
    boxes.append((xy - size, xy + size, z + HAND_ABOVE_M, z + 0.1))
    return all(_free(geo, lo, hi, z0, z1, (ref,)) for lo, hi, z0, z1 in boxes)


def _free(
    geo: LiberoGeometry,
    lo: np.ndarray,
    hi: np.ndarray,
    z0: float,
    z1: float,
    ignore: tuple[str, ...],
) -> bool:
    low = (float(lo[0]), float(lo[1]), z0)
    high = (float(hi[0]), float(hi[1]), z1)
    return geo.blocked(low, high, ignore=ignore) is None


def nudge(
    planner: SkillPlanner, ref: str, ee: Vec3, grasp: Vec3, yaw: float, travel: float
) -> tuple[list[Segment], Vec3, float] | None:
    """(the push's segments, the grasp point where the push leaves it, the fingers' yaw
    there) when ``ref`` is low, the hand has no room at ``grasp`` (fingers closing along
    ``yaw``) and a push makes it room; else None."""
    geo = planner.geo
    box = geo.box(ref)
    if box is None or box.size[2] >= FLAT_M or geo.hollow(ref):
        return None
    x, y, z = grasp
    if hand_free(geo, ref, np.array([x, y]), yaw, z):
        return None
    centre = np.array(box.centre[:2])
    tip_z = box.bottom + ABOVE_FLOOR_M
    # the whole finger's bound first, the tips coming down further behind the thing; the
    # tapered tips only where that finds no room (the pushes it found are kept as they were),
    # along the thing's middle, then off it to either side (:data:`OFF_MIDDLE_M`)
    passes = [((), 0.0)] + [(TIPS_TAPER_M, off) for off in (0.0, OFF_MIDDLE_M, -OFF_MIDDLE_M)]
    for taper, off in passes:
        front = taper[0][1] if taper else TIPS_HALF_M[0]
        for distance in PUSHES_M:
            for turn, at in _grasps(box, (x, y), yaw):
                u = np.array([math.cos(turn), math.sin(turn)])
                v = np.array([-u[1], u[0]])
                for way in (v, -v, u, -u):
                    to = at + way * distance
                    if not planner.within_reach(float(to[0]), float(to[1])):
                        continue
                    if not hand_free(geo, ref, to, turn, z):
                        continue
                    end_half = (abs(box.size[0] * way[0]) + abs(box.size[1] * way[1])) / 2
                    aside = np.array([-way[1], way[0]]) * off
                    start = centre + aside - way * (end_half + GAP_M + front)
                    # on by the gap, so the thing moves as far as the grasp after it
                    # assumes (the whole bound's pushes keep theirs as they were)
                    stop = start + way * (distance + (GAP_M if taper else 0.0))
                    if not _way_free(geo, ref, (start, stop, way), (tip_z, travel), taper):
                        continue
                    pushed = _segments(planner, ee, start, stop, way, tip_z, travel)
                    point = (float(to[0]), float(to[1]), z)
                    turn = _turn_after(planner, pushed, point, turn)
                    return [*pushed[:-1], replace(pushed[-1], yaw=turn)], point, turn
    return None


def _grasps(box: Box, at: tuple[float, float], yaw: float) -> list[tuple[float, np.ndarray]]:
    """(finger yaw, grasp point xy) to push for: the fingers closing square across the
    thing's own length at its middle first, when its width that way (from its axis-aligned
    box, so an upper bound) fits the fingers; then the skill's own grasp, which may be
    turned and slid to fit beside a neighbour that the push moves it away from."""
    out = [(yaw, np.array(at))]
    for turn in (box.yaw + math.pi / 2, box.yaw):
        turn = math.atan2(math.sin(turn), math.cos(turn))
        width = abs(box.size[0] * math.cos(turn)) + abs(box.size[1] * math.sin(turn))
        if width <= FINGER_OPEN_M - 0.004:
            out.insert(0, (turn, np.array(box.centre[:2])))
            break
    return out


def _way_free(
    geo: LiberoGeometry,
    ref: str,
    push: tuple[np.ndarray, np.ndarray, np.ndarray],
    heights: tuple[float, float],
    taper: tuple[tuple[float, float], ...],
) -> bool:
    """Whether the closed fingertips come down at the push's start (meeting nothing, ``ref``
    included) and push along to its stop (``push``: start, stop, way) with the hand above
    them meeting only ``ref``; ``heights``: the tips' and the travel height; ``taper``: the
    tips' footprint below the whole finger's (:data:`TIPS_TAPER_M`, or none)."""
    start, stop, way = push
    tip_z, travel = heights
    across = np.array([-way[1], way[0]])
    lo, hi = np.minimum(start, stop), np.maximum(start, stop)
    for z0, z1, half in _tip_bands(tip_z, travel, taper):
        tips = np.abs(way) * half + np.abs(across) * TIPS_HALF_M[1]
        if not _free(geo, start - tips, start + tips, z0, z1, ()):
            return False
        if z0 < tip_z + HAND_ABOVE_M and not _free(
            geo, lo - tips, hi + tips, z0, min(z1, tip_z + HAND_ABOVE_M), (ref,)
        ):
            return False
    hand = np.abs(way) * HAND_HALF_M[0] + np.abs(across) * HAND_HALF_M[1]
    top = tip_z + TIP_Z_M + 0.1
    return _free(geo, lo - hand, hi + hand, tip_z + HAND_ABOVE_M, top, (ref,))


def _tip_bands(
    tip_z: float, top: float, taper: tuple[tuple[float, float], ...]
) -> list[tuple[float, float, float]]:
    """(bottom, top, half footprint along the push) of the closed fingers in height bands
    from their tips at ``tip_z`` up to ``top``: ``taper``'s, then :data:`TIPS_HALF_M`."""
    bands, low = [], tip_z
    for height, half in (*taper, (top - tip_z, TIPS_HALF_M[0])):
        high = min(top, tip_z + height)
        if high > low:
            bands.append((low, high, half))
            low = high
    return bands


def _segments(
    planner: SkillPlanner,
    ee: Vec3,
    start: np.ndarray,
    stop: np.ndarray,
    way: np.ndarray,
    tip_z: float,
    travel: float,
) -> list[Segment]:
    """Close, go over ``start``, come down to the table, push to ``stop``, rise again: the
    hand's length along the push (its fingers close along it)."""
    z = tip_z + TIP_Z_M
    sx, sy, ex, ey = float(start[0]), float(start[1]), float(stop[0]), float(stop[1])
    points: list[Vec3] = [(sx, sy, travel), (sx, sy, z), (ex, ey, z)]
    yaw = reached_yaw(planner.geo, math.atan2(float(way[1]), float(way[0])), points)
    return [
        Segment("grip", "close", close=True, yaw=yaw),
        *planner.rise(ee, travel),
        Segment("move", "over", (sx, sy, travel), yaw=yaw),
        Segment("move", "down", (sx, sy, z + 0.04), yaw=yaw),
        Segment("move", "to the table", (sx, sy, z), speed=SLOW, yaw=yaw),
        Segment("move", "push", (ex, ey, z), speed=SLOW, yaw=yaw),
        Segment("move", "up", (ex, ey, travel), yaw=yaw),
    ]


def _turn_after(planner: SkillPlanner, pushed: list[Segment], grasp: Vec3, turn: float) -> float:
    """The grasp's finger yaw, ``turn`` or half round, that the arm holds coming down to
    ``grasp`` from where the push leaves it (its joints solved along the push first): the
    hand turns to it while rising from the push. Turned the other way after a push along
    the box, the wrist ran to its stop and the arm strayed 6 cm off its path."""
    geo = planner.geo
    moves = [s for s in pushed if s.target is not None]
    poses = [(geo.frame.to_world(s.target), down_matrix(s.yaw or 0.0)) for s in moves]
    joints, why = solve(geo.env, poses)
    if why is not None or not joints:
        return turn
    x, y, z = grasp
    top = moves[-1].target
    assert top is not None
    half = half_turned(turn)
    for candidate in (turn, half):
        points = [top, (x, y, z + 0.1), grasp]
        at = [(geo.frame.to_world(p), down_matrix(candidate)) for p in points]
        if solve(geo.env, at, seed=joints[-2])[1] is None:
            return candidate
    return turn
