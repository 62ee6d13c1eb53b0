"""Issue 40: libero_goal skills that failed at 10 initial states per task, each reproduced on
the published state where it failed and judged by LIBERO's own predicates (helpers:
``tests/worlds/libero_cases.py``)."""

from __future__ import annotations

from tests.worlds.libero_cases import SKILL_MARKS, holds, libero_world

pytestmark = SKILL_MARKS


def test_a_bowl_under_the_opened_drawer_is_slid_out_before_it_is_lifted() -> None:
    """libero_goal task 3 ("open the top drawer and put the bowl inside"), state 3: the top
    drawer, opened, reaches over the bowl; lifted straight up, the bowl met the drawer's
    bottom and was torn from the fingers (held by nothing after the pick). It is now slid
    out from under along the table first, then lifted and put in the drawer. Restored a
    second time, as an eval's shared env is between episodes: built fresh at state 3, the
    opening stalled on the handle and shoved the cabinet 1.7 cm nearer the bowl, where no
    grasp's hand comes down clear of the drawer (not fixed)."""
    world = libero_world("libero_goal", 3, 3)
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
        assert holds(world, "in", "akita_black_bowl_1", "wooden_cabinet_1_top_region")
        assert world.step_audit()["outside"] == 0
    finally:
        world.disconnect()


def test_a_plate_whose_slide_is_blocked_is_carried_over_by_its_rim() -> None:
    """libero_goal task 5 ("push the plate to the front of the stove"), state 0: the
    straight slide runs the plate into the bowl and the cream cheese box (its sloped rim rode
    up on the box and tipped over the fingers; the plate stopped 8 cm short), and the region's
    middle overlaps the box. The push now aims at the region's free spot and, its way
    blocked, carries the plate over by its rim, saying so."""
    world = libero_world("libero_goal", 5, 0)
    try:
        pushed = world.execute(
            "push", {"ref": "plate_1", "target": "main_table_stove_front_region"}
        )
        assert pushed.ok and "carried over it" in pushed.message, pushed.message
        assert holds(world, "on", "plate_1", "main_table_stove_front_region")
        assert world.held_ref() is None
        assert world.step_audit()["outside"] == 0
    finally:
        world.disconnect()
