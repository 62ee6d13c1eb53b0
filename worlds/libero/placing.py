"""Places that need more than lowering a held thing straight down where it hangs: into a
narrow slot (turned along it, leaning, clear of its walls) and onto a sloped cradle (a wine
rack's top: a tall thing tipped over and laid along it).

Both read where LIBERO's own check judges the thing (its body position, against the
region's site as LIBERO's ``In`` and ``On`` compute it) and the collision geoms around it,
never a task's goal. The plan is worked out once, before anything moves, so the envelope
checks every point the gripper is sent to; a turn of the wrist in place is no motion.
"""

from __future__ import annotations

import math

import numpy as np

from worlds.libero.control import HOME_YAW, Vec3
from worlds.libero.geometry import LiberoGeometry

__all__ = ["LEAN_RAD", "about_z", "lay_down", "lean_matrix", "slot_fit"]

LEAN_RAD = 0.1
"""How far a thing let go of in a narrow slot leans (about 6 degrees: at 10 a book 11.2 cm
long leant 13.3 cm along a caddy's 13.4 cm compartment, with no room for a margin)."""
SLOT_MARGIN_M = 0.0025
CRADLE_TILT_RAD = math.radians(20)
"""A region whose surface is tilted more than this is a cradle: nothing stands on it."""
LAY_PITCH_RAD = math.radians(45)
"""How far below the horizontal a thing to be laid down points when let go: at 30 degrees
the Panda could not bring the hand, pointing nearly level, within 0.45 m of its base."""
LAY_DROP_M = 0.035
"""How far above the cradle the thing's lower end is let go."""
TIP_STEPS = 6
"""Turns of the wrist a tipping is split into (the arm strays off a quarter turn at once)."""


def slot_fit(
    geo: LiberoGeometry, ref: str, target: str, ee: Vec3, yaw: float, spot: tuple[float, float]
) -> tuple[Vec3, float, Vec3] | None:
    """Where and how to let go of a held thing in a narrow slot: (gripper point, finger
    yaw, lean), or None when no way fits (the plain place then runs).

    LIBERO's ``In`` judges the thing's body position, and a book's is on its bottom,
    1.3 cm from the middle along its length and 2.2 mm below its collision box: standing
    on a caddy's floor (1.1 cm under the region) it is 3.5 mm below the lowest point
    ``In`` accepts, so a book put in upright was never in (libero_10 task 5 passed only
    when it fell in leaning). So the thing goes in leaning LEAN_RAD along the slot, its
    top towards the end away from its body position (which lifts that end off the
    floor, 7 mm for the book, more as it settles against the wall), its bottom as far
    towards that end as its collision geoms (turned, leant and lowered) clear every wall
    by SLOT_MARGIN_M with its body position inside the region; of the two finger yaws
    that line it up, the one that allows this."""
    corners = geo.corners_of(ref)
    body = np.array(geo.body_position(ref))
    hand = np.array(ee)
    inside = geo.region_bounds(target)
    goal = geo.box(target)
    if inside is None or goal is None:
        return None
    low_r, high_r = inside
    steps = np.arange(-0.03, 0.0301, 0.0025)
    best: tuple[float, Vec3, float, Vec3] | None = None
    for turn_yaw in (yaw, yaw + np.pi):
        turned = about_z(turn_yaw - geo.closing_yaw())
        away = turned @ (body - hand)
        # along the slot (the fingers close across it), from the body's end to the other:
        # the top leans that way
        across = np.array([-np.sin(turn_yaw), np.cos(turn_yaw), 0.0])
        across = across if float(np.dot(away, across)) < 0 else -across
        lean = np.cross([0.0, 0.0, 1.0], across) * LEAN_RAD
        rotation = lean_matrix(lean) @ turned
        moved = (corners - hand) @ rotation.T
        body_at = rotation @ (body - hand)
        z = goal.bottom + 0.008 - float(moved[:, 2].min())
        for dx in steps:
            for dy in steps:
                at = np.array([spot[0] + dx, spot[1] + dy, z])
                judged = body_at + at
                if np.any(judged[:2] < low_r[:2] + 0.004) or np.any(
                    judged[:2] > high_r[:2] - 0.004
                ):
                    continue
                low = (moved + at).min(axis=0) - SLOT_MARGIN_M
                high = (moved + at).max(axis=0) + SLOT_MARGIN_M
                low[2] += 2 * SLOT_MARGIN_M
                # the bottom towards the body's side: the further, the steeper it leans
                score = float(-np.dot([dx, dy], across[:2])) - 0.1 * float(np.hypot(dx, dy))
                if best is not None and score <= best[0]:
                    continue
                if geo.blocked(tuple(low), tuple(high), ignore=(ref,)) is None:  # type: ignore[arg-type]
                    point = (float(at[0]), float(at[1]), float(at[2]))
                    vec = (float(lean[0]), float(lean[1]), float(lean[2]))
                    best = (score, point, float(turn_yaw), vec)
    if best is None:
        return None
    return best[1], best[2], best[3]


