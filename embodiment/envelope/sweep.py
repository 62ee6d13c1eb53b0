"""Whole-body base motion: a base move or turn carries the arm, so the gripper sweeps too.

After the base checks (step, turn, clearance) have admitted a move, the gripper's path in
the world frame is computed from its reading relative to the base: a straight line for a
translation, an arc about the base's origin for a turn (sampled, with the chord's sag as
slack). That path is checked against everything that does not move with the base: keep-out
zones in world-anchored frames (margin kept along the whole path), a world-anchored
workspace, and the step limit: the gripper travels at most ``base.max_step_m`` in one
base call (a turn that would swing it farther is shortened). Zones and a workspace in the
base frame move with the gripper, so the gripper's place in them does not change.

Navigation goals have no path the envelope can know; they keep the clearance check only
(``harness check`` says so).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping

from embodiment.envelope.common import EPSILON, Call, Vec3, Verdict, clear, xyz
from embodiment.envelope.frames import Frames
from embodiment.geometry import segment_box_distance
from embodiment.profile import Box, EmbodimentProfile

__all__ = ["BaseSweep", "moves_with_base"]

ARC_SAG_M = 0.001
"""Largest distance between a turn's arc and the chords the envelope checks."""
OFFSETS = {"forward": (1.0, 0.0), "backward": (-1.0, 0.0), "left": (0.0, 1.0), "right": (0.0, -1.0)}


def moves_with_base(frames: Mapping[str, object], frame: str) -> bool:
    """Whether ``frame`` is ``base`` or hangs below it in the frame tree."""
    seen: set[str] = set()
    while frame not in ("world", "base") and frame in frames and frame not in seen:
        seen.add(frame)
        frame = frames[frame].parent  # type: ignore[attr-defined]
    return frame == "base"


