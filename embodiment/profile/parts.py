"""The profile's parts: frames, boxes and zones, the base, cameras, grippers, limits and
safety settings, each a frozen pydantic model that validates its own numbers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "MOBILE_KINDS",
    "SENSOR_MODALITIES",
    "BaseSpec",
    "Box",
    "CameraSpec",
    "Direction",
    "Footprint",
    "FramePose",
    "GripperSpec",
    "KeepOutZone",
    "Kind",
    "KinematicsSpec",
    "Limits",
    "Mobility",
    "SafetySettings",
    "Vec3",
]

Vec3 = tuple[float, float, float]
Kind = Literal["arm", "mobile_base", "mobile_manipulator", "humanoid", "quadruped", "other"]
Mobility = Literal["fixed", "holonomic", "differential", "legged"]
Direction = Literal["forward", "backward", "left", "right"]

SENSOR_MODALITIES: tuple[str, ...] = (
    "rgb",
    "depth",
    "joint_state",
    "gripper_state",
    "force_torque",
    "tactile",
    "lidar",
    "clearance",
    "imu",
    "odometry",
    "audio",
)
SNAKE_CASE = re.compile(r"^[a-z][a-z0-9_]*$")
MOBILE_KINDS = frozenset({"mobile_base", "mobile_manipulator", "humanoid", "quadruped"})


class StrictModel(BaseModel):
    # Fail closed: no number in a profile may be infinite or NaN (``.inf`` would switch a
    # limit off, ``gt=0`` alone accepts it); one rule for every part.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def _finite(values: tuple[float, ...], what: str) -> None:
    if not all(math.isfinite(v) for v in values):
        raise ValueError(f"{what} {values} must be finite numbers")


class FramePose(StrictModel):
    """A frame's pose in its parent: a translation and a rotation about z (radians)."""

    parent: str = "world"
    position: Vec3 = (0.0, 0.0, 0.0)
    yaw: float = 0.0

    @field_validator("position")
    @classmethod
    def _position(cls, value: Vec3) -> Vec3:
        _finite(value, "position")
        return value


class Box(StrictModel):
    """An axis-aligned box in a named frame."""

    frame: str = "world"
    min: Vec3
    max: Vec3
    description: str = ""

    @model_validator(mode="after")
    def _ordered(self) -> Box:
        _finite(self.min + self.max, "box corner")
        for axis, low, high in zip("xyz", self.min, self.max, strict=True):
            if low >= high:
                raise ValueError(f"min.{axis} ({low}) must be below max.{axis} ({high})")
        return self

    def contains(self, point: Vec3, tolerance: float = 0.0) -> bool:
        return all(
            low - tolerance <= value <= high + tolerance
            for value, low, high in zip(point, self.min, self.max, strict=True)
        )

    def clamp(self, point: Vec3) -> Vec3:
        return tuple(  # type: ignore[return-value]
            min(high, max(low, value))
            for value, low, high in zip(point, self.min, self.max, strict=True)
        )

    def span(self) -> str:
        return ", ".join(
            f"{axis} {low:.3f}..{high:.3f}"
            for axis, low, high in zip("xyz", self.min, self.max, strict=True)
        )


class KeepOutZone(Box):
    """A box nothing may enter (people's side of the table, the robot's own base...)."""

    name: str

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not SNAKE_CASE.match(value):
            raise ValueError(f"keep-out zone name {value!r} must be snake_case")
        return value


class Footprint(StrictModel):
    """The base's occupied footprint, used for motion clearance."""

    shape: Literal["box", "circle"] = "box"
    size: tuple[float, float] | None = None
    """Length (x) and width (y) of a box footprint."""
    radius: float | None = Field(None, gt=0)
    description: str = ""

    @model_validator(mode="after")
    def _dimensions(self) -> Footprint:
        if self.shape == "box":
            if self.size is None:
                raise ValueError("a box footprint needs size: [length, width]")
            if min(self.size) <= 0:
                raise ValueError(f"size {self.size} must be positive")
        elif self.radius is None:
            raise ValueError("a circle footprint needs radius")
        return self

    def text(self) -> str:
        if self.shape == "circle":
            return f"circle r={self.radius:.3f} m"
        assert self.size is not None
        return f"{self.size[0]:.3f} x {self.size[1]:.3f} m"


class BaseSpec(StrictModel):
    """The base: footprint, how it moves, and the limits on each base motion."""

    footprint: Footprint
    mobility: Mobility = "fixed"
    description: str = ""
    max_step_m: float | None = Field(None, gt=0)
    """Longest translation one call may command."""
    max_turn_rad: float | None = Field(None, gt=0)
    """Largest rotation one call may command."""
    clearance_margin_m: float = Field(0.10, ge=0)
    """A base move is clamped to the measured clearance minus this margin."""
    min_motion_m: float = Field(0.02, gt=0)
    """Moves that clamping would shorten below this are blocked instead."""
    clearance_readings: dict[Direction, str] = Field(
        default_factory=lambda: {
            "forward": "clearance.forward",
            "backward": "clearance.backward",
            "left": "clearance.left",
            "right": "clearance.right",
        }
    )
    """Which observation reading holds the clearance in each direction (metres)."""


class CameraSpec(StrictModel):
    """A camera: where it is (relative to a frame, usually the base) and what it sees."""

    name: str
    frame: str = "base"
    position: Vec3
    look_at: Vec3 | None = None
    """Point it looks at, in the same frame; defaults to the workspace centre."""
    up: Vec3 = (0.0, 0.0, 1.0)
    width: int = Field(320, ge=16, le=4096)
    height: int = Field(240, ge=16, le=4096)
    fov_deg: float = Field(60.0, gt=1, lt=179)
    model_visible: bool = True
    """Sent to the model with every observation; others only on request (``look``)."""
    description: str = ""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not SNAKE_CASE.match(value):
            raise ValueError(f"camera name {value!r} must be snake_case")
        return value


