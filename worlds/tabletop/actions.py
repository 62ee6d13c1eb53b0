"""The tabletop simulator's actions, declared once: typed arguments, safety kinds and
post-conditions. The harness turns each into a tool (``harness/physical.py``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

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

REF_PATTERN = r"^[a-z0-9_]+$"


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MoveToArgs(_Args):
    x: float = Field(description="Target x of the gripper (world frame, metres).")
    y: float = Field(description="Target y of the gripper (world frame, metres).")
    z: float = Field(description="Target z of the gripper (world frame, metres).")
    speed: float | None = Field(None, gt=0, description="Speed in m/s (default: the profile's).")


class PickArgs(_Args):
    ref: str = Field(pattern=REF_PATTERN, description="Scene ref of the object to pick.")


class PlaceArgs(_Args):
    ref: str = Field(pattern=REF_PATTERN, description="Scene ref of the object being held.")
    target: str = Field(
        pattern=REF_PATTERN, description="Scene ref to put it in or on (tray_1, a cube, table_1)."
    )
    relation: Literal["in", "on"] | None = Field(
        None, description="'in' a container or 'on' an object; default: in containers, else on."
    )


class OpenGripperArgs(_Args):
    width: float | None = Field(None, gt=0, description="Opening in metres (default: fully).")


class CloseGripperArgs(_Args):
    force: float | None = Field(None, gt=0, description="Grip force in newtons.")


class MoveJointsArgs(_Args):
    joints: list[float] = Field(
        min_length=7,
        max_length=7,
        description="The arm's seven joint positions (radians), reached along a straight "
        "line in joint space.",
    )


class HomeArgs(_Args):
    pass


class LookArgs(_Args):
    camera: str | None = Field(None, description="Camera name (default: the main camera).")


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
    camera_list = ", ".join(cameras)
    return [
        ActionSpec(
            name="move_to",
            description="Move the gripper in a straight line to x, y, z (world frame, metres), "
            "pointing down. Use it to look closer or to clear a path; pick and place move "
            "on their own.",
            arguments=with_defaults(MoveToArgs, speed=speed),
            safety={"x": "position.x", "y": "position.y", "z": "position.z", "speed": "speed"},
            timeout_s=60,
            post_condition="the gripper is at ({x}, {y}, {z})",
        ),
        ActionSpec(
            name="pick",
            description="Pick up an object by its scene ref: open, approach from above, grasp "
            "and lift. The evaluator reports whether the object is really held.",
            arguments=PickArgs,
            safety={"ref": "object_ref"},
            timeout_s=90,
            post_condition="{ref} is held between the gripper's fingers, lifted off its support",
        ),
        ActionSpec(
            name="place",
            description="Put the held object in a container (tray_1) or on another object or "
            "surface, then release it and retreat upwards.",
            arguments=PlaceArgs,
            safety={"ref": "object_ref", "target": "target_ref", "relation": "free"},
            timeout_s=90,
            post_condition="{ref} rests {relation} {target} and the gripper has let go",
        ),
        ActionSpec(
            name="open_gripper",
            description="Open the gripper (releases whatever it holds).",
            arguments=with_defaults(OpenGripperArgs, width=width),
            safety={"width": "width"},
            timeout_s=20,
            post_condition="the gripper is open",
        ),
        ActionSpec(
            name="close_gripper",
            description="Close the gripper.",
            arguments=with_defaults(CloseGripperArgs, force=force),
            safety={"force": "force"},
            timeout_s=20,
            post_condition="the gripper is closed",
        ),
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
        ActionSpec(
            name="home",
            description="Move the arm back to its home pose above the table.",
            arguments=HomeArgs,
            safety={},
            timeout_s=60,
            post_condition="the arm is in its home pose",
        ),
        ActionSpec(
            name="look",
            description=f"Take a fresh picture (cameras: {camera_list}); moves nothing.",
            arguments=LookArgs,
            physical=False,
            timeout_s=20,
        ),
    ]
