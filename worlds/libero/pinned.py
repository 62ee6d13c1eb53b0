"""A thing another movable thing rests on, where the hand cannot come down to it: the
other lifted off first, else refused before anything moves, the other named.

LIBERO-PRO libero_object_temp_y0.4 task 1, state 0: the cream cheese box (8.1 x 4.3 x 1.8
cm) lies along the basket's wall with its far edge 4 mm under it, and the basket's floor
rests on that edge, tilted (contacts ``basket_1_g1`` / ``cream_cheese_1_g1`` at the box's
top, their normal 7 degrees off the vertical). The box is wider along its length than the
fingers open, so they close across it, and the hand (20 cm long that way) comes down on the
basket's wall; sliding the grasp along the box or pushing it along the table (``nudging``)
finds no way the hand is free, and the box cannot be pushed away from the basket from under
it. Each of three picks pinched one corner, dragged the basket 1 cm and dropped the box.
The other thing is lifted off it and set down clear first where it can be
(:mod:`~worlds.libero.lifting_off`); where it cannot, what can be said is why, before the
arm moves: the other thing rests on it and is in the hand's way; it has to be moved first.
"""

from __future__ import annotations

from typing import Any

from worlds.libero.control import Vec3
from worlds.libero.holding import HAND_BOX_M, HAND_SPAN_M
from worlds.libero.oriented import ROBOT_BODIES, oriented_blocked

__all__ = ["TOP_M", "UPRIGHT", "pinned_under", "resting_on_it"]

TOP_M = 0.004
"""How far below a thing's top a contact may be and still be on its top."""
UPRIGHT = 0.7
"""A contact whose normal's vertical part is at least this bears weight (one rests on the
other), rather than two things leaning side by side."""


def resting_on_it(geo: Any, ref: str) -> list[str]:
    """The other movable objects that rest partly on ``ref``: touching its top with a
    contact that bears weight (its normal near the vertical), and touching something else
    too (the table, another thing; not the robot). What rests on it alone (a bowl stacked in
    another, libero_90 task 63) comes up with it and is no obstacle to its pick."""
    box = geo.box(ref)
    if box is None:
        return []
    sim = geo.env.sim
    mine = set(geo.collision_geoms(ref))
    owners = {g: o for o in geo.catalog.refs("object") if o != ref for g in geo.collision_geoms(o)}
    robot = {
        g
        for g in range(sim.model.ngeom)
        if sim.model.body(int(sim.model.geom_bodyid[g])).name.startswith(ROBOT_BODIES)
    }
    on: set[str] = set()
    elsewhere: set[str] = set()
    for index in range(sim.data.ncon):
        contact = sim.data.contact[index]
        pair = (int(contact.geom1), int(contact.geom2))
        for this, that in (pair, pair[::-1]):
            other = owners.get(this)
            if other is None or that in robot or owners.get(that) == other:
                continue
            if that not in mine:
                elsewhere.add(other)
                continue
            height = geo.frame.from_world(tuple(float(v) for v in contact.pos))[2]
            if height >= box.top - TOP_M and abs(float(contact.frame[2])) >= UPRIGHT:
                on.add(other)
    return sorted(on & elsewhere)


def pinned_under(geo: Any, ref: str, at: Vec3, yaw: float) -> str | None:
    """Why ``ref`` cannot be picked with the fingers closing at ``at`` along ``yaw`` (base
    frame), when something rests on it and the hand coming down there meets that thing;
    None otherwise (the pick goes on as planned)."""
    over = resting_on_it(geo, ref)
    if not over:
        return None
    low, high = HAND_SPAN_M
    centre = (at[0], at[1], at[2] + (low + high) / 2)
    half = (*HAND_BOX_M, (high - low) / 2)
    skip = tuple(g for other in over for g in geo.collision_geoms(other))
    if oriented_blocked(geo, centre, half, yaw, ignore=(ref,)) is None:
        return None
    if oriented_blocked(geo, centre, half, yaw, ignore=(ref,), skip_geoms=skip) is not None:
        return None  # something else is in the way too: the pick's own ways decide
    names = " and ".join(over)
    return (
        f"{ref} lies partly under {names}, which rests on it; the hand coming down to "
        f"grasp {ref} meets {names}: move {names} off it first"
    )
