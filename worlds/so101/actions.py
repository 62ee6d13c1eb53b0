"""The SO-101 world's actions: the shared vocabulary (:mod:`embodiment.actions`) in its
words, plus what only it has: a grasp orientation for ``pick`` (where a five-joint arm
says no) and five-joint moves."""

from __future__ import annotations

from typing import Literal

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
    place_args,
    place_spec,
)
from embodiment.declarations import with_defaults
from embodiment.types import ActionSpec

__all__ = ["GraspPickArgs", "MoveJointsArgs", "PlaceArgs", "so101_actions"]

MoveToArgs = move_to_args("world frame: the arm's base, z up from the table")
PlaceArgs = place_args(
    target="Scene ref to put it in or on (box_1, a cube, table_1).",
    relation="'in' the box or 'on' a cube or the table; default: in the box, else on.",
)
LookArgs = look_args("both cameras")


class GraspPickArgs(PickArgs):
    grasp: Literal["top", "front", "side"] = Field(
        "top",
        description="How the fingers meet the object: 'top' pointing straight down (the "
        "default), 'front' level and pointing away from the arm's base, 'side' level and "
        "pointing across the arm. A five-joint arm cannot turn its fingers out of its own "
        "vertical plane, so 'side' (and any pose out of reach) is refused with the reason.",
    )


class MoveJointsArgs(ActionArgs):
    joints: list[float] = Field(
        min_length=5,
        max_length=5,
        description="The arm's five joint positions (radians: shoulder_pan, shoulder_lift, "
        "elbow_flex, wrist_flex, wrist_roll), reached along a straight line in joint space.",
    )


def so101_actions(*, cameras: list[str], speed: float | None = None) -> list[ActionSpec]:
    """The action specs of the SO-101 simulator (``speed``: the profile's default, written
    into ``move_to``'s schema so the envelope checks the speed really used)."""
    return [
        move_to_spec(
            with_defaults(MoveToArgs, speed=speed),
            description="Move the gripper point in a straight line to x, y, z (world frame, "
            "metres), fingers pointing down; refused with the reason where five joints "
            "cannot point them down there.",
        ),
        ActionSpec(
            name="pick",
            description="Pick up an object by its scene ref: open, approach, grasp and lift. "
            "The evaluator reports whether it is really held.",
            arguments=GraspPickArgs,
            safety={"ref": "object_ref", "grasp": "free"},
            timeout_s=150,
            post_condition="{ref} is held between the gripper's fingers, lifted off its support",
        ),
        place_spec(
            PlaceArgs,
            description="Put the held object in the box (box_1) or on a cube or the table, "
            "then release it and retreat upwards.",
            timeout_s=150,
        ),
        open_gripper_spec(NoArgs),
        close_gripper_spec(NoArgs),
        ActionSpec(
            name="move_joints",
            description="Move the arm to five joint positions (radians) along a straight "
            "line in joint space (the safety envelope checks the gripper's path through the "
            "published model's forward kinematics).",
            arguments=MoveJointsArgs,
            safety={"joints": "joints"},
            timeout_s=40,
            post_condition="the arm's joints are at {joints}",
        ),
        home_spec("Move the arm back to its home pose above the table."),
        look_spec(cameras, LookArgs, timeout_s=20),
    ]
