"""A low thing the hand has no room beside and no push frees, grasped with the fingers askew.

libero_10 task 1, initial state 44: the cream cheese box (8.1 x 4.3 x 1.8 cm) lies with a
milk carton (14.8 cm tall) standing 4.9 cm from its long side, over its middle, and an
orange juice 2.3 cm from one end. The fingers close across its 4.3 cm, so the Panda's hand
(21 cm long that way) reached over the milk: it came down on the milk's top and the
fingers closed on nothing, three times. No push (:mod:`~worlds.libero.nudging`) has
room: across the box the pushing hand meets the milk (its length along the push) or, turned,
the orange juice before the box has moved far enough; along the box, the orange juice and
the alphabet soup stand where the hand comes down behind it.

Turned off square across the thing, the hand's far end swings past a neighbour's corner,
and the fingers, closing, still bear on its two long faces and turn it square between the
pads (measured there: turned 15-27.5 degrees and slid 2-3.5 cm along the box, each of
seven grasps held it; the three tried on, put in the basket, stayed there). The turns are
tried least first, and at each the grasp points along the thing's middle nearest it first,
where the chord the fingers close along meets its long faces at least
:data:`~worlds.libero.geometry.GRIP_END_M` from their ends and its width that way still
fits the open fingers. The hand is taken as the turned box it is
(:func:`~worlds.libero.oriented.oriented_blocked`), kept :data:`CLEAR_M` off what stands
beside: the axis-aligned box around it, which the grasp's own search and the pushes take,
grows 8 cm wider turned 25 degrees, and found no room at any turn. Only a hand that comes
down on a neighbour (:data:`INSIDE_M`) is turned: one that grazes a bowl's rim or a bottle
is left as the plain pick has it, which picks there.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from worlds.libero.control import Vec3
from worlds.libero.geometry import FLAT_M, GRIP_END_M
from worlds.libero.holding import HAND_BOX_M, HAND_SPAN_M
from worlds.libero.oriented import oriented_blocked
from worlds.libero.rim_arc import FINGER_HALF_M, FINGER_OPEN_M

if TYPE_CHECKING:
    from worlds.libero.geometry import LiberoGeometry

__all__ = ["CLEAR_M", "INSIDE_M", "TURN_STEP_DEG", "askew_grasp", "grips"]

TURN_STEP_DEG = 2.5
"""How finely the turns off square are tried (up to where the thing's width fits)."""
SLIDE_STEP_M = 0.005
"""How finely the grasp points along the thing's middle are tried."""
CLEAR_M = 0.005
"""How far the hand's box, turned, is kept off what stands beside: the turn swings its end
past a neighbour's corner, and at state 44 the least turn found with none came down 0 mm
from the milk's box."""
SPAN_DEG = 1.0
"""How finely the thing's narrowest direction is searched for."""
INSIDE_M = (0.005, 0.03)
"""How far inside the hand's box a neighbour must stand (each way across; above its bottom)
for the hand to come down on it, rather than graze it as plain picks do: in the four main
suites (initial states 0-9 and 20-24, every low thing's grasp planned) 38 had the hand's
box meet a neighbour, each a bowl's rim it clears 1.5 cm higher or a bottle less than 2 mm
inside it, and none more (among them libero_goal task 6 at state 7 and libero_object task
1 at states 9 and 22, which pick that thing, as the suites do every episode); at state 44
the milk stands 3.4 cm inside it, to 9.5 cm up."""


def askew_grasp(geo: LiberoGeometry, ref: str, at: Vec3, yaw: float) -> tuple[Vec3, float] | None:
    """(grasp point, finger yaw), base frame, for a low solid ``ref`` whose hand, coming
    down to close the fingers at ``at`` along ``yaw``, comes down on something standing
    beside it (:func:`_comes_down_on`): the fingers turned least off square across it,
    where they and the hand come down free; None where the hand does not come down on
    anything at ``at`` (grazing is left as it was) or no turn gives it room."""
    box = geo.box(ref)
    if box is None or box.size[2] >= FLAT_M or geo.hollow(ref):
        return None
    z = at[2]
    if not _comes_down_on(geo, ref, np.array(at[:2]), yaw, z):
        return None
    centre, across, half_long, half_short = _rectangle(geo.footprint(ref))
    along = np.array([-across[1], across[0]])
    square = math.atan2(float(across[1]), float(across[0]))
    for turn, slide in grips(half_long, half_short):
        point = centre + along * slide
        if _room(geo, ref, point, square + turn, z, CLEAR_M):
            return (float(point[0]), float(point[1]), z), square + turn
    return None


def grips(half_long: float, half_short: float) -> list[tuple[float, float]]:
    """(turn off square, radians; slide along the middle from the centre) of the grasps of a
    rectangle ``half_long`` by ``half_short`` whose fingers, closing along the turned
    direction, meet its two long faces at least :data:`~worlds.libero.geometry.GRIP_END_M`
    from their ends and open wide enough round it; least turn first, then least slide."""
    out: list[tuple[float, float]] = []
    for step in range(int(90.0 / TURN_STEP_DEG)):
        turn = math.radians(step * TURN_STEP_DEG)
        width = 2 * (half_short * math.cos(turn) + half_long * math.sin(turn))
        if width > FINGER_OPEN_M - 0.004:
            break
        # the chord the fingers close along meets the long faces +-tan(turn) * half_short
        # either side of where it crosses the middle
        reach = half_long - GRIP_END_M - half_short * math.tan(turn)
        slides = [0.0] + [side * SLIDE_STEP_M * k for k in range(1, 20) for side in (1, -1)]
        for slide in slides:
            if abs(slide) <= reach:
                out += [(sign * turn, slide) for sign in ((1, -1) if step else (1,))]
    return out


def _rectangle(points: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float]:
    """(centre, unit direction of the narrowest width, half the length, half the width) of
    the rectangle round the footprint's ``points`` whose width is narrowest."""
    best: tuple[float, np.ndarray, np.ndarray, float] | None = None
    for angle in np.radians(np.arange(0.0, 180.0, SPAN_DEG)):
        u = np.array([math.cos(angle), math.sin(angle)])
        v = np.array([-u[1], u[0]])
        across, along = points @ u, points @ v
        width = float(np.ptp(across))
        if best is None or width < best[0] - 1e-9:
            mid = u * (across.max() + across.min()) / 2 + v * (along.max() + along.min()) / 2
            best = (width, u, mid, float(np.ptp(along)))
    assert best is not None
    width, u, mid, length = best
    return mid, u, length / 2, width / 2


def _room(
    geo: LiberoGeometry, ref: str, xy: np.ndarray, yaw: float, z: float, clear: float
) -> bool:
    """Whether both open fingers closing along ``yaw`` either side of ``xy`` come down to
    ``z`` meeting nothing but ``ref``, and the hand above them, ``clear`` bigger each way,
    too; every box turned as it is."""
    u = np.array([math.cos(yaw), math.sin(yaw)])
    low = HAND_SPAN_M[0]
    for side in (-1.0, 1.0):
        c = xy + side * u * (FINGER_OPEN_M / 2 + FINGER_HALF_M[0])
        centre = (float(c[0]), float(c[1]), z + (low - 0.005) / 2)
        half = (FINGER_HALF_M[0], FINGER_HALF_M[1], (low + 0.005) / 2)
        if oriented_blocked(geo, centre, half, yaw, ignore=(ref,)) is not None:
            return False
    top = HAND_SPAN_M[1]
    centre = (float(xy[0]), float(xy[1]), z + (low + top) / 2)
    half = (HAND_BOX_M[0] + clear, HAND_BOX_M[1] + clear, (top - low) / 2)
    return oriented_blocked(geo, centre, half, yaw, ignore=(ref,)) is None


def _comes_down_on(geo: LiberoGeometry, ref: str, xy: np.ndarray, yaw: float, z: float) -> bool:
    """Whether the hand, coming down to close the fingers at ``xy`` along ``yaw`` to ``z``,
    meets something standing well inside its box (:data:`INSIDE_M`), turned as it is."""
    low, top = HAND_SPAN_M[0] + INSIDE_M[1], HAND_SPAN_M[1]
    centre = (float(xy[0]), float(xy[1]), z + (low + top) / 2)
    half = (HAND_BOX_M[0] - INSIDE_M[0], HAND_BOX_M[1] - INSIDE_M[0], (top - low) / 2)
    return oriented_blocked(geo, centre, half, yaw, ignore=(ref,)) is not None
