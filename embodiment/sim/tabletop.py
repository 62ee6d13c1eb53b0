"""The built-in PyBullet tabletop: a Franka Panda, a table, a tray and coloured cubes.

It implements the :class:`~embodiment.types.Driver` protocol like a real robot would:
``execute`` runs a motion in small physics steps and returns what was applied; ``stop()``
from any thread halts a motion at the next step and holds the arm where it is. Headless by
default (``p.DIRECT`` with the CPU tiny renderer, no GL libraries needed); ``gui=True``
opens PyBullet's window and paces motions in real time.

Facts this relies on (measured with PyBullet 3.2.7): inverse kinematics on link 11
(``panda_grasptarget``) needs the joint limits, ranges and rest pose with 200 iterations to
land within about 2 mm; fingers are joints 9 and 10; the tiny renderer takes about 46 ms
for a 320x240 frame.

Ground truth (object poses, what is held, what rests on what) feeds the scene graph through
:meth:`TabletopSim.perception` and the evaluator through :meth:`TabletopSim.post_conditions`;
none of it reaches the model except through those. With ``perception: seen`` (the
``hidden_cube`` variant) perception reports only objects some rendered camera frame has
shown (read from the renderer's segmentation mask), so an object hidden behind the tray is
unknown until a look with another camera finds it.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import ValidationError

from embodiment.profile import EmbodimentProfile, load_profile
from embodiment.sim.actions import (
    CloseGripperArgs,
    LookArgs,
    MoveJointsArgs,
    MoveToArgs,
    OpenGripperArgs,
    PickArgs,
    PlaceArgs,
    tabletop_actions,
)
from embodiment.sim.postconditions import TabletopPostConditions
from embodiment.sim.quiet import import_pybullet
from embodiment.sim.world import (
    COLORS,
    OBJECT_REGION,
    TABLE_CENTER,
    TABLE_HALF,
    TABLE_THICKNESS,
    TABLE_TOP_Z,
    Faults,
    TabletopConfig,
    plan_layout,
)
from embodiment.types import ActionResult, ActionSpec, Motion, ObjectInfo, Observation
from scene.perception import Detection

__all__ = ["REST_POSE", "TabletopSim"]

REST_POSE = (0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785)
ARM_JOINTS = tuple(range(7))
FINGER_JOINTS = (9, 10)
EE_LINK = 11
LOWER = (-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973)
UPPER = (2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973)
ARM_FORCES = (87.0, 87.0, 87.0, 87.0, 12.0, 12.0, 12.0)
MAX_OPENING = 0.08
GRIP_FORCE_N = 40.0
IK_EVERY = 8
"""Physics steps between inverse-kinematics solutions along a straight-line motion."""
APPROACH_HEIGHT = 0.12
LIFT_HEIGHT = 0.15
REACH_TOLERANCE_M = 0.01
HOME_SAMPLE_RAD = 0.05
"""Joint-space spacing of the samples that describe the (curved) path of ``home``."""
SNAPSHOT_VERSION = 1
RESTORE_SETTLE_STEPS = 5
"""Physics steps after a restore, so contacts (a held cube between the fingers) exist."""
SEEN_MIN_PIXELS = 20
"""Pixels of an object a frame must show for perception (``perception: seen``) to know it."""


@dataclass
class _Body:
    ref: str
    body: int
    label: str
    category: str
    size: tuple[float, float, float]
    mass_kg: float
    color: str | None = None


@dataclass(frozen=True)
class _Plan:
    """The gripper waypoints of a pick or place, worked out once: ``describe_motion``
    reports them and ``execute`` follows them."""

    waypoints: tuple[tuple[float, float, float], ...]
    yaw: float
    relation: str = ""


class _Interrupted(Exception):
    """stop() arrived while a motion was running."""


class TabletopSim:
    """The ``sim.tabletop`` driver. Options are :class:`TabletopConfig` fields."""

    def __init__(self, profile: EmbodimentProfile | None = None, **options: Any) -> None:
        self.config = TabletopConfig.model_validate(options)
        self.profile = profile if profile is not None else load_profile("panda_tabletop")
        self._pb = import_pybullet()
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._cid: int | None = None
        self._robot = -1
        self._bodies: dict[str, _Body] = {}
        self._dt = 1.0 / self.config.physics_hz
        self._sim_time = 0.0
        self._yaw = 0.0
        self._motion = "idle"
        self._finger_command = (MAX_OPENING / 2, 20.0)
        self._picks: Counter[str] = Counter()
        self.faults = self.config.faults
        self._truth: tuple[float, list[Detection]] | None = None
        self._seen: set[int] = set()
        """Body ids some rendered frame has shown (``perception: seen``)."""
        self._camera_cache: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {}
        self._pace_origin = (0.0, 0.0)
        rtf = self.config.real_time_factor
        self.real_time_factor = rtf if rtf is not None else (1.0 if self.config.gui else 0.0)
        cameras = [camera.name for camera in self.profile.cameras]
        self._specs = {
            spec.name: spec
            for spec in tabletop_actions(
                cameras=cameras,
                speed=self._default_speed(),
                width=MAX_OPENING,
                force=GRIP_FORCE_N,
            )
        }
        self._handlers: dict[str, Callable[[Any], ActionResult]] = {
            "move_to": self._do_move_to,
            "pick": self._do_pick,
            "place": self._do_place,
            "open_gripper": self._do_open,
            "close_gripper": self._do_close,
            "move_joints": self._do_move_joints,
            "home": lambda _args: self._do_home(),
            "look": self._do_look,
        }

    # ================================================================== lifecycle

    @property
    def connected(self) -> bool:
        return self._cid is not None

    def connect(self) -> None:
        if self._cid is not None:
            return
        pb = self._pb
        import pybullet_data

        mode = pb.GUI if self.config.gui else pb.DIRECT
        self._cid = pb.connect(mode)
        if self._cid < 0:
            self._cid = None
            raise RuntimeError("PyBullet could not start (is a display available for gui?)")
        cid = self._cid
        pb.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=cid)
        pb.setGravity(0, 0, -9.81, physicsClientId=cid)
        pb.setTimeStep(self._dt, physicsClientId=cid)
        if self.config.gui:
            pb.configureDebugVisualizer(pb.COV_ENABLE_GUI, 0, physicsClientId=cid)
            pb.resetDebugVisualizerCamera(
                1.3, 90, -35, (0.45, 0.0, TABLE_TOP_Z), physicsClientId=cid
            )
        pb.loadURDF("plane.urdf", physicsClientId=cid)
        self._add_box(
            "table_1",
            "table",
            "surface",
            center=(TABLE_CENTER[0], TABLE_CENTER[1], TABLE_TOP_Z - TABLE_THICKNESS / 2),
            size=(2 * TABLE_HALF[0], 2 * TABLE_HALF[1], TABLE_THICKNESS),
            rgba=(0.78, 0.66, 0.50, 1.0),
            mass=0.0,
        )
        base = self.profile.frame_pose_in_world("base")[0]
        self._robot = pb.loadURDF(
            "franka_panda/panda.urdf", base, useFixedBase=True, physicsClientId=cid
        )
        for joint in FINGER_JOINTS:
            pb.changeDynamics(self._robot, joint, lateralFriction=2.0, physicsClientId=cid)
        self._build_objects(self.config.seed)
        self._reset_arm()

    def disconnect(self) -> None:
        self._stop.set()
        with self._lock:
            if self._cid is not None:
                self._pb.disconnect(physicsClientId=self._cid)
                self._cid = None

    def close(self) -> None:
        """Alias of :meth:`disconnect`, so a Harness can own the simulator."""
        self.disconnect()

    def reset(self, *, seed: int | None = None) -> None:
        """Put the objects back (a new layout when ``seed`` differs) and the arm home."""
        self._require()
        with self._lock:
            for ref in [r for r, b in self._bodies.items() if b.category != "surface"]:
                self._pb.removeBody(self._bodies.pop(ref).body, physicsClientId=self._cid)
            self._picks.clear()
            self._seen.clear()
            self._build_objects(self.config.seed if seed is None else seed)
            self._reset_arm()
            self._motion = "idle"

    def advance(self, seconds: float) -> None:
        """Let physics run for ``seconds`` without commanding anything (the arm holds its
        last targets): for checking that a stopped robot stays put, or settling a scene."""
        self._require()
        with self._lock:
            for _ in range(max(1, round(seconds / self._dt))):
                self._pb.stepSimulation(physicsClientId=self._cid)
                self._sim_time += self._dt

    def snapshot(self) -> dict[str, Any]:
        """The world's state as plain JSON data: every loose object's pose and velocity, the
        arm's joints, the fingers and their command, what is held, what the cameras have
        shown (``perception: seen``), the simulated clock.
        :meth:`restore` puts a simulator with the same scene (config and seed) back into it;
        resume records one after every turn so placed cubes stay placed."""
        self._require()
        pb, cid = self._pb, self._cid
        with self._lock:
            objects: dict[str, Any] = {}
            for ref, body in self._bodies.items():
                if body.category != "object":
                    continue  # the table and the tray are fixed (mass 0)
                position, orientation = pb.getBasePositionAndOrientation(
                    body.body, physicsClientId=cid
                )
                linear, angular = pb.getBaseVelocity(body.body, physicsClientId=cid)
                objects[ref] = {
                    "position": list(position),
                    "orientation": list(orientation),
                    "linear": list(linear),
                    "angular": list(angular),
                }
            arm = [pb.getJointState(self._robot, j, physicsClientId=cid)[0] for j in ARM_JOINTS]
            fingers = [
                pb.getJointState(self._robot, j, physicsClientId=cid)[0] for j in FINGER_JOINTS
            ]
            return {
                "version": SNAPSHOT_VERSION,
                "seed": self.config.seed,
                "sim_time": self._sim_time,
                "yaw": self._yaw,
                "objects": objects,
                "arm": arm,
                "fingers": fingers,
                "finger_command": list(self._finger_command),
                "held": self.held_ref(),
                "picks": dict(self._picks),
                "seen": sorted(r for r, b in self._bodies.items() if b.body in self._seen),
            }

    def restore(self, state: dict[str, Any]) -> None:
        """Put the world back into a :meth:`snapshot` (see there). Raises ValueError for a
        snapshot of another scene (an object this simulator does not have) or version."""
        self._require()
        if state.get("version") != SNAPSHOT_VERSION:
            raise ValueError(
                f"world snapshot version {state.get('version')!r}; this simulator reads "
                f"version {SNAPSHOT_VERSION}"
            )
        objects = state.get("objects") or {}
        unknown = sorted(
            set(objects) - {r for r, b in self._bodies.items() if b.category == "object"}
        )
        if unknown:
            raise ValueError(
                f"the snapshot is of another scene: no object {', '.join(unknown)} here "
                f"(objects: {', '.join(self.refs())})"
            )
        pb, cid = self._pb, self._cid
        with self._lock:
            for joint, value in zip(ARM_JOINTS, state["arm"], strict=True):
                pb.resetJointState(self._robot, joint, value, physicsClientId=cid)
            for joint, value in zip(FINGER_JOINTS, state["fingers"], strict=True):
                pb.resetJointState(self._robot, joint, value, physicsClientId=cid)
            for ref, pose in objects.items():
                body = self._bodies[ref].body
                pb.resetBasePositionAndOrientation(
                    body, pose["position"], pose["orientation"], physicsClientId=cid
                )
                pb.resetBaseVelocity(body, pose["linear"], pose["angular"], physicsClientId=cid)
            self._drive_arm(list(state["arm"]))
            each, force = state["finger_command"]
            self._set_fingers(float(each), float(force))
            self._sim_time = float(state["sim_time"])
            self._yaw = float(state["yaw"])
            self._picks = Counter({str(k): int(v) for k, v in (state.get("picks") or {}).items()})
            seen = set(state.get("seen") or [])  # what perception had been shown (``seen``)
            self._seen = {b.body for r, b in self._bodies.items() if r in seen}
            self._motion = "idle"
            self._truth = None
            for _ in range(RESTORE_SETTLE_STEPS):  # contacts (the grasp) exist after a step
                pb.stepSimulation(physicsClientId=cid)

    def inject_faults(self, **faults: Any) -> None:
        """Replace the injected faults (see :class:`~embodiment.sim.world.Faults`); counts
        start again from zero."""
        self.faults = Faults.model_validate(faults)
        self._picks.clear()

    def __enter__(self) -> TabletopSim:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.disconnect()

    # ================================================================== Driver protocol

    def capabilities(self) -> list[ActionSpec]:
        return list(self._specs.values())

    def stop(self) -> None:
        """Halt a motion in flight (any thread). The arm holds its current pose."""
        self._stop.set()

    def execute(self, action: str, arguments: dict[str, Any]) -> ActionResult:
        self._require()
        spec = self._specs.get(action)
        if spec is None:
            return ActionResult(
                ok=False, message=f"unknown action {action!r}; known: {', '.join(self._specs)}"
            )
        try:
            args = spec.arguments.model_validate(arguments)
        except ValidationError as exc:
            return ActionResult(ok=False, message=f"invalid arguments for {action}: {exc}")
        self._stop.clear()
        self._pace_origin = (time.monotonic(), self._sim_time)
        self._motion = "moving" if spec.physical else self._motion
        try:
            result = self._handlers[action](args)
        except _Interrupted:
            self._hold()
            self._motion = "stopped"
            return ActionResult(
                ok=False,
                interrupted=True,
                message=f"{action} was stopped; the arm holds where it is",
                applied=self._applied_now(),
            )
        if spec.physical:
            self._motion = "idle"
        return result

    def observe(self) -> Observation:
        self._require()
        with self._lock:
            images = {
                camera.name: self.render(camera.name)
                for camera in self.profile.model_visible_cameras()
            }
            state = self._state()
            state["cameras"] = {
                name: {"view": list(view), "projection": list(projection)}
                for name in images
                for view, projection in [self.camera_matrices(name)]
            }
            detections = self.detections()
            stamp = time.time()
            self._truth = (stamp, detections)
        return Observation(timestamp=stamp, images=images, state=state)

    # ================================================================== extensions

    def describe_motion(self, action: str, arguments: dict[str, Any]) -> Motion | None:
        """The gripper waypoints ``execute(action, arguments)`` would follow now: what the
        safety envelope checks before the arm moves. Nothing moves here."""
        self._require()
        spec = self._specs.get(action)
        args: Any = spec.parse(arguments) if spec is not None else None
        if args is None:
            return Motion()  # execute refuses it without moving
        with self._lock:
            if action == "move_to":
                return Motion(waypoints=[(args.x, args.y, args.z)], description="straight line")
            if action == "pick":
                plan = self._pick_plan(args)
                if isinstance(plan, ActionResult):
                    return Motion(description=f"refused: {plan.message}")
                return Motion(waypoints=list(plan.waypoints), description="approach, grasp, lift")
            if action == "place":
                plan = self._place_plan(args)
                if isinstance(plan, ActionResult):
                    return Motion(description=f"refused: {plan.message}")
                return Motion(
                    waypoints=list(plan.waypoints), description="carry, lower, release, retreat"
                )
            if action == "home":
                return Motion(
                    waypoints=self._joint_path(REST_POSE), description="joint-space samples"
                )
            if action == "move_joints":
                return Motion(
                    waypoints=self._joint_path(args.joints), description="joint-space samples"
                )
        return Motion()  # the gripper actions do not move the end effector

    def locate(self, ref: str) -> ObjectInfo | None:
        """Where an object is (for the safety envelope's ref checks)."""
        body = self._bodies.get(ref)
        if body is None or self._cid is None:
            return None
        with self._lock:
            position = self._center(body)
        return ObjectInfo(position=position, size=body.size, mass_kg=body.mass_kg or None)

    def perception(self) -> GroundTruthPerception:
        return GroundTruthPerception(self)

    def post_conditions(self) -> Any:
        return TabletopPostConditions(self)

    # ================================================================== ground truth

    def refs(self) -> list[str]:
        return list(self._bodies)

    def body(self, ref: str) -> _Body:
        return self._bodies[ref]

    def pose(self, ref: str) -> tuple[tuple[float, float, float], float]:
        """(centre position, yaw) of an object."""
        body = self._bodies[ref]
        with self._lock:
            position, orientation = self._pb.getBasePositionAndOrientation(
                body.body, physicsClientId=self._cid
            )
        if body.category == "container":
            position = (position[0], position[1], position[2] + body.size[2] / 2)
        yaw = self._pb.getEulerFromQuaternion(orientation)[2]
        return tuple(position), yaw  # type: ignore[return-value]

    def speed_of(self, ref: str) -> float:
        with self._lock:
            linear, _ = self._pb.getBaseVelocity(self._bodies[ref].body, physicsClientId=self._cid)
        return float(np.linalg.norm(linear))

    def held_ref(self) -> str | None:
        """The object both fingers touch, if any."""
        with self._lock:
            for ref, body in self._bodies.items():
                if body.category != "object":
                    continue
                touching = [
                    bool(
                        self._pb.getContactPoints(
                            self._robot, body.body, linkIndexA=finger, physicsClientId=self._cid
                        )
                    )
                    for finger in FINGER_JOINTS
                ]
                if all(touching):
                    return ref
        return None

    def support_of(
        self, ref: str, *, poses: dict[str, tuple[tuple[float, float, float], float]] | None = None
    ) -> tuple[str, str] | None:
        """(relation, ref) of what an object rests in or on: ("inside", "tray_1"),
        ("on", "green_cube_1"), ("on", "table_1"), or None (held, falling, tipped).
        ``poses`` may carry poses already read this step (saves simulator queries)."""
        poses = poses if poses is not None else self._poses()
        body = self._bodies[ref]
        (x, y, z), _ = poses[ref]
        bottom = z - body.size[2] / 2
        for other_ref, other in self._bodies.items():
            if other_ref == ref or other.category != "container":
                continue
            (cx, cy, cz), _ = poses[other_ref]
            half_x, half_y = other.size[0] / 2, other.size[1] / 2
            if abs(x - cx) <= half_x and abs(y - cy) <= half_y and bottom <= cz + other.size[2] / 2:
                return ("inside", other_ref)
        for other_ref, other in self._bodies.items():
            if other_ref == ref or other.category != "object":
                continue
            (ox, oy, oz), _ = poses[other_ref]
            top = oz + other.size[2] / 2
            overlap = abs(x - ox) <= other.size[0] / 2 and abs(y - oy) <= other.size[1] / 2
            if overlap and abs(bottom - top) <= 0.012:
                return ("on", other_ref)
        if abs(bottom - TABLE_TOP_Z) <= 0.012:
            return ("on", "table_1")
        return None

    def _poses(self) -> dict[str, tuple[tuple[float, float, float], float]]:
        return {ref: self.pose(ref) for ref in self._bodies}

    def ee_position(self) -> tuple[float, float, float]:
        with self._lock:
            state = self._pb.getLinkState(
                self._robot, EE_LINK, computeForwardKinematics=True, physicsClientId=self._cid
            )
        return tuple(float(v) for v in state[4])  # type: ignore[return-value]

    def gripper_width(self) -> float:
        with self._lock:
            return float(
                sum(
                    self._pb.getJointState(self._robot, j, physicsClientId=self._cid)[0]
                    for j in FINGER_JOINTS
                )
            )

    def home_position(self) -> tuple[float, float, float]:
        gripper = self.profile.grippers[0]
        return self.profile.to_world(gripper.initial_position, gripper.frame)

    def detections(self) -> list[Detection]:
        """Ground truth as :class:`~scene.perception.Detection` objects."""
        held = self.held_ref()
        poses = self._poses()
        found: list[Detection] = []
        seen_only = self.config.perceives_only_what_was_seen
        for ref, body in self._bodies.items():
            if seen_only and body.body not in self._seen and ref != held:
                continue
            position, _ = poses[ref]
            with self._lock:
                _, orientation = self._pb.getBasePositionAndOrientation(
                    body.body, physicsClientId=self._cid
                )
            relations: list[tuple[str, str]] = []
            if body.category == "object" and ref != held:
                support = self.support_of(ref, poses=poses)
                if support is not None:
                    relations.append(support)
            found.append(
                Detection(
                    ref=ref,
                    label=body.label,
                    category=body.category,  # type: ignore[arg-type]
                    color=body.color,
                    position=_round3(position),
                    orientation=tuple(round(v, 4) for v in orientation),  # type: ignore[arg-type]
                    size=body.size,
                    confidence=1.0,
                    is_open=True if body.category == "container" else None,
                    provenance="ground_truth",
                    relations=relations,
                    attributes={"mass_kg": body.mass_kg} if body.mass_kg else {},
                )
            )
        width = self.gripper_width()
        found.append(
            Detection(
                ref="gripper",
                label="gripper",
                category="robot_part",
                position=_round3(self.ee_position()),
                size=(0.02, 0.2, 0.05),
                provenance="ground_truth",
                attributes={
                    "state": "open" if width > 0.07 else "closed",
                    "opening_m": round(width, 4),
                    "holding": held,
                },
                relations=[("holding", held)] if held else [],
            )
        )
        base = self.profile.frame_pose_in_world("base")[0]
        found.append(
            Detection(
                ref="robot",
                label="panda arm",
                category="robot",
                position=_round3(base),
                size=(0.25, 0.25, 0.9),
                provenance="ground_truth",
            )
        )
        return found

    def latest_detections(self, timestamp: float | None) -> list[Detection]:
        """The ground truth captured with the observation at ``timestamp`` (or now)."""
        truth = self._truth
        if truth is not None and timestamp is not None and abs(truth[0] - timestamp) < 1e-6:
            return truth[1]
        return self.detections()

    # ================================================================== rendering

    def render(self, camera_name: str) -> np.ndarray:
        """An HxWx3 uint8 RGB frame from a camera declared in the profile."""
        camera = self.profile.camera(camera_name)
        pb = self._pb
        view, projection = self.camera_matrices(camera_name)
        renderer = pb.ER_BULLET_HARDWARE_OPENGL if self.config.gui else pb.ER_TINY_RENDERER
        with self._lock:
            _, _, rgba, _, segmentation = pb.getCameraImage(
                camera.width,
                camera.height,
                view,
                projection,
                renderer=renderer,
                physicsClientId=self._cid,
            )
        if self.config.perceives_only_what_was_seen:
            bodies = np.asarray(segmentation, dtype=np.int64).reshape(-1)
            bodies = bodies[bodies >= 0] & 0xFFFFFF  # the low 24 bits are the body id
            ids, counts = np.unique(bodies, return_counts=True)
            self._seen.update(
                int(i) for i, n in zip(ids, counts, strict=True) if n >= SEEN_MIN_PIXELS
            )
        frame = np.asarray(rgba, dtype=np.uint8).reshape(camera.height, camera.width, 4)
        return np.ascontiguousarray(frame[:, :, :3])

    def camera_matrices(self, camera_name: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """PyBullet's flat (column-major) view and projection matrices of a fixed camera.

        They are published in ``state["cameras"]`` so that ``get_object_image`` can project
        an object's box into the frame and crop it (see ``scene/camera.py``).
        """
        cached = self._camera_cache.get(camera_name)
        if cached is None:
            camera = self.profile.camera(camera_name)
            pb = self._pb
            eye = self.profile.to_world(camera.position, camera.frame)
            target = self.profile.to_world(self.profile.camera_look_at(camera), camera.frame)
            view = pb.computeViewMatrix(eye, target, camera.up, physicsClientId=self._cid)
            projection = pb.computeProjectionMatrixFOV(
                camera.fov_deg, camera.width / camera.height, 0.02, 5.0, physicsClientId=self._cid
            )
            cached = (tuple(view), tuple(projection))
            self._camera_cache[camera_name] = cached
        return cached

    # ================================================================== actions

    def _do_move_to(self, args: MoveToArgs) -> ActionResult:
        speed = args.speed or self._default_speed()
        target = (args.x, args.y, args.z)
        self._move_line(target, self._yaw, speed)
        error = math.dist(self.ee_position(), target)
        applied = {"x": args.x, "y": args.y, "z": args.z, "speed": speed}
        if error > REACH_TOLERANCE_M:
            return ActionResult(
                ok=False,
                message=f"stopped {error:.3f} m short of {_xyz(target)} (kinematic limit)",
                applied=applied,
                data={"ee_position": _round3(self.ee_position())},
            )
        return ActionResult(
            ok=True,
            message=f"gripper at {_xyz(self.ee_position())}",
            applied=applied,
            data={"ee_position": _round3(self.ee_position())},
        )

    def _pick_plan(self, args: PickArgs) -> _Plan | ActionResult:
        """How pick will move (or why it refuses): approach above, down to the grasp, lift."""
        body = self._bodies.get(args.ref)
        if body is None:
            return ActionResult(ok=False, message=self._unknown(args.ref))
        if body.category != "object":
            return ActionResult(
                ok=False, message=f"{args.ref} is a {body.label}; it cannot be picked"
            )
        held = self.held_ref()
        if held is not None:
            verb = "is already held" if held == args.ref else f"is not free: holding {held}"
            return ActionResult(ok=False, message=f"the gripper {verb}; place it first")
        (x, y, z), object_yaw = self.pose(args.ref)
        return _Plan(
            waypoints=((x, y, z + APPROACH_HEIGHT), (x, y, z), (x, y, z + LIFT_HEIGHT)),
            yaw=_grasp_yaw(object_yaw),
        )

    def _do_pick(self, args: PickArgs) -> ActionResult:
        plan = self._pick_plan(args)
        if isinstance(plan, ActionResult):
            return plan
        approach, grasp, lift = plan.waypoints
        yaw = plan.yaw
        speed = self._default_speed()
        self._grip(MAX_OPENING, 20.0)
        self._move_line(approach, yaw, speed)
        self._move_line(grasp, yaw, speed * 0.5)
        self._grip(0.0, GRIP_FORCE_N)
        self._picks[args.ref] += 1
        slip = self._picks[args.ref] <= self.faults.drop_on_lift.get(args.ref, 0)
        self._move_line(lift, yaw, speed * 0.6, slip_at=0.4 if slip else None)
        self._settle(40)
        width = self.gripper_width()
        applied = {
            "ref": args.ref,
            "grasp_position": _round3(grasp),
            "grasp_yaw": round(yaw, 4),
        }
        if width < 0.005:
            message = f"fingers closed fully ({width:.3f} m): nothing between them"
        else:
            message = f"fingers closed at {width:.3f} m; lifted to z={self.ee_position()[2]:.3f}"
        return ActionResult(
            ok=True, message=message, applied=applied, data={"gripper_width": round(width, 4)}
        )

    def _place_plan(self, args: PlaceArgs) -> _Plan | ActionResult:
        """How place will move (or why it refuses): up to the carry height, across, down
        to the release point, and back up after letting go."""
        body = self._bodies.get(args.ref)
        target = self._bodies.get(args.target)
        if body is None:
            return ActionResult(ok=False, message=self._unknown(args.ref))
        if target is None:
            return ActionResult(ok=False, message=self._unknown(args.target))
        if args.target == args.ref:
            return ActionResult(ok=False, message="an object cannot be placed on itself")
        held = self.held_ref()
        if held != args.ref:
            holding = held or "nothing"
            return ActionResult(
                ok=False, message=f"not holding {args.ref} (holding {holding}); pick it first"
            )
        relation = args.relation or ("in" if target.category == "container" else "on")
        if relation == "in" and target.category != "container":
            return ActionResult(
                ok=False, message=f"{args.target} is not a container; use relation 'on'"
            )
        if target.category == "container":
            relation = "in"
        spot = self._drop_spot(body, target)
        if isinstance(spot, str):
            return ActionResult(ok=False, message=spot)
        (sx, sy), support_top = spot
        release_z = support_top + body.size[2] / 2 + 0.0
        ee = self.ee_position()
        carry_z = max(ee[2], release_z + APPROACH_HEIGHT)
        return _Plan(
            waypoints=(
                (ee[0], ee[1], carry_z),
                (sx, sy, carry_z),
                (sx, sy, release_z),
                (sx, sy, release_z + 0.10),
            ),
            yaw=0.0,
            relation=relation,
        )

    def _do_place(self, args: PlaceArgs) -> ActionResult:
        plan = self._place_plan(args)
        if isinstance(plan, ActionResult):
            return plan
        up, across, release, retreat = plan.waypoints
        speed = self._default_speed()
        self._move_line(up, self._yaw, speed)
        self._move_line(across, plan.yaw, speed)
        self._move_line(release, plan.yaw, speed * 0.5)
        self._grip(MAX_OPENING, 20.0)
        self._settle(30)
        self._move_line(retreat, plan.yaw, speed)
        self._settle(60)
        applied = {
            "ref": args.ref,
            "target": args.target,
            "relation": plan.relation,
            "release_position": _round3(release),
        }
        return ActionResult(
            ok=True,
            message=f"released {args.ref} {plan.relation} {args.target} at {_xyz(release)}",
            applied=applied,
        )

    def _do_open(self, args: OpenGripperArgs) -> ActionResult:
        width = min(args.width or MAX_OPENING, MAX_OPENING)
        self._grip(width, 20.0)
        self._settle(20)
        actual = self.gripper_width()
        return ActionResult(
            ok=True,
            message=f"gripper open at {actual:.3f} m",
            applied={"width": width},
            data={"gripper_width": round(actual, 4)},
        )

    def _do_close(self, args: CloseGripperArgs) -> ActionResult:
        force = args.force or GRIP_FORCE_N
        self._grip(0.0, force)
        actual = self.gripper_width()
        return ActionResult(
            ok=True,
            message=f"gripper closed to {actual:.3f} m",
            applied={"force": force},
            data={"gripper_width": round(actual, 4)},
        )

    def _joints_now(self) -> list[float]:
        with self._lock:
            return [
                self._pb.getJointState(self._robot, j, physicsClientId=self._cid)[0]
                for j in ARM_JOINTS
            ]

    def _kinematics(self) -> Any:
        """The arm's kinematic model: the one the safety envelope maps joint targets
        through (the profile's ``kinematics``), shared, so both check the same arm."""
        from embodiment.envelope.kinematics import kinematic_model
        from embodiment.profile import KinematicsSpec

        spec = self.profile.kinematics or KinematicsSpec(
            urdf="pybullet_data:franka_panda/panda.urdf", ee_link="panda_grasptarget"
        )
        return kinematic_model(spec, len(ARM_JOINTS)), spec.frame

    def _joint_path(self, target: Sequence[float]) -> list[tuple[float, float, float]]:
        """Where the gripper passes on the joint-space line from the arm's joints to
        ``target`` (what ``_drive_joints`` commands): forward kinematics of samples along
        it, on the shared kinematic model (the simulated arm does not move)."""
        start = self._joints_now()
        largest = max(abs(a - b) for a, b in zip(start, target, strict=True))
        count = max(1, math.ceil(largest / HOME_SAMPLE_RAD))
        model, frame = self._kinematics()
        samples = [
            [a + (b - a) * index / count for a, b in zip(start, target, strict=True)]
            for index in range(1, count + 1)
        ]
        return [self.profile.to_world(point, frame) for point in model.ee_points(samples)]

    def _drive_joints(self, target: Sequence[float]) -> None:
        """The arm along the joint-space line to ``target``, at most 1 rad/s per joint."""
        start = self._joints_now()
        largest = max(abs(a - b) for a, b in zip(start, target, strict=True))
        steps = max(1, int(largest / 1.0 * self.config.physics_hz))
        for index in range(1, steps + 1):
            fraction = index / steps
            q = [a + (b - a) * fraction for a, b in zip(start, target, strict=True)]
            with self._lock:
                self._drive_arm(q)
            self._step()
        self._settle(60)
        self._yaw = self._measured_yaw()

    def _do_move_joints(self, args: MoveJointsArgs) -> ActionResult:
        # The Panda's own limits: the envelope checks the profile's before this runs.
        target = [min(hi, max(lo, v)) for v, lo, hi in zip(args.joints, LOWER, UPPER, strict=True)]
        self._drive_joints(target)
        error = max(abs(a - b) for a, b in zip(self._joints_now(), target, strict=True))
        return ActionResult(
            ok=error < 0.02,
            message=f"joints reached (largest error {error:.3f} rad); gripper at "
            f"{_xyz(self.ee_position())}",
            applied={"joints": target},
        )

    def _do_home(self) -> ActionResult:
        self._drive_joints(REST_POSE)
        error = math.dist(self.ee_position(), self.home_position())
        return ActionResult(
            ok=error < REACH_TOLERANCE_M * 2,
            message=f"home; gripper at {_xyz(self.ee_position())}",
            applied={"joints": list(REST_POSE)},
        )

    def _do_look(self, args: LookArgs) -> ActionResult:
        names = [camera.name for camera in self.profile.cameras]
        name = args.camera or (self.profile.model_visible_cameras() or self.profile.cameras)[0].name
        if name not in names:
            return ActionResult(
                ok=False, message=f"unknown camera {name!r}; cameras: {', '.join(names)}"
            )
        frame = self.render(name)
        return ActionResult(
            ok=True,
            message=f"fresh image from {name} ({frame.shape[1]}x{frame.shape[0]})",
            applied={"camera": name},
            data={"images": {name: frame}},
        )

    # ================================================================== motion

    def _default_speed(self) -> float:
        limits = self.profile.limits
        return limits.default_speed_m_s or min(0.25, limits.max_speed_m_s)

    def _step(self, count: int = 1) -> None:
        """Advance physics; raise :class:`_Interrupted` as soon as stop() was called."""
        pb = self._pb
        for _ in range(count):
            if self._stop.is_set():
                raise _Interrupted
            with self._lock:
                if self._cid is None:
                    raise _Interrupted
                pb.stepSimulation(physicsClientId=self._cid)
                self._sim_time += self._dt
            if self.real_time_factor > 0:
                wall0, sim0 = self._pace_origin
                due = wall0 + (self._sim_time - sim0) / self.real_time_factor
                delay = due - time.monotonic()
                if delay > 0 and self._stop.wait(delay):
                    raise _Interrupted

    def _settle(self, steps: int) -> None:
        self._step(steps)

    def _ik(self, position: tuple[float, float, float], yaw: float) -> list[float]:
        pb = self._pb
        orientation = pb.getQuaternionFromEuler((math.pi, 0.0, yaw))
        q = pb.calculateInverseKinematics(
            self._robot,
            EE_LINK,
            position,
            orientation,
            lowerLimits=[*LOWER, 0.0, 0.0],
            upperLimits=[*UPPER, 0.04, 0.04],
            jointRanges=[u - lo for lo, u in zip(LOWER, UPPER, strict=True)] + [0.04, 0.04],
            restPoses=[*REST_POSE, 0.02, 0.02],
            maxNumIterations=200,
            residualThreshold=1e-4,
            physicsClientId=self._cid,
        )
        return list(q[:7])

    def _drive_arm(self, q: list[float]) -> None:
        self._pb.setJointMotorControlArray(
            self._robot,
            list(ARM_JOINTS),
            self._pb.POSITION_CONTROL,
            targetPositions=q,
            forces=list(ARM_FORCES),
            physicsClientId=self._cid,
        )

    def _move_line(
        self,
        target: tuple[float, float, float],
        yaw: float,
        speed: float,
        *,
        slip_at: float | None = None,
    ) -> None:
        """Straight-line Cartesian motion of the grasp point, IK every few steps."""
        start = self.ee_position()
        start_yaw = self._yaw
        distance = math.dist(start, target)
        turn = abs(yaw - start_yaw)
        # The smooth profile peaks at 1.5x the mean speed; keep the peak at `speed`.
        duration = max(1.5 * distance / speed, turn / 1.5, self._dt)
        steps = max(1, math.ceil(duration * self.config.physics_hz))
        for index in range(1, steps + 1):
            linear = index / steps
            fraction = linear * linear * (3.0 - 2.0 * linear)  # smooth start and stop
            if (index - 1) % IK_EVERY == 0 or index == steps:
                point = tuple(s + (t - s) * fraction for s, t in zip(start, target, strict=True))
                with self._lock:
                    self._drive_arm(self._ik(point, start_yaw + (yaw - start_yaw) * fraction))  # type: ignore[arg-type]
            if slip_at is not None and linear >= slip_at:
                self._set_fingers(MAX_OPENING / 2, 5.0)
                slip_at = None
            self._step()
        self._yaw = yaw
        for _ in range(8):
            if math.dist(self.ee_position(), target) < 0.002:
                break
            self._step(10)

    def _set_fingers(self, each: float, force: float) -> None:
        self._finger_command = (each, force)
        with self._lock:
            self._pb.setJointMotorControlArray(
                self._robot,
                list(FINGER_JOINTS),
                self._pb.POSITION_CONTROL,
                targetPositions=[each, each],
                forces=[force, force],
                physicsClientId=self._cid,
            )

    def _grip(self, width: float, force: float) -> None:
        self._set_fingers(width / 2, force)
        previous = self.gripper_width()
        for _ in range(12):
            self._step(10)
            current = self.gripper_width()
            if abs(current - width) < 0.001 or abs(current - previous) < 1e-4:
                break
            previous = current

    def _hold(self) -> None:
        """After a stop: command the current joint positions so the arm stays put."""
        with self._lock:
            if self._cid is None:
                return
            q = [
                self._pb.getJointState(self._robot, j, physicsClientId=self._cid)[0]
                for j in ARM_JOINTS
            ]
            self._drive_arm(q)
            for _ in range(10):
                self._pb.stepSimulation(physicsClientId=self._cid)
                self._sim_time += self._dt

    # ================================================================== building

    def _add_box(
        self,
        ref: str,
        label: str,
        category: str,
        *,
        center: tuple[float, float, float],
        size: tuple[float, float, float],
        rgba: tuple[float, float, float, float],
        mass: float,
        yaw: float = 0.0,
        color: str | None = None,
    ) -> _Body:
        pb, cid = self._pb, self._cid
        half = [s / 2 for s in size]
        shape = pb.createCollisionShape(pb.GEOM_BOX, halfExtents=half, physicsClientId=cid)
        visual = pb.createVisualShape(
            pb.GEOM_BOX, halfExtents=half, rgbaColor=rgba, physicsClientId=cid
        )
        body = pb.createMultiBody(
            mass,
            shape,
            visual,
            basePosition=center,
            baseOrientation=pb.getQuaternionFromEuler((0, 0, yaw)),
            physicsClientId=cid,
        )
        pb.changeDynamics(body, -1, lateralFriction=1.0, physicsClientId=cid)
        record = _Body(ref, body, label, category, size, mass, color)
        self._bodies[ref] = record
        return record

    def _build_objects(self, seed: int) -> None:
        pb, cid = self._pb, self._cid
        layout = plan_layout(self.config, seed=seed)
        tray = self.config.scene().tray
        if tray is not None and layout.tray_position is not None:
            length, width = tray.size
            wall, height = tray.wall_thickness, tray.wall_height
            floor = 0.006
            boxes = [
                ((0.0, 0.0, floor / 2), (length / 2, width / 2, floor / 2)),
                ((length / 2 - wall / 2, 0.0, height / 2), (wall / 2, width / 2, height / 2)),
                ((-length / 2 + wall / 2, 0.0, height / 2), (wall / 2, width / 2, height / 2)),
                ((0.0, width / 2 - wall / 2, height / 2), (length / 2, wall / 2, height / 2)),
                ((0.0, -width / 2 + wall / 2, height / 2), (length / 2, wall / 2, height / 2)),
            ]
            positions = [b[0] for b in boxes]
            halves = [b[1] for b in boxes]
            shape = pb.createCollisionShapeArray(
                [pb.GEOM_BOX] * 5,
                halfExtents=halves,
                collisionFramePositions=positions,
                physicsClientId=cid,
            )
            visual = pb.createVisualShapeArray(
                [pb.GEOM_BOX] * 5,
                halfExtents=halves,
                visualFramePositions=positions,
                physicsClientId=cid,
            )
            x, y = layout.tray_position
            body = pb.createMultiBody(
                0.0, shape, visual, basePosition=(x, y, TABLE_TOP_Z), physicsClientId=cid
            )
            pb.changeVisualShape(body, -1, rgbaColor=(0.45, 0.45, 0.50, 1.0), physicsClientId=cid)
            pb.changeDynamics(body, -1, lateralFriction=0.8, physicsClientId=cid)
            self._bodies[tray.ref] = _Body(
                tray.ref, body, "tray", "container", (length, width, height), 0.0
            )
            self._tray_floor = floor
        for placed in layout.objects:
            spec = placed.spec
            self._add_box(
                placed.ref,
                placed.label,
                "object",
                center=(placed.position[0], placed.position[1], TABLE_TOP_Z + spec.size / 2),
                size=(spec.size, spec.size, spec.size),
                rgba=COLORS[spec.color],
                mass=spec.mass_kg,
                yaw=placed.yaw,
                color=spec.color,
            )
        with self._lock:
            for _ in range(30):
                pb.stepSimulation(physicsClientId=cid)

    def _reset_arm(self) -> None:
        pb, cid = self._pb, self._cid
        for joint, value in zip(ARM_JOINTS, REST_POSE, strict=True):
            pb.resetJointState(self._robot, joint, value, physicsClientId=cid)
        for joint in FINGER_JOINTS:
            pb.resetJointState(self._robot, joint, MAX_OPENING / 2, physicsClientId=cid)
        self._drive_arm(list(REST_POSE))
        self._set_fingers(MAX_OPENING / 2, 20.0)
        self._yaw = self._measured_yaw()

    def _measured_yaw(self) -> float:
        with self._lock:
            orientation = self._pb.getLinkState(
                self._robot, EE_LINK, computeForwardKinematics=True, physicsClientId=self._cid
            )[5]
        return float(self._pb.getEulerFromQuaternion(orientation)[2])

    # ================================================================== helpers

    def _require(self) -> None:
        if self._cid is None:
            raise RuntimeError("the simulator is not connected; call connect() first")

    def _unknown(self, ref: str) -> str:
        import difflib

        close = difflib.get_close_matches(ref, list(self._bodies), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        return f"unknown object {ref!r}{hint}"

    def _center(self, body: _Body) -> tuple[float, float, float]:
        return self.pose(body.ref)[0]

    def _state(self) -> dict[str, Any]:
        with self._lock:
            joints = [
                round(self._pb.getJointState(self._robot, j, physicsClientId=self._cid)[0], 4)
                for j in ARM_JOINTS
            ]
        width = self.gripper_width()
        return {
            "ee_position": list(_round3(self.ee_position())),
            "ee_yaw": round(self._yaw, 3),
            "gripper_width": round(width, 4),
            "gripper": "open" if width > 0.07 else ("closed" if width < 0.002 else "partly closed"),
            "joint_positions": joints,
            "motion": self._motion,
        }

    def _applied_now(self) -> dict[str, Any]:
        return {
            "ee_position": list(_round3(self.ee_position())),
            "gripper_width": round(self.gripper_width(), 4),
        }

    def _drop_spot(self, body: _Body, target: _Body) -> tuple[tuple[float, float], float] | str:
        """Where to release ``body`` in/on ``target``: ((x, y), support top z) or a reason."""
        others = {
            ref: self.pose(ref)[0]
            for ref, other in self._bodies.items()
            if other.category == "object" and ref != body.ref
        }
        if target.category == "container":
            (cx, cy, cz), _ = self.pose(target.ref)
            floor_top = cz - target.size[2] / 2 + getattr(self, "_tray_floor", 0.006)
            inner_x = target.size[0] / 2 - 0.008 - body.size[0] / 2 - 0.005
            inner_y = target.size[1] / 2 - 0.008 - body.size[1] / 2 - 0.005
            pitch = body.size[0] + 0.015
            xs = _grid(cx, inner_x, pitch)
            ys = _grid(cy, inner_y, pitch)
            slots = sorted(
                ((x, y) for x in xs for y in ys),
                key=lambda s: (round(math.hypot(s[0] - cx, s[1] - cy), 4), s),
            )
            for x, y in slots:
                if all(math.hypot(x - ox, y - oy) >= pitch * 0.9 for ox, oy, _ in others.values()):
                    return (x, y), floor_top
            return f"{target.ref} has no free spot left for {body.ref}"
        if target.category == "object":
            (tx, ty, tz), _ = self.pose(target.ref)
            top = tz + target.size[2] / 2
            for ref, (ox, oy, oz) in others.items():
                if (
                    ref != target.ref
                    and abs(ox - tx) < target.size[0]
                    and abs(oy - ty) < target.size[1]
                    and oz > tz
                ):
                    return f"{ref} is already on {target.ref}"
            return (tx, ty), top
        # A surface: the free spot on the table nearest the gripper, inside the usual region.
        ee = self.ee_position()
        (x_low, x_high), (y_low, y_high) = OBJECT_REGION
        candidates = [
            (x_low + i * 0.03, y_low + j * 0.03)
            for i in range(int((x_high - x_low) / 0.03) + 1)
            for j in range(int((y_high - y_low) / 0.03) + 1)
        ]
        blockers = [(p[0], p[1], 0.06) for p in others.values()]
        for ref, other in self._bodies.items():
            if other.category == "container":
                (cx, cy, _), _ = self.pose(ref)
                blockers.append((cx, cy, math.hypot(*other.size[:2]) / 2 + 0.04))
        free = [
            c
            for c in candidates
            if all(math.hypot(c[0] - bx, c[1] - by) >= r for bx, by, r in blockers)
        ]
        if not free:
            return f"no free spot on {target.ref}"
        spot = min(free, key=lambda c: (math.hypot(c[0] - ee[0], c[1] - ee[1]), c))
        return spot, TABLE_TOP_Z


class GroundTruthPerception:
    """The simulator's ground truth through the scene package's Perception protocol."""

    def __init__(self, sim: TabletopSim) -> None:
        self.sim = sim

    def perceive(self, observation: Any) -> list[Detection]:
        timestamp = getattr(observation, "timestamp", None)
        return self.sim.latest_detections(timestamp)


def _grid(center: float, half_span: float, pitch: float) -> list[float]:
    if half_span <= 0:
        return [center]
    count = int(2 * half_span / pitch) + 1
    start = center - (count - 1) * pitch / 2
    return [round(start + i * pitch, 4) for i in range(count)]


def _grasp_yaw(object_yaw: float) -> float:
    """A cube's yaw folded into [-pi/4, pi/4]: the fingers fit any of its four faces."""
    quarter = math.pi / 2
    return (object_yaw + math.pi / 4) % quarter - math.pi / 4


def _round3(point: Any) -> tuple[float, float, float]:
    return tuple(round(float(v), 3) for v in point)  # type: ignore[return-value]


def _xyz(point: Any) -> str:
    return "(" + ", ".join(f"{float(v):.3f}" for v in point) + ")"
