"""How far the hand dips while it pulls a drawer open: the least of a few pitches at which
the hand's box, swept along the pull, meets nothing of the scene.

Level, the fingers closing up and down across the handle bar, the hand stands 10.5 cm
above and below the bar; pulled 14 cm out of a middle drawer, its lower corner ran into a
stove standing 25 cm in front of the cabinet (LIBERO-PRO ``libero_goal_swap`` task 0: the
burner's top 1.8 cm above the table, the hand's bottom 0.2 cm) and the drawer stayed shut.
Dipped, the approach points down into the face and the closing direction turns with it
(still across the bar, which is thin both ways), so the hand's lower end rises and its
back comes up over what stands in front; the wrist stays within reach for small dips
(measured at that scene: 20 degrees opened it 14.9 cm, 30 stalled short of the bar, 45
never grasped it). The first pitch at which the swept box meets no fixture (nothing that
gives way) is taken; with none free, the level pull as before. Movable things the box
brushes are let be: the hand is rounder than its box, and at libero_goal's own middle
drawer the level box grazes the plate's rim beside it (0.7 cm) while the level pull has
opened that drawer on every published state.

A handle too low for the hand to close across at any of those pitches (:func:`grasp_fits`:
the wooden cabinet's bottom drawer, its bar 4.6 cm above the table) is not grasped: the
closed fingertips press on its top and drag it, then hook the opened drawer from inside
(:func:`press_segments`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from worlds.libero.control import HOME_YAW, Vec3, side_matrix
from worlds.libero.door_skills import HAND_ABOVE_M, HAND_LONG_M, HAND_THICK_M, HAND_TOP_M
from worlds.libero.oriented import box_meets
from worlds.libero.segments import PUSH_DIP, SLOW, Segment

if TYPE_CHECKING:
    from worlds.libero.articulation import Handle
    from worlds.libero.geometry import LiberoGeometry
    from worlds.libero.skills import SkillPlanner

__all__ = [
    "HAND_BOX",
    "PRESS_DIP",
    "PULL_DIPS",
    "arm_clear",
    "clear_segments",
    "grasp_fits",
    "hand_meets",
    "open_segments",
    "press_segments",
    "pull_dip",
    "pull_posture",
    "pull_segments",
    "push_shut_segments",
]

PULL_DIPS = (0.0, math.radians(20.0))
"""Pitches tried, level first (every LIBERO drawer that opened level still does)."""
HAND_BOX = ((HAND_LONG_M, HAND_THICK_M), (HAND_ABOVE_M, HAND_TOP_M))
"""The hand's collision box about the gripper's site: half its length along the closing
direction and half its thickness across; where it starts and ends behind the site along
the pointing direction (as ``door_skills`` measures the hand)."""
SWEEP_STEP_M = 0.01
PRESS_DIP = math.radians(60.0)
"""How far below the horizontal the closed fingers point when they press on a low handle's
top: the hand's back leans out from the face, clear of the drawer above and its handle."""
PRESS = 0.3
"""The downward command added while dragging (the move's units: 1.0 = 5 cm per controller
step). Measured on the wooden cabinet's bottom drawer, in libero_goal's scene and in
libero_90's (the cabinet 7 cm further right, 5 nearer): 0.3 dragged it 11-13 cm, the fingertips
bearing on the bar with 30 N (47 N at the most); 0.2 never moved it (the fingertips
slid); 0.4 dragged it as far at 43 N (61 N at the most); 0.6 dragged it 14 cm in the one
scene and not at all in the other (the fingertips' end faces, turned with the hand, push
the bar back into the face as hard as they press)."""
HOOK_AFTER_M = 0.08
"""How far open the drag is taken to have left the drawer at least, for the hook inside."""
HOOK_IN_M = 0.02
"""How far behind the front panel's inner face (so opened) the fingertips go down."""
HOOK_DEPTH_M = 0.03
"""How far below the panel's top the fingertips go down inside the drawer."""
HOOK_MIN_M = 0.03
"""The least pull the hook is made for (a drawer nearly open when the skill starts is only
dragged: a hook 8 cm on from the bar would start in front of where it ends)."""
TIP_M = 0.01
"""How far the closed fingertips reach past the gripper's site along its pointing direction
(the finger meshes' ends, measured in LIBERO's initial state)."""


