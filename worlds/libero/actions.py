"""The LIBERO world's actions: the shared vocabulary (:mod:`embodiment.actions`) in
LIBERO's words (robot-base frame, regions as targets), plus the articulated skills only it
has (drawers, doors, switches, pushes). The harness turns each into a tool."""

from __future__ import annotations

from embodiment.actions import (
    ActionArgs,
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
    ref_field,
)
from embodiment.declarations import with_defaults
from embodiment.types import ActionSpec

__all__ = [
    "FixtureArgs",
    "PickArgs",
    "PlaceArgs",
    "PushArgs",
    "libero_actions",
]

MoveToArgs = move_to_args("robot-base frame")
PlaceArgs = place_args(
    target="Scene ref to put it in or on: an object (plate_1) or a region "
    "(basket_1_contain_region, flat_stove_1_cook_region, wooden_cabinet_1_top_side).",
    relation="'in' a container region or 'on' a thing; default: from the target.",
)
LookArgs = look_args("every camera")


class FixtureArgs(ActionArgs):
    ref: str = ref_field(
        "Scene ref of the drawer region (wooden_cabinet_1_top_region), door "
        "(microwave_1) or switch (flat_stove_1)."
    )


class PushArgs(ActionArgs):
    ref: str = ref_field("Scene ref of the object to push.")
    target: str = ref_field("Scene ref of the region to push it into.")


def _fixture(name: str, description: str, post_condition: str) -> ActionSpec:
    return ActionSpec(
        name=name,
        description=description,
        arguments=FixtureArgs,
        safety={"ref": "target_ref"},
        timeout_s=120,
        post_condition=post_condition,
    )


def libero_actions(*, cameras: list[str], speed: float | None = None) -> list[ActionSpec]:
    """The action specs of the LIBERO world (``cameras`` names ``look``'s choices;
    ``speed``, the profile's default, is written into ``move_to``'s schema so the envelope
    checks the speed the arm will really use)."""
    return [
        pick_spec(
            description="Pick up a movable object by its scene ref: open, approach from above, "
            "grasp and lift. The evaluator reports whether it is really held.",
            timeout_s=120,
        ),
        place_spec(
            PlaceArgs,
            description="Carry the held object above a target (an object or a region ref from "
            "the Brief), lower it, release it and retreat upwards.",
            timeout_s=120,
        ),
        _fixture(
            "open",
            "Open a drawer (its region ref, e.g. wooden_cabinet_1_top_region) or a door "
            "(microwave_1): grasp the handle and pull.",
            "{ref} is open",
        ),
        _fixture(
            "close",
            "Close a drawer (its region ref) or a door (microwave_1): push it shut.",
            "{ref} is closed",
        ),
        _fixture("turn_on", "Turn on a switch or knob (the stove, flat_stove_1).", "{ref} is on"),
        _fixture(
            "turn_off", "Turn off a switch or knob (the stove, flat_stove_1).", "{ref} is off"
        ),
        ActionSpec(
            name="push",
            description="Slide an object along the table into a region (e.g. "
            "main_table_stove_front_region) with the closed gripper, without lifting it.",
            arguments=PushArgs,
            safety={"ref": "object_ref", "target": "target_ref"},
            timeout_s=120,
            post_condition="{ref} is in {target}",
        ),
        move_to_spec(
            with_defaults(MoveToArgs, speed=speed),
            description="Move the gripper in a straight line to x, y, z (robot-base frame, "
            "metres), pointing down.",
        ),
        open_gripper_spec(),
        close_gripper_spec(),
        home_spec("Move the gripper back above the middle of the table, pointing down."),
        look_spec(cameras, LookArgs, timeout_s=30),
    ]
