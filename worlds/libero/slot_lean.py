"""Setting a thin thing into a slot it would stand too low in: leaned onto the slot's lower
side wall, so that it rests raised.

LIBERO's ``In`` takes a thing to be in a region when its body position is inside the
region's box (1 cm of slack below). A book's body is on its bottom, 2 mm below its
collision box, and the desk caddy's back compartment's region starts 2 cm above the
caddy's floor: a book stood upright in the slot has its body 3.9 mm too low (measured: a
book stood there by hand, and every upright book the place left there). Lowered with its
body over the slot's middle, the book's end came down on the slot's end wall, was pushed
up into the palm and fell askew across the caddy when let go; where it fell decided the
outcome (LIBERO-PRO libero_10_swap task 5, state 2: its body came to rest 1.2 cm past the
region's side, and the passes of states 0-1 came to rest tilted 60-66 degrees, their
bodies 10 cm up).

A book leaning in the slot, its bottom on the floor against the far side wall and its face
on the top edge of the lower side wall (the caddy's divider, 8.5 cm over the floor; the
far wall is 15 cm), rests there (its middle past its bottom edge), its body raised by
about half its thickness times the sine of the lean: at 19-21 degrees it is 1.2-1.7 mm
inside LIBERO's box (measured: stood there by hand, and set there by this place). So the
fingers, turned across the slot, are leaned towards the lower wall :data:`SHORT_RAD` less
than the lean it rests at, the thing is carried over the slot, set down with its bottom
:data:`GAP_M` from the far wall and on the floor, and let go there. Let go in the air (a
few millimetres to 2.4 cm up), the loosening fingers were a pivot at its top, it swung
towards hanging plumb, its bottom away from the far wall, and it came to rest leaned less
(15.7-18 degrees, its body 0.9 mm inside, or it stood back up: held at 20 degrees 4 mm
from the wall, state 2); set down on the floor against the wall, it cannot swing.

Everything is read from the simulator's collision geoms and the region's site, never a
task's goal; where the lean would not raise the body into the region, or the slot has no
lower side wall to lean on, nothing here applies and the place is as before.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy.spatial import ConvexHull, QhullError

from worlds.libero.control import Vec3, lean_matrix
from worlds.libero.placing import about_z
from worlds.libero.segments import SLOW, Segment
from worlds.libero.spots import IN_SLACK_M, container_floor, rests_below

if TYPE_CHECKING:
    from worlds.libero.skills import SkillPlanner

__all__ = ["SlotWalls", "lean_into", "rest_lean", "slot_walls"]

SHORT_RAD = math.radians(1.5)
"""How much less than its resting lean the thing is held when set down: its face then
stays about 1 mm off the lower wall's edge (0.5 degree short, with :data:`GAP_M`, the
face met the edge 7 mm over the floor and the lower stopped there)."""
MAX_LEAN_RAD = math.radians(30)
"""The most lean looked at (held at 30 degrees over the caddy, the arm still followed)."""
GAP_M = 0.001
"""How far from the far wall the thing's bottom is brought."""
CLEAR_M = -0.001
"""Where its lowest point is sent, over the floor: 1 mm into it, so that the lower, done
within 2 mm, sets it down (sent 1 mm over, it was let go 2.3 mm up, swung, and rested at
18.7 degrees instead of 19.8)."""
RISE_MARGIN_M = 0.001
"""How far inside LIBERO's box the body must come to rest for the lean to be taken."""
PROBE_M = 0.02
"""How far outside a region's side a wall of its container is looked for."""
STEP_RAD = math.radians(0.25)
"""The steps the resting lean is searched in."""


@dataclass(frozen=True)
class SlotWalls:
    """A slot's floor and side walls (base frame), along ``toward``: the horizontal unit
    vector across the slot towards its lower side wall."""

    floor: float
    toward: tuple[float, float]
    low_face: float
    """Where (along ``toward``) the lower wall's inner face is."""
    low_top: float
    far_face: float
    far_top: float