class GripperSpec(StrictModel):
    """An end effector and the pose it starts in."""

    name: str = "gripper"
    kind: Literal["parallel", "suction", "dexterous"] = "parallel"
    frame: str = "base"
    initial_position: Vec3
    max_opening_m: float | None = Field(None, gt=0)
    """Widest opening (metres). Width arguments are checked against it; without it the
    envelope blocks every width (it never assumes a gripper can open any amount)."""
    description: str = ""


class KinematicsSpec(StrictModel):
    """The arm's kinematic model: a URDF whose root link is mounted at ``frame``.

    The envelope maps every joint-space target, and the path to it, through this model's
    forward kinematics and checks it like a Cartesian motion.
    """

    urdf: str
    """The robot's model file: a URDF (or, with MuJoCo, an MJCF ``.xml``): a path (relative
    to the profile file), ``pybullet_data:<path>`` for one shipped with PyBullet's data
    package, or ``package:<module>/<path>`` for one inside any installed Python package
    (a robot description a package publishes)."""
    ee_link: str
    """The link whose origin is the end-effector point the envelope checks (the grasp
    point, where ``ee_position`` is read); with MuJoCo, a body or a site of the model."""
    engine: Literal["pybullet", "mujoco"] | None = None
    """The library that computes forward kinematics: PyBullet or MuJoCo (both read URDF,
    MuJoCo also MJCF, and MuJoCo installs on every Python the harness supports). Default:
    MuJoCo for an ``.xml`` file, PyBullet for anything else."""
    frame: str = "base"
    """The profile frame the URDF's root link sits at (moves with a mobile base)."""
    joints: list[str] | None = None
    """The URDF joints the ``joints`` arguments and ``joint_positions`` readings list, in
    order; default: the URDF's movable joints in file order, as many as
    ``limits.joint_limits``."""
    home: list[float] | None = None
    """Joint positions that put the end effector at the first gripper's
    ``initial_position`` (simulators and the kinematic fake start there)."""


class Limits(StrictModel):
    """Physical limits. The envelope clamps or blocks anything beyond them."""

    payload_kg: float = Field(gt=0)
    max_speed_m_s: float = Field(gt=0)
    """Fastest end-effector speed a call may request."""
    min_speed_m_s: float = Field(0.005, gt=0)
    """Slowest speed a call may request: zero or a crawl below this is blocked (on many
    servo buses a speed of 0 means "no limit")."""
    default_speed_m_s: float | None = Field(None, gt=0)
    max_force_n: float = Field(gt=0)
    min_force_n: float = Field(0.5, gt=0)
    """Smallest force a call may request (0 means "no limit" on some force-controlled
    grippers)."""
    max_step_m: float = Field(gt=0)
    """Longest end-effector translation one call may command."""
    joint_limits: list[tuple[float, float]] | None = None
    """Per-joint [lower, upper] positions (radians)."""
    max_joint_step_rad: float | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _consistent(self) -> Limits:
        if self.min_speed_m_s > self.max_speed_m_s:
            raise ValueError(
                f"min_speed_m_s ({self.min_speed_m_s}) exceeds max_speed_m_s ({self.max_speed_m_s})"
            )
        if self.min_force_n > self.max_force_n:
            raise ValueError(
                f"min_force_n ({self.min_force_n}) exceeds max_force_n ({self.max_force_n})"
            )
        if self.default_speed_m_s is not None and self.default_speed_m_s > self.max_speed_m_s:
            raise ValueError(
                f"default_speed_m_s ({self.default_speed_m_s}) exceeds max_speed_m_s "
                f"({self.max_speed_m_s})"
            )
        for index, (low, high) in enumerate(self.joint_limits or []):
            if low >= high:
                raise ValueError(f"joint_limits.{index}: lower {low} must be below upper {high}")
        return self


class SafetySettings(StrictModel):
    """How the envelope treats readings and borderline targets."""

    required_readings: list[str] = Field(default_factory=list)
    """Readings (observation.safety or state keys) that must be present and finite before
    any motion; missing or invalid ones block it."""
    clamp_tolerance_m: float = Field(0.02, ge=0)
    """A target this close outside the workspace is clamped onto it; farther is blocked."""
    max_reading_age_s: float = Field(10.0, gt=0)
    """Readings older than this are refreshed before a motion (or the motion is blocked);
    always bounded (``null`` does not load)."""
    keep_out_margin_m: float = Field(0.02, ge=0)
    """How far every commanded path stays from each keep-out zone (covers the difference
    between the commanded straight line and the path the arm really follows)."""
    approach_height_m: float = Field(0.15, ge=0)
    """For drivers that do not describe their motions: how high above an object or place
    the gripper is assumed to approach and leave it (the path checked is from the gripper
    to that point above the ref, down to the ref and back up)."""
    no_argument_tools: list[str] = Field(default_factory=list)
    """Physical tools that take no arguments and declare nothing themselves (e.g. an MCP
    server's ``home``): listed here, they may run; any argument sent to them blocks."""
    joint_limits_only: bool = False
    """Accept joint-space tools on a robot without a kinematic model (``kinematics``),
    checked against joint limits and the joint step only, with no Cartesian check of
    where the arm goes. Off by default: without a model such tools are blocked."""

    @model_validator(mode="before")
    @classmethod
    def _removed_fields(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "unchecked_tools" in data:
            raise ValueError(
                "unchecked_tools is no longer accepted: every argument of a physical tool "
                "needs a safety kind (use `free` for one that cannot move hardware), and "
                "tools without arguments go in no_argument_tools"
            )
        return data
