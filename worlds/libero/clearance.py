"""What stands around a thing on the table, from the simulator's collision geoms (base
frame, privileged like every skill here): whether sliding it straight somewhere runs it
into something, the free spot of a region nearest its middle, and the way out from under
something that reaches over it.

libero_goal task 5 ("push the plate to the front of the stove", state 0): the straight line
from the plate to the region runs over the cream cheese box; the plate's rim rode up on it
and tipped over the fingers, and at the region's middle the plate would lie on the box's
edge anyway. libero_goal task 3 (states 3-4): the top drawer, opened, reaches over the bowl,
which lifted straight up met the drawer's bottom and was torn from the fingers.
LIBERO-PRO libero_10_swap task 0 (state 0): the alphabet soup stands 0.30 m from the robot's
base; lifted straight up there, the elbow reached its joint limit and the arm drifted
towards its own base.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from worlds.libero.articulation import geom_box

__all__ = [
    "TAKE_LOAD_STEPS",
    "Footprint",
    "Moved",
    "away_from_base",
    "box_gap",
    "free_spot",
    "hand_clear",
    "in_the_way",
    "obstacles",
    "out_from_under",
    "way_from_under",
]

CELL_M = 0.01
MARGIN_M = 0.006
"""Kept between a thing's box and anything else."""
SLIDE_MARGIN_M = 0.003
"""Kept by a slide out from under something: a round bowl's box is larger than the bowl."""
INSET_M = 0.006
"""How far inside a target region's edges a thing's centre is brought (LIBERO's region
predicates take its body position strictly inside them)."""

FOLDED_REACH_M = 0.36
"""Nearer the robot's base than this (horizontally, base frame), the Panda pointing down
low over the table has its elbow folded close to its limit (joint 4, -3.07 rad): at the
soup 0.30 m out (LIBERO-PRO libero_10_swap task 0) the grasp came down with 0.07 rad left,
and the lift straight up ran the elbow into its limit 6 mm up, the gripper drifting 2.5 cm
towards the base; the place's rise from there came within 2 cm of the base's keep-out zone
and was stopped, three times. Drawn out to this reach first, the elbow unfolds."""

WRIST_XY_M = ((-0.04, 0.065), (-0.06, 0.06))
"""Where the Panda's wrist (link 6's knuckle) is, 12-20 cm above the grip site with the hand
pointing down in front of the robot: x and y ranges (base axes) about the site (measured:
link 6's collision box reaches 6.1 cm ahead of the site from 13 cm above it; its part
behind rises towards the elbow). libero_goal task 3: a rim grasp whose hand had room came
down with the wrist on the opened drawer's front (``robot0_link6_collision`` against
``wooden_cabinet_1_g11``), stalled 4 cm over the rim."""

Footprint = tuple[str, np.ndarray, np.ndarray, float]
"""A name, the (low, high) xy corners (base frame) of something on the table, and its
bottom's height."""


Moved = tuple[int, Any] | None
"""A body (id) and the xyz shift to treat its geoms (and those of the bodies below it) as
moved by: a drawer as it will stand once opened."""


def obstacles(
    geo: Any, ref: str, z_low: float, z_high: float, moved: Moved = None
) -> list[Footprint]:
    """The xy boxes (base frame) of the scene's collision geoms that reach into the height
    band ``z_low``..``z_high`` (base frame), but the robot's and ``ref``'s own; with
    ``moved``, that body's where the shift takes it."""
    env = geo.env
    model = env.sim.model
    own = set(geo.collision_geoms(ref))
    shifted = _below(model, moved[0]) if moved is not None else set()
    origin = np.array(geo.frame.to_world((0.0, 0.0, 0.0)))
    found: list[Footprint] = []
    for geom in range(model.ngeom):
        if geom in own or (model.geom_contype[geom] == 0 and model.geom_conaffinity[geom] == 0):
            continue
        body = model.body(int(model.geom_bodyid[geom])).name
        if body.startswith(("robot0_", "gripper0_", "mount0_")) or body == "world":
            continue
        low, high = geom_box(env, geom)
        low, high = low - origin, high - origin
        if int(model.geom_bodyid[geom]) in shifted:
            low, high = low + np.asarray(moved[1]), high + np.asarray(moved[1])  # type: ignore[index]
        if high[2] <= z_low or low[2] >= z_high:
            continue
        found.append((model.geom(geom).name or body, low[:2], high[:2], float(low[2])))
    return found


def _below(model: Any, root: int) -> set[int]:
    """A body and every body below it."""
    bodies = {root}
    for body in range(root + 1, model.nbody):
        if int(model.body_parentid[body]) in bodies:
            bodies.add(body)
    return bodies


def _occupied(xs: np.ndarray, ys: np.ndarray, half: np.ndarray, things: list[Footprint]) -> Any:
    grid = np.zeros((len(xs), len(ys)), dtype=bool)
    for _, low, high, _ in things:
        lo, hi = low - half - MARGIN_M, high + half + MARGIN_M
        grid |= ((xs >= lo[0]) & (xs <= hi[0]))[:, None] & ((ys >= lo[1]) & (ys <= hi[1]))[None, :]
    return grid


