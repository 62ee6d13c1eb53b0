"""Where a push goes, and the plate whose way is blocked.

A push aims at the free spot of its target region nearest the middle (``clearance``), not
at the middle itself: libero_goal task 5's region in front of the stove has the cream
cheese box at its edge, and a plate pushed to the middle would lie on the box. A flat thing
wider than the fingers (a plate), whose straight slide to that spot would run into
something standing on the table, cannot be pushed round it: the light plate's sloped rim
rides up on what it meets and tips over the fingers (state 0: it stopped on the cream
cheese, 8 cm out of the region), and the way round runs past 0.74 m from the robot, where
the Panda cannot keep the fingers on the table. Such a plate is held by its rim, lifted
just clear of what stands in the way, carried over it and set down on the spot; the
skill's message says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from worlds.libero.clearance import free_spot, in_the_way, obstacles
from worlds.libero.control import Vec3
from worlds.libero.geometry import FINGER_OPEN_M, FLAT_M, Box
from worlds.libero.segments import SLOW, Plan, Segment

if TYPE_CHECKING:
    from worlds.libero.skills import SkillPlanner

__all__ = ["carry_over", "push_spot"]

OVER_M = (0.05, 0.07, 0.09)
"""How high a blocked plate is carried: its bottom the first of these above where it stood
at which its way is free."""
CARRY_M_S = 0.2
"""Faster than a push (the step budget of one skill); the rim held firmly."""


def push_spot(planner: SkillPlanner, ref: str, obj: Box, goal: Box) -> np.ndarray:
    """Where in ``goal`` (a region) to push ``ref`` to: its free spot nearest the middle,
    else the middle."""
    things = obstacles(planner.geo, ref, obj.bottom + 0.005, obj.top)
    region = (
        np.array(goal.centre[:2]) - np.array(goal.size[:2]) / 2,
        np.array(goal.centre[:2]) + np.array(goal.size[:2]) / 2,
    )
    spot = free_spot(region, np.array(obj.size[:2]) / 2, things)
    return np.array(goal.centre[:2]) if spot is None else spot


def carry_over(
    planner: SkillPlanner, ref: str, obj: Box, spot: np.ndarray, target: str, ee: Vec3
) -> Plan | None:
    """For a plate whose straight slide to ``spot`` runs into something: held by its rim,
    carried just over it and set down there; None for anything else, or when its way is
    free, or blocked even at that height."""
    flat = obj.size[2] < FLAT_M and min(obj.size[:2]) > FINGER_OPEN_M
    if not flat:
        return None
    geo = planner.geo
    start = np.array(obj.centre[:2])
    half = np.array(obj.size[:2]) / 2
    blocker = in_the_way(start, spot, half, obstacles(geo, ref, obj.bottom + 0.005, obj.top))
    if blocker is None:
        return None
    for over in OVER_M:
        high = obstacles(geo, ref, obj.bottom + over, obj.top + over + 0.01)
        if in_the_way(start, spot, half, high) is None:
            break
    else:
        return None
    (gx, gy, gz), yaw, _ = geo.grasp(ref)
    gz = max(gz, planner.floor_z + 0.01)
    x, y = gx + float(spot[0] - start[0]), gy + float(spot[1] - start[1])
    above = min(planner.ceiling_z - 0.02, max(obj.top + 0.08, gz + 0.04))
    travel = planner.travel_height(above, ee[2])
    lifted = gz + over
    segments = [
        *planner.grasp_from_above(ee, (gx, gy, gz), above=above, travel=travel, yaw=yaw),
        Segment("move", "lift", (gx, gy, lifted), speed=SLOW, yaw=yaw),
        Segment("move", "carry", (x, y, lifted), speed=CARRY_M_S, yaw=yaw),
        Segment("move", "lower", (x, y, gz + 0.004), speed=SLOW, yaw=yaw),
        Segment("grip", "release", close=False),
        Segment("move", "retreat", (x, y, travel)),
    ]
    why = f"{blocker.split('_g')[0]} stands in the way of a slide"
    return Plan(tuple(segments), f"{why}: {ref} held by its rim, carried over it to {target}")
