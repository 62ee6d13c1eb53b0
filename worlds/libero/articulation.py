"""The articulated parts of a LIBERO scene, read from the simulator: a drawer's handle and
the way it opens, how far it is open, a knob's ridge and the turn that switches it on, and
any joint's position. Part of :class:`~worlds.libero.geometry.LiberoGeometry`
(``geo.articulation``); apart from it because these read joints, not objects' boxes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from worlds.libero.control import Frame, Vec3

__all__ = ["Articulation", "Handle", "geom_box"]


def geom_box(env: Any, geom: int) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) world corners of one geom's bounding box."""
    model, data = env.sim.model, env.sim.data
    rotation = np.array(data.geom_xmat[geom], dtype=float).reshape(3, 3)
    aabb = np.array(model.geom_aabb[geom], dtype=float)
    centre = np.array(data.geom_xpos[geom], dtype=float) + rotation @ aabb[:3]
    half = np.abs(rotation) @ aabb[3:]
    return centre - half, centre + half


@dataclass(frozen=True)
class Handle:
    """Where to grasp an articulated part and which way it opens (unit vector, base frame)."""

    grasp: Vec3
    opens_towards: Vec3
    travel_m: float
    """How far the part moves between closed and open."""
    closing: Vec3 = (0.0, 0.0, 1.0)
    """The direction to close the fingers in: across the handle bar's thinner side."""
    top: float | None = None
    """The height (base frame) of the handle bar's top: where the fingertips press to drag
    a drawer whose handle is too low to close the hand across (``drawer_pull``)."""
    inside_m: float | None = None
    """How far behind the handle's middle (against ``opens_towards``) the inner face of
    the drawer's front panel is: where fingers inside the opened drawer hook it."""
    rim: float | None = None
    """The height (base frame) of the front panel's top."""


def _front_panel(
    env: Any, geoms: list[int], towards: np.ndarray
) -> tuple[float | None, float | None]:
    """(the inner face's position along ``towards``, the top height; world) of a drawer's
    front panel: of the drawer's collision geoms that span most of its width and height
    (its front and back panels, not its sides, floor or handle), those within 2 cm of the
    frontmost; (None, None) when there are none."""
    across = np.array([-towards[1], towards[0], 0.0])
    boxes = [geom_box(env, g) for g in geoms]

    def span(axis: np.ndarray, low: np.ndarray, high: np.ndarray) -> tuple[float, float]:
        # an axis-aligned box's extent along ``axis``
        return float(np.sum(np.minimum(low * axis, high * axis))), float(
            np.sum(np.maximum(low * axis, high * axis))
        )

    sides = [span(across, low, high) for low, high in boxes]
    width = max(e for _, e in sides) - min(b for b, _ in sides)
    height = max(float(h[2]) for _, h in boxes) - min(float(lo[2]) for lo, _ in boxes)
    panels = [
        (span(towards, low, high), float(high[2]))
        for (low, high), (a, b) in zip(boxes, sides, strict=True)
        if b - a >= width / 2 and float(high[2] - low[2]) >= height / 2
    ]
    if not panels:
        return None, None
    front = max(ends[1] for ends, _ in panels)
    near = [(ends, top) for ends, top in panels if ends[1] >= front - 0.02]
    return min(ends[0] for ends, _ in near), max(top for _, top in near)


