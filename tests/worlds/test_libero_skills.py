"""Issue 40, item 5: LIBERO skills that failed, each reproduced on a published initial state
where it failed and judged by LIBERO's own predicates (read here from the env, not through
the post-conditions under test)."""

from __future__ import annotations

from typing import Any

import pytest

from worlds.libero import libero_available

pytestmark = [
    pytest.mark.long,
    pytest.mark.libero,
    pytest.mark.skipif(not libero_available(), reason="the LIBERO world needs the [libero] extra"),
]


def _world(suite: str, task: int, state: int) -> Any:
    from worlds.libero.driver import LiberoSim

    world = LiberoSim(suite=suite, task=task, init_state=state)
    world.connect()
    return world


@pytest.fixture(scope="module")
def kitchen() -> Any:
    """libero_10 task 1, built once for the three tests on it (a LIBERO env takes 5-15 s to
    build); each restores the published initial state it needs with ``reset``, as an eval
    that reuses its env does between episodes."""
    world = _world("libero_10", 1, 0)
    yield world
    world.disconnect()


def _holds(world: Any, predicate: str, *refs: str) -> bool:
    from libero.libero.envs.predicates import eval_predicate_fn

    states = world.env.env.object_states_dict
    return bool(eval_predicate_fn(predicate, *(states[r] for r in refs)))


def test_a_published_state_has_come_to_rest_before_the_first_plan(kitchen: Any) -> None:
    """libero_10 task 1 starts its milk and orange juice 0.39 m up: planned on where they
    were, the fingers came down on the falling milk beside the cream cheese."""
    world = kitchen
    world.reset(init_state=0)
    env = world.env.env
    for ref in world.catalog.refs("object"):
        body = env.obj_body_id[ref]
        assert float(abs(env.sim.data.cvel[body][3:]).max()) < 0.02, ref
    milk = world.geometry.box("milk_1")
    assert milk is not None and milk.bottom < 0.05  # on the table, not in the air


@pytest.mark.parametrize("state", [1])
def test_a_wine_bottle_is_picked_by_its_neck_and_put_on_the_cabinet(state: int) -> None:
    """libero_goal task 2 failed 3/3: the palm came down on the neck, and a bottle held by
    the neck (one pad and the other finger's body touching it) was called loose."""
    world = _world("libero_goal", 2, state)
    try:
        picked = world.execute("pick", {"ref": "wine_bottle_1"})
        assert picked.ok and world.held_ref() == "wine_bottle_1"
        box = world.geometry.box("wine_bottle_1")
        assert box is not None and box.bottom > 0.1  # lifted off the table
        placed = world.execute(
            "place", {"ref": "wine_bottle_1", "target": "wooden_cabinet_1", "relation": "on"}
        )
        assert placed.ok
        assert _holds(world, "on", "wine_bottle_1", "wooden_cabinet_1_top_side")
        assert world.held_ref() is None
    finally:
        world.disconnect()


@pytest.mark.parametrize("state", [0, 2])
def test_grasps_come_down_where_the_fingers_and_the_hand_have_room(
    kitchen: Any, state: int
) -> None:
    """libero_10 task 1 failed 3/3: the fingers closing across the cream cheese came down
    on the milk beside it (state 0), the hand over the butter on the basket's wall
    (state 2); the grasp now slides along the object or turns to where there is room."""
    world = kitchen
    world.reset(init_state=state)
    for ref in ("cream_cheese_1", "butter_1"):
        assert world.execute("pick", {"ref": ref}).ok
        assert world.held_ref() == ref
        args = {"ref": ref, "target": "basket_1", "relation": "in"}
        assert world.execute("place", args).ok
        assert _holds(world, "in", ref, "basket_1_contain_region")


@pytest.mark.parametrize("state", [1])
def test_a_book_is_turned_to_go_into_the_caddys_narrow_back_compartment(state: int) -> None:
    """libero_10 task 5 failed 3/3: the book, held across its thin side at 50 degrees to
    the slot, was lowered onto the compartment's wall and fell beside the caddy."""
    world = _world("libero_10", 5, state)
    try:
        assert world.execute("pick", {"ref": "black_book_1"}).ok
        target = "desk_caddy_1_back_contain_region"
        args = {"ref": "black_book_1", "target": target, "relation": "in"}
        assert world.execute("place", args).ok
        assert _holds(world, "in", "black_book_1", target)
    finally:
        world.disconnect()


