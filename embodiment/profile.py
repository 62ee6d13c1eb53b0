"""The Embodiment Profile: what the hardware is and what it may do.

A profile is data (YAML, an inline mapping, or a Thea Markdown file) validated once at
startup. It serves two readers: the model, which gets a compact rendering in Resident
context (:func:`render_profile`), and the safety envelope, which takes its numbers
(workspace, keep-out zones, limits) as the envelope every physical call must stay in.

Coordinates are metres; every box, camera and gripper names the frame it is written in.
Frames form a tree rooted at ``world``; only rotations about z are modelled (tables and
mobile bases), which is what the envelope needs. For a mobile base the ``base`` frame
moves: its live pose is read from the observation (``state["base_pose"] = [x, y, yaw]``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from embodiment.errors import ProfileError
from embodiment.thea import parse_thea_markdown

__all__ = [
    "SENSOR_MODALITIES",
    "BaseSpec",
    "Box",
    "CameraSpec",
    "EmbodimentProfile",
    "Footprint",
    "FramePose",
    "GripperSpec",
    "KeepOutZone",
    "Limits",
    "ProfileError",
    "SafetySettings",
    "builtin_profiles",
    "load_profile",
    "render_profile",
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
_SNAKE = re.compile(r"^[a-z][a-z0-9_]*$")
MOBILE_KINDS = frozenset({"mobile_base", "mobile_manipulator", "humanoid", "quadruped"})


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _finite(values: tuple[float, ...], what: str) -> None:
    if not all(math.isfinite(v) for v in values):
        raise ValueError(f"{what} {values} must be finite numbers")


class FramePose(_Model):
    """A frame's pose in its parent: a translation and a rotation about z (radians)."""

    parent: str = "world"
    position: Vec3 = (0.0, 0.0, 0.0)
    yaw: float = 0.0

    @field_validator("position")
    @classmethod
    def _position(cls, value: Vec3) -> Vec3:
        _finite(value, "position")
        return value


class Box(_Model):
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
        if not _SNAKE.match(value):
            raise ValueError(f"keep-out zone name {value!r} must be snake_case")
        return value


class Footprint(_Model):
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


class BaseSpec(_Model):
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


class CameraSpec(_Model):
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
        if not _SNAKE.match(value):
            raise ValueError(f"camera name {value!r} must be snake_case")
        return value


class GripperSpec(_Model):
    """An end effector and the pose it starts in."""

    name: str = "gripper"
    kind: Literal["parallel", "suction", "dexterous"] = "parallel"
    frame: str = "base"
    initial_position: Vec3
    max_opening_m: float | None = Field(None, gt=0)
    description: str = ""


class Limits(_Model):
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


class SafetySettings(_Model):
    """How the envelope treats readings and borderline targets."""

    required_readings: list[str] = Field(default_factory=list)
    """Readings (observation.safety or state keys) that must be present and finite before
    any motion; missing or invalid ones block it."""
    clamp_tolerance_m: float = Field(0.02, ge=0)
    """A target this close outside the workspace is clamped onto it; farther is blocked."""
    max_reading_age_s: float | None = Field(10.0, gt=0)
    """Readings older than this are refreshed before a motion (or the motion is blocked)."""
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


class EmbodimentProfile(_Model):
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
    notes: list[str] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _SNAKE.match(value):
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


# ====================================================================== loading


def builtin_profiles() -> list[str]:
    """Names of the profiles shipped inside the package (``embodiment/profiles/``)."""
    folder = resources.files("embodiment") / "profiles"
    return sorted(
        entry.name.rsplit(".", 1)[0] for entry in folder.iterdir() if entry.name.endswith(".yaml")
    )


def load_profile(
    source: str | Path | Mapping[str, Any], *, base_dir: str | Path | None = None
) -> EmbodimentProfile:
    """A profile from a built-in name, a YAML or Thea Markdown file, or a mapping.

    A YAML profile may name a Thea Markdown file under ``thea:``; its seven items are read
    first and the YAML keys refine them (typically ``name``, ``kind`` and ``limits``).
    Raises :class:`ProfileError` naming every bad field.
    """
    if isinstance(source, Mapping):
        return _validate(dict(source), "(inline mapping)", base_dir=base_dir)
    text = str(source)
    if isinstance(source, str) and _SNAKE.match(text) and text in builtin_profiles():
        resource = resources.files("embodiment") / "profiles" / f"{text}.yaml"
        return _validate(_read_yaml(resource.read_text("utf-8"), text), text, base_dir=None)
    path = Path(text).expanduser()
    if not path.is_absolute() and base_dir is not None:
        path = Path(base_dir) / path
    if not path.is_file():
        raise ProfileError(
            text,
            [
                f"not found: {path} is not a file and {text!r} is not a built-in profile "
                f"(built-in: {', '.join(builtin_profiles())})"
            ],
        )
    if path.suffix.lower() in {".md", ".markdown"}:
        data = parse_thea_markdown(path.read_text("utf-8"), source=str(path))
        data.setdefault("name", _snake(path.stem))
        return _validate(data, str(path), base_dir=path.parent)
    return _validate(
        _read_yaml(path.read_text("utf-8"), str(path)), str(path), base_dir=path.parent
    )


