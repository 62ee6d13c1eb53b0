"""A bowl whose rim no hand can come down to, dragged out by its inside first.

libero_goal task 3 ("open the top drawer and put the bowl inside"): LIBERO places the
wooden cabinet anew on every reset, anywhere in its 2 x 2 cm placement range (it has no
joint, so the published initial state does not fix it). Where the range puts it nearest the
bowl, the opened top drawer's front corner stands 2 cm from the bowl's centre, 10 cm up.
The Panda's hand is 20 cm long along the fingers' closing direction and 6 cm across it; a
rim grasp closes radially, so its hand always covers the bowl's centre with 3 cm to spare
and came down on that corner whichever side of the rim it took (contacts recorded each
physics step: ``wooden_cabinet_1_g11`` against ``gripper0_hand_collision``, the pick
stalled 17 cm up, three times; LIBERO's eval failed states 3-5 this way).

Inside the bowl there is room: the closed fingers come down into it where the hand, turned
with its length across the way out, is clear of the drawer, hook the inner wall 1.8 cm
above the bowl's floor and drag the bowl out along the table far enough that a rim grasp's
hand clears; the pick then grasps the rim where the bowl will be and, if the drawer still
reaches over it, slides it out from under before lifting (``clearance.out_from_under``).
Every waypoint is worked out before anything moves, as the envelope requires.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from worlds.libero.articulation import geom_box
from worlds.libero.clearance import (
    SLIDE_MARGIN_M,
    WRIST_XY_M,
    Moved,
    box_gap,
    hand_clear,
    obstacles,
)
from worlds.libero.control import HOME_YAW, Vec3
from worlds.libero.reach import clear_posture, down_clear
from worlds.libero.segments import SLOW, Segment
from worlds.libero.wrist import reached_yaw

__all__ = [
    "Drag",
    "comes_down",
    "drag_out",
    "drag_segments",
    "out_of_the_way",
    "posture_down",
    "rim_grasp_at",
    "wrist_clear",
]

FINGERS_HALF_M = (0.03, 0.012)
"""Half the closed fingers' footprint along the closing direction and across it."""
WALL_GAP_M = 0.004
"""How far inside the wall's (conservative) inner face the fingers' front comes down."""
OVER_FLOOR_M = 0.018
"""The grip site's height above the bowl's floor while dragging (the fingertips are 1.2
cm below it: they clear the floor by about 6 mm)."""
MAX_DRAG_M = 0.07
WRIST_Z_M = (0.12, 0.2)
"""The height band (above the grip site) of the wrist, whose xy box is
``clearance.WRIST_XY_M``."""
SLIP_M = 0.03
"""How much further than the bowl must move the fingers drag: measured, the bowl moved 1.2
cm for 2.4 cm of the fingers and 2.7 cm for 5.9 cm (they meet the slanted wall low, and
it turns)."""
RIM_INSET_M = 0.012
"""A rim grasp's point lies this far inside the rim's outer edge (as ``_rim_grasp``)."""


@dataclass(frozen=True)
class Drag:
    """Closed fingers down at ``start`` (base frame; ``yaw`` turns their length across
    the way), dragged to ``end``; the object ends about ``shift`` (xy) from where it is."""

    start: Vec3
    end: Vec3
    yaw: float
    shift: np.ndarray


def _reachable_yaw(angle: float, y: float) -> float:
    """Of the two wrist turns that close the fingers along ``angle``, the one the Panda's
    wrist reaches at ``y`` (facing -x where y > 0, as ``_rim_grasp`` chooses)."""
    return angle if (math.cos(angle) < 0) == (y > 0) else angle - math.pi


def wrist_clear(geo: Any, ref: str, point: Vec3, moved: Moved = None) -> bool:
    """Whether the wrist, the grip site at ``point`` (base frame), is clear of everything
    but ``ref`` (with ``moved`` as :func:`clearance.obstacles`)."""
    x, y, z = point
    (x0, x1), (y0, y1) = WRIST_XY_M
    z0, z1 = WRIST_Z_M
    low, high = np.array([x + x0, y + y0]), np.array([x + x1, y + y1])
    return all(
        box_gap(a, b, low, high) >= 0.0 for _, a, b, _ in obstacles(geo, ref, z + z0, z + z1, moved)
    )


