"""A PyBullet mobile manipulator: a box base that carries the profile's arm.

Built for the mobile manipulator profile (``worlds/mobile/mobile_manipulator.yaml``):
the arm is the profile's ``kinematics`` URDF (an xArm 6), mounted at ``kinematics.frame``
on a holonomic base whose footprint is the profile's. It implements the
:class:`~embodiment.types.Driver` protocol with the motions a mobile manipulator is
commanded in: ``move_joints`` (a straight line in joint space, position-controlled, at
most ``JOINT_SPEED_RAD_S`` per joint), ``move_base`` (a translation along a direction of
the base) and ``rotate_base`` (a turn about the base's origin), and ``home``. Each runs in
physics steps; ``stop()`` from any thread halts it at the next step.

The base is moved kinematically (its pose is set every step, the arm's root with it) and
the arm's joints are simulated; readings are what a real one publishes: ``ee_position``
(the end-effector link's frame, world), ``joint_positions``, ``base_pose`` (x, y, yaw)
and ``clearance.<direction>`` (free distance from the footprint's edge to the nearest
obstacle or wall, measured along the base's axes). It renders no camera images: its
observations carry none, so it suits the motion and safety tests it was made for, not a
vision model.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from embodiment.actions import ActionArgs, NoArgs
from embodiment.envelope.kinematics import kinematic_model, urdf_path
from embodiment.profile import EmbodimentProfile
from embodiment.pybullet_import import import_pybullet
from embodiment.types import ActionResult, ActionSpec, Motion, Observation, validated_call

__all__ = ["MobileManipulatorSim", "MobileOptions", "Obstacle", "build"]

JOINT_SPEED_RAD_S = 1.0
BASE_SPEED_M_S = 0.4
TURN_SPEED_RAD_S = 0.8
ROOM_HALF_M = 6.0
"""The room's walls are this far from the origin in x and y."""
SAMPLE_RAD = 0.02


class Obstacle(BaseModel):
    """A static box in the world (a counter, a shelf): seen by the clearance readings
    only where it reaches below ``clearance_height_m``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    min: tuple[float, float, float]
    max: tuple[float, float, float]


class MobileOptions(BaseModel):
    """``driver: {name: sim.mobile, ...}`` options (unknown keys are refused)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    obstacles: list[Obstacle] = Field(default_factory=list)
    clearance_height_m: float = Field(0.2, gt=0)
    physics_hz: int = Field(240, ge=30)


def build(*, profile: EmbodimentProfile, **options: Any) -> MobileManipulatorSim:
    """The ``sim.mobile`` driver for ``profile`` with validated options."""
    config = MobileOptions.model_validate(options)
    return MobileManipulatorSim(
        profile,
        obstacles=config.obstacles,
        clearance_height_m=config.clearance_height_m,
        physics_hz=config.physics_hz,
    )


class MoveJointsArgs(ActionArgs):
    joints: list[float] = Field(description="Joint positions (radians), one per arm joint.")


class MoveBaseArgs(ActionArgs):
    direction: Literal["forward", "backward", "left", "right"]
    distance: float = Field(ge=0, description="Metres along the direction.")


class RotateBaseArgs(ActionArgs):
    angle: float = Field(description="Radians, positive turns left.")


class _Interrupted(Exception):
    pass


DIRECTIONS = {"forward": 0.0, "left": math.pi / 2, "backward": math.pi, "right": -math.pi / 2}


