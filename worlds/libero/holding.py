"""What the fingers hold, what a thing rests on, whether the hand has room beside a rim
grasp, and the footprints of a container region and of an object: reads of the simulator's
contacts and collision geoms (base frame, privileged like every skill here) that
:class:`~worlds.libero.geometry.LiberoGeometry` answers with.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from worlds.libero.control import Vec3
from worlds.libero.door_skills import HAND_ABOVE_M, HAND_LONG_M, HAND_THICK_M, HAND_TOP_M
from worlds.libero.oriented import oriented_blocked

__all__ = [
    "HAND_BOX_M",
    "HAND_SPAN_M",
    "footprint",
    "hand_room",
    "held",
    "level_frame",
    "resting_on",
]

HAND_BOX_M = (HAND_LONG_M, HAND_THICK_M)
"""Half the Panda hand's collision box along the closing direction and across it."""
HAND_SPAN_M = (HAND_ABOVE_M, HAND_TOP_M)
"""From and to how far above the fingertips the hand's box reaches (the wrist beyond it)."""


def held(geo: Any) -> str | None:
    """The movable object both fingers touch (robosuite's own grasp check, with each
    finger's whole collision body rather than its pad alone: a wine bottle held by its
    neck, lifted 0.15 m, touches one pad and the other finger above its pad, and the pads
    alone called it loose, so the pick was retried and the bottle dropped).

    Or, when no one object is touched by both, the lower of two touching each other that
    the fingers pinch together, one finger on each (it carries the other): the lower of
    two bowls stacked one in the other is picked by its rim with the upper bowl's wall
    between its own and the inner finger, and the two come up as one (libero_90 task 63,
    "stack the left bowl on the right bowl and place them in the tray": such a pick was
    called loose and tried again three times)."""
    env = geo.env
    groups = env.robots[0].gripper.important_geoms
    fingers = [list(groups["left_finger"]), list(groups["right_finger"])]
    touched: list[list[tuple[str, Any]]] = [[], []]
    for ref in geo.catalog.refs("object"):
        try:
            obj = env.get_object(ref)
            sides = [env._check_grasp(gripper=[f], object_geoms=obj) for f in fingers]
        except (AttributeError, KeyError, ValueError):
            continue
        if all(sides):
            return ref
        for side, touches in enumerate(sides):
            if touches:
                touched[side].append((ref, obj))
    pinched = [
        (a, b)
        for a, obj_a in touched[0]
        for b, obj_b in touched[1]
        if a != b and env.check_contact(obj_a, obj_b)
    ]
    if not pinched:
        return None
    a, b = pinched[0]
    return a if geo.body_position(a)[2] <= geo.body_position(b)[2] else b


def resting_on(geo: Any, ref: str) -> str | None:
    """The movable object ``ref`` rests on by LIBERO's On (within 15 cm of it), or None."""
    states = geo.env.object_states_dict
    near = geo.box(ref)
    if ref not in states or near is None:
        return None
    for other in geo.catalog.refs("object"):
        if other == ref or other not in states:
            continue
        box = geo.box(other)
        if box is None or math.dist(near.centre[:2], box.centre[:2]) > 0.15:
            continue
        if geo.predicate_or_false("on", ref, other):
            return other
    return None


def hand_room(geo: Any, ref: str, at: Vec3, yaw: float) -> bool:
    """Whether the hand above fingers closing at ``at`` (base frame) along ``yaw`` meets
    nothing but ``ref`` beside it: its box (21 cm along the closing direction, 6.4 cm
    across, from 3 cm above the grip site up) turned as it comes down. ``hand_clear``
    counts only what reaches over the thing; the finger room check, the fingers' width
    about the rim. The desk caddy 9 cm from the porcelain mug's near wall stands 6 cm above
    its rim: the hand met the caddy's wall 3 cm above the rim and the fingers shut on
    nothing, three times (libero_90 task 85)."""
    low, high = HAND_SPAN_M
    centre = (at[0], at[1], at[2] + (low + high) / 2)
    half = (*HAND_BOX_M, (high - low) / 2)
    return oriented_blocked(geo, centre, half, yaw, ignore=(ref,)) is None


def level_frame(geo: Any, ref: str) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The region's frame (``region_frame``) with the site's axes (the matrix's columns,
    with their half sizes) reordered so that the third is the one that stands up and the
    first two lie in the table's plane: the footprint of a container's region. A desk
    caddy's front compartment's site stands its second axis up (half size 3.6 cm, the
    compartment's height) and lays its third along the compartment (6.2 cm), so read in the
    site's own order the footprint came out 5.6 by 7.2 cm, no slot, and a book held across
    it was lowered onto the caddy's walls (libero_90 task 73). (A wine rack's tilted cradle
    keeps its own order: :func:`~worlds.libero.placing.lay_down` reads its third axis as
    the cradle's normal, 62 degrees off the vertical.)"""
    frame = geo.region_frame(ref)
    if frame is None:
        return None
    position, matrix, size = frame
    up = int(np.argmax(np.abs(matrix[2])))
    order = [*(i for i in range(3) if i != up), up]
    return position, matrix[:, order], size[:3][order]


def footprint(geo: Any, ref: str) -> np.ndarray:
    """The (x, y) corners (base frame, one row each) of the boxes of an object's collision
    geoms, each turned as it stands: its footprint, which stays true when it is turned (an
    axis-aligned box around a book at 45 degrees is 10 by 10 cm, the book 11 by 3)."""
    corners = [geo.geom_corners(g)[:, :2] for g in geo.collision_geoms(ref)]
    if not corners:
        low, high = geo.world_extent(ref)
        corners = [np.array([low[:2], high[:2]])]
    origin = np.asarray(geo.frame.to_world((0.0, 0.0, 0.0)))[:2]
    return np.concatenate(corners) - origin
