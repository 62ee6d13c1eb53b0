"""Putting a held thing into a covered compartment: a region with a surface over it (a
shelf unit's lower layers, a cubby), which a place lowered from above cannot reach (it
lands on the cover).

libero_90 tasks 40 and 42 ("put the frying pan on / under the cabinet shelf",
KITCHEN_SCENE9): the pan was lowered from above onto the shelf unit's roof, 13.5 cm over
its board (the layer under the board is 8.9 cm high). The thing is now carried in
sideways through the compartment's open side, level, just above its floor, the hand
staying outside where it is taller than the gap (held by a handle that faces out, as a
mug goes into the microwave: :func:`worlds.libero.through.place_through`), set down,
let go, and the hand withdrawn the way it came. Where the held thing alone is taller than
the gap, or no depth puts it inside the region with the hand outside, the place is
refused naming the gap and the size.

Everything is read from the simulator's collision geoms and the region's site (what
LIBERO's ``In`` reads: the body position inside the site's box, 1 cm of slack below),
never a task's goal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from worlds.libero.clearance import box_gap, obstacles
from worlds.libero.control import HOME_YAW, Vec3
from worlds.libero.door_skills import HAND_ABOVE_M, HAND_LONG_M, HAND_THICK_M, HAND_TOP_M
from worlds.libero.doors import as_point
from worlds.libero.flat_in import flat_into
from worlds.libero.oriented import oriented_blocked
from worlds.libero.segments import SLOW, Plan, Refusal, Segment
from worlds.libero.sideways import side_into
from worlds.libero.through import (
    INSERT,
    floor_under,
    handle_grasp,
    on_handle,
    opening,
    place_through,
)
from worlds.libero.wrist import TURN_STEPS, hand_yaw, turn_held

if TYPE_CHECKING:
    from worlds.libero.skills import SkillPlanner

__all__ = ["Compartment", "by_handle", "carry_in", "compartment", "place_into", "rests"]

TALL_M = 0.30
"""A cover higher than this over a region's floor leaves room to come down from above."""
PROBE_M = 0.04
"""How far past a region's side a wall of its fixture is looked for."""
LIFT_M = 0.012
"""How high over the floor the thing's bottom is carried in."""
HIGH_LIFT_M = 0.025
"""And at most this high where the gap leaves room and the hand stays outside: held by its
handle 1.2 cm over a shelf board, a pan sagged on the way in, caught the board's front edge
and fell out of the fingers (libero_90 task 40, state 2)."""
SET_M = 0.004
"""And where it is let go."""
ROOF_MARGIN_M = 0.006
"""Kept between the top of what is carried in and the cover's bottom."""
HAND_MARGIN_M = 0.008
"""Kept between a hand that stays outside and the opening's plane."""
SETTLE_STEPS = 30
"""Controller steps the open hand waits before it leaves (a pan let go by its handle rocks
back onto its bottom)."""
SLICE_M = 0.05
"""How long the slices of a held thing checked for room one by one are, along the way in."""
INSET_M = 0.008
"""How far inside the region's sides the thing's body is set down."""


@dataclass(frozen=True)
class Compartment:
    """A covered region's floor and cover heights and its open side (base frame)."""

    floor: float
    ceiling: float
    cover: str
    """The name of the geom the ceiling is the bottom of."""
    inward: tuple[float, float]
    """Unit xy vector into the compartment through its open side."""
    plane: float
    """Where (along ``inward``) the cover's outer edge is: a hand taller than the gap
    stays short of it."""

    @property
    def gap(self) -> float:
        return self.ceiling - self.floor