class MobileManipulatorSim:
    """The driver. ``obstacles`` are static boxes; ``clearance_height_m`` is the height
    of the base's clearance sensor (an overhang above it is not seen, like a lidar's)."""

    def __init__(
        self,
        profile: EmbodimentProfile,
        *,
        obstacles: Sequence[Obstacle] = (),
        clearance_height_m: float = 0.2,
        physics_hz: int = 240,
        on_step: Callable[[], None] | None = None,
    ) -> None:
        if profile.kinematics is None or profile.kinematics.home is None:
            raise ValueError("the mobile simulator needs the profile's kinematics with a home")
        self.profile = profile
        self.obstacles = list(obstacles)
        self.clearance_height_m = clearance_height_m
        self.dt = 1.0 / physics_hz
        self.on_step = on_step
        self._pb = import_pybullet()
        self._cid: int | None = None
        self._arm = -1
        self._base = -1
        self._joints: list[int] = []
        self._ee_link = -1
        self._stop = threading.Event()
        self._lock = threading.RLock()
        self.base_pose = [0.0, 0.0, 0.0]
        self._model = kinematic_model(profile.kinematics, len(profile.limits.joint_limits or []))
        self._specs = {spec.name: spec for spec in self._declare()}
        self._handlers: dict[str, Callable[[Any], ActionResult]] = {
            "move_joints": lambda a: self._drive_joints(a.joints),
            "move_base": self._do_move_base,
            "rotate_base": self._do_rotate_base,
            "home": lambda _a: self._drive_joints(self.home),
        }

    @property
    def home(self) -> list[float]:
        return list(self.profile.kinematics.home or [])  # type: ignore[union-attr]

    # ------------------------------------------------------------------ lifecycle

    def connect(self) -> None:
        if self._cid is not None:
            return
        pb = self._pb
        self._cid = cid = pb.connect(pb.DIRECT)
        pb.setGravity(0, 0, -9.81, physicsClientId=cid)
        pb.setTimeStep(self.dt, physicsClientId=cid)
        spec = self.profile.kinematics
        assert spec is not None
        position, orientation = self._mount_pose()
        self._arm = pb.loadURDF(
            urdf_path(spec.urdf), position, orientation, useFixedBase=True, physicsClientId=cid
        )
        names = {
            pb.getJointInfo(self._arm, i, physicsClientId=cid)[1].decode(): i
            for i in range(pb.getNumJoints(self._arm, physicsClientId=cid))
        }
        links = {
            pb.getJointInfo(self._arm, i, physicsClientId=cid)[12].decode(): i
            for i in range(pb.getNumJoints(self._arm, physicsClientId=cid))
        }
        self._ee_link = links[spec.ee_link]
        movable = [
            i
            for i in range(pb.getNumJoints(self._arm, physicsClientId=cid))
            if pb.getJointInfo(self._arm, i, physicsClientId=cid)[2]
            in (pb.JOINT_REVOLUTE, pb.JOINT_PRISMATIC)
        ]
        count = len(self.home)
        self._joints = [names[n] for n in spec.joints] if spec.joints else movable[:count]
        for joint, value in zip(self._joints, self.home, strict=True):
            pb.resetJointState(self._arm, joint, value, physicsClientId=cid)
        # The arm collides with nothing (its own mount, the obstacles): the envelope models
        # the gripper point only, so contacts of other links are outside what it checks.
        for link in range(-1, pb.getNumJoints(self._arm, physicsClientId=cid)):
            pb.setCollisionFilterGroupMask(self._arm, link, 0, 0, physicsClientId=cid)
        self._drive_arm(self.home)
        footprint = self.profile.base.footprint
        length, width = footprint.size or (2 * (footprint.radius or 0.3),) * 2
        shape = pb.createCollisionShape(
            pb.GEOM_BOX, halfExtents=[length / 2, width / 2, 0.1], physicsClientId=cid
        )
        self._base = pb.createMultiBody(0, shape, basePosition=[0, 0, 0.1], physicsClientId=cid)
        for obstacle in self.obstacles:
            half = [(b - a) / 2 for a, b in zip(obstacle.min, obstacle.max, strict=True)]
            centre = [(a + b) / 2 for a, b in zip(obstacle.min, obstacle.max, strict=True)]
            box = pb.createCollisionShape(pb.GEOM_BOX, halfExtents=half, physicsClientId=cid)
            pb.createMultiBody(0, box, basePosition=centre, physicsClientId=cid)

    def disconnect(self) -> None:
        self._stop.set()
        with self._lock:
            if self._cid is not None:
                self._pb.disconnect(physicsClientId=self._cid)
                self._cid = None

    close = disconnect

    def __enter__(self) -> MobileManipulatorSim:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.disconnect()

    # ------------------------------------------------------------------ driver

    def capabilities(self) -> list[ActionSpec]:
        return list(self._specs.values())

    def stop(self) -> None:
        self._stop.set()

    def execute(self, action: str, arguments: dict[str, Any]) -> ActionResult:
        args = validated_call(self._specs, action, arguments)
        if isinstance(args, ActionResult):
            return args
        self._stop.clear()
        try:
            return self._handlers[action](args)
        except _Interrupted:
            self._drive_arm(self.joint_positions())
            return ActionResult(ok=False, interrupted=True, message=f"{action} was stopped")

    def observe(self) -> Observation:
        state = {
            "ee_position": list(self.ee_position()),
            "joint_positions": self.joint_positions(),
            "base_pose": list(self.base_pose),
        }
        safety = {f"clearance.{d}": self.clearance(d) for d in DIRECTIONS}
        return Observation(timestamp=time.time(), state=state, safety=safety)

    def describe_motion(self, action: str, arguments: dict[str, Any]) -> Motion | None:
        """Joint motions: forward kinematics of samples along the joint-space line (the
        envelope's own model). Base motions: None (the envelope sweeps the gripper)."""
        spec = self._specs.get(action)
        args = spec.parse(arguments) if spec is not None else None
        if args is None:
            return Motion()
        if action not in ("move_joints", "home"):
            return None
        target = args.joints if action == "move_joints" else self.home
        start = self.joint_positions()
        if len(target) != len(start):
            return Motion()
        count = max(
            1, math.ceil(max(abs(a - b) for a, b in zip(start, target, strict=True)) / SAMPLE_RAD)
        )
        samples = [
            [a + (b - a) * i / count for a, b in zip(start, target, strict=True)]
            for i in range(1, count + 1)
        ]
        frame = self.profile.kinematics.frame  # type: ignore[union-attr]
        pose = (self.base_pose[0], self.base_pose[1], self.base_pose[2])
        points = [
            self.profile.to_world(p, frame, base_pose=pose) for p in self._model.ee_points(samples)
        ]
        return Motion(waypoints=points, description="joint-space samples")

    # ------------------------------------------------------------------ readings

    def ee_position(self) -> tuple[float, float, float]:
        state = self._pb.getLinkState(
            self._arm, self._ee_link, computeForwardKinematics=True, physicsClientId=self._cid
        )
        return (float(state[4][0]), float(state[4][1]), float(state[4][2]))

    def joint_positions(self) -> list[float]:
        return [
            float(self._pb.getJointState(self._arm, j, physicsClientId=self._cid)[0])
            for j in self._joints
        ]

    def clearance(self, direction: str) -> float:
        x, y, yaw = self.base_pose
        angle = yaw + DIRECTIONS[direction]
        dx, dy = math.cos(angle), math.sin(angle)
        footprint = self.profile.base.footprint
        length, width = footprint.size or (2 * (footprint.radius or 0.3),) * 2
        half = (length if direction in ("forward", "backward") else width) / 2
        walls = min(
            ((ROOM_HALF_M if d > 0 else -ROOM_HALF_M) - p) / d
            for p, d in ((x, dx), (y, dy))
            if abs(d) > 1e-12
        )
        seen = [o for o in self.obstacles if o.min[2] < self.clearance_height_m]
        nearest = min([walls, *(_ray_entry(x, y, dx, dy, o) for o in seen)])
        return max(0.0, nearest - half)

    # ------------------------------------------------------------------ motions

    def _declare(self) -> list[ActionSpec]:
        return [
            ActionSpec(
                name="move_joints",
                description="Move the arm's joints (radians) along a straight line in joint space.",
                arguments=MoveJointsArgs,
                safety={"joints": "joints"},
            ),
            ActionSpec(
                name="move_base",
                description="Translate the base (metres) forward, backward, left or right.",
                arguments=MoveBaseArgs,
                safety={"direction": "direction", "distance": "distance"},
            ),
            ActionSpec(
                name="rotate_base",
                description="Turn the base about its centre (radians, positive = left).",
                arguments=RotateBaseArgs,
                safety={"angle": "angle"},
            ),
            ActionSpec(
                name="home", description="Arm to its home joints.", arguments=NoArgs, safety={}
            ),
        ]

    def _drive_joints(self, target: Sequence[float]) -> ActionResult:
        start = self.joint_positions()
        if len(target) != len(start):
            return ActionResult(ok=False, message=f"{len(target)} joints for {len(start)}")
        largest = max(abs(a - b) for a, b in zip(start, target, strict=True))
        steps = max(1, math.ceil(largest / JOINT_SPEED_RAD_S / self.dt))
        for index in range(1, steps + 1):
            q = [a + (b - a) * index / steps for a, b in zip(start, target, strict=True)]
            self._drive_arm(q)
            self._step()
        for _ in range(60):
            self._step()
        error = max(abs(a - b) for a, b in zip(self.joint_positions(), target, strict=True))
        return ActionResult(
            ok=error < 0.02,
            message=f"joints reached (largest error {error:.3f} rad)",
            applied={"joints": list(target)},
        )

    def _do_move_base(self, args: MoveBaseArgs) -> ActionResult:
        x, y, yaw = self.base_pose
        angle = yaw + DIRECTIONS[args.direction]
        steps = max(1, math.ceil(args.distance / BASE_SPEED_M_S / self.dt))
        for index in range(1, steps + 1):
            travelled = args.distance * index / steps
            self._place_base(x + travelled * math.cos(angle), y + travelled * math.sin(angle), yaw)
            self._step()
        return ActionResult(ok=True, message=f"base at {self.base_pose}", applied=args.model_dump())

    def _do_rotate_base(self, args: RotateBaseArgs) -> ActionResult:
        x, y, yaw = self.base_pose
        steps = max(1, math.ceil(abs(args.angle) / TURN_SPEED_RAD_S / self.dt))
        for index in range(1, steps + 1):
            self._place_base(x, y, yaw + args.angle * index / steps)
            self._step()
        return ActionResult(ok=True, message=f"base at {self.base_pose}", applied=args.model_dump())

    # ------------------------------------------------------------------ physics

    def _mount_pose(self) -> tuple[list[float], list[float]]:
        spec = self.profile.kinematics
        assert spec is not None
        pose = (self.base_pose[0], self.base_pose[1], self.base_pose[2])
        origin, yaw = self.profile.frame_pose_in_world(spec.frame, base_pose=pose)
        return list(origin), list(self._pb.getQuaternionFromEuler([0, 0, yaw]))

    def _place_base(self, x: float, y: float, yaw: float) -> None:
        pb, cid = self._pb, self._cid
        self.base_pose = [x, y, yaw]
        position, orientation = self._mount_pose()
        pb.resetBasePositionAndOrientation(self._arm, position, orientation, physicsClientId=cid)
        pb.resetBasePositionAndOrientation(
            self._base, [x, y, 0.1], pb.getQuaternionFromEuler([0, 0, yaw]), physicsClientId=cid
        )

    def _drive_arm(self, q: Sequence[float]) -> None:
        self._pb.setJointMotorControlArray(
            self._arm,
            self._joints,
            self._pb.POSITION_CONTROL,
            targetPositions=list(q),
            forces=[200.0] * len(self._joints),
            physicsClientId=self._cid,
        )

    def _step(self) -> None:
        if self._stop.is_set():
            raise _Interrupted
        with self._lock:
            self._pb.stepSimulation(physicsClientId=self._cid)
        if self.on_step is not None:
            self.on_step()


def _ray_entry(x: float, y: float, dx: float, dy: float, box: Obstacle) -> float:
    """Distance along (dx, dy) to where the ray enters the box's footprint (inf: misses)."""
    t_low, t_high = 0.0, math.inf
    for origin, delta, low, high in (
        (x, dx, box.min[0], box.max[0]),
        (y, dy, box.min[1], box.max[1]),
    ):
        if abs(delta) < 1e-12:
            if not low <= origin <= high:
                return math.inf
            continue
        t1, t2 = (low - origin) / delta, (high - origin) / delta
        t_low, t_high = max(t_low, min(t1, t2)), min(t_high, max(t1, t2))
    return t_low if t_low <= t_high else math.inf
