"""Where a held thing is let go in a container so that the opening fingers clear its walls.

The Panda's fingers open to 8 cm apart, their outer faces 6.8 cm either side of the grip
site: 13.6 cm along the closing direction, more than a basket's inside is across (12.4 by
13.4 cm). A thing held off its middle (a cream cheese box pinched by one end after it was
slid out from under the basket's rim) and set with its footprint over the basket's middle
has the hand 3.5 cm off the middle; opening there, the fingers pressed on two walls at once,
wedged, and the retreat carried the basket up with them (LIBERO-PRO libero_10_with_mug task
1: the basket was then "held" and the butter could not be picked). So before the release
is planned, the open fingers are tried where the hand lets go; if they meet anything but
the held thing, the hand is moved (at most :data:`SHIFT_M`) to the nearest point where
they do not, with the thing's body still inside the region (LIBERO's ``In``) and its
footprint still between the walls. Read from the collision geoms, like every skill here;
never from a task's goal.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from worlds.libero.control import Vec3
from worlds.libero.geometry import FINGER_OUTER_M, FINGER_TIP_OUTER_M
from worlds.libero.oriented import oriented_blocked

__all__ = ["SHIFT_M", "clear_above", "clear_of_walls", "fingers_blocked", "release_spot"]

SHIFT_M = 0.04
"""How far the hand may be moved from where the plan lets go for the fingers to open clear."""
STEP_M = 0.005
"""The grid the hand's release point is tried on."""
FINGER_WIDE_M = 0.012
"""Half an open finger's width across the closing direction."""
BANDS = ((-0.013, 0.01, FINGER_TIP_OUTER_M), (0.01, 0.08, FINGER_OUTER_M))
"""The open fingers' boxes: (from, to) above the grip site, and how far their outer faces
reach from it along the closing direction (the fingertips less far than above them)."""
MARGIN_M = 0.01
"""How far inside the region's footprint the released body is kept."""
WALL_SLACK_M = 0.004
"""How far the held thing's footprint may reach past the region's (the region's site is a
few millimetres inside a basket's walls, and the walls lean outwards)."""


def fingers_blocked(geo: Any, at: Vec3, yaw: float, ignore: tuple[str, ...]) -> str | None:
    """The collision geom (not of ``ignore``) the fully open fingers meet with the grip site
    at ``at`` (base frame), closing along ``yaw``; or None."""
    for low, high, reach in BANDS:
        centre = (at[0], at[1], at[2] + (low + high) / 2)
        half = (reach, FINGER_WIDE_M, (high - low) / 2)
        hit = oriented_blocked(geo, centre, half, yaw, ignore=ignore)
        if hit is not None:
            return hit
    return None


def release_spot(
    geo: Any, ref: str, target: str, at: Vec3, yaw: float, offset: np.ndarray, turn: float
) -> tuple[float, float] | None:
    """The grip site's (x, y) nearest ``at`` (base frame, the planned release point) where
    the fingers, closing along ``yaw``, open clear of everything but ``ref``, with ``ref``'s
    body (the hand's point less ``offset``) inside the region ``target`` and its footprint
    (turned ``turn`` about the vertical from how it stands now) between the region's sides;
    ``at``'s own (x, y) when they open clear there, None when no such point is near (the
    plan is kept as it is)."""
    if fingers_blocked(geo, at, yaw, (ref,)) is None:
        return (at[0], at[1])
    frame = geo.level_frame(target)
    if frame is None:
        return None
    centre, matrix, half_size = frame
    axes = np.array(
        [matrix[:2, i] / max(float(np.linalg.norm(matrix[:2, i])), 1e-12) for i in (0, 1)]
    )
    c, s_ = math.cos(turn), math.sin(turn)
    rotate = np.array([[c, -s_], [s_, c]])
    corners = (geo.footprint(ref) - np.array(geo.body_position(ref)[:2])) @ rotate.T
    reach = (
        np.array([(corners @ axes[i]).min() for i in (0, 1)]),
        np.array([(corners @ axes[i]).max() for i in (0, 1)]),
    )
    limit = np.asarray(half_size[:2], dtype=float)
    steps = np.arange(-SHIFT_M, SHIFT_M + 1e-9, STEP_M)
    tried = sorted(
        ((float(dx), float(dy)) for dx in steps for dy in steps if math.hypot(dx, dy) <= SHIFT_M),
        key=lambda d: math.hypot(*d),
    )
    for dx, dy in tried:
        hand = np.array([at[0] + dx, at[1] + dy])
        body = hand - offset
        along = axes @ (body - np.asarray(centre[:2]))
        if np.any(np.abs(along) > limit - MARGIN_M):
            continue
        if np.any(along + reach[0] < -limit - WALL_SLACK_M) or np.any(
            along + reach[1] > limit + WALL_SLACK_M
        ):
            continue
        if fingers_blocked(geo, (float(hand[0]), float(hand[1]), at[2]), yaw, (ref,)) is None:
            return (float(hand[0]), float(hand[1]))
    return None


def clear_of_walls(
    geo: Any, ref: str, target: str, at: Vec3, yaw: float | None, offset: np.ndarray
) -> tuple[float, float]:
    """:func:`release_spot` for a place of the held ``ref`` in the container region
    ``target`` with the fingers turned to ``yaw`` on the way (None: as they are) and the
    hand ``offset`` from the body as it will be; ``at``'s (x, y) where none is found."""
    current = geo.closing_yaw()
    closing = current if yaw is None else yaw
    spot = release_spot(geo, ref, target, at, closing, offset, closing - current)
    return (at[0], at[1]) if spot is None else spot


RAISE_STEP_M = 0.005
"""How finely :func:`clear_above` raises the release."""


def clear_above(geo: Any, ref: str, at: Vec3, yaw: float | None, highest: float) -> float:
    """The lowest release height (the grip site's z, from ``at``'s up to ``highest``) at
    which the fully open fingers, closing along ``yaw`` (None: as they are), meet nothing
    but the held ``ref``; ``highest`` when none below it is clear. A hollow object (a
    bowl) has no region whose walls :func:`release_spot` can keep the hand off: the cream
    cheese let go deep in a bowl 10.8 cm across opened the fingers (13.6 cm) on its
    walls, and the retreat lifted the bowl with them (libero_goal task 6). Let go just
    above the rim, the thing drops the rest of the way in."""
    closing = geo.closing_yaw() if yaw is None else yaw
    z = at[2]
    while z < highest:
        if fingers_blocked(geo, (at[0], at[1], z), closing, (ref,)) is None:
            return z
        z += RAISE_STEP_M
    return highest
