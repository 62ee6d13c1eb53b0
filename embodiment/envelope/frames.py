"""Where a point is for the envelope: in the workspace, relative to a keep-out zone.

The workspace and the zones are written in the profile's frames; a frame attached to a
mobile base moves with the live base pose the call's :class:`~embodiment.envelope.common.Verdict`
carries. Every rule that asks these questions (targets, refs, paths, sweeps) asks this one
object, so they all use the same conversions.
"""

from __future__ import annotations

import math

from embodiment.envelope.common import EPSILON, Vec3, Verdict
from embodiment.geometry import point_box_distance
from embodiment.profile import Box, EmbodimentProfile

__all__ = ["Frames"]


class Frames:
    """The workspace and keep-out zones of one profile, seen from the world frame."""

    def __init__(self, profile: EmbodimentProfile) -> None:
        self.profile = profile

    def in_workspace(self, verdict: Verdict, point: Vec3, inset: float = 0.0) -> bool:
        """Inside the workspace, and at least ``inset`` from its faces."""
        ws = self.profile.workspace
        local = self.profile.from_world(point, ws.frame, base_pose=verdict.base_pose)
        return all(
            lo + inset <= v <= hi - inset for v, lo, hi in zip(local, ws.min, ws.max, strict=True)
        )

    def zone_local(self, verdict: Verdict, point: Vec3, zone: Box) -> Vec3:
        return self.profile.from_world(point, zone.frame, base_pose=verdict.base_pose)

    def zone_distance(self, verdict: Verdict, point: Vec3, zone: Box) -> float:
        return point_box_distance(self.zone_local(verdict, point, zone), zone.min, zone.max)

    def onto_workspace(self, verdict: Verdict, point: Vec3) -> Vec3:
        """``point`` moved onto the workspace if a floating-point round trip through the
        workspace frame left it a hair outside (it never moves more than that)."""
        if self.in_workspace(verdict, point):
            return point
        profile, ws = self.profile, self.profile.workspace
        local = profile.from_world(point, ws.frame, base_pose=verdict.base_pose)
        inset = tuple(
            min(hi - EPSILON, max(lo + EPSILON, v))
            for v, lo, hi in zip(local, ws.min, ws.max, strict=True)
        )
        moved = profile.to_world(inset, ws.frame, base_pose=verdict.base_pose)  # type: ignore[arg-type]
        return moved if math.dist(moved, point) < 1e-6 else point
