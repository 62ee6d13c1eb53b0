"""Paths against the envelope: every point of a path inside the workspace and within one
step of where it starts, every segment the margin clear of each keep-out zone (or, from a
reading already inside a margin, straight out of it), and the swept box of an approach to
a ref. The motion rule and the joint-space rule both check their paths here.
"""

from __future__ import annotations

import math

from embodiment.envelope.common import EPSILON, Vec3, Verdict, clear, xyz
from embodiment.envelope.frames import Frames
from embodiment.geometry import (
    box_box_distance,
    moves_away_from_box,
    point_box_distance,
    segment_box_distance,
)
from embodiment.geometry import segment_hits_box as hits_box
from embodiment.profile import Box, EmbodimentProfile

__all__ = ["Paths"]


class Paths:
    """Checks paths of one profile; a problem blocks the verdict with its reason."""

    def __init__(self, profile: EmbodimentProfile, frames: Frames | None = None) -> None:
        self.profile = profile
        self.frames = frames or Frames(profile)

    def started(self, verdict: Verdict, name: str) -> bool:
        if verdict.ee is None:
            verdict.block(f"missing_reading:ee_position: needed to check {name}'s motion")
            return False
        return True

    def check_swept_box(self, verdict: Verdict, name: str, ref: str, points: list[Vec3]) -> None:
        """The box spanned by the gripper and ``points`` (world axes): inside the
        workspace, within one step of the gripper, and the margin clear of every zone."""
        start = verdict.ee
        assert start is not None
        corners_of = [start, *points]
        low = [min(p[i] for p in corners_of) for i in range(3)]
        high = [max(p[i] for p in corners_of) for i in range(3)]
        corners = [
            (x, y, z)
            for x in (low[0], high[0])
            for y in (low[1], high[1])
            for z in (low[2], high[2])
        ]
        profile = self.profile
        assumption = (
            f"{name} of {ref} without a motion description is assumed to stay between the "
            f"gripper, {ref} and {profile.safety.approach_height_m:.3f} m above it"
        )
        for corner in corners:
            if not self.frames.in_workspace(verdict, corner):
                verdict.block(
                    f"workspace_bounds: {assumption}, which reaches {xyz(corner)}, outside the "
                    f"reachable workspace ({profile.workspace.span()})"
                )
                return
        reach = max(math.dist(start, corner) for corner in corners)
        if reach > profile.limits.max_step_m + EPSILON:
            verdict.block(
                f"step_limit: {assumption}, which reaches {reach:.3f} m from the gripper (max "
                f"{profile.limits.max_step_m:.3f} m per motion); move closer first"
            )
            return
        margin = profile.safety.keep_out_margin_m
        for zone in profile.keep_out:
            local = [self.frames.zone_local(verdict, corner, zone) for corner in corners]
            box_low = [min(p[i] for p in local) for i in range(3)]
            box_high = [max(p[i] for p in local) for i in range(3)]
            gap = box_box_distance(box_low, box_high, zone.min, zone.max)
            if not clear(gap, margin):
                verdict.block(
                    f"keep_out:{zone.name}: {assumption}, which comes {gap:.3f} m from the zone "
                    f"(keep {margin:.3f} m clear); move clear of it first, or describe the motion"
                )
                return

    def check_path(
        self,
        verdict: Verdict,
        name: str,
        start: Vec3,
        path: list[Vec3],
        *,
        slack: float = 0.0,
        what: str = "motion",
    ) -> None:
        """Every point inside the workspace, within one step of ``start``, and every
        segment the margin clear of each zone. ``slack`` is how far the real path may be
        from these segments (a sampled curve): every bound is tightened by it."""
        profile = self.profile
        ws = profile.workspace
        limit = profile.limits.max_step_m
        margin = profile.safety.keep_out_margin_m + slack
        previous = start
        for point in path:
            if not self.frames.in_workspace(verdict, point, slack):
                beyond = f" (within {slack:.3f} m of its edge)" if slack else ""
                verdict.block(
                    f"workspace_bounds: {name}'s {what} goes to {xyz(point)}, outside the "
                    f"reachable workspace{beyond} ({ws.frame} frame: {ws.span()})"
                )
                return
            if math.dist(start, point) + slack > limit + EPSILON:
                verdict.block(
                    f"step_limit: {name}'s {what} reaches {xyz(point)}, "
                    f"{math.dist(start, point):.3f} m from the gripper (max {limit:.3f} m per "
                    "motion); move closer first"
                )
                return
            for zone in profile.keep_out:
                problem = self.segment_problem(verdict, previous, point, zone, margin)
                if problem:
                    verdict.block(f"keep_out:{zone.name}: {name}'s {what} {problem}")
                    return
            previous = point

    def segment_problem(
        self, verdict: Verdict, start: Vec3, end: Vec3, zone: Box, margin: float
    ) -> str:
        a = self.frames.zone_local(verdict, start, zone)
        b = self.frames.zone_local(verdict, end, zone)
        if clear(point_box_distance(a, zone.min, zone.max), margin):
            gap = segment_box_distance(a, b, zone.min, zone.max)
            if clear(gap, margin):
                return ""
            if hits_box(a, b, zone.min, zone.max):
                return (
                    f"from {xyz(start)} to {xyz(end)}: the straight path crosses the zone; "
                    "go around it in two motions"
                )
            return (
                f"from {xyz(start)} to {xyz(end)} passes {gap:.3f} m from the zone "
                f"(keep {margin:.3f} m clear); go around it"
            )
        # The reading is already inside the zone or its margin: only straight out.
        if moves_away_from_box(a, b, zone.min, zone.max) and clear(
            point_box_distance(b, zone.min, zone.max), margin
        ):
            return ""
        return (
            f"starts at {xyz(start)}, inside the zone or within {margin:.3f} m of it; only a "
            f"motion straight away from it that ends {margin:.3f} m clear is allowed"
        )
