"""Putting a thing in through a hinged door's opening (LIBERO's microwave): held by its
handle, carried level in with the hand outside, set down and pushed deeper; or why not.

Split from :mod:`.door_skills` (which sweeps the leaf): the way in is searched along the
opening and in depth, and when none is found, searched again with the door's leaf or the
arm's reach disregarded, so the refusal says what is in the way.
"""

from __future__ import annotations

import copy
import math
from typing import TYPE_CHECKING

import numpy as np

from worlds.libero.articulation import geom_box
from worlds.libero.control import HOME_YAW, Vec3
from worlds.libero.door_skills import (
    HAND_ABOVE_M,
    HAND_LONG_M,
    HAND_THICK_M,
    HAND_TOP_M,
    sweep_door,
)
from worlds.libero.doors import Door, as_point, door_of, nearest_yaw
from worlds.libero.oriented import oriented_blocked
from worlds.libero.segments import PUSH_DIP, SLOW, Segment
from worlds.libero.wrist import TURN_STEPS, hand_yaw, turn_held

if TYPE_CHECKING:
    from collections.abc import Iterator

    from worlds.libero.geometry import Box, LiberoGeometry
    from worlds.libero.skills import SkillPlanner

__all__ = ["Way", "floor_under", "handle_grasp", "on_handle", "opening", "place_through"]

INSERT = 0.16
"""How fast (m/s) a thing is carried in through an opening, and pushed deeper."""


def opening(geo: LiberoGeometry, target: str) -> Door | None:
    """The hinged door guarding a contain region (the microwave's heating region), or None."""
    item = geo.catalog.get(target)
    if item is None or item.kind != "region" or "contain" not in item.tags or not item.parent:
        return None
    parent = geo.catalog.get(item.parent)
    if parent is None or parent.kind != "fixture" or not parent.drawer:
        return None
    return door_of(geo, item.parent)


