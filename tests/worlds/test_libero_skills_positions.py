"""Picks LIBERO-PRO's position variants (``libero_object_temp_x0.5``, ``_y0.3``, ``_y0.4``)
and object variants made hard: a thing out where the hand pointing down does not reach, a
low box lying by the basket's wall, a lying bottle beside a standing milk, a low box between
a bigger bowl and the stove (``libero_goal_object``); and a bottle too close to the robot's
base for it (libero_90 task 62). Each on the published initial state
where it failed three times, judged by the env's own state (helpers:
``tests/worlds/libero_cases.py``)."""

from __future__ import annotations

import math

import pytest

from tests.worlds.libero_cases import SKILL_MARKS, holds, libero_world

pytestmark = SKILL_MARKS


def test_a_can_beyond_the_reach_of_a_hand_pointing_down_is_picked_leaning_out() -> None:
    """x0.5 task 0: the alphabet soup 0.87 m from the base's axis; pointing down at it the
    arm fell 6-8 cm short and strayed off its path. Leaned out, it is picked and put in the
    basket."""
    world = libero_world("libero_object_temp_x0.5", 0, 0)
    try:
        picked = world.execute("pick", {"ref": "alphabet_soup_1"})
        assert picked.ok and "lean out" in picked.message, picked.message
        assert world.held_ref() == "alphabet_soup_1"
        box = world.geometry.box("alphabet_soup_1")
        assert box is not None and box.bottom > 0.1  # lifted off the floor
        placed = world.execute(
            "place",
            {"ref": "alphabet_soup_1", "target": "basket_1_contain_region", "relation": "in"},
        )
        assert placed.ok, placed.message
        assert holds(world, "in", "alphabet_soup_1", "basket_1_contain_region")
    finally:
        world.disconnect()


def test_a_low_box_by_the_baskets_wall_is_pushed_clear_and_picked() -> None:
    """y0.3 task 1: the cream cheese 3 cm from the basket's wall; the hand, 20 cm long along
    the fingers' closing, came down on the rim and the fingers closed on nothing."""
    world = libero_world("libero_object_temp_y0.3", 1, 0)
    try:
        picked = world.execute("pick", {"ref": "cream_cheese_1"})
        assert picked.ok and "push it clear" in picked.message, picked.message
        assert "stopped short" not in picked.message, picked.message
        assert world.held_ref() == "cream_cheese_1"
        box = world.geometry.box("cream_cheese_1")
        assert box is not None and box.bottom > 0.1
    finally:
        world.disconnect()


@pytest.mark.parametrize("state", [0, 1, 2])
def test_a_low_box_between_a_bowl_and_the_stove_is_pushed_clear_and_put_in_the_bowl(
    state: int,
) -> None:
    """LIBERO-PRO libero_goal_object task 6 ("put the cream cheese in the bowl"): at state 1
    the bigger bowl stands 1.2 cm from the box's long side and the stove 5.8 cm from its
    end. Every grasp had the hand on the bowl's rim (7.6 cm tall), and the push that makes
    room found no room for the fingertips by the stove (the whole finger's bound taken all
    the way down): the fingers closed on nothing three times. The tips taper; they come down
    there, push the box along its length off the bowl, and it is picked and put in the bowl.
    At state 2 the bowl is 5 mm from the box: the hand above the tips grazed it pushing
    along the box's middle (pushed 8 mm off it, it does not), and the box, pushed 1.2 cm
    short of where the grasp went, was missed. At state 0 the plain grasp still does it."""
    world = libero_world("libero_goal_object", 6, state)
    try:
        ref, bowl = "red_cream_cheese_1", "bigger_akita_black_bowl_1"
        picked = world.execute("pick", {"ref": ref})
        assert picked.ok and "stopped short" not in picked.message, picked.message
        assert world.held_ref() == ref
        placed = world.execute("place", {"ref": ref, "target": bowl, "relation": "in"})
        assert placed.ok, placed.message
        assert holds(world, "on", ref, bowl)
        assert world.step_audit()["outside"] == 0
    finally:
        world.disconnect()


def test_a_lying_bottle_beside_a_milk_is_grasped_slid_along_it() -> None:
    """y0.4 task 2: the salad dressing lies 10 cm from a standing milk; slid up to 3.5 cm
    along it, the hand came down on the milk every time."""
    world = libero_world("libero_object_temp_y0.4", 2, 0)
    try:
        picked = world.execute("pick", {"ref": "salad_dressing_1"})
        assert picked.ok and "stopped short" not in picked.message, picked.message
        assert world.held_ref() == "salad_dressing_1"
        box = world.geometry.box("salad_dressing_1")
        assert box is not None and box.bottom > 0.1
    finally:
        world.disconnect()