def hand_meets(
    geo: LiberoGeometry, grip: np.ndarray, rotation: np.ndarray, skip: set[int]
) -> str | None:
    """The name of a scene collision geom (not the robot's, not ``skip``) that the hand's
    box meets with the gripper's site at ``grip`` (world) turned ``rotation`` (columns:
    closing, across, pointing), or None."""
    (long, thick), (start, end) = HAND_BOX
    axes = rotation.T  # rows: closing, across, pointing
    centre = grip - axes[2] * (start + end) / 2
    half = np.array([long, thick, (end - start) / 2])
    return box_meets(geo.env, centre, axes, half, skip)


def pull_dip(
    geo: LiberoGeometry,
    cabinet: str,
    start: tuple[float, float, float],
    end: tuple[float, float, float],
    facing: tuple[float, float, float],
    closing: tuple[float, float, float],
) -> float:
    """The first of PULL_DIPS at which the hand, gripping the handle and swept from
    ``start`` to ``end`` (base frame), meets no fixture but ``cabinet``, the one whose
    drawer it pulls; level when none is free. The cabinet is let be: the hand works at its
    face, and dipped its box grazes the handle of the drawer above by a few millimetres at
    the grasp (the fingers brushed it, the pull opened the drawer all the same)."""
    skip = set(geo.collision_geoms(cabinet))
    for ref, item in geo.catalog.items.items():
        if item.kind == "object":
            skip.update(geo.collision_geoms(ref))
    a, b = geo.frame.to_world(start), geo.frame.to_world(end)
    steps = max(1, math.ceil(float(np.linalg.norm(b - a)) / SWEEP_STEP_M))
    for dip in PULL_DIPS:
        rotation = side_matrix(facing, closing, dip)
        if all(
            hand_meets(geo, a + (b - a) * i / steps, rotation, skip) is None
            for i in range(steps + 1)
        ):
            return dip
    return 0.0


def open_segments(
    geo: LiberoGeometry,
    cabinet: str | None,
    handle: Handle,
    face: tuple[float, float, float],
    end: tuple[float, float, float],
    carry: float,
) -> tuple[bool, list[Segment]]:
    """(whether the fingers start closed, the segments from ``face``, in front of the
    handle at its height, to the gripper pointing down again at ``carry``) of opening a
    drawer to ``end`` (the handle's middle, opened): grasped and pulled where the hand fits
    across the handle (:func:`pull_segments`), else pressed on and dragged
    (:func:`press_segments`)."""
    facing = (handle.opens_towards[0], handle.opens_towards[1], 0.0)
    inside = None
    if handle.inside_m is not None and handle.rim is not None:
        inside = (handle.inside_m, handle.rim)
    xy = (handle.grasp[0], handle.grasp[1])
    if handle.top is None or grasp_fits(geo, cabinet, handle.grasp, facing, handle.closing):
        pull = pull_segments(geo, cabinet, face, handle.grasp, end, facing, handle.closing, carry)
        if handle.top is None or cabinet is None or arm_clear(geo, pull):
            return False, pull
        # the arm cannot hold the pull clear of the scene: the press, held higher, if it can
        press = press_segments(xy, handle.top, (end[0], end[1]), facing, carry, inside)
        return (True, press) if arm_clear(geo, press) else (False, pull)
    return True, press_segments(xy, handle.top, (end[0], end[1]), facing, carry, inside)


