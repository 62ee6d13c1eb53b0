"""Turning a ``sim.libero`` action into a skill plan and running it on the controller.

:func:`plan_action` picks the :class:`~worlds.libero.skills.SkillPlanner` skill an
action names (the same plan serves ``describe_motion`` and ``execute``), and
:func:`run_plan` drives robosuite's OSC controller through the plan's segments (gripper
orientation, grip, knob twist, hold or a move) and reports which moves reached their target.
Kept apart from :mod:`.driver`, which owns the locking, the stop event and the result.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from embodiment.geometry import point_text
from worlds.libero.control import Arm, down_matrix, lean_matrix, side_matrix
from worlds.libero.segments import Plan, Refusal
from worlds.libero.skills import SkillPlanner

__all__ = ["plan_action", "run_plan"]

logger = logging.getLogger("worlds.libero.driver")
"""The driver's logger: these segment lines were logged by the driver before the split, and
configurations that name that logger keep seeing them."""


def plan_action(
    planner: SkillPlanner,
    arm: Arm,
    action: str,
    args: dict[str, Any],
    home: tuple[float, float, float],
    speed: float | None,
) -> Plan | Refusal:
    """The plan of ``action`` from where the gripper is now (a Refusal if it cannot be)."""
    ee = arm.ee_position()
    if action == "pick":
        return planner.pick(args["ref"], ee)
    if action == "place":
        return planner.place(args["ref"], args["target"], args.get("relation"), ee)
    if action == "push":
        return planner.push(args["ref"], args["target"], ee)
    if action in {"turn_on", "turn_off"}:
        return planner.twist_knob(args["ref"], action == "turn_on", ee)
    if action in {"open", "close"}:
        return planner.drawer(args["ref"], action == "open", ee)
    return planner.simple(action, args, ee, home, speed)


def run_plan(arm: Arm, plan: Plan) -> list[tuple[str, bool]]:
    """Run ``plan`` on ``arm``: (label, reached) for every move segment, in order; with the
    plan's posture as the controller's null-space target meanwhile. Pointing down at the
    stove's knob 31 cm from the base (libero_goal task 7), the controller, pulled towards
    the initial state's joints, folded the elbow to its limit and stopped 2 cm short; pulled
    towards the joints solved at the grasp it comes down on the ridge (measured: 3 mm off)."""
    controller = arm.env.env.robots[0].controller
    saved = np.array(controller.initial_joint, dtype=float)
    if plan.posture is not None:
        controller.update_initial_joints(np.array(plan.posture))
    try:
        return _run(arm, plan)
    finally:
        if plan.posture is not None:
            controller.update_initial_joints(saved)


def _run(arm: Arm, plan: Plan) -> list[tuple[str, bool]]:
    reached: list[tuple[str, bool]] = []
    for segment in plan.segments:
        if segment.facing is not None:
            arm.orientation = side_matrix(segment.facing, segment.closing, segment.dip)
        elif segment.yaw is not None:
            arm.orientation = down_matrix(segment.yaw)
            if segment.lean is not None:
                arm.orientation = lean_matrix(segment.lean) @ arm.orientation
        before = arm.steps
        if segment.kind == "grip":
            arm.grip(segment.close)
        elif segment.kind == "twist":
            arm.turn(25)
        elif segment.kind == "hold":
            arm.hold(segment.steps)
        elif segment.target is not None:
            ok = arm.move(
                segment.target,
                speed=segment.speed,
                tolerance=segment.tolerance,
                press=segment.press,
            )
            reached.append((segment.label, ok))
        logger.debug(
            "%s: %d steps, gripper at %s (target %s), width %.3f",
            segment.label,
            arm.steps - before,
            point_text(arm.ee_position()),
            point_text(segment.target) if segment.target is not None else "-",
            arm.gripper_width(),
        )
    arm.hold(3)
    return reached


SETTLED_M_S = 0.01
"""A movable object slower than this has come to rest."""
SETTLE_MAX_STEPS = 30


def settle(arm: Arm, speeds: Any) -> int:
    """Hold still until every movable object has come to rest (``speeds()``: their speeds,
    m/s), at most SETTLE_MAX_STEPS controller steps; the steps taken. A skill's result is
    judged afterwards: a mug still rocking on the plate it was released on passed LIBERO's
    On when judged at once and had slid off by the end of the task (libero_10 task 4)."""
    for step in range(SETTLE_MAX_STEPS):
        if max(speeds(), default=0.0) < SETTLED_M_S:
            return step
        arm.hold(1)
    return SETTLE_MAX_STEPS
