"""The Embodiment Profile as a whole: its parts, the frame tree (poses of frames in the
world, with a mobile base's live pose), and the checks that need more than one part.
"""

from __future__ import annotations

import math

from pydantic import Field, field_validator, model_validator

from embodiment.profile.parts import (
    MOBILE_KINDS,
    SENSOR_MODALITIES,
    SNAKE_CASE,
    BaseSpec,
    Box,
    CameraSpec,
    FramePose,
    GripperSpec,
    KeepOutZone,
    Kind,
    KinematicsSpec,
    Limits,
    SafetySettings,
    StrictModel,
    Vec3,
)

__all__ = ["EmbodimentProfile"]


class EmbodimentProfile(StrictModel):
    """Everything stable about the body: validated at startup, rendered for the model."""

    name: str
    kind: Kind
    description: str = ""
    frames: dict[str, FramePose] = Field(default_factory=lambda: {"base": FramePose()})
    base: BaseSpec
    workspace: Box
    """The reachable workspace (where the end effector may be sent)."""
    sensors: list[str] = Field(default_factory=list)
    cameras: list[CameraSpec] = Field(default_factory=list)
    grippers: list[GripperSpec] = Field(default_factory=list)
    limits: Limits
    keep_out: list[KeepOutZone] = Field(default_factory=list)
    safety: SafetySettings = Field(default_factory=SafetySettings)
    kinematics: KinematicsSpec | None = None
    """The arm's kinematic model (URDF); joint-space tools need it (or
    ``safety.joint_limits_only``)."""
    notes: list[str] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not SNAKE_CASE.match(value):
            raise ValueError(f"{value!r} must be snake_case (a-z, 0-9, _)")
        return value

    @field_validator("sensors")
    @classmethod
    def _sensors(cls, value: list[str]) -> list[str]:
        unknown = [s for s in value if s not in SENSOR_MODALITIES]
        if unknown:
            raise ValueError(
                f"unknown modality {', '.join(map(repr, unknown))}; expected any of "
                + ", ".join(SENSOR_MODALITIES)
            )
        return value

    @model_validator(mode="after")
    def _consistent(self) -> EmbodimentProfile:
        problems = list(_consistency_problems(self))
        if problems:
            raise ValueError("\n".join(problems))
        return self

    # ------------------------------------------------------------------ frames

    @property
    def mobile(self) -> bool:
        return self.base.mobility != "fixed"

    def frame_pose_in_world(
        self, frame: str, *, base_pose: tuple[float, float, float] | None = None
    ) -> tuple[Vec3, float]:
        """(position, yaw) of ``frame`` in the world. ``base_pose`` = live (x, y, yaw) of
        a mobile base, replacing the declared ``base`` frame's x, y and yaw."""
        if frame == "world":
            return (0.0, 0.0, 0.0), 0.0
        pose = self.frames[frame]
        if frame == "base" and base_pose is not None:
            x, y, yaw = base_pose
            pose = FramePose(parent=pose.parent, position=(x, y, pose.position[2]), yaw=yaw)
        parent_position, parent_yaw = self.frame_pose_in_world(pose.parent, base_pose=base_pose)
        return _compose(parent_position, parent_yaw, pose.position), parent_yaw + pose.yaw

    def to_world(
        self, point: Vec3, frame: str, *, base_pose: tuple[float, float, float] | None = None
    ) -> Vec3:
        origin, yaw = self.frame_pose_in_world(frame, base_pose=base_pose)
        return _compose(origin, yaw, point)

    def from_world(
        self, point: Vec3, frame: str, *, base_pose: tuple[float, float, float] | None = None
    ) -> Vec3:
        origin, yaw = self.frame_pose_in_world(frame, base_pose=base_pose)
        dx, dy, dz = (p - o for p, o in zip(point, origin, strict=True))
        c, s = math.cos(-yaw), math.sin(-yaw)
        return (c * dx - s * dy, s * dx + c * dy, dz)

    def model_visible_cameras(self) -> list[CameraSpec]:
        return [camera for camera in self.cameras if camera.model_visible]

    def camera(self, name: str) -> CameraSpec:
        for camera in self.cameras:
            if camera.name == name:
                return camera
        raise KeyError(name)

    def camera_look_at(self, camera: CameraSpec) -> Vec3:
        """Where the camera looks, in its own frame (default: the workspace centre)."""
        if camera.look_at is not None:
            return camera.look_at
        centre = tuple(
            (a + b) / 2 for a, b in zip(self.workspace.min, self.workspace.max, strict=True)
        )
        world = self.to_world(centre, self.workspace.frame)  # type: ignore[arg-type]
        return self.from_world(world, camera.frame)


def _compose(origin: Vec3, yaw: float, point: Vec3) -> Vec3:
    c, s = math.cos(yaw), math.sin(yaw)
    x, y, z = point
    return (origin[0] + c * x - s * y, origin[1] + s * x + c * y, origin[2] + z)


