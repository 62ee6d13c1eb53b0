"""The LIBERO world's actions, declared once: typed arguments, safety kinds and
post-conditions (the harness turns each into a tool). Argument names follow the
tabletop's (``ref``, ``target``, ``relation``), so a planner for one reads the other."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from embodiment.declarations import with_defaults
from embodiment.types import ActionSpec

__all__ = [
    "FixtureArgs",
    "PickArgs",
    "PlaceArgs",
    "PushArgs",
    "libero_actions",
]

REF_PATTERN = r"^[a-z0-9_]+$"


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MoveToArgs(_Args):
    x: float = Field(description="Target x of the gripper (robot-base frame, metres).")
    y: float = Field(description="Target y of the gripper (robot-base frame, metres).")
    z: float = Field(description="Target z of the gripper (robot-base frame, metres).")
    speed: float | None = Field(None, gt=0, description="Speed in m/s (default: the profile's).")


class PickArgs(_Args):
    ref: str = Field(pattern=REF_PATTERN, description="Scene ref of the object to pick.")


class PlaceArgs(_Args):
    ref: str = Field(pattern=REF_PATTERN, description="Scene ref of the object being held.")
    target: str = Field(
        pattern=REF_PATTERN,
        description="Scene ref to put it in or on: an object (plate_1) or a region "
        "(basket_1_contain_region, flat_stove_1_cook_region, wooden_cabinet_1_top_side).",
    )
    relation: Literal["in", "on"] | None = Field(
        None, description="'in' a container region or 'on' a thing; default: from the target."
    )


class FixtureArgs(_Args):
    ref: str = Field(
        pattern=REF_PATTERN,
        description="Scene ref of the drawer region (wooden_cabinet_1_top_region), door "
        "(microwave_1) or switch (flat_stove_1).",
    )


class PushArgs(_Args):
    ref: str = Field(pattern=REF_PATTERN, description="Scene ref of the object to push.")
    target: str = Field(pattern=REF_PATTERN, description="Scene ref of the region to push it into.")


class NoArgs(_Args):
    pass


class LookArgs(_Args):
    camera: str | None = Field(None, description="Camera name (default: every camera).")


def libero_actions(*, cameras: list[str], speed: float | None = None) -> list[ActionSpec]:
    """The action specs of the LIBERO world (``cameras`` names ``look``'s choices;
    ``speed``, the profile's default, is written into ``move_to``'s schema so the envelope
    checks the speed the arm will really use)."""
    camera_list = ", ".join(cameras)
    fixture = {"ref": "target_ref"}
    return [
        ActionSpec(
            name="pick",
            description="Pick up a movable object by its scene ref: open, approach from above, "
            "grasp and lift. The evaluator reports whether it is really held.",
            arguments=PickArgs,
            safety={"ref": "object_ref"},
            timeout_s=120,
            post_condition="{ref} is held between the gripper's fingers, lifted off its support",
        ),
        ActionSpec(
            name="place",
            description="Carry the held object above a target (an object or a region ref from "
            "the Brief), lower it, release it and retreat upwards.",
            arguments=PlaceArgs,
            safety={"ref": "object_ref", "target": "target_ref", "relation": "free"},
            timeout_s=120,
            post_condition="{ref} rests {relation} {target} and the gripper has let go",
        ),
        ActionSpec(
            name="open",
            description="Open a drawer (its region ref, e.g. wooden_cabinet_1_top_region) or a "
            "door (microwave_1): grasp the handle and pull.",
            arguments=FixtureArgs,
            safety=fixture,
            timeout_s=120,
            post_condition="{ref} is open",
        ),
        ActionSpec(
            name="close",
            description="Close a drawer (its region ref) or a door (microwave_1): push it shut.",
            arguments=FixtureArgs,
            safety=fixture,
            timeout_s=120,
            post_condition="{ref} is closed",
        ),
        ActionSpec(
            name="turn_on",
            description="Turn on a switch or knob (the stove, flat_stove_1).",
            arguments=FixtureArgs,
            safety=fixture,
            timeout_s=120,
            post_condition="{ref} is on",
        ),
        ActionSpec(
            name="turn_off",
            description="Turn off a switch or knob (the stove, flat_stove_1).",
            arguments=FixtureArgs,
            safety=fixture,
            timeout_s=120,
            post_condition="{ref} is off",
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
        ActionSpec(
            name="move_to",
            description="Move the gripper in a straight line to x, y, z (robot-base frame, "
            "metres), pointing down.",
            arguments=with_defaults(MoveToArgs, speed=speed),
            safety={"x": "position.x", "y": "position.y", "z": "position.z", "speed": "speed"},
            timeout_s=60,
            post_condition="the gripper is at ({x}, {y}, {z})",
        ),
        ActionSpec(
            name="open_gripper",
            description="Open the gripper (releases whatever it holds).",
            arguments=NoArgs,
            safety={},
            timeout_s=20,
            post_condition="the gripper is open",
        ),
        ActionSpec(
            name="close_gripper",
            description="Close the gripper.",
            arguments=NoArgs,
            safety={},
            timeout_s=20,
            post_condition="the gripper is closed",
        ),
        ActionSpec(
            name="home",
            description="Move the gripper back above the middle of the table, pointing down.",
            arguments=NoArgs,
            safety={},
            timeout_s=60,
            post_condition="the arm is in its home pose",
        ),
        ActionSpec(
            name="look",
            description=f"Take a fresh picture (cameras: {camera_list}); moves nothing.",
            arguments=LookArgs,
            physical=False,
            timeout_s=30,
        ),
    ]
