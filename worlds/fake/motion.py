"""How the fake moves: planning an action's waypoints and following them in small steps.

:class:`FakeMotion` is a mixin of :class:`~worlds.fake.robot.FakeRobot`. ``_plan`` is
the single source of an action's end-effector path: ``describe_motion`` hands it to the
safety envelope before anything moves, and the action handlers follow the same waypoints.
``_travel`` moves a point in ``step_m`` steps and checks the stop event between them, which
is what makes a fake motion interruptible. Kept apart from :mod:`.robot` so the path an
action takes reads in one place, apart from the protocol and the action handlers.
"""

from __future__ import annotations

import math
import threading
from typing import TYPE_CHECKING, Any

from embodiment.profile import EmbodimentProfile
from embodiment.types import ActionResult, ObjectInfo
from worlds.fake.config import FakeRobotConfig

__all__ = ["FakeMotion"]


class FakeMotion:
    """Path planning and following over the robot's state (see the module docstring)."""

    profile: EmbodimentProfile
    config: FakeRobotConfig
    ee: list[float]
    home_ee: list[float]
    joints: list[float]
    base_pose: list[float]
    objects: dict[str, list[float]]
    held: str | None
    _stop: threading.Event
    _lock: threading.Lock

    if TYPE_CHECKING:

        def locate(self, ref: str) -> ObjectInfo | None: ...

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