def slot_walls(geo: object, target: str) -> SlotWalls | None:
    """The side walls along the narrow side of the region ``target`` (its container's
    collision geoms that border each long side within :data:`PROBE_M`, along its middle,
    and reach above its bottom) and its floor; None when either wall or the floor is
    missing, or the walls stand as high."""
    axes = geo.region_axes(target)  # type: ignore[attr-defined]
    frame = geo.level_frame(target)  # type: ignore[attr-defined]
    item = geo.catalog.get(target)  # type: ignore[attr-defined]
    floor = container_floor(geo, target)  # type: ignore[arg-type]
    if axes is None or frame is None or item is None or item.parent is None or floor is None:
        return None
    (narrow, narrow_yaw), (long, _) = axes
    n = np.array([math.cos(narrow_yaw), math.sin(narrow_yaw)])
    along = np.array([-n[1], n[0]])
    centre, matrix, half = frame
    middle = np.asarray(centre[:2], dtype=float)
    bottom = float(centre[2]) - abs(float(matrix[2] @ half))
    origin = np.asarray(geo.frame.to_world((0.0, 0.0, 0.0)), dtype=float)  # type: ignore[attr-defined]
    walls: dict[float, tuple[float, float]] = {}
    for sign in (-1.0, 1.0):
        side = float(middle @ n) + sign * narrow / 2
        for geom in geo.collision_geoms(item.parent):  # type: ignore[attr-defined]
            corners = geo.geom_corners(geom) - origin  # type: ignore[attr-defined]
            a, b = corners[:, :2] @ n, corners[:, :2] @ along
            if float(corners[:, 2].max()) <= bottom:
                continue  # the floor
            if abs(float((b.max() + b.min()) / 2 - middle @ along)) > (np.ptp(b) + 0.3 * long) / 2:
                continue  # an end wall, off the slot's middle
            inner = float(a.min() if sign > 0 else a.max())
            if not -0.005 <= sign * (inner - side) <= PROBE_M:
                continue
            top = float(corners[:, 2].max())
            if sign not in walls or top > walls[sign][1]:
                walls[sign] = (inner, top)
    if len(walls) < 2 or abs(walls[1.0][1] - walls[-1.0][1]) < 0.01:
        return None
    low = min(walls, key=lambda s: walls[s][1])
    toward = n * low
    return SlotWalls(
        floor=floor,
        toward=(float(toward[0]), float(toward[1])),
        low_face=walls[low][0] * low,
        low_top=walls[low][1],
        far_face=walls[-low][0] * low,
        far_top=walls[-low][1],
    )


def _outside(points: np.ndarray, at: np.ndarray) -> float:
    """How far (the largest of the edges' outward distances) the 2-D point ``at`` lies
    outside the convex hull of ``points``; negative inside (infinite for no hull)."""
    try:
        hull = ConvexHull(np.asarray(points, dtype=float))
    except QhullError:  # fewer than three points not on one line
        return math.inf
    return float(np.max(hull.equations[:, :2] @ np.asarray(at, dtype=float) + hull.equations[:, 2]))


def _leaned(points: np.ndarray, walls: SlotWalls, turn: float, lean: float) -> np.ndarray:
    """``points`` (from the fingers, base frame) turned ``turn`` about the vertical and
    leaned ``lean`` towards the lower wall, as (along ``toward``, along the slot, z)."""
    u = np.array([*walls.toward, 0.0])
    axis = np.cross([0.0, 0.0, 1.0], u)
    moved = points @ (lean_matrix(axis * lean) @ about_z(turn)).T
    return np.column_stack([moved @ u, moved @ np.cross([0.0, 0.0, 1.0], u), moved[:, 2]])


