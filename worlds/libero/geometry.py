"""Privileged simulator state of a LIBERO scene, in the robot-base frame.

Where each thing is and how big, what the gripper holds, a drawer's handle and a knob's
axis (:mod:`worlds.libero.articulation`), LIBERO's own predicates on the current state. Skills
compute their waypoints from it, post-conditions judge them by it; the model sees none of it
but through the scene graph.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from worlds.libero.articulation import Articulation, geom_box
from worlds.libero.clearance import hand_clear
from worlds.libero.compartment import rests
from worlds.libero.control import HOME_YAW, Frame, Vec3, half_turned
from worlds.libero.handles import ring
from worlds.libero.holding import footprint, hand_room, held, level_frame, resting_on
from worlds.libero.reach import down_clear
from worlds.libero.rim_arc import FINGER_HALF_M, FINGER_OPEN_M, NEAR_BASE_M, free_arc_grasp
from worlds.libero.rims import on_rim_slab
from worlds.libero.scene import SceneCatalog, site_box

__all__ = ["Box", "LiberoGeometry"]


BOTTLE_DEPTH_M = 0.04
"""How far below a tall object's top the fingers close on its neck: the Panda's fingers reach
about 4.5 cm below its palm; at 6 cm the palm came down on a wine bottle's neck, stalled and
tipped it, and the fingers closed on the very top of the neck."""

GRIP_END_M = 0.005
"""A grasp slid along an object (:data:`SLIDES_M`) keeps the fingers' middle this far inside
its end (the pads are 2.4 cm wide: three quarters of each still bears on it). At 1.5 cm the
hand found no room for the cream cheese standing between the milk and the orange juice
(libero_10 task 1, state 7: three picks came down on the milk); slid 3.5 cm it has, and
the box is picked and put in the basket."""
SLIDES_M = (0.0, 0.01, -0.01, 0.02, -0.02, 0.03, -0.03, 0.035, -0.035, 0.05, -0.05, 0.07, -0.07)
"""How far a grasp may slide along an object, nearest first: to 3.5 cm, a lying salad dressing
had the hand over a milk 10 cm off (LIBERO-PRO libero_object_temp_y0.4 task 2); 7 cm, not."""

FLAT_M = 0.03
"""Lower than this, a thing wider than the fingers open is a plate, held by its rim."""
FINGER_OUTER_M = 0.068
"""How far the open fingers' outer faces reach from the grip site along the closing
direction more than 1 cm above it (measured on the finger meshes at 7.8 cm open: 6.4-6.8 cm)."""
FINGER_TIP_OUTER_M = 0.055
"""The same at their tips, from 1.3 cm below the grip site to 1 cm above it (measured 5.3
cm). A rim grasp's room check reached only 5 cm: the outer fingertip came down on the
stove's knob beside a bowl on the stove, 2.5 mm inside it, and closed over the rim
(LIBERO-PRO libero_spatial_task task 9, the stove at the far end of its placement range);
6.8 cm all the way down, it found a low cream cheese box beside the rim that the tip
clears (libero_goal task 4, state 3)."""
HAND_HALF_M = (0.1, 0.03)
"""Half the Panda hand's size along the closing direction and across it."""
HAND_ABOVE_M = 0.03
"""How far above the fingertips the hand begins (measured: its collision box touched a
basket's rim 3.3 cm above them)."""
HAND_CLEAR_M = 0.008
"""How far above a solid object's top the hand's box stays when it is grasped (the box starts
3-3.3 cm above the fingertips: at 2 mm the hand still met a can's top and the lift stalled)."""
TILTED_DEG = (20.0, 60.0)
"""A hollow object leaning between these (a bowl resting on a ramekin's edge leans 51
degrees in libero_spatial task 5) is grasped at its rim's highest point; one lying on its
side (beyond the second) has no rim above to grasp and keeps the upright rule."""


@dataclass(frozen=True)
class Box:
    """An axis-aligned box in the base frame: ``centre`` and full ``size``."""

    centre: Vec3
    size: Vec3
    yaw: float = 0.0

    @property
    def top(self) -> float:
        return self.centre[2] + self.size[2] / 2

    @property
    def bottom(self) -> float:
        return self.centre[2] - self.size[2] / 2


