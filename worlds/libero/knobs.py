"""Turning a fixture's knob (the stove's): grasped by its ridge from above, the wrist turned.

LIBERO-PRO libero_goal_task task 7 ("turn off the stove"): the knob stands 31 cm from the
robot's base axis, at 0.0 against its stop at -0.005 (LIBERO's off: below 0). Pointing down
at it, the controller folded the elbow to its limit 2 cm short of the ridge; the full turn
back strained against the stop, the fingers slid and dragged the knob to +0.51 rad (towards
on), and retried, the gripper came within 2 cm of the base's keep-out zone. The arm's joints
at the grasp and after the turn are now solved before anything moves (``reach.solve``): a
knob out of reach is refused, and otherwise the controller leans towards those joints while
the plan runs; a turn off goes only past the off end. The ridge is held across its own
thin axis (it turns with the knob), at whichever of the two half-turned wrist yaws leaves
the wrist's last joint more room through the turn (libero_90 task 39).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from worlds.libero.control import Vec3, down_matrix, half_turned
from worlds.libero.reach import limit_room, solve
from worlds.libero.segments import ABOVE_M, CARRY_Z, SLOW, Plan, Refusal, Segment

if TYPE_CHECKING:
    from worlds.libero.skills import SkillPlanner

__all__ = ["twist_knob"]

OFF_PAST_RAD = 0.35
"""How far past the end of its off range a knob is turned back (by the wrist). The ridge
turns about 0.25 rad inside the closed fingers before it follows them (it wedges them
apart): 0.15 past, libero_90 task 39 (state 0, on at 0.98 rad) let the knob go at +0.005,
and the opening fingers left it at +0.05, still on; 0.35 past, it ends at its stop."""
TURN_PIECE_RAD = math.pi / 4
"""The most the wrist is turned in one turn segment of a knob's turn."""


def twist_knob(planner: SkillPlanner, ref: str, on: bool, ee: Vec3) -> Plan | Refusal:
    """Grasp a fixture's knob by its ridge from above and turn the wrist: on by LIBERO's
    "on" angle, off back just past the end of its off range; refused (nothing moved) when
    the arm cannot hold the gripper there."""
    refusal = planner._kind(ref, "fixture")
    if refusal is not None:
        return refusal
    knob = planner.geo.articulation.knob(ref)
    if knob is None:
        return Refusal(f"{ref} has no knob or switch to turn")
    if planner.geo.held_ref() is not None:
        return Refusal(f"the gripper holds {planner.geo.held_ref()}; place it first")
    (x, y, z), yaw, turn = knob
    above = max(z + ABOVE_M, CARRY_Z - 0.05)
    angle = turn if on else -turn
    state = planner.geo.articulation.knob_value(ref)
    if not on and state is not None:
        # back only as far as past the off end: turned the full way from a knob already
        # at its end (LIBERO-PRO's "turn off the stove" starts at 0.0, its stop at
        # -0.005, off below 0), the wrist strained against the stop and the fingers slid
        value, off_end = state
        angle = -math.copysign(max(value - off_end, 0.0) + OFF_PAST_RAD, turn)
    # the arm's joints at the grasp and after the turn, solved before anything moves:
    # refused if it cannot get there, else the controller leans towards them
    # the hand is the same half turned, so the ridge is held alike at ``yaw`` or at
    # ``yaw + pi``; the knob turns one way only (off is the bottom of its joint's range),
    # so the wrist's turn is fixed, and from one of the two grasps it can run the wrist's
    # last joint into its limit: libero_90 task 39, state 1, the knob on at 1.86 rad, the
    # grasp at 0 put joint 7 at 1.63 rad and the turn back needed 3.64 of its 2.90; the
    # half-turned grasp holds it at -0.69 and turns it to 1.32. Of the two, the one whose
    # last joint keeps the more room from its limits at the grasp and after the turn: the
    # solution spreads the turn over the arm, the controller turns the last joint alone
    # (state 2: solved to end at 2.80 of 2.90, it ran joint 7 into its stop a quarter of
    # the turn short and the knob stayed on at +0.13)
    grasp_world = planner.geo.frame.to_world((x, y, z))
    reasons: list[str] = []
    held: list[tuple[float, float, list[np.ndarray]]] = []
    for grip_yaw in (yaw, half_turned(yaw)):
        solved, why = solve(
            planner.geo.env,
            [(grasp_world, down_matrix(grip_yaw)), (grasp_world, down_matrix(grip_yaw + angle))],
        )
        if why is not None:
            reasons.append(why)
            continue
        room = min(float(limit_room(planner.geo.env, q)[-1]) for q in solved)
        held.append((room, grip_yaw, solved))
    if not held:
        return Refusal(f"the arm cannot hold the gripper on {ref}'s knob: {reasons[0]}")
    _, yaw, joints = max(held, key=lambda h: h[0])
    # the wrist turns in pieces: one turn segment stops after 25 controller steps (about
    # 1.4 rad), and a knob on at 1.86 rad turned back 2.0 in one was let go at +0.24 still
    # turning; it coasted to its stop and sprang back to +0.03, still on (libero_90 task 39)
    pieces = max(1, math.ceil(abs(angle) / TURN_PIECE_RAD))
    # over the grasp at the height the gripper travels at (turning the wrist up there),
    # then straight down: a diagonal descent turning the wrist low stalled short of a
    # bowl at the side of the table (libero_spatial task 1)
    travel = planner.travel_height(above, ee[2])
    segments = [
        Segment("grip", "open", close=False, yaw=yaw),
        *planner.rise(ee, travel),
        Segment("move", "over", (x, y, travel), yaw=yaw),
        Segment("move", "approach", (x, y, above), yaw=yaw),
        Segment("move", "grasp", (x, y, z), speed=SLOW, yaw=yaw, tolerance=0.004),
        Segment("grip", "close", close=True, yaw=yaw),
        *(Segment("twist", "turn", yaw=yaw + angle * k / pieces) for k in range(1, pieces + 1)),
        Segment("grip", "release", close=False, yaw=yaw + angle),
        Segment("move", "retreat", (x, y, above), speed=SLOW, yaw=yaw + angle),
    ]
    return Plan(
        tuple(segments),
        "approach, grasp the knob, turn it, release, retreat",
        yaw,
        posture=tuple(float(v) for v in joints[0]),
    )
