"""The built-in PyBullet tabletop: a Franka Panda, a table, a tray and coloured cubes.

It implements the :class:`~embodiment.types.Driver` protocol like a real robot would:
``execute`` runs a motion in small physics steps and returns what was applied; ``stop()``
from any thread halts a motion at the next step and holds the arm where it is. Headless by
default (``p.DIRECT`` with the CPU tiny renderer, no GL libraries needed); ``gui=True``
opens PyBullet's window and paces motions in real time.

This module holds the lifecycle, the Driver protocol and snapshots; the rest are parts it
owns, one module per concern, each built on the one :class:`~worlds.tabletop.state.SimState`
they share: :mod:`~worlds.tabletop.tasks` (the actions and their plans),
:mod:`~worlds.tabletop.physics` (stepping, IK, position control, building the scene),
:mod:`~worlds.tabletop.truth` (ground truth and perception) and
:mod:`~worlds.tabletop.cameras` (rendering) and :mod:`~worlds.tabletop.snapshots` (the
world's state saved and put back for resume); :mod:`~worlds.tabletop.parts` holds
constants and shared records.

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

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from embodiment.geometry import rounded_point
from embodiment.profile import EmbodimentProfile, load_profile
from embodiment.pybullet_import import import_pybullet
from embodiment.recording import ControlLayout, ControlRecorder, ControlSink
from embodiment.types import (
    ActionResult,
    ActionSpec,
    Motion,
    ObjectInfo,
    Observation,
    validated_call,
)
from scene.perception import Detection, GroundTruthPerception
from worlds.tabletop.actions import (
    tabletop_actions,
)
from worlds.tabletop.cameras import Cameras
from worlds.tabletop.parts import (
    ARM_JOINTS,
    FINGER_JOINTS,
    GRIP_FORCE_N,
    MAX_OPENING,
    REST_POSE,
    Body,
    Interrupted,
)
from worlds.tabletop.physics import Physics
from worlds.tabletop.postconditions import TabletopPostConditions
from worlds.tabletop.scene import (
    TABLE_CENTER,
    TABLE_HALF,
    TABLE_THICKNESS,
    TABLE_TOP_Z,
    Faults,
    TabletopConfig,
)
from worlds.tabletop.snapshots import WorldSnapshots
from worlds.tabletop.state import SimState
from worlds.tabletop.tasks import Tasks
from worlds.tabletop.truth import GroundTruth

__all__ = ["JOINT_NAMES", "REST_POSE", "GroundTruthPerception", "TabletopSim"]

ALL_JOINTS = (*ARM_JOINTS, *FINGER_JOINTS)
JOINT_NAMES = (
    *(f"panda_joint{index}" for index in range(1, 8)),
    "panda_finger_joint1",
    "panda_finger_joint2",
)
"""The URDF's names of the joints a control step measures and commands, in that order."""