def test_a_bowl_within_the_controllers_reach_is_picked_pointing_down_not_leaned() -> None:
    """libero_spatial task 4 at state 8: the bowl in the top drawer stands 0.80 m from the
    base's axis, where the solver holds the hand pointing down only 2 cm short; leaned out
    instead (the lean was allowed from 0.75 m), the pick stalled, and at state 5 it was
    refused before moving. The controller reaches it pointing down, as before the lean."""
    world = libero_world("libero_spatial", 4, 8)
    try:
        ref = "akita_black_bowl_1"
        plan = world._plan("pick", {"ref": ref})
        assert "lean" not in plan.description, plan.description
        done = world.execute("pick", {"ref": ref})
        assert done.ok and world.held_ref() == ref, done.message
        assert world.step_audit()["outside"] == 0
    finally:
        world.disconnect()


def test_a_bowl_whose_rim_closes_along_the_way_out_is_picked_leaning_out() -> None:
    """LIBERO-PRO libero_spatial_swap task 6, state 0: the bowl's rim grasp stands 0.835 m
    from the base's axis, where the arm holds the hand only tilted out 15 degrees. The
    fingers close across the rim's wall, along the way out, so no lean about the closing
    direction reaches it: the pick was refused with nothing moved; picked pointing down,
    the fingers closed on nothing and dragged the bowl in. Leaned out about the horizontal
    square to the way out, it is picked and set on the plate."""
    world = libero_world("libero_spatial_swap", 6, 0)
    try:
        ref = "akita_black_bowl_1"
        picked = world.execute("pick", {"ref": ref})
        assert picked.ok and "lean out" in picked.message, picked.message
        assert world.held_ref() == ref
        placed = world.execute("place", {"ref": ref, "target": "plate_1", "relation": "on"})
        assert placed.ok, placed.message
        assert holds(world, "on", ref, "plate_1")
        assert world.step_audit()["outside"] == 0
    finally:
        world.disconnect()


@pytest.mark.parametrize("moved", ["", "bowl aside", "bottle in"])
def test_a_bottle_next_to_the_robots_base_is_picked_leaning_in(moved: str) -> None:
    """libero_90 task 62, state 1: the salad dressing stands 0.25 m from the base's axis;
    pointing down at its neck the elbow folds to its limit 2-4 cm short, leaned out it folds
    further, and the pick was refused with nothing moved. Leaned in (the fingers' end
    towards the base, the wrist further out) it is grasped and put in the tray. The way out
    along the table runs into a bowl, so it is lifted where it stands. Scenes of our own:
    with the bowl moved 12 cm aside, it is drawn out first, as a pick from above is; with
    the bottle moved in to 0.20 m, the least lean held only with the shoulder swung back
    (15 degrees: stopped 3 cm short, closed on nothing), and the one taken keeps it."""
    world = libero_world("libero_90", 62, 1)
    try:
        ref, tray = "new_salad_dressing_1", "wooden_tray_1_contain_region"
        env = world.env.env
        if moved:
            body = "akita_black_bowl_1" if moved == "bowl aside" else ref
            start, _ = env.sim.model.get_joint_qpos_addr(f"{body}_joint0")
            box = world.geometry.box(ref)
            assert box is not None
            shift = (0.0, -0.12) if moved == "bowl aside" else _towards_base(box.centre, 0.20)
            env.sim.data.qpos[start : start + 2] += shift
            env.sim.forward()
        picked = world.execute("pick", {"ref": ref})
        assert picked.ok and "lean in" in picked.message, picked.message
        assert ("draw out" in picked.message) == (moved == "bowl aside"), picked.message
        assert world.held_ref() == ref
        box = world.geometry.box(ref)
        assert box is not None and box.bottom > 0.1  # lifted off the table
        placed = world.execute("place", {"ref": ref, "target": tray, "relation": "in"})
        assert placed.ok, placed.message
        assert holds(world, "in", ref, tray)
        assert world.step_audit()["outside"] == 0
    finally:
        world.disconnect()


def _towards_base(centre: tuple[float, float, float], out: float) -> tuple[float, float]:
    """The xy shift that brings ``centre`` (base frame, whose axes are the world's) to
    ``out`` from the base's axis along the same bearing."""
    scale = out / math.hypot(centre[0], centre[1]) - 1.0
    return (centre[0] * scale, centre[1] * scale)