class LiberoGeometry:
    """Reads one LIBERO env (``env`` is the problem env, ``ControlEnv.env``)."""

    def __init__(self, env: Any, frame: Frame, catalog: SceneCatalog) -> None:
        self.env = env
        self.frame = frame
        self.catalog = catalog
        self.articulation = Articulation(env, frame)
        """Drawers' handles, knobs and joint positions (:mod:`worlds.libero.articulation`)."""

    # ------------------------------------------------------------------ boxes

    def box(self, ref: str) -> Box | None:
        item = self.catalog.get(ref)
        if item is None:
            return None
        env = self.env
        if item.kind == "region":
            centre, half = site_box(env, ref)
            return Box(self.frame.from_world(centre), tuple(float(2 * h) for h in half))  # type: ignore[arg-type]
        body = env.obj_body_id[ref]
        position = np.array(env.sim.data.body_xpos[body], dtype=float)
        quat = np.array(env.sim.data.body_xquat[body], dtype=float)  # w, x, y, z
        yaw = math.atan2(
            2 * (quat[0] * quat[3] + quat[1] * quat[2]), 1 - 2 * (quat[2] ** 2 + quat[3] ** 2)
        )
        if item.kind == "fixture":
            return Box(self.frame.from_world(position), (0.0, 0.0, 0.0), yaw)
        low, high = self.world_extent(ref)
        centre = (low + high) / 2
        return Box(self.frame.from_world(centre), tuple(float(v) for v in high - low), yaw)  # type: ignore[arg-type]

    def collision_geoms(self, ref: str) -> list[int]:
        """The collision geoms of an object: on its body and every body below it."""
        model = self.env.sim.model
        root = self.env.obj_body_id[ref]
        bodies = {root}
        for body in range(root + 1, model.nbody):
            if int(model.body_parentid[body]) in bodies:
                bodies.add(body)
        return [
            g
            for g in range(model.ngeom)
            if int(model.geom_bodyid[g]) in bodies
            and (model.geom_contype[g] != 0 or model.geom_conaffinity[g] != 0)
        ]

    def world_extent(self, ref: str) -> tuple[np.ndarray, np.ndarray]:
        """World corners of the box around an object's collision geoms (its body position
        alone when it has none)."""
        boxes = [geom_box(self.env, g) for g in self.collision_geoms(ref)]
        if not boxes:
            position = np.array(self.env.sim.data.body_xpos[self.env.obj_body_id[ref]])
            return position - 0.02, position + 0.02
        return np.min([b[0] for b in boxes], axis=0), np.max([b[1] for b in boxes], axis=0)

    def hollow(self, ref: str) -> bool:
        """Whether an object is open at the top in its middle (a bowl, a mug): no collision
        geom over its centre reaches near its top, so a grasp there closes on nothing."""
        low, high = self.world_extent(ref)
        centre = (low + high) / 2
        height = float(high[2] - low[2])
        band = np.linspace(high[2] - max(0.02, 0.3 * height), high[2], 5)
        model, data = self.env.sim.model, self.env.sim.data
        for geom in self.collision_geoms(ref):
            g_low, g_high = geom_box(self.env, geom)
            over = g_low[0] <= centre[0] <= g_high[0] and g_low[1] <= centre[1] <= g_high[1]
            if not over or g_high[2] < band[0]:
                continue
            # over its centre as the geom is turned, not only its axis-aligned box: a red
            # mug's wall of turned slabs covered the middle that way and was no mug
            # (LIBERO-PRO libero_10_task 6: its rim, 9.2 cm, refused as too wide)
            rotation = np.array(data.geom_xmat[geom], dtype=float).reshape(3, 3)
            aabb = np.array(model.geom_aabb[geom], dtype=float)
            middle = np.array(data.geom_xpos[geom], dtype=float) + rotation @ aabb[:3]
            for z in band:
                local = rotation.T @ (np.array([centre[0], centre[1], z]) - middle)
                if np.all(np.abs(local) <= aabb[3:] + 1e-9):
                    return False
        return True

    def geom_corners(self, geom: int) -> np.ndarray:
        """The 8 world corners of one geom's bounding box (in the geom's own frame)."""
        model, data = self.env.sim.model, self.env.sim.data
        rotation = np.array(data.geom_xmat[geom], dtype=float).reshape(3, 3)
        aabb = np.array(model.geom_aabb[geom], dtype=float)
        signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)])
        local = aabb[:3] + signs * aabb[3:]
        return np.array(data.geom_xpos[geom], dtype=float) + local @ rotation.T

    def footprint(self, ref: str) -> np.ndarray:
        """An object's footprint's corners (:func:`~worlds.libero.holding.footprint`)."""
        return footprint(self, ref)

    def grasp(self, ref: str) -> tuple[Vec3, float, float]:
        """(grasp point in the base frame, finger yaw, width to grasp) for a top grasp.

        A solid object is grasped in the middle of what lies at the fingers' height (a short
        one 2 cm above its bottom or 3.5 cm below its top, a bottle 4 cm below its top), the
        fingers closing across the narrowest horizontal width of its collision geoms there
        (searched every 7.5 degrees; the nearest to the current yaw among equals) where both
        open fingers come down free (else slid along it, else the next narrowest); a hollow
        one (a bowl, a mug) by the rim on the side facing the robot, the fingers closing
        across the rim's wall, 2.5 cm below its top."""
        low, high = self.world_extent(ref)
        top = float(high[2])
        if self.hollow(ref):
            return self._rim_grasp(ref, top)
        height = float(high[2] - low[2])
        if height < FLAT_M and min(high[0] - low[0], high[1] - low[1]) > FINGER_OPEN_M:
            # a plate, wider every way than the fingers open: by its rim, as deep as it
            # stands (libero_goal_task: "put the plate on the stove" was refused), across
            # one of the slabs its rim is made of (``rims``)
            at, yaw, width = self._rim_grasp(ref, top, depth=height / 2)
            return (*on_rim_slab(self, ref, at, yaw, top), width)
        if height > 0.1:  # a bottle, by its neck: as deep as the hand goes above its top
            z = max(float(low[2]) + height / 2, top - BOTTLE_DEPTH_M)
        else:
            z = max(float(low[2]) + min(0.02, height / 2), top - 0.035)
            # but never with the hand on its top: pressed into the table by the hand, a
            # 7.6 cm can next to the robot's base held the arm (its elbow at its limit)
            # where it closed, and no lift moved it (LIBERO-PRO libero_10_swap task 0)
            z = max(z, top - HAND_ABOVE_M + HAND_CLEAR_M)
        # the fingers close across the narrowest horizontal width of what is at their height
        band = [
            c
            for g in self.collision_geoms(ref)
            for c in self.geom_corners(g)
            if geom_box(self.env, g)[0][2] <= z + 0.02 and geom_box(self.env, g)[1][2] >= z - 0.02
        ]
        points = np.array(band)[:, :2] if band else np.array([low[:2], high[:2]])
        options: list[tuple[float, float, float, np.ndarray, np.ndarray, float]] = []
        for yaw in np.linspace(0.0, math.pi, 24, endpoint=False):
            u = np.array([math.cos(yaw), math.sin(yaw)])
            v = np.array([-u[1], u[0]])
            along, across = points @ u, points @ v
            width = float(along.max() - along.min())
            turn = abs((yaw - HOME_YAW + math.pi / 2) % math.pi - math.pi / 2)
            mid = u * (along.max() + along.min()) / 2 + v * (across.max() + across.min()) / 2
            options.append((round(width, 3), turn, float(yaw), mid, u, float(np.ptp(across))))
        options.sort(key=lambda o: (o[0], o[1]))
        # the narrowest width, nearest the current yaw among equals; but where the open
        # fingers come down on something standing close (libero_10 task 1: the milk beside
        # the cream cheese), the grasp slid along the object, or the next narrowest that fits
        # where even the hand has no room, the fingers having it is the next best
        for need_hand in (True, False):
            for width, _, yaw, mid, u, length in options:
                if width > FINGER_OPEN_M - 0.004:
                    break
                v = np.array([-u[1], u[0]])
                room = max(0.0, length / 2 - GRIP_END_M)
                for shift in SLIDES_M:
                    point = mid + v * shift
                    if abs(shift) <= room and self.fingers_free(ref, point, u, z, need_hand):
                        at = self.frame.from_world((float(point[0]), float(point[1]), z))
                        return at, yaw, width
        width, _, yaw, mid, _, _ = options[0]
        return self.frame.from_world((float(mid[0]), float(mid[1]), z)), yaw, width

    def fingers_free(
        self, ref: str, point: np.ndarray, u: np.ndarray, z: float, hand: bool = True
    ) -> bool:
        """Whether the two open fingers (and with ``hand`` the hand above them), coming down
        either side of ``point`` (world xy) along the closing direction ``u``, meet nothing
        but ``ref`` down to ``z``."""
        v = np.array([-u[1], u[0]])
        half = np.abs(u) * FINGER_HALF_M[0] + np.abs(v) * FINGER_HALF_M[1]
        boxes = []
        for side in (-1.0, 1.0):
            centre = point + side * u * (FINGER_OPEN_M / 2 + FINGER_HALF_M[0])
            boxes.append((centre - half, centre + half, z - 0.005, z + HAND_ABOVE_M))
        # the hand above them, long along the closing direction (libero_10 task 1: the
        # hand came down on the basket's wall 9 cm beside the butter)
        if hand:
            size = np.abs(u) * HAND_HALF_M[0] + np.abs(v) * HAND_HALF_M[1]
            boxes.append((point - size, point + size, z + HAND_ABOVE_M, z + 0.1))
        for low_xy, high_xy, z_low, z_high in boxes:
            low = self.frame.from_world((float(low_xy[0]), float(low_xy[1]), z_low))
            high = self.frame.from_world((float(high_xy[0]), float(high_xy[1]), z_high))
            if self.blocked(low, high, ignore=(ref,)) is not None:
                return False
        return True

    def blocked(self, low: Vec3, high: Vec3, *, ignore: tuple[str, ...] = ()) -> str | None:
        """The name of a collision geom of the scene (not the robot's, not those of the
        objects in ``ignore``) whose box overlaps the base-frame box ``low``..``high``, or
        None: whether the fingers fit there."""
        model = self.env.sim.model
        skip: set[int] = set()
        for ref in ignore:
            if ref in self.env.obj_body_id:
                skip.update(self.collision_geoms(ref))
        lo = self.frame.to_world(low)
        hi = self.frame.to_world(high)
        for geom in range(model.ngeom):
            if geom in skip or (
                model.geom_contype[geom] == 0 and model.geom_conaffinity[geom] == 0
            ):
                continue
            body = model.body(int(model.geom_bodyid[geom])).name
            if body.startswith(("robot0_", "gripper0_", "mount0_")) or body == "world":
                continue
            g_low, g_high = geom_box(self.env, geom)
            if np.all(g_low < hi) and np.all(g_high > lo):
                return model.geom(geom).name or body
        return None

    def _rim_grasp(self, ref: str, top: float, depth: float = 0.025) -> tuple[Vec3, float, float]:
        """A hollow object's rim: the side facing the robot, else (another object standing
        close there, or that side nearer the robot's base than the arm comes down:
        :data:`NEAR_BASE_M`) the first side where the open fingers have room, in the order
        facing the robot, left, right, far (the fingers close across the rim's wall)."""
        geoms = self.collision_geoms(ref)
        rim = [geoms[i] for i in ring([geom_box(self.env, g) for g in geoms])]
        rim_top = max(float(geom_box(self.env, g)[1][2]) for g in rim)
        if rim_top < top - 0.005:  # a long handle above the rim (a frying pan): the wall's
            depth = min(depth, 0.4 * (rim_top - float(self.world_extent(ref)[0][2])))  # top
        top = rim_top
        corners = np.vstack([self.geom_corners(g) for g in rim])
        r_low, r_high = corners.min(axis=0), corners.max(axis=0)
        cx, cy, z = (r_low[0] + r_high[0]) / 2, (r_low[1] + r_high[1]) / 2, top - depth
        tilted = self._tilted_rim(ref, rim, z)
        if tilted is not None:
            return tilted
        # fingers closing along x: of the two wrist turns that do it, the one the Panda's
        # wrist reaches on that side of the table (at y = +0.3 the other stalled 4-6 cm short)
        across = math.pi if self.frame.from_world((cx, cy, z))[1] > 0 else 0.0
        sides = [
            (np.array([r_low[0] + 0.012, cy, z]), across),
            (np.array([cx, r_high[1] - 0.012, z]), math.pi / 2),
            (np.array([cx, r_low[1] + 0.012, z]), math.pi / 2),
            (np.array([r_high[0] - 0.012, cy, z]), across),
        ]
        roomy = []
        for point, yaw in sides:
            here = self.frame.from_world(point)
            if math.hypot(here[0], here[1]) < NEAR_BASE_M:
                continue
            # the open fingers: their tips (to 1 cm above the grip site), and above them
            bands = (
                (-min(0.01, depth / 2), 0.01, FINGER_TIP_OUTER_M),
                (0.01, 0.08, FINGER_OUTER_M),
            )
            room = True
            for z0, z1, reach in bands:
                hx, hy = (reach, 0.015) if yaw != math.pi / 2 else (0.015, reach)
                low = (here[0] - hx, here[1] - hy, here[2] + z0)
                high = (here[0] + hx, here[1] + hy, here[2] + z1)
                room = room and self.blocked(low, high, ignore=(ref,)) is None
            if room:
                roomy.append((here, yaw, 0.02))
        # the hand (20 cm along the closing direction) must come down clear of anything over
        # the object (libero_goal task 3: an opened drawer), and the arm (``down_clear``;
        # libero_90 task 30: the forearm). A side with the whole hand's room first; else a
        # clear side (a wine bottle 3 cm over the rim is brushed), not a slanted rim the arm
        # does not reach (libero_goal task 1 stalled there); else the rim where it fits
        above = self.frame.from_world((cx, cy, top))[2]
        clear = None
        for here, yaw, width in roomy:
            if hand_clear(self, ref, here, yaw, above) and down_clear(
                self.env, self.frame, here, yaw
            ):
                if hand_room(self, ref, here, yaw):
                    return here, yaw, width
                clear = clear or (here, yaw, width)
        if clear is not None:
            return clear
        radius = (r_high[0] - r_low[0]) / 2 - 0.012
        for angle in np.radians(np.arange(15.0, 360.0, 15.0)):
            u = np.array([math.cos(angle), math.sin(angle)])
            point = np.array([cx, cy]) - u * radius
            here = self.frame.from_world((float(point[0]), float(point[1]), z))
            yaw = float(angle) if (math.cos(angle) < 0) == (here[1] > 0) else float(angle) - math.pi
            reached = math.hypot(here[0], here[1]) >= NEAR_BASE_M
            if (
                reached
                and self.fingers_free(ref, point, u, z, hand=False)
                and hand_clear(self, ref, here, yaw, above)
                and hand_room(self, ref, here, yaw)
                and down_clear(self.env, self.frame, here, yaw)
            ):
                return here, yaw, 0.02
        if roomy:
            return roomy[0]
        arc = free_arc_grasp(self, ref, (cx, cy, z), radius)  # boxes turned as they are
        if arc is not None:
            return arc
        return self.frame.from_world(sides[0][0]), sides[0][1], 0.02

    def _tilted_rim(self, ref: str, rim: list[int], z: float) -> tuple[Vec3, float, float] | None:
        """A hollow object leaning within :data:`TILTED_DEG`: its rim's highest point
        (the middle of the geoms that reach the top), the fingers closing along the lean,
        across the wall there (which the lean has turned nearer upright), with the wrist
        turn the arm reaches on that side of the table; None when it stands upright or the
        open fingers have no room there. Grasped on the side facing the robot instead, the
        fingers stopped on the leaning wall and the bowl slipped out on the way (libero_spatial
        task 5: 8 of 10 states needed a second pick)."""
        body = self.env.obj_body_id[ref]
        axis = np.array(self.env.sim.data.body_xmat[body], dtype=float).reshape(3, 3)[:, 2]
        lean = float(np.linalg.norm(axis[:2]))
        least, most = (math.cos(math.radians(d)) for d in TILTED_DEG)
        if not most < axis[2] < least or lean < 1e-6:
            return None
        high = np.mean([sum(geom_box(self.env, g)) / 2 for g in rim], axis=0)
        raised = -axis[:2] / lean  # the side that leans up, seen from the middle
        yaw = math.atan2(float(raised[1]), float(raised[0]))
        here = self.frame.from_world((float(high[0]), float(high[1]), z))
        # of the two wrist turns that close along it, the one the Panda reaches on this side
        # of the table (as for an upright rim: facing -x where y > 0)
        if (math.cos(yaw) < 0) != (here[1] > 0):
            yaw = half_turned(yaw)
        u = np.array([math.cos(yaw), math.sin(yaw)])
        if not self.fingers_free(ref, high[:2], u, z, hand=False):
            return None
        return here, yaw, 0.02

    def region_frame(self, ref: str) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(site position in the base frame, the site's matrix, its half sizes) of a region,
        as LIBERO's ``On`` and ``In`` read them; None for anything else."""
        site = self.env.object_sites_dict.get(ref)
        size = getattr(site, "size", None)
        if site is None or size is None or len(size) < 3:
            return None
        position = np.array(self.frame.from_world(self.env.sim.data.get_site_xpos(ref)))
        matrix = np.array(self.env.sim.data.get_site_xmat(ref), dtype=float).reshape(3, 3)
        return position, matrix, np.asarray(size, dtype=float)

    def level_frame(self, ref: str) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """A container region's footprint frame (:func:`~worlds.libero.holding.level_frame`)."""
        return level_frame(self, ref)

    def closing_yaw(self) -> float:
        """The direction the fingers close in now (radians about the vertical, base frame;
        the ``yaw`` of a top grasp)."""
        data, model = self.env.sim.data, self.env.sim.model
        left = data.body_xpos[model.body_name2id("gripper0_leftfinger")]
        right = data.body_xpos[model.body_name2id("gripper0_rightfinger")]
        return math.atan2(float(right[1] - left[1]), float(right[0] - left[0]))

    def region_axes(self, ref: str) -> tuple[tuple[float, float], tuple[float, float]] | None:
        """((narrow width, its direction's yaw), (long width, its yaw)) of a region's
        footprint from its site's size and orientation (the two axes in the table's plane,
        :meth:`level_frame`); None for anything else."""
        frame = self.level_frame(ref)
        if frame is None:
            return None
        _, matrix, size = frame
        axes = [
            (2 * float(size[i]), math.atan2(float(matrix[1, i]), float(matrix[0, i])))
            for i in (0, 1)
        ]
        axes.sort()
        return axes[0], axes[1]

    def body_position(self, ref: str) -> Vec3:
        body = self.env.obj_body_id[ref]
        return self.frame.from_world(self.env.sim.data.body_xpos[body])

    def speed_of(self, ref: str) -> float:
        body = self.env.obj_body_id[ref]
        # cvel is (angular, linear) of the body's centre of mass
        return float(np.linalg.norm(self.env.sim.data.cvel[body][3:]))

    # ------------------------------------------------------------------ the gripper

    def held_ref(self) -> str | None:
        """The movable object the fingers hold (:func:`~worlds.libero.holding.held`)."""
        return held(self)

    # ------------------------------------------------------------------ LIBERO's predicates

    def predicate(self, name: str, *refs: str) -> bool:
        """LIBERO's predicate ``name`` (``in``, ``on``, ``open``, ``close``, ``turnon``...)
        on the current state."""
        from libero.libero.envs.predicates import eval_predicate_fn

        states = self.env.object_states_dict
        return bool(eval_predicate_fn(name.lower(), *(states[r] for r in refs)))

    def support_of(self, ref: str) -> tuple[str, str] | None:
        """("inside", region) or ("on", thing) by LIBERO's In/On, or None."""
        states = self.env.object_states_dict
        if ref not in states:
            return None
        regions = [
            i
            for i in self.catalog.items.values()
            if i.kind == "region" and i.ref in states and i.parent != ref
        ]
        for item in regions:
            if "contain" in item.tags and self.predicate_or_false("in", ref, item.ref):
                return ("inside", item.ref)
        below = resting_on(self, ref)
        if below is not None:
            return ("on", below)
        for tag in ("top", "table_area"):
            for item in regions:
                if tag in item.tags and self.predicate_or_false(
                    rests(self, item.ref, ref), ref, item.ref
                ):
                    return ("on", item.ref)
        return None

    def predicate_or_false(self, name: str, *refs: str) -> bool:
        try:
            return self.predicate(name, *refs)
        except (AssertionError, AttributeError, KeyError, TypeError, ValueError):
            return False