def test_a_drawer_is_no_slot() -> None:
    """The drawers' regions are narrower one way, but a bowl fits them any way round: a
    place into one keeps the wrist's turn (only a real slot turns what is held)."""
    world = _world("libero_goal", 3, 0)
    try:
        planner = world._planner
        assert planner._slot_yaw("wooden_cabinet_1_top_region", "in") is None
    finally:
        world.disconnect()


@pytest.mark.parametrize("state", [0])
def test_a_bottom_drawer_is_pushed_shut_with_the_hand_dipped_into_its_face(state: int) -> None:
    """libero_10 task 3 failed 3/3: pushed pointing straight down, the wrist (0.2 m above
    the fingers, level with the cabinet's top) met the white cabinet's front edge and the
    drawer stayed 7 cm open. LIBERO's Close is read from the env, not the post-conditions."""
    world = _world("libero_10", 3, state)
    drawer = "white_cabinet_1_bottom_region"
    try:
        assert not _holds(world, "close", drawer)  # it starts open
        result = world.execute("close", {"ref": drawer})
        assert result.ok
        assert _holds(world, "close", drawer)
        assert world.step_audit()["outside"] == 0
    finally:
        world.disconnect()


@pytest.mark.parametrize("state", [1])
def test_a_mug_goes_in_through_the_microwaves_door_and_the_door_is_swept_shut(state: int) -> None:
    """libero_10 task 9 failed 3/3: a mug held over its rim (the hand on it taller than the
    14 cm opening) could not go in, and nothing moved a hinged door. The mug is now held by
    its handle, carried in with the hand outside, pushed deep enough for the door to clear
    its handle, and the door swept shut along its hinge; judged by LIBERO's In and Close."""
    world = _world("libero_10", 9, state)
    mug, oven = "white_yellow_mug_1", "microwave_1"
    try:
        assert _holds(world, "open", oven)  # the published state leaves the door open
        assert world.execute("pick", {"ref": mug}).ok
        placed = world.execute("place", {"ref": mug, "target": oven, "relation": "in"})
        assert placed.ok, placed.message
        assert _holds(world, "in", mug, "microwave_1_heating_region")
        shut = world.execute("close", {"ref": oven})
        assert shut.ok, shut.message
        assert _holds(world, "close", oven)
        assert _holds(world, "in", mug, "microwave_1_heating_region")
        assert world.step_audit()["outside"] == 0
    finally:
        world.disconnect()


@pytest.mark.parametrize(("task", "action", "state"), [(35, "open", 0), (33, "close", 1)])
def test_the_microwave_door_is_opened_and_closed_along_its_hinge(
    task: int, action: str, state: int
) -> None:
    """libero_90's "open the microwave" and "close the microwave": refused before (the
    microwave was no door this world could move). Open pulls the shut door ajar by its
    handle and pushes it the rest from behind; judged by LIBERO's own goal check."""
    world = _world("libero_90", task, state)
    try:
        assert world.catalog.items["microwave_1"].drawer
        result = world.execute(action, {"ref": "microwave_1"})
        assert result.ok, result.message
        assert _holds(world, action, "microwave_1")
        assert world.goal_achieved()
        assert world.step_audit()["outside"] == 0
    finally:
        world.disconnect()


@pytest.mark.parametrize("state", [0])
def test_a_wine_bottle_is_laid_down_in_the_racks_cradle(state: int) -> None:
    """libero_goal task 9 failed 3/3: the bottle, lowered upright onto the rack's sloped top,
    fell off beside it. LIBERO's On for that region takes the bottle's body position (the
    middle of its bottom) in a band above the tilted site and the bottle touching the rack:
    it must lie in the cradle. Judged by LIBERO's predicate read from the env."""
    world = _world("libero_goal", 9, state)
    try:
        assert world.execute("pick", {"ref": "wine_bottle_1"}).ok
        args = {"ref": "wine_bottle_1", "target": "wine_rack_1", "relation": "on"}
        assert world.execute("place", args).ok
        assert _holds(world, "on", "wine_bottle_1", "wine_rack_1_top_region")
        assert world.held_ref() is None
        box = world.geometry.box("wine_bottle_1")
        assert box is not None and box.size[2] < 0.08  # lying, not standing (0.157 m tall)
        assert world.step_audit()["outside"] == 0
    finally:
        world.disconnect()


