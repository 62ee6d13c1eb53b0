"""A thin held thing that fits a low covered compartment only lying flat (a book under a
shelf's lowest board), and whose floor is level with the floor in front of it: stood on
its edge in front of the opening, pushed over away from it so that it lies flat, and
pushed in flat along the floor with the closed fingers, the hand staying outside.

libero_90 task 89 ("place it under the cabinet shelf"): the yellow book stands 12.2 cm
tall, 9.8 cm wide and 2.4 cm thick in the fingers; the layer under the shelf's board is
6.9 cm high and its floor is the table. Upright the hand over it, on its side its width,
does not fit; flat it is 2.4 cm high. The Panda's hand, level beside a lying book, is
21 cm across its fingers' closing line and meets the table; from above, the fingers open
to 8 cm, less than any side of the book lying down. So it is laid down by the table and
pushed. It falls away from the opening so that its body (LIBERO's position for ``In``: the
middle of what was its bottom) ends at the end that goes in first.

Read from the simulator: the held thing's collision geoms (each its bounding box, turned
with the wrist and about the edge it falls over), the hand's box (``door_skills``), the
floor under the spot (a slab going down, as ``through.floor_under``) and the scene's geoms
they are tested against as turned boxes (:func:`~worlds.libero.oriented.box_meets`), the
arm by inverse kinematics (:func:`~worlds.libero.reach.solve`, ``arm_meets``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from worlds.libero.control import HOME_YAW, Vec3, down_matrix
from worlds.libero.door_skills import HAND_ABOVE_M, HAND_LONG_M, HAND_THICK_M, HAND_TOP_M
from worlds.libero.doors import as_point
from worlds.libero.oriented import box_meets
from worlds.libero.reach import arm_meets, solve
from worlds.libero.segments import SLOW, Plan, Segment
from worlds.libero.sideways import region_span
from worlds.libero.wrist import TURN_STEPS, hand_yaw, turn_held

if TYPE_CHECKING:
    from worlds.libero.compartment import Compartment
    from worlds.libero.skills import SkillPlanner

__all__ = ["flat_into"]

THIN = 0.4
"""A thing topples over its thin side when that is at most this fraction of its height and
of its width (a slab, a book: lying, it stays where it fell and slides when pushed; a
bottle as thick as it is wide would roll)."""
LEVEL_M = 0.006
"""The floor in front of the opening is level with the compartment's within this."""
ROOF_MARGIN_M = 0.01
"""Kept between the top of the thing lying flat and the cover's bottom."""
DROP_M = 0.008
"""How far over the floor the thing's bottom is let go, standing."""
BELOW_TOP_M = 0.03
"""How far below the standing thing's top the closed fingers push it over."""
PUSH_OVER_M = 0.05
"""How far they push past where they meet it."""
PUSH_Z_M = 0.009
"""How high over the floor the fingertips push the lying thing in."""
FINGER_M = 0.012
"""Half the closed fingers' thickness along a push."""
BEHIND_M = 0.015
"""How far behind the lying thing's end the fingers come down."""
HAND_MARGIN_M = 0.01
"""Kept between the hand and the opening's plane."""
SPOT_STEP_M = 0.01
SPOT_RANGE_M = 0.3
"""Where the thing is stood: from the opening out this far, in these steps."""
PUSH_SPEED = 0.08
UNDER = 0.5
"""At least this much of the lying thing's length must end under the cover: LIBERO's In
reads only its body position (the middle of what was its bottom, here its inner end), which
a book 3 cm under the board already satisfies."""
UP = np.array([0.0, 0.0, 1.0])


