"""Where on a plate's rim the fingers close: across one of the thin slabs its rim is made of.

LIBERO's plate is a floor and a ring of eight sloped slabs (5 mm thick boxes), not a
round wall. The rim grasp picks a side of the rim from the plate's axis-aligned box
(:meth:`~worlds.libero.geometry.LiberoGeometry.grasp`), which at libero_goal's plate, turned
square to the table, lands on a slab's middle with the fingers closing across it. Turned 12
degrees (LIBERO-PRO libero_goal_swap task 5) the same point lies near where two slabs meet:
the fingers closed on 3.2 cm of corner instead of 5 mm of slab, and the plate slipped out
of them as soon as it was carried. The grasp is therefore moved to the middle of the slab
nearest the chosen point, as far out along the slab's thin axis (as the table sees it) as
the chosen point was, the fingers closing along that axis (of the two wrist turns that do
it, the one nearer the chosen side's).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from worlds.libero.articulation import geom_box
from worlds.libero.control import Vec3

if TYPE_CHECKING:
    from worlds.libero.geometry import LiberoGeometry

__all__ = ["on_rim_slab"]

SLAB_M = 0.004
"""A rim slab's half thickness is under this."""
STEEP = 0.2
"""And its thin axis leans at least this far (its horizontal part) from the vertical: the
plate's slabs slope 20 degrees up from its floor (0.33), its floor is a thin box too, lying
flat (under 0.03)."""
SNAP_M = 0.03
"""The slab's middle is at most this far (horizontally) from the point chosen."""


def on_rim_slab(
    geo: LiberoGeometry, ref: str, at: Vec3, yaw: float, top: float
) -> tuple[Vec3, float]:
    """``at`` (base frame) and ``yaw`` moved onto the middle of the rim slab of ``ref``
    nearest ``at`` (its top within 2 cm of ``top``, world z), the fingers closing across
    it; unchanged when the rim has no such slab near."""
    env = geo.env
    model, data = env.sim.model, env.sim.data
    point = geo.frame.to_world(at)
    best: tuple[float, np.ndarray, np.ndarray] | None = None
    for geom in geo.collision_geoms(ref):
        size = np.asarray(model.geom_size[geom], dtype=float)
        thin = int(np.argmin(size))
        if size[thin] >= SLAB_M or geom_box(env, geom)[1][2] < top - 0.02:
            continue
        axis = np.array(data.geom_xmat[geom], dtype=float).reshape(3, 3)[:, thin]
        flat = axis[:2]
        if float(np.linalg.norm(flat)) < STEEP:
            continue
        centre = np.array(data.geom_xpos[geom], dtype=float)
        gap = float(np.hypot(*(centre[:2] - point[:2])))
        if gap <= SNAP_M and (best is None or gap < best[0]):
            best = (gap, centre, flat / float(np.linalg.norm(flat)))
    if best is None:
        return at, yaw
    _, centre, normal = best
    slab_yaw = math.atan2(float(normal[1]), float(normal[0]))
    turns = (slab_yaw, slab_yaw + math.pi, slab_yaw - math.pi)

    def off(candidate: float) -> float:
        return abs((candidate - yaw + math.pi) % (2 * math.pi) - math.pi)

    new_yaw = min(turns, key=off)
    along = centre[:2] + normal * float((point[:2] - centre[:2]) @ normal)
    moved = geo.frame.from_world((float(along[0]), float(along[1]), float(point[2])))
    return moved, float(new_yaw)
