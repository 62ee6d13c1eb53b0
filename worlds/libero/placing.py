"""A place that needs more than lowering a held thing straight down where it hangs: onto a
sloped cradle (a wine rack's top), a tall thing is tipped over and laid along it.

It reads where LIBERO's own check judges the thing (its body position, against the
region's site as LIBERO's ``In`` and ``On`` compute it) and the collision geoms around it,
never a task's goal. The plan is worked out once, before anything moves, so the envelope
checks every point the gripper is sent to; a turn of the wrist in place is no motion.
"""

from __future__ import annotations

import math

import numpy as np

from worlds.libero.control import HOME_YAW, Vec3, lean_matrix
from worlds.libero.geometry import LiberoGeometry
from worlds.libero.reach import down_tilt, outward_hand, outward_lean, reach_radius, solve
from worlds.libero.segments import SLOW, Segment

__all__ = ["PLACE_TILT_RAD", "about_z", "lay_down", "lean_out", "place_reach", "slot_yaw"]

CRADLE_TILT_RAD = math.radians(20)
"""A region whose surface is tilted more than this is a cradle: nothing stands on it."""
LAY_PITCH_RAD = math.radians(45)
"""How far below the horizontal a thing to be laid down points when let go: at 30 degrees
the Panda could not bring the hand, pointing nearly level, within 0.45 m of its base."""
LAY_DROP_M = 0.035
"""How far above the cradle a low thing (not tipped) is let go."""
TIPPED_DROP_M = 0.02
"""How far above the cradle a tipped thing's lower end is let go. Hanging 45 degrees down
from the fingers, it lands on that end and swings down about it; from 3.5 cm it bounced
and came to rest anywhere across the cradle, and over its front lip it rolled off
(libero_goal task 9 state 32: onto the table 14 cm away). From 2 cm (over the band's
middle) it settles where it lands: states 0-9, 20-24 and 30-34 all came to rest in the
groove the same way, its body 2.4-2.5 cm into the band."""
BAND_MIDDLE_M = 0.05
"""How far into LIBERO's band for a cradle region (0.1 m deep from the site's face, along
its tilted normal: back over the cradle's groove) a tipped thing's lower end is let go:
its middle. At 2 cm in, the bottle came down 1.4 cm behind the front lip, half its
width over it, and which way it rolled was chance."""
TIP_STEPS = 6
"""Turns of the wrist a tipping is split into (the arm strays off a quarter turn at once)."""


def about_z(angle: float) -> np.ndarray:
    c, s_ = np.cos(angle), np.sin(angle)
    return np.array([[c, -s_, 0.0], [s_, c, 0.0], [0.0, 0.0, 1.0]])


def lay_down(geo: LiberoGeometry, ref: str, target: str, ee: Vec3, carry: float) -> list | None:
    """The segments that lay a tall held thing (a bottle by its neck) along a sloped cradle
    region (a wine rack's top), or None when that does not apply (the plain place runs).

    LIBERO's ``On`` for such a region takes the thing's body position (a bottle's is the
    middle of its bottom) within the region's footprint and in a band 0.1 m deep above
    its tilted site, and the thing touching the rack: a bottle stood upright beside it
    or on its slope falls off. So the fingers turn to close across the cradle's narrow
    side, carry the thing over it, the wrist tips in steps about the fingers' closing
    line until the thing points LAY_PITCH_RAD below the horizontal along the cradle's long
    side, away from the robot, and it is lowered until its lower end (where its body
    position is) is TIPPED_DROP_M above the middle of LIBERO's band and let go: it falls
    into the cradle's groove lying down. A low thing (a cream cheese box, LIBERO-PRO's
    "put the cream cheese on the rack") is not tipped: turned the same way (its long side
    along the cradle), its body is let go LAY_DROP_M above the middle of the cradle's line
    (the plain place aimed at the site, on the rack's front lip, and it slid off)."""

    frame = geo.region_frame(target)
    if frame is None:
        return None
    site, matrix, size = frame
    if math.acos(min(1.0, abs(float(matrix[2, 2])))) < CRADLE_TILT_RAD:
        return None
    obj = geo.box(ref)
    if obj is None:
        return None
    width = min(obj.size[0], obj.size[1])
    # a tall thing held upright is tipped over; a low one (a cream cheese box) is only
    # turned along the cradle and let go into it
    tall = obj.size[2] >= 2.5 * width and obj.size[2] >= 0.1
    # the cradle's long side (LIBERO's test reads the site's matrix rows as its axes)
    axes = [np.array([matrix[i, 0], matrix[i, 1], 0.0]) for i in (0, 1)]
    long_i = 0 if size[0] >= size[1] else 1
    along = axes[long_i] / max(float(np.linalg.norm(axes[long_i])), 1e-9)
    if float(np.dot(along[:2], site[:2])) < 0:  # pointing away from the robot's base
        along = -along
    narrow_yaw = math.atan2(along[1], along[0]) + math.pi / 2
    current = geo.closing_yaw()
    yaw = narrow_yaw + round((current - narrow_yaw) / math.pi) * math.pi
    # where the body should come to rest: over the middle of the region's long side, a
    # little past its centre away from the robot (the bottle slides back as it settles),
    # above the cradle's line (LIBERO's band starts at the site's thickness): a low thing
    # just past it, a tipped one over the band's middle, behind the front lip
    depth = BAND_MIDDLE_M if tall else 0.02
    rest = site + matrix.T @ np.array([0.0, 0.0, size[2] + depth])
    if tall:
        rest = rest + along * 0.7 * float(size[long_i])
    body = np.array(geo.body_position(ref))
    hand = np.array(ee)
    turned = about_z(yaw - current)
    pitch = math.pi / 2 - LAY_PITCH_RAD if tall else 0.0
    axis = np.cross(along, [0.0, 0.0, 1.0])  # turns the pointing-down hand towards ``along``
    tipped = lean_matrix(axis * pitch) @ turned
    offset = tipped @ (body - hand)
    low_end = rest + np.array([0.0, 0.0, TIPPED_DROP_M if tall else LAY_DROP_M])
    release = low_end - offset
    over = np.array([release[0], release[1], max(carry, release[2] + 0.05)])
    start = (float(over[0]), float(over[1]), float(over[2]))
    end = (float(release[0]), float(release[1]), float(release[2]))
    segments = [Segment("move", "transport", start, yaw=yaw)]
    for step in range(1, TIP_STEPS + 1 if tall else 1):
        lean = axis * pitch * step / TIP_STEPS
        vec = (float(lean[0]), float(lean[1]), float(lean[2]))
        segments.append(Segment("twist", "tip", yaw=yaw, lean=vec))
    vec = (float(axis[0] * pitch), float(axis[1] * pitch), float(axis[2] * pitch))
    segments += [
        Segment("move", "lower", end, speed=SLOW, yaw=yaw, lean=vec),
        Segment("grip", "release", close=False, yaw=yaw, lean=vec),
        Segment("move", "retreat", start, speed=SLOW, yaw=yaw, lean=vec),
    ]
    for step in range(TIP_STEPS - 1 if tall else 0, -1, -1):
        lean = axis * pitch * step / TIP_STEPS
        vec = (float(lean[0]), float(lean[1]), float(lean[2]))
        segments.append(Segment("twist", "turn back", yaw=HOME_YAW if step == 0 else yaw, lean=vec))
    return segments