def comes_down(geo: Any, ref: str, at: Vec3, yaw: float, top: float) -> bool:
    """Whether the hand comes down on the grasp ``at`` (base frame) of ``ref`` (top
    ``top``) clear of anything reaching over it (``clearance.hand_clear``) and the arm
    with it (``reach.down_clear``: the forearm came down on an open drawer beside a bowl,
    libero_90 task 30); else a hollow thing is dragged out first (``drag_out``)."""
    return hand_clear(geo, ref, at, yaw, top) and down_clear(geo.env, geo.frame, at, yaw)


def posture_down(
    geo: Any, ref: str, at: Vec3, yaw: float, top: float
) -> tuple[float, tuple[float, ...]] | None:
    """Where :func:`comes_down` fails only for the arm (the hand itself comes down clear):
    (yaw, joints) of a posture in which the arm comes down on the grasp ``at`` with its
    links clear (``reach.clear_posture``), for the pick to run with; else None."""
    if not hand_clear(geo, ref, at, yaw, top, wrist=False):
        return None
    return clear_posture(geo.env, geo.frame, at, yaw)


def rim_grasp_at(
    geo: Any, ref: str, shift: np.ndarray, *, need_fingers: bool = True, moved: Moved = None
) -> tuple[Vec3, float] | None:
    """A rim grasp (grasp point in the base frame, yaw) of hollow ``ref`` as if moved by
    ``shift`` (xy): the side facing the robot first, then every 15 degrees round, the first
    where the hand comes down clear of anything over it (and, with ``need_fingers``, the
    open fingers free of what stands beside it); None if there is none."""
    box = geo.box(ref)
    top = box.top
    rim_z = float(geo.world_extent(ref)[1][2]) - 0.02
    rim = [g for g in geo.collision_geoms(ref) if geom_box(geo.env, g)[1][2] >= rim_z]
    corners = np.vstack([geo.geom_corners(g) for g in rim])
    low, high = corners.min(axis=0), corners.max(axis=0)
    centre = (low[:2] + high[:2]) / 2 + shift
    radius = float(high[0] - low[0]) / 2 - RIM_INSET_M
    z = float(geo.frame.from_world(high)[2]) - 0.025
    for angle in np.radians(np.arange(0.0, 360.0, 15.0)):
        u = np.array([math.cos(angle), math.sin(angle)])
        point = centre - u * radius
        here = geo.frame.from_world((float(point[0]), float(point[1]), 0.0))
        at = (here[0], here[1], z)
        yaw = _reachable_yaw(float(angle), here[1])
        if not hand_clear(geo, ref, at, yaw, top, moved) or not wrist_clear(geo, ref, at, moved):
            continue
        if moved is None and not down_clear(geo.env, geo.frame, at, yaw):
            continue  # the forearm would come down on what stands beside it
        grip_z = float(high[2]) - 0.025
        if need_fingers and not geo.fingers_free(ref, point, u, grip_z, hand=False):
            continue
        return at, yaw
    return None


def _inside(geo: Any, ref: str) -> tuple[np.ndarray, float, float]:
    """(centre xy, free inner radius, floor height), base frame, of a hollow object: the
    radius is the distance from the centre to the nearest of the geoms reaching near its
    top (a box geom's own faces, not its axis-aligned bounding box, which bulges inwards
    for the slanted ones), the floor the highest top of the others."""
    env = geo.env
    model, data = env.sim.model, env.sim.data
    origin = np.array(geo.frame.to_world((0.0, 0.0, 0.0)))
    top = float(geo.world_extent(ref)[1][2])
    geoms = geo.collision_geoms(ref)
    wall = [g for g in geoms if geom_box(env, g)[1][2] >= top - 0.02]
    corners = np.vstack([geo.geom_corners(g) for g in wall])
    centre = (corners.min(axis=0)[:2] + corners.max(axis=0)[:2]) / 2
    radius = math.inf
    for g in wall:
        middle = np.array(data.geom_xpos[g], dtype=float)
        if int(model.geom_type[g]) == 6:  # a box: the distance to its faces
            rotation = np.array(data.geom_xmat[g], dtype=float).reshape(3, 3)
            local = rotation.T @ (np.array([centre[0], centre[1], middle[2]]) - middle)
            half = np.array(model.geom_size[g], dtype=float)
            gap = float(np.linalg.norm(np.maximum(0.0, np.abs(local) - half)))
        else:
            lo, hi = geom_box(env, g)
            outside = np.maximum(0.0, np.maximum(lo[:2] - centre, centre - hi[:2]))
            gap = float(np.linalg.norm(outside))
        radius = min(radius, gap)
    rest = [geom_box(env, g)[1][2] for g in geoms if g not in wall]
    floor = float(max(rest, default=corners.min(axis=0)[2]))
    return centre - origin[:2], radius, floor - float(origin[2])


