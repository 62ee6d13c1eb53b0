"""A held thing too tall to go into a covered compartment standing, carried in on its side:
the wrist turns it so the fingers close across the way in, tips the hand level about the
fingers' closing line (the thing, hanging below the fingers, then points into the
compartment ahead of them and what was its width stands up), carries it in, sets it down
and withdraws the hand the way it came.

libero_90 tasks 86 and 88 ("pick up the book ... and place it on the cabinet shelf"): the
books stand 12.2 and 13.5 cm tall in the fingers, the shelf unit's upper layer is 13.3 cm
high under its top board, and the hand over a standing book's top cannot go in at all.
On its side a book is as high as it is wide (9.8 and 11 cm), the hand level beside it
6.4 cm thick.

Whether a way fits is read from the simulator: the held thing's collision geoms (each its
own bounding box, turned with the hand about the gripper's site), the Panda hand's
collision box (``door_skills``), the compartment (:func:`~worlds.libero.compartment.compartment`)
and the scene's geoms they are tested against as the turned boxes they are
(:func:`~worlds.libero.oriented.box_meets`); the arm's reach by inverse kinematics
(:func:`~worlds.libero.reach.solve`). Never a task's goal.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from worlds.libero.control import HOME_YAW, Vec3, down_matrix, side_matrix
from worlds.libero.door_skills import HAND_ABOVE_M, HAND_LONG_M, HAND_THICK_M, HAND_TOP_M
from worlds.libero.doors import as_point
from worlds.libero.oriented import box_meets
from worlds.libero.reach import arm_meets, solve
from worlds.libero.segments import SLOW, Segment
from worlds.libero.through import INSERT
from worlds.libero.wrist import TURN_STEPS, hand_yaw, turn_held

if TYPE_CHECKING:
    from worlds.libero.compartment import Compartment
    from worlds.libero.geometry import LiberoGeometry
    from worlds.libero.skills import SkillPlanner

__all__ = ["INSET_M", "RegionSpan", "region_span", "side_into"]

LIFT_M = 0.012
"""How high over the floor the thing's lowest point is carried in (as ``compartment``)."""
SET_M = 0.004
"""And where it is let go."""
ROOF_MARGIN_M = 0.005
"""Kept between the top of what is carried in and the cover's bottom."""
INSET_M = 0.01
"""How far inside the region's sides the thing's body is set down."""
TIP_STEPS = 6
"""Turns of the wrist the tip to level is split into (as ``placing``)."""
SETTLE_STEPS = 30
"""Controller steps the open hand waits before it leaves."""
PATH_STEP_M = 0.02
"""How far apart the poses checked along a straight move are."""

Box3 = tuple[np.ndarray, np.ndarray, np.ndarray]
"""An oriented box: centre (world), axes (rows), half sizes."""


def _held_boxes(planner: SkillPlanner, ref: str) -> list[Box3]:
    """The held thing's collision geoms as oriented boxes (world): each geom's own bounding
    box in its own frame."""
    geo = planner.geo
    model, data = geo.env.sim.model, geo.env.sim.data
    boxes = []
    for g in geo.collision_geoms(ref):
        rotation = np.array(data.geom_xmat[g], dtype=float).reshape(3, 3)
        aabb = np.array(model.geom_aabb[g], dtype=float)
        centre = np.array(data.geom_xpos[g], dtype=float) + rotation @ aabb[:3]
        boxes.append((centre, rotation.T, aabb[3:].copy()))
    return boxes


def _hand_box(grip: np.ndarray, rotation: np.ndarray) -> Box3:
    """The Panda hand's collision box (world) with its gripper site at ``grip`` (world)
    turned ``rotation`` (the site's axes as columns: closing, across, pointing)."""
    pointing = rotation[:, 2]
    centre = grip - pointing * (HAND_ABOVE_M + HAND_TOP_M) / 2
    half = np.array([HAND_LONG_M, HAND_THICK_M, (HAND_TOP_M - HAND_ABOVE_M) / 2])
    return centre, rotation.T, half


