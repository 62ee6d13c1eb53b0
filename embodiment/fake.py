"""A kinematic fake robot for tests, examples and dry runs (``driver: {name: fake}``).

It implements the full :class:`~embodiment.types.Driver` protocol without physics: the
gripper (and, for mobile profiles, the base) moves in small steps along straight lines,
``stop()`` from another thread halts it between steps, and every command it actually
received is kept in :attr:`FakeRobot.commands`, which is what safety tests inspect. Its
actions follow the profile: an arm gets ``move_to``, ``move_joints``, ``pick``, ``place``,
the gripper and ``home``; a mobile profile adds ``move_base``, ``rotate_base`` and
``navigate_to``. Clearance readings come from a rectangular room and box obstacles.

``pick`` and ``place`` move the way the simulator's do (approach from above, descend,
grasp or release, lift or retreat), and ``describe_motion`` returns those waypoints
before anything moves, so the safety envelope checks the real path
(``describes_motion=False`` makes it a driver that cannot, for the conservative path).
"""

from __future__ import annotations

import math
import threading
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from embodiment.declarations import with_defaults
from embodiment.profile import EmbodimentProfile
from embodiment.types import (
    ActionResult,
    ActionSpec,
    Motion,
    ObjectInfo,
    Observation,
    PostCondition,
)

__all__ = ["FakeRobot", "FakeRobotConfig"]


FAKE_GRIP_FORCE_N = 40.0
"""The grip force the fake uses when a call leaves it out (written into its schema)."""


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MoveToArgs(_Args):
    x: float
    y: float
    z: float
    speed: float | None = Field(None, gt=0)


class MoveJointsArgs(_Args):
    joints: list[float]


class PickArgs(_Args):
    ref: str


class PlaceArgs(_Args):
    ref: str
    target: str


class GripperArgs(_Args):
    width: float | None = Field(None, gt=0)


class CloseArgs(_Args):
    force: float | None = Field(None, gt=0)


class NoArgs(_Args):
    pass


class MoveBaseArgs(_Args):
    direction: Literal["forward", "backward", "left", "right"]
    distance: float = Field(ge=0)


class RotateBaseArgs(_Args):
    angle: float


class NavigateArgs(_Args):
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


