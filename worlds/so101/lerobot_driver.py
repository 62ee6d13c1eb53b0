"""``lerobot.robot``: a driver for any LeRobot ``Robot`` (an SO-101 follower on a serial
port, a Koch, a third-party ``lerobot_robot_*`` plugin), behind the Driver protocol.

The robot is named in the config the way LeRobot names it: ``robot: {type:
so101_follower, port: /dev/ttyACM0, id: my_arm}`` (the fields of that type's
``RobotConfig``, decoded by LeRobot's own ``draccus``). The driver maps:

- ``get_observation()`` to an :class:`Observation`: each ``<motor>.pos`` reading to
  ``joint_positions`` (radians; LeRobot's SO followers report degrees), the gripper's
  reading, every camera array to a frame, and the end-effector point by forward
  kinematics of the profile's model (``ee_position``, which the envelope requires);
- ``move_joints`` / ``home`` to a stream of ``send_action({"<motor>.pos": ...})`` at
  ``rate_hz``, no joint faster than ``max_joint_speed_rad_s``; LeRobot returns the action
  it really sent (it clips with ``max_relative_target``), and every difference from what
  was asked is reported in the result (``applied.clipped``), never hidden;
- ``open_gripper`` / ``close_gripper`` to the gripper motor's target, moved there over
  ``gripper_ramp_s`` (as the simulated world's own jaw closes): one jump would drive the
  jaw into the object at its motor's full speed, a knock on the object and the gears.
  The goal stays within ``gripper_lead`` of the measured jaw (close until contact, then
  press with a bounded force);
- ``stop()`` (any thread) to holding the measured position at the next step.

``connect``/``disconnect`` are LeRobot's, called when the session starts and ends;
``calibrate`` (default false) is passed to ``connect``: calibrate once with LeRobot's own
``lerobot-calibrate`` before a first run. LeRobot is imported only when the driver is
built (it needs Python >= 3.12 and torch); nothing else in the harness imports it.
"""

from __future__ import annotations

import importlib
import math
import threading
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, create_model

from embodiment.actions import (
    ActionArgs,
    NoArgs,
    close_gripper_spec,
    home_spec,
    look_args,
    look_spec,
    open_gripper_spec,
)
from embodiment.geometry import rounded_point
from embodiment.profile import EmbodimentProfile
from embodiment.recording import ControlLayout, ControlRecorder, ControlSink
from embodiment.types import ActionResult, ActionSpec, Observation, validated_call

__all__ = ["LeRobotDriver", "LeRobotOptions"]


class LeRobotOptions(BaseModel):
    """The ``lerobot.robot`` driver's options."""

    model_config = ConfigDict(extra="forbid")

    robot: dict[str, Any] = Field(
        description="LeRobot's robot config: its `type` (so101_follower...) and that type's fields"
    )
    plugins: list[str] = Field(
        default_factory=list,
        description="modules to import first (robots that register their config type)",
    )
    calibrate: bool = False
    units: Literal["degrees", "radians"] = "degrees"
    """What ``<motor>.pos`` of the arm joints is in (LeRobot's SO followers: degrees)."""
    joints: list[str] | None = None
    """The arm's motors in the profile's joint order (default: the profile's
    ``kinematics.joints``)."""
    gripper: str | None = "gripper"
    gripper_open: float = 70.0
    """The gripper motor's target when open (LeRobot's 0..100 range for the SO-101)."""
    gripper_closed: float = 0.0
    gripper_ramp_s: float = Field(0.5, ge=0)
    """A jaw move's target goes from the measured opening to the goal over this long, then
    is held ``gripper_hold_s``: the jaw meets the object at a walking pace, not at its
    motor's full speed (0: one jump)."""
    gripper_hold_s: float = Field(0.2, ge=0)
    gripper_lead: float | None = Field(5.0, gt=0)
    """The jaw's goal is never more than this (the gripper's units) from where the jaw is
    measured: closing, it stops at an object and presses it with that much position error,
    not with its motor's full torque; and a goal within the robot's ``max_relative_target``
    is never clipped by LeRobot (a goal of 0 with a cube holding the jaw at 16 would be, at
    every action while the cube is carried). None: the goal is the ramp's."""
    rate_hz: float = Field(30.0, gt=0, le=200)
    max_joint_speed_rad_s: float = Field(0.5, gt=0)
    pace: bool = True
    """Wait 1/rate_hz between actions (a real robot); off for a simulated one that steps
    its own physics per action."""
    settle_s: float = Field(0.5, ge=0)
    """After a move, the last action is held up to this long for the joints to arrive."""
    settle_tolerance_rad: float = Field(0.03, ge=0)
    tolerance: float = Field(0.5, ge=0)
    """A difference between the action sent and the one applied larger than this (in the
    motor's units) is reported."""