def side_into(
    planner: SkillPlanner, ref: str, target: str, room: Compartment, ee: Vec3
) -> list[Segment] | str:
    """The segments that carry the held ``ref`` into the compartment ``target`` on its
    side (the hand level, pointing in, the fingers closing across the way in), set it down
    inside the region and withdraw; or why not (the height it stands on its side against
    the gap, or no turn, reach or room). The fingers may close either way along the way
    across: the shorter wrist turn first, then the other, which holds the wrist on the
    other side of the hand (below a level hand, it met a book standing beside the way in:
    libero_90 task 88)."""
    geo = planner.geo
    u = np.array([room.inward[0], room.inward[1], 0.0])
    along_v = math.atan2(float(u[0]), float(-u[1]))
    yaw_now = hand_yaw(geo)
    turn = (along_v - yaw_now + math.pi / 2) % math.pi - math.pi / 2
    carry = planner.travel_height(ee[2])
    reason = f"the wrist cannot turn {ref} to carry it in on its side"
    for sense in sorted((turn, turn - math.copysign(math.pi, turn)), key=abs):
        turned = turn_held(geo, (ee[0], ee[1], carry), sense)
        if turned is None:
            continue
        plan = _one_way(planner, ref, target, room, ee, yaw_now + turned)
        if isinstance(plan, list):
            return plan
        reason = plan
        if "stands" in plan:  # the height is the same either way
            break
    return reason