def arm_clear(geo: LiberoGeometry, segments: list[Segment]) -> bool:
    """Whether the arm can hold the gripper at every move of ``segments`` turned to face a
    cabinet (``reach.solve``, each from the last, from its joints now) with its links clear
    of the scene (``reach.arm_meets``).

    A cabinet standing at the table's side, its drawers opening across the robot's front
    (libero_90's kitchen, task 23: the white cabinet on the left, a wine rack 36 cm across
    from its face on the right): pulled level, the wrist trails 20-25 cm behind the fingers,
    and pulled open it stands in the rack (``robot0_link5`` 5 cm into it, the solve from the
    initial state; from the posture after closing the bottom drawer, joint 7 at its stop);
    the hand stalled at the face three times. Pressing on the handle's top, the fingers
    point 60 degrees down and the wrist stands 17 cm higher, over the rack's top: that
    opened the drawer 16 cm. A cabinet facing the robot (the main suites') leaves the wrist
    over the table in front of it."""
    from worlds.libero.reach import arm_meets, solve

    poses = [
        (geo.frame.to_world(s.target), side_matrix(s.facing, s.closing, s.dip))
        for s in segments
        if s.kind == "move" and s.target is not None and s.facing is not None
    ]
    joints, why = solve(geo.env, poses)
    return why is None and all(arm_meets(geo.env, q) is None for q in joints)


def pull_posture(geo: LiberoGeometry, segments: list[Segment]) -> tuple[float, ...] | None:
    """The arm's joints holding the gripper at the grasp of ``segments`` (a pull's: its
    "reach" move), solved (``reach.solve``) through every move turned to face the cabinet
    from the joints now; None when the arm cannot hold them all, or there is no reach.

    Run with these as the controller's null-space posture (as the knob's grasp is), the
    arm comes in bent as the solve bends it. Pulled towards the initial state's joints, it
    came down to a face 69 cm out on the robot's left (libero_goal task 3, state 8: the top
    drawer, pushed back to 13.97 cm open, opened again) with the elbow nearly straight
    (joint 4 at -0.47 rad) and the shoulder near its stop (joint 2 at 1.63 of 1.76): the
    reach along the face drifted 4 cm outwards and stopped 7 cm short of the handle, the
    fingers closed on nothing, twice (the solve holds it there with the elbow at -1.3)."""
    from worlds.libero.reach import solve

    moves = [s for s in segments if s.kind == "move" and s.target is not None]
    turned = [s for s in moves if s.facing is not None]
    if not any(s.label == "reach" for s in turned):
        return None
    poses = [
        (geo.frame.to_world(s.target), side_matrix(s.facing, s.closing, s.dip))  # type: ignore[arg-type]
        for s in turned
    ]
    joints, why = solve(geo.env, poses)
    if why is not None:
        return None
    at = next(i for i, s in enumerate(turned) if s.label == "reach")
    return tuple(float(v) for v in joints[at])


def grasp_fits(
    geo: LiberoGeometry,
    cabinet: str | None,
    grip: tuple[float, float, float],
    facing: tuple[float, float, float],
    closing: tuple[float, float, float],
) -> bool:
    """Whether the hand, closed across the handle at ``grip`` (base frame), stays above the
    surface the cabinet stands on (its lowest collision geom's bottom) at one of PULL_DIPS.

    The hand is 21 cm along its closing direction: closed across a bar 4.6 cm above the
    table (libero_goal's wooden cabinet, its bottom drawer: LIBERO-PRO libero_goal_task 0,
    libero_90 task 6), it stood 10 cm below the bar, the table stopped it 6 cm above the
    handle and three tries never touched it. No pitch or roll of that grip fits between the
    table and the drawer above (the bar is 1.6 cm from the face, the fingertips 1.8 cm
    across: no hook behind it either); such a drawer is dragged by pressing on its handle
    (:func:`press_segments`). Without a cabinet to stand on, it fits."""
    if cabinet is None:
        return True
    try:
        low, _ = geo.world_extent(cabinet)
    except (KeyError, AttributeError):
        return True
    surface = geo.frame.from_world(low)[2]
    (long, thick), (start, end) = HAND_BOX
    grip_z = grip[2]
    for dip in PULL_DIPS:
        axes = side_matrix(facing, closing, dip).T  # rows: closing, across, pointing
        centre_z = grip_z - axes[2][2] * (start + end) / 2
        reach = abs(axes[0][2]) * long + abs(axes[1][2]) * thick
        reach += abs(axes[2][2]) * (end - start) / 2
        if centre_z - reach >= surface:
            return True
    return False


