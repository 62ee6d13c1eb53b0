"""Skills on hinged doors (LIBERO's microwave): sweeping the leaf along its hinge (putting
a thing in through the opening is :mod:`.through`).

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
from worlds.libero.oriented import oriented_blocked
from worlds.libero.segments import SLOW, Segment

if TYPE_CHECKING:
    from worlds.libero.skills import SkillPlanner

__all__ = [
    "HAND_ABOVE_M",
    "HAND_LONG_M",
    "HAND_THICK_M",
    "HAND_TOP_M",
    "sweep_door",
]

HAND_LONG_M = 0.105
"""Half the Panda hand's length along the fingers' closing direction (its collision box)."""
HAND_THICK_M = 0.032
"""Half its thickness across that."""
HAND_ABOVE_M = 0.03
"""The hand's collision box begins this far above the gripper's site."""
HAND_TOP_M = 0.125
"""And ends this far above it."""
GAP_M = 0.006
"""How far from the leaf the hand's face starts a sweep."""
PRESS_M = 0.02
"""How far past the leaf's closed face the last press aims (it stalls on the shut leaf)."""
CHORD_RAD = 0.5
AJAR_RAD = 0.6
"""How far a closed door is pulled open by its handle before it is pushed from behind."""
"""The largest turn of the leaf one straight move of a sweep follows."""
SWEEP = 0.2
"""How fast (m/s) the hand sweeps a leaf."""


def sweep_door(planner: SkillPlanner, door: Door, shut: bool, ee: Vec3) -> list[Segment] | str:
    """Move the leaf of ``door`` along its arc to LIBERO's closed (``shut``) or open
    position; or why it cannot be done. Shut: pushed with the flat of the hand from the
    side opposite the way it moves. Open: a closed leaf is first pulled ajar by its
    handle (:func:`pull_door`; pulled all the way, the pads slipped off the bar at about
    45 degrees), then pushed the rest of the way from behind, where the hand now fits."""
    goal = door.closed if shut else door.opened
    if abs(goal - door.angle) < 0.01:
        return f"{door.ref} is already {'closed' if shut else 'open'}"
    if shut or abs(door.angle - door.closed) >= AJAR_RAD - 0.05:
        return push_leaf(planner, door, door.angle, goal, ee, press=shut)
    grows = 1.0 if goal > door.angle else -1.0
    ajar = door.closed + grows * AJAR_RAD
    pulled = pull_door(planner, door, ajar, ee)
    if isinstance(pulled, str):
        return pulled
    last = next(s.target for s in reversed(pulled) if s.target is not None)
    pushed = push_leaf(planner, door, ajar, goal, last, press=False)
    if isinstance(pushed, str):
        return pushed
    return [*pulled[:-1], *pushed]  # no turn back in between


def push_leaf(
    planner: SkillPlanner, door: Door, start: float, goal: float, ee: Vec3, *, press: bool
) -> list[Segment] | str:
    """Push the leaf, at joint position ``start`` now, along its arc to ``goal`` with the
    flat of the hand (pointing down, its long side along the leaf); ``press``: then past
    the leaf's face at ``goal`` (a door shut by LIBERO's Close is within 0.005 rad)."""

    grows = 1.0 if goal > start else -1.0
    side = -grows  # the hand stands on the side the leaf moves away from
    z = min(door.top - HAND_ABOVE_M - 0.04, ee[2])
    z = max(z, door.bottom + 0.03, planner.floor_z + 0.03)
    if z + HAND_ABOVE_M > door.top - 0.01:
        return f"{door.ref}'s door is too low for the hand to push"
    carry = planner.travel_height(z + 0.12, ee[2], door.top + 0.08)
    steps = max(1, math.ceil(abs(goal - start) / CHORD_RAD))
    radius, across = _push_at(planner, door, start, goal, z, press=press)
    yaw = nearest_yaw(_yaw(door, start), HOME_YAW)
    begin = door.point(start, radius, across + side * 0.03)
    segments: list[Segment] = [
        Segment("grip", "close", close=True, yaw=yaw),
        *planner.rise(ee, carry),
        Segment("move", "approach", as_point(begin, carry), yaw=yaw),
        Segment("move", "lower", as_point(begin, z), yaw=yaw),
    ]
    swept, yaw = _along_arc(
        door, np.linspace(start, goal, steps + 1), radius, across, z, "sweep", SWEEP, yaw
    )
    segments += swept
    if press:
        pressed = door.point(goal, radius, across - side * (GAP_M + PRESS_M))
        segments.append(
            Segment("move", "press", as_point(pressed, z), speed=SLOW, yaw=yaw, tolerance=0.003)
        )
    back = door.point(goal, radius, across + side * 0.06)
    segments += [
        Segment("move", "back off", as_point(back, z), yaw=yaw),
        Segment("move", "clear", as_point(back, carry), yaw=yaw),
        Segment("twist", "turn back", yaw=HOME_YAW),
    ]
    return segments