def free_spot(
    region: tuple[np.ndarray, np.ndarray], half: np.ndarray, things: list[Footprint]
) -> np.ndarray | None:
    """The point (xy, base frame) nearest the middle of ``region`` ((low, high) xy corners),
    at least :data:`INSET_M` inside its edges, where a thing's box (``half``: half its xy
    size) overlaps none of ``things``; None if there is none (searched every centimetre)."""
    xs = np.arange(region[0][0] + INSET_M, region[1][0] - INSET_M + 1e-9, CELL_M / 2)
    ys = np.arange(region[0][1] + INSET_M, region[1][1] - INSET_M + 1e-9, CELL_M / 2)
    if not len(xs) or not len(ys):
        return None
    grid = _occupied(xs, ys, half, things)
    cells = np.argwhere(~grid)
    if not len(cells):
        return None
    middle = (region[0] + region[1]) / 2
    points = np.stack([xs[cells[:, 0]], ys[cells[:, 1]]], axis=1)
    return points[int(np.argmin(np.hypot(*(points - middle).T)))]


def in_the_way(
    start: np.ndarray, end: np.ndarray, half: np.ndarray, things: list[Footprint]
) -> str | None:
    """The first of ``things`` a box (``half``) slid straight from ``start`` to ``end`` (xy,
    base frame) would run into, or None (what it already stands close to at ``start``
    counts only if the slide comes nearer)."""
    low, high = start - half, start + half
    steps = max(2, int(np.linalg.norm(end - start) / 0.005) + 1)
    for t in np.linspace(0.0, 1.0, steps)[1:]:
        lo, hi = low + (end - start) * t, high + (end - start) * t
        for name, a, b, _ in things:
            if box_gap(a, b, lo, hi) < min(MARGIN_M, box_gap(a, b, low, high) - 1e-4):
                return name
    return None


def out_from_under(
    geo: Any, ref: str, lift_to: float, shift: Any = (0.0, 0.0)
) -> np.ndarray | None:
    """The shortest slide (xy, base frame) along the table that takes ``ref`` from under
    whatever reaches over it below ``lift_to`` (an opened drawer over a bowl), swept free of
    everything at its own height; None when nothing reaches over it, or no slide of at most
    12 cm in one of sixteen directions clears it. Lifted straight up, libero_goal task 3's bowl
    (states 3-4) met the bottom of the top drawer just opened over it and was torn from the
    fingers. ``shift`` (xy): as if ``ref`` stood that far from where it is (dragged there
    first, ``dragging.drag_out``)."""
    found = way_from_under(geo, ref, lift_to, shift)
    return None if found is None or found[0] > 0.0 else found[1]


def way_from_under(
    geo: Any, ref: str, lift_to: float, shift: Any = (0.0, 0.0)
) -> tuple[float, np.ndarray] | None:
    """(how far to raise ``ref`` first, the slide at that height) that takes it from under
    whatever reaches over it below ``lift_to``: along the table (raised 0) when a slide
    there clears it (:func:`out_from_under`), else raised to :data:`UNDER_GAP_M` below the
    lowest thing over it, clear of what stands beside it lower than that; None when nothing
    reaches over it or neither way clears it. libero_goal task 3 (state 1): the bowl stood
    1 cm under the opened drawer's front corner between the wine bottle, the plate and the
    cream cheese 2 cm away, so no slide along the table cleared it; lifted straight up it
    caught the drawer's bottom and pushed the drawer 1 cm back in, to 13.9 cm of LIBERO's
    14 cm for open, and the place then found the drawer closed.

    Only what starts above ``ref``'s top reaches over it: a thing standing beside it on the
    table and taller than it is in the way of a slide (``level``), not over it. libero_goal
    task 3, state 8: the wine bottle's base stood inside the round bowl's square box, under
    the drawer's front; counted as over the bowl, the rise under the lowest thing over it
    came out negative, no way out was found, and the bowl lifted straight up scraped the
    opened drawer's front from 14.65 to 13.97 cm open (LIBERO's Open wants 14)."""
    box = geo.box(ref)
    low = np.array(box.centre[:2]) - np.array(box.size[:2]) / 2 + np.asarray(shift)
    high = np.array(box.centre[:2]) + np.array(box.size[:2]) / 2 + np.asarray(shift)
    over = [
        (name, lo, hi, bottom)
        for name, lo, hi, bottom in obstacles(geo, ref, box.top + 0.005, lift_to)
        if np.all(lo < high) and np.all(hi > low) and bottom > box.top
    ]
    if not over:
        return None
    level = obstacles(geo, ref, box.bottom + 0.005, box.top)
    best = _slide_from_under(low, high, over, level)
    if best is not None:
        return 0.0, best
    # raised as far as the lowest thing over it allows, above what stands low beside it
    rise = min(bottom for *_, bottom in over) - UNDER_GAP_M - box.top
    if rise < 0.01:
        return None
    level = obstacles(geo, ref, box.bottom + rise + 0.005, box.top + rise)
    best = _slide_from_under(low, high, over, level)
    return None if best is None else (rise, best)


