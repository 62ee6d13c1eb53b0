"""The actions the fake offers, declared from its profile.

Every fake gets ``move_to``, ``pick``, ``place``, the gripper and ``home``; a profile with
joint limits adds ``move_joints``, a mobile one ``move_base``, ``rotate_base`` and
``navigate_to``. Each spec carries its typed arguments (defaults from the profile's
limits), safety kinds and post-condition text. Kept apart from :mod:`.robot` so what the
fake offers reads in one place, apart from how it moves.
"""

from __future__ import annotations

from embodiment.declarations import with_defaults
from embodiment.profile import EmbodimentProfile
from embodiment.types import ActionSpec
from worlds.fake.config import (
    FAKE_GRIP_FORCE_N,
    CloseArgs,
    GripperArgs,
    MoveBaseArgs,
    MoveJointsArgs,
    MoveToArgs,
    NavigateArgs,
    NoArgs,
    PickArgs,
    PlaceArgs,
    RotateBaseArgs,
)

__all__ = ["declare_actions"]


def declare_actions(profile: EmbodimentProfile) -> list[ActionSpec]:
    """The fake's action specs for ``profile`` (what ``FakeRobot.capabilities`` lists)."""
    limits = profile.limits
    gripper = profile.grippers[0] if profile.grippers else None
    speed = limits.default_speed_m_s or min(0.25, limits.max_speed_m_s)
    width = gripper.max_opening_m if gripper else None
    force = min(FAKE_GRIP_FORCE_N, limits.max_force_n)
    specs = [
        ActionSpec(
            name="move_to",
            description="Move the gripper to x, y, z (world frame, metres).",
            arguments=with_defaults(MoveToArgs, speed=speed),
            safety={"x": "position.x", "y": "position.y", "z": "position.z", "speed": "speed"},
            post_condition="the gripper is at ({x}, {y}, {z})",
        ),
        ActionSpec(
            name="pick",
            description="Pick an object by ref.",
            arguments=PickArgs,
            safety={"ref": "object_ref"},
            post_condition="{ref} is held",
        ),
        ActionSpec(
            name="place",
            description="Place the held object at a target ref.",
            arguments=PlaceArgs,
            safety={"ref": "object_ref", "target": "target_ref"},
            post_condition="{ref} rests on {target}",
        ),
        ActionSpec(
            name="open_gripper",
            description="Open the gripper.",
            arguments=with_defaults(GripperArgs, width=width),
            safety={"width": "width"},
        ),
        ActionSpec(
            name="close_gripper",
            description="Close the gripper.",
            arguments=with_defaults(CloseArgs, force=force),
            safety={"force": "force"},
        ),
        ActionSpec(name="home", description="Go to the home pose.", arguments=NoArgs, safety={}),
    ]
    if profile.limits.joint_limits:
        specs.append(
            ActionSpec(
                name="move_joints",
                description="Move the arm to joint positions (radians).",
                arguments=MoveJointsArgs,
                safety={"joints": "joints"},
            )
        )
    if profile.mobile:
        specs += [
            ActionSpec(
                name="move_base",
                description="Translate the base (metres) in a direction.",
                arguments=MoveBaseArgs,
                safety={"direction": "direction", "distance": "distance"},
            ),
            ActionSpec(
                name="rotate_base",
                description="Rotate the base in place (radians, positive = left).",
                arguments=RotateBaseArgs,
                safety={"angle": "angle"},
            ),
            ActionSpec(
                name="navigate_to",
                description="Drive to a named place.",
                arguments=NavigateArgs,
                safety={"target": "navigation"},
            ),
        ]
    return specs
