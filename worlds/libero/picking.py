"""The pick as a plan: a grasp from above, and the ways round what stops one.

The plain pick comes down over the grasp point with the hand pointing down, closes the
fingers and lifts. Each fallback here answers one thing the scene can do to that: the
thing stands past where the hand pointing down reaches (leaned out), the forearm meets
something on the way down (another arm posture), every rim grasp's hand lands on an
overhang (dragged out first), it stands low by an overhang's edge (slid in from beside),
the hand has no room beside it (pushed clear, else grasped askew), it is under an
overhang (slid out before the lift) or close to the robot's base (drawn out to where the
elbow unfolds). They live in their own module so the skill planner reads as the list of
skills.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from worlds.libero.askew import askew_grasp
from worlds.libero.clearance import TAKE_LOAD_STEPS, away_from_base, way_from_under
from worlds.libero.compartment import by_handle
from worlds.libero.control import Vec3
from worlds.libero.dragging import (
    comes_down,
    drag_out,
    drag_segments,
    posture_down,
    rim_grasp_at,
)
from worlds.libero.leaning import far_pick
from worlds.libero.lifting_off import lift_off
from worlds.libero.nudging import nudge
from worlds.libero.pinned import pinned_under
from worlds.libero.segments import ABOVE_M, SLOW, Plan, Refusal, Segment
from worlds.libero.slide_in import SLID, slid_pick
from worlds.libero.wrist import reached_yaw

if TYPE_CHECKING:
    from worlds.libero.skills import SkillPlanner

__all__ = ["MAX_GRASP_M", "pick_plan"]

MAX_GRASP_M = 0.078
"""Widest thing the fingers close around (they open to 0.08 m)."""


def pick_plan(planner: SkillPlanner, ref: str, ee: Vec3) -> Plan | Refusal:
    """The plan that grasps ``ref`` and lifts it clear, or why it cannot be done here.

    The caller has checked that ``ref`` is an object and that the gripper is empty.
    """
    box = planner.geo.box(ref)
    assert box is not None
    on_handle = by_handle(planner.geo, ref)  # a mug for a door, a pan for a low shelf
    grasp = planner.geo.grasp(ref) if on_handle is None else (*on_handle, 0.02)
    (x, y, grasp_z), yaw, width = grasp  # the turn the wrist reaches from here:
    yaw = reached_yaw(planner.geo, yaw, [(x, y, grasp_z + 0.15), (x, y, grasp_z)])
    if width > MAX_GRASP_M:
        return Refusal(
            f"{ref} is {width:.3f} m across where it would be grasped; the "
            f"fingers open to {MAX_GRASP_M:.3f} m"
        )
    grasp_z = max(grasp_z, planner.floor_z + 0.01)
    above = min(planner.ceiling_z - 0.02, max(box.top + ABOVE_M, grasp_z + 0.04))
    lift = planner.travel_height(grasp_z + 0.15)
    travel = planner.travel_height(above, ee[2])
    how = "approach, grasp, lift"
    if on_handle is None:  # out where the hand pointing down does not reach: leaned out
        far = far_pick(planner, ref, ee, (x, y, grasp_z), yaw, lift)
        if far is not None:
            return far
    # where the arm alone meets something (an open drawer beside a bowl) it comes down
    # in another posture; a bowl whose every rim grasp's hand comes down on something
    # reaching over it (a drawer opened over it) is dragged out by its inside first
    shift = np.zeros(2)
    segments: list[Segment] = []
    drag = None
    posture = None
    if on_handle is None and not comes_down(planner.geo, ref, (x, y, grasp_z), yaw, box.top):
        posture = posture_down(planner.geo, ref, (x, y, grasp_z), yaw, box.top)
        if posture is not None:
            yaw = posture[0]
        elif planner.geo.hollow(ref):
            drag = drag_out(planner.geo, ref)
    if drag is not None:
        regrasp = rim_grasp_at(planner.geo, ref, drag.shift)
        assert regrasp is not None  # drag_out chose the drag for it
        (x, y, grasp_z), yaw = regrasp
        shift = drag.shift
        segments = drag_segments(planner, drag, ee, above, travel)
        ee = (drag.end[0], drag.end[1], above)
        how = "approach, drag out by its inside, grasp, lift"
    slid = None
    if on_handle is None and drag is None and posture is None:  # low, by an overhang's
        spare = (MAX_GRASP_M - width) / 2  # edge: in from beside; the open fingers' room
        slid = slid_pick(planner, ref, ee, (x, y, grasp_z), yaw, travel, lift, spare)
    if slid is not None:
        return Plan(tuple(slid), f"approach beside it, slide in, {SLID}, lift", yaw)
    at = (x, y, grasp_z)
    nudged = nudge(planner, ref, ee, at, yaw, travel) if drag is None else None
    if on_handle is None and nudged is not None:  # low, the hand has no room: pushed clear
        pushed, (x, y, grasp_z), yaw = nudged
        segments += pushed
        ee = pushed[-1].target or ee
        how = f"push it clear, {how}"
    elif on_handle is None and drag is None and (why := pinned_under(planner.geo, ref, at, yaw)):
        return lift_off(planner, ref, ee) or Refusal(why)  # (pinned.py, lifting_off.py)
    elif (
        on_handle is None
        and drag is None
        and posture is None
        and (askew := askew_grasp(planner.geo, ref, at, yaw))
    ):  # low, hemmed in, no push frees it: the fingers turned off square (askew.py)
        (x, y, grasp_z), yaw = askew
        yaw = reached_yaw(planner.geo, yaw, [(x, y, grasp_z + 0.15), (x, y, grasp_z)])
        how = f"turn the hand askew, {how}"
    segments += planner.grasp_from_above(ee, (x, y, grasp_z), above=above, travel=travel, yaw=yaw)
    # from under an overhang (a drawer opened over it) it is slid out first, just off the
    # table (hemmed in there: just under the overhang), and lifted where nothing is above
    under = way_from_under(planner.geo, ref, lift + box.top - grasp_z, shift)
    raised, slide = under if under is not None else (0.0, None)
    label, rise = "slide out", max(0.005, raised)
    if slide is not None:
        over = "raise under the overhang, " if raised else ""
        how = how.replace("grasp,", f"grasp, {over}slide out from under,")
        if raised:
            segments.append(Segment("move", "raise", (x, y, grasp_z + rise), SLOW, yaw=yaw))
    elif drag is None:  # close to the robot's base: out to where the elbow unfolds
        slide = away_from_base(planner.geo, ref, (x, y, grasp_z))
        if slide is not None:  # the folded arm takes up the load first
            label, rise = "draw out", 0.03
            how = how.replace("grasp,", "grasp, draw out from the robot's base,")
            segments.append(Segment("hold", "take the load", steps=TAKE_LOAD_STEPS))
    if slide is not None:
        x, y = x + float(slide[0]), y + float(slide[1])
        out = (x, y, grasp_z + rise)
        segments.append(Segment("move", label, out, speed=SLOW, yaw=yaw))
    segments.append(Segment("move", "lift", (x, y, lift), speed=SLOW, yaw=yaw))
    return Plan(
        tuple(segments),
        how,
        yaw,
        skills=2 if drag is not None else 1,
        posture=None if posture is None else posture[1],
    )
