"""Cartesian targets: workspace bounds (a small overshoot clamped onto the edge), keep-out
zones with their margin, and the per-call step limit, for ``position`` and
``position.x/y/z`` arguments.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from embodiment.envelope.common import (
    EPSILON,
    Call,
    Vec3,
    Verdict,
    clear,
    finite_value,
    schema_defaults,
    xyz,
)
from embodiment.envelope.frames import Frames
from embodiment.profile import EmbodimentProfile

__all__ = ["PositionLimits"]


class PositionLimits:
    """Positions, the workspace and keep-out zones (a built-in rule)."""

    name = "positions"
    ends_on_block = False
    needs_unblocked = False

    def __init__(self, profile: EmbodimentProfile, frames: Frames | None = None) -> None:
        self.profile = profile
        self.frames = frames or Frames(profile)

    def apply(self, call: Call, verdict: Verdict) -> None:
        self._check_positions(verdict, call.kinds)

    # ------------------------------------------------------------------ positions

    def _check_positions(self, verdict: Verdict, kinds: Mapping[str, str]) -> None:
        args = verdict.arguments
        ee = verdict.ee
        whole = [arg for arg, kind in kinds.items() if kind == "position"]
        parts = {kind[-1]: arg for arg, kind in kinds.items() if kind.startswith("position.")}
        for arg in whole:
            value = args.get(arg)
            if value is None:
                continue
            if not finite_value(value) or not isinstance(value, (list, tuple)) or len(value) != 3:
                verdict.block(f"invalid_argument:{arg}: {value!r} is not a finite [x, y, z]")
                continue
            target = self._check_target(verdict, tuple(float(v) for v in value), arg)  # type: ignore[arg-type]
            if target is not None:
                if target != tuple(value):
                    args[arg] = list(target)
                verdict.targets.append(target)
        if parts:
            # A coordinate left out takes the schema's default (the value the tool will
            # use); with none, or a null one, it stays where the gripper is.
            defaults = schema_defaults(verdict.schema)
            present = {
                axis: args[arg] if arg in args else defaults.get(arg) for axis, arg in parts.items()
            }
            if all(v is None for v in present.values()):
                return
            if any(
                v is not None and (not finite_value(v) or isinstance(v, (list, tuple)))
                for v in present.values()
            ):
                verdict.block("invalid_argument: a target coordinate is not a finite number")
                return
            if ee is None:
                verdict.block("missing_reading:ee_position: needed to check the path to the target")
                return
            point = tuple(
                float(present[a]) if present.get(a) is not None else ee[i]
                for i, a in enumerate("xyz")
            )
            target = self._check_target(verdict, point, "target")  # type: ignore[arg-type]
            if target is not None:
                for i, axis in enumerate("xyz"):
                    if target[i] == point[i]:
                        continue
                    if axis in parts:
                        args[parts[axis]] = target[i]  # clamped: now said explicitly
                    else:
                        # The tool has no argument for this axis (it stays where it is),
                        # but a clamp moved it: the driver cannot be told.
                        verdict.block(
                            f"step_limit: the tool cannot be given {axis}, so the target "
                            "cannot be brought into the envelope along the straight line"
                        )
                        return
                verdict.targets.append(target)

    def _check_target(self, verdict: Verdict, target: Vec3, label: str) -> Vec3 | None:
        """Workspace (clamp a small overshoot, block beyond), keep-out zones with their
        margin (block), per-call step (shorten, never out of the workspace). Returns the
        admissible target, or None when blocked."""
        profile = self.profile
        base_pose = verdict.base_pose
        ee = verdict.ee
        if ee is None:
            verdict.block(f"missing_reading:ee_position: needed to check the path to {label}")
            return None
        ws = profile.workspace
        local = profile.from_world(target, ws.frame, base_pose=base_pose)
        if not ws.contains(local):
            tolerance = profile.safety.clamp_tolerance_m
            clamped_local = ws.clamp(local)
            overshoot = math.dist(local, clamped_local)
            if overshoot > tolerance:
                verdict.block(
                    f"workspace_bounds: {label} {xyz(target)} is {overshoot:.3f} m outside the "
                    f"reachable workspace ({ws.frame} frame: {ws.span()})"
                )
                return None
            clamped = self.frames.onto_workspace(
                verdict, profile.to_world(clamped_local, ws.frame, base_pose=base_pose)
            )
            verdict.clamp(
                f"workspace_bounds: {label} {xyz(target)} clamped to {xyz(clamped)} "
                f"({overshoot:.3f} m onto the workspace edge)"
            )
            target = clamped
        margin = profile.safety.keep_out_margin_m
        for zone in profile.keep_out:
            gap = self.frames.zone_distance(verdict, target, zone)
            if gap == 0:
                verdict.block(f"keep_out:{zone.name}: {label} {xyz(target)} is inside the zone")
                return None
            if not clear(gap, margin):
                verdict.block(
                    f"keep_out:{zone.name}: {label} {xyz(target)} is {gap:.3f} m from the "
                    f"zone; keep {margin:.3f} m clear"
                )
                return None
        distance = math.dist(ee, target)
        limit = profile.limits.max_step_m
        if distance > limit:
            scale = limit / distance
            shortened = tuple(e + (t - e) * scale for e, t in zip(ee, target, strict=True))
            if not self.frames.in_workspace(verdict, shortened):  # type: ignore[arg-type]
                shortened = self.frames.onto_workspace(verdict, shortened)  # type: ignore[arg-type]
                if math.dist(ee, shortened) > limit + EPSILON or not self.frames.in_workspace(
                    verdict, shortened
                ):
                    verdict.block(
                        f"step_limit: the gripper at {xyz(ee)} is outside the workspace, and "
                        f"a {limit:.3f} m step toward {xyz(target)} would end outside it too; "
                        f"send a target inside the workspace within {limit:.3f} m of the gripper"
                    )
                    return None
            verdict.clamp(
                f"step_limit: {label} is {distance:.3f} m away (max {limit:.3f} m per "
                f"motion); shortened to {xyz(shortened)}"
            )
            target = shortened  # type: ignore[assignment]
        return target
