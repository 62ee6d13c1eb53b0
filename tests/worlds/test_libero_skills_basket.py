"""Issue 40: small things into the basket, on published initial states where they failed,
judged by LIBERO's own predicates (helpers: ``tests/worlds/libero_cases.py``)."""

from __future__ import annotations

import pytest

from tests.worlds.libero_cases import SKILL_MARKS, holds, libero_world
from worlds.libero import picking

pytestmark = SKILL_MARKS


def test_a_can_next_to_the_robot_base_is_drawn_out_before_it_is_lifted() -> None:
    """LIBERO-PRO libero_10_swap task 0 ("put both the alphabet soup and the tomato sauce in
    the basket"), state 0: the soup stands 0.30 m from the robot's base. Lifted straight up
    there, the folded elbow ran into its joint limit and the gripper drifted towards the base
    ("stopped short at: lift"); the place's rise from there was stopped 2 cm from the base's
    keep-out zone, three times, and the task failed. Now the arm takes up the load, draws the
    can out to where the elbow unfolds, and lifts it; the tomato sauce, 0.54 m out, is
    lifted straight up as before."""
    _both_into_the_basket(
        ("libero_10_swap", 0, 0), ("alphabet_soup_1", "tomato_sauce_1"), "draw out"
    )


def test_a_thing_held_off_its_middle_is_let_go_where_the_fingers_open_clear_of_the_walls() -> None:
    """LIBERO-PRO libero_10_with_mug task 1 ("put both the cream cheese box and the butter in
    the basket"), state 0: the cream cheese box, slid out from under the basket's rim, is
    held 3.5 cm off its middle. Set with its footprint over the basket's middle, the hand was
    3.5 cm off the middle; the opening fingers (13.6 cm across) pressed on two walls, wedged,
    and the retreat took the basket up 12 cm in the fingers: the butter's pick was refused
    ("the gripper holds basket_1"). Now the hand lets go where the open fingers clear the
    walls (``letting_go``), the basket stays where it stood and the butter goes in too."""
    world = libero_world("libero_10_with_mug", 1, 0)
    try:
        geo = world.geometry
        standing = geo.box("basket_1")
        assert standing is not None
        for ref in ("cream_cheese_1", "butter_1"):
            for _ in range(3):  # the cream cheese's first grasp, under the rim, slips
                picked = world.execute("pick", {"ref": ref})
                assert picked.ok, picked.message
                if world.held_ref() == ref:
                    break
            assert world.held_ref() == ref
            args = {"ref": ref, "target": "basket_1_contain_region", "relation": "in"}
            placed = world.execute("place", args)
            assert placed.ok, placed.message
            assert world.held_ref() is None
            basket = geo.box("basket_1")
            assert basket is not None and abs(basket.centre[2] - standing.centre[2]) < 0.01
            assert holds(world, "in", ref, "basket_1_contain_region")
        assert world.goal_achieved()
        assert world.step_audit()["outside"] == 0
    finally:
        world.disconnect()


def test_a_box_the_basket_rests_on_is_picked_after_the_basket_is_lifted_off_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """LIBERO-PRO libero_object_temp_y0.4 task 1 ("pick up the cream cheese and place it in
    the basket"), state 0: the cream cheese box lies along the basket's wall with its far
    edge under it, the basket's floor resting on that edge. The fingers close across the box
    (it is longer than they open) and the hand came down on the basket's wall: three picks
    pinched a corner, dragged the basket and dropped the box. Now the basket is lifted off by
    its rim and set down clear first (``lifting_off``), and the box is picked and put in it;
    where that cannot be done the pick is refused before anything moves, naming the basket
    (``pinned``)."""
    world = libero_world("libero_object_temp_y0.4", 1, 0)
    try:
        geo = world.geometry
        basket = geo.box("basket_1")
        steps = world.step_audit()
        with monkeypatch.context() as patched:
            patched.setattr(picking, "lift_off", lambda *_: None)
            refused = world.execute("pick", {"ref": "cream_cheese_1"})
        assert not refused.ok
        assert "basket_1" in refused.message and "under" in refused.message, refused.message
        assert geo.box("basket_1") == basket
        assert world.step_audit() == steps
        picked = world.execute("pick", {"ref": "cream_cheese_1"})
        assert picked.ok and "lift basket_1 off it" in picked.message, picked.message
        assert world.held_ref() == "cream_cheese_1"
        args = {"ref": "cream_cheese_1", "target": "basket_1_contain_region", "relation": "in"}
        placed = world.execute("place", args)
        assert placed.ok, placed.message
        assert holds(world, "in", "cream_cheese_1", "basket_1_contain_region")
        assert world.goal_achieved()
        assert world.step_audit()["outside"] == 0
    finally:
        world.disconnect()


