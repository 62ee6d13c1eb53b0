"""A pick beyond the reach of a hand pointing straight down: the hand leans out over it.

LIBERO-PRO's position variants shift the things on the floor towards the robot's far side:
``libero_object_temp_x0.5`` stands the can, the bottle or the pudding 0.86-0.87 m from the
base's axis. Pointing down at the grasp, the Panda came 5-10 cm short (``reach.solve`` on
both finger turns) and the arm strayed 6 cm off its path on the way down, three times. With
the hand leaned out 20-30 degrees about the fingers' closing direction, the same grasp
point is held with every joint inside its limits: the wrist stays behind the fingers
instead of above them. The fingers keep closing horizontally (the lean turns the hand about
the line between them), so both tips stay at the grasp's height.

Only a grasp the controller does not reach by itself, commanded to point down (the arm holds
it with the hand tilted out by more than ``reach.CONTROLLER_TILT_RAD``), is leaned; when no
lean (up to :data:`MAX_LEAN_RAD`) is reachable either, the pick is refused, saying how far
out the thing is and how short the arm falls, with nothing moved.

A lean about the closing direction keeps both fingertips at the grasp's height, but only
leans the hand out when the fingers close across the way out. A rim grasp of a bowl at its
near side closes along the way out (across the rim's wall): LIBERO-PRO libero_spatial_swap
task 6's bowl, its rim 0.835 m out, was refused, and picked from above the fingers closed
on nothing and dragged it in. When no lean about the closing direction holds, the hand is
leaned out about the horizontal square to the way out (``reach.outward_hand``): the finger
further out comes down lower, inside the bowl, by half the fingers' opening times the
lean's sine (1 cm at 15 degrees).

Close to the robot's base the arm falls short the other way: libero_90 task 62, state 1,
stands the salad dressing 0.25 m from the base's axis, and pointing down at its neck the
elbow (joint 4) folds to its limit with the fingers 2-4 cm short at either turn; leaned
out, it folds further, and the pick was refused. There (nearer than
``clearance.FOLDED_REACH_M``) the hand is leaned in, its fingers' end towards the base:
the wrist stands further out and the elbow unfolds (15 degrees holds that grasp; which
lean is taken: :data:`SHOULDER_TURN_RAD`). Closed, the thing is drawn out along the table
to where the elbow unfolds (``clearance.away_from_base``, as the pick from above does) and
lifted there; where something stands in the way out (there, a bowl), it is lifted where
it stands. Leaned in, the hand's collision box meets the bottle's top 1 cm above the neck
grasp: the controller stops there and the fingers close 3 cm below the top, which holds
it (the move is reported stopped short at the grasp, as a bottle's pick from above is).
Moved 0.18 m from the base (a scene of our own) the grasp is within 2 cm of the base's
keep-out zone, and the zone's guard stops the pick: nearer than that it is not done.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from worlds.libero.clearance import FOLDED_REACH_M, TAKE_LOAD_STEPS, away_from_base
from worlds.libero.control import Vec3, down_matrix, half_turned, lean_matrix
from worlds.libero.geometry import FINGER_OPEN_M, Box
from worlds.libero.reach import STRETCHED_M, down_tilt, outward_lean, solve
from worlds.libero.segments import SLOW, Plan, Refusal, Segment

if TYPE_CHECKING:
    from worlds.libero.skills import SkillPlanner

__all__ = [
    "LEANS_RAD",
    "MAX_LEAN_RAD",
    "closings",
    "far_pick",
    "half_turned",
    "lean_vector",
]

LEANS_RAD = tuple(math.radians(d) for d in (15, 20, 25, 30, 35, 40))
"""The leans tried, least first: the least that the arm holds at every pose is taken."""
MAX_LEAN_RAD = LEANS_RAD[-1]
BACK_M = 0.08
"""The hand comes onto the grasp along its own axis from this far back."""
SHOULDER_TURN_RAD = 1.0
"""Leaned in by the robot's base, a lean whose solution turns the shoulder (joints 1-3)
less than this (norm, radians) from where it is is taken first, the least such lean; else
the least that holds at all. There the solver finds two kinds of solution: the arm much as
it stands with the elbow folded further (the shoulder turned 0.2-0.7 rad), and one with the
shoulder swung back to its limit and the upper arm turned 1.6 rad (2.2 rad or more), which
the controller, moving the hand from where it is, does not take: the salad dressing moved
to 0.20 m from the base (a scene of our own), where only the second holds at 15 degrees,
leaned 15 degrees stopped 3 cm short and closed on nothing; at 25 degrees (the first) it
was held. Joint room is no guide: asked for 0.05 rad at every joint, a lean of the second
kind was taken at 0.23 m and the place ran out of steps."""
IN_M = 0.05
"""Lifted, the thing is drawn in to this much inside STRETCHED_M, still leaned: the next
skill turns the hand to point down, and from 0.87 m out the first place strayed 6 cm off
its path (the arm cannot point down there); from inside the stretch it turns freely."""


def lean_vector(yaw: float, angle: float, outward: np.ndarray) -> tuple[float, float, float]:
    """The rotation vector (world axes) that leans a hand pointing down at ``yaw`` by
    ``angle`` about its closing direction, its fingers' end towards ``outward`` (xy)."""
    u = np.array([math.cos(yaw), math.sin(yaw), 0.0])
    for sign in (1.0, -1.0):
        vec = u * angle * sign
        axis = (lean_matrix(vec) @ down_matrix(yaw))[:, 2]
        if float(axis[:2] @ outward) >= 0.0:
            return (float(vec[0]), float(vec[1]), float(vec[2]))
    return (0.0, 0.0, 0.0)