def _one_way(
    planner: SkillPlanner, ref: str, target: str, room: Compartment, ee: Vec3, yaw: float
) -> list[Segment] | str:
    """:func:`side_into` with the fingers turned to close along ``yaw`` first."""
    geo = planner.geo
    env = geo.env
    u = np.array([room.inward[0], room.inward[1], 0.0])
    v = np.array([-u[1], u[0], 0.0])
    robot = env.robots[0]
    now = np.array(env.sim.data.site_xmat[robot.eef_site_id], dtype=float).reshape(3, 3)
    grip_now = np.array(env.sim.data.site_xpos[robot.eef_site_id], dtype=float)
    yaw_now = hand_yaw(geo)
    turned = yaw - yaw_now
    carry = planner.travel_height(ee[2])
    closing = (math.cos(yaw), math.sin(yaw), 0.0)
    facing = (float(-u[0]), float(-u[1]), 0.0)
    level = side_matrix(facing, closing, 0.0)
    spin = level @ now.T  # the hand's (and the held thing's) turn about the gripper's site
    boxes = [(spin @ (c - grip_now), spin @ a.T, h) for c, a, h in _held_boxes(planner, ref)]
    corners = np.vstack(
        [
            c + np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * h @ a.T
            for c, a, h in boxes
        ]
    )
    low, high = float(corners[:, 2].min()), float(corners[:, 2].max())
    height = high - low
    if height + LIFT_M + ROOF_MARGIN_M > room.gap:
        return (
            f"on its side {ref} stands {height:.3f} m; the gap under {room.cover} is "
            f"{room.gap:.3f} m"
        )
    body_rel = spin @ (np.asarray(geo.frame.to_world(geo.body_position(ref))) - grip_now)
    z_in = room.floor + LIFT_M - low
    z_set = room.floor + SET_M - low
    front = float((corners @ u).max())
    skip = set(geo.collision_geoms(ref))

    def meets(
        grip: np.ndarray, rotation: np.ndarray, relative: np.ndarray | None = None
    ) -> str | None:
        """What the hand at ``grip`` (base frame) turned ``rotation``, or the thing it
        holds (turned ``relative`` from level; level by default), meets; None: nothing."""
        world = np.asarray(geo.frame.to_world(grip), dtype=float)
        turn_back = np.eye(3) if relative is None else relative
        for c, a, h in boxes:
            centre = world + turn_back @ c
            if (hit := box_meets(env, centre, (turn_back @ a).T, h, skip)) is not None:
                return hit
        hc, ha, hh = _hand_box(world, rotation)
        return box_meets(env, hc, ha, hh, skip)

    c_u, c_v, r_low, _, r_side = region_span(geo, target, u, v)
    body_u, body_v = float(body_rel @ u), float(body_rel @ v)
    pre_u = room.plane - front - 0.015  # the grip's depth with the thing's front outside
    tips = [
        side_matrix(facing, closing, math.pi / 2 * (1 - k / TIP_STEPS))
        for k in range(1, TIP_STEPS + 1)
    ]
    world = geo.frame.to_world
    downs = np.linspace(carry, z_in, max(2, int((carry - z_in) / PATH_STEP_M) + 1))

    def why_not(pre: np.ndarray, hand: np.ndarray) -> str | None:
        """Why the thing cannot be tipped level over ``pre``, lowered there and carried
        in to ``hand`` (grip sites, base frame; None: it can): the thing or the hand would
        touch something, the arm cannot hold the poses, or its links would meet the scene
        (the wrist trails low behind a level hand: over a book standing beside the way)."""
        steps = max(2, int(float(np.linalg.norm(hand - pre)) / PATH_STEP_M) + 1)
        path = [pre + (hand - pre) * k / (steps - 1) for k in range(steps)]
        for p in path:
            if (hit := meets(np.array([p[0], p[1], z_in]), level)) is not None:
                return f"carried into {target}, {ref} or the hand would meet {hit}"
        for z in downs:
            if (hit := meets(np.array([pre[0], pre[1], z]), level)) is not None:
                return f"coming down in front of {target}, {ref} or the hand would meet {hit}"
        for rotation in tips[:-1]:
            if hit := meets(np.array([pre[0], pre[1], carry]), rotation, rotation @ level.T):
                return f"tipping {ref} in front of {target}, it or the hand would meet {hit}"
        poses = [(world((ee[0], ee[1], carry)), down_matrix(yaw))]
        poses += [(world((pre[0], pre[1], carry)), r) for r in tips]
        poses += [(world((pre[0], pre[1], float(z))), level) for z in downs[1:]]
        poses += [(world((p[0], p[1], z_in)), level) for p in path[1:]]
        poses += [(world((hand[0], hand[1], z_set)), level)]
        joints, why = solve(env, poses)
        if why is not None:
            return f"the arm cannot hold the hand level there: {why}"
        held = tuple(env.sim.model.body(int(env.sim.model.geom_bodyid[g])).name for g in skip)
        hit = next((m for q in joints if (m := arm_meets(env, q, held)) is not None), None)
        return None if hit is None else f"the arm's links would meet {hit}"

    chosen, reason, central = None, f"no spot inside {target} is within the arm's reach", ""
    for b in sorted(np.arange(c_v - r_side, c_v + r_side + 1e-9, 0.01), key=lambda b: abs(b - c_v)):
        grip_v = b - body_v
        pre = u * pre_u + v * grip_v
        for body_at in np.arange(c_u, r_low - 1e-9, -0.005):
            grip_u = float(body_at) - body_u
            if grip_u < pre_u + 0.01:
                break
            hand = u * grip_u + v * grip_v
            if not all(planner.within_reach(float(p[0]), float(p[1])) for p in (hand, pre)):
                continue
            reason = why_not(pre, hand) or ""
            if not reason:
                chosen = (pre, hand)
            if not reason or "arm" in reason:  # the arm: not mended by going less deep
                break
        if chosen is not None:
            break
        central = central or reason  # why not straight in at the middle: named if none fits
    if chosen is None:
        return f"on its side: {central or reason}"
    pre, hand = chosen
    yaw_steps = [
        Segment("twist", "turn", yaw=yaw_now + turned * k / TURN_STEPS)
        for k in range(1, TURN_STEPS + 1)
    ]
    dips = [math.pi / 2 * (1 - k / TIP_STEPS) for k in range(1, TIP_STEPS + 1)]

    def lean(label: str, dip: float) -> Segment:
        return Segment("twist", label, facing=facing, closing=closing, dip=dip)

    def go(label: str, xy: np.ndarray, z: float, speed: float, tol: float = 0.006) -> Segment:
        return Segment(
            "move",
            label,
            as_point(xy[:2], z),
            speed=speed,
            facing=facing,
            closing=closing,
            tolerance=tol,
        )

    return [
        *planner.rise(ee, carry),
        *yaw_steps,
        Segment("move", "transport", as_point(pre[:2], carry), yaw=yaw),
        *(lean("tip level", d) for d in dips),
        go("lower", pre, z_in, SLOW),
        go("insert", hand, z_in, INSERT),
        go("set down", hand, z_set, SLOW, 0.004),
        Segment("grip", "release", close=False, facing=facing, closing=closing),
        Segment("hold", "settle", steps=SETTLE_STEPS, facing=facing, closing=closing),
        go("withdraw", pre, z_set, INSERT),
        go("clear", pre, carry, SLOW),
        *(lean("tip back", d) for d in reversed(dips[:-1])),
        Segment("twist", "turn back", yaw=yaw),
        Segment("twist", "turn home", yaw=HOME_YAW),
    ]


RegionSpan = tuple[float, float, float, float, float]
"""A region along the way in ``u`` and across it ``v``: (its middle along u, along v, the
lowest and highest a body may be set along u, and how far across from the middle), the
sides kept :data:`INSET_M` inside."""


def region_span(geo: LiberoGeometry, target: str, u: np.ndarray, v: np.ndarray) -> RegionSpan:
    """Where in ``target`` (a level region) a body may be set down, along ``u`` and ``v``."""
    region = geo.box(target)
    assert region is not None
    centre = np.array(region.centre[:2])
    half = np.array(region.size[:2]) / 2
    c_u, c_v = float(centre @ u[:2]), float(centre @ v[:2])
    reach_u, reach_v = float(np.abs(u[:2]) @ half), float(np.abs(v[:2]) @ half)
    return c_u, c_v, c_u - reach_u + INSET_M, c_u + reach_u - INSET_M, reach_v - INSET_M
