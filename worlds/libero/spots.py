"""Where in a region a held object is set down: its middle, unless that leaves no room.

LIBERO judges "X on a region" by X's body position inside the region's footprint, so any
spot inside does. The middle is the natural one, and stays the choice when nothing else is
there and nothing else like X could come. Two cases need another spot:

- **Something already stands there** (the first moka pot, when the second comes): the
  held object's footprint set down in the middle would land on it, and it would push the
  other off as it fell (libero_10 task 8: the second pot landed on the first and both fell
  off the stove). The spot is then the one nearest the middle whose footprint keeps
  ``GAP_M`` from everything already there.
- **Another object of the same kind is still elsewhere** (two moka pots, one stove): it may
  be asked to follow, and once the first stands in the middle of a stove region 15 cm
  across, an 8.1 cm pot has nowhere to go. The first is then set where a second like it
  still fits beside it, ``TWIN_GAP_M`` apart (the second then has slack), as near the
  middle as that allows.

Footprints are the objects' axis-aligned boxes in the base frame (a held object's as it is
held now); the spots searched are a grid over the region with the body at least
``MARGIN_M`` inside its edges. This reads the scene, never the instruction.
"""

from __future__ import annotations

import numpy as np

from worlds.libero.geometry import LiberoGeometry

__all__ = ["GAP_M", "MARGIN_M", "TWIN_GAP_M", "region_spot"]

MARGIN_M = 0.015
"""How far inside the region's edges the body is set down (LIBERO's ``On`` wants it inside)."""
GAP_M = 0.01
"""The room left between the footprint set down and anything already on the region."""
TWIN_GAP_M = 0.03
"""The room the first of two alike leaves for the second beside it: 3 cm, so that the
second, set down with ``GAP_M`` to spare, stands as far inside the region as the first
(the second pot drifted 7-8 mm outwards as it was let go, on states 0-9)."""
STEPS = 25
"""Grid points along each of the region's axes."""


def region_spot(
    geo: LiberoGeometry, ref: str, target: str, *, twins: bool = True
) -> np.ndarray | None:
    """The base-frame (x, y) to bring ``ref``'s body over in the region ``target`` (see the
    module docstring), or None when ``target`` is not a region with a footprint. Without
    ``twins`` (a place *in* a container) room is kept only from what is there already."""
    frame = geo.region_frame(target)
    held = geo.box(ref)
    if frame is None or held is None:
        return None
    centre, matrix, half_size = frame
    body = np.array(geo.body_position(ref)[:2])
    half = np.array(held.size[:2]) / 2
    shift = np.array(held.centre[:2]) - body  # the footprint's middle, from the body
    axes = np.array([matrix[:2, 0], matrix[:2, 1]])
    spans = [np.linspace(-(h - MARGIN_M), h - MARGIN_M, STEPS) for h in half_size[:2]]
    if min(half_size[:2]) <= MARGIN_M:
        return np.array(centre[:2])
    a, b = np.meshgrid(*spans, indexing="ij")
    spots = centre[:2] + a.reshape(-1, 1) * axes[0] + b.reshape(-1, 1) * axes[1]
    owner = getattr(geo.catalog.get(target), "parent", None)  # the basket of its inside
    # what stands on a surface reaches above it; in a container, too high for the held
    # thing to lie on it and stay inside (a flat box on another is in the basket still; on
    # a ketchup bottle standing 15 cm tall it is above it)
    top = centre[2] + float(np.abs(matrix[2]) @ half_size) - float(held.size[2])
    surface = centre[2] if twins else top
    others = _standing(geo, ref, np.array([*centre[:2], surface]), half_size, half, skip=owner)
    if not twins:  # in a container: only what stands inside it (its walls keep out the rest)
        others = [
            (m, h)
            for m, h in others
            if all(abs(float((m - centre[:2]) @ axes[i])) <= half_size[i] for i in (0, 1))
        ]
    clear = _clearance(spots + shift, half, others)
    middle = np.linalg.norm(spots - centre[:2], axis=1)
    if twins and _twins(geo, ref, target):
        # for each spot, the best room a second one like it would then have
        room = np.array(
            [
                _clearance(spots + shift, half, [*others, (spot + shift, half)]).max()
                for spot in spots
            ]
        )
        ok = (clear >= GAP_M) & (room >= TWIN_GAP_M)
        if ok.any():
            return _nearest(spots, middle, ok)
    at_middle = _clearance(np.array([centre[:2] + shift]), half, others)[0]
    if at_middle >= GAP_M:
        return np.array(centre[:2])
    ok = clear >= GAP_M
    if ok.any():
        return _nearest(spots, middle, ok)
    best = int(np.argmax(clear))
    return spots[best] if clear[best] > at_middle else np.array(centre[:2])


def _nearest(spots: np.ndarray, middle: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """The allowed spot nearest the region's middle; of equals, the one nearest the robot
    (a fixed choice: the same scene always gives the same spot)."""
    order = np.lexsort((np.linalg.norm(spots, axis=1), np.round(middle, 4), ~ok))
    return spots[int(order[0])]


def _clearance(
    middles: np.ndarray, half: np.ndarray, others: list[tuple[np.ndarray, np.ndarray]]
) -> np.ndarray:
    """For footprints of half size ``half`` centred at each of ``middles``, the smallest gap
    to any of ``others`` (negative: they overlap; +inf: nothing there)."""
    gap = np.full(len(middles), np.inf)
    for middle, other_half in others:
        apart = np.abs(middles - middle) - (half + other_half)
        gap = np.minimum(gap, apart.max(axis=1))
    return gap


def _standing(
    geo: LiberoGeometry,
    ref: str,
    centre: np.ndarray,
    half_size: np.ndarray,
    half: np.ndarray,
    skip: str | None = None,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Footprints (middle, half size) of the objects a footprint set down in the region
    could meet: near it across, and reaching above its surface."""
    reach = float(np.max(np.abs(half_size[:2]))) + float(np.max(half)) + GAP_M
    found = []
    for other in geo.catalog.refs("object"):
        box = geo.box(other)
        if other in (ref, skip) or box is None:
            continue
        middle = np.array(box.centre[:2])
        if np.abs(middle - centre[:2]).max() > reach + max(box.size[:2]) / 2:
            continue
        if box.top < centre[2] + 0.005:
            continue  # below the region's surface: not in the way
        found.append((middle, np.array(box.size[:2]) / 2))
    return found


def _twins(geo: LiberoGeometry, ref: str, target: str) -> list[str]:
    """Other objects of ``ref``'s kind not on ``target`` (a second one may follow)."""
    item = geo.catalog.get(ref)
    kind = item.libero_category if item is not None else ""
    if not kind:
        return []
    return [
        other
        for other in geo.catalog.refs("object")
        if other != ref
        and getattr(geo.catalog.get(other), "libero_category", "") == kind
        and not geo.predicate("on", other, target)
    ]