UNDER_GAP_M = 0.02
"""Kept between a thing raised under an overhang and the overhang's bottom."""


def _slide_from_under(
    low: np.ndarray, high: np.ndarray, over: list[Footprint], level: list[Footprint]
) -> np.ndarray | None:
    """The shortest slide (of at most 12 cm, in one of sixteen directions) of the xy box
    ``low``..``high`` clear of everything in ``over``, swept free of ``level``."""
    best: np.ndarray | None = None
    for angle in np.linspace(0.0, 2 * math.pi, 16, endpoint=False):
        direction = np.array([math.cos(angle), math.sin(angle)])
        for distance in np.arange(0.01, 0.125, 0.01):
            shift = direction * distance
            lo, hi = low + shift, high + shift
            # into something on the way (what it already stands close to only if nearer)
            if any(
                box_gap(a, b, lo, hi) < min(SLIDE_MARGIN_M, box_gap(a, b, low, high) - 1e-4)
                for _, a, b, _ in level
            ):
                break
            if all(box_gap(a, b, lo, hi) >= SLIDE_MARGIN_M for _, a, b, _ in over):
                if best is None or distance < float(np.linalg.norm(best)) - 1e-9:
                    best = shift
                break
    return best


TAKE_LOAD_STEPS = 25
"""How long the arm holds still after closing on a thing near the robot's base before
drawing it out: folded there, it took 20-25 controller steps to take up the load (its
shoulder torque rising from 6 to 16 N m) and a move begun at once gained nothing in 12
steps, stalled (LIBERO-PRO libero_10_swap task 0, the alphabet soup 0.30 m out)."""


def away_from_base(geo: Any, ref: str, at: Any) -> np.ndarray | None:
    """The slide (xy, base frame) that draws ``ref``, held by the fingers at ``at`` (base
    frame), straight away from the robot's base until the fingers are
    :data:`FOLDED_REACH_M` from it, before it is lifted; None when they are already that far
    out, or the slide would run it into something standing at its height."""
    reach = math.hypot(float(at[0]), float(at[1]))
    if reach >= FOLDED_REACH_M or reach < 1e-6:
        return None
    shift = np.array([float(at[0]), float(at[1])]) * (FOLDED_REACH_M / reach - 1.0)
    box = geo.box(ref)
    half = np.array(box.size[:2]) / 2
    level = obstacles(geo, ref, box.bottom + 0.005, box.top + 0.02)
    if in_the_way(np.array(box.centre[:2]), np.array(box.centre[:2]) + shift, half, level):
        return None
    return shift


def box_gap(a: np.ndarray, b: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> float:
    """How far apart two xy boxes are (negative: they overlap)."""
    return float(np.max(np.maximum(a - hi, lo - b)))


def hand_clear(
    geo: Any,
    ref: str,
    point: Any,
    yaw: float,
    top: float,
    moved: Moved = None,
    *,
    wrist: bool = True,
) -> bool:
    """Whether the Panda's hand, pointing down with its fingers' tips at ``point`` (base
    frame) and closing along ``yaw``, comes down there free of anything reaching over
    ``ref`` (whose top is ``top``): the hand is 20 cm long along the closing direction and
    6 cm across, from 3 cm above the tips up to the travel height. Only things whose bottom
    is above the object's top count: beside it, the fingers' own room check decides.
    With ``wrist``, the wrist above the hand too, where it is in the arm's usual posture
    (:data:`WRIST_XY_M`); without, the hand alone (the arm's links are then checked in the
    posture it will come down in: ``reach.clear_posture``)."""
    x, y, z = (float(v) for v in point)
    u = np.array([math.cos(yaw), math.sin(yaw)])
    over = [f for f in obstacles(geo, ref, top + 0.005, z + 0.25, moved) if f[3] > top + 0.005]
    for along in np.linspace(-0.09, 0.09, 7):
        cx, cy = x + u[0] * along, y + u[1] * along
        lo, hi = np.array([cx - 0.03, cy - 0.03]), np.array([cx + 0.03, cy + 0.03])
        if any(box_gap(a, b, lo, hi) < 0.0 for _, a, b, _ in over):
            return False
    if not wrist:
        return True
    # and the wrist above the hand, which sticks out ahead of it (away from the robot)
    (x0, x1), (y0, y1) = WRIST_XY_M
    lo, hi = np.array([x + x0, y + y0]), np.array([x + x1, y + y1])
    return all(box_gap(a, b, lo, hi) >= 0.0 for _, a, b, bottom in over if bottom < z + 0.2)