def _round_gap(low: np.ndarray, high: np.ndarray, centre: np.ndarray, radius: float) -> float:
    """How far a disc (``centre``, ``radius``) is from an xy box (negative: they overlap)."""
    nearest = np.clip(centre, low, high)
    inside = bool(np.all(nearest == centre))
    if inside:
        return -radius - float(np.min(np.minimum(centre - low, high - centre)))
    return float(np.linalg.norm(centre - nearest)) - radius


def drag_out(geo: Any, ref: str, moved: Moved = None) -> Drag | None:
    """The shortest drag (of sixteen directions, 1-8 cm) after which a rim grasp's hand of
    hollow ``ref`` comes down clear of what reaches over it (with ``moved``: once that body
    has moved, a drawer opened), with the closed fingers' hand and the wrist clear all
    along it now and the object running into nothing at its own height; None when a rim
    grasp is clear already or no drag makes one. The hand is turned with its length across
    the way out, else along it (the fingers' end then hooks the wall): across, the 20 cm
    hand reached over a wine bottle's neck beside the bowl in every direction that freed it
    (LIBERO-PRO libero_goal_lan task 3, state 0)."""
    if rim_grasp_at(geo, ref, np.zeros(2), moved=moved) is not None:
        return None
    box = geo.box(ref)
    centre, radius, floor = _inside(geo, ref)
    here, outer = np.array(box.centre[:2]), max(box.size[:2]) / 2
    level = obstacles(geo, ref, box.bottom + 0.005, box.top)
    z = floor + OVER_FLOOR_M
    best: Drag | None = None
    for turn, (front, side) in ((math.pi / 2, FINGERS_HALF_M[::-1]), (0.0, FINGERS_HALF_M)):
        reach = radius - front - WALL_GAP_M
        if reach < 0.0 or math.hypot(reach, side) > radius:
            continue  # no room inside for the closed fingers
        for angle in np.linspace(0.0, 2 * math.pi, 16, endpoint=False):
            found = _drag_along(
                geo, ref, angle, turn, (centre, reach, z, here, outer), level, moved
            )
            if found is not None and (best is None or _length(found) < _length(best) - 1e-9):
                best = found
        if best is not None:
            return best
    return best


def _length(drag: Drag) -> float:
    return float(np.linalg.norm(drag.shift))


def _drag_along(
    geo: Any,
    ref: str,
    angle: float,
    turn: float,
    where: tuple[np.ndarray, float, float, np.ndarray, float],
    level: list[Any],
    moved: Moved,
) -> Drag | None:
    """The shortest drag of ``ref`` towards ``angle`` (the hand turned ``turn`` from it)
    that leaves a rim grasp clear, or None (see :func:`drag_out`)."""
    centre, reach, z, here, outer = where
    box = geo.box(ref)
    d = np.array([math.cos(angle), math.sin(angle)])
    start = centre + d * reach
    yaw = _reachable_yaw(float(angle) + turn, float(start[1]))
    if turn == 0.0:  # closed fingers along the way: of the two turns, the one nearer home
        yaw = min(yaw, yaw + math.pi, key=lambda w: abs(math.remainder(w - HOME_YAW, 2 * math.pi)))
    at = (float(start[0]), float(start[1]), z)
    if not hand_clear(geo, ref, at, yaw, box.top) or not wrist_clear(geo, ref, at):
        return None
    if moved is None and not down_clear(geo.env, geo.frame, at, yaw):
        return None  # the forearm would come down on what stands beside it
    # how far it can go at its own height: a round thing's footprint is its circle,
    # not the box round it (dragged 4 cm towards the robot, the bowl's box corner would
    # touch the wine bottle's foot, 6 cm from its centre)
    free = 0.0
    for far in np.arange(0.005, MAX_DRAG_M + SLIP_M + 1e-9, 0.005):
        if any(
            _round_gap(a, b, here + d * far, outer)
            < min(SLIDE_MARGIN_M, _round_gap(a, b, here, outer) - 1e-4)
            for _, a, b, _ in level
        ):
            break
        free = float(far)
    for distance in np.arange(0.01, MAX_DRAG_M + 1e-9, 0.01):
        if distance > free + 1e-9:
            break
        # the fingers drag further than it must move (SLIP_M), as far as it has room
        end = start + d * (min(distance + SLIP_M, free) + WALL_GAP_M)
        at = (float(end[0]), float(end[1]), z)
        if not hand_clear(geo, ref, at, yaw, box.top) or not wrist_clear(geo, ref, at):
            break
        if rim_grasp_at(geo, ref, d * distance, moved=moved) is not None:
            return Drag(
                (float(start[0]), float(start[1]), z),
                (float(end[0]), float(end[1]), z),
                yaw,
                d * distance,
            )
    return None