def closings(box: Box, grasp: Vec3, yaw: float) -> list[tuple[float, Vec3]]:
    """(finger yaw, grasp point) to try leaned, the most across the way out first: the
    skill's own grasp, and the fingers closing square to the way out across the middle of
    ``box`` when its width that way (as its axis-aligned box gives it) fits the fingers.
    The lean turns the hand about the closing direction, so only a closing direction
    across the way out leans the hand out; the ketchup's narrowest width (3.7 cm) runs
    along it."""
    x, y, z = grasp
    way = math.atan2(y, x)
    square = way + math.pi / 2
    width = abs(box.size[0] * math.sin(way)) + abs(box.size[1] * math.cos(way))
    options = [(yaw, grasp)]
    if width <= FINGER_OPEN_M - 0.004:
        options.append((math.atan2(math.sin(square), math.cos(square)), (*box.centre[:2], z)))
    options.sort(key=lambda o: -abs(math.sin(o[0] - way)))
    return options


def far_pick(
    planner: SkillPlanner,
    ref: str,
    ee: Vec3,
    grasp: Vec3,
    yaw: float,
    lift: float,
) -> Plan | Refusal | None:
    """The pick of ``ref`` at ``grasp`` (base frame, fingers closing at ``yaw``) with the
    hand leaned out, when the controller, commanded to point down there, does not bring the
    hand to it by itself (``reach.down_tilt`` within ``CONTROLLER_TILT_RAD`` at either
    finger turn), or leaned in towards the base where the thing stands nearer it than
    ``FOLDED_REACH_M`` (the elbow folded: leaning in unfolds it); a Refusal when no lean
    reaches it either; None when the usual pick from above reaches it."""
    geo = planner.geo
    x, y, z = grasp
    out = math.hypot(x, y)
    if down_tilt(geo.env, geo.frame, [(x, y, z + 0.15), grasp], yaw) is not None:
        return None
    poses = [(geo.frame.to_world(p), down_matrix(yaw)) for p in ((x, y, z + 0.15), grasp)]
    short = solve(geo.env, poses)[1] or "the arm stretched"
    box = geo.box(ref)
    assert box is not None
    outward = np.array([x, y]) / out
    near = out < FOLDED_REACH_M
    # near the base: leaned in, the shoulder much as it is first, then any way; then out
    tries = [(-1.0, SHOULDER_TURN_RAD), (-1.0, math.inf), (1.0, math.inf)]
    for sign, shoulder in tries if near else tries[2:]:
        for angle in LEANS_RAD:
            for closing, at in closings(box, grasp, yaw):
                for turn in (closing, half_turned(closing)):
                    vec = lean_vector(turn, angle, sign * outward)
                    plan = _leaned(planner, ref, ee, at, turn, vec, sign * angle, lift, shoulder)
                    if plan is not None:
                        return plan
        for angle in LEANS_RAD:  # the fingers closing along the way out: their line tilts
            for turn in (yaw, half_turned(yaw)):
                vec = outward_lean(grasp, sign * angle)
                plan = _leaned(planner, ref, ee, grasp, turn, vec, sign * angle, lift, shoulder)
                if plan is not None:
                    return plan
    if near:
        return Refusal(
            f"{ref} is {out:.2f} m from the robot's base axis, too close to it for the arm: "
            f"pointing down at it, {short}, and leaned in towards the base or out, up to "
            f"{math.degrees(MAX_LEAN_RAD):.0f} degrees, it cannot hold the grasp either; "
            "nothing moved"
        )
    return Refusal(
        f"{ref} is {out:.2f} m from the robot's base axis, out of the arm's reach: pointing "
        f"down at it, {short}, and leaned out up to {math.degrees(MAX_LEAN_RAD):.0f} degrees "
        "it cannot hold the grasp either; nothing moved"
    )


