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
held now, or turned a quarter about the fingers); the spots searched are a grid over the
region with the body at least ``MARGIN_M`` inside its edges and, given the arm's reach and
the envelope's workspace, the fingers within them. The middle is preferred, as held, else
turned a quarter (the place turns the wrist on the way); then the spot nearest it as held,
else turned. A pan held by its handle has its fingers 22 cm from its body: with the handle
towards the robot's left, the middle of the stove's cook region put the fingers past the
workspace's side (libero_90 task 45), and the nearest spot as held put them 4 mm inside
the arm's guarded reach, at its stretch, where it stopped short and the pan, let go, came
to rest 5 mm inside the region's edge; turned a quarter, the handle towards the robot, the
pan stands in the middle.
This reads the scene, never the instruction.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from worlds.libero.articulation import geom_box
from worlds.libero.control import HOME_YAW
from worlds.libero.geometry import LiberoGeometry
from worlds.libero.segments import FAST, SLOW

__all__ = [
    "GAP_M",
    "IN_SLACK_M",
    "MARGIN_M",
    "TIGHT_FIT_M",
    "TWIN_GAP_M",
    "container_floor",
    "container_place",
    "container_spot",
    "fit_room",
    "region_spot",
    "rests_below",
    "turned_footprint",
    "turned_spot",
]

IN_SLACK_M = 0.01
"""How far below a region's box LIBERO's ``In`` still takes a body to be inside it."""
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


def region_spot(geo: LiberoGeometry, ref: str, target: str) -> np.ndarray | None:
    """The base-frame (x, y) to bring ``ref``'s body over in the region ``target`` (see the
    module docstring), held as it is and anywhere the arm reaches; or None when ``target``
    is not a region with a footprint."""
    found = turned_spot(geo, ref, target)
    return None if found is None else found[0]


def turned_spot(
    geo: LiberoGeometry,
    ref: str,
    target: str,
    grip: np.ndarray | None = None,
    reach: float | Callable[[float], float] = np.inf,
    yaw: float | None = None,
    bounds: tuple[tuple[float, ...], tuple[float, ...]] | None = None,
) -> tuple[np.ndarray, float] | None:
    """(spot, turn): the base-frame (x, y) to bring ``ref``'s body over in the region
    ``target`` and how far (radians) to turn it about the fingers on the way, 0 or a
    quarter turn (see the module docstring); ``grip``: the fingers' xy from the body as it
    is held now, so that spots whose fingers would be further than ``reach`` from the
    robot's base axis are not taken (a distance, or a function giving it for the turn:
    how far the arm reaches depends on the fingers' turn, ``reach.reach_radius``);
    ``yaw``: the fingers' yaw now, so that the quarter turn
    is the one towards ``HOME_YAW`` (the other ran the wrist's last joint past its limit and
    the arm off its line); without it, only as held; ``bounds``: the (low, high) corners of
    where the fingers may go (the envelope's workspace), so that spots that would send
    them outside are not taken either (a pan held by its handle, 22 cm from its body: with
    the body over the middle of the stove's cook region the fingers were 1.9 cm past the
    workspace's side, and the envelope refused the place, libero_90 task 45). None when
    ``target`` is not a region with a footprint."""
    frame = geo.region_frame(target)
    held = geo.box(ref)
    if frame is None or held is None:
        return None
    centre, matrix, half_size = frame
    if min(half_size[:2]) <= MARGIN_M:
        return np.array(centre[:2]), 0.0
    body = np.array(geo.body_position(ref)[:2])
    grip = np.zeros(2) if grip is None else np.asarray(grip, dtype=float)
    _, spots = _grid(centre, matrix, half_size)
    middle = np.linalg.norm(spots - centre[:2], axis=1)
    twins = bool(_twins(geo, ref, target))
    options = []
    turns = (0.0,) if yaw is None else (0.0, _towards_home(yaw))
    for turn in turns:
        c, s_ = np.cos(turn), np.sin(turn)
        rotate = np.array([[c, -s_], [s_, c]])
        half = np.abs(rotate) @ np.array(held.size[:2]) / 2
        shift = rotate @ (np.array(held.centre[:2]) - body)  # the footprint's middle
        fingers = spots + rotate @ grip
        radius = reach(turn) if callable(reach) else reach
        reached = np.hypot(*fingers.T) <= radius
        if bounds is not None:
            low, high = np.asarray(bounds[0][:2]), np.asarray(bounds[1][:2])
            reached &= np.all((fingers >= low) & (fingers <= high), axis=1)
        others = _standing(geo, ref, centre, half_size, half)
        clear = _clearance(spots + shift, half, others)
        options.append((turn, shift, half, others, clear, reached))
    if twins:  # where a second one like it, turned the same way, then has room
        for turn, shift, half, _, clear, reached in options:
            if not reached.any():
                continue  # nothing of the region within reach this way round
            # for each first spot, the best room a second would have at a reachable spot:
            # the smaller of its gap to what stands there and to the first
            middles = spots + shift
            apart = np.abs(middles[:, None, :] - middles[None, reached, :]) - 2 * half
            room = np.minimum(apart.max(axis=2), clear[None, reached]).max(axis=1)
            ok = (clear >= GAP_M) & (room >= TWIN_GAP_M) & reached
            if ok.any():
                return _nearest(spots, middle, ok), turn
    mid = int(np.argmin(middle))
    for turn, _, _, _, clear, reached in options:
        if clear[mid] >= GAP_M and reached[mid]:
            return np.array(centre[:2]), turn
    for turn, _, _, _, clear, reached in options:
        ok = (clear >= GAP_M) & reached
        if ok.any():
            return _nearest(spots, middle, ok), turn
    _, shift, half, others, clear, _ = options[0]
    at_middle = _clearance(np.array([centre[:2] + shift]), half, others)[0]
    if at_middle >= GAP_M:
        return np.array(centre[:2]), 0.0
    best = int(np.argmax(clear))
    return (spots[best] if clear[best] > at_middle else np.array(centre[:2])), 0.0


