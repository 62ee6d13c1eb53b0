"""Issue 40, item 5: what is held is turned only for a real slot: a book into the caddy's
narrow back compartment (libero_10 task 5), and a drawer is no slot (libero_goal task 3);
a book into the caddy's front and right compartments (libero_90 tasks 73 and 75); a mug
too big for the back one (LIBERO-PRO libero_10_task 5); a book leaned in the back one
(LIBERO-PRO libero_10_swap task 5) (helpers: ``tests/worlds/libero_cases.py``)."""

from __future__ import annotations

import math

import pytest

from tests.worlds.libero_cases import SKILL_MARKS, holds, libero_world

pytestmark = SKILL_MARKS


@pytest.mark.parametrize("state", [1])
def test_a_book_is_turned_to_go_into_the_caddys_narrow_back_compartment(state: int) -> None:
    """libero_10 task 5 failed 3/3: the book, held across its thin side at 50 degrees to
    the slot, was lowered onto the compartment's wall and fell beside the caddy."""
    world = libero_world("libero_10", 5, state)
    try:
        assert world.execute("pick", {"ref": "black_book_1"}).ok
        target = "desk_caddy_1_back_contain_region"
        args = {"ref": "black_book_1", "target": target, "relation": "in"}
        assert world.execute("place", args).ok
        assert holds(world, "in", "black_book_1", target)
    finally:
        world.disconnect()


def test_a_book_is_leaned_in_the_caddys_back_compartment_wherever_it_started() -> None:
    """LIBERO-PRO libero_10_swap task 5, state 2 (the book standing turned 131 degrees):
    set with its body over the slot's middle, the book's end came down on the end wall,
    was pushed up into the palm, and let go there it fell askew across the caddy, its body
    1.2 cm past the region's side. Stood upright on the floor its body is 3.9 mm below
    LIBERO's box; it is now set down leaned on the divider, its bottom against the far
    wall, and rests there raised."""
    world = libero_world("libero_10_swap", 5, 2)
    book, target = "black_book_1", "desk_caddy_1_back_contain_region"
    try:
        assert world.execute("pick", {"ref": book}).ok
        placed = world.execute("place", {"ref": book, "target": target, "relation": "in"})
        assert placed.ok
        assert holds(world, "in", book, target)
        assert "leaned" in placed.message
        env = world.env.env
        up = env.sim.data.body_xmat[env.obj_body_id[book]].reshape(3, 3)[2, 2]
        assert 15.0 < math.degrees(math.acos(min(1.0, abs(float(up))))) < 25.0  # leaned in
        assert world.held_ref() is None
    finally:
        world.disconnect()


@pytest.mark.parametrize(
    ("task", "compartment"), [(73, "front"), (75, "right")], ids=["front", "right"]
)
def test_a_book_goes_into_the_caddys_front_and_right_compartments(
    task: int, compartment: str
) -> None:
    """libero_90 tasks 73 and 75 (state 0) failed: the front compartment's site stands
    its second axis up, so the slot was read 5.6 by 7.2 cm and the book, not turned, came
    down on its walls; in the right one (12.4 cm square, the book 11.1 cm long) the book's
    body, 1.2 cm off its middle, was brought over the middle and its end landed on the
    wall. Carried at speed, the book also turned 7 mm in the fingers."""
    world = libero_world("libero_90", task, 0)
    try:
        assert world.execute("pick", {"ref": "black_book_1"}).ok
        target = f"desk_caddy_1_{compartment}_contain_region"
        args = {"ref": "black_book_1", "target": target, "relation": "in"}
        assert world.execute("place", args).ok
        assert holds(world, "in", "black_book_1", target)
    finally:
        world.disconnect()


def test_a_mug_too_big_for_the_caddys_back_compartment_rests_in_it() -> None:
    """LIBERO-PRO libero_10_task 5 (state 0), achieved before the caddy's books had their
    footprints centred: the mug with its handle (10.5 by 14 cm) does not fit the back
    compartment (5.6 by 12.4 cm); its footprint's middle brought over the region's set
    its body 1.3 cm off the middle, it came down tipped on the walls, and the retreating
    fingers took it out. Its body over the middle, it rests on the walls, in."""
    world = libero_world("libero_10_task", 5, 0)
    try:
        assert world.execute("pick", {"ref": "white_yellow_mug_1"}).ok
        target = "desk_caddy_1_back_contain_region"
        args = {"ref": "white_yellow_mug_1", "target": target, "relation": "in"}
        world.execute("place", args)
        assert holds(world, "in", "white_yellow_mug_1", target)
    finally:
        world.disconnect()


def test_a_drawer_is_no_slot() -> None:
    """The drawers' regions are narrower one way, but a bowl fits them any way round: a
    place into one keeps the wrist's turn (only a real slot turns what is held)."""
    from worlds.libero.placing import slot_yaw
    from worlds.libero.skills import MAX_GRASP_M

    world = libero_world("libero_goal", 3, 0)
    try:
        assert slot_yaw(world.geometry, "wooden_cabinet_1_top_region", MAX_GRASP_M) is None
    finally:
        world.disconnect()
