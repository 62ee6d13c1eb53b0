"""An audit of every physics step against the profile: where the gripper really was.

The safety envelope decides before a command moves anything; this audit watches what the
simulator then did, step by step, and counts the steps in which the gripper was outside
the profile's workspace or inside one of its keep-out zones. It shares no code with the
envelope (plain box tests on the profile's numbers), so an evaluation can report, per
episode, that its motions stayed inside the limits rather than assume it.
"""

from __future__ import annotations

import math
import threading

from pydantic import BaseModel

from embodiment.profile import EmbodimentProfile

__all__ = ["StepAudit", "StepAuditResult"]

Point = tuple[float, float, float]


class StepAuditResult(BaseModel):
    """The steps of one episode (since the last :meth:`StepAudit.restart`)."""

    steps: int = 0
    """Physics steps seen."""
    outside: int = 0
    """Steps with the gripper outside the workspace or inside a keep-out zone."""
    first_outside: Point | None = None
    """Where the first such step put the gripper (the observer's frame)."""


class StepAudit:
    """A step observer (``audit(point)``) for a simulator that reports the gripper's
    position in the profile frame ``frame`` after every physics step."""

    def __init__(self, profile: EmbodimentProfile, frame: str = "base") -> None:
        self._profile = profile
        self._frame = frame
        self._lock = threading.Lock()
        # plain counts, made into a StepAuditResult when asked: a pydantic model's
        # attribute assignment after every physics step cost more than the check itself
        self.restart()
        # The audit runs after every physics step (25 per controller step), so the frames'
        # poses are resolved here once, not through the profile's frame chain each time; the
        # arithmetic per step is the profile's own (``to_world``, ``from_world``) on the same
        # numbers, so every decision is bit for bit what they would give
        # (tests/runtime/test_step_audit.py checks it against them on turned frames).
        workspace = profile.workspace
        self._into_world = _Pose(*profile.frame_pose_in_world(frame))
        self._boxes = [
            (_Pose(*profile.frame_pose_in_world(box.frame)), tuple(box.min), tuple(box.max))
            for box in (workspace, *profile.keep_out)
        ]

    def __call__(self, point: Point) -> None:
        if self._allowed(point):
            with self._lock:
                self._steps += 1
            return
        first = tuple(round(float(v), 4) for v in point)
        with self._lock:
            self._steps += 1
            self._outside += 1
            if self._first_outside is None:
                self._first_outside = first  # type: ignore[assignment]

    def _allowed(self, point: Point) -> bool:
        world = self._into_world.to_world(point)
        (pose, low, high), *zones = self._boxes
        if not _inside(pose.from_world(world), low, high):
            return False
        for pose, low, high in zones:  # noqa: SIM110 (a loop: no generator per physics step)
            if _inside(pose.from_world(world), low, high):
                return False
        return True

    def result(self) -> StepAuditResult:
        with self._lock:
            return StepAuditResult(
                steps=self._steps, outside=self._outside, first_outside=self._first_outside
            )

    def restart(self) -> None:
        """A new episode: count from zero."""
        with self._lock:
            self._steps, self._outside = 0, 0
            self._first_outside: Point | None = None


class _Pose:
    """A frame's resolved pose in the world, with the same arithmetic as
    :meth:`EmbodimentProfile.to_world` and :meth:`EmbodimentProfile.from_world`."""

    __slots__ = ("c_in", "c_out", "origin", "s_in", "s_out")

    def __init__(self, origin: Point, yaw: float) -> None:
        self.origin = origin
        self.c_in, self.s_in = math.cos(yaw), math.sin(yaw)
        self.c_out, self.s_out = math.cos(-yaw), math.sin(-yaw)

    def to_world(self, point: Point) -> Point:
        c, s, (ox, oy, oz) = self.c_in, self.s_in, self.origin
        x, y, z = point
        return (ox + c * x - s * y, oy + s * x + c * y, oz + z)

    def from_world(self, point: Point) -> Point:
        ox, oy, oz = self.origin
        dx, dy, dz = point[0] - ox, point[1] - oy, point[2] - oz
        c, s = self.c_out, self.s_out
        return (c * dx - s * dy, s * dx + c * dy, dz)


def _inside(point: Point, low: Point, high: Point) -> bool:
    return (
        low[0] <= point[0] <= high[0]
        and low[1] <= point[1] <= high[1]
        and low[2] <= point[2] <= high[2]
    )
