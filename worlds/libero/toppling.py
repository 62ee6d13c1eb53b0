"""A tall thing put in a drawer lower than it stands: set upright at the drawer's near end
and pushed over along the drawer's long side, so that it lies in the drawer and the drawer
closes over it.

LIBERO-PRO libero_10_task 3 ("put the bottle in the bottom drawer of the cabinet and close
it"): the wine bottle (15.7 cm) set upright in the white cabinet's bottom drawer (5.6 cm
under the middle one) stopped the drawer closing, three times. Laid down from the hand
instead, tipped about the fingers' closing line like a bottle into a wine rack, the hand's
long side (21 cm, across the bottle) stood in the cabinet's face and the drawer handle above
wherever the bottle lay inside the drawer. Stood at the drawer's near end with the hand's
long side along the drawer and pushed over from behind its top, nothing of the hand comes
near the cabinet's face.

Everything is read from the simulator: the region's site (which of its axes stands up, its
half sizes), the held thing's box and where the hand holds it, and the scene's collision
geoms the hand's box is tested against (as it is turned: :mod:`.oriented`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from worlds.libero.control import Vec3
from worlds.libero.door_skills import HAND_ABOVE_M, HAND_LONG_M, HAND_THICK_M, HAND_TOP_M
from worlds.libero.oriented import oriented_blocked
from worlds.libero.segments import SLOW, Segment
from worlds.libero.wrist import hand_yaw

if TYPE_CHECKING:
    from worlds.libero.skills import SkillPlanner

__all__ = ["topple_into"]

HAND_SPAN_M = (HAND_ABOVE_M, HAND_TOP_M)
"""From and to how far above the gripper's site the hand's box reaches."""
PUSH_M = 0.10
"""How far the closed fingers push past where they meet the thing's top."""
BELOW_TOP_M = 0.03
"""How far below the thing's top the fingers push it."""
CLEARANCE_M = 0.05
"""How far above the drawer's top the held thing's bottom is carried (as ``skills``)."""


def topple_into(planner: SkillPlanner, ref: str, target: str, ee: Vec3) -> list[Segment] | None:
    """The segments that set the held ``ref`` upright at the near end of the drawer region
    ``target`` and push it over along the drawer, or None when that does not apply (not a
    drawer, the thing is low enough to stand in it, not tall and thin, too long to lie in
    it, or no place at its near end where the hand has room)."""
    geo = planner.geo
    item = geo.catalog.get(target)
    frame = geo.region_frame(target)
    obj = geo.box(ref)
    if item is None or not item.drawer or frame is None or obj is None:
        return None
    site, matrix, size = frame
    cols = [np.array(matrix[:, i], dtype=float) for i in range(3)]
    up_i = int(np.argmax([abs(c[2]) for c in cols]))  # whichever of the site's axes stands up
    long_i, side_i = sorted((i for i in range(3) if i != up_i), key=lambda i: -size[i])
    height, width = float(obj.size[2]), float(min(obj.size[0], obj.size[1]))
    long_half, side_half = float(size[long_i]), float(size[side_i])
    if height <= 2 * size[up_i] or height < 2.5 * width or height + width > 2 * long_half:
        return None
    along = np.array([cols[long_i][0], cols[long_i][1]])
    side = np.array([cols[side_i][0], cols[side_i][1]])
    along /= max(float(np.linalg.norm(along)), 1e-9)
    side /= max(float(np.linalg.norm(side)), 1e-9)
    if float(along @ site[:2]) < 0:  # it falls away from the robot's base
        along = -along
    floor = float(site[2] - size[up_i])
    # the fingers close along the fall, so the hand's long side lies along the drawer: of
    # the two turns that do it, the one nearest the wrist's now
    now = hand_yaw(geo)
    yaw = math.atan2(float(along[1]), float(along[0]))
    yaw += round((now - yaw) / math.pi) * math.pi
    turn = yaw - now
    c, s = math.cos(turn), math.sin(turn)
    body = np.array(geo.body_position(ref))
    held = np.array(ee[:2]) - body[:2]
    offset = np.array([c * held[0] - s * held[1], s * held[0] + c * held[1]])
    hang = ee[2] - obj.bottom
    release_z = floor + 0.01 + hang
    top = floor + height
    push_z = top - BELOW_TOP_M
    # carried with its bottom over the drawer's top (as every place is): carried lower, the
    # ketchup's foot (11 cm under the fingers) swept the open drawer's front panel shut
    # on the way in, 15 cm to 5 (libero_90 task 32), and the place was refused as closed
    goal = geo.box(target)
    over = goal.top + hang + CLEARANCE_M if goal is not None else release_z
    carry = planner.travel_height(ee[2], release_z + 0.02, over)
    near = -long_half + width / 2 + 0.008
    room = side_half - width / 2 - 0.005
    for b in sorted(np.arange(-room, room + 1e-9, 0.005), key=abs):
        spot = np.array(site[:2]) + along * near + side * float(b)
        hand = spot + offset
        behind = spot - along * (width / 2 + 0.02)
        end = behind + along * PUSH_M
        if not (
            _hand_free(planner, ref, hand, release_z, yaw)
            and _hand_free(planner, ref, behind, push_z, yaw)
            and _hand_free(planner, ref, end, push_z, yaw)
            and planner.within_reach(float(hand[0]), float(hand[1]))
        ):
            continue
        return [
            *planner.rise(ee, carry),
            Segment("twist", "turn", yaw=yaw),
            Segment("move", "transport", _at(hand, carry), yaw=yaw),
            Segment("move", "lower", _at(hand, release_z), speed=SLOW, yaw=yaw),
            Segment("grip", "release", close=False, yaw=yaw),
            Segment("move", "up", _at(hand, top + 0.03), speed=SLOW, yaw=yaw),
            Segment("grip", "close", close=True, yaw=yaw),
            Segment("move", "behind", _at(behind, top + 0.03), speed=SLOW, yaw=yaw),
            Segment("move", "lower", _at(behind, push_z), speed=SLOW, yaw=yaw),
            Segment("move", "push over", _at(end, push_z), speed=SLOW, yaw=yaw),
            Segment("move", "clear", _at(end, carry), yaw=yaw),
        ]
    return None


def _hand_free(planner: SkillPlanner, ref: str, xy: np.ndarray, z: float, yaw: float) -> bool:
    """Whether the hand pointing down, its gripper site at (``xy``, ``z``), the fingers
    closing at ``yaw``, meets nothing in the scene but ``ref`` (its box and the fingers'
    below it, as they are turned)."""
    low, high = HAND_SPAN_M
    hand = (float(xy[0]), float(xy[1]), z + (low + high) / 2)
    fingers = (float(xy[0]), float(xy[1]), z + low / 2)
    return (
        oriented_blocked(
            planner.geo, hand, (HAND_LONG_M, HAND_THICK_M, (high - low) / 2), yaw, ignore=(ref,)
        )
        is None
        and oriented_blocked(
            planner.geo, fingers, (0.02, 0.012, low / 2 + 0.01), yaw, ignore=(ref,)
        )
        is None
    )


def _at(xy: np.ndarray, z: float) -> Vec3:
    return (float(xy[0]), float(xy[1]), float(z))