def flat_into(
    planner: SkillPlanner, ref: str, target: str, room: Compartment, ee: Vec3
) -> Plan | str:
    """The segments that lay the held ``ref`` flat in front of the compartment ``target``
    and push it in; or why not (too thick lying flat, not thin enough to topple, the
    floor in front not level with the compartment's, no turn, room or reach)."""
    geo = planner.geo
    env = geo.env
    u = np.array([room.inward[0], room.inward[1], 0.0])
    v = np.array([-u[1], u[0], 0.0])
    robot = env.robots[0]
    grip_now = np.array(env.sim.data.site_xpos[robot.eef_site_id], dtype=float)
    yaw_now = hand_yaw(geo)
    carry = planner.travel_height(ee[2])
    # the fingers close along the way in, across the thin side: it falls along the way in
    along_u = math.atan2(float(u[1]), float(u[0]))
    turn = (along_u - yaw_now + math.pi / 2) % math.pi - math.pi / 2
    turned = turn_held(geo, (ee[0], ee[1], carry), turn)
    if turned is None:
        return f"the wrist cannot turn {ref} to lay it down along the way in"
    yaw = yaw_now + turned
    spin = _quarter(np.array([0.0, 0.0, 1.0]), turned)
    model, data = env.sim.model, env.sim.data
    skip = set(geo.collision_geoms(ref))
    boxes = []  # (centre, axes as columns, half sizes) relative to the grip site, turned
    for g in skip:
        rotation = np.array(data.geom_xmat[g], dtype=float).reshape(3, 3)
        aabb = np.array(model.geom_aabb[g], dtype=float)
        centre = np.array(data.geom_xpos[g], dtype=float) + rotation @ aabb[:3]
        boxes.append((spin @ (centre - grip_now), spin @ rotation, aabb[3:].copy()))
    signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)])
    corners = np.vstack([c + (signs * h) @ a.T for c, a, h in boxes])
    thick = float(np.ptp(corners @ u))
    height = float(np.ptp(corners[:, 2]))
    width = float(np.ptp(corners @ v))
    if thick + ROOF_MARGIN_M > room.gap:
        return f"lying flat {ref} is {thick:.3f} m high against the {room.gap:.3f} m gap"
    if thick > THIN * min(height, width):
        return (
            f"{ref} is no slab to lay flat and push ({thick:.3f} m thick, {width:.3f} m "
            f"wide, {height:.3f} m tall)"
        )
    body_rel = spin @ (np.asarray(geo.frame.to_world(geo.body_position(ref))) - grip_now)
    hang = -float(corners[:, 2].min())
    mid = corners[:, :2].mean(axis=0)
    fall = _quarter(-v, math.pi / 2)  # about the edge on the opening's far side: up -> -u
    push_yaw = along_u + math.pi / 2
    push_yaw += round((yaw - push_yaw) / math.pi) * math.pi  # the nearer of the two
    _, c_v, r_low, r_high, r_side = region_span(geo, target, u, v)
    lowest = planner.reach[0][2] if planner.reach is not None else -math.inf
    end_u = room.plane - HAND_THICK_M - HAND_MARGIN_M  # where the pushing fingers stop
    world = geo.frame.to_world

    def thing_free(
        grip: np.ndarray, turn: np.ndarray | None = None, pivot: np.ndarray | None = None
    ) -> bool:
        """Whether the thing held at ``grip`` (base frame), turned ``turn`` about
        ``pivot`` (base frame; the grip by default), raised 4 mm, meets nothing."""
        at = grip if pivot is None else pivot
        turn = np.eye(3) if turn is None else turn
        for c, a, h in boxes:
            centre = np.asarray(world(at + turn @ (grip + c - at)), dtype=float)
            if box_meets(env, centre + UP * 0.004, (turn @ a).T, h, skip) is not None:
                return False
        return True

    def hand_free(grip: np.ndarray, turn_yaw: float) -> str | None:
        """What the hand pointing down with its grip site at ``grip`` (base frame), the
        fingers closing along ``turn_yaw``, and its fingers below it meet (not the thing)."""
        axes = np.array([[math.cos(turn_yaw), math.sin(turn_yaw), 0.0], [0, 0, 0], [0, 0, 1.0]])
        axes[1] = np.cross(axes[2], axes[0])
        at = np.asarray(world(grip), dtype=float)
        hand = (
            at + UP * (HAND_ABOVE_M + HAND_TOP_M) / 2,
            axes,
            [HAND_LONG_M, HAND_THICK_M, (HAND_TOP_M - HAND_ABOVE_M) / 2],
        )
        fingers = (at + UP * HAND_ABOVE_M / 2, axes, [0.02, FINGER_M, HAND_ABOVE_M / 2])
        for c, a, h in (hand, fingers):
            hit = box_meets(env, np.asarray(c), a, np.asarray(h, dtype=float), skip)
            if hit is not None:
                return hit
        return None

    def why_not(spot_u: float, b: float) -> tuple[str | None, list[np.ndarray]]:
        """Why the thing cannot be stood with its middle at depth ``spot_u`` and side
        ``b``, pushed over and pushed in; or None and the grip sites (release, push over
        from, push over to, push in from, push in to) and the release height."""
        spot = u * spot_u + v * b
        grip_xy = spot[:2] - mid
        floor = _floor_at(geo, spot, room.floor, ref)
        if floor is None:
            reached[0] = 1
            return f"the floor in front of {target} is not level with its floor", []
        release = np.array([grip_xy[0], grip_xy[1], floor + DROP_M + hang])
        hit = hand_free(release, yaw) if thing_free(release) else "something"
        if hit is not None:
            reached[0] = 2
            return f"no room to stand {ref} in front of {target} (it or the hand meets {hit})", []
        standing = corners + release - UP * DROP_M
        # it falls about its footprint's edge on the far side from the opening (the axis
        # runs along ``v``: where along it does not matter)
        pivot = u * float((standing @ u).min()) + UP * floor
        lying = (standing - pivot) @ fall.T + pivot
        if not thing_free(release - UP * DROP_M, fall, pivot):
            reached[0] = 3
            return f"no room for {ref} to lie in front of {target}", []
        top = floor + height
        push_z = top - BELOW_TOP_M
        behind = u * (float((standing @ u).max()) + FINGER_M + 0.01) + v * b
        over = behind - u * PUSH_OVER_M
        start = u * (float((lying @ u).min()) - BEHIND_M - FINGER_M) + v * b
        finish = u * end_u + v * b
        # as low as the arm is sent (the workspace's floor, guarded, may be higher)
        z_low = max(floor + PUSH_Z_M, lowest)
        checks = [np.array([behind[0], behind[1], z]) for z in (top + 0.03, push_z)]
        checks += [np.array([over[0], over[1], push_z])]
        for point in checks:
            if (hit := hand_free(point, push_yaw)) is not None:
                reached[0] = 4
                return f"pushing {ref} over, the hand would meet {hit}", []
        steps = max(2, int(float(np.linalg.norm(finish - start)) / 0.02) + 1)
        path = [start + (finish - start) * k / (steps - 1) for k in range(steps)]
        pushes = [np.array([start[0], start[1], top + 0.05])]
        pushes += [np.array([p[0], p[1], z_low]) for p in path]
        # the hand comes down behind it across the push, or turned a little (its long side
        # along a thing standing close behind: a book 4 cm behind, turned 25 degrees)
        hit = None
        for in_yaw in sorted(
            push_yaw + np.radians(np.arange(-40, 41, 10)), key=lambda y: abs(y - push_yaw)
        ):
            hit = next((h for p in pushes if (h := hand_free(p, float(in_yaw))) is not None), None)
            if hit is None:
                break
        if hit is not None:
            reached[0] = 5
            return f"pushing {ref} in, the hand would meet {hit}", []
        in_yaw = float(in_yaw)
        if not all(
            planner.within_reach(float(p[0]), float(p[1])) for p in [release, *checks, *path]
        ):
            reached[0] = 6
            return f"laying {ref} down in front of {target} is out of the arm's reach", []
        poses = [(world(release), down_matrix(yaw))]
        poses += [(world(p), down_matrix(push_yaw)) for p in checks]
        poses += [(world(p), down_matrix(in_yaw)) for p in pushes]
        joints, why = solve(env, poses)
        if why is not None:
            reached[0] = 7
            return f"the arm cannot push {ref} in: {why}", []
        held = tuple(model.body(int(model.geom_bodyid[g])).name for g in skip)
        hits = [arm_meets(env, q, held) for q in joints[1:]]
        first = len(checks) + 2  # the path's first pose after the way down behind it
        if (hit := next((h for h in hits[:first] if h is not None), None)) is not None:
            reached[0] = 8
            return f"pushing {ref}, the arm's links would meet {hit}", []
        # pushed in as deep as the arm's links stay clear (the wrist over the fingers met
        # the shelf's top board 1.6 cm short of where the hand would)
        clear = next((k for k, h in enumerate(hits[first:]) if h is not None), len(path) - 1)
        if clear < 1:
            reached[0] = 9
            return f"pushing {ref} in, the arm's links would meet {hits[first]}", []
        finish = path[clear]
        posture = joints[first + clear]  # the arm at the push's end
        shift = float(finish @ u) + FINGER_M - float((lying @ u).min())
        body = fall @ (release - UP * DROP_M + body_rel - pivot) + pivot + u * shift
        back, front = float((lying @ u).min()) + shift, float((lying @ u).max()) + shift
        if front - room.plane < UNDER * (front - back):
            reached[0] = 10
            return (
                f"pushed in as far as the hand and arm allow, {front - room.plane:.3f} m of "
                f"{ref}'s {front - back:.3f} m would be under {room.cover}"
            ), []
        if not (r_low <= float(body @ u) <= r_high and abs(float(body @ v) - c_v) <= r_side):
            reached[0] = 11
            return (
                f"pushed in as far as the hand and arm allow, {ref} would end outside {target}",
                [],
            )
        for k in np.linspace(0.0, 1.0, max(2, int(shift / 0.02) + 1)):
            moved = release - UP * DROP_M + u * shift * float(k)
            if not thing_free(moved, fall, pivot + u * shift * float(k)):
                reached[0] = 12
                return f"{ref} lying flat would meet something on the way into {target}", []
        return None, [
            release,
            behind,
            over,
            start,
            finish,
            np.array([top, push_z, z_low, in_yaw]),
            posture,
        ]

    reason, best = f"no spot in front of {target} to lay {ref} down", -1
    reached = [0]  # how far the last spot got: the refusal names the furthest
    found: list[np.ndarray] = []
    sides = sorted(np.arange(c_v - r_side, c_v + r_side + 1e-9, 0.01), key=lambda b: abs(b - c_v))
    for b in sides[:9]:
        for spot_u in np.arange(room.plane - 0.02, room.plane - SPOT_RANGE_M, -SPOT_STEP_M):
            why, found = why_not(float(spot_u), float(b))
            if why is None:
                break
            if reached[0] > best:
                reason, best = why, reached[0]
        if found:
            break
    if not found:
        return f"lying flat: {reason}"
    release, behind, over, start, finish, (top, push_z, z_low, in_yaw), posture = found
    how = f"stand {ref} in front of {target}, push it over, push it in under {room.cover}"
    segments = [
        *planner.rise(ee, carry),
        *(
            Segment("twist", "turn", yaw=yaw_now + turned * k / TURN_STEPS)
            for k in range(1, TURN_STEPS + 1)
        ),
        Segment("move", "transport", as_point(release[:2], carry), yaw=yaw),
        Segment("move", "stand", as_point(release[:2], release[2]), SLOW, yaw=yaw, tolerance=0.004),
        Segment("grip", "release", close=False, yaw=yaw),
        Segment("move", "up", as_point(release[:2], top + 0.03), SLOW, yaw=yaw),
        Segment("twist", "turn", yaw=push_yaw),
        Segment("grip", "close", close=True, yaw=push_yaw),
        Segment("move", "behind", as_point(behind[:2], top + 0.03), SLOW, yaw=push_yaw),
        Segment("move", "lower", as_point(behind[:2], push_z), SLOW, yaw=push_yaw),
        Segment("move", "push over", as_point(over[:2], push_z), SLOW, yaw=push_yaw),
        Segment("move", "clear", as_point(over[:2], top + 0.05), SLOW, yaw=push_yaw),
        Segment("move", "behind it", as_point(start[:2], top + 0.05), SLOW, yaw=in_yaw),
        Segment("move", "lower", as_point(start[:2], z_low), SLOW, yaw=in_yaw),
        Segment("move", "push in", as_point(finish[:2], z_low), PUSH_SPEED, yaw=in_yaw),
        Segment("move", "clear", as_point(finish[:2], carry), SLOW, yaw=in_yaw),
        Segment("grip", "open", close=False, yaw=in_yaw),
        Segment("twist", "turn back", yaw=HOME_YAW),
    ]
    # the controller leans towards the arm's joints at the push's end: pushing low and far
    # out, it stalled 4 cm short with nothing touching (libero_90 task 89)
    return Plan(tuple(segments), how, skills=2, posture=tuple(float(q) for q in posture))


def _quarter(axis: np.ndarray, angle: float) -> np.ndarray:
    """The rotation by ``angle`` about the unit ``axis`` (Rodrigues)."""
    k = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return np.eye(3) + math.sin(angle) * k + (1 - math.cos(angle)) * k @ k


def _floor_at(geo: Any, spot: np.ndarray, level: float, ref: str) -> float | None:
    """The top of what stands under ``spot`` (base frame xy) within :data:`LEVEL_M` of
    ``level`` (a thin slab going down from above that height, as ``through.floor_under``
    reads a region's floor), or None when nothing is there: the floor in front of an
    opening is not level with the compartment's (a shelf's upper layer over the table)."""
    x, y = float(spot[0]), float(spot[1])
    z = level + LEVEL_M
    while z >= level - LEVEL_M:
        if geo.blocked((x - 0.02, y - 0.02, z - 0.002), (x + 0.02, y + 0.02, z), ignore=(ref,)):
            return z
        z -= 0.002
    return None
