"""The tabletop simulator's constants (the Panda's joints, limits, forces; motion and
snapshot settings) and the small records and helpers its parts share."""

from __future__ import annotations

import math
from dataclasses import dataclass

REST_POSE = (0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785)
ARM_JOINTS = tuple(range(7))
FINGER_JOINTS = (9, 10)
EE_LINK = 11
LOWER = (-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973)
UPPER = (2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973)
ARM_FORCES = (87.0, 87.0, 87.0, 87.0, 12.0, 12.0, 12.0)
MAX_OPENING = 0.08
GRIP_FORCE_N = 40.0
APPROACH_HEIGHT = 0.12
LIFT_HEIGHT = 0.15
REACH_TOLERANCE_M = 0.01
HOME_SAMPLE_RAD = 0.05
"""Joint-space spacing of the samples that describe the (curved) path of ``home``."""
SNAPSHOT_VERSION = 1
RESTORE_SETTLE_STEPS = 5
"""Physics steps after a restore, so contacts (a held cube between the fingers) exist."""
SEEN_MIN_PIXELS = 20
"""Pixels of an object a frame must show for perception (``perception: seen``) to know it."""


@dataclass
class Body:
    ref: str
    body: int
    label: str
    category: str
    size: tuple[float, float, float]
    mass_kg: float
    color: str | None = None


@dataclass(frozen=True)
class Plan:
    """The gripper waypoints of a pick or place, worked out once: ``describe_motion``
    reports them and ``execute`` follows them."""

    waypoints: tuple[tuple[float, float, float], ...]
    yaw: float
    relation: str = ""


class Interrupted(Exception):
    """stop() arrived while a motion was running."""


def grid(center: float, half_span: float, pitch: float) -> list[float]:
    if half_span <= 0:
        return [center]
    count = int(2 * half_span / pitch) + 1
    start = center - (count - 1) * pitch / 2
    return [round(start + i * pitch, 4) for i in range(count)]


def grasp_yaw(object_yaw: float) -> float:
    """A cube's yaw folded into [-pi/4, pi/4]: the fingers fit any of its four faces."""
    quarter = math.pi / 2
    return (object_yaw + math.pi / 4) % quarter - math.pi / 4