class FakeRobot:
    """A profile-shaped robot without physics (see the module docstring)."""

    def hardware_identity(self) -> str | None:
        """The ``hardware_id`` option (None: a fake drives nothing that needs a lease)."""
        return self.config.hardware_id

    def __init__(self, profile: EmbodimentProfile, **options: Any) -> None:
        self.profile = profile
        self.config = FakeRobotConfig.model_validate(options)
        self.commands: list[tuple[str, dict[str, Any]]] = []
        self.connected = False
        self.stops = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        gripper = profile.grippers[0] if profile.grippers else None
        start = profile.to_world(gripper.initial_position, gripper.frame) if gripper else None
        self.ee: list[float] = list(start or (0.0, 0.0, 0.0))
        self.home_ee = list(self.ee)
        joints = len(profile.limits.joint_limits or [])
        home = profile.kinematics.home if profile.kinematics is not None else None
        self.joints: list[float] = (
            list(home)
            if home is not None and len(home) == joints
            else [(low + high) / 2 for low, high in (profile.limits.joint_limits or [])][:joints]
        )
        base = profile.frame_pose_in_world("base")
        self.base_pose = [base[0][0], base[0][1], base[1]]
        self.width = (gripper.max_opening_m or 0.08) if gripper else 0.0
        self.objects = {ref: list(p) for ref, p in self.config.objects.items()}
        self.held: str | None = None
        self.motion = "idle"
        self._specs = {spec.name: spec for spec in self._declare()}

    # ------------------------------------------------------------------ protocol

    def connect(self) -> None:
        self.connected = True

    def disconnect(self) -> None:
        self._stop.set()
        self.connected = False

    def close(self) -> None:
        self.disconnect()

    def stop(self) -> None:
        self.stops += 1
        self._stop.set()

    def capabilities(self) -> list[ActionSpec]:
        return list(self._specs.values())

    def observe(self) -> Observation:
        cameras = self.profile.model_visible_cameras()
        images = {}
        for index, camera in enumerate(cameras):
            height, width = self.config.camera_shape or (camera.height, camera.width)
            frame = np.zeros((height, width, 3), dtype=np.uint8)
            frame[:, : width // 2] = 40 * (index + 1)
            images[camera.name] = frame
        state: dict[str, Any] = {
            "ee_position": [round(v, 6) for v in self.ee],
            "gripper_width": self.width,
            "joint_positions": list(self.joints),
            "holding": self.held,
            "motion": self.motion,
        }
        safety: dict[str, float | None] = {}
        if self.profile.mobile:
            state["base_pose"] = [round(v, 6) for v in self.base_pose]
            if not self.config.drop_clearance:
                for direction, key in self.profile.base.clearance_readings.items():
                    safety[key] = round(self.clearance(direction), 6)
        return Observation(images=images, state=state, safety=safety)

    def execute(self, action: str, arguments: dict[str, Any]) -> ActionResult:
        spec = self._specs.get(action)
        if spec is None:
            return ActionResult(ok=False, message=f"unknown action {action!r}")
        try:
            args = spec.arguments.model_validate(arguments)
        except ValidationError as exc:
            return ActionResult(ok=False, message=f"invalid arguments: {exc}")
        self._stop.clear()
        self.commands.append((action, args.model_dump()))
        self.motion = "moving"
        result = getattr(self, f"_do_{action}")(args)
        self.motion = "stopped" if result.interrupted else "idle"
        return result

    # ------------------------------------------------------------------ extensions

    def locate(self, ref: str) -> ObjectInfo | None:
        if ref in self.objects:
            return ObjectInfo(
                position=tuple(self.objects[ref]),  # type: ignore[arg-type]
                size=(0.04, 0.04, 0.04),
                mass_kg=self.config.object_mass_kg.get(ref),
            )
        if ref in self.config.waypoints:
            x, y = self.config.waypoints[ref]
            return ObjectInfo(position=(x, y, 0.0))
        return None

    def describe_motion(self, action: str, arguments: dict[str, Any]) -> Motion | None:
        """The waypoints ``execute(action, arguments)`` would visit now (nothing moves)."""
        if not self.config.describes_motion:
            return None
        spec = self._specs.get(action)
        args = spec.parse(arguments) if spec is not None else None
        if args is None:
            return Motion()  # execute refuses it without moving
        return Motion(waypoints=self._plan(action, args))

    def post_conditions(self) -> _FakePostConditions:
        return _FakePostConditions(self)

    def clearance(self, direction: str) -> float:
        """Free distance from the footprint's edge to the nearest wall or obstacle."""
        x, y, yaw = self.base_pose
        heading = {"forward": 0.0, "left": math.pi / 2, "backward": math.pi, "right": -math.pi / 2}
        angle = yaw + heading[direction]
        dx, dy = math.cos(angle), math.sin(angle)
        footprint = self.profile.base.footprint
        half = (
            footprint.radius
            if footprint.shape == "circle"
            else (footprint.size or (0, 0))[0 if direction in ("forward", "backward") else 1] / 2
        )
        distances = [_ray_box_exit(x, y, dx, dy, self.config.room)]
        distances.extend(_ray_box_entry(x, y, dx, dy, box) for box in self.config.obstacles)
        nearest = min(d for d in distances if d is not None)
        return max(0.0, nearest - (half or 0.0))

    # ------------------------------------------------------------------ actions

    def _declare(self) -> list[ActionSpec]:
        limits = self.profile.limits
        gripper = self.profile.grippers[0] if self.profile.grippers else None
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
            ActionSpec(
                name="home", description="Go to the home pose.", arguments=NoArgs, safety={}
            ),
        ]
        if self.profile.limits.joint_limits:
            specs.append(
                ActionSpec(
                    name="move_joints",
                    description="Move the arm to joint positions (radians).",
                    arguments=MoveJointsArgs,
                    safety={"joints": "joints"},
                )
            )
        if self.profile.mobile:
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

    def _travel(self, point: list[float], target: list[float]) -> bool:
        """Move ``point`` to ``target`` in steps; False when stopped on the way."""
        distance = math.dist(point, target)
        steps = max(1, math.ceil(distance / self.config.step_m))
        start = list(point)
        for index in range(1, steps + 1):
            if self._stop.is_set() or (self.config.step_s and self._stop.wait(self.config.step_s)):
                return False
            fraction = index / steps
            with self._lock:
                point[:] = [s + (t - s) * fraction for s, t in zip(start, target, strict=True)]
                if self.held is not None:
                    self.objects[self.held] = list(self.ee)
        return True

    def _result(self, finished: bool, applied: dict[str, Any], message: str) -> ActionResult:
        if not finished:
            return ActionResult(
                ok=False, interrupted=True, message="stopped", applied={"ee_position": self.ee}
            )
        return ActionResult(ok=True, message=message, applied=applied)

    def _plan(self, action: str, args: Any) -> list[tuple[float, float, float]]:
        """The end-effector waypoints of an action, from the current state; empty when the
        action does not move the gripper or would be refused. ``execute`` follows it."""
        if action == "move_to":
            return [(args.x, args.y, args.z)]
        if action == "home":
            return [tuple(self.home_ee)]  # type: ignore[list-item]
        if action == "pick":
            if args.ref not in self.objects or self.held is not None:
                return []
            x, y, z = self.objects[args.ref]
            return [(x, y, z + self.config.approach_m), (x, y, z), (x, y, z + self.config.lift_m)]
        if action == "place":
            info = self.locate(args.target)
            if self.held != args.ref or info is None:
                return []
            x, y, z = info.position
            release = z + self.config.release_height_m
            carry = max(self.ee[2], release + self.config.approach_m)
            return [
                (self.ee[0], self.ee[1], carry),
                (x, y, carry),
                (x, y, release),
                (x, y, release + self.config.retreat_m),
            ]
        return []

    def _follow(self, waypoints: list[tuple[float, float, float]]) -> bool:
        """Travel through the waypoints; False when stopped on the way."""
        return all(self._travel(self.ee, list(point)) for point in waypoints)

    def _do_move_to(self, args: MoveToArgs) -> ActionResult:
        done = self._follow(self._plan("move_to", args))
        return self._result(done, args.model_dump(), f"at {self.ee}")

    def _do_move_joints(self, args: MoveJointsArgs) -> ActionResult:
        done = self._travel(self.joints, list(args.joints))
        self._ee_from_joints()
        return self._result(done, args.model_dump(), "joints reached")

    def _ee_from_joints(self) -> None:
        """With a kinematic model in the profile, the gripper goes where the joints put it
        (the envelope's own model); without one (or without PyBullet) it stays put."""
        spec = self.profile.kinematics
        if spec is None:
            return
        from embodiment.envelope.kinematics import KinematicsError, kinematic_model

        try:
            model = kinematic_model(spec, len(self.joints))
        except KinematicsError:
            return
        pose = (self.base_pose[0], self.base_pose[1], self.base_pose[2])
        point = model.ee_point(self.joints)
        self.ee = list(self.profile.to_world(point, spec.frame, base_pose=pose))

    def _carry(self, before: tuple[float, float, float]) -> None:
        """A base motion carries the arm: the gripper keeps its place relative to the base."""
        after = (self.base_pose[0], self.base_pose[1], self.base_pose[2])
        local = self.profile.from_world(tuple(self.ee), "base", base_pose=before)  # type: ignore[arg-type]
        self.ee = list(self.profile.to_world(local, "base", base_pose=after))

    def _do_pick(self, args: PickArgs) -> ActionResult:
        if args.ref not in self.objects:
            return ActionResult(ok=False, message=f"unknown object {args.ref!r}")
        if self.held is not None:
            return ActionResult(ok=False, message=f"already holding {self.held}")
        approach, grasp, lift = self._plan("pick", args)
        done = self._follow([approach, grasp])
        if done:
            self.held = args.ref
            self.width = 0.04
            done = self._follow([lift])
        return self._result(done, args.model_dump(), f"holding {args.ref}")

    def _do_place(self, args: PlaceArgs) -> ActionResult:
        if self.held != args.ref:
            return ActionResult(ok=False, message=f"not holding {args.ref}")
        if self.locate(args.target) is None:
            return ActionResult(ok=False, message=f"unknown target {args.target!r}")
        up, across, release, retreat = self._plan("place", args)
        done = self._follow([up, across, release])
        if done:
            self.held = None
            self.width = self.profile.grippers[0].max_opening_m or 0.08
            done = self._follow([retreat])
        return self._result(done, args.model_dump(), f"placed {args.ref} on {args.target}")

    def _do_open_gripper(self, args: GripperArgs) -> ActionResult:
        self.width = args.width or self.profile.grippers[0].max_opening_m or 0.08
        self.held = None
        return ActionResult(ok=True, message="open", applied={"width": self.width})

    def _do_close_gripper(self, args: CloseArgs) -> ActionResult:
        self.width = 0.0
        return ActionResult(ok=True, message="closed", applied=args.model_dump())

    def _do_home(self, args: NoArgs) -> ActionResult:
        done = self._follow(self._plan("home", args))
        return self._result(done, {}, "home")

    def _do_move_base(self, args: MoveBaseArgs) -> ActionResult:
        heading = {"forward": 0.0, "left": math.pi / 2, "backward": math.pi, "right": -math.pi / 2}
        angle = self.base_pose[2] + heading[args.direction]
        goal = [
            self.base_pose[0] + args.distance * math.cos(angle),
            self.base_pose[1] + args.distance * math.sin(angle),
        ]
        position = self.base_pose[:2]
        before = (self.base_pose[0], self.base_pose[1], self.base_pose[2])
        done = self._travel(position, goal)
        self.base_pose[:2] = position
        self._carry(before)
        return self._result(done, args.model_dump(), f"base at {self.base_pose}")

    def _do_rotate_base(self, args: RotateBaseArgs) -> ActionResult:
        before = (self.base_pose[0], self.base_pose[1], self.base_pose[2])
        self.base_pose[2] += args.angle
        self._carry(before)
        return ActionResult(ok=True, message="rotated", applied=args.model_dump())

    def _do_navigate_to(self, args: NavigateArgs) -> ActionResult:
        if args.target not in self.config.waypoints:
            return ActionResult(ok=False, message=f"unknown place {args.target!r}")
        position = self.base_pose[:2]
        before = (self.base_pose[0], self.base_pose[1], self.base_pose[2])
        done = self._travel(position, list(self.config.waypoints[args.target]))
        self.base_pose[:2] = position
        self._carry(before)
        return self._result(done, args.model_dump(), f"at {args.target}")


