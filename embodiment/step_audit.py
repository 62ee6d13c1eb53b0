"""An audit of every physics step against the profile: where the gripper really was.

The safety envelope decides before a command moves anything; this audit watches what the
simulator then did, step by step, and counts the steps in which the gripper was outside
the profile's workspace or inside one of its keep-out zones. It shares no code with the
envelope (plain box tests on the profile's numbers), so an evaluation can report, per
episode, that its motions stayed inside the limits rather than assume it.
"""

from __future__ import annotations

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
        self._result = StepAuditResult()

    def __call__(self, point: Point) -> None:
        bad = not self._allowed(point)
        with self._lock:
            self._result.steps += 1
            if bad:
                self._result.outside += 1
                if self._result.first_outside is None:
                    self._result.first_outside = tuple(round(float(v), 4) for v in point)  # type: ignore[assignment]

    def _allowed(self, point: Point) -> bool:
        world = self._profile.to_world(point, self._frame)
        workspace = self._profile.workspace
        in_workspace = self._profile.from_world(world, workspace.frame)
        if not _inside(in_workspace, workspace.min, workspace.max):
            return False
        return not any(
            _inside(self._profile.from_world(world, zone.frame), zone.min, zone.max)
            for zone in self._profile.keep_out
        )

    def result(self) -> StepAuditResult:
        with self._lock:
            return self._result.model_copy()

    def restart(self) -> None:
        """A new episode: count from zero."""
        with self._lock:
            self._result = StepAuditResult()


def _inside(point: Point, low: Point, high: Point) -> bool:
    return all(lo <= value <= hi for value, lo, hi in zip(point, low, high, strict=True))