def _leaned(
    planner: SkillPlanner,
    ref: str,
    ee: Vec3,
    grasp: Vec3,
    turn: float,
    vec: Vec3,
    angle: float,
    lift: float,
    shoulder: float = math.inf,
) -> Plan | None:
    """The leaned pick of ``ref`` at ``grasp`` with the fingers at ``turn``, the hand leaned
    by the rotation vector ``vec`` (``angle`` radians: negative, leaned in towards the base),
    when the arm holds every pose of it (``reach.solve``), at the grasp with the shoulder
    (joints 1-3) turned less than ``shoulder`` from where it is; else None. Leaned out, it is
    lifted and drawn in; leaned in, drawn out along the table (where nothing stands in the
    way) and lifted there."""
    geo = planner.geo
    x, y, z = grasp
    hand = lean_matrix(np.array(vec)) @ down_matrix(turn)
    axis = hand[:, 2]
    back = (x - axis[0] * BACK_M, y - axis[1] * BACK_M, z - axis[2] * BACK_M)
    over = (back[0], back[1], planner.travel_height(back[2], ee[2]))
    ways: list[list[tuple[str, Vec3]]] = [[("lift", (x, y, lift))]]
    if angle > 0:
        scale = (STRETCHED_M - IN_M) / math.hypot(x, y)
        ways = [[("lift", (x, y, lift)), ("draw in", (x * scale, y * scale, lift))]]
    elif (slide := away_from_base(geo, ref, grasp)) is not None:  # leaned in, by the base:
        sx, sy = x + float(slide[0]), y + float(slide[1])  # out to where the elbow unfolds
        ways.insert(0, [("draw out", (sx, sy, z + 0.03)), ("lift", (sx, sy, lift))])
    robot = geo.env.robots[0]
    now = np.array(geo.env.sim.data.qpos[np.array(robot._ref_joint_pos_indexes)], dtype=float)
    for after in ways:
        targets = [over, back, grasp, *(p for _, p in after)]
        joints, why = solve(geo.env, [(geo.frame.to_world(p), hand) for p in targets])
        if why is None and float(np.linalg.norm(joints[2][:3] - now[:3])) < shoulder:
            break
    else:
        return None
    segments = [
        Segment("grip", "open", close=False, yaw=turn, lean=vec),
        *planner.rise(ee, over[2]),
        Segment("move", "over", over, yaw=turn, lean=vec),
        Segment("move", "approach", back, yaw=turn, lean=vec),
        Segment("move", "grasp", grasp, speed=SLOW, tolerance=0.004, yaw=turn, lean=vec),
        Segment("grip", "close", close=True, yaw=turn, lean=vec),
    ]
    if angle < 0:  # the folded arm takes up the load first (``clearance.TAKE_LOAD_STEPS``)
        segments.append(Segment("hold", "take the load", steps=TAKE_LOAD_STEPS))
    segments += [Segment("move", label, p, speed=SLOW, yaw=turn, lean=vec) for label, p in after]
    how = ", ".join(["approach, grasp", *(label for label, _ in after)])
    way = "out" if angle > 0 else "in"
    return Plan(tuple(segments), f"lean {way} {math.degrees(abs(angle)):.0f} degrees, {how}", turn)
