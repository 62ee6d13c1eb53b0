"""The action vocabulary worlds share: argument models, safety kinds and post-conditions.

A manipulation world offers the same few actions under the same names with the same
arguments (``pick`` a ``ref``; ``place`` a ``ref`` ``in``/``on`` a ``target``; ``move_to``
``x, y, z`` at a ``speed``; the gripper; ``home``; ``look``), so a planner or a model that
knows one world reads another. What each action is checked as (its safety kinds) and what
must hold after it (its post-condition) is written here once. A world adds only what
differs: how it words the action for its scenes, its timeouts, the frame it measures in,
and the actions only it has.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from embodiment.types import ActionSpec

__all__ = [
    "REF_PATTERN",
    "ActionArgs",
    "NoArgs",
    "PickArgs",
    "PlaceArgs",
    "close_gripper_spec",
    "home_spec",
    "look_args",
    "look_spec",
    "move_to_args",
    "move_to_spec",
    "open_gripper_spec",
    "pick_spec",
    "place_args",
    "place_spec",
    "ref_field",
]

REF_PATTERN = r"^[a-z0-9_]+$"
"""A scene ref: lower-case words joined by underscores (``red_cube_1``)."""


class ActionArgs(BaseModel):
    # The base of every action's arguments: an argument the action does not declare is
    # refused, never ignored. (A docstring here would enter the tools' schemas.)

    model_config = ConfigDict(extra="forbid")


class NoArgs(ActionArgs):
    pass  # an action without arguments (no docstring: it would enter the tool's schema)


def ref_field(description: str) -> Any:
    """A required scene-ref argument."""
    return Field(pattern=REF_PATTERN, description=description)


class PickArgs(ActionArgs):
    ref: str = ref_field("Scene ref of the object to pick.")


def place_args(*, target: str, relation: str) -> type[ActionArgs]:
    """``place``'s arguments, with the world's words for what ``target`` and ``relation``
    may be."""
    return create_model(
        "PlaceArgs",
        __base__=ActionArgs,
        ref=(str, ref_field("Scene ref of the object being held.")),
        target=(str, ref_field(target)),
        relation=(Literal["in", "on"] | None, Field(None, description=relation)),
    )


PlaceArgs = place_args(
    target="Scene ref to put it in or on.",
    relation="'in' a container or 'on' a thing; default: from the target.",
)
"""``place``'s arguments in general words (a world words its own with :func:`place_args`)."""


def move_to_args(frame: str) -> type[ActionArgs]:
    """``move_to``'s arguments, ``x, y, z`` measured in ``frame`` (``world frame``)."""
    return create_model(
        "MoveToArgs",
        __base__=ActionArgs,
        x=(float, Field(description=f"Target x of the gripper ({frame}, metres).")),
        y=(float, Field(description=f"Target y of the gripper ({frame}, metres).")),
        z=(float, Field(description=f"Target z of the gripper ({frame}, metres).")),
        speed=(
            float | None,
            Field(None, gt=0, description="Speed in m/s (default: the profile's)."),
        ),
    )


def look_args(default: str) -> type[ActionArgs]:
    """``look``'s arguments; ``default`` says which camera(s) it uses without one."""
    return create_model(
        "LookArgs",
        __base__=ActionArgs,
        camera=(str | None, Field(None, description=f"Camera name (default: {default}).")),
    )


# ====================================================================== specs

_POSITION = {"x": "position.x", "y": "position.y", "z": "position.z", "speed": "speed"}


def move_to_spec(
    arguments: type[BaseModel], *, description: str, timeout_s: float = 60
) -> ActionSpec:
    """``move_to``: a straight line of the gripper to ``x, y, z`` (``arguments`` with the
    world's default speed written in, so the envelope checks the speed really used)."""
    return ActionSpec(
        name="move_to",
        description=description,
        arguments=arguments,
        safety=_POSITION,
        timeout_s=timeout_s,
        post_condition="the gripper is at ({x}, {y}, {z})",
    )


def pick_spec(*, description: str, timeout_s: float) -> ActionSpec:
    return ActionSpec(
        name="pick",
        description=description,
        arguments=PickArgs,
        safety={"ref": "object_ref"},
        timeout_s=timeout_s,
        post_condition="{ref} is held between the gripper's fingers, lifted off its support",
    )


def place_spec(arguments: type[BaseModel], *, description: str, timeout_s: float) -> ActionSpec:
    return ActionSpec(
        name="place",
        description=description,
        arguments=arguments,
        safety={"ref": "object_ref", "target": "target_ref", "relation": "free"},
        timeout_s=timeout_s,
        post_condition="{ref} rests {relation} {target} and the gripper has let go",
    )


def open_gripper_spec(
    arguments: type[BaseModel] = NoArgs, safety: dict[str, str] | None = None
) -> ActionSpec:
    """``open_gripper`` (``arguments`` with a ``width`` when the world takes one)."""
    return ActionSpec(
        name="open_gripper",
        description="Open the gripper (releases whatever it holds).",
        arguments=arguments,
        safety=safety or {},
        timeout_s=20,
        post_condition="the gripper is open",
    )


def close_gripper_spec(
    arguments: type[BaseModel] = NoArgs, safety: dict[str, str] | None = None
) -> ActionSpec:
    """``close_gripper`` (``arguments`` with a ``force`` when the world takes one)."""
    return ActionSpec(
        name="close_gripper",
        description="Close the gripper.",
        arguments=arguments,
        safety=safety or {},
        timeout_s=20,
        post_condition="the gripper is closed",
    )


def home_spec(description: str, *, timeout_s: float = 60) -> ActionSpec:
    return ActionSpec(
        name="home",
        description=description,
        arguments=NoArgs,
        safety={},
        timeout_s=timeout_s,
        post_condition="the arm is in its home pose",
    )


def look_spec(cameras: list[str], arguments: type[BaseModel], *, timeout_s: float) -> ActionSpec:
    """``look``: a fresh picture from ``cameras``; it moves nothing."""
    return ActionSpec(
        name="look",
        description=f"Take a fresh picture (cameras: {', '.join(cameras)}); moves nothing.",
        arguments=arguments,
        physical=False,
        timeout_s=timeout_s,
    )