class Articulation:
    """Reads the joints of one LIBERO env (the problem env, ``ControlEnv.env``)."""

    def __init__(self, env: Any, frame: Frame) -> None:
        self.env = env
        self.frame = frame

    def joint_value(self, joint: str) -> float:
        model, data = self.env.sim.model, self.env.sim.data
        return float(data.qpos[model.get_joint_qpos_addr(joint)])

    def drawer_handle(self, ref: str) -> Handle | None:
        """The handle of a drawer region (its joint's body): the collision geom that sticks
        out furthest the way the drawer opens, and that direction."""
        site = self.env.object_sites_dict.get(ref)
        joints = list(getattr(site, "joints", None) or [])
        if not joints:
            return None
        model, data = self.env.sim.model, self.env.sim.data
        joint = model.joint_name2id(joints[0])
        body = int(model.jnt_bodyid[joint])
        axis = np.array(data.body_xmat[body], dtype=float).reshape(3, 3) @ model.jnt_axis[joint]
        parent = self.env.get_object(site.parent_name)
        props = getattr(parent, "object_properties", {}).get("articulation", {})
        open_range = props.get("default_open_ranges") or [-0.15]
        close_range = props.get("default_close_ranges") or [0.0]
        towards = axis if min(open_range) > max(close_range) else -axis
        travel = abs(float(np.mean(open_range)) - float(np.mean(close_range)))
        geoms = [
            g
            for g in range(model.ngeom)
            if int(model.geom_bodyid[g]) == body and model.geom_contype[g] != 0
        ]
        if not geoms:
            return None
        best = max(geoms, key=lambda g: float(np.dot(geom_box(self.env, g)[1], towards)))
        low, high = geom_box(self.env, best)
        span = high - low
        pull = int(np.argmax(np.abs(towards)))
        others = [axis for axis in range(3) if axis != pull]
        thin = min(others, key=lambda axis: float(span[axis]))
        # the fingers close across the bar; of the two ways to hold the wrist for that, the
        # one with the closing direction pointing down is within the Panda's wrist range at
        # LIBERO's cabinets (the other stalled 5-9 cm short of the handle)
        closing = [0.0, 0.0, 0.0]
        closing[thin] = -1.0
        inside, rim = _front_panel(self.env, geoms, towards)
        middle = (low + high) / 2
        return Handle(
            grasp=self.frame.from_world(middle),
            opens_towards=tuple(float(v) for v in towards),  # type: ignore[arg-type]
            travel_m=travel,
            closing=tuple(closing),  # type: ignore[arg-type]
            top=self.frame.from_world(high)[2],
            inside_m=None if inside is None else float(np.dot(middle, towards)) - inside,
            rim=None if rim is None else self.frame.from_world((0.0, 0.0, rim))[2],
        )

    def drawer_body(self, ref: str) -> int | None:
        """The body (id) a drawer region's joint moves, or None."""
        site = self.env.object_sites_dict.get(ref)
        joints = list(getattr(site, "joints", None) or [])
        if not joints:
            return None
        model = self.env.sim.model
        return int(model.jnt_bodyid[model.joint_name2id(joints[0])])

    def drawer_opening(self, ref: str) -> float:
        """How far (m) a drawer region's joint is from its closed position."""
        site = self.env.object_sites_dict[ref]
        parent = self.env.get_object(site.parent_name)
        props = getattr(parent, "object_properties", {}).get("articulation", {})
        closed = float(np.mean(props.get("default_close_ranges") or [0.0]))
        return abs(self.joint_value(site.joints[0]) - closed)

    def knob_value(self, ref: str) -> tuple[float, float] | None:
        """(the knob's joint value, the end of LIBERO's off range: below it, the fixture is
        off) of a fixture with a knob; None for anything else."""
        obj = self.env.get_object(ref)
        if not hasattr(obj, "turn_off"):
            return None
        model = self.env.sim.model
        for joint_name in getattr(obj, "joints", []):
            if int(model.jnt_type[model.joint_name2id(joint_name)]) == 3:  # mjJNT_HINGE
                props = getattr(obj, "object_properties", {}).get("articulation", {})
                off = props.get("default_turnoff_ranges") or [-0.005, 0.0]
                return self.joint_value(joint_name), float(max(off))
        return None

    def knob(self, ref: str) -> tuple[Vec3, float, float] | None:
        """(grasp point, finger yaw, turn in radians to switch it on) of a fixture's knob:
        its hinge joint about the vertical and the tallest collision geom on it (the grip
        ridge). None for a fixture without one."""
        obj = self.env.get_object(ref)
        if not hasattr(obj, "turn_on"):
            return None
        model, data = self.env.sim.model, self.env.sim.data
        for joint_name in getattr(obj, "joints", []):
            joint = model.joint_name2id(joint_name)
            if int(model.jnt_type[joint]) != 3:  # mjJNT_HINGE
                continue
            body = int(model.jnt_bodyid[joint])
            rotation = np.array(data.body_xmat[body], dtype=float).reshape(3, 3)
            axis = rotation @ model.jnt_axis[joint]
            geoms = [
                g
                for g in range(model.ngeom)
                if int(model.geom_bodyid[g]) == body and model.geom_contype[g] != 0
            ]
            if not geoms or abs(axis[2]) < 0.9:
                continue

            def top(g: int) -> float:
                half = np.abs(np.array(data.geom_xmat[g]).reshape(3, 3) @ model.geom_size[g])
                return float(data.geom_xpos[g][2] + half[2])

            ridge = max(geoms, key=top)
            ridge_rotation = np.array(data.geom_xmat[ridge]).reshape(3, 3)
            half = np.abs(ridge_rotation @ model.geom_size[ridge])
            # the fingers close across the ridge's thin horizontal side
            yaw = 0.0 if half[0] <= half[1] else math.pi / 2
            if int(model.geom_type[ridge]) == 6:  # mjGEOM_BOX: along its own thin axis
                yaw = _thin_yaw(ridge_rotation, np.asarray(model.geom_size[ridge]), yaw)
            grasp = np.array(data.geom_xpos[ridge], dtype=float)
            grasp[2] = top(ridge) - min(0.015, half[2])
            props = getattr(obj, "object_properties", {}).get("articulation", {})
            on_range = props.get("default_turnon_ranges") or [0.5, 2.1]
            turn = min(max(on_range) - 0.1, min(on_range) + 0.4)
            sign = 1.0 if axis[2] > 0 else -1.0
            return self.frame.from_world(grasp), yaw, sign * turn
        return None


def _thin_yaw(rotation: np.ndarray, size: np.ndarray, fallback: float) -> float:
    """The direction (yaw in (-pi/2, pi/2], world axes) of a box's thinnest horizontal
    axis, its columns ``rotation`` and half sizes ``size``; ``fallback`` when no two of its
    axes lie level. The ridge turns with the knob: libero_90 task 39, state 0, the knob on
    at 0.98 rad, the ridge's thin side faced -0.59 rad while its world box's thinner side
    said 0; the fingers closed 34 degrees across it, turned it 0.08 rad the wrong way as
    they closed and slipped as the wrist turned it back (the knob let go at +0.60 after
    the wrist's 1.13 rad, coasting to +0.17: still on), twice."""
    level = [i for i in range(3) if abs(float(rotation[2, i])) < 0.5]
    if len(level) < 2:
        return fallback
    thin = min(level, key=lambda i: float(size[i]))
    yaw = math.atan2(float(rotation[1, thin]), float(rotation[0, thin]))
    if yaw <= -math.pi / 2:
        yaw += math.pi
    elif yaw > math.pi / 2:
        yaw -= math.pi
    return yaw
