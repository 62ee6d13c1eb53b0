"""How far the hand dips while it pulls a drawer open: the least of a few pitches at which
the hand's box, swept along the pull, meets nothing of the scene.

Level, the fingers closing up and down across the handle bar, the hand stands 10.5 cm
above and below the bar; pulled 14 cm out of a middle drawer, its lower corner ran into a
stove standing 25 cm in front of the cabinet (LIBERO-PRO ``libero_goal_swap`` task 0: the
burner's top 1.8 cm above the table, the hand's bottom 0.2 cm) and the drawer stayed shut.
Dipped, the approach points down into the face and the closing direction turns with it
(still across the bar, which is thin both ways), so the hand's lower end rises and its
back comes up over what stands in front; the wrist stays within reach for small dips
(measured at that scene: 20 degrees opened it 14.9 cm, 30 stalled short of the bar, 45
never grasped it). The first pitch at which the swept box meets no fixture (nothing that
gives way) is taken; with none free, the level pull as before. Movable things the box
brushes are let be: the hand is rounder than its box, and at libero_goal's own middle
drawer the level box grazes the plate's rim beside it (0.7 cm) while the level pull has
opened that drawer on every published state.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from worlds.libero.control import HOME_YAW, side_matrix
from worlds.libero.oriented import box_meets
from worlds.libero.segments import SLOW, Segment

if TYPE_CHECKING:
    from worlds.libero.geometry import LiberoGeometry

__all__ = ["HAND_BOX", "PULL_DIPS", "hand_meets", "pull_dip", "pull_segments"]

PULL_DIPS = (0.0, math.radians(20.0))
"""Pitches tried, level first (every LIBERO drawer that opened level still does)."""
HAND_BOX = ((0.105, 0.032), (0.03, 0.125))
"""The hand's collision box about the gripper's site: half its length along the closing
direction and half its thickness across; where it starts and ends behind the site along
the pointing direction (as ``door_skills`` measures the hand)."""
SWEEP_STEP_M = 0.01


def hand_meets(
    geo: LiberoGeometry, grip: np.ndarray, rotation: np.ndarray, skip: set[int]
) -> str | None:
    """The name of a scene collision geom (not the robot's, not ``skip``) that the hand's
    box meets with the gripper's site at ``grip`` (world) turned ``rotation`` (columns:
    closing, across, pointing), or None."""
    (long, thick), (start, end) = HAND_BOX
    axes = rotation.T  # rows: closing, across, pointing
    centre = grip - axes[2] * (start + end) / 2
    half = np.array([long, thick, (end - start) / 2])
    return box_meets(geo.env, centre, axes, half, skip)


def pull_dip(
    geo: LiberoGeometry,
    cabinet: str,
    start: tuple[float, float, float],
    end: tuple[float, float, float],
    facing: tuple[float, float, float],
    closing: tuple[float, float, float],
) -> float:
    """The first of PULL_DIPS at which the hand, gripping the handle and swept from
    ``start`` to ``end`` (base frame), meets no fixture but ``cabinet``, the one whose
    drawer it pulls; level when none is free. The cabinet is let be: the hand works at its
    face, and dipped its box grazes the handle of the drawer above by a few millimetres at
    the grasp (the fingers brushed it, the pull opened the drawer all the same)."""
    skip = set(geo._geoms(cabinet))
    for ref, item in geo.catalog.items.items():
        if item.kind == "object":
            skip.update(geo._geoms(ref))
    a, b = geo.frame.to_world(start), geo.frame.to_world(end)
    steps = max(1, math.ceil(float(np.linalg.norm(b - a)) / SWEEP_STEP_M))
    for dip in PULL_DIPS:
        rotation = side_matrix(facing, closing, dip)
        if all(
            hand_meets(geo, a + (b - a) * i / steps, rotation, skip) is None
            for i in range(steps + 1)
        ):
            return dip
    return 0.0


def pull_segments(
    geo: LiberoGeometry,
    cabinet: str | None,
    face: tuple[float, float, float],
    handle: tuple[float, float, float],
    end: tuple[float, float, float],
    facing: tuple[float, float, float],
    closing: tuple[float, float, float],
    carry: float,
) -> list[Segment]:
    """From in front of the handle (``face``, the gripper still pointing down there):
    turn to face the cabinet, dipped by :func:`pull_dip`, reach 5 mm past the handle's
    middle, close across the bar, pull to ``end``, release, back off 8 cm and rise to
    ``carry`` still facing it, then turn back to point down (turning while low pulled the
    arm off its line)."""
    towards = np.array([facing[0], facing[1]])
    reach = (handle[0] + towards[0] * 0.005, handle[1] + towards[1] * 0.005, handle[2])
    dip = 0.0 if cabinet is None else pull_dip(geo, cabinet, reach, end, facing, closing)
    pose = {"facing": facing, "closing": closing, "dip": dip}
    back = (end[0] + towards[0] * 0.08, end[1] + towards[1] * 0.08, end[2])
    return [
        Segment("twist", "turn", **pose),  # type: ignore[arg-type]
        Segment("move", "face", face, **pose),  # type: ignore[arg-type]
        Segment("move", "reach", reach, speed=SLOW, tolerance=0.004, **pose),  # type: ignore[arg-type]
        Segment("grip", "grasp", close=True, **pose),  # type: ignore[arg-type]
        Segment("move", "pull", end, speed=SLOW, **pose),  # type: ignore[arg-type]
        Segment("grip", "release", close=False, **pose),  # type: ignore[arg-type]
        Segment("move", "back off", back, speed=SLOW, **pose),  # type: ignore[arg-type]
        Segment("move", "clear", (back[0], back[1], carry), **pose),  # type: ignore[arg-type]
        Segment("twist", "turn back", yaw=HOME_YAW),
    ]