def out_of_the_way(geo: Any, drawer: str, shift: np.ndarray) -> tuple[str, Drag] | None:
    """A hollow thing on the table that a rim grasp reaches now but will not once
    ``drawer`` (a region whose joint's body moves by ``shift``, xyz) has opened over it,
    and the drag that leaves it a rim grasp then (the nearest such thing; None if none).
    Opened first, the drawer leaves no way to it: the hand and the wrist come down on the
    drawer's front wherever they take the rim, and with the drawer open the wrist cannot
    reach into the bowl to drag it either (libero_goal task 3 with the cabinet at the near
    end of its placement range)."""
    body = geo.articulation.drawer_body(drawer)
    if body is None:
        return None
    moved = (body, np.asarray(shift, dtype=float))
    handle = geo.articulation.drawer_handle(drawer)
    found: list[tuple[float, str, Drag]] = []
    for ref in geo.catalog.refs("object"):
        box = geo.box(ref)
        if box is None or not geo.hollow(ref) or geo.held_ref() == ref:
            continue
        if handle is not None:
            far = math.dist(box.centre[:2], handle.grasp[:2])
            if far > float(np.linalg.norm(shift)) + 0.25:
                continue
        if rim_grasp_at(geo, ref, np.zeros(2)) is None:
            continue  # not reachable now either: not the drawer's doing
        if rim_grasp_at(geo, ref, np.zeros(2), moved=moved) is not None:
            continue
        drag = drag_out(geo, ref, moved)
        if drag is not None:
            found.append((far if handle is not None else 0.0, ref, drag))
    if not found:
        return None
    _, ref, drag = min(found, key=lambda f: f[0])
    return ref, drag


def drag_segments(planner: Any, drag: Drag, ee: Vec3, above: float, travel: float) -> list[Segment]:
    """Closed fingers down inside a hollow object, dragged along the table, raised out of it
    to ``above`` (``planner`` is the skill planner: its rise to ``travel``).

    The closed hand is the same turned half round, so the drag is made at whichever of the
    two turns the arm can hold from its joints now (``wrist.reached_yaw``): libero_90's
    kitchen (task 7, the bowl 71 cm out beside the cabinet's opening top drawer) wanted
    -1.18 rad with the wrist at +1.57 rad, joint 7 turned to its stop and the arm strayed
    6 cm off its way over the bowl, on all three tries; +1.96 rad, the same drag, is
    within reach."""
    (sx, sy, _), (ex, ey, _) = drag.start, drag.end
    points = [(sx, sy, travel), (sx, sy, above), drag.start, drag.end, (ex, ey, above)]
    yaw = reached_yaw(planner.geo, drag.yaw, points)
    return [
        Segment("grip", "close", close=True, yaw=yaw),
        *planner.rise(ee, travel),
        Segment("move", "over", (sx, sy, travel), yaw=yaw),
        Segment("move", "approach", (sx, sy, above), yaw=yaw),
        Segment("move", "into", drag.start, speed=SLOW, yaw=yaw),
        Segment("move", "drag", drag.end, speed=SLOW, yaw=yaw),
        Segment("move", "out", (ex, ey, above), speed=SLOW, yaw=yaw),
    ]