def about_z(angle: float) -> np.ndarray:
    c, s_ = np.cos(angle), np.sin(angle)
    return np.array([[c, -s_, 0.0], [s_, c, 0.0], [0.0, 0.0, 1.0]])


def lean_matrix(vector: np.ndarray) -> np.ndarray:
    """The rotation matrix of a rotation vector (Rodrigues)."""
    angle = float(np.linalg.norm(vector))
    if angle < 1e-12:
        return np.eye(3)
    k = np.asarray(vector, dtype=float) / angle
    cross = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + np.sin(angle) * cross + (1 - np.cos(angle)) * cross @ cross


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
    position is) is LAY_DROP_M above the cradle's line and let go: it falls into the
    cradle lying down."""
    from worlds.libero.skills import SLOW, Segment

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
    if obj.size[2] < 2.5 * width or obj.size[2] < 0.1:
        return None  # only a tall thing held upright is laid down
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
    # just above the cradle's line (LIBERO's band starts at the site's thickness)
    rest = site + matrix.T @ np.array([0.0, 0.0, size[2] + 0.02])
    rest = rest + along * 0.7 * float(size[long_i])
    body = np.array(geo.body_position(ref))
    hand = np.array(ee)
    turned = about_z(yaw - current)
    pitch = math.pi / 2 - LAY_PITCH_RAD
    axis = np.cross(along, [0.0, 0.0, 1.0])  # turns the pointing-down hand towards ``along``
    tipped = lean_matrix(axis * pitch) @ turned
    offset = tipped @ (body - hand)
    low_end = rest + np.array([0.0, 0.0, LAY_DROP_M])
    release = low_end - offset
    over = np.array([release[0], release[1], max(carry, release[2] + 0.05)])
    start = (float(over[0]), float(over[1]), float(over[2]))
    end = (float(release[0]), float(release[1]), float(release[2]))
    segments = [Segment("move", "transport", start, yaw=yaw)]
    for step in range(1, TIP_STEPS + 1):
        lean = axis * pitch * step / TIP_STEPS
        vec = (float(lean[0]), float(lean[1]), float(lean[2]))
        segments.append(Segment("twist", "tip", yaw=yaw, lean=vec))
    vec = (float(axis[0] * pitch), float(axis[1] * pitch), float(axis[2] * pitch))
    segments += [
        Segment("move", "lower", end, speed=SLOW, yaw=yaw, lean=vec),
        Segment("grip", "release", close=False, yaw=yaw, lean=vec),
        Segment("move", "retreat", start, speed=SLOW, yaw=yaw, lean=vec),
    ]
    for step in range(TIP_STEPS - 1, -1, -1):
        lean = axis * pitch * step / TIP_STEPS
        vec = (float(lean[0]), float(lean[1]), float(lean[2]))
        segments.append(Segment("twist", "turn back", yaw=HOME_YAW if step == 0 else yaw, lean=vec))
    return segments
