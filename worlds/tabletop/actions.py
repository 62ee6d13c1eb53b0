"""The tabletop simulator's actions: the shared vocabulary (:mod:`embodiment.actions`) in
the tabletop's words, plus what only it has (the gripper's width and force, joint moves).
The harness turns each into a tool (``harness/world/physical.py``)."""

from __future__ import annotations

from pydantic import Field

from embodiment.actions import (
    ActionArgs,
    NoArgs,
    PickArgs,
    close_gripper_spec,
    home_spec,
    look_args,
    look_spec,
    move_to_args,
    move_to_spec,
    open_gripper_spec,
    pick_spec,
    place_args,
    place_spec,
)
from embodiment.declarations import with_defaults
from embodiment.types import ActionSpec

__all__ = [
    "CloseGripperArgs",
    "HomeArgs",
    "LookArgs",
    "MoveJointsArgs",
    "MoveToArgs",
    "OpenGripperArgs",
    "PickArgs",
    "PlaceArgs",
    "tabletop_actions",
]

MoveToArgs = move_to_args("world frame")
PlaceArgs = place_args(
    target="Scene ref to put it in or on (tray_1, a cube, table_1).",
    relation="'in' a container or 'on' an object; default: in containers, else on.",
)
LookArgs = look_args("the main camera")
HomeArgs = NoArgs


class OpenGripperArgs(ActionArgs):
    width: float | None = Field(None, gt=0, description="Opening in metres (default: fully).")


class CloseGripperArgs(ActionArgs):
    force: float | None = Field(None, gt=0, description="Grip force in newtons.")


class MoveJointsArgs(ActionArgs):
    joints: list[float] = Field(
        min_length=7,
        max_length=7,
        description="The arm's seven joint positions (radians), reached along a straight "
        "line in joint space.",
    )


def tabletop_actions(
    *,
    cameras: list[str],
    speed: float | None = None,
    width: float | None = None,
    force: float | None = None,
) -> list[ActionSpec]:
    """The action specs of the tabletop simulator (``cameras`` names ``look``'s choices).

    ``speed``, ``width`` and ``force`` are the values the simulator uses when a call
    leaves them out, written into the schemas so that the envelope checks them too.
    """
    return [
        move_to_spec(
            with_defaults(MoveToArgs, speed=speed),
            description="Move the gripper in a straight line to x, y, z (world frame, metres), "
            "pointing down. Use it to look closer or to clear a path; pick and place move "
            "on their own.",
        ),
        pick_spec(
            description="Pick up an object by its scene ref: open, approach from above, grasp "
            "and lift. The evaluator reports whether the object is really held.",
            timeout_s=90,
        ),
        place_spec(
            PlaceArgs,
            description="Put the held object in a container (tray_1) or on another object or "
            "surface, then release it and retreat upwards.",
            timeout_s=90,
        ),
        open_gripper_spec(with_defaults(OpenGripperArgs, width=width), {"width": "width"}),
        close_gripper_spec(with_defaults(CloseGripperArgs, force=force), {"force": "force"}),
        ActionSpec(
            name="move_joints",
            description="Move the arm to seven joint positions (radians) along a straight line "
            "in joint space (the gripper follows a curve; the safety envelope checks it "
            "through the arm's kinematics).",
            arguments=MoveJointsArgs,
            safety={"joints": "joints"},
            timeout_s=60,
            post_condition="the arm's joints are at {joints}",
        ),
        home_spec("Move the arm back to its home pose above the table."),
        look_spec(cameras, LookArgs, timeout_s=20),
    ]