def press_segments(
    handle: tuple[float, float],
    top: float,
    end: tuple[float, float],
    facing: tuple[float, float, float],
    carry: float,
    inside: tuple[float, float] | None = None,
) -> list[Segment]:
    """Drag a drawer open by its handle's top with the closed fingertips, for a handle the
    hand cannot close across (:func:`grasp_fits`): from in front, turn the fingers to point
    PRESS_DIP below the horizontal into the face, closing along the bar (the hand's length
    across the drawer, not down into the table), come in over the bar, set the fingertips
    on its middle and pull to ``end`` pressing down (the drawer's only resistance is its
    joint's damping; the fingertips slip all the same: 11-14 cm of the 16). Then, with
    ``inside`` (how far behind the handle's middle the front panel's inner face is, and
    the panel's top), hook it from inside: the fingertips go down into the drawer behind
    where its panel stands once HOOK_AFTER_M open (further in if it opened further) and
    pull it to ``end`` by the panel's inside, without pressing (their push on the panel:
    9 N at the most).
    Then up, back off 8 cm and up to ``carry`` still turned, and turn back to point down.
    ``handle`` and ``end``: (x, y) of the bar's middle now and opened; ``top``: its height."""
    towards = np.array([facing[0], facing[1]])
    along = (float(-facing[1]), float(facing[0]), 0.0)
    pointing = side_matrix(facing, along, PRESS_DIP)[:, 2]

    def site(xy: np.ndarray, z: float) -> tuple[float, float, float]:
        # the gripper's site, so that the fingertips are at (xy, z)
        tip = np.array([xy[0], xy[1], z]) - pointing * TIP_M
        return (float(tip[0]), float(tip[1]), float(tip[2]))

    bar, opened = np.asarray(handle, dtype=float), np.asarray(end, dtype=float)
    on = top + 0.002
    pose = {"facing": facing, "closing": along, "dip": PRESS_DIP}
    segments = [
        Segment("twist", "turn", **pose),  # type: ignore[arg-type]
        Segment("move", "face", site(bar + towards * 0.10, on + 0.03), **pose),  # type: ignore[arg-type]
        Segment("move", "over", site(bar, on + 0.03), speed=SLOW, **pose),  # type: ignore[arg-type]
        Segment("move", "press", site(bar, on), speed=SLOW, tolerance=0.004, **pose),  # type: ignore[arg-type]
        Segment("move", "drag", site(opened, on), speed=SLOW, press=PRESS, **pose),  # type: ignore[arg-type]
        Segment("move", "lift", site(opened, on + 0.05), speed=SLOW, **pose),  # type: ignore[arg-type]
    ]
    last = site(opened, on + 0.05)
    behind, rim = inside if inside is not None else (0.0, 0.0)
    hook = bar - towards * (behind + HOOK_IN_M - HOOK_AFTER_M)
    pulled = opened - towards * behind
    # only a drawer the drag starts far from open: the hook must pull it on, never back
    if inside is not None and float(np.dot(pulled - hook, towards)) >= HOOK_MIN_M:
        low = rim - HOOK_DEPTH_M
        last = site(pulled, rim + 0.05)
        segments += [
            Segment("move", "over the inside", site(hook, rim + 0.02), speed=SLOW, **pose),  # type: ignore[arg-type]
            Segment("move", "into the drawer", site(hook, low), speed=SLOW, **pose),  # type: ignore[arg-type]
            Segment("move", "hook", site(pulled, low), speed=SLOW, **pose),  # type: ignore[arg-type]
            Segment("move", "out", last, speed=SLOW, **pose),  # type: ignore[arg-type]
        ]
    back = (last[0] + towards[0] * 0.08, last[1] + towards[1] * 0.08, last[2])
    return [
        *segments,
        Segment("move", "back off", back, speed=SLOW, **pose),  # type: ignore[arg-type]
        Segment("move", "clear", (back[0], back[1], carry), **pose),  # type: ignore[arg-type]
        Segment("twist", "turn back", yaw=HOME_YAW),
    ]


