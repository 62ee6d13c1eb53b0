"""An independent judge of what reached a robot: was it inside the embodiment profile?

It shares nothing with ``embodiment/envelope/`` or ``embodiment/geometry.py``: frames are
composed here from the profile's data, the distance from a segment to a box is found by
golden-section search on the (convex) distance along it rather than by the envelope's
piecewise quadratics, and "never deeper into a zone" is checked by sampling. What it
judges is what the hardware executed: the straight segments the gripper really travelled
(from the recording driver, not from the envelope's description of them) and the
arguments the driver received, against the profile's numbers:

- every segment ends inside the workspace and within one step (``max_step_m``) of where
  the command started;
- a segment that starts at least the keep-out margin away from a zone stays at least the
  margin away; one that starts closer (a reading already inside the margin) never gets
  closer or deeper, and ends the margin clear;
- speeds and forces within [minimum, maximum], gripper widths within [0, max opening],
  joints within their limits and within one joint step of the joints the command started
  from;
- a tool the deployment left undeclared never ran at all.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Command",
    "frame_to_world",
    "in_workspace",
    "judge",
    "moves_with_base",
    "zone_distance",
]

EPS = 1e-6
"""Slack for values that crossed JSON and float arithmetic (a micrometre, a microradian)."""
GOLDEN = (math.sqrt(5) - 1) / 2


@dataclass
class Command:
    """One command as the hardware received and executed it."""

    tool: str
    arguments: dict[str, Any]
    ee_before: Sequence[float]
    joints_before: Sequence[float]
    segments: list[tuple[Sequence[float], Sequence[float]]] = field(default_factory=list)
    kinds: Mapping[str, str] | None = None
    """What the deployment declared each received argument to be (None: undeclared)."""


# ---------------------------------------------------------------------- frames


def _frame_pose(profile: Any, frame: str) -> tuple[tuple[float, float, float], float]:
    if frame == "world":
        return (0.0, 0.0, 0.0), 0.0
    pose = profile.frames[frame]
    (px, py, pz), parent_yaw = _frame_pose(profile, pose.parent)
    c, s = math.cos(parent_yaw), math.sin(parent_yaw)
    x, y, z = pose.position
    return (px + c * x - s * y, py + s * x + c * y, pz + z), parent_yaw + pose.yaw


def _local(profile: Any, point: Sequence[float], frame: str) -> tuple[float, float, float]:
    (ox, oy, oz), yaw = _frame_pose(profile, frame)
    dx, dy, dz = point[0] - ox, point[1] - oy, point[2] - oz
    c, s = math.cos(yaw), math.sin(yaw)
    return (c * dx + s * dy, -s * dx + c * dy, dz)


def _live_pose(
    profile: Any, frame: str, base_pose: Sequence[float] | None
) -> tuple[tuple[float, float, float], float]:
    """Like :func:`_frame_pose`, with a mobile base's live (x, y, yaw) for ``base``."""
    if frame == "world":
        return (0.0, 0.0, 0.0), 0.0
    pose = profile.frames[frame]
    x, y, z = pose.position
    yaw = pose.yaw
    if frame == "base" and base_pose is not None:
        x, y, yaw = base_pose[0], base_pose[1], base_pose[2]
    (px, py, pz), parent_yaw = _live_pose(profile, pose.parent, base_pose)
    c, s = math.cos(parent_yaw), math.sin(parent_yaw)
    return (px + c * x - s * y, py + s * x + c * y, pz + z), parent_yaw + yaw


def frame_to_world(
    profile: Any, point: Sequence[float], frame: str, base_pose: Sequence[float] | None = None
) -> tuple[float, float, float]:
    (ox, oy, oz), yaw = _live_pose(profile, frame, base_pose)
    c, s = math.cos(yaw), math.sin(yaw)
    return (ox + c * point[0] - s * point[1], oy + s * point[0] + c * point[1], oz + point[2])


def _live_local(
    profile: Any, point: Sequence[float], frame: str, base_pose: Sequence[float] | None
) -> tuple[float, float, float]:
    (ox, oy, oz), yaw = _live_pose(profile, frame, base_pose)
    dx, dy, dz = point[0] - ox, point[1] - oy, point[2] - oz
    c, s = math.cos(yaw), math.sin(yaw)
    return (c * dx + s * dy, -s * dx + c * dy, dz)


def in_workspace(
    profile: Any, point: Sequence[float], base_pose: Sequence[float] | None, tolerance: float
) -> bool:
    ws = profile.workspace
    local = _live_local(profile, point, ws.frame, base_pose)
    return all(
        lo - tolerance <= v <= hi + tolerance
        for v, lo, hi in zip(local, ws.min, ws.max, strict=True)
    )


def zone_distance(
    profile: Any, zone: Any, point: Sequence[float], base_pose: Sequence[float] | None
) -> float:
    return _distance(_live_local(profile, point, zone.frame, base_pose), zone.min, zone.max)


def moves_with_base(profile: Any, frame: str) -> bool:
    while frame not in ("world", "base"):
        frame = profile.frames[frame].parent
    return frame == "base"


# ---------------------------------------------------------------------- geometry


def _inside(point: Sequence[float], low: Sequence[float], high: Sequence[float]) -> bool:
    return all(lo - EPS <= v <= hi + EPS for v, lo, hi in zip(point, low, high, strict=True))


def _distance(point: Sequence[float], low: Sequence[float], high: Sequence[float]) -> float:
    total = 0.0
    for v, lo, hi in zip(point, low, high, strict=True):
        if v < lo:
            total += (lo - v) ** 2
        elif v > hi:
            total += (v - hi) ** 2
    return math.sqrt(total)