class TabletopSim:
    """The ``sim.tabletop`` driver. Options are :class:`TabletopConfig` fields."""

    def __init__(self, profile: EmbodimentProfile | None = None, **options: Any) -> None:
        config = TabletopConfig.model_validate(options)
        rtf = config.real_time_factor
        self.state = SimState(
            config=config,
            profile=profile if profile is not None else load_profile("panda_tabletop"),
            pb=import_pybullet(),
            dt=1.0 / config.physics_hz,
            real_time_factor=rtf if rtf is not None else (1.0 if config.gui else 0.0),
            faults=config.faults,
        )
        self.truth = GroundTruth(self.state)
        self.cameras = Cameras(self.state)
        self.physics = Physics(self.state, self.truth)
        self.tasks = Tasks(self.state, self.physics, self.truth, self.cameras)
        self.snapshots = WorldSnapshots(self.state, self.physics, self.truth)
        self._recorder = ControlRecorder(
            ControlLayout(
                rate_hz=config.control_hz,
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
        cameras = [camera.name for camera in self.profile.cameras]
        self._specs = {
            spec.name: spec
            for spec in tabletop_actions(
                cameras=cameras,
                speed=self.physics.default_speed(),
                width=MAX_OPENING,
                force=GRIP_FORCE_N,
            )
        }
        tasks = self.tasks
        self._handlers: dict[str, Callable[[Any], ActionResult]] = {
            "move_to": tasks.move_to,
            "pick": tasks.pick,
            "place": tasks.place,
            "open_gripper": tasks.open_gripper,
            "close_gripper": tasks.close_gripper,
            "move_joints": tasks.move_joints,
            "home": lambda _args: tasks.home(),
            "look": tasks.look,
        }

    # ================================================================== settings

    @property
    def config(self) -> TabletopConfig:
        return self.state.config

    @property
    def profile(self) -> EmbodimentProfile:
        return self.state.profile

    @profile.setter
    def profile(self, profile: EmbodimentProfile) -> None:
        self.state.profile = profile

    @property
    def faults(self) -> Faults:
        return self.state.faults

    @property
    def real_time_factor(self) -> float:
        """Motions are paced to this multiple of real time (0: as fast as possible)."""
        return self.state.real_time_factor

    @real_time_factor.setter
    def real_time_factor(self, value: float) -> None:
        self.state.real_time_factor = value

    # ================================================================== lifecycle

    @property
    def connected(self) -> bool:
        return self.state.cid is not None

    def connect(self) -> None:
        if self.state.cid is not None:
            return
        pb = self.state.pb
        import pybullet_data

        mode = pb.GUI if self.config.gui else pb.DIRECT
        self.state.cid = pb.connect(mode)
        if self.state.cid < 0:
            self.state.cid = None
            raise RuntimeError("PyBullet could not start (is a display available for gui?)")
        cid = self.state.cid
        pb.setAdditionalSearchPath(pybullet_data.getDataPath(), physicsClientId=cid)
        pb.setGravity(0, 0, -9.81, physicsClientId=cid)
        pb.setTimeStep(self.state.dt, physicsClientId=cid)
        if self.config.gui:
            pb.configureDebugVisualizer(pb.COV_ENABLE_GUI, 0, physicsClientId=cid)
            pb.resetDebugVisualizerCamera(
                1.3, 90, -35, (0.45, 0.0, TABLE_TOP_Z), physicsClientId=cid
            )
        pb.loadURDF("plane.urdf", physicsClientId=cid)
        self.physics.add_box(
            "table_1",
            "table",
            "surface",
            center=(TABLE_CENTER[0], TABLE_CENTER[1], TABLE_TOP_Z - TABLE_THICKNESS / 2),
            size=(2 * TABLE_HALF[0], 2 * TABLE_HALF[1], TABLE_THICKNESS),
            rgba=(0.78, 0.66, 0.50, 1.0),
            mass=0.0,
        )
        base = self.profile.frame_pose_in_world("base")[0]
        self.state.robot = pb.loadURDF(
            "franka_panda/panda.urdf", base, useFixedBase=True, physicsClientId=cid
        )
        for joint in FINGER_JOINTS:
            pb.changeDynamics(self.state.robot, joint, lateralFriction=2.0, physicsClientId=cid)
        self.physics.build_objects(self.config.seed)
        self.physics.reset_arm()

    def disconnect(self) -> None:
        self.state.stop.set()
        with self.state.lock:
            if self.state.cid is not None:
                self.state.pb.disconnect(physicsClientId=self.state.cid)
                self.state.cid = None

    def close(self) -> None:
        """Alias of :meth:`disconnect`, so a Harness can own the simulator."""
        self.disconnect()

    def reset(self, *, seed: int | None = None) -> None:
        """Put the objects back (a new layout when ``seed`` differs) and the arm home."""
        self._require()
        with self.state.lock:
            for ref in [r for r, b in self.state.bodies.items() if b.category != "surface"]:
                self.state.pb.removeBody(
                    self.state.bodies.pop(ref).body, physicsClientId=self.state.cid
                )
            self.state.picks.clear()
            self.state.seen.clear()
            self.physics.build_objects(self.config.seed if seed is None else seed)
            self.physics.reset_arm()
            self.state.motion = "idle"

    def advance(self, seconds: float) -> None:
        """Let physics run for ``seconds`` without commanding anything (the arm holds its
        last targets): for checking that a stopped robot stays put, or settling a scene."""
        self._require()
        with self.state.lock:
            for _ in range(max(1, round(seconds / self.state.dt))):
                self.physics.physics_step()

    def snapshot(self) -> dict[str, Any]:
        """The world's state as plain JSON data (:meth:`WorldSnapshots.take
        <worlds.tabletop.snapshots.WorldSnapshots.take>`); resume records one after every
        turn so placed cubes stay placed."""
        self._require()
        return self.snapshots.take()

    def restore(self, state: dict[str, Any]) -> None:
        """Put the world back into a :meth:`snapshot`. Raises ValueError for a snapshot of
        another scene (an object this simulator does not have) or version."""
        self._require()
        self.snapshots.restore(state)

    def add_step_observer(self, observer: Callable[[tuple[float, float, float]], None]) -> None:
        """Call ``observer(ee_position)`` (world frame) after every physics step of a
        motion: for checking a whole motion, step by step."""
        self.state.step_observers.append(observer)

    def inject_faults(self, **faults: Any) -> None:
        """Replace the injected faults (see :class:`~worlds.tabletop.scene.Faults`); counts
        start again from zero."""
        self.state.faults = Faults.model_validate(faults)
        self.state.picks.clear()

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
        self.state.stop.set()

    def execute(self, action: str, arguments: dict[str, Any]) -> ActionResult:
        self._require()
        args = validated_call(self._specs, action, arguments)
        if isinstance(args, ActionResult):
            return args
        spec = self._specs[action]
        self.state.stop.clear()
        self.state.pace_origin = (time.monotonic(), self.state.sim_time)
        self.state.motion = "moving" if spec.physical else self.state.motion
        try:
            result = self._handlers[action](args)
        except Interrupted:
            self.physics.hold()
            self.state.motion = "stopped"
            return ActionResult(
                ok=False,
                interrupted=True,
                message=f"{action} was stopped; the arm holds where it is",
                applied=self._applied_now(),
            )
        if spec.physical:
            self.state.motion = "idle"
        return result

    def observe(self) -> Observation:
        self._require()
        with self.state.lock:
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
            self.state.truth = (stamp, detections)
        return Observation(timestamp=stamp, images=images, state=state)

    # ================================================================== extensions

    def control_layout(self) -> ControlLayout:
        """The control steps this simulator records (see :mod:`embodiment.recording`)."""
        return self._recorder.layout

    def record_control(self, sink: ControlSink | None, *, cameras: Sequence[str] = ()) -> None:
        """Hand every control step (``control_hz``; simulated time) to ``sink``, with frames
        of ``cameras`` rendered at the step; ``None`` stops."""
        with self.state.lock:
            self._recorder.attach(sink, cameras)
            self.state.on_control_step = self._record_control_step if sink is not None else None

    def _record_control_step(self) -> None:
        """The control step starting now (the caller holds the lock; the targets were just
        sent): measured joints, the targets, frames."""
        state = self.state
        pb, cid = state.pb, state.cid
        joints = [pb.getJointState(state.robot, j, physicsClientId=cid)[0] for j in ALL_JOINTS]
        each = state.finger_command[0]
        frames = {name: self.render(name) for name in self._recorder.cameras}
        self._recorder.emit(state.sim_time, joints, [*state.arm_command, each, each], frames)

    def describe_motion(self, action: str, arguments: dict[str, Any]) -> Motion | None:
        """The gripper waypoints ``execute(action, arguments)`` would follow now: what the
        safety envelope checks before the arm moves. Nothing moves here."""
        self._require()
        spec = self._specs.get(action)
        args: Any = spec.parse(arguments) if spec is not None else None
        if args is None:
            return Motion()  # execute refuses it without moving
        with self.state.lock:
            if action == "move_to":
                return Motion(waypoints=[(args.x, args.y, args.z)], description="straight line")
            if action == "pick":
                plan = self.tasks.pick_plan(args)
                if isinstance(plan, ActionResult):
                    return Motion(description=f"refused: {plan.message}")
                return Motion(waypoints=list(plan.waypoints), description="approach, grasp, lift")
            if action == "place":
                plan = self.tasks.place_plan(args)
                if isinstance(plan, ActionResult):
                    return Motion(description=f"refused: {plan.message}")
                return Motion(
                    waypoints=list(plan.waypoints), description="carry, lower, release, retreat"
                )
            if action == "home":
                return Motion(
                    waypoints=self.tasks.joint_path(REST_POSE), description="joint-space samples"
                )
            if action == "move_joints":
                return Motion(
                    waypoints=self.tasks.joint_path(args.joints), description="joint-space samples"
                )
        return Motion()  # the gripper actions do not move the end effector

    def locate(self, ref: str) -> ObjectInfo | None:
        """Where an object is (for the safety envelope's ref checks)."""
        body = self.state.bodies.get(ref)
        if body is None or self.state.cid is None:
            return None
        with self.state.lock:
            position = self._center(body)
        return ObjectInfo(position=position, size=body.size, mass_kg=body.mass_kg or None)

    def perception(self) -> GroundTruthPerception:
        return GroundTruthPerception(self)

    def post_conditions(self) -> Any:
        return TabletopPostConditions(self)

    # ================================================================== ground truth

    def refs(self) -> list[str]:
        return self.truth.refs()

    def body(self, ref: str) -> Body:
        return self.truth.body(ref)

    def pose(self, ref: str) -> tuple[tuple[float, float, float], float]:
        """(centre position, yaw) of an object."""
        return self.truth.pose(ref)

    def speed_of(self, ref: str) -> float:
        return self.truth.speed_of(ref)

    def held_ref(self) -> str | None:
        """The object both fingers touch, if any."""
        return self.truth.held_ref()

    def support_of(
        self, ref: str, *, poses: dict[str, tuple[tuple[float, float, float], float]] | None = None
    ) -> tuple[str, str] | None:
        """What ``ref`` rests in or on (see :meth:`GroundTruth.support_of`)."""
        return self.truth.support_of(ref, poses=poses)

    def ee_position(self) -> tuple[float, float, float]:
        return self.truth.ee_position()

    def gripper_width(self) -> float:
        return self.truth.gripper_width()

    def home_position(self) -> tuple[float, float, float]:
        return self.truth.home_position()

    def detections(self) -> list[Detection]:
        """Ground truth as :class:`~scene.perception.Detection` objects."""
        return self.truth.detections()

    def latest_detections(self, timestamp: float | None) -> list[Detection]:
        """The ground truth captured with the observation at ``timestamp`` (or now)."""
        return self.truth.latest_detections(timestamp)

    def render(self, camera_name: str) -> np.ndarray:
        """An HxWx3 uint8 RGB frame from a camera declared in the profile."""
        return self.cameras.render(camera_name)

    def camera_matrices(self, camera_name: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """PyBullet's flat view and projection matrices of a fixed camera."""
        return self.cameras.camera_matrices(camera_name)

    # ================================================================== helpers

    def _require(self) -> None:
        if self.state.cid is None:
            raise RuntimeError("the simulator is not connected; call connect() first")

    def _center(self, body: Body) -> tuple[float, float, float]:
        return self.pose(body.ref)[0]

    def _state(self) -> dict[str, Any]:
        with self.state.lock:
            joints = [
                round(
                    self.state.pb.getJointState(
                        self.state.robot, j, physicsClientId=self.state.cid
                    )[0],
                    4,
                )
                for j in ARM_JOINTS
            ]
        width = self.gripper_width()
        return {
            "ee_position": list(rounded_point(self.ee_position())),
            "ee_yaw": round(self.state.yaw, 3),
            "gripper_width": round(width, 4),
            "gripper": "open" if width > 0.07 else ("closed" if width < 0.002 else "partly closed"),
            "joint_positions": joints,
            "motion": self.state.motion,
        }

    def _applied_now(self) -> dict[str, Any]:
        return {
            "ee_position": list(rounded_point(self.ee_position())),
            "gripper_width": round(self.gripper_width(), 4),
        }
