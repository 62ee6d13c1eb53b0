"""A hollow object's rim without a long handle: which of its collision geoms at the top form
the ring the fingers close across, and which stand out past it (a frying pan's handle).

A mug's handle stands a centimetre or two past its rim and a rim grasp has always been
worked out from the box around every geom near the top, handle included (the grasp points
lie on the wall all the same). A frying pan's handle reaches 19 cm past its 9.7 cm wall
and rises above it: the box around the top then centres 8 cm off the pan, and a grasp "on
the rim facing the robot" closed on thin air (LIBERO-PRO libero_10_task 2: "turn on the
stove and put the pan on it", three picks with the fingers shut at 1 mm). Here the ring
is told from what stands out by each geom's distance from the circle fitted through the
geoms' middles (a ring of many segments fits it; a handle's parts, furthest off, are
dropped one by one); only a handle that moves the box's edge by more than
:data:`LONG_HANDLE_M` is left out, so a mug's rim is read as before.
"""

from __future__ import annotations

import numpy as np

__all__ = ["LONG_HANDLE_M", "ring"]

LONG_HANDLE_M = 0.03
"""A part standing out moves the box's edge by more than this: a long handle."""
OUT_M = 0.01
"""A part whose middle is this much further from the ring's middle than the ring's
radius is not part of the ring."""


def ring(parts: list[tuple[np.ndarray, np.ndarray]], band: float = 0.02) -> list[int]:
    """The indices of ``parts`` (each a geom's (low, high) world corners) that form the rim:
    those reaching within ``band`` of the top, or, with a long handle, of the ring's own
    top, the handle left out. Unchanged (every part near the top) for anything else."""
    if not parts:
        return []
    tops = np.array([high[2] for _, high in parts])
    near = [i for i in range(len(parts)) if tops[i] >= tops.max() - band]
    fitted = _fit(parts)
    if fitted is None or len(fitted[0]) == len(_upper(parts)):
        return near
    kept = fitted[0]
    top = max(tops[i] for i in kept)
    rim = [i for i in kept if tops[i] >= top - band]
    low_all, high_all = _extent(parts, near)
    low_rim, high_rim = _extent(parts, rim)
    if max(np.max(low_rim - low_all), np.max(high_all - high_rim)) <= LONG_HANDLE_M:
        return near
    return rim


def _upper(parts: list[tuple[np.ndarray, np.ndarray]]) -> list[int]:
    tops = np.array([high[2] for _, high in parts])
    bottom = min(float(low[2]) for low, _ in parts)
    return [i for i in range(len(parts)) if tops[i] >= (tops.max() + bottom) / 2]


def _fit(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[list[int], np.ndarray] | None:
    """(the upper parts on the fitted circle, its centre), or None with fewer than 4."""
    if not parts:
        return None
    upper = _upper(parts)
    if len(upper) < 4:
        return None
    middles = np.array([(parts[i][0][:2] + parts[i][1][:2]) / 2 for i in upper])
    # the circle through the upper parts' middles, the part furthest off it dropped while
    # it is more than OUT_M off (a ring of many segments fits it; a handle does not)
    keep = list(range(len(upper)))
    centre, _ = _circle(middles[keep])
    while len(keep) > 3:
        centre, radius = _circle(middles[keep])
        off = np.abs(np.linalg.norm(middles[keep] - centre, axis=1) - radius)
        worst = int(np.argmax(off))
        if off[worst] <= OUT_M:
            break
        keep.pop(worst)
        centre, _ = _circle(middles[keep])
    return [upper[k] for k in keep], centre


def _circle(points: np.ndarray) -> tuple[np.ndarray, float]:
    """The least-squares circle through ``points`` (x, y): its centre and radius."""
    a = np.column_stack([2 * points, np.ones(len(points))])
    b = np.sum(points**2, axis=1)
    (cx, cy, c), *_ = np.linalg.lstsq(a, b, rcond=None)
    return np.array([cx, cy]), float(np.sqrt(max(c + cx * cx + cy * cy, 0.0)))


def _extent(
    parts: list[tuple[np.ndarray, np.ndarray]], which: list[int]
) -> tuple[np.ndarray, np.ndarray]:
    low = np.min([parts[i][0][:2] for i in which], axis=0)
    high = np.max([parts[i][1][:2] for i in which], axis=0)
    return low, high
