"""The ``fake`` driver's robot: its state, the Driver protocol and the action handlers.

:class:`FakeRobot` keeps the gripper, joints, base pose and held object, answers
``observe``/``execute``/``stop``, and runs each action through a ``_do_<action>`` handler
that follows the waypoints :class:`~worlds.fake.motion.FakeMotion` plans. What it
offers is declared in :mod:`.actions`, its clearance readings come from :mod:`.clearance`,
and its post-conditions from :mod:`.postconditions` (see :mod:`worlds.fake`).
"""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np

from embodiment.profile import EmbodimentProfile
from embodiment.types import (
    ActionResult,
    ActionSpec,
    Motion,
    ObjectInfo,
    Observation,
    validated_call,
)
from worlds.fake.actions import declare_actions
from worlds.fake.clearance import footprint_clearance
from worlds.fake.config import (
    CloseArgs,
    FakeRobotConfig,
    GripperArgs,
    MoveBaseArgs,
    MoveJointsArgs,
    MoveToArgs,
    NavigateArgs,
    NoArgs,
    PickArgs,
    PlaceArgs,
    RotateBaseArgs,
)
from worlds.fake.motion import FakeMotion
from worlds.fake.postconditions import FakePostConditions

__all__ = ["FakeRobot"]


class FakeRobot(FakeMotion):
    """A profile-shaped robot without physics (see :mod:`worlds.fake`)."""

    def hardware_identity(self) -> str | None:
        """The ``hardware_id`` option (None: a fake drives nothing that needs a lease)."""
        return self.config.hardware_id

    def __init__(
        self, profile: EmbodimentProfile, *, log: list[str] | None = None, **options: Any
    ) -> None:
        self.profile = profile
        self.config = FakeRobotConfig.model_validate(options)
        self.log: list[str] = log if log is not None else []
        """The protocol calls in order (``connect``, ``observe``, ``stop``, ``disconnect``);
        pass a list to share it with other parts' logs and read one interleaved order."""
        self.commands: list[tuple[str, dict[str, Any]]] = []
        """Every command executed, with its validated arguments (defaults filled in)."""
        self.executed: list[tuple[str, dict[str, Any]]] = []
        """Every ``execute`` call as it was asked, refused ones included."""
        self.moving = threading.Event()
        """Set when a command starts: a test acts on it (a cancel during a motion), never on
        a timer that a busy machine can fire before the motion has begun."""
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
        self.log.append("connect")
        self.connected = True

    def disconnect(self) -> None:
        self.log.append("disconnect")
        self._stop.set()
        self.connected = False

    def close(self) -> None:
        self.disconnect()

    def stop(self) -> None:
        self.log.append("stop")
        self.stops += 1
        self._stop.set()

    @property
    def position(self) -> list[float]:
        """The gripper's position (world frame): what ``observe`` reports as ``ee_position``."""
        return self.ee

    def capabilities(self) -> list[ActionSpec]:
        return list(self._specs.values())

    def observe(self) -> Observation:
        self.log.append("observe")
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
        safety: dict[str, float | None] = dict(self.config.readings)
        if self.profile.mobile:
            state["base_pose"] = [round(v, 6) for v in self.base_pose]
            if not self.config.drop_clearance:
                for direction, key in self.profile.base.clearance_readings.items():
                    safety[key] = round(self.clearance(direction), 6)
        return Observation(images=images, state=state, safety=safety)

    def execute(self, action: str, arguments: dict[str, Any]) -> ActionResult:
        self.executed.append((action, dict(arguments)))
        args = validated_call(self._specs, action, arguments)
        if isinstance(args, ActionResult):
            return args
        self._stop.clear()
        self.moving.set()
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

    def post_conditions(self) -> FakePostConditions:
        return FakePostConditions(self)

    def clearance(self, direction: str) -> float:
        """Free distance from the footprint's edge to the nearest wall or obstacle."""
        return footprint_clearance(
            self.base_pose,
            direction,
            self.profile.base.footprint,
            self.config.room,
            self.config.obstacles,
        )

    # ------------------------------------------------------------------ actions

    def _declare(self) -> list[ActionSpec]:
        return declare_actions(self.profile)

    def _do_move_to(self, args: MoveToArgs) -> ActionResult:
        done = self._follow(self._plan("move_to", args))
        return self._result(done, args.model_dump(), f"at {self.ee}")

    def _do_move_joints(self, args: MoveJointsArgs) -> ActionResult:
        done = self._travel(self.joints, list(args.joints))
        self._ee_from_joints()
        return self._result(done, args.model_dump(), "joints reached")

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
