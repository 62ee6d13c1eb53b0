"""A low thing under an overhang's edge (an open drawer's handle): the open hand comes down
beside where it will grasp, just over the thing's top, and slides in over it before it
goes down to the grasp.

libero_90 task 5 ("put the chocolate pudding in the top drawer of the cabinet and close
it"): the fingers must close across the pudding's 4.6 cm side (2.7 cm tall), towards the
wooden cabinet's open top drawer, whose handle stands 17-18.5 cm up, its front 7.9 cm from
the pudding's middle. The hand is 21 cm long along the closing direction: coming down from
above, its end met the handle 15 cm up, three times on each of states 0-2. Down at the
grasp the hand (3 to 12.5 cm above the fingertips) stands under the handle and the drawer:
only the way down is blocked. Moved 5 cm along the closing direction, away from the drawer,
it comes down clear to just over the pudding's top and slides back over it at that height;
it leaves the same way (``skills.pick``), the pudding 1 cm off the table.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from worlds.libero.clearance import WRIST_XY_M, box_gap, hand_clear, obstacles
from worlds.libero.control import Vec3
from worlds.libero.door_skills import HAND_ABOVE_M, HAND_LONG_M, HAND_THICK_M, HAND_TOP_M
from worlds.libero.segments import SLOW, Segment

__all__ = ["SLID", "hand_fits", "slid_pick", "slide_in"]

HAND_HALF_M = (HAND_LONG_M, HAND_THICK_M)
"""Half the hand's footprint along the closing direction and across it (its collision box,
as ``drawer_pull.HAND_BOX``; ``clearance.hand_clear``, for the way down, reaches 1.5 cm
further along it)."""
HAND_BAND_M = (HAND_ABOVE_M, HAND_TOP_M)
"""From and to how far above the grip site the hand's box reaches (its body, without the
wrist above it)."""
WRIST_BAND_M = (0.12, 0.2)
OVER_TOP_M = 0.025
"""How far above the thing's top the grip site slides in (the open fingertips 1.5 cm over it)."""
SLIDE_OFF_M = 0.01
"""How far the grasped thing is raised off the table before it is slid out the way the
hand came in."""
SLID = "grasp, slide out the way it came in"
"""What a pick made this way says it did between sliding in and lifting."""
SHIFTS_M = np.arange(0.01, 0.081, 0.01)
OFFSETS_M = tuple(float(v) for v in np.arange(0.002, 0.0161, 0.002))
"""How far off the thing's middle, along the closing direction, a grasp that slides in is
tried where the hand does not fit at the middle (within the open fingers' room).
libero_90 task 5, state 1: the wooden cabinet's top drawer front stood 9.8 cm from the
pudding's middle, 14.2 cm up, and its handle 6.6 cm away, 16.9 cm up; the hand (10.3 cm
along the closing direction, 12.5 cm up from the grip site) reached 7 mm under the front
at the grasp and sliding in over the pudding it also met the front, so no slide fitted and
the pick came down from above onto the handle, three times. With the fingers 4.65 cm
round a pudding they open 7.6 cm for, the grasp 1.2 cm further from the drawer leaves the
hand 4 mm clear of its front; the fingers push the pudding that far as they close."""
SPARE_MARGIN_M = 0.003
"""Kept between the nearer open finger and the thing's side by an off-middle grasp."""
SLIDE_STEP_M = 0.005


def hand_fits(geo: Any, ref: str, point: Vec3, yaw: float, top: float) -> bool:
    """Whether the hand pointing down with its grip site at ``point`` (base frame), closing
    along ``yaw``, and the wrist above it meet nothing reaching over ``ref`` (whose top is
    ``top``): the hand where it stands, not the way down to it (``hand_clear``)."""
    x, y, z = (float(v) for v in point)
    u = np.array([math.cos(yaw), math.sin(yaw)])
    low, high = HAND_BAND_M
    over = [f for f in obstacles(geo, ref, z + low, z + high) if f[3] > top + 0.005]
    (long, thick) = HAND_HALF_M
    for along in np.linspace(-(long - thick), long - thick, 7):
        cx, cy = x + u[0] * along, y + u[1] * along
        lo, hi = np.array([cx - thick, cy - thick]), np.array([cx + thick, cy + thick])
        if any(box_gap(a, b, lo, hi) < 0.0 for _, a, b, _ in over):
            return False
    w0, w1 = WRIST_BAND_M
    (x0, x1), (y0, y1) = WRIST_XY_M
    lo, hi = np.array([x + x0, y + y0]), np.array([x + x1, y + y1])
    wrist = [f for f in obstacles(geo, ref, z + w0, z + w1) if f[3] > top + 0.005]
    return all(box_gap(a, b, lo, hi) >= 0.0 for _, a, b, _ in wrist)


