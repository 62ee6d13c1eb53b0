"""Clearance geometry of the fake's mobile base: a rectangular room and box obstacles.

The fake has no sensors; its clearance readings (``Observation.safety``) are computed
here, as the free distance along a ray from the base to the room's walls or the nearest
obstacle, less the footprint's half size. Kept apart from :mod:`.robot` because it is
plain 2-D geometry that needs nothing of the robot but its pose and footprint.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from embodiment.profile import Footprint

__all__ = ["footprint_clearance"]

Box2 = tuple[float, float, float, float]
"""(x_min, y_min, x_max, y_max)."""


def footprint_clearance(
    base_pose: Sequence[float],
    direction: str,
    footprint: Footprint,
    room: Box2,
    obstacles: Sequence[Box2],
) -> float:
    """Free distance from the footprint's edge to the nearest wall or obstacle."""
    x, y, yaw = base_pose
    heading = {"forward": 0.0, "left": math.pi / 2, "backward": math.pi, "right": -math.pi / 2}
    angle = yaw + heading[direction]
    dx, dy = math.cos(angle), math.sin(angle)
    half = (
        footprint.radius
        if footprint.shape == "circle"
        else (footprint.size or (0, 0))[0 if direction in ("forward", "backward") else 1] / 2
    )
    distances = [_ray_box_exit(x, y, dx, dy, room)]
    distances.extend(_ray_box_entry(x, y, dx, dy, box) for box in obstacles)
    nearest = min(d for d in distances if d is not None)
    return max(0.0, nearest - (half or 0.0))


def _ray_box_exit(
    x: float, y: float, dx: float, dy: float, box: tuple[float, float, float, float]
) -> float:
    """Distance from inside a box to its wall along (dx, dy)."""
    x_min, y_min, x_max, y_max = box
    candidates = []
    if dx > 1e-9:
        candidates.append((x_max - x) / dx)
    if dx < -1e-9:
        candidates.append((x_min - x) / dx)
    if dy > 1e-9:
        candidates.append((y_max - y) / dy)
    if dy < -1e-9:
        candidates.append((y_min - y) / dy)
    return max(0.0, min(candidates)) if candidates else math.inf


def _ray_box_entry(
    x: float, y: float, dx: float, dy: float, box: tuple[float, float, float, float]
) -> float | None:
    """Distance along (dx, dy) to where the ray enters a box, None if it misses."""
    x_min, y_min, x_max, y_max = box
    t_low, t_high = 0.0, math.inf
    for origin, delta, low, high in ((x, dx, x_min, x_max), (y, dy, y_min, y_max)):
        if abs(delta) < 1e-12:
            if not low <= origin <= high:
                return None
            continue
        t1, t2 = (low - origin) / delta, (high - origin) / delta
        t_low, t_high = max(t_low, min(t1, t2)), min(t_high, max(t1, t2))
    if t_low > t_high:
        return None
    return t_low
