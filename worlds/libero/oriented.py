"""Whether a box turned about the vertical meets a collision geom of the scene, each taken as
the box it is (turned as the simulator has it), not as an axis-aligned box around it.

The axis-aligned test (:meth:`~worlds.libero.geometry.LiberoGeometry.blocked`) grows both
boxes where they are turned: the microwave of libero_10 task 9 stands turned 6 degrees, so
its top panel (22 cm wide) reached 2.3 cm further out of its face than it does, and the
hand's box (21 cm long) 1.1 cm further in; at initial state 9 that left no depth at which
the hand, outside the face, let the mug into the oven ("no room to carry ... in").
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from worlds.libero.articulation import geom_box

__all__ = ["box_meets", "boxes_overlap", "oriented_blocked"]

ROBOT_BODIES = ("robot0_", "gripper0_", "mount0_")


def oriented_blocked(
    geo: Any,
    centre: tuple[float, float, float],
    half: tuple[float, float, float],
    yaw: float,
    *,
    ignore: tuple[str, ...] = (),
    skip_geoms: tuple[int, ...] = (),
) -> str | None:
    """The name of a collision geom (not the robot's, not those of ``ignore``'s objects,
    not one of ``skip_geoms``) that overlaps the box of half sizes ``half`` about ``centre``
    (base frame), its first axis turned ``yaw`` about the vertical; or None."""
    env = geo.env
    skip: set[int] = set(skip_geoms)
    for ref in ignore:
        if ref in env.obj_body_id:
            skip.update(geo.collision_geoms(ref))
    c, s = math.cos(yaw), math.sin(yaw)
    axes = np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]])
    world_centre = np.asarray(geo.frame.to_world(centre), dtype=float)
    return box_meets(env, world_centre, axes, np.asarray(half, dtype=float), skip)


def box_meets(
    env: Any, centre: np.ndarray, axes: np.ndarray, half: np.ndarray, skip: set[int]
) -> str | None:
    """The name of a scene collision geom (not the robot's, not one of ``skip``) that the
    box about ``centre`` (world) with axes the rows of ``axes`` and half sizes ``half``
    overlaps, each geom as the turned box it is; or None."""
    model, data = env.sim.model, env.sim.data
    reach = np.abs(axes.T) @ half
    for geom in range(model.ngeom):
        if geom in skip or (model.geom_contype[geom] == 0 and model.geom_conaffinity[geom] == 0):
            continue
        body = model.body(int(model.geom_bodyid[geom])).name
        if body.startswith(ROBOT_BODIES) or body == "world":
            continue
        low, high = geom_box(env, geom)
        if np.any(low > centre + reach) or np.any(high < centre - reach):
            continue  # not even the axis-aligned boxes meet
        rotation = np.array(data.geom_xmat[geom], dtype=float).reshape(3, 3)
        aabb = np.array(model.geom_aabb[geom], dtype=float)
        other = np.array(data.geom_xpos[geom], dtype=float) + rotation @ aabb[:3]
        if boxes_overlap(centre, axes, half, other, rotation.T, aabb[3:]):
            return model.geom(geom).name or body
    return None


def boxes_overlap(
    ca: np.ndarray,
    axes_a: np.ndarray,
    ha: np.ndarray,
    cb: np.ndarray,
    axes_b: np.ndarray,
    hb: np.ndarray,
) -> bool:
    """Whether two oriented boxes (centre, rows = unit axes, half sizes) overlap: no
    separating axis among their 3 + 3 face normals and 9 edge cross products."""
    gap = cb - ca
    candidates = [*axes_a, *axes_b]
    for a in axes_a:
        for b in axes_b:
            cross = np.cross(a, b)
            norm = float(np.linalg.norm(cross))
            if norm > 1e-9:
                candidates.append(cross / norm)
    for axis in candidates:
        ra = float(np.sum(ha * np.abs(axes_a @ axis)))
        rb = float(np.sum(hb * np.abs(axes_b @ axis)))
        if abs(float(gap @ axis)) > ra + rb:
            return False
    return True