def slot_yaw(geo: LiberoGeometry, target: str, max_grasp: float) -> float | None:
    """For a narrow compartment (a slot half as wide as it is long, and narrower than the
    fingers open, ``max_grasp``: a desk caddy's back compartment), the finger yaw that turns
    what they hold across its narrow side (the fingers close across a thin thing's thin
    side, so that side then lies along the slot's narrow side), the one of the two nearest
    the wrist's current turn; None for anything else (what is held keeps its turn)."""
    item = geo.catalog.get(target)
    axes = geo.region_axes(target)
    if axes is None or item is None or item.drawer:
        return None  # a drawer's region is nominal: a bowl fits it any way round
    (narrow, narrow_yaw), (wide, _) = axes
    if narrow > 0.5 * wide or narrow > max_grasp:
        return None
    current = geo.closing_yaw()
    return float(narrow_yaw + round((current - narrow_yaw) / np.pi) * np.pi)


PLACE_TILT_RAD = math.radians(20)
"""The most a place tilts the hand (and what it holds) out: a spot is chosen where the
controller reaches by itself (``reach.CONTROLLER_TILT_RAD`` at the release's height), and
the carry above it may need more."""


def lean_out(
    geo: LiberoGeometry,
    at: tuple[float, float],
    heights: tuple[float, float],
    yaw: float | None,
    below: Vec3,
) -> tuple[tuple[float, float], float | None, Vec3 | None, tuple[float, ...] | None]:
    """((x, y), yaw, lean, posture) of a place with the fingers carried over ``at`` (x, y)
    and lowered, at ``heights`` (carry, release), the hand at ``yaw`` (None: as it is):
    (x, y) as given, the hand as the place holds it, and no lean, where the arm holds it
    pointing down; else tilted out by the least lean it holds, the controller pulled
    towards the joints solved there. Commanded to point down where it cannot, the
    controller weighs the orientation against the position and stops short: LIBERO-PRO
    libero_10_swap task 8's first moka pot, its fingers sent 0.846 m out (held with the
    hand tilted 10 degrees), stalled 3.9 cm short, and the second pot, set beside it,
    came down on it. The lean swings what hangs below the fingers (its body at ``below``
    from them) out with the hand (the pot 3.7 cm past its spot, leaned 15 degrees): the
    fingers are then brought in by as much, where the arm holds the same lean."""
    x, y = at
    carry, release_z = heights
    hand = geo.closing_yaw() if yaw is None else yaw
    env, frame = geo.env, geo.frame
    points = [(x, y, carry), (x, y, release_z)]
    held = down_tilt(env, frame, points, hand, PLACE_TILT_RAD, False)
    if held is None or held[1] == 0.0:
        return (x, y), yaw, None, None
    lean = outward_lean((x, y), held[1])
    d = np.asarray(below, dtype=float)
    swing = lean_matrix(np.array(lean)) @ d - d
    inner = (x - float(swing[0]), y - float(swing[1]))
    hold = outward_hand((x, y), hand, held[1])
    poses = [(frame.to_world((*inner, z)), hold) for z in heights]
    joints, why = solve(env, poses)
    if why is None:
        return inner, hand, lean, tuple(float(q) for q in joints[-1])
    return (x, y), hand, lean, tuple(float(q) for q in held[2])


def place_reach(geo: LiberoGeometry, towards: Vec3, z: float, turn: float) -> float:
    """How far out (from the base's axis) towards ``towards`` at height ``z`` the arm
    brings the fingers with the hand turned ``turn`` from its yaw now: LIBERO-PRO
    libero_10_swap task 8's stove stands 0.80-0.95 m out, where the arm reaches only
    its near edge, and how near depends on the turn (``reach.reach_radius``)."""
    azimuth = math.atan2(towards[1], towards[0])
    yaw = geo.closing_yaw() + turn
    return reach_radius(geo.env, geo.frame, azimuth, z, yaw)
