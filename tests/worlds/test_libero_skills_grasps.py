"""Issue 40, item 5: grasps of awkward objects (a wine bottle by its neck, a plate wider
than the open fingers by its rim, a bowl leaning on the ramekin at its raised rim), each on
a published initial state where it failed, judged by LIBERO's own predicates (helpers:
``tests/worlds/libero_cases.py``)."""

from __future__ import annotations

import pytest

from tests.worlds.libero_cases import SKILL_MARKS, holds, libero_world, put_fixture

pytestmark = SKILL_MARKS


@pytest.mark.parametrize("state", [1])
def test_a_wine_bottle_is_picked_by_its_neck_and_put_on_the_cabinet(state: int) -> None:
    """libero_goal task 2 failed 3/3: the palm came down on the neck, and a bottle held by
    the neck (one pad and the other finger's body touching it) was called loose."""
    world = libero_world("libero_goal", 2, state)
    try:
        picked = world.execute("pick", {"ref": "wine_bottle_1"})
        assert picked.ok and world.held_ref() == "wine_bottle_1"
        box = world.geometry.box("wine_bottle_1")
        assert box is not None and box.bottom > 0.1  # lifted off the table
        placed = world.execute(
            "place", {"ref": "wine_bottle_1", "target": "wooden_cabinet_1", "relation": "on"}
        )
        assert placed.ok
        assert holds(world, "on", "wine_bottle_1", "wooden_cabinet_1_top_side")
        assert world.held_ref() is None
    finally:
        world.disconnect()


def test_a_plate_wider_than_the_fingers_is_held_by_its_rim() -> None:
    """LIBERO-PRO's libero_goal_task 1 ("Put the plate on the stove"): the plate, 13.7 cm
    across, was refused as wider than the fingers open; it is held by its rim now, on the
    side where the open fingers have room (the rim facing the robot has a bowl beside it,
    and the table under the fingers is no obstacle)."""
    world = libero_world("libero_goal_task", 1, 0)
    try:
        assert world.execute("pick", {"ref": "plate_1"}).ok
        assert world.held_ref() == "plate_1"
        args = {"ref": "plate_1", "target": "flat_stove_1", "relation": "on"}
        assert world.execute("place", args).ok
        assert holds(world, "on", "plate_1", "flat_stove_1_cook_region")
    finally:
        world.disconnect()


@pytest.mark.parametrize("state", [0])
def test_a_bowl_leaning_on_the_ramekin_is_grasped_at_its_raised_rim(state: int) -> None:
    """libero_spatial task 5: the bowl rests on the ramekin's edge, leaning 51 degrees. Grasped
    on the side facing the robot, the fingers stopped on the leaning wall, and the bowl slipped
    out on the way to the plate (8 of 10 states needed a second pick, from the table). Now
    the grasp comes down at the rim's highest point, closing along the lean."""
    world = libero_world("libero_spatial", 5, state)
    try:
        env = world.env.env
        axis = env.sim.data.body_xmat[env.obj_body_id["akita_black_bowl_1"]].reshape(3, 3)[:, 2]
        assert axis[2] < 0.9  # the published state does lean
        picked = world.execute("pick", {"ref": "akita_black_bowl_1"})
        assert picked.ok and "stopped short" not in picked.message, picked.message
        placed = world.execute(
            "place", {"ref": "akita_black_bowl_1", "target": "plate_1", "relation": "on"}
        )
        assert placed.ok
        assert holds(world, "on", "akita_black_bowl_1", "plate_1")
    finally:
        world.disconnect()


def test_a_can_next_to_the_robots_base_is_lifted_with_the_hand_off_its_top() -> None:
    """LIBERO-PRO libero_10_swap task 0 puts the alphabet soup 0.30 m from the robot's base:
    grasped 3.5 cm below its top, the hand pressed on the can (contact with the hand's
    collision box), the elbow sat at its limit (-3.07 rad) and the lift stalled at the
    table, so the place failed three times. The hand now stays above the can's top."""
    world = libero_world("libero_10_swap", 0, 0)
    try:
        picked = world.execute("pick", {"ref": "alphabet_soup_1"})
        assert picked.ok and "stopped short" not in picked.message, picked.message
        box = world.geometry.box("alphabet_soup_1")
        assert box is not None and box.bottom > 0.1  # lifted off the table
        placed = world.execute(
            "place",
            {"ref": "alphabet_soup_1", "target": "basket_1_contain_region", "relation": "in"},
        )
        assert placed.ok, placed.message
        assert holds(world, "in", "alphabet_soup_1", "basket_1_contain_region")
        assert world.step_audit()["outside"] == 0
    finally:
        world.disconnect()


def test_a_mug_next_to_the_robots_base_is_grasped_on_a_rim_the_arm_reaches() -> None:
    """LIBERO-PRO libero_10_swap task 4 puts the yellow and white mug 0.29 m from the
    robot's base: its rim facing the robot (0.25 m out) is below where the arm comes down
    (the elbow at its limit 20 cm up; the fingers landed on the mug, three picks). A side of
    the rim further out is grasped instead."""
    world = libero_world("libero_10_swap", 4, 0)
    try:
        picked = world.execute("pick", {"ref": "white_yellow_mug_1"})
        assert picked.ok and world.held_ref() == "white_yellow_mug_1", picked.message
        placed = world.execute(
            "place", {"ref": "white_yellow_mug_1", "target": "plate_2", "relation": "on"}
        )
        assert placed.ok, placed.message
        assert holds(world, "on", "white_yellow_mug_1", "plate_2")
        assert world.step_audit()["outside"] == 0
    finally:
        world.disconnect()