def compartment(geo: object, target: str, ref: str) -> Compartment | None:
    """The compartment ``target`` (a fixture's region, not a drawer's, not a marked area
    of the table) is, when a part of its own fixture lies over its middle lower than
    :data:`TALL_M` above its floor and one of its sides (the one facing the robot's base
    most, of those with no wall of its own) is open; else None. Only the fixture's own
    parts cover it: a mug standing on a plate over a marked area of the table made that
    area a compartment, and the other mug was then grasped by its handle and missed
    (libero_10 task 4, state 1)."""
    item = geo.catalog.get(target)  # type: ignore[attr-defined]
    if item is None or item.kind != "region" or item.drawer or "table_area" in item.tags:
        return None
    owner = geo.catalog.get(item.parent) if item.parent else None  # type: ignore[attr-defined]
    region = geo.box(target)  # type: ignore[attr-defined]
    if region is None or owner is None or owner.kind != "fixture":
        return None
    model = geo.env.sim.model  # type: ignore[attr-defined]
    own = {
        model.geom(g).name or model.body(int(model.geom_bodyid[g])).name
        for g in geo.collision_geoms(owner.ref)  # type: ignore[attr-defined]
    }
    floor = floor_under(geo, region, ref)  # type: ignore[arg-type]
    centre = np.array(region.centre[:2])
    half = np.array(region.size[:2]) / 2
    core_lo, core_hi = centre - 0.3 * half, centre + 0.3 * half
    over = [
        f
        for f in obstacles(geo, ref, floor + 0.01, floor + TALL_M)
        if f[0] in own and f[3] > floor + 0.01 and box_gap(f[1], f[2], core_lo, core_hi) < 0.0
    ]
    if not over:
        return None
    cover = min(over, key=lambda f: f[3])
    ceiling = cover[3]
    level = obstacles(geo, ref, floor + 0.015, ceiling - 0.01)
    sides = []
    for axis in (0, 1):
        for sign in (-1.0, 1.0):
            d = np.zeros(2)
            d[axis] = sign
            lo, hi = centre - 0.6 * half, centre + 0.6 * half
            edge = centre[axis] + sign * half[axis]
            lo[axis], hi[axis] = min(edge, edge + sign * PROBE_M), max(edge, edge + sign * PROBE_M)
            if any(box_gap(a, b, lo, hi) < 0.0 for _, a, b, _ in level):
                continue  # a wall of it (or something standing there)
            sides.append((float(-d @ centre), d))
    if not sides:
        return None
    _, out = max(sides, key=lambda s: s[0])
    inward = -out
    # the cover's outer edge along the way in (its lowest extent along ``inward``)
    covers = [f for f in over if f[3] < ceiling + 0.05]
    plane = min(float(min(a @ inward, b @ inward)) for _, a, b, _ in covers)
    return Compartment(floor, ceiling, cover[0], (float(inward[0]), float(inward[1])), plane)


