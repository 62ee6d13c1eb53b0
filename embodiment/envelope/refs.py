"""Object and place refs: where the locator says each one is (workspace, keep-out zones
with margin) and whether an object to grasp is within the payload.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from embodiment.envelope.common import EPSILON, REF_KINDS, Call, Verdict, clear, xyz
from embodiment.envelope.frames import Frames
from embodiment.profile import EmbodimentProfile
from embodiment.types import ObjectInfo

__all__ = ["RefLimits"]


class RefLimits:
    """``object_ref`` / ``target_ref`` arguments (a built-in rule). Without a locator,
    every call with a ref is blocked."""

    name = "refs"
    ends_on_block = False
    needs_unblocked = False

    def __init__(
        self, profile: EmbodimentProfile, locator: Any = None, frames: Frames | None = None
    ) -> None:
        self.profile = profile
        self.locator = locator
        self.frames = frames or Frames(profile)

    def apply(self, call: Call, verdict: Verdict) -> None:
        self._check_refs(verdict, call.kinds)

    def _check_refs(self, verdict: Verdict, kinds: Mapping[str, str]) -> None:
        """Where each ref is: inside the workspace in x and y; in z its centre may sit
        below the workspace floor by at most half its height (an object resting on the
        support just below it), never deeper, and it must not be inside a keep-out zone
        or its margin. Objects to grasp must be within the payload."""
        profile = self.profile
        ws = profile.workspace
        margin = profile.safety.keep_out_margin_m
        for arg, kind in kinds.items():
            if kind not in REF_KINDS:
                continue
            ref = verdict.arguments.get(arg)
            if ref is None:
                continue
            if not isinstance(ref, str):
                verdict.block(f"invalid_argument:{arg}: {ref!r} is not a ref")
                continue
            if self.locator is None:
                verdict.block(f"unlocatable:{arg}: no locator to check where {ref!r} is")
                continue
            info: ObjectInfo | None = self.locator.locate(ref)
            if info is None:
                verdict.block(f"unlocatable:{arg}: cannot tell where {ref!r} is")
                continue
            position = tuple(float(v) for v in info.position)
            half = info.size[2] / 2 if info.size else 0.0
            local = profile.from_world(position, ws.frame, base_pose=verdict.base_pose)
            x_y_inside = all(
                lo <= v <= hi for v, lo, hi in zip(local[:2], ws.min[:2], ws.max[:2], strict=True)
            )
            floor, ceiling = ws.min[2], ws.max[2]
            tolerance = profile.safety.clamp_tolerance_m
            if kind == "object_ref":
                # Its centre is where the gripper goes; it may be just below the floor if
                # its top reaches into the workspace, and its bottom must be on a support.
                low, high = floor - half, ceiling
                problem = (
                    f"is below the workspace floor (z {floor:.3f}) by more than half its height"
                    if local[2] < low
                    else ""
                )
                if not problem and local[2] - half < floor - tolerance - EPSILON:
                    problem = (
                        f"has its bottom at z {local[2] - half:.3f}, more than {tolerance:.3f} m "
                        f"below the workspace floor ({floor:.3f}): it cannot be resting on a "
                        "surface there; look again"
                    )
                point = position
            else:
                # A destination: things are put on its top.
                top = local[2] + half
                low, high = floor - tolerance, ceiling
                problem = (
                    f"has its top at z {top:.3f}, outside the workspace's height "
                    f"({floor:.3f}..{ceiling:.3f})"
                    if not low - EPSILON <= top <= high
                    else ""
                )
                point = (position[0], position[1], position[2] + half)
            if not x_y_inside:
                problem = f"is outside the reachable workspace ({ws.frame} frame: {ws.span()})"
            elif kind == "object_ref" and local[2] > high:
                problem = f"is above the reachable workspace ({ws.frame} frame: {ws.span()})"
            if problem:
                verdict.block(f"workspace_bounds: {ref} at {xyz(position)} {problem}")
                continue
            for zone in profile.keep_out:
                gap = self.frames.zone_distance(verdict, position, zone)  # type: ignore[arg-type]
                if not clear(gap, margin):
                    where = "inside the zone" if gap == 0 else f"{gap:.3f} m from the zone"
                    verdict.block(
                        f"keep_out:{zone.name}: {ref} is {where} (keep {margin:.3f} m clear)"
                    )
            heavy = info.mass_kg is not None and info.mass_kg > profile.limits.payload_kg
            if kind == "object_ref" and heavy:
                verdict.block(
                    f"payload_limit: {ref} weighs {info.mass_kg:g} kg "
                    f"(payload {profile.limits.payload_kg:g} kg)"
                )
            verdict.refs[arg] = (kind, point)  # type: ignore[assignment]