def test_a_mug_whose_wall_is_turned_slabs_is_held_by_its_rim() -> None:
    """LIBERO-PRO libero_10_task 6, "put the red mug on the plate": the red coffee mug's
    wall is made of turned slabs whose axis-aligned boxes cover its middle, so it was taken
    for a solid thing 9.2 cm across and refused. Its slabs are tested as they are turned
    now: open at the top, it is grasped by the rim like any mug."""
    world = libero_world("libero_10_task", 6, 0)
    mug = "red_coffee_mug_1"
    try:
        assert world.geometry.hollow(mug)
        picked = world.execute("pick", {"ref": mug})
        assert picked.ok and world.held_ref() == mug, picked.message
        placed = world.execute("place", {"ref": mug, "target": "plate_1", "relation": "on"})
        assert placed.ok, placed.message
        assert holds(world, "on", mug, "plate_1")
        assert world.step_audit()["outside"] == 0
    finally:
        world.disconnect()


def test_a_bowl_on_the_stove_is_grasped_where_the_knob_leaves_the_fingers_room() -> None:
    """LIBERO-PRO libero_spatial_task task 9, state 0, the stove at the far end of its
    placement range (where the eval's reset put it): the rim facing the robot looked roomy
    to a check 5 cm long, but the open fingers' outer faces reach 6.8 cm, and the outer one
    came down on the stove's knob and closed over the rim (three picks, nothing held). The
    grasp now takes a side where the fingers have room, and lifts the bowl."""
    world = libero_world("libero_spatial_task", 9, 0)
    try:
        put_fixture(world, "flat_stove_1_main", (-0.40, -0.134))
        assert world.execute("pick", {"ref": "akita_black_bowl_2"}).ok
        assert world.held_ref() == "akita_black_bowl_2"
        box = world.geometry.box("akita_black_bowl_2")
        assert box is not None and box.bottom > 0.1  # lifted off the stove
        assert world.step_audit()["outside"] == 0
    finally:
        world.disconnect()


def test_a_mug_beside_the_caddy_is_grasped_where_the_hand_has_room() -> None:
    """libero_90 task 85 (state 0) failed 3/3: the rim facing the robot was taken, and the
    hand, 21 cm long along the closing direction, came down on the desk caddy's wall 9 cm
    from the mug and 6 cm above its rim; the fingers shut on nothing."""
    world = libero_world("libero_90", 85, 0)
    try:
        picked = world.execute("pick", {"ref": "porcelain_mug_1"})
        assert picked.ok and world.held_ref() == "porcelain_mug_1"
        target = "study_table_desk_caddy_right_region"
        args = {"ref": "porcelain_mug_1", "target": target, "relation": "on"}
        assert world.execute("place", args).ok
        assert holds(world, "on", "porcelain_mug_1", target)
    finally:
        world.disconnect()


def test_the_lower_of_two_stacked_bowls_carries_the_stack() -> None:
    """libero_90 task 63 ("stack the left bowl on the right bowl and place them in the
    tray"): the lower bowl, picked by its rim, pinches the upper bowl's wall between its own
    and the inner finger, and both come up; that was called loose (no one object touched by
    both fingers). Held, the stack is set down in the tray, the upper bowl still on the
    lower, and the Brief's truth says both of the upper one."""
    from worlds.libero.holding import resting_on

    world = libero_world("libero_90", 63, 0)
    top, lower, tray = "akita_black_bowl_1", "akita_black_bowl_2", "wooden_tray_1_contain_region"
    try:
        assert world.execute("pick", {"ref": top}).ok
        assert world.execute("place", {"ref": top, "target": lower, "relation": "on"}).ok
        assert world.execute("pick", {"ref": lower}).ok
        assert world.held_ref() == lower
        geo = world.geometry
        assert geo.body_position(top)[2] > 0.1  # the upper bowl came up with it
        assert world.execute("place", {"ref": lower, "target": tray, "relation": "in"}).ok
        assert holds(world, "in", lower, tray) and holds(world, "on", top, lower)
        assert geo.support_of(top) == ("inside", tray) and resting_on(geo, top) == lower
    finally:
        world.disconnect()


def test_a_bowl_in_a_turned_opened_drawer_is_grasped_where_the_fingers_fit() -> None:
    """LIBERO-PRO libero_spatial_object task 4, state 0: the wooden cabinet stands turned 27
    degrees, the bowl in its opened top drawer. Judged by axis-aligned boxes the drawer's
    thin walls left no side of the rim free, and the grasp fell back to the side facing the
    robot, where the open finger came down on the drawer's side wall 4 cm over the rim,
    three times. Judged as the turned boxes they are, the far side has room (``rim_arc``);
    of its two wrist turns the one with room to carry the bowl to the plate is taken."""
    world = libero_world("libero_spatial_object", 4, 0)
    try:
        picked = world.execute("pick", {"ref": "black_bowl_1"})
        assert picked.ok and world.held_ref() == "black_bowl_1", picked.message
        args = {"ref": "black_bowl_1", "target": "yellow_plate_1", "relation": "on"}
        assert world.execute("place", args).ok
        assert holds(world, "on", "black_bowl_1", "yellow_plate_1")
    finally:
        world.disconnect()