def _depth(point: Sequence[float], low: Sequence[float], high: Sequence[float]) -> float:
    if _distance(point, low, high) > 0:
        return 0.0
    return min(min(v - lo, hi - v) for v, lo, hi in zip(point, low, high, strict=True))


def _along(a: Sequence[float], b: Sequence[float], t: float) -> list[float]:
    return [x + (y - x) * t for x, y in zip(a, b, strict=True)]


def _segment_distance(
    a: Sequence[float], b: Sequence[float], low: Sequence[float], high: Sequence[float]
) -> float:
    """Golden-section search of the convex distance along the segment."""

    def f(t: float) -> float:
        return _distance(_along(a, b, t), low, high)

    lo, hi = 0.0, 1.0
    c, d = hi - GOLDEN * (hi - lo), lo + GOLDEN * (hi - lo)
    fc, fd = f(c), f(d)
    for _ in range(80):
        if fc <= fd:
            hi, d, fd = d, c, fc
            c = hi - GOLDEN * (hi - lo)
            fc = f(c)
        else:
            lo, c, fc = c, d, fd
            d = lo + GOLDEN * (hi - lo)
            fd = f(d)
    return min(f(0.0), f(1.0), fc, fd)


# ---------------------------------------------------------------------- the judge


def judge(profile: Any, command: Command) -> list[str]:
    """Everything about ``command`` that is outside ``profile`` (empty: it was inside)."""
    if command.kinds is None:
        return [f"{command.tool}: an undeclared physical tool reached the hardware"]
    problems: list[str] = []
    problems += _motion_problems(profile, command)
    problems += _scalar_problems(profile, command)
    problems += _joint_problems(profile, command)
    return problems


def _motion_problems(profile: Any, command: Command) -> list[str]:
    problems = []
    ws = profile.workspace
    margin = profile.safety.keep_out_margin_m
    start = command.ee_before
    for a, b in command.segments:
        if not all(math.isfinite(v) for v in b):
            problems.append(f"{command.tool}: moved to a non-finite point {b}")
            continue
        if not _inside(_local(profile, b, ws.frame), ws.min, ws.max):
            problems.append(f"{command.tool}: moved to {b}, outside the workspace")
        if math.dist(start, b) > profile.limits.max_step_m + EPS:
            problems.append(
                f"{command.tool}: moved {math.dist(start, b):.4f} m from where it started "
                f"(max step {profile.limits.max_step_m})"
            )
        for zone in profile.keep_out:
            la, lb = _local(profile, a, zone.frame), _local(profile, b, zone.frame)
            begin = _distance(la, zone.min, zone.max)
            closest = _segment_distance(la, lb, zone.min, zone.max)
            end = _distance(lb, zone.min, zone.max)
            if begin >= margin - 1e-7:
                if closest < margin - EPS or (margin == 0 and closest == 0):
                    problems.append(
                        f"{command.tool}: {a} -> {b} came {closest:.4f} m from {zone.name} "
                        f"(margin {margin})"
                    )
                continue
            # Started inside the margin: never closer, never deeper, and out at the end.
            if end < margin - EPS or (margin == 0 and end == 0):
                problems.append(
                    f"{command.tool}: from inside {zone.name}'s margin, ended {end:.4f} m from it"
                )
            if begin > 0 and closest < begin - EPS:
                problems.append(
                    f"{command.tool}: moved closer to {zone.name} ({begin} -> {closest})"
                )
            if begin == 0:
                depths = [_depth(_along(la, lb, i / 200), zone.min, zone.max) for i in range(201)]
                if any(later > earlier + EPS for earlier, later in itertools.pairwise(depths)):
                    problems.append(f"{command.tool}: went deeper into {zone.name}")
    return problems


def _scalar_problems(profile: Any, command: Command) -> list[str]:
    limits = profile.limits
    opening = profile.grippers[0].max_opening_m if profile.grippers else None
    ranges = {
        "speed": (limits.min_speed_m_s, limits.max_speed_m_s),
        "force": (limits.min_force_n, limits.max_force_n),
        "width": (0.0, opening if opening is not None else math.inf),
    }
    problems = []
    for arg, kind in (command.kinds or {}).items():
        if kind not in ranges or command.arguments.get(arg) is None:
            continue
        value = command.arguments[arg]
        low, high = ranges[kind]
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not number or not math.isfinite(value) or not low - EPS <= value <= high + EPS:
            problems.append(f"{command.tool}: {arg}={value!r} is outside [{low}, {high}]")
    return problems


def _joint_problems(profile: Any, command: Command) -> list[str]:
    limits = profile.limits.joint_limits or []
    step = profile.limits.max_joint_step_rad
    problems = []
    for arg, kind in (command.kinds or {}).items():
        if kind != "joints" or command.arguments.get(arg) is None:
            continue
        joints = command.arguments[arg]
        if len(joints) != len(limits):
            problems.append(f"{command.tool}: {len(joints)} joints for a {len(limits)}-joint arm")
            continue
        for index, (value, (low, high)) in enumerate(zip(joints, limits, strict=True)):
            if not math.isfinite(value) or not low - EPS <= value <= high + EPS:
                problems.append(f"{command.tool}: joint {index} to {value} ({low}..{high})")
            before = command.joints_before[index]
            if step is not None and abs(value - before) > step + EPS:
                moved = abs(value - before)
                problems.append(f"{command.tool}: joint {index} moved {moved:.4f} rad (max {step})")
    return problems