def slide_in(
    geo: Any, ref: str, at: Vec3, yaw: float, top: float, spare: float = 0.0
) -> tuple[Vec3, Vec3] | None:
    """(where, base frame, the open hand comes down beside the grasp to slide in over
    ``ref`` at OVER_TOP_M above its top ``top``, the grasp itself) for the grasp ``at``
    (grip site, fingers closing along ``yaw``), when coming down on it from above meets
    something reaching over it but the hand fits at the grasp and all along the slide: the
    least shift along the closing direction, either way; None when it comes down clear
    already or no shift does. Where the hand does not fit at ``at``, the grasp may move
    along the closing direction by up to ``spare`` (the open fingers' room beside the
    thing, less :data:`SPARE_MARGIN_M`): the closing fingers centre it between them."""
    x, y, z = (float(v) for v in at)
    if hand_clear(geo, ref, at, yaw, top):
        return None
    u = np.array([math.cos(yaw), math.sin(yaw)])
    h = max(z, top + OVER_TOP_M)
    room = max(0.0, spare - SPARE_MARGIN_M)
    offsets = [0.0, *(o for d in OFFSETS_M if d <= room + 1e-9 for o in (d, -d))]
    for offset in offsets:
        gx, gy = x + u[0] * offset, y + u[1] * offset
        grasp = (float(gx), float(gy), z)
        if not hand_fits(geo, ref, grasp, yaw, top):
            continue
        for shift in SHIFTS_M:
            for sign in (1.0, -1.0):
                start = np.array([gx, gy]) + u * sign * float(shift)
                if not hand_clear(geo, ref, (float(start[0]), float(start[1]), h), yaw, top):
                    continue
                steps = max(1, math.ceil(float(shift) / SLIDE_STEP_M))
                end = np.array([gx, gy])
                path = [start + (end - start) * i / steps for i in range(steps + 1)]
                if all(hand_fits(geo, ref, (float(p[0]), float(p[1]), h), yaw, top) for p in path):
                    return (float(start[0]), float(start[1]), h), grasp
    return None


def slid_pick(
    planner: Any,
    ref: str,
    ee: Vec3,
    at: Vec3,
    yaw: float,
    travel: float,
    lift: float,
    spare: float = 0.0,
) -> list[Segment] | None:
    """The segments of a pick of ``ref`` at ``at`` (grip site, base frame; fingers along
    ``yaw``) that come down beside it and slide in (:func:`slide_in`), grasp, raise it
    SLIDE_OFF_M, slide out the way they came and lift to ``lift``; None when the hand
    comes down on it from above as usual (or nothing is hollow: a rim grasp's bowl is
    dragged out instead, ``dragging``). ``planner``: the skill planner (its rise to
    ``travel``); ``spare``: as :func:`slide_in`."""
    geo = planner.geo
    box = geo.box(ref)
    if box is None or geo.hollow(ref):
        return None
    found = slide_in(geo, ref, at, yaw, box.top, spare)
    if found is None:
        return None
    (bx, by, bz), (x, y, z) = found
    off = z + SLIDE_OFF_M
    return [
        Segment("grip", "open", close=False, yaw=yaw),
        *planner.rise(ee, travel),
        Segment("move", "over", (bx, by, travel), yaw=yaw),
        Segment("move", "beside", (bx, by, bz), speed=SLOW, yaw=yaw),
        Segment("move", "slide in", (x, y, bz), speed=SLOW, yaw=yaw),
        Segment("move", "grasp", (x, y, z), speed=SLOW, tolerance=0.004, yaw=yaw),
        Segment("grip", "close", close=True, yaw=yaw),
        Segment("move", "raise", (x, y, off), speed=SLOW, yaw=yaw),
        Segment("move", "slide out", (bx, by, off), speed=SLOW, yaw=yaw),
        Segment("move", "lift", (bx, by, lift), speed=SLOW, yaw=yaw),
    ]
