"""A thing pinned under another movable thing that rests partly on it: the other lifted off
and set down clear first, then the thing picked.

LIBERO-PRO libero_object_temp_y0.4 task 1, state 0 (``pinned``): the basket's floor rests on
the cream cheese box's far edge, and the hand coming down to the box meets the basket's
wall. The basket itself is picked by its rim (its wall 7 mm thick, the fingers across it)
and comes up whole; set down a few centimetres further from the box, it leaves the hand
room. So the pick lifts the other thing off (just above the pinned thing's top), carries it
straight away from it the least distance (:data:`MOVES_M`) after which the pinned thing's
own pick has the hand free, sets it down and lets go, then picks the thing as it would
anywhere. Every waypoint is worked out before anything moves, as the envelope requires: the
pinned thing's pick is planned with the other moved there in the simulator's state, which
is put back as it was straight after (positions, velocities and the solver's warm start).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np

from worlds.libero.control import Vec3
from worlds.libero.geometry import FINGER_OPEN_M
from worlds.libero.holding import hand_room
from worlds.libero.oriented import oriented_blocked
from worlds.libero.pinned import resting_on_it
from worlds.libero.segments import SLOW, Plan, Segment

if TYPE_CHECKING:
    from worlds.libero.skills import SkillPlanner

__all__ = ["MOVES_M", "lift_off", "moved_by"]

MOVES_M = (0.04, 0.06, 0.08, 0.1, 0.12, 0.14)
"""How far the other thing may be carried away from the pinned one, least first."""
CLEAR_M = 0.015
"""How far above the pinned thing's top the other's bottom is carried."""
SET_DOWN_M = 0.005
"""How far above where it was grasped the other thing is let go (it settles level)."""


@contextmanager
def moved_by(geo: Any, ref: str, shift: np.ndarray) -> Iterator[None]:
    """The simulator's state with the free body ``ref`` moved ``shift`` (x, y) meanwhile,
    put back exactly afterwards (nothing is stepped: only the kinematics are recomputed)."""
    sim = geo.env.sim
    model, data = sim.model, sim.data
    body = geo.env.obj_body_id[ref]
    joint = int(model.body_jntadr[body])
    address = int(model.jnt_qposadr[joint])
    saved = (data.qpos.copy(), data.qvel.copy(), data.qacc_warmstart.copy())
    try:
        data.qpos[address : address + 2] += shift
        sim.forward()
        yield
    finally:
        data.qpos[:], data.qvel[:], data.qacc_warmstart[:] = saved
        sim.forward()


def _free_there(geo: Any, other: str) -> bool:
    """Whether ``other``, where it stands now (moved), overlaps nothing but itself above the
    table (its box from 1 cm over its bottom)."""
    box = geo.box(other)
    if box is None:
        return False
    low = box.bottom + 0.01
    centre = (box.centre[0], box.centre[1], (low + box.top) / 2)
    half = (box.size[0] / 2, box.size[1] / 2, (box.top - low) / 2)
    return oriented_blocked(geo, centre, half, 0.0, ignore=(other,)) is None


def lift_off(planner: SkillPlanner, ref: str, ee: Vec3) -> Plan | None:
    """The plan that lifts what rests partly on ``ref`` off it, sets it down clear and picks
    ``ref``; None when nothing rests on it, more than one thing does, the other cannot be
    grasped, or no move within :data:`MOVES_M` leaves the hand room at ``ref``'s grasp."""
    geo = planner.geo
    over = resting_on_it(geo, ref)
    if len(over) != 1 or geo.catalog.get(over[0]) is None:
        return None
    other = over[0]
    box, mine = geo.box(other), geo.box(ref)
    if box is None or mine is None or geo.hollow(ref):
        return None
    (gx, gy, gz), yaw, width = geo.grasp(other)
    if width > FINGER_OPEN_M - 0.002:
        return None
    way = np.array(box.centre[:2]) - np.array(mine.centre[:2])
    way = way / max(float(np.linalg.norm(way)), 1e-9)
    lift = gz + max(0.02, mine.top + CLEAR_M - box.bottom)
    travel = planner.travel_height(box.top + 0.08, ee[2])
    above = min(planner.ceiling_z - 0.02, box.top + 0.08)
    for distance in MOVES_M:
        shift = way * distance
        tx, ty = gx + float(shift[0]), gy + float(shift[1])
        if not planner.within_reach(tx, ty):
            continue
        with moved_by(geo, other, shift):
            if not _free_there(geo, other) or other in resting_on_it(geo, ref):
                continue
            (x, y, z), turn, _ = geo.grasp(ref)
            if not hand_room(geo, ref, (x, y, z), turn):
                continue
            after = (tx, ty, travel)
            picked = planner.pick(ref, after)
        if not isinstance(picked, Plan):
            continue
        segments = [
            *planner.grasp_from_above(ee, (gx, gy, gz), above=above, travel=travel, yaw=yaw),
            Segment("move", "lift off", (gx, gy, lift), speed=SLOW, yaw=yaw),
            Segment("move", "carry clear", (tx, ty, lift), speed=SLOW, yaw=yaw),
            Segment("move", "set down", (tx, ty, gz + SET_DOWN_M), speed=SLOW, yaw=yaw),
            Segment("grip", "let go", close=False, yaw=yaw),
            Segment("move", "up", after, speed=SLOW, yaw=yaw),
            *picked.segments,
        ]
        how = f"lift {other} off it, set it down {distance * 100:.0f} cm away, {picked.description}"
        return Plan(
            tuple(segments),
            how,
            picked.yaw,
            skills=picked.skills + 1,
            posture=picked.posture,
        )
    return None