class _FakePostConditions:
    def __init__(self, robot: FakeRobot) -> None:
        self.robot = robot

    def check(self, action: str, arguments: Any, result: Any) -> PostCondition | None:
        robot = self.robot
        if action == "pick":
            ok = robot.held == arguments["ref"]
            return PostCondition(
                status="success" if ok else "failure",
                evidence=f"holding {robot.held}" if robot.held else "holding nothing",
            )
        if action == "place":
            ok = robot.held is None
            return PostCondition(
                status="success" if ok else "failure",
                evidence=f"{arguments['ref']} released" if ok else f"still holding {robot.held}",
            )
        if action == "move_to":
            error = math.dist(robot.ee, (arguments["x"], arguments["y"], arguments["z"]))
            return PostCondition(
                status="success" if error < 1e-6 else "failure",
                evidence=f"gripper {error:.3f} m from the target",
            )
        return None


def _ray_box_exit(
    x: float, y: float, dx: float, dy: float, box: tuple[float, float, float, float]
) -> float:
    """Distance from inside a box to its wall along (dx, dy)."""
    x_min, y_min, x_max, y_max = box
    candidates = []
    if dx > 1e-9:
        candidates.append((x_max - x) / dx)
    if dx < -1e-9:
        candidates.append((x_min - x) / dx)
    if dy > 1e-9:
        candidates.append((y_max - y) / dy)
    if dy < -1e-9:
        candidates.append((y_min - y) / dy)
    return max(0.0, min(candidates)) if candidates else math.inf


def _ray_box_entry(
    x: float, y: float, dx: float, dy: float, box: tuple[float, float, float, float]
) -> float | None:
    """Distance along (dx, dy) to where the ray enters a box, None if it misses."""
    x_min, y_min, x_max, y_max = box
    t_low, t_high = 0.0, math.inf
    for origin, delta, low, high in ((x, dx, x_min, x_max), (y, dy, y_min, y_max)):
        if abs(delta) < 1e-12:
            if not low <= origin <= high:
                return None
            continue
        t1, t2 = (low - origin) / delta, (high - origin) / delta
        t_low, t_high = max(t_low, min(t1, t2)), min(t_high, max(t1, t2))
    if t_low > t_high:
        return None
    return t_low