def place_into(
    planner: SkillPlanner, ref: str, target: str, room: Compartment, ee: Vec3
) -> list[Segment] | str:
    """Carry the held ``ref`` level into the compartment ``target`` through its open side,
    its bottom :data:`LIFT_M` over the floor, set it down and let go, and withdraw the
    hand the way it came; the hand goes in only where it fits under the cover, else it
    stays short of the cover's edge (the thing turned by the wrist first so that the hand
    trails). Or why not: the gap and the size that does not fit."""
    geo = planner.geo
    obj, region = geo.box(ref), geo.box(target)
    assert obj is not None and region is not None
    u = np.array(room.inward)
    v = np.array([-u[1], u[0]])
    body = np.array(geo.body_position(ref))
    pieces = [
        np.array([geo.frame.from_world(c) for c in geo.geom_corners(g)]) - body
        for g in geo.collision_geoms(ref)
    ]
    rel = np.vstack(pieces)
    offset = np.array(ee) - body
    height = float(rel[:, 2].max() - rel[:, 2].min())
    carry = planner.travel_height(ee[2])
    lift = float(rel[:, 2].min())
    hang = ee[2] - obj.bottom
    z_in = room.floor + LIFT_M + hang
    hand_top = z_in + HAND_TOP_M
    hand_fits = hand_top + ROOF_MARGIN_M < room.ceiling
    closing = geo.closing_yaw()
    twists: list[Segment] = []

    def hand_reach(turn: float) -> float:
        """How far along ``u`` the hand's box reaches past the gripper, turned so."""
        c = math.cos(closing + turn)
        s = math.sin(closing + turn)
        along = abs(c * u[0] + s * u[1])
        return HAND_LONG_M * along + HAND_THICK_M * math.sqrt(max(0.0, 1 - along * along))

    front = float(np.max(rel[:, :2] @ u))
    if not hand_fits and float(offset[:2] @ u) + hand_reach(0.0) > front - 0.03:
        # the hand is over the thing or ahead of it: turned to trail behind it
        if np.hypot(*offset[:2]) < 0.03:
            return (
                f"{ref} stands {height:.3f} m tall, held from above; the hand on it "
                f"({hand_top - room.floor:.3f} m over the floor) does not fit the "
                f"{room.gap:.3f} m gap under {room.cover} over {target}"
            )
        want = math.atan2(-u[1], -u[0]) - math.atan2(offset[1], offset[0])
        want = (want + math.pi) % (2 * math.pi) - math.pi
        turn = turn_held(geo, (ee[0], ee[1], carry), want)
        if turn is None:
            return f"the wrist cannot turn {ref} so that the hand trails it into {target}"
        c, s = math.cos(turn), math.sin(turn)
        spin = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
        offset, rel = spin @ offset, rel @ spin.T
        pieces = [p @ spin.T for p in pieces]
        yaw = hand_yaw(geo)
        twists = [
            Segment("twist", "turn", yaw=yaw + turn * k / TURN_STEPS)
            for k in range(1, TURN_STEPS + 1)
        ]
        closing += turn
        front = float(np.max(rel[:, :2] @ u))
    hand_u = float(offset[:2] @ u)
    centre = np.array(region.centre[:2])
    half = np.array(region.size[:2]) / 2
    r_low = float(centre @ u) - float(np.abs(u) @ half) + INSET_M
    r_high = float(centre @ u) + float(np.abs(u) @ half) - INSET_M
    r_side = float(np.abs(v) @ half) - INSET_M
    deepest = r_high if hand_fits else room.plane - HAND_MARGIN_M - hand_reach(0.0) - hand_u
    c_u, c_v = float(centre @ u), float(centre @ v)

    def at(a: float, b: float) -> np.ndarray:
        return u * a + v * b

    # the thing in slices along the way in (a pan's handle, outside, stands higher than
    # its pan, under the cover, held tilted by the handle): one box each
    slices: dict[int, list[np.ndarray]] = {}
    for piece in pieces:
        slices.setdefault(int(float(piece[:, :2].mean(axis=0) @ u) // SLICE_M), []).append(piece)
    boxes = [(np.vstack(p).min(axis=0), np.vstack(p).max(axis=0)) for p in slices.values()]

    def tallest(a: float) -> float:
        """The height over the thing's bottom of its highest slice under the cover with
        its body at depth ``a``."""
        under = [
            hi[2] - lift
            for lo, hi in boxes
            if a + float(np.maximum(lo[:2] * u, hi[:2] * u).sum()) > room.plane
        ]
        return max(under, default=0.0)

    def too_tall(a: float) -> float:
        """:func:`tallest` at ``a`` when that does not fit the gap; else 0."""
        return tallest(a) if tallest(a) + LIFT_M + ROOF_MARGIN_M > room.gap else 0.0

    def free(a: float, b: float, bottom: float, hand: bool) -> bool:
        pos = np.array([*at(a, b), bottom - lift])
        for low, high in boxes:
            mid, size = tuple((low + high) / 2 + pos), tuple((high - low) / 2)
            if oriented_blocked(geo, mid, size, 0.0, ignore=(ref,)) is not None:  # type: ignore[arg-type]
                return False
        if not hand:
            return True
        g = pos + offset
        return (
            oriented_blocked(
                geo,
                (float(g[0]), float(g[1]), float(g[2] + (HAND_ABOVE_M + HAND_TOP_M) / 2)),
                (HAND_LONG_M, HAND_THICK_M, (HAND_TOP_M - HAND_ABOVE_M) / 2),
                closing,
                ignore=(ref,),
            )
            is None
        )

    pre_a = room.plane - front - 0.015
    chosen = None
    depths = [a for a in np.arange(min(deepest, c_u), r_low - 1e-9, -0.004) if not too_tall(a)]
    if not depths:
        tall = too_tall(r_low) or height
        return (
            f"{ref} stands {tall:.3f} m tall as held where it goes under {room.cover}; the "
            f"gap over {target} is {room.gap:.3f} m"
        )
    for b in sorted(np.arange(c_v - r_side, c_v + r_side + 1e-9, 0.01), key=lambda b: abs(b - c_v)):
        for a in depths:
            hands = (at(a, b) + offset[:2], at(pre_a, b) + offset[:2])
            if not all(planner.within_reach(float(h[0]), float(h[1])) for h in hands):
                continue
            path = np.linspace(a, pre_a, max(2, int((a - pre_a) / 0.02) + 1))
            if all(free(float(p), b, room.floor + LIFT_M, True) for p in path):
                chosen = (float(a), float(b))
                break
        if chosen is not None:
            break
    if chosen is None:
        if deepest < r_low:
            return (
                f"held so, the hand (outside the {room.gap:.3f} m gap under {room.cover}) "
                f"cannot bring {ref} inside {target}: it reaches {r_low - deepest:.3f} m short"
            )
        return f"no room to carry {ref} into {target} under {room.cover} without touching it"
    a, b = chosen
    if not hand_fits:  # higher where the gap allows: the arm sags under a pan held so
        spare = room.gap - ROOF_MARGIN_M - tallest(a)
        z_in = room.floor + min(HIGH_LIFT_M, max(LIFT_M, spare)) + hang
    z_set = room.floor + SET_M + hang
    hand = at(a, b) + offset[:2]
    pre_hand = at(pre_a, b) + offset[:2]
    segments = [
        *planner.rise(ee, carry),
        *twists,
        Segment("move", "transport", as_point(pre_hand, carry)),
        Segment("move", "lower", as_point(pre_hand, z_in)),
        Segment("move", "insert", as_point(hand, z_in), speed=INSERT),
        Segment("move", "set down", as_point(hand, z_set), speed=SLOW, tolerance=0.004),
        Segment("grip", "release", close=False),
        Segment("hold", "settle", steps=SETTLE_STEPS),
    ]
    if hand_fits:  # the hand went in under the cover: out the way it came, then up
        segments.append(Segment("move", "withdraw", as_point(pre_hand, z_set), speed=INSERT))
        hand = pre_hand
    return [
        *segments,
        Segment("move", "clear", as_point(hand, carry), speed=SLOW),
        Segment("twist", "turn back", yaw=HOME_YAW),
    ]


def carry_in(
    planner: SkillPlanner, ref: str, target: str, relation: str | None, ee: Vec3
) -> Plan | Refusal | None:
    """The place of ``ref`` in or on ``target`` when it is carried in sideways: in through
    a hinged door's opening (:func:`~worlds.libero.through.place_through`), or into a
    covered compartment (:func:`place_into`); None for anything else (the place from above
    runs)."""
    door = opening(planner.geo, target) if relation == "in" else None
    if door is not None:
        through = place_through(planner, ref, target, door, ee)
        if isinstance(through, str):
            return Refusal(through)
        how = f"carry {ref} in through {door.ref}'s opening, set it down, retreat"
        # two skills' motions: carried in, then pushed deeper (LIBERO-PRO libero_10_swap
        # task 9: carried over the oven to its opening at the workspace's edge, 392 steps)
        return Plan(tuple(through), how, skills=2)
    room = compartment(planner.geo, target, ref) if relation in ("on", "in") else None
    if room is None:
        return None
    into = place_into(planner, ref, target, room, ee)
    how = f"carry {ref} in under {room.cover} ({room.gap:.3f} m gap), set it down, withdraw"
    if isinstance(into, str):  # too tall standing: on its side, the hand level beside it
        side = side_into(planner, ref, target, room, ee)
        if isinstance(side, list):
            into, how = side, how.replace("carry", "turn on its side, carry", 1)
        else:  # or lying flat, pushed in along the floor
            flat = flat_into(planner, ref, target, room, ee)
            return Refusal(f"{into}; {side}; {flat}") if isinstance(flat, str) else flat
    return Plan(tuple(into), how)


def rests(geo: Any, region: str, ref: str) -> str:
    """LIBERO's predicate that says ``ref`` rests on ``region``: ``in`` for a covered layer
    whose site stands turned on its side (a shelf's: LIBERO's On reads the site's own z as
    up, which there is horizontal, so a pan set down inside the layer is not On it, while
    In, the body inside the site's box, holds), else ``on``."""
    frame = geo.region_frame(region)
    if frame is None or abs(float(frame[1][2, 2])) > 0.5:
        return "on"
    return "in" if compartment(geo, region, ref) is not None else "on"


RIM_DEPTH_M = 0.025
"""How far below a hollow thing's top the fingers close on its rim (``geometry``)."""


def by_handle(geo: object, ref: str) -> tuple[Vec3, float] | None:
    """(grasp point, finger yaw) on the handle of ``ref`` (a pan, a mug) when the scene has
    a covered compartment lower than the thing with the hand over its rim (the pan 5.8 cm
    high under a hand 10 cm over its rim, the shelf's layers 8.9 and 13.5 cm): held by the
    handle, the hand stays outside while the thing goes in (:func:`place_into`); or the
    handle grasp for a door (:func:`~worlds.libero.through.handle_grasp`). None
    otherwise: the usual grasp."""
    first = handle_grasp(geo, ref)  # type: ignore[arg-type]
    if first is not None or not geo.hollow(ref):  # type: ignore[attr-defined]
        return first
    obj = geo.box(ref)  # type: ignore[attr-defined]
    tall = obj.size[2] - RIM_DEPTH_M + HAND_TOP_M + LIFT_M + ROOF_MARGIN_M
    for region in geo.catalog.refs("region"):  # type: ignore[attr-defined]
        room = compartment(geo, region, ref)
        if room is not None and room.gap < tall:
            return _on_bar(geo, ref) or on_handle(geo, ref)  # type: ignore[arg-type]
    return None


BAR_DEPTH_M = 0.02
"""How far below a handle bar's top the fingertips close (the pads then cover the bar)."""


def _on_bar(geo: Any, ref: str) -> tuple[Vec3, float] | None:
    """(grasp point, finger yaw) three quarters of the way out along a long straight handle
    (the box geom furthest from the body, at least three times as long as it is thick,
    lying within 30 degrees of level: a pan's), at the bar's own top there (a pan's handle
    rises outwards: its box's top, at the outer end, was 9 mm over the bar at its middle
    and the fingers closed on air), the fingers closing across it; None for anything else."""
    model, data = geo.env.sim.model, geo.env.sim.data
    body = np.array(geo.env.sim.data.body_xpos[geo.env.obj_body_id[ref]], dtype=float)
    best = None
    for g in geo.collision_geoms(ref):
        if int(model.geom_type[g]) != 6:  # a box
            continue
        centre = np.array(data.geom_xpos[g], dtype=float)
        far = float(np.hypot(*(centre[:2] - body[:2])))
        if best is None or far > best[0]:
            best = (far, g, centre)
    if best is None:
        return None
    _, g, centre = best
    size = np.array(model.geom_size[g], dtype=float)
    axes = np.array(data.geom_xmat[g], dtype=float).reshape(3, 3)
    long_i = int(np.argmax(size))
    if size[long_i] < 3 * sorted(size)[1]:
        return None
    axis = axes[:, long_i]
    if abs(float(axis[2])) > math.sin(math.radians(30)):
        return None
    if float((centre[:2] - body[:2]) @ axis[:2]) < 0:
        axis = -axis  # outwards
    point = centre + axis * 0.5 * size[long_i]
    rise = sum(abs(float(axes[2, i])) * size[i] for i in range(3) if i != long_i)
    top = float(point[2]) + rise
    yaw = math.atan2(float(axis[1]), float(axis[0])) + math.pi / 2
    yaw = (yaw - HOME_YAW + math.pi / 2) % math.pi - math.pi / 2 + HOME_YAW
    at = geo.frame.from_world((float(point[0]), float(point[1]), top - BAR_DEPTH_M))
    return at, yaw