class LeRobotDriver:
    """Drives a LeRobot ``Robot`` (see the module docstring)."""

    judge_name = "lerobot"

    def __init__(self, profile: EmbodimentProfile, **options: Any) -> None:
        self.options = LeRobotOptions.model_validate(options)
        self.profile = profile
        spec = profile.kinematics
        joints = self.options.joints or (list(spec.joints) if spec and spec.joints else None)
        if not joints:
            raise ValueError(
                "lerobot.robot: name the arm's motors (driver.joints) or give the profile "
                "kinematics.joints"
            )
        self.joints = list(joints)
        self.robot: Any = None
        self._stop = threading.Event()
        self._lock = threading.RLock()
        self._gripper_target: float | None = None
        self._arm_target: list[float] | None = None
        self._cameras = [c.name for c in profile.cameras]
        self._fk: Any = None
        self._specs = {s.name: s for s in self._actions()}
        names = tuple(f"{j}.pos" for j in self._motors())
        self._recorder = ControlRecorder(
            ControlLayout(
                rate_hz=self.options.rate_hz,
                state_names=names,
                action_names=names,
                state_description="the LeRobot robot's measured motor positions ("
                f"{self.options.units} for the arm joints, the gripper in its own range)",
                action_description="the action sent with send_action() (LeRobot's units), held "
                "until the next step",
            )
        )
        self._time = 0.0

    # ================================================================== lifecycle

    def connect(self) -> None:
        with self._lock:
            if self.robot is not None:
                return
            self.robot = self._build()
            self.robot.connect(calibrate=self.options.calibrate)
            self._stop.clear()

    def disconnect(self) -> None:
        with self._lock:
            if self.robot is not None:
                try:
                    self.robot.disconnect()
                finally:
                    self.robot = None

    def close(self) -> None:
        self.disconnect()

    def hardware_identity(self) -> str | None:
        """Which robot this drives (a lease is taken on it before connecting)."""
        port = self.options.robot.get("port")
        return f"lerobot:{self.options.robot.get('type')}:{port}" if port else None

    def _build(self) -> Any:
        for module in self.options.plugins:
            importlib.import_module(module)
        try:
            import draccus
            from lerobot.robots import RobotConfig, make_robot_from_config
        except ImportError as exc:
            raise RuntimeError(
                "lerobot.robot needs LeRobot (Python >= 3.12): pip install 'lerobot' "
                f"in this environment ({exc})"
            ) from None
        fields = dict(self.options.robot)
        kind = fields.pop("type", None)
        if not kind:
            raise ValueError("driver.robot.type: name the LeRobot robot type (so101_follower...)")
        try:
            config_class = RobotConfig.get_choice_class(kind)
        except (KeyError, ValueError):
            known = ", ".join(sorted(RobotConfig.get_known_choices()))
            raise ValueError(
                f"driver.robot.type: no LeRobot robot {kind!r} (known: {known})"
            ) from None
        config = draccus.decode(config_class, fields)
        return make_robot_from_config(config)

    # ================================================================== Driver protocol

    def capabilities(self) -> list[ActionSpec]:
        return list(self._specs.values())

    def stop(self) -> None:
        """Hold the measured position at the next control step (any thread)."""
        self._stop.set()

    def observe(self) -> Observation:
        robot = self._require()
        with self._lock:
            reading = robot.get_observation()
        joints = [self._to_rad(float(reading[f"{j}.pos"])) for j in self.joints]
        images = {
            key: np.asarray(value, dtype=np.uint8)
            for key, value in reading.items()
            if isinstance(value, np.ndarray) and value.ndim == 3 and key in self._cameras
        }
        state: dict[str, Any] = {
            "joint_positions": [round(v, 4) for v in joints],
            "ee_position": list(rounded_point(self._ee(joints))),
            "robot": str(self.options.robot.get("type")),
        }
        if self.options.gripper:
            value = float(reading[f"{self.options.gripper}.pos"])
            state["gripper_position"] = round(value, 2)
            middle = (self.options.gripper_open + self.options.gripper_closed) / 2
            opens_up = self.options.gripper_open > self.options.gripper_closed
            state["gripper"] = "open" if (value > middle) == opens_up else "closed"
        return Observation(images=images, state=state)

    def execute(self, action: str, arguments: dict[str, Any]) -> ActionResult:
        self._require()
        args = validated_call(self._specs, action, arguments)
        if isinstance(args, ActionResult):
            return args
        if action == "look":
            observation = self.observe()
            return ActionResult(
                ok=True, message="a fresh observation", data={"images": observation.images}
            )
        self._stop.clear()
        measured = self._measured()
        gripper = self._gripper_now(measured)
        if action == "move_joints":
            return self._move(list(args.joints), gripper, "move_joints")
        if action == "home":
            home = self.profile.kinematics.home if self.profile.kinematics else None
            if not home:
                return ActionResult(ok=False, message="home: the profile has no kinematics.home")
            return self._move(list(home), gripper, "home")
        target = (
            self.options.gripper_open if action == "open_gripper" else self.options.gripper_closed
        )
        # the arm keeps its last commanded target (re-commanding the measured, sagging
        # position would let gravity lower it a little more at every action)
        arm = self._arm_target or [self._to_rad(measured[f"{j}.pos"]) for j in self.joints]
        return self._move(list(arm), target, action, jaw_only=True)

    # ================================================================== extensions

    def control_layout(self) -> ControlLayout:
        return self._recorder.layout

    def record_control(self, sink: ControlSink | None, *, cameras: Sequence[str] = ()) -> None:
        self._recorder.attach(sink, cameras)

    # ================================================================== motion

    def _move(
        self, target: list[float], gripper: float | None, label: str, *, jaw_only: bool = False
    ) -> ActionResult:
        robot = self._require()
        start = self._measured()
        begin = [self._to_rad(start[f"{j}.pos"]) for j in self.joints]
        travel = max(abs(b - a) for a, b in zip(begin, target, strict=True))
        period = 1.0 / self.options.rate_hz
        count = max(1, math.ceil(travel / (self.options.max_joint_speed_rad_s * period)))
        ramp = 0
        gripper_start = gripper
        if jaw_only and gripper is not None and self.options.gripper:
            ramp = round(self.options.gripper_ramp_s * self.options.rate_hz)
            hold = round(self.options.gripper_hold_s * self.options.rate_hz)
            count = max(count, ramp + hold, 1)
            gripper_start = start.get(f"{self.options.gripper}.pos", gripper)
        clipped: dict[str, tuple[float, float]] = {}
        sent: dict[str, float] = {}
        action: dict[str, float] = {}
        for k in range(1, count + 1):
            if self._stop.is_set():
                held = self._hold()
                return ActionResult(
                    ok=False,
                    interrupted=True,
                    message=f"{label} was stopped; the arm holds where it is",
                    applied={"joint_positions": held},
                )
            q = [a + (b - a) * k / count for a, b in zip(begin, target, strict=True)]
            action = {f"{j}.pos": self._from_rad(v) for j, v in zip(self.joints, q, strict=True)}
            if self.options.gripper and gripper is not None:
                jaw = gripper
                if ramp and gripper_start is not None and k < ramp:
                    jaw = gripper_start + (gripper - gripper_start) * k / ramp
                now = self._measured() if jaw_only and k > 1 else start
                action[f"{self.options.gripper}.pos"] = self._within_lead(jaw, now)
            with self._lock:
                if self._recorder.active:
                    state = self._measured()
                    self._recorder.emit(
                        self._time,
                        [state[n] for n in self._recorder.layout.state_names],
                        [action.get(n, state[n]) for n in self._recorder.layout.action_names],
                    )
                applied = robot.send_action(action)
            self._time += period
            sent = {key: float(value) for key, value in applied.items()}
            for key, value in action.items():
                got = float(applied.get(key, math.nan))
                if not abs(got - value) <= self.options.tolerance:
                    clipped[key] = (round(value, 3), round(got, 3))
            if self.options.pace:
                self._stop.wait(period)
        if gripper is not None:
            self._gripper_target = gripper
        self._arm_target = list(target)
        if jaw_only and gripper is not None and self.options.gripper:
            action = self._settle_jaw(action, gripper, clipped)
        final = self._settle(action, target)
        reached = [self._to_rad(final[f"{j}.pos"]) for j in self.joints]
        error = max(abs(a - b) for a, b in zip(reached, target, strict=True))
        applied_now = {
            "joint_positions": [round(v, 4) for v in reached],
            "sent": sent,
            "clipped": {key: list(pair) for key, pair in clipped.items()},
        }
        message = f"{label}: {count} actions sent; joints within {error:.3f} rad of the target"
        if jaw_only and self.options.gripper:
            message += f"; the jaw at {final[f'{self.options.gripper}.pos']:.1f}"
        if clipped:
            first = ", ".join(
                f"{k} asked {a} applied {b}" for k, (a, b) in list(clipped.items())[:3]
            )
            message += f"; LeRobot applied a different action than asked ({first})"
        return ActionResult(ok=not clipped, message=message, applied=applied_now)

    def _settle_jaw(
        self, action: dict[str, float], goal: float, clipped: dict[str, tuple[float, float]]
    ) -> dict[str, float]:
        """Close until contact: while the jaw still moves (more than 0.5 of its units per
        action) short of ``goal``, keep sending its goal, up to ``settle_s``
        (with ``gripper_lead`` the goal advances only as the jaw follows)."""
        robot = self._require()
        key = f"{self.options.gripper}.pos"
        previous: float | None = None
        for _ in range(round(self.options.settle_s * self.options.rate_hz)):
            measured = self._measured()
            jaw = measured[key]
            arrived = abs(jaw - goal) <= self.options.tolerance
            if arrived or (previous is not None and abs(jaw - previous) < 0.5):
                break
            if self._stop.is_set():
                break
            previous = jaw
            action = {**action, key: self._within_lead(goal, measured)}
            with self._lock:
                applied = robot.send_action(action)
            got = float(applied.get(key, math.nan))
            if not abs(got - action[key]) <= self.options.tolerance:
                clipped[key] = (round(action[key], 3), round(got, 3))
            if self.options.pace:
                self._stop.wait(1.0 / self.options.rate_hz)
        return action

    def _within_lead(self, goal: float, measured: dict[str, float]) -> float:
        """``goal`` for the jaw, no more than ``gripper_lead`` from its measured position."""
        lead = self.options.gripper_lead
        now = measured.get(f"{self.options.gripper}.pos")
        if lead is None or now is None:
            return float(goal)
        return float(min(max(goal, now - lead), now + lead))

    def _settle(self, action: dict[str, float], target: list[float]) -> dict[str, float]:
        """Hold the last action until the joints are within ``settle_tolerance_rad`` of
        ``target`` or ``settle_s`` has passed (position servos lag the command); the
        measured positions at the end."""
        robot = self._require()
        period = 1.0 / self.options.rate_hz
        for _ in range(round(self.options.settle_s * self.options.rate_hz)):
            measured = self._measured()
            now = [self._to_rad(measured[f"{j}.pos"]) for j in self.joints]
            if (
                max(abs(a - b) for a, b in zip(now, target, strict=True))
                <= (self.options.settle_tolerance_rad)
                or self._stop.is_set()
            ):
                return measured
            with self._lock:
                robot.send_action(action)
            if self.options.pace:
                self._stop.wait(period)
        return self._measured()

    def _hold(self) -> list[float]:
        robot = self._require()
        measured = self._measured()
        self._arm_target = None  # stopped: the measured position is the new target
        action = {key: value for key, value in measured.items() if key in self._action_keys()}
        with self._lock:
            robot.send_action(action)
        return [round(self._to_rad(measured[f"{j}.pos"]), 4) for j in self.joints]

    # ================================================================== helpers

    def _require(self) -> Any:
        if self.robot is None:
            raise RuntimeError("the LeRobot robot is not connected; call connect() first")
        return self.robot

    def _motors(self) -> list[str]:
        return [*self.joints, *([self.options.gripper] if self.options.gripper else [])]

    def _action_keys(self) -> set[str]:
        return {f"{m}.pos" for m in self._motors()}

    def _measured(self) -> dict[str, float]:
        with self._lock:
            reading = self._require().get_observation()
        return {k: float(v) for k, v in reading.items() if k in self._action_keys()}

    def _gripper_now(self, measured: dict[str, float]) -> float | None:
        if not self.options.gripper:
            return None
        if self._gripper_target is not None:
            return self._gripper_target
        return measured.get(f"{self.options.gripper}.pos")

    def _to_rad(self, value: float) -> float:
        return math.radians(value) if self.options.units == "degrees" else value

    def _from_rad(self, value: float) -> float:
        return math.degrees(value) if self.options.units == "degrees" else value

    def _ee(self, joints: list[float]) -> tuple[float, float, float]:
        spec = self.profile.kinematics
        if spec is None:
            return (math.nan, math.nan, math.nan)
        if self._fk is None:
            from embodiment.envelope.kinematics import kinematic_model

            self._fk = kinematic_model(spec, len(joints))
        return self.profile.to_world(self._fk.ee_point(joints), spec.frame)

    def _actions(self) -> list[ActionSpec]:
        count = len(self.joints)
        moves = create_model(
            "MoveJointsArgs",
            __base__=ActionArgs,
            joints=(
                list[float],
                Field(
                    min_length=count,
                    max_length=count,
                    description=f"The arm's {count} joint positions (radians: "
                    f"{', '.join(self.joints)}), reached along a straight line in joint space.",
                ),
            ),
        )
        return [
            ActionSpec(
                name="move_joints",
                description="Move the arm to joint positions (radians) along a straight line in "
                "joint space, no joint faster than the configured speed; the safety envelope "
                "checks the gripper's path through the profile's kinematics.",
                arguments=moves,
                safety={"joints": "joints"},
                timeout_s=60,
                post_condition="the arm's joints are at {joints}",
            ),
            open_gripper_spec(NoArgs),
            close_gripper_spec(NoArgs),
            home_spec("Move the arm to the profile's home joint positions."),
            look_spec(self._cameras or ["none"], look_args("every camera"), timeout_s=20),
        ]