def _consistency_problems(profile: EmbodimentProfile) -> list[str]:
    problems: list[str] = []
    frames = {"world", *profile.frames}
    if "base" not in profile.frames:
        problems.append("frames.base: required (the robot's base frame)")
    for name, pose in profile.frames.items():
        if name == "world":
            problems.append("frames.world: the world frame is implicit; do not declare it")
        if pose.parent not in frames:
            problems.append(
                f"frames.{name}.parent: unknown frame {pose.parent!r}; known: "
                + ", ".join(sorted(frames))
            )
    for name in profile.frames:
        seen, current = {name}, profile.frames[name].parent
        while current != "world" and current in profile.frames:
            if current in seen:
                problems.append(f"frames.{name}: the parent chain loops through {current!r}")
                break
            seen.add(current)
            current = profile.frames[current].parent

    def check_frame(field: str, frame: str) -> None:
        if frame not in frames:
            problems.append(f"{field}: unknown frame {frame!r}; known: {', '.join(sorted(frames))}")

    check_frame("workspace.frame", profile.workspace.frame)
    mobile_kind = profile.kind in MOBILE_KINDS
    if profile.kind == "arm" and profile.mobile:
        problems.append(
            f"base.mobility: an arm has a fixed base, got {profile.base.mobility!r} "
            "(use kind: mobile_manipulator)"
        )
    if mobile_kind and not profile.mobile:
        problems.append(f"base.mobility: a {profile.kind} cannot have a fixed base")
    if profile.mobile:
        if profile.base.max_step_m is None:
            problems.append("base.max_step_m: required for a mobile base (per-call step limit)")
        if profile.base.max_turn_rad is None:
            problems.append("base.max_turn_rad: required for a mobile base (per-call turn limit)")
        if "clearance" not in profile.sensors and "lidar" not in profile.sensors:
            problems.append(
                "sensors: a mobile base needs clearance readings (add 'clearance' or 'lidar')"
            )
    names: set[str] = set()
    for index, camera in enumerate(profile.cameras):
        if camera.name in names:
            problems.append(f"cameras.{index}.name: duplicate camera {camera.name!r}")
        names.add(camera.name)
        check_frame(f"cameras.{index}.frame", camera.frame)
    if profile.cameras and not {"rgb", "depth"} & set(profile.sensors):
        problems.append("sensors: cameras are declared but no 'rgb' or 'depth' modality")
    if "rgb" in profile.sensors and not profile.model_visible_cameras():
        problems.append("cameras: 'rgb' is a sensor but no camera is model_visible")
    if profile.kind in {"arm", "mobile_manipulator", "humanoid"} and not profile.grippers:
        problems.append(f"grippers: a {profile.kind} needs at least one gripper")
    gripper_names: set[str] = set()
    for index, gripper in enumerate(profile.grippers):
        if gripper.name in gripper_names:
            problems.append(f"grippers.{index}.name: duplicate gripper {gripper.name!r}")
        gripper_names.add(gripper.name)
        check_frame(f"grippers.{index}.frame", gripper.frame)
        if gripper.frame in frames and profile.workspace.frame in frames and not problems:
            world = profile.to_world(gripper.initial_position, gripper.frame)
            inside = profile.from_world(world, profile.workspace.frame)
            if not profile.workspace.contains(inside, 1e-6):
                problems.append(
                    f"grippers.{index}.initial_position: {gripper.initial_position} "
                    f"({gripper.frame} frame) is outside the workspace ({profile.workspace.span()})"
                )
    if profile.limits.joint_limits is not None and profile.limits.max_joint_step_rad is None:
        problems.append(
            "limits.max_joint_step_rad: required with joint_limits (how far one call may move "
            "a joint)"
        )
    if profile.kinematics is not None:
        check_frame("kinematics.frame", profile.kinematics.frame)
        if profile.limits.joint_limits is None:
            problems.append("limits.joint_limits: required with kinematics (one per arm joint)")
        elif profile.kinematics.joints is not None and len(profile.kinematics.joints) != len(
            profile.limits.joint_limits
        ):
            problems.append(
                f"kinematics.joints: {len(profile.kinematics.joints)} names for "
                f"{len(profile.limits.joint_limits)} joint_limits"
            )
    zone_names: set[str] = set()
    for index, zone in enumerate(profile.keep_out):
        if zone.name in zone_names:
            problems.append(f"keep_out.{index}.name: duplicate zone {zone.name!r}")
        zone_names.add(zone.name)
        check_frame(f"keep_out.{index}.frame", zone.frame)
    if profile.safety.clamp_tolerance_m > profile.limits.max_step_m:
        problems.append(
            f"safety.clamp_tolerance_m ({profile.safety.clamp_tolerance_m}) exceeds "
            f"limits.max_step_m ({profile.limits.max_step_m})"
        )
    return problems