TIGHT_FIT_M = 0.02
"""Room on the tightest side below which a thing is carried slowly into a container."""


def container_place(
    geo: LiberoGeometry, ref: str, target: str, yaw: float | None = None
) -> tuple[np.ndarray | None, float]:
    """(``container_spot``, the speed to carry ``ref`` there) for a place *in* the region
    ``target``, the fingers turned to ``yaw`` on the way (None: as they are). Into a tight
    fit (a book into a caddy's compartment, 6.5 mm to spare at each end) it is carried
    slowly: carried at speed, a book held 9 mm off its middle turned 7 mm in the fingers as
    the arm stopped, and its end came down on the compartment's wall (libero_90 task 73).
    Not where it would rest below the region (``rests_below``), nor what does not fit the
    region at all (``fit_room`` below 0: it comes down on the walls, not into a fit):
    there the place is as before."""
    turn = 0.0 if yaw is None else yaw - geo.closing_yaw()
    spot = container_spot(geo, ref, target, turn)
    room = fit_room(geo, ref, target, turn)
    tight = room is not None and 0.0 <= room < TIGHT_FIT_M
    slow = tight and not rests_below(geo, ref, target)
    return spot, SLOW if slow else FAST


def container_spot(
    geo: LiberoGeometry, ref: str, target: str, turn: float = 0.0
) -> np.ndarray | None:
    """For a place *in* a container's region (a basket's inside, a caddy's compartment):
    the base-frame (x, y) to bring ``ref``'s body over, held as it is and turned ``turn``
    (radians) about the fingers on the way: where its footprint's middle comes over the
    region's middle (the body kept ``MARGIN_M`` inside the region), unless something
    standing inside the container is in the way there, then the spot nearest that whose
    footprint keeps ``GAP_M`` from it, else the one furthest from it; None when ``target``
    is not a region with a footprint.

    The footprint, not the body: a book's body is the middle of its bottom edge's spine
    side, 1.2 cm from the middle of its pages, and with its body over the middle of the
    desk caddy's compartment (12.4 cm across, the book 11.1 cm long) the book's end came
    down on the compartment's wall and it stood on it (libero_90 task 75). In the way is
    only what stands inside the walls (not the container itself, nor what stands beside
    it) and reaches too high for the held thing to lie on it and stay inside (LIBERO-PRO
    libero_10_task 7: the cream cheese landed on the ketchup standing 15 cm tall in the
    middle of the basket; a box may lie on a box). No room is kept for a twin: a second
    thing is set beside the first when it comes.

    Only what fits the region (``fit_room`` at least 0) has its footprint's middle brought
    over the region's: what does not fit cannot go down between the walls, it rests on
    them, and LIBERO's ``In`` reads only its body, which is then brought over the middle,
    as before (LIBERO-PRO libero_10_task 5: a mug 10.5 by 14 cm with its handle, over the
    caddy's back compartment 5.6 by 12.4 cm, had its body set 1.3 cm off the middle, away
    from the handle; it came down tipped on the walls and the retreating fingers took it
    up with them, out of the compartment; with its body over the middle it rests in)."""
    frame = geo.level_frame(target)
    held = geo.box(ref)
    if frame is None or held is None:
        return None
    centre, matrix, half_size = frame
    if min(half_size[:2]) <= MARGIN_M:
        return np.array(centre[:2])
    shift, half = turned_footprint(geo, ref, turn)
    axes, spots = _grid(centre, matrix, half_size)
    # the body's spot that brings the footprint's middle over the region's, kept inside
    along = axes @ -shift / np.maximum(np.linalg.norm(axes, axis=1) ** 2, 1e-12)
    room = np.maximum(np.asarray(half_size[:2]) - MARGIN_M, 0.0)
    preferred = np.array(centre[:2]) + np.clip(along, -room, room) @ axes
    owner = getattr(geo.catalog.get(target), "parent", None)
    spare = fit_room(geo, ref, target, turn)
    if rests_below(geo, ref, target) or (spare is not None and spare < 0.0):
        preferred = np.array(centre[:2])  # as before: see ``rests_below``, and above
    middle = np.linalg.norm(spots - preferred, axis=1)
    top = centre[2] + float(np.abs(matrix[2]) @ half_size) - float(held.size[2])
    standing = _standing(geo, ref, np.array([*centre[:2], top]), half_size, half, skip=owner)
    others = [
        (m, h)
        for m, h in standing
        if all(abs(float((m - centre[:2]) @ axes[i])) <= half_size[i] for i in (0, 1))
    ]
    at_middle = _clearance(np.array([preferred + shift]), half, others)[0]
    if at_middle >= GAP_M:
        return preferred
    clear = _clearance(spots + shift, half, others)
    ok = clear >= GAP_M
    if ok.any():
        return _nearest(spots, middle, ok)
    best = int(np.argmax(clear))
    return spots[best] if clear[best] > at_middle else preferred


