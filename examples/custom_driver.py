"""Template: a driver for your own robot, and how to declare its limits.

What to implement (the :class:`embodiment.Driver` protocol):

- ``connect()`` / ``disconnect()``: open and close the robot connection.
- ``observe() -> Observation``: camera frames (HxWx3 uint8, one per model-visible camera in
  the profile, at the declared size), robot state (``ee_position`` [x, y, z] in the world
  frame, ``joint_positions``, gripper), safety readings (e.g. ``clearance.forward`` for a
  base), and ``timestamp``. A missing or non-finite reading makes the envelope block motion.
- ``execute(action, arguments) -> ActionResult``: run one action; return what was actually
  applied, ``ok=False`` when it could not be carried out, ``interrupted=True`` when stop()
  cut it short.
- ``stop()``: callable from any thread; halt the motion in flight promptly. Make it your
  robot's own stop path (a protective stop), never a sleep-and-hope.
- ``capabilities() -> list[ActionSpec]``: each action with a pydantic argument model and a
  ``safety`` map saying what every argument is (positions, speeds, forces, joints,
  distances..., ``free`` for one that cannot move anything; ``safety={}`` for an action
  without arguments). The harness turns each into a tool and checks every call against
  the profile first; an argument without a kind blocks the call.
- ``describe_motion(action, arguments) -> Motion | None``: the waypoints ``execute`` would
  send the tool point through for these arguments, without moving. The envelope checks
  every segment against the workspace, the keep-out zones and the step limit. Without it
  (or when it returns None) the envelope assumes a straight line to a position target and,
  for refs, a path within the box from the tool point to ``safety.approach_height_m``
  above the ref; a driver that moves any other way must describe its motions.
- Optional: ``locate(ref)`` (lets ``object_ref``/``target_ref`` arguments be checked),
  ``perception()`` (detections for the scene graph), ``post_conditions()`` (programmatic
  evaluation; otherwise configure ``evaluation.model``, a vision model),
  ``hardware_identity()`` (which robot this is: a Harness takes a per-host lease on it
  before connecting, so two sessions never drive it at once; see ``embodiment/lease.py``).

Declare the limits in a profile (start from ``configs/embodiments/real_arm_template.yaml``),
register the driver, and check it before anything else moves::

    python examples/custom_driver.py       # runs check_driver against a dry-run backend

Then in your config: ``driver: {name: my_arm, host: 192.168.1.10}``.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from embodiment import (
    ActionResult,
    ActionSpec,
    EmbodimentProfile,
    Motion,
    Observation,
    check_driver,
    load_profile,
    register_driver,
)
from embodiment.declarations import with_defaults


class MoveToArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    x: float = Field(description="Tool point target x (world frame, m).")
    y: float = Field(description="Tool point target y (world frame, m).")
    z: float = Field(description="Tool point target z (world frame, m).")
    speed: float | None = Field(None, gt=0, description="m/s; default from the profile.")


class GripArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    width: float = Field(ge=0, description="Finger opening (m).")
    force: float | None = Field(None, gt=0, description="Grip force (N).")


class MyArmDriver:
    """Replace the ``_backend_*`` methods with calls into your robot's SDK."""

    def __init__(self, profile: EmbodimentProfile, *, host: str = "dry-run", **_: Any) -> None:
        self.profile = profile
        self.host = host
        self._stop = threading.Event()
        gripper = profile.grippers[0]
        self._ee = list(profile.to_world(gripper.initial_position, gripper.frame))
        self._width = gripper.max_opening_m or 0.08

    # --------------------------------------------------------------- protocol
    def hardware_identity(self) -> str | None:
        """The robot this instance drives: two Harness instances on this host never drive
        the same one at once (a lease is taken before connect). None in a dry run."""
        return None if self.host == "dry-run" else f"my-arm@{self.host}"

    def connect(self) -> None:
        pass  # e.g. self.robot = my_sdk.connect(self.host); self.robot.enable()

    def disconnect(self) -> None:
        self.stop()  # e.g. self.robot.disable(); self.robot.close()

    def stop(self) -> None:
        self._stop.set()  # e.g. self.robot.protective_stop()

    def _default_speed(self) -> float:
        limits = self.profile.limits
        return limits.default_speed_m_s or min(0.1, limits.max_speed_m_s)

    def _default_force(self) -> float:
        limits = self.profile.limits
        return max(limits.min_force_n, min(20.0, limits.max_force_n))

    def capabilities(self) -> list[ActionSpec]:
        return [
            ActionSpec(
                name="move_to",
                description="Move the tool point in a straight line to x, y, z (world, m).",
                # Write the default your controller uses into the schema: the envelope
                # checks it, and an argument it cannot check is blocked.
                arguments=with_defaults(MoveToArgs, speed=self._default_speed()),
                safety={"x": "position.x", "y": "position.y", "z": "position.z", "speed": "speed"},
                timeout_s=30,
                post_condition="the tool point is at ({x}, {y}, {z})",
            ),
            ActionSpec(
                name="grip",
                description="Set the finger opening (0 closes) with an optional force.",
                arguments=with_defaults(GripArgs, force=self._default_force()),
                safety={"width": "width", "force": "force"},
                timeout_s=10,
                post_condition="the fingers are {width} m apart or closed on an object",
            ),
        ]

    def describe_motion(self, action: str, arguments: dict[str, Any]) -> Motion | None:
        """Where ``execute`` would move the tool point: here, one straight line for
        move_to and nothing for grip. Plan it the way your controller will (the same
        function ``execute`` uses), e.g. a Cartesian planner's waypoints."""
        if action == "move_to":
            return Motion(waypoints=[(arguments["x"], arguments["y"], arguments["z"])])
        return Motion()  # grip does not move the tool point

    def observe(self) -> Observation:
        images = {
            camera.name: self._backend_frame(camera.height, camera.width)
            for camera in self.profile.model_visible_cameras()
        }
        state = {
            "ee_position": [round(v, 4) for v in self._ee],
            "joint_positions": [0.0] * len(self.profile.limits.joint_limits or []),
            "gripper_width": self._width,
        }
        return Observation(timestamp=time.time(), images=images, state=state)

    def execute(self, action: str, arguments: dict[str, Any]) -> ActionResult:
        self._stop.clear()
        if action == "move_to":
            target = [arguments["x"], arguments["y"], arguments["z"]]
            finished = self._backend_move(target)
            if not finished:
                return ActionResult(
                    ok=False, interrupted=True, message="stopped", applied={"ee_position": self._ee}
                )
            return ActionResult(ok=True, message=f"at {self._ee}", applied=dict(arguments))
        if action == "grip":
            self._width = arguments["width"]
            return ActionResult(
                ok=True, message=f"fingers at {self._width} m", applied=dict(arguments)
            )
        return ActionResult(ok=False, message=f"unknown action {action!r}")

    # --------------------------------------------------------------- backend (dry run)
    def _backend_move(self, target: list[float]) -> bool:
        start = list(self._ee)
        for step in range(1, 51):  # your SDK's motion, polled so stop() can cut it short
            if self._stop.wait(0.005):
                return False
            self._ee = [s + (t - s) * step / 50 for s, t in zip(start, target, strict=True)]
        return True

    def _backend_frame(self, height: int, width: int) -> np.ndarray:
        return np.full((height, width, 3), 90, dtype=np.uint8)  # your camera's RGB frame


register_driver("my_arm", MyArmDriver)


if __name__ == "__main__":
    profile = load_profile("configs/embodiments/real_arm_template.yaml")
    report = check_driver(MyArmDriver(profile), profile)
    print(report.render())
    raise SystemExit(0 if report.ok else 1)