def test_a_thing_put_in_a_bowl_is_let_go_where_the_open_fingers_clear_its_rim() -> None:
    """libero_goal task 6 ("put the cream cheese in the bowl"), state 1: let go deep in the
    bowl (10.8 cm across), the opening fingers (13.6 cm) pressed on its walls and the
    retreat lifted the bowl, cheese and all, 20 cm off the table. LIBERO's On still held
    (the cheese on the bowl, the bowl in the air); the place's check, which fails a place
    that leaves anything in the fingers, did not. Now the hand lets go just above the rim
    (``letting_go.clear_above``) and the cheese drops in: the bowl stays on the table."""
    world = libero_world("libero_goal", 6, 1)
    try:
        geo = world.geometry
        standing = geo.box("akita_black_bowl_1")
        assert standing is not None
        picked = world.execute("pick", {"ref": "cream_cheese_1"})
        assert picked.ok and world.held_ref() == "cream_cheese_1", picked.message
        args = {"ref": "cream_cheese_1", "target": "akita_black_bowl_1", "relation": "in"}
        placed = world.execute("place", args)
        assert placed.ok, placed.message
        assert world.held_ref() is None
        after = geo.box("akita_black_bowl_1")
        assert after is not None and abs(after.bottom - standing.bottom) < 0.01
        assert holds(world, "on", "cream_cheese_1", "akita_black_bowl_1")
        assert world.step_audit()["outside"] == 0
    finally:
        world.disconnect()


def test_a_low_box_hemmed_in_by_a_milk_is_grasped_with_the_hand_turned_askew() -> None:
    """libero_10 task 1 ("put both the cream cheese box and the butter in the basket"),
    state 44: a milk carton stands 4.9 cm from the cream cheese box's long side, over its
    middle, and the hand, 21 cm long along the fingers closing across the box, came down on
    it; no push had room (the orange juice 2.3 cm from one end, the alphabet soup behind
    the other). The fingers closed on nothing three times and the task failed. Now the hand
    turns off square across the box, where its end swings past the milk (``askew``): the
    box is picked at the first attempt, both things go in the basket, and LIBERO's goal
    holds."""
    _both_into_the_basket(("libero_10", 1, 44), ("cream_cheese_1", "butter_1"), "askew")


def _both_into_the_basket(scene: tuple[str, int, int], refs: tuple[str, str], how: str) -> None:
    """Pick each of ``refs`` in the published ``scene`` (suite, task, state) and put it in
    the basket: every pick whole at the first attempt, only the first one's taking the way
    ``how`` names (a word of its message); LIBERO's In after each place, its goal at the
    end, and no physics step outside the profile."""
    world = libero_world(*scene)
    try:
        for ref in refs:
            picked = world.execute("pick", {"ref": ref})
            assert picked.ok and "stopped short" not in picked.message, picked.message
            assert (how in picked.message) == (ref == refs[0]), picked.message
            assert world.held_ref() == ref
            args = {"ref": ref, "target": "basket_1_contain_region", "relation": "in"}
            placed = world.execute("place", args)
            assert placed.ok, placed.message
            assert holds(world, "in", ref, "basket_1_contain_region")
        assert world.goal_achieved()
        assert world.step_audit()["outside"] == 0
    finally:
        world.disconnect()