def rests_below(geo: LiberoGeometry, ref: str, target: str) -> bool:
    """Whether ``ref`` standing upright on its container's floor (:func:`container_floor`)
    would have its body below the region's box as LIBERO's ``In`` reads it
    (``SiteObject.in_box``: 1 cm of slack below).

    The desk caddy's back compartment's region starts 2 cm above the caddy's floor: a book
    stood upright on that floor has its body 4 mm too low, and LIBERO takes it to be in the
    compartment only raised. There the place no longer stands it in the slot upright: it is
    leaned onto the slot's lower side wall (``slot_lean``); and where that does not apply,
    the place keeps what it did before (the body over the region's middle, carried at
    speed: the book's end comes down on the end wall and it falls askew across the caddy,
    its body raised, libero_10 task 5 at states 0-9; stood cleanly on the floor it failed
    LIBERO's check, state 1)."""
    frame = geo.level_frame(target)
    held = geo.box(ref)
    floor = container_floor(geo, target)
    if frame is None or held is None or floor is None:
        return False
    centre, matrix, half_size = frame
    lowest = centre[2] - abs(float(matrix[2] @ half_size)) - IN_SLACK_M
    body_up = geo.body_position(ref)[2] - held.bottom
    return floor + body_up < lowest


def container_floor(geo: LiberoGeometry, target: str) -> float | None:
    """The height (base frame) of the floor of the container whose region ``target`` is:
    the top of the highest of the container's collision geoms under the region's middle
    and below it; None when ``target`` is not a region of an object with such a geom."""
    item = geo.catalog.get(target)
    owner = getattr(item, "parent", None)
    frame = geo.level_frame(target)
    if owner is None or frame is None:
        return None
    if owner not in getattr(geo.env, "obj_body_id", {}):
        return None
    centre = frame[0]
    origin = np.asarray(geo.frame.to_world((0.0, 0.0, 0.0)), dtype=float)
    point = np.asarray(centre, dtype=float) + origin
    floor = None
    for geom in geo.collision_geoms(owner):
        low, high = geom_box(geo.env, geom)
        if np.all(low[:2] <= point[:2]) and np.all(point[:2] <= high[:2]) and high[2] <= point[2]:
            floor = float(high[2]) if floor is None else max(floor, float(high[2]))
    return None if floor is None else floor - float(origin[2])