def _push_at(
    planner: SkillPlanner, door: Door, start: float, goal: float, z: float, *, press: bool
) -> tuple[float, float]:
    """(how far along the leaf from its hinge, how far off it) the hand's middle pushes the
    leaf from ``start`` to ``goal``: where every point the sweep sends the gripper to is
    within the arm's reach and the hand, at every 0.1 rad of the arc, meets nothing but the
    leaf; among those, where the leaf stands out least on the hand's side (away from a
    handle), and then the furthest from the hinge (more leverage). LIBERO-PRO libero_10_swap
    task 9: the microwave's door, open 80 degrees, points at the workspace's edge; pushed
    at its far end (26 cm out) the hand would go 9 cm past the edge, pushed 12 cm out it
    stays inside, and nearer the hinge the hand meets the oven's top panel. Where no place
    along the leaf does both, the sweep is pushed where the first rule alone puts it."""
    grows = 1.0 if goal > start else -1.0
    side = -grows
    half = (HAND_LONG_M, HAND_THICK_M, (HAND_TOP_M - HAND_ABOVE_M) / 2)
    hand_z = z + (HAND_ABOVE_M + HAND_TOP_M) / 2
    arc = np.linspace(start, goal, max(2, math.ceil(abs(goal - start) / 0.1) + 1))
    chords = np.linspace(start, goal, max(1, math.ceil(abs(goal - start) / CHORD_RAD)) + 1)
    choices = []
    for radius in np.arange(0.08, max(door.length - 0.02, 0.081), 0.01):
        reach = door.reach(side, radius - HAND_LONG_M, radius + HAND_LONG_M)
        across = side * (reach + HAND_THICK_M + GAP_M)
        offs = [(start, across + side * 0.03), (goal, across + side * 0.06)]
        offs += [(float(a), across) for a in chords]
        if press:
            offs.append((goal, across - side * (GAP_M + PRESS_M)))
        points = [door.point(a, float(radius), off) for a, off in offs]
        outside = not all(planner.within_reach(float(p[0]), float(p[1])) for p in points)
        meets = any(
            oriented_blocked(
                planner.geo,
                (*(float(v) for v in door.point(float(a), float(radius), across)), hand_z),  # type: ignore[arg-type]
                half,
                _yaw(door, float(a)),
                skip_geoms=door.geoms,
            )
            is not None
            for a in arc
        )
        choices.append((outside or meets, round(reach, 3), -float(radius), across))
    best = min(choices)
    if best[0]:  # nowhere both: the first rule alone
        best = min(choices, key=lambda c: c[1:3])
    return -best[2], best[3]


def _along_arc(
    door: Door,
    angles: np.ndarray,
    radius: float,
    across: float,
    z: float,
    label: str,
    speed: float,
    yaw: float,
) -> tuple[list[Segment], float]:
    """One move per chord of the leaf's arc through ``angles``, ``radius`` along the leaf
    and ``across`` off it, the wrist turning with the leaf; and the last yaw. The chords
    run into each other: only the last one needs reaching closely."""
    segments = []
    for index, angle in enumerate(angles):
        yaw = nearest_yaw(_yaw(door, float(angle)), yaw)
        point = door.point(float(angle), radius, across)
        loose = 0.006 if index == len(angles) - 1 else 0.015
        segments.append(
            Segment("move", label, as_point(point, z), speed=speed, yaw=yaw, tolerance=loose)
        )
    return segments, yaw


def pull_door(planner: SkillPlanner, door: Door, goal: float, ee: Vec3) -> list[Segment] | str:
    """Grasp the top bar of the leaf's handle (pointing down, the fingers closing along
    the leaf) and pull it along the arc to ``goal``, the wrist turning with the leaf."""

    grows = 1.0 if goal > door.angle else -1.0
    # the handle stands out on the side the leaf swings to, past the leaf's panel (its
    # longest part)
    panel = max(door.parts, key=lambda p: p.along[1] - p.along[0])
    thick = max(grows * panel.across[0], grows * panel.across[1])
    bars = [
        p
        for p in door.parts
        if max(grows * p.across[0], grows * p.across[1]) > thick + 0.01 and p.z[1] - p.z[0] < 0.04
    ]
    if not bars:
        return f"{door.ref}'s door has no handle bar to pull"
    bar = max(bars, key=lambda p: p.z[1])
    along = (bar.along[0] + bar.along[1]) / 2
    # at its outer end (where it meets the upright bar): the hand then clears the leaf's
    # panel and can come down far enough for the pads to hold the bar (pinched 1 cm
    # high, it slipped out at the first pull)
    outer = max(grows * bar.across[0], grows * bar.across[1])
    across = grows * (outer - 0.002)
    hand_in = grows * across - HAND_THICK_M  # the hand's edge nearest the leaf
    z = (bar.z[0] + bar.z[1]) / 2 - 0.004
    if hand_in < thick + 0.001:
        z = max(z, door.top - HAND_ABOVE_M + 0.006)
    if z - 0.004 > bar.z[1]:
        return f"{door.ref}'s handle is too close to the top of its door to grasp"
    carry = planner.travel_height(z + 0.1, ee[2])
    yaw = nearest_yaw(_yaw(door, door.angle), HOME_YAW)
    grip = door.point(door.angle, along, across)
    segments: list[Segment] = [
        Segment("grip", "open", close=False, yaw=yaw),
        *planner.rise(ee, carry),
        Segment("move", "approach", as_point(grip, carry), yaw=yaw),
        Segment("move", "lower", as_point(grip, z), yaw=yaw, tolerance=0.004),
        Segment("grip", "grasp", close=True, yaw=yaw),
    ]
    steps = max(1, math.ceil(abs(goal - door.angle) / CHORD_RAD))
    pulled, yaw = _along_arc(
        door, np.linspace(door.angle, goal, steps + 1)[1:], along, across, z, "pull", SLOW, yaw
    )
    segments += pulled
    end = door.point(goal, along, across)
    segments += [
        Segment("grip", "release", close=False, yaw=yaw),
        Segment("move", "clear", as_point(end, carry), yaw=yaw),
        Segment("twist", "turn back", yaw=HOME_YAW),
    ]
    return segments


def _yaw(door: Door, angle: float) -> float:
    """The finger yaw that lays the hand's long side along the leaf at ``angle``."""
    along, _ = door.axes(angle)
    return math.atan2(float(along[1]), float(along[0]))
