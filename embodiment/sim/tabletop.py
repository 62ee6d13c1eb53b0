"""The built-in PyBullet tabletop: a Franka Panda, a table, a tray and coloured cubes.

It implements the :class:`~embodiment.types.Driver` protocol like a real robot would:
``execute`` runs a motion in small physics steps and returns what was applied; ``stop()``
from any thread halts a motion at the next step and holds the arm where it is. Headless by
default (``p.DIRECT`` with the CPU tiny renderer, no GL libraries needed); ``gui=True``
opens PyBullet's window and paces motions in real time.

This module holds the lifecycle, the Driver protocol and snapshots; the rest is mixed in
from one module per concern: :mod:`~embodiment.sim.tasks` (the actions and their plans),
:mod:`~embodiment.sim.physics` (stepping, IK, position control, building the scene),
:mod:`~embodiment.sim.truth` (ground truth and perception), :mod:`~embodiment.sim.cameras`
(rendering) and :mod:`~embodiment.sim.parts` (constants and shared records).

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

import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from embodiment.profile import EmbodimentProfile, load_profile
from embodiment.recording import ControlLayout, ControlRecorder, ControlSink
from embodiment.sim.actions import (
    tabletop_actions,
)
from embodiment.sim.cameras import Cameras, _Kept
from embodiment.sim.parts import (
    ARM_JOINTS,
    FINGER_JOINTS,
    GRIP_FORCE_N,
    MAX_OPENING,
    REST_POSE,
    RESTORE_SETTLE_STEPS,
    SNAPSHOT_VERSION,
    _Body,
    _Interrupted,
    _round3,
)
from embodiment.sim.physics import Physics
from embodiment.sim.postconditions import TabletopPostConditions
from embodiment.sim.quiet import import_pybullet
from embodiment.sim.tasks import Tasks
from embodiment.sim.truth import GroundTruth, GroundTruthPerception
from embodiment.sim.world import (
    TABLE_CENTER,
    TABLE_HALF,
    TABLE_THICKNESS,
    TABLE_TOP_Z,
    Faults,
    TabletopConfig,
)
from embodiment.types import (
    ActionResult,
    ActionSpec,
    Motion,
    ObjectInfo,
    Observation,
    validated_call,
)
from scene.perception import Detection

__all__ = ["JOINT_NAMES", "REST_POSE", "GroundTruthPerception", "TabletopSim"]

ALL_JOINTS = (*ARM_JOINTS, *FINGER_JOINTS)
JOINT_NAMES = (
    *(f"panda_joint{index}" for index in range(1, 8)),
    "panda_finger_joint1",
    "panda_finger_joint2",
)
"""The URDF's names of the joints a control step measures and commands, in that order."""


class TabletopSim(GroundTruth, Cameras, Tasks, Physics):
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
        self._steps = 0
        """Physics steps so far; a control step starts every ``physics_per_control``."""
        self._arm_command = list(REST_POSE)
        self._targets_sent = False
        self._yaw = 0.0
        self._motion = "idle"
        self._finger_command = (MAX_OPENING / 2, 20.0)
        self._picks: Counter[str] = Counter()
        self.faults = self.config.faults
        self._truth: tuple[float, list[Detection]] | None = None
        self._seen: set[int] = set()
        """Body ids some rendered frame has shown (``perception: seen``)."""
        self._camera_cache: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {}
        self._frame_cache: dict[str, _Kept] = {}
        self._recorder = ControlRecorder(
            ControlLayout(
                rate_hz=self.config.control_hz,
                state_names=JOINT_NAMES,
                action_names=JOINT_NAMES,
                state_description="measured positions of the Panda's 7 arm joints (rad) and "
                "its 2 finger joints (m, each half the gripper's opening)",
                action_description="position targets of the same 9 joints (rad; m for each "
                "finger), sent to PyBullet's position controllers at the step and held "
                "until the next",
                cameras=tuple(camera.name for camera in self.profile.cameras),
            )
        )
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
                self._physics_step()

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
            self._send_targets()
            self._sim_time = float(state["sim_time"])
            self._steps = round(self._sim_time / self._dt)
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
        args = validated_call(self._specs, action, arguments)
        if isinstance(args, ActionResult):
            return args
        spec = self._specs[action]
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

    def control_layout(self) -> ControlLayout:
        """The control steps this simulator records (see :mod:`embodiment.recording`)."""
        return self._recorder.layout

    def record_control(self, sink: ControlSink | None, *, cameras: Sequence[str] = ()) -> None:
        """Hand every control step (``control_hz``; simulated time) to ``sink``, with frames
        of ``cameras`` rendered at the step; ``None`` stops."""
        with self._lock:
            self._recorder.attach(sink, cameras)

    def _record_control_step(self) -> None:
        """The control step starting now (the caller holds the lock; the targets were just
        sent): measured joints, the targets, frames."""
        pb, cid = self._pb, self._cid
        joints = [pb.getJointState(self._robot, j, physicsClientId=cid)[0] for j in ALL_JOINTS]
        each = self._finger_command[0]
        frames = {name: self.render(name) for name in self._recorder.cameras}
        self._recorder.emit(self._sim_time, joints, [*self._arm_command, each, each], frames)

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