def turned_footprint(geo: LiberoGeometry, ref: str, turn: float) -> tuple[np.ndarray, np.ndarray]:
    """(middle, half size) of the axis-aligned box (base frame xy) around ``ref``'s
    footprint turned ``turn`` (radians) about the vertical: the middle from its body."""
    c, s_ = np.cos(turn), np.sin(turn)
    rotate = np.array([[c, -s_], [s_, c]])
    corners = (geo.footprint(ref) - np.array(geo.body_position(ref)[:2])) @ rotate.T
    low, high = corners.min(axis=0), corners.max(axis=0)
    return (low + high) / 2, (high - low) / 2


def fit_room(geo: LiberoGeometry, ref: str, target: str, turn: float = 0.0) -> float | None:
    """How much room (m) ``ref``, turned ``turn`` about the vertical, leaves on its
    tightest side in the region ``target`` with its footprint's middle over the region's
    (negative: it does not fit); None when ``target`` is not a region with a footprint."""
    frame = geo.level_frame(target)
    if frame is None:
        return None
    _, matrix, half_size = frame
    c, s_ = np.cos(turn), np.sin(turn)
    rotate = np.array([[c, -s_], [s_, c]])
    corners = geo.footprint(ref) @ rotate.T
    room = []
    for i in (0, 1):
        axis = np.asarray(matrix[:2, i], dtype=float)
        axis = axis / max(float(np.linalg.norm(axis)), 1e-12)
        along = corners @ axis
        room.append(float(half_size[i]) - float(along.max() - along.min()) / 2)
    return min(room)


def _towards_home(yaw: float) -> float:
    """The quarter turn from ``yaw`` that ends nearer ``HOME_YAW`` (where the wrist's last
    joint has range left either way). A held thing is turned a quarter only where as held
    it has no room within reach: LIBERO-PRO libero_10_swap task 8's stove is 0.78-0.93 m
    out, where the arm reaches only its near edge, and two pots 14.8 cm long fit side by
    side along that edge only turned."""
    return float(
        min(
            (np.pi / 2, -np.pi / 2),
            key=lambda turn: abs((yaw + turn - HOME_YAW + np.pi) % (2 * np.pi) - np.pi),
        )
    )


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
    could meet: near it across, and reaching above its surface (``skip``: not that one)."""
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


def _grid(
    centre: np.ndarray, matrix: np.ndarray, half_size: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The region's two table-plane axes and ``STEPS`` x ``STEPS`` candidate spots over its
    footprint, ``MARGIN_M`` in from its edges (base-frame xy, one row each)."""
    axes = np.array([matrix[:2, 0], matrix[:2, 1]])
    spans = [np.linspace(-(h - MARGIN_M), h - MARGIN_M, STEPS) for h in half_size[:2]]
    a, b = np.meshgrid(*spans, indexing="ij")
    return axes, centre[:2] + a.reshape(-1, 1) * axes[0] + b.reshape(-1, 1) * axes[1]