def pull_segments(
    geo: LiberoGeometry,
    cabinet: str | None,
    face: tuple[float, float, float],
    handle: tuple[float, float, float],
    end: tuple[float, float, float],
    facing: tuple[float, float, float],
    closing: tuple[float, float, float],
    carry: float,
) -> list[Segment]:
    """From in front of the handle (``face``, the gripper still pointing down there):
    turn to face the cabinet, dipped by :func:`pull_dip`, reach 5 mm past the handle's
    middle, close across the bar, pull to ``end``, release, back off 8 cm and rise to
    ``carry`` still facing it, then turn back to point down (turning while low pulled the
    arm off its line)."""
    towards = np.array([facing[0], facing[1]])
    reach = (handle[0] + towards[0] * 0.005, handle[1] + towards[1] * 0.005, handle[2])
    dip = 0.0 if cabinet is None else pull_dip(geo, cabinet, reach, end, facing, closing)
    pose = {"facing": facing, "closing": closing, "dip": dip}
    back = (end[0] + towards[0] * 0.08, end[1] + towards[1] * 0.08, end[2])
    return [
        Segment("twist", "turn", **pose),  # type: ignore[arg-type]
        Segment("move", "face", face, **pose),  # type: ignore[arg-type]
        Segment("move", "reach", reach, speed=SLOW, tolerance=0.004, **pose),  # type: ignore[arg-type]
        Segment("grip", "grasp", close=True, **pose),  # type: ignore[arg-type]
        Segment("move", "pull", end, speed=SLOW, **pose),  # type: ignore[arg-type]
        Segment("grip", "release", close=False, **pose),  # type: ignore[arg-type]
        Segment("move", "back off", back, speed=SLOW, **pose),  # type: ignore[arg-type]
        Segment("move", "clear", (back[0], back[1], carry), **pose),  # type: ignore[arg-type]
        Segment("twist", "turn back", yaw=HOME_YAW),
    ]


def push_shut_segments(
    planner: SkillPlanner,
    handle_xy: np.ndarray,
    towards: np.ndarray,
    hz: float,
    end: np.ndarray,
    ee: Vec3,
    carry: float,
) -> list[Segment]:
    """Push a drawer shut along its joint axis with the closed fingers, the hand dipped
    PUSH_DIP below the horizontal into the face. Pointing straight down at a bottom
    drawer the wrist sat 0.2 m above the fingers, level with the cabinet's top, and met
    its front edge 8 cm into the push (libero_10 task 3); pointing level into the face
    the arm could not hold the wrist that low. Dipped, the wrist stays back from the
    face and below the top. The wrist turns high, over the start of the push."""
    facing = (float(towards[0]), float(towards[1]), 0.0)
    closing = (float(-towards[1]), float(towards[0]), 0.0)  # fingers side by side
    front = handle_xy + towards[:2] * 0.05
    tilt = {"facing": facing, "closing": closing, "dip": PUSH_DIP}

    def at(xy: np.ndarray, z: float = hz) -> Vec3:
        return (float(xy[0]), float(xy[1]), z)

    back = end + towards[:2] * 0.08
    return [
        Segment("grip", "close", close=True),
        *planner.rise(ee, carry),
        Segment("move", "approach", at(front, carry)),
        Segment("twist", "turn", **tilt),  # type: ignore[arg-type]
        Segment("move", "lower", at(front), speed=SLOW, **tilt),  # type: ignore[arg-type]
        Segment("move", "push", at(end + towards[:2] * 0.01), speed=SLOW, **tilt),  # type: ignore[arg-type]
        Segment("move", "back off", at(back), speed=SLOW, **tilt),  # type: ignore[arg-type]
        *clear_segments(at(back, carry), facing, closing, PUSH_DIP),
    ]


def clear_segments(up: Vec3, facing: Vec3, closing: Vec3, dip: float = 0.0) -> list[Segment]:
    """Up out of the way still facing the cabinet, then the wrist turned back to point
    down where the arm is free (turning while moving low pulled it off its line)."""
    return [
        Segment("move", "clear", up, facing=facing, closing=closing, dip=dip),
        Segment("twist", "turn back", yaw=HOME_YAW),
    ]
