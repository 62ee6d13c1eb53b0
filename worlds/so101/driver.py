"""The ``sim.so101`` driver: the SO-101 in MuJoCo at a table, behind the Driver protocol.

Skills are planned on the published model (:mod:`.skills`, IK with ``mink``) before
anything moves, and ``describe_motion`` hands the same plan's end-effector points to the
safety envelope; execution sends joint targets at control steps (:mod:`.physics`), every
physics step audited against the profile. Observations carry the front and wrist
cameras' renders; ground truth (:mod:`.truth`) feeds the scene graph and the task check;
post-conditions (:mod:`.postconditions`) judge each action.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from embodiment.geometry import rounded_point
from embodiment.profile import EmbodimentProfile, load_profile
from embodiment.recording import ControlLayout, ControlRecorder, ControlSink
from embodiment.step_audit import StepAudit
from embodiment.types import (
    ActionResult,
    ActionSpec,
    Motion,
    ObjectInfo,
    Observation,
    validated_call,
)
from scene.perception import Detection, GroundTruthPerception
from worlds.so101.actions import so101_actions
from worlds.so101.ik import ArmIK
from worlds.so101.model import CUBE_HALF, GRASP_SITE
from worlds.so101.physics import GRIPPER_OPEN, Interrupted, Physics, control_layout
from worlds.so101.postconditions import So101PostConditions
from worlds.so101.scene import So101Config, layout_objects
from worlds.so101.skills import HOME, JawMove, ObjectState, Plan, Refusal, SkillPlanner, yaw_of
from worlds.so101.truth import GroundTruth

__all__ = ["PROFILE", "So101Sim"]

from pathlib import Path

PROFILE = Path(__file__).resolve().parent / "so101.yaml"
MAX_JOINT_SPEED = 1.5
"""rad/s: no joint is commanded faster, whatever the gripper's speed."""
SETTLE_STEPS = 4
"""Control steps held at the end of each segment (the position servos catch up)."""


