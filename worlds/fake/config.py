"""The ``fake`` driver's options and the typed arguments of its actions.

Kept apart from :mod:`.robot` so the option schema (what ``driver: {name: fake, ...}``
accepts) and the argument models the action specs are built from read as data, without
the motion code around them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from embodiment.actions import ActionArgs, NoArgs

__all__ = [
    "FAKE_GRIP_FORCE_N",
    "CloseArgs",
    "FakeRobotConfig",
    "GripperArgs",
    "MoveBaseArgs",
    "MoveJointsArgs",
    "MoveToArgs",
    "NavigateArgs",
    "NoArgs",
    "PickArgs",
    "PlaceArgs",
    "RotateBaseArgs",
]


FAKE_GRIP_FORCE_N = 40.0
"""The grip force the fake uses when a call leaves it out (written into its schema)."""


class MoveToArgs(ActionArgs):
    x: float
    y: float
    z: float
    speed: float | None = Field(None, gt=0)


class MoveJointsArgs(ActionArgs):
    joints: list[float]


class PickArgs(ActionArgs):
    ref: str


class PlaceArgs(ActionArgs):
    ref: str
    target: str


class GripperArgs(ActionArgs):
    width: float | None = Field(None, gt=0)


class CloseArgs(ActionArgs):
    force: float | None = Field(None, gt=0)


class MoveBaseArgs(ActionArgs):
    direction: Literal["forward", "backward", "left", "right"]
    distance: float = Field(ge=0)


class RotateBaseArgs(ActionArgs):
    angle: float


class NavigateArgs(ActionArgs):
    target: str


class FakeRobotConfig(BaseModel):
    """Options of the ``fake`` driver."""

    model_config = ConfigDict(extra="forbid")

    step_m: float = Field(0.01, gt=0)
    """Length of one motion step."""
    step_s: float = Field(0.0, ge=0)
    """Wall time per step (0: instantaneous; >0 makes motions interruptible in tests)."""
    objects: dict[str, tuple[float, float, float]] = Field(default_factory=dict)
    """ref -> position of graspable objects (world frame)."""
    object_mass_kg: dict[str, float] = Field(default_factory=dict)
    room: tuple[float, float, float, float] = (-3.0, -3.0, 3.0, 3.0)
    """Walls as (x_min, y_min, x_max, y_max) for clearance readings."""
    obstacles: list[tuple[float, float, float, float]] = Field(default_factory=list)
    """Boxes (x_min, y_min, x_max, y_max) for clearance readings."""
    waypoints: dict[str, tuple[float, float]] = Field(default_factory=dict)
    """Named places for navigate_to."""
    camera_shape: tuple[int, int] | None = None
    """Override (height, width) of the synthetic camera frames (tests of check_driver)."""
    readings: dict[str, float] = Field(default_factory=dict)
    """Fixed safety readings added to every observation (``{"clearance_m": 1.0}``: a
    stationary range sensor), beside the mobile base's computed clearances."""
    drop_clearance: bool = False
    """Leave the clearance readings out of observations (tests of fail-closed)."""
    approach_m: float = Field(0.12, ge=0)
    """Height above an object (or a place) from which pick and place descend."""
    lift_m: float = Field(0.15, ge=0)
    """How high pick lifts the object above where it was."""
    retreat_m: float = Field(0.10, ge=0)
    """How far place retreats upwards after releasing."""
    release_height_m: float = Field(0.04, ge=0)
    """place releases this far above the target's located position."""
    describes_motion: bool = True
    """False: ``describe_motion`` answers None (a driver that cannot describe its paths)."""
    hardware_id: str | None = None
    """Stand in for the real robot with this hardware identity: the fake then takes the
    same lease as its driver (``embodiment.lease``), for dry runs and lease tests."""