def handle_of(geo: LiberoGeometry, ref: str) -> tuple[np.ndarray, np.ndarray, float] | None:
    """(low, high) corners (base frame) of the outermost part of a hollow object's handle
    (the collision geom furthest from its vertical axis, standing out 1.5 cm or more past
    the rest) and how far its outer end is from the axis; None without one (a bowl)."""
    if not geo.hollow(ref):
        return None
    body = np.array(geo.body_position(ref))
    parts = []
    for g in geo.collision_geoms(ref):
        low, high = geom_box(geo.env, g)
        low, high = np.array(geo.frame.from_world(low)), np.array(geo.frame.from_world(high))
        centre = (low + high) / 2
        parts.append((float(np.linalg.norm(centre[:2] - body[:2])), low, high))
    parts.sort(key=lambda p: p[0])
    if len(parts) < 3:
        return None
    rim = max(r for r, _, _ in parts[: len(parts) // 2])
    radius, low, high = parts[-1]
    if radius < rim + 0.015:
        return None
    corners = np.array([[x, y] for x in (low[0], high[0]) for y in (low[1], high[1])])
    reach = float(np.max(np.linalg.norm(corners - body[:2], axis=1)))
    return low, high, reach


def handle_grasp(geo: LiberoGeometry, ref: str) -> tuple[Vec3, float] | None:
    """(grasp point, finger yaw) on the handle of ``ref`` when the scene has a hinged door
    guarding a place to put things in: a hand over a mug's rim is taller than the
    microwave's opening (14 cm; the mug 10 cm and the hand on it), while a hand on the
    handle stays outside the opening with the mug in it. None otherwise (the rim grasp)."""
    if not any(opening(geo, r) is not None for r in geo.catalog.refs("region")):
        return None
    return on_handle(geo, ref)


def on_handle(geo: LiberoGeometry, ref: str) -> tuple[Vec3, float] | None:
    """(grasp point, finger yaw) on the top of the outer end of the handle of ``ref``, the
    fingers closing across the bar; None without a handle."""
    handle = handle_of(geo, ref)
    if handle is None:
        return None
    low, high, _ = handle
    body = np.array(geo.body_position(ref))
    centre = (low + high) / 2
    radial = centre[:2] - body[:2]
    radial /= max(float(np.linalg.norm(radial)), 1e-9)
    yaw = nearest_yaw(math.atan2(float(radial[1]), float(radial[0])) + math.pi / 2, HOME_YAW)
    # the handle's top, 4 mm in towards the mug: the pads close across the bar and the
    # hand (3 cm above the fingertips) clears the rim
    point = centre[:2] - radial * 0.004
    return (float(point[0]), float(point[1]), float(high[2]) - 0.003), yaw


def place_through(
    planner: SkillPlanner, ref: str, target: str, door: Door, ee: Vec3
) -> list[Segment] | str:
    """Carry the held ``ref`` level in through ``door``'s opening into ``target`` (a
    region behind it) with the hand staying outside (the opening is lower than the hand
    over the thing), set it down on the floor inside, and push it deep enough with the
    fingers, the hand dipped so its wrist trails outside, that the door clears what
    stands out behind it (a mug's handle); or why not."""

    geo = planner.geo
    if not geo.predicate("open", door.ref):
        return f"{door.ref} is closed; open it first"
    obj, region = geo.box(ref), geo.box(target)
    assert obj is not None and region is not None
    hinge = np.array(door.hinge)
    along, across = door.axes(door.closed)
    inward = 1.0 if float(np.dot(np.array(region.centre[:2]) - hinge, across)) > 0 else -1.0
    u = inward * across  # into the opening
    plane = float(hinge @ u) + max(door.reach(inward, 0.0, door.length), 0.0)
    body = np.array(geo.body_position(ref))
    corners = np.vstack(
        [
            np.array([geo.frame.from_world(c) for c in geo.geom_corners(g)])
            for g in geo.collision_geoms(ref)
        ]
    )
    rel = corners - body
    offset = np.array(ee) - body
    carry = planner.travel_height(ee[2])
    # held with the hand towards the opening (a mug's handle facing the door, LIBERO-PRO
    # libero_10_task 9): the wrist turns it over the place it was lifted, so the hand trails
    spin, twists, turned = np.eye(3), [], 0.0  # outside; none where it is behind already
    if _hand_ahead(plane, float(offset[:2] @ u), region, u) and np.hypot(*offset[:2]) > 0.02:
        want = math.atan2(-u[1], -u[0]) - math.atan2(offset[1], offset[0])
        want = (want + math.pi) % (2 * math.pi) - math.pi
        turn = turn_held(geo, (ee[0], ee[1], carry), want)
        if turn is not None:
            c, s = math.cos(turn), math.sin(turn)
            spin = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
            offset, rel = spin @ offset, rel @ spin.T
            yaw = hand_yaw(geo)
            steps = range(1, TURN_STEPS + 1)
            twists = [Segment("twist", "turn", yaw=yaw + turn * k / TURN_STEPS) for k in steps]
            turned = turn
    if _hand_ahead(plane, float(offset[:2] @ u), region, u):
        return (
            f"held so, the hand would meet {door.ref} before {ref} is inside it (a hand "
            f"over it does not fit through the opening; it must be held from the side away "
            "from the opening, by a handle facing out)"
        )
    way = Way(planner, ref, door, region, u, rel, offset, turned)
    found = way.search(ee)
    if found is None:
        return _no_room(ee, ref, door, way)
    behind = float(np.max(-(rel[:, :2] @ u)))
    floor, hang, spot, out_of = way.floor, way.hang, way.spot, way.out_of
    chosen, release_u = found
    final_u = max(release_u, plane + 0.012 + behind)
    release = spot(chosen, release_u)
    pre = release - u * out_of(release_u)
    z_in = floor + 0.012 + hang
    z_set = floor + 0.004 + hang
    hand = release + offset[:2]
    pre_hand = pre + offset[:2]
    out = hand - u * 0.07
    # over what stands between (LIBERO-PRO libero_10_swap task 9: the mug, carried at the
    # usual height from behind the microwave to its opening, dragged over its top and hung
    # tilted 19 degrees in the fingers, and its rim met the opening's top)
    over = way.over(np.array(ee[:2]) - offset[:2], pre, carry)
    segments: list[Segment] = [
        *planner.rise(ee, carry),
        *twists,
        *planner.rise((ee[0], ee[1], carry), over),
        Segment("move", "transport", as_point(pre_hand, over)),
        Segment("move", "lower", as_point(pre_hand, z_in)),
        Segment("move", "insert", as_point(hand, z_in), speed=INSERT),
        Segment("move", "set down", as_point(hand, z_set), speed=SLOW, tolerance=0.004),
        Segment("grip", "release", close=False),
        Segment("move", "retreat", as_point(out, z_set)),
    ]
    handle = handle_of(geo, ref)
    if final_u > release_u + 0.005 and handle is not None:
        # push what stands out behind it (the handle) with the closed fingers' tips, the
        # hand dipped into the opening so the wrist stays out and below the fixture's top,
        # more steeply where it would trail too far from the base (push_dip)
        h_low, h_high, _ = handle
        mid = (h_low[2] + h_high[2]) / 2 - obj.bottom
        z_push = floor + 0.004 + mid + 0.01
        side = float((spin @ ((h_low + h_high) / 2 - body))[:2] @ along)
        start = spot(chosen + side, release_u - behind - 0.03)
        end = spot(chosen + side, final_u - behind - 0.012)
        facing = (float(-u[0]), float(-u[1]), 0.0)
        tilt = {"facing": facing, "closing": (float(along[0]), float(along[1]), 0.0)}
        dip = push_dip(start, end, u)
        segments += [
            Segment("grip", "close", close=True),
            Segment("move", "up", as_point(start, z_push + 0.05)),
            Segment("twist", "dip", dip=dip, **tilt),  # type: ignore[arg-type]
            Segment("move", "lower", as_point(start, z_push), dip=dip, **tilt),  # type: ignore[arg-type]
            Segment("move", "push in", as_point(end, z_push), speed=INSERT, dip=dip, **tilt),  # type: ignore[arg-type]
            Segment("move", "back off", as_point(start, z_push), dip=dip, **tilt),  # type: ignore[arg-type]
            Segment("move", "clear", as_point(start, carry), dip=dip, **tilt),  # type: ignore[arg-type]
            Segment("twist", "turn back", yaw=HOME_YAW),
        ]
    else:
        segments.append(Segment("move", "clear", as_point(out, carry)))
    return segments


WRIST_M = 0.203
"""How far the wrist (the Panda's last link) stands behind the grip site along the hand."""
WRIST_OUT_M = 0.725
"""How far from the base's axis (horizontally) the wrist of a hand pushing dipped may be
for the controller to hold the pose. LIBERO-PRO libero_10_swap task 9, state 1 (the oven's
opening facing the workspace's edge, the push starting at y = -0.39): dipped 45 degrees the
wrist trailed 0.748 m out, the elbow straightened (joint 4 from -1.73 to -0.61 rad, 0.54
from its limit) and the gripper strayed 6 cm, three times; 50 and 55 degrees (0.740 and
0.731 m) strayed 3 cm coming down; 60 degrees (0.722 m) came down within 3 mm and pushed
the mug in (the solver holds all four: it is the controller that does not)."""
PUSH_DIPS = (PUSH_DIP, *(math.radians(d) for d in (50, 55, 60)))
"""The dips tried for a push in through an opening, the usual PUSH_DIP first; steeper than
the last, the hand meets the fixture above the opening short of the door's plane (70
degrees stopped 1.7 cm short of it, 60 degrees 0.8 cm)."""


def push_dip(start: np.ndarray, end: np.ndarray, u: np.ndarray) -> float:
    """The least of PUSH_DIPS at which the wrist, trailing out of the opening (against
    ``u``) behind the fingertips pushing from ``start`` to ``end`` (base frame), stays
    within WRIST_OUT_M of the base's axis (the steeper the dip, the less it trails); the
    steepest where none does."""
    for dip in PUSH_DIPS:
        back = u[:2] * WRIST_M * math.cos(dip)
        if all(float(np.linalg.norm(p[:2] - back)) <= WRIST_OUT_M for p in (start, end)):
            return dip
    return PUSH_DIPS[-1]


def _no_room(ee: Vec3, ref: str, door: Door, way: Way) -> str:
    """Why ``way`` finds no room to carry ``ref`` in: the door's leaf, standing short of its
    opened position, is in the way when the same way with the leaf disregarded finds room
    (libero_10 task 9, state 11: the leaf open 76 degrees left the opening 20 cm beside it
    for the 21 cm long hand, 23.5 cm at 90 degrees (state 0), where the place fits); the
    workspace's edge, and how far past it the hand would go at the least, when a way past
    it is free (LIBERO-PRO libero_10_swap task 9, the oven's opening 36 cm to the robot's
    right: the hand would go 1.2 cm past the edge), or is free with the leaf disregarded
    too (state 2: the leaf, open 75 degrees, over the opening's hinge side, and the hand
    1.3 cm past the edge at every place along the opening: opening wider does not help,
    and the refusal said only "no room ... without touching it"); else no room. No other
    turn of the held thing fits where this one does not (tried every 15 degrees up to where
    the hand meets the door: the hand's box, turned, reaches the fixture's face). Opening
    wider is named as the remedy only where the sweep that opens it stays within reach."""
    short = abs(door.opened - door.closed) - abs(door.angle - door.closed)
    leaf = short > WIDER_RAD and bool(door.geoms)
    degrees = math.degrees(abs(door.angle - door.closed))
    if leaf and way.without(door.geoms).search(ee) is not None:
        why = (
            f"{door.ref} is not open far enough: its door, open {degrees:.0f} degrees, "
            f"stands in the way of the hand carrying {ref} in through the opening"
        )
        # named as the remedy only where the sweep that opens it stays within the arm's
        # reach (LIBERO-PRO libero_10_swap task 9, state 2: the oven's door faces the
        # workspace's edge, and its sweep was blocked by the envelope)
        sweep = sweep_door(way.planner, door, False, ee)
        within = not isinstance(sweep, str) and all(
            way.planner.within_reach(seg.target[0], seg.target[1])
            for seg in sweep
            if seg.target is not None
        )
        if within:
            return f"{why}; open {door.ref} wider first"
        return f"{why}, and opening it wider would take the hand past the workspace's edge"
    past, also = way.past_edge(ee), ""
    if past is None and leaf:  # the leaf in the way, and the edge even with it out of the way
        past = way.without(door.geoms).past_edge(ee)
        also = (
            f", even with {door.ref}'s door (open {degrees:.0f} degrees, and in the way as "
            "well) opened wider"
        )
    if past is not None:
        return (
            f"no room within the arm's workspace to carry {ref} in through {door.ref}'s "
            f"opening: held with the hand behind it, {ref} must be lowered in front of the "
            f"opening with the hand at least {past * 100:.1f} cm past the workspace's edge, "
            f"wherever along the opening it goes in{also}; this arm cannot put it in there"
        )
    return f"no room to carry {ref} in through {door.ref}'s opening without touching it"


OVER_M = 0.03
"""How far above what stands between a held thing is carried to an opening."""
WIDER_RAD = 0.05
"""How far short of LIBERO's opened position a door's leaf must stand for opening it wider
to be named as a remedy."""


class Way:
    """The ways a thing held so (``rel``: its geoms' corners about its body, ``offset``: the
    hand about its body, both as turned by ``turn``) goes in through ``door``'s opening
    into ``region`` along ``u`` with the hand outside."""

    def __init__(
        self,
        planner: SkillPlanner,
        ref: str,
        door: Door,
        region: Box,
        u: np.ndarray,
        rel: np.ndarray,
        offset: np.ndarray,
        turn: float,
    ) -> None:
        geo = planner.geo
        obj = geo.box(ref)
        assert obj is not None
        self.planner, self.ref, self.door, self.region, self.u = planner, ref, door, region, u
        self.rel, self.offset, self.turn = rel, offset, turn
        self.hinge = np.array(door.hinge)
        self.along, across = door.axes(door.closed)
        inward = float(np.sign(across @ u))
        self.plane = float(self.hinge @ u) + max(door.reach(inward, 0.0, door.length), 0.0)
        half = np.abs(u) * np.array(region.size[:2]) / 2
        self.region_low = float(np.array(region.centre[:2]) @ u) - float(half.sum())
        self.floor = floor_under(geo, region, ref)
        self.lift = float(rel[:, 2].min())  # the body above the object's bottom, negated
        self.closing = geo.closing_yaw() + turn
        self.front = float(np.max(rel[:, :2] @ u))
        self.hang = 0.0
        self.skip: tuple[int, ...] = ()

    def without(self, geoms: tuple[int, ...]) -> Way:
        """The same ways with ``geoms`` (a door's leaf) disregarded."""
        other = copy.copy(self)
        other.skip = geoms
        return other

    def past_edge(self, ee: Vec3) -> float | None:
        """How far past the workspace's edge the hand goes on the way (at the deepest free
        depth at each place along the opening) that goes least far past it; None when no
        way is free."""
        return min((past for _, _, past in self.ways(ee, math.inf)), default=None)

    def spot(self, t: float, depth: float) -> np.ndarray:
        return self.hinge + self.along * t + self.u * (depth - float(self.hinge @ self.u))

    def out_of(self, depth: float) -> float:
        """How far out of ``depth`` the thing's front is 1 cm outside the fixture's."""
        return max(0.04, depth + self.front - float(self.hinge @ self.u) + 0.01)

    def free(self, body_xy: np.ndarray, bottom: float) -> bool:
        """Whether the thing, its body at ``body_xy`` and its bottom at ``bottom``, and the
        hand on it meet nothing."""
        # the boxes as they are turned (a microwave standing turned 6 degrees grew 2.3 cm
        # out of its face as an axis-aligned box: :mod:`.oriented`)
        geo, ref = self.planner.geo, self.ref
        pos = np.array([body_xy[0], body_xy[1], bottom - self.lift])
        low, high = self.rel.min(axis=0) + pos, self.rel.max(axis=0) + pos
        hand = pos + self.offset
        hand_z = (hand[2] + HAND_ABOVE_M + hand[2] + HAND_TOP_M) / 2
        return (
            oriented_blocked(
                geo,
                tuple((low + high) / 2),  # type: ignore[arg-type]
                tuple((high - low) / 2),  # type: ignore[arg-type]
                0.0,
                ignore=(ref,),
                skip_geoms=self.skip,
            )
            is None
            and oriented_blocked(
                geo,
                (float(hand[0]), float(hand[1]), float(hand_z)),
                (HAND_LONG_M, HAND_THICK_M, (HAND_TOP_M - HAND_ABOVE_M) / 2),
                self.closing,
                ignore=(ref,),
                skip_geoms=self.skip,
            )
            is None
        )

    def over(self, start: np.ndarray, end: np.ndarray, carry: float) -> float:
        """The height (the gripper's; ``carry`` or more) at which the thing, carried level
        in a straight line from its body at ``start`` to ``end``, and the hand on it pass
        OVER_M or more above whatever stands between; ``carry`` when none below the ceiling
        does."""
        planner = self.planner
        count = max(2, math.ceil(float(np.linalg.norm(end - start)) / 0.02) + 1)
        points = [start + (end - start) * k / (count - 1) for k in range(count)]
        z = carry
        while z <= planner.ceiling_z - 0.02:
            if all(self.free(p, z - self.hang - OVER_M) for p in points):
                return z
            z += 0.01
        return carry

    def search(self, ee: Vec3) -> tuple[float, float] | None:
        """(where along the door from its hinge, how deep along ``u``) the thing is set down
        inside, as deep as the hand, outside, goes without touching the fixture's front,
        nearest the region's middle; None when there is no such place."""
        for t, depth, _ in self.ways(ee, 0.0):
            return t, depth
        return None

    def ways(self, ee: Vec3, slack: float) -> Iterator[tuple[float, float, float]]:
        """(along, depth, how far past the workspace's edge the hand goes) of the deepest
        free way in at each place along the opening whose hand goes at most ``slack`` past
        it, nearest the region's middle first."""
        planner, u, geo = self.planner, self.u, self.planner.geo
        obj = geo.box(self.ref)
        assert obj is not None
        self.hang = ee[2] - obj.bottom
        hand_u = float(self.offset[:2] @ u)
        release_u = self.plane - HAND_THICK_M - 0.002 - hand_u
        behind = float(np.max(-(self.rel[:, :2] @ u)))
        final_u = max(release_u, self.plane + 0.012 + behind)
        middle = float((np.array(self.region.centre[:2]) - self.hinge) @ self.along)
        floor = self.floor
        for t in sorted(np.arange(0.0, self.door.length, 0.005), key=lambda t: abs(t - middle)):
            final = self.spot(t, final_u)
            pos_final = np.array([final[0], final[1], floor + 0.006 - self.lift])
            low, high = self.rel.min(axis=0) + pos_final, self.rel.max(axis=0) + pos_final
            if geo.blocked(tuple(low), tuple(high), ignore=(self.ref,)) is not None:  # type: ignore[arg-type]
                continue
            depth = release_u
            while depth >= self.region_low + 0.003:
                release = self.spot(t, depth)
                pre = release - u * self.out_of(depth)
                hands = (release + self.offset[:2], pre + self.offset[:2])
                # where the arm may go (LIBERO-PRO libero_10_swap task 9: the oven at the
                # workspace's edge wanted the hand 1-2 cm past it, 9,690 physics steps outside)
                past = max(planner.outside_by(float(h[0]), float(h[1])) for h in hands)
                if (
                    past <= slack
                    and self.free(release, floor + 0.012)
                    and self.free(pre, floor + 0.012)
                ):
                    yield float(t), depth, past
                    break
                depth -= 0.003


def _hand_ahead(plane: float, hand_u: float, region: Box, u: np.ndarray) -> bool:
    """Whether a hand ``hand_u`` into the opening from what it holds meets the door's
    ``plane`` before that is inside ``region`` (its near side along ``u``)."""
    half = float((np.abs(u) * np.array(region.size[:2]) / 2).sum())
    region_low = float(np.array(region.centre[:2]) @ u) - half
    return plane - HAND_THICK_M - 0.002 - hand_u < region_low + 0.003


def floor_under(geo: LiberoGeometry, region: Box, ref: str) -> float:
    """The top of what a region's things stand on (the microwave's floor): going down from
    the region's middle, the first height at which a thin slab over its middle touches
    something."""
    x, y, z = region.centre
    while z > region.bottom - 0.05:
        low, high = (x - 0.02, y - 0.02, z - 0.002), (x + 0.02, y + 0.02, z)
        if geo.blocked(low, high, ignore=(ref,)) is not None:
            return z
        z -= 0.002
    return region.bottom
