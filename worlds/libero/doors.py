"""Hinged doors (LIBERO's microwave): where the leaf is now and where any part of it will
be at another joint position (the skills on them are :mod:`.door_skills`).

Everything is read from the simulator: the hinge joint's anchor and axis, the leaf's
collision geoms (on the joint's body and below it) and LIBERO's own open and close ranges
of the fixture. The leaf's geoms are kept in the leaf's own frame (along the leaf from the
hinge, across it, height), which turns rigidly with the joint, so where any part of the
leaf will be at another angle is a rotation about the hinge.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from worlds.libero.control import Vec3

if TYPE_CHECKING:
    from worlds.libero.geometry import LiberoGeometry

__all__ = ["Door", "door_of"]

HINGE_JOINT = 3
"""MuJoCo's mjJNT_HINGE."""


@dataclass(frozen=True)
class LeafPart:
    """One collision geom of the leaf in the leaf's frame: along it from the hinge
    (``along``), across it (``across``: positive on the side the leaf moves to when its
    angle grows) and its heights (base frame)."""

    along: tuple[float, float]
    across: tuple[float, float]
    z: tuple[float, float]


@dataclass(frozen=True)
class Door:
    """A hinged door of a fixture (base frame)."""

    ref: str
    joint: str
    hinge: tuple[float, float]
    """The hinge axis' position (x, y)."""
    spin: float
    """+1 when the joint's axis points up, -1 when down: a joint angle grown by a turns
    the leaf by ``spin * a`` about the vertical."""
    angle: float
    """The joint's position now."""
    closed: float
    """The joint position LIBERO calls closed (the middle of its close range)."""
    opened: float
    """A joint position LIBERO calls open (the middle of its open range)."""
    direction: tuple[float, float]
    """Unit vector (x, y) along the leaf from the hinge, now."""
    parts: tuple[LeafPart, ...]
    geoms: tuple[int, ...] = ()
    """The leaf's collision geoms (ids)."""

    @property
    def length(self) -> float:
        return max(p.along[1] for p in self.parts)

    @property
    def top(self) -> float:
        return max(p.z[1] for p in self.parts)

    @property
    def bottom(self) -> float:
        return min(p.z[0] for p in self.parts)

    def axes(self, angle: float) -> tuple[np.ndarray, np.ndarray]:
        """(along, across) unit vectors (x, y) of the leaf at joint position ``angle``."""
        turn = self.spin * (angle - self.angle)
        c, s = math.cos(turn), math.sin(turn)
        d = np.array(self.direction)
        along = np.array([c * d[0] - s * d[1], s * d[0] + c * d[1]])
        # "across" is the way a point of the leaf moves when the joint angle grows
        across = self.spin * np.array([-along[1], along[0]])
        return along, across

    def point(self, angle: float, along: float, across: float) -> np.ndarray:
        """Where the leaf-frame point (along, across) is at joint position ``angle``."""
        a, n = self.axes(angle)
        return np.array(self.hinge) + a * along + n * across

    def reach(self, side: float, low: float, high: float) -> float:
        """How far the leaf stands out on ``side`` (+1: the side it moves to when its
        angle grows, -1 the other) between ``low`` and ``high`` along it."""
        out = [
            max(side * p.across[0], side * p.across[1])
            for p in self.parts
            if p.along[1] > low and p.along[0] < high
        ]
        return max(out, default=0.0)


def door_of(geo: LiberoGeometry, ref: str) -> Door | None:
    """The hinged door of fixture ``ref`` (one hinge joint about the vertical, not a knob:
    nothing to turn on), or None."""
    env = geo.env
    try:
        obj = env.get_object(ref)
    except (AttributeError, KeyError):
        return None
    if obj is None or hasattr(obj, "turn_on") or not hasattr(obj, "is_close"):
        return None
    joints = list(getattr(obj, "joints", None) or [])
    model, data = env.sim.model, env.sim.data
    hinges = []
    for name in joints:
        try:
            joint = model.joint_name2id(name)
        except ValueError:
            continue
        if int(model.jnt_type[joint]) == HINGE_JOINT:
            hinges.append((name, joint))
    if len(hinges) != 1:
        return None
    name, joint = hinges[0]
    body = int(model.jnt_bodyid[joint])
    axis = np.array(data.body_xmat[body], dtype=float).reshape(3, 3) @ model.jnt_axis[joint]
    if abs(axis[2]) < 0.9:
        return None
    bodies = {body}
    for other in range(body + 1, model.nbody):
        if int(model.body_parentid[other]) in bodies:
            bodies.add(other)
    geoms = [
        g
        for g in range(model.ngeom)
        if int(model.geom_bodyid[g]) in bodies
        and (model.geom_contype[g] != 0 or model.geom_conaffinity[g] != 0)
    ]
    if not geoms:
        return None
    hinge = np.array(geo.frame.from_world(data.xanchor[joint]))[:2]
    corners = [np.array([geo.frame.from_world(c) for c in geo.geom_corners(g)]) for g in geoms]
    flat = np.vstack([c[:, :2] for c in corners]) - hinge
    # along the leaf: its corners' principal direction, pointing away from the hinge
    _, _, vt = np.linalg.svd(flat - flat.mean(axis=0))
    direction = vt[0] / np.linalg.norm(vt[0])
    if float(np.dot(flat.mean(axis=0), direction)) < 0:
        direction = -direction
    spin = 1.0 if axis[2] > 0 else -1.0
    across = spin * np.array([-direction[1], direction[0]])
    parts = []
    for points in corners:
        rel = points[:, :2] - hinge
        a, n = rel @ direction, rel @ across
        parts.append(
            LeafPart(
                along=(float(a.min()), float(a.max())),
                across=(float(n.min()), float(n.max())),
                z=(float(points[:, 2].min()), float(points[:, 2].max())),
            )
        )
    props = getattr(obj, "object_properties", {}).get("articulation", {})
    close_range = props.get("default_close_ranges") or [0.0]
    open_range = props.get("default_open_ranges") or [float(model.jnt_range[joint][0])]
    return Door(
        ref=ref,
        joint=name,
        hinge=(float(hinge[0]), float(hinge[1])),
        spin=spin,
        angle=geo.articulation.joint_value(name),
        closed=float(np.mean(close_range)),
        opened=float(np.mean(open_range)),
        direction=(float(direction[0]), float(direction[1])),
        parts=tuple(parts),
        geoms=tuple(int(g) for g in geoms),
    )


def nearest_yaw(yaw: float, near: float) -> float:
    """``yaw`` or ``yaw`` plus a multiple of pi (the same line of closing), nearest ``near``."""
    return yaw + round((near - yaw) / math.pi) * math.pi


def as_point(xy: np.ndarray, z: float) -> Vec3:
    return (float(xy[0]), float(xy[1]), float(z))