def test_a_plate_wider_than_the_fingers_is_held_by_its_rim() -> None:
    """LIBERO-PRO's libero_goal_task 1 ("Put the plate on the stove"): the plate, 13.7 cm
    across, was refused as wider than the fingers open; it is held by its rim now, on the
    side where the open fingers have room (the rim facing the robot has a bowl beside it,
    and the table under the fingers is no obstacle)."""
    world = _world("libero_goal_task", 1, 0)
    try:
        assert world.execute("pick", {"ref": "plate_1"}).ok
        assert world.held_ref() == "plate_1"
        args = {"ref": "plate_1", "target": "flat_stove_1", "relation": "on"}
        assert world.execute("place", args).ok
        assert _holds(world, "on", "plate_1", "flat_stove_1_cook_region")
    finally:
        world.disconnect()


def test_a_low_box_put_on_the_rack_is_let_go_into_its_cradle() -> None:
    """LIBERO-PRO's libero_goal_task 9 ("Put the cream cheese on the rack"): the plain place
    aimed at the region's site, on the rack's front lip, and the box slid off (3 picks,
    given up); it is now turned along the cradle and let go above its line."""
    world = _world("libero_goal_task", 9, 0)
    try:
        assert world.execute("pick", {"ref": "cream_cheese_1"}).ok
        args = {"ref": "cream_cheese_1", "target": "wine_rack_1", "relation": "on"}
        assert world.execute("place", args).ok
        assert _holds(world, "on", "cream_cheese_1", "wine_rack_1_top_region")
    finally:
        world.disconnect()


@pytest.mark.parametrize("state", [0])
def test_a_bowl_leaning_on_the_ramekin_is_grasped_at_its_raised_rim(state: int) -> None:
    """libero_spatial task 5: the bowl rests on the ramekin's edge, leaning 51 degrees. Grasped
    on the side facing the robot, the fingers stopped on the leaning wall, and the bowl slipped
    out on the way to the plate (8 of 10 states needed a second pick, from the table). Now
    the grasp comes down at the rim's highest point, closing along the lean."""
    world = _world("libero_spatial", 5, state)
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
        assert _holds(world, "on", "akita_black_bowl_1", "plate_1")
    finally:
        world.disconnect()


def test_a_bowl_under_the_opened_drawer_is_slid_out_before_it_is_lifted() -> None:
    """libero_goal task 3 ("open the top drawer and put the bowl inside"), state 3: the top
    drawer, opened, reaches over the bowl; lifted straight up, the bowl met the drawer's
    bottom and was torn from the fingers (held by nothing after the pick). It is now slid
    out from under along the table first, then lifted and put in the drawer. Restored a
    second time, as an eval's shared env is between episodes: built fresh at state 3, the
    opening stalled on the handle and shoved the cabinet 1.7 cm nearer the bowl, where no
    grasp's hand comes down clear of the drawer (not fixed)."""
    world = _world("libero_goal", 3, 3)
    world.reset(init_state=3)
    try:
        assert world.execute("open", {"ref": "wooden_cabinet_1_top_region"}).ok
        picked = world.execute("pick", {"ref": "akita_black_bowl_1"})
        assert picked.ok and "slide out from under" in picked.message, picked.message
        assert world.held_ref() == "akita_black_bowl_1"
        args = {
            "ref": "akita_black_bowl_1",
            "target": "wooden_cabinet_1_top_region",
            "relation": "in",
        }
        assert world.execute("place", args).ok
        assert _holds(world, "in", "akita_black_bowl_1", "wooden_cabinet_1_top_region")
        assert world.step_audit()["outside"] == 0
    finally:
        world.disconnect()


def test_a_plate_whose_slide_is_blocked_is_carried_over_by_its_rim() -> None:
    """libero_goal task 5 ("push the plate to the front of the stove"), state 0: the
    straight slide runs the plate into the bowl and the cream cheese box (its sloped rim rode
    up on the box and tipped over the fingers; the plate stopped 8 cm short), and the region's
    middle overlaps the box. The push now aims at the region's free spot and, its way
    blocked, carries the plate over by its rim, saying so."""
    world = _world("libero_goal", 5, 0)
    try:
        pushed = world.execute(
            "push", {"ref": "plate_1", "target": "main_table_stove_front_region"}
        )
        assert pushed.ok and "carried over it" in pushed.message, pushed.message
        assert _holds(world, "on", "plate_1", "main_table_stove_front_region")
        assert world.held_ref() is None
        assert world.step_audit()["outside"] == 0
    finally:
        world.disconnect()