class BaseSweep:
    """The gripper's swept path during base moves and turns (a built-in rule; runs only on
    a call no earlier rule blocked)."""

    name = "base_sweep"
    ends_on_block = False
    needs_unblocked = True

    def __init__(self, profile: EmbodimentProfile, frames: Frames | None = None) -> None:
        self.profile = profile
        self.frames = frames or Frames(profile)

    def apply(self, call: Call, verdict: Verdict) -> None:
        self._check_base_sweep(verdict, call.name, call.kinds)

    def _check_base_sweep(self, verdict: Verdict, name: str, kinds: Mapping[str, str]) -> None:
        moves = [(arg, kind) for arg, kind in kinds.items() if kind in ("distance", "angle")]
        if not moves or not self.profile.mobile or verdict.base_pose is None:
            return
        if verdict.ee is None:
            verdict.block(
                f"missing_reading:ee_position: {name} carries the arm; the gripper's reading is "
                "needed to check where it sweeps"
            )
            return
        direction_arg = next((a for a, k in kinds.items() if k == "direction"), None)
        for arg, kind in moves:
            value = verdict.arguments.get(arg)
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                return  # the base checks have blocked it already
            if kind == "distance":
                if direction_arg is not None:
                    direction = str(verdict.arguments.get(direction_arg))
                else:
                    direction = "forward" if value >= 0 else "backward"
                self._sweep_translation(verdict, name, direction, abs(float(value)))
            else:
                self._sweep_turn(verdict, name, arg, float(value))
            if verdict.blocks:
                return

    # ------------------------------------------------------------------ translation

    def _sweep_translation(
        self, verdict: Verdict, name: str, direction: str, distance: float
    ) -> None:
        if direction not in OFFSETS or distance == 0:
            return
        x, y, yaw = verdict.base_pose  # type: ignore[misc]
        fx, fy = OFFSETS[direction]
        dx = (math.cos(yaw) * fx - math.sin(yaw) * fy) * distance
        dy = (math.sin(yaw) * fx + math.cos(yaw) * fy) * distance
        ee = verdict.ee
        assert ee is not None
        end = (ee[0] + dx, ee[1] + dy, ee[2])
        problem = self._swept_problem(verdict, [ee, end], (x + dx, y + dy, yaw), slack=0.0)
        if problem:
            verdict.block(
                f"{problem[0]}: {name} {direction} {distance:.3f} m carries the gripper from "
                f"{xyz(ee)} to {xyz(end)}, which {problem[1]}; "
                + self._shorter(verdict, ee, (dx, dy), distance)
            )

    def _shorter(
        self, verdict: Verdict, ee: Vec3, delta: tuple[float, float], distance: float
    ) -> str:
        """The longest fraction of the move that keeps the gripper's path clear (bisected),
        as advice."""
        low, high = 0.0, 1.0
        x, y, yaw = verdict.base_pose  # type: ignore[misc]
        for _ in range(30):
            middle = (low + high) / 2
            end = (ee[0] + delta[0] * middle, ee[1] + delta[1] * middle, ee[2])
            pose = (x + delta[0] * middle, y + delta[1] * middle, yaw)
            if self._swept_problem(verdict, [ee, end], pose, slack=0.0):
                high = middle
            else:
                low = middle
        if low * distance < self.profile.base.min_motion_m:
            return "move the arm away from it first, or move the base another way"
        return f"at most {low * distance * 0.99:.3f} m keeps it clear, or move the arm first"

    # ------------------------------------------------------------------ turns

    def _sweep_turn(self, verdict: Verdict, name: str, arg: str, angle: float) -> None:
        if angle == 0:
            return
        x, y, yaw = verdict.base_pose  # type: ignore[misc]
        ee = verdict.ee
        assert ee is not None
        radius = math.hypot(ee[0] - x, ee[1] - y)
        limit = self.profile.base.max_step_m or math.inf
        if radius * abs(angle) > limit + EPSILON:
            shortened = math.copysign(limit / radius, angle)
            verdict.clamp(
                f"base_sweep_step: turning {angle:.3f} rad swings the gripper "
                f"{radius * abs(angle):.3f} m (it is {radius:.3f} m from the turning axis; "
                f"max {limit:.3f} m per call); "
                f"turn shortened to {shortened:.3f} rad"
            )
            angle = shortened
            verdict.arguments[arg] = angle
        count = 1
        while radius * (1 - math.cos(abs(angle) / count / 2)) > ARC_SAG_M:
            count *= 2
        sag = radius * (1 - math.cos(abs(angle) / count / 2))
        points = [ee]
        for index in range(1, count + 1):
            turn = angle * index / count
            c, s = math.cos(turn), math.sin(turn)
            px, py = ee[0] - x, ee[1] - y
            points.append((x + c * px - s * py, y + s * px + c * py, ee[2]))
        problem = self._swept_problem(verdict, points, (x, y, yaw + angle), slack=sag)
        if problem:
            verdict.block(
                f"{problem[0]}: {name} {angle:.3f} rad swings the gripper {radius:.3f} m from the "
                f"turning axis along an arc from {xyz(ee)} to {xyz(points[-1])}, which "
                f"{problem[1]}; move the arm closer to the base or away from it first, or turn "
                "the other way"
            )

    # ------------------------------------------------------------------ the path

    def _swept_problem(
        self,
        verdict: Verdict,
        points: list[Vec3],
        end_pose: tuple[float, float, float],
        slack: float,
    ) -> tuple[str, str] | None:
        """(violation, what) for the first problem of the world-frame polyline ``points``
        against what stays put while the base moves; None when it is clear."""
        profile = self.profile
        margin = profile.safety.keep_out_margin_m + slack
        fixed_workspace = not moves_with_base(profile.frames, profile.workspace.frame)
        ws = profile.workspace
        for point in points[1:]:
            if fixed_workspace and not self.frames.in_workspace(verdict, point, slack):
                return "workspace_bounds", (
                    f"reaches {xyz(point)}, outside the reachable workspace ({ws.frame} frame: "
                    f"{ws.span()})"
                )
        for zone in profile.keep_out:
            if moves_with_base(profile.frames, zone.frame):
                continue
            for start, end in itertools.pairwise(points):
                gap = self._world_segment_gap(start, end, zone)
                if not clear(gap, margin):
                    where = "enters the zone" if gap == 0 else f"passes {gap:.3f} m from it"
                    return f"keep_out:{zone.name}", (
                        f"{where} (keep {profile.safety.keep_out_margin_m:.3f} m clear)"
                    )
        return None

    def _world_segment_gap(self, start: Vec3, end: Vec3, zone: Box) -> float:
        a = self.profile.from_world(start, zone.frame)
        b = self.profile.from_world(end, zone.frame)
        return segment_box_distance(a, b, zone.min, zone.max)