def _read_yaml(text: str, source: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ProfileError(source, [f"not valid YAML: {exc}"]) from None
    if not isinstance(data, dict):
        raise ProfileError(source, [f"the top level must be a mapping, got {type(data).__name__}"])
    return data


def _validate(
    data: dict[str, Any], source: str, *, base_dir: str | Path | None
) -> EmbodimentProfile:
    thea = data.pop("thea", None)
    if thea is not None:
        path = Path(str(thea)).expanduser()
        if not path.is_absolute() and base_dir is not None:
            path = Path(base_dir) / path
        if not path.is_file():
            raise ProfileError(source, [f"thea: file not found: {path}"])
        data = _merge(parse_thea_markdown(path.read_text("utf-8"), source=str(path)), data)
    try:
        return EmbodimentProfile.model_validate(data)
    except ValidationError as exc:
        raise ProfileError(source, _problems(exc)) from None


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _problems(error: ValidationError) -> list[str]:
    """One line per problem, each starting with the dotted field it is about."""
    lines: list[str] = []
    for problem in error.errors():
        where = ".".join(str(part) for part in problem["loc"])
        message = str(problem["msg"]).removeprefix("Value error, ")
        if problem["type"] == "missing":
            lines.append(f"{where}: required field is missing")
        elif problem["type"] == "extra_forbidden":
            lines.append(f"{where}: unknown field; check the spelling")
        elif not where:
            lines.extend(message.splitlines())
        else:
            shown = repr(problem.get("input"))
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            lines.append(f"{where}: {message} (got {shown})")
    return lines


def _snake(text: str) -> str:
    value = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
    return value if value and value[0].isalpha() else f"robot_{value}"


# ====================================================================== rendering


def _xyz(point: Vec3) -> str:
    return "(" + ", ".join(f"{v:.3f}" for v in point) + ")"


def render_profile(profile: EmbodimentProfile) -> str:
    """The profile as the model reads it in Resident context: compact, numbers to 3
    decimals, world-frame positions where that helps the model act."""
    lines = [f"Embodiment: {profile.name} ({profile.kind.replace('_', ' ')})"]
    if profile.description:
        lines.append(profile.description.strip())
    base_origin, base_yaw = profile.frame_pose_in_world("base")
    lines.append(
        f"Frames: world (all tool coordinates, metres); base at {_xyz(base_origin)} "
        f"yaw {base_yaw:.3f} rad" + (" (moves with the robot)" if profile.mobile else "")
    )
    base = profile.base
    base_text = f"Base: {base.mobility}, footprint {base.footprint.text()}"
    if base.footprint.description:
        base_text += f" ({base.footprint.description.strip()})"
    if profile.mobile:
        base_text += (
            f"; per call at most {base.max_step_m:.3f} m / {base.max_turn_rad:.3f} rad; moves "
            f"are clamped to measured clearance minus {base.clearance_margin_m:.3f} m"
        )
    if base.description:
        base_text += f". {base.description.strip()}"
    lines.append(base_text)
    ws = profile.workspace
    lines.append(
        f"Reachable workspace ({ws.frame} frame): {ws.span()}"
        + (f". {ws.description.strip()}" if ws.description else "")
    )
    if profile.sensors:
        lines.append("Sensors: " + ", ".join(profile.sensors))
    for camera in profile.cameras:
        world = profile.to_world(camera.position, camera.frame)
        look = profile.to_world(profile.camera_look_at(camera), camera.frame)
        visibility = "every turn" if camera.model_visible else "on request (look)"
        text = (
            f"Camera {camera.name}: at {_xyz(world)} looking at {_xyz(look)}, "
            f"{camera.width}x{camera.height}, {visibility}"
        )
        if camera.description:
            text += f". {camera.description.strip()}"
        lines.append(text)
    for gripper in profile.grippers:
        start = profile.to_world(gripper.initial_position, gripper.frame)
        text = f"Gripper {gripper.name}: {gripper.kind}"
        if gripper.max_opening_m is not None:
            text += f", opens to {gripper.max_opening_m:.3f} m"
        text += f", starts at {_xyz(start)}"
        if gripper.description:
            text += f". {gripper.description.strip()}"
        lines.append(text)
    limits = profile.limits
    lines.append(
        f"Limits: payload {limits.payload_kg:g} kg, speed {limits.min_speed_m_s:g}.."
        f"{limits.max_speed_m_s:g} m/s, force {limits.min_force_n:g}..{limits.max_force_n:g} "
        f"N, at most {limits.max_step_m:.3f} m per motion"
    )
    margin = profile.safety.keep_out_margin_m
    for zone in profile.keep_out:
        text = f"Keep out {zone.name} ({zone.frame} frame): {zone.span()}"
        if margin:
            text += f", paths stay {margin:.3f} m clear"
        if zone.description:
            text += f". {zone.description.strip()}"
        lines.append(text)
    lines.append(
        "Safety: every segment of a physical call's motion is checked against these limits "
        "before it runs; small overshoots are clamped, anything else is blocked, and the "
        "result says which limit applied."
    )
    lines.extend(f"Note: {note.strip()}" for note in profile.notes if note.strip())
    return "\n".join(lines)