class So101Sim:
    """The ``sim.so101`` driver. Options are :class:`~worlds.so101.scene.So101Config`."""

    judge_name = "simulator"

    def __init__(self, profile: EmbodimentProfile | None = None, **options: Any) -> None:
        self.config = So101Config.model_validate(options)
        self.profile = profile if profile is not None else load_profile(PROFILE)
        self.audit = StepAudit(self.profile)
        self._cameras = [c.name for c in self.profile.cameras]
        self._speed = self.profile.limits.default_speed_m_s or 0.08
        self._specs = {s.name: s for s in so101_actions(cameras=self._cameras, speed=self._speed)}
        self._recorder = ControlRecorder(control_layout(self.config.control_hz, ("front", "wrist")))
        self._observers: list[Callable[[tuple[float, float, float]], None]] = [self.audit]
        self.physics: Physics | None = None
        self._truth: GroundTruth | None = None
        self._ik: ArmIK | None = None
        self._planner: SkillPlanner | None = None
        self._latest: tuple[float, list[Detection]] | None = None
        self._motion = "idle"
        home = self.profile.kinematics.home if self.profile.kinematics else None
        self.home = list(home) if home else list(HOME)

    # ================================================================== lifecycle

    @property
    def lock(self) -> Any:
        return self._require().lock

    @property
    def truth(self) -> GroundTruth:
        self._require()
        assert self._truth is not None
        return self._truth

    @property
    def connected(self) -> bool:
        return self.physics is not None

    def connect(self) -> None:
        if self.physics is None:
            self._ik = ArmIK()
            self._planner = SkillPlanner(
                self._ik, speed=self._speed, jaw_contacts=self._jaw_contacts
            )
            self.reset()

    def reset(self, *, seed: int | None = None, layout: str | None = None) -> None:
        """A fresh scene: ``layout`` and ``seed`` (else the configured ones)."""
        if seed is not None or layout is not None:
            update = {k: v for k, v in (("seed", seed), ("layout", layout)) if v is not None}
            self.config = So101Config.model_validate({**self.config.model_dump(), **update})
        clock = 0.0
        if self.physics is not None:
            clock = self.physics.clock() + 1.0 / self.config.control_hz
            self.physics.close()
        physics = Physics(
            layout_objects(self.config.layout, self.config.seed),
            control_hz=self.config.control_hz,
            camera_size=(self.config.width, self.config.height),
            real_time_factor=self.config.real_time_factor,
            clock_start=clock,
        )
        physics.observers = self._observers
        physics.recorder = self._recorder
        physics.render_cameras = lambda names: {n: physics.render(n) for n in names}
        physics.reset(self.home, GRIPPER_OPEN)
        self.physics = physics
        self._truth = GroundTruth(physics)
        self._latest = None
        self._motion = "idle"
        self.audit.restart()

    def select(self, *, seed: int | None = None, layout: str | None = None) -> None:
        """Switch to another episode (a reusable driver in an eval worker)."""
        self.reset(seed=seed, layout=layout)

    def disconnect(self) -> None:
        if self.physics is not None:
            self.physics.stop_event.set()
            self.physics.close()
        self.physics = None
        self._truth = None

    def close(self) -> None:
        self.disconnect()

    def __enter__(self) -> So101Sim:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.disconnect()

    def step_audit(self) -> dict[str, Any]:
        """Physics steps since the last reset, and how many had the gripper outside the
        profile's workspace or in a keep-out zone."""
        return self.audit.result().model_dump()

    def add_step_observer(self, observer: Callable[[tuple[float, float, float]], None]) -> None:
        """Call ``observer(ee_position)`` (world frame) after every physics step."""
        self._observers.append(observer)

    # ================================================================== Driver protocol

    def capabilities(self) -> list[ActionSpec]:
        return list(self._specs.values())

    def stop(self) -> None:
        """Halt a motion in flight (any thread); the arm holds where it is."""
        if self.physics is not None:
            self.physics.stop_event.set()

    def execute(self, action: str, arguments: dict[str, Any]) -> ActionResult:
        physics = self._require()
        args = validated_call(self._specs, action, arguments)
        if isinstance(args, ActionResult):
            return args
        if action == "look":
            names = [args.camera] if args.camera else self._cameras
            unknown = [n for n in names if n not in self._cameras]
            if unknown:
                return ActionResult(
                    ok=False, message=f"no camera {unknown[0]!r} ({', '.join(self._cameras)})"
                )
            with physics.lock:
                images = {n: physics.render(n) for n in names}
            return ActionResult(
                ok=True, message=f"looked through {', '.join(names)}", data={"images": images}
            )
        physics.start_motion()
        with physics.lock:
            plan = self._plan(action, args.model_dump())
            if isinstance(plan, Refusal):
                return ActionResult(ok=False, message=plan.message, applied=self._applied())
            self._motion = "moving"
            try:
                self._run(plan)
            except Interrupted:
                physics.hold()
                self._motion = "stopped"
                return ActionResult(
                    ok=False,
                    interrupted=True,
                    message=f"{action} was stopped; the arm holds where it is",
                    applied=self._applied(),
                )
            self._motion = "idle"
            return ActionResult(ok=True, message=plan.description, applied=self._applied())

    def observe(self) -> Observation:
        physics = self._require()
        with physics.lock:
            images = {c.name: physics.render(c.name) for c in self.profile.model_visible_cameras()}
            state = self._state()
            detections = self.truth.detections()
            stamp = time.time()
            self._latest = (stamp, detections)
        return Observation(timestamp=stamp, images=images, state=state)

    # ================================================================== extensions

    def describe_motion(self, action: str, arguments: dict[str, Any]) -> Motion | None:
        """The end-effector points ``execute(action, arguments)`` would pass now (every
        sampled configuration, by forward kinematics of the published model)."""
        physics = self._require()
        spec = self._specs.get(action)
        args: Any = spec.parse(arguments) if spec is not None else None
        if args is None or action in {"look", "open_gripper", "close_gripper"}:
            return Motion()
        with physics.lock:
            plan = self._plan(action, args.model_dump())
        if isinstance(plan, Refusal):
            return Motion(description=f"refused: {plan.message}", refused=plan.message)
        return Motion(waypoints=plan.waypoints, description=plan.description)

    def locate(self, ref: str) -> ObjectInfo | None:
        if self.physics is None or ref not in self.truth.refs():
            return None
        with self.physics.lock:
            (x, y, z), _ = self.truth.pose(ref)
        if self.truth.kind(ref) == "box":
            return ObjectInfo(position=(x, y, 0.02), size=(0.12, 0.12, 0.035))
        return ObjectInfo(position=(x, y, z), size=(2 * CUBE_HALF,) * 3, mass_kg=0.03)

    def perception(self) -> GroundTruthPerception:
        return GroundTruthPerception(self)

    def post_conditions(self) -> So101PostConditions:
        return So101PostConditions(self)

    def detections(self) -> list[Detection]:
        with self.lock:
            return self.truth.detections()

    def latest_detections(self, timestamp: float | None) -> list[Detection]:
        latest = self._latest
        if latest is not None and timestamp is not None and abs(latest[0] - timestamp) < 1e-6:
            return latest[1]
        return self.detections()

    def control_layout(self) -> ControlLayout:
        return self._recorder.layout

    def record_control(self, sink: ControlSink | None, *, cameras: Sequence[str] = ()) -> None:
        self._recorder.attach(sink, cameras)

    def render(self, camera: str) -> np.ndarray:
        return self._require().render(camera)

    # ================================================================== planning and running

    def _plan(self, action: str, args: dict[str, Any]) -> Plan | Refusal:
        physics = self._require()
        planner = self._planner
        assert planner is not None and self._ik is not None
        truth = self.truth
        joints = physics.joints()[:5]
        if action == "pick":
            ref = args["ref"]
            if ref not in truth.refs() or truth.kind(ref) != "cube":
                return Refusal(f"pick: {ref!r} is not a cube of this scene ({self._cubes()})")
            held = truth.held_ref()
            if held is not None:
                return Refusal(f"pick {ref} refused: the jaw already holds {held}; place it first")
            position, yaw = truth.pose(ref)
            return planner.pick(ref, args["grasp"], ObjectState(position, yaw, "cube"), joints)
        if action == "place":
            return self._place_plan(args, joints)
        if action == "move_to":
            target = (args["x"], args["y"], args["z"])
            return planner.move_to(target, joints, args.get("speed") or self._speed)
        if action == "home":
            return planner.joint_move(self.home, joints, "home")
        if action == "move_joints":
            return planner.joint_move(args["joints"], joints, "move_joints")
        if action == "open_gripper":
            return Plan([JawMove(GRIPPER_OPEN, 0.6, "open")], [], "the jaw opens")
        if action == "close_gripper":
            return Plan([JawMove(-0.1, 0.7, "close")], [], "the jaw closes")
        return Refusal(f"unknown action {action!r}")

    def _place_plan(self, args: dict[str, Any], joints: list[float]) -> Plan | Refusal:
        truth, planner = self.truth, self._planner
        assert planner is not None and self._ik is not None
        ref, target = args["ref"], args["target"]
        held = truth.held_ref()
        if held != ref:
            now = f"the jaw holds {held}" if held else "the jaw holds nothing"
            return Refusal(f"place {ref} refused: {now}; pick {ref} first")
        if target == "table_1":
            state = ObjectState((0.0, 0.0, 0.0), 0.0, "table")
        elif target in truth.refs() and target != ref:
            position, yaw = truth.pose(target)
            state = ObjectState(position, yaw, truth.kind(target))
        else:
            return Refusal(f"place: no target {target!r} (box_1, table_1 or {self._cubes()})")
        grasp_point, rotation = self._ik.fk(joints, GRASP_SITE)
        return planner.place(ref, target, state, joints, tuple(grasp_point), yaw_of(rotation))

    def _run(self, plan: Plan) -> None:
        physics = self._require()
        targets = physics.targets()
        for step in plan.steps:
            if isinstance(step, JawMove):
                steps = max(1, round(step.seconds * physics.control_hz))
                start = targets[5]
                for k in range(1, steps + 1):
                    targets[5] = start + (step.gripper - start) * min(1.0, 1.4 * k / steps)
                    physics.control_step(targets)
                continue
            gripper = step.gripper if not math.isnan(step.gripper) else targets[5]
            previous = targets[:5]
            for config in step.configs:
                ee_a, _ = self._ik.fk(previous)  # type: ignore[union-attr]
                ee_b, _ = self._ik.fk(config)  # type: ignore[union-attr]
                travel = float(np.linalg.norm(ee_b - ee_a))
                turn = max(abs(a - b) for a, b in zip(previous, config, strict=True))
                seconds = max(travel / step.speed, turn / MAX_JOINT_SPEED)
                count = max(1, math.ceil(seconds * physics.control_hz))
                for k in range(1, count + 1):
                    arm = [a + (b - a) * k / count for a, b in zip(previous, config, strict=True)]
                    targets = [*arm, gripper]
                    physics.control_step(targets)
                previous = list(config)
            for _ in range(SETTLE_STEPS):
                physics.control_step(targets)

    # ================================================================== helpers

    def _jaw_contacts(self, arm: Sequence[float], gripper: float, ignore: set[str]) -> list[str]:
        return self._require().jaw_contacts(arm, gripper, ignore)

    def _require(self) -> Physics:
        if self.physics is None:
            raise RuntimeError("the SO-101 simulator is not connected; call connect() first")
        return self.physics

    def _cubes(self) -> str:
        return ", ".join(r for r in self.truth.refs() if self.truth.kind(r) == "cube")

    def _state(self) -> dict[str, Any]:
        physics = self._require()
        joints = physics.joints()
        opening = joints[5]
        return {
            "ee_position": list(rounded_point(physics.ee_position())),
            "joint_positions": [round(v, 4) for v in joints[:5]],
            "gripper": "open" if opening > 0.6 else "closed",
            "gripper_opening_rad": round(opening, 3),
            "motion": self._motion,
        }

    def _applied(self) -> dict[str, Any]:
        physics = self._require()
        return {
            "ee_position": list(rounded_point(physics.ee_position())),
            "joint_positions": [round(v, 4) for v in physics.joints()[:5]],
        }