def rest_lean(
    walls: SlotWalls, points: np.ndarray, body: np.ndarray, turn: float
) -> tuple[float, float] | None:
    """(lean, body height) of the thing whose collision geoms' corners are ``points`` and
    body ``body`` (from the fingers), turned ``turn``, at rest in the slot: its bottom on
    the floor against the far wall, leaned towards the lower wall as far as the wall's top
    edge lets it; None when it would not rest there (leaned so little that its middle
    stays over its bottom edge: it stands back up; or more than :data:`MAX_LEAN_RAD`)."""
    edge = np.array([walls.low_face, walls.low_top])
    best = None
    for k in range(1, int(MAX_LEAN_RAD / STEP_RAD) + 2):
        lean = k * STEP_RAD
        p = _leaned(points, walls, turn, lean)
        shift = np.array([walls.far_face - p[:, 0].min(), walls.floor - p[:, 2].min()])
        if _outside(p[:, [0, 2]] + shift, edge) <= 0.0:
            break
        best = (lean, p, shift)
    else:
        return None  # it would lean further than the hand is leaned: over the wall
    if best is None:
        return None
    lean, p, shift = best
    pivot = p[int(np.argmin(p[:, 2]))]  # the bottom edge on the lower wall's side
    if float(p[:, 0].mean()) <= float(pivot[0]):
        return None
    b = _leaned(body[None, :], walls, turn, lean)[0]
    return lean, float(b[2] + shift[1])


def lean_into(
    planner: SkillPlanner, ref: str, target: str, yaw: float, ee: Vec3
) -> list[Segment] | None:
    """The segments that set the held ``ref`` leaned into the slot ``target`` with the
    fingers turned to ``yaw`` (see the module docstring); None where that does not apply:
    ``ref`` would not stand too low in it upright, the slot has no lower side wall, or
    leaned on it the body would still not be inside the region."""
    geo = planner.geo
    if not rests_below(geo, ref, target):
        return None
    walls = slot_walls(geo, target)
    frame = geo.level_frame(target)
    if walls is None or frame is None:
        return None
    hand = np.asarray(ee, dtype=float)
    points = (
        np.vstack(
            [
                np.array([geo.frame.from_world(c) for c in geo.geom_corners(g)])
                for g in geo.collision_geoms(ref)
            ]
        )
        - hand
    )
    body = np.asarray(geo.body_position(ref), dtype=float) - hand
    turn = yaw - geo.closing_yaw()
    rest = rest_lean(walls, points, body, turn)
    centre, matrix, half = frame
    lowest = float(centre[2]) - abs(float(matrix[2] @ half)) - IN_SLACK_M
    if rest is None or rest[1] < lowest + RISE_MARGIN_M:
        return None
    lean = rest[0] - SHORT_RAD
    p = _leaned(points, walls, turn, lean)
    u = np.array(walls.toward)
    v = np.array([-u[1], u[0]])
    a = walls.far_face + GAP_M - float(p[:, 0].min())
    b = float(np.asarray(centre[:2]) @ v) - float(p[:, 1].min() + p[:, 1].max()) / 2
    z = walls.floor + CLEAR_M - float(p[:, 2].min())
    edge = np.array([walls.low_face, walls.low_top])
    high = walls.low_top - float(p[:, 2].min())  # its lowest point at the wall's top
    while _outside(p[:, [0, 2]] + np.array([a, z]), edge) < 0.0 and z < high:
        z += 0.001  # short of its rest its face is off the wall's edge; else raised off it
    x, y = (u * a + v * b).tolist()
    axis = np.cross([0.0, 0.0, 1.0], [*u, 0.0]) * lean
    tilt = (float(axis[0]), float(axis[1]), float(axis[2]))
    carry = planner.travel_height(ee[2], z + 0.05)
    return [
        *planner.rise(ee, carry),
        Segment("twist", "turn", yaw=yaw),
        Segment("move", "transport", (x, y, carry), SLOW, yaw=yaw, lean=tilt),
        Segment("move", "lower", (x, y, z), SLOW, yaw=yaw, lean=tilt, tolerance=0.002),
        Segment("grip", "release", close=False),
        Segment("move", "retreat", (x, y, carry), speed=SLOW),
        Segment("twist", "straighten", yaw=yaw),
    ]
