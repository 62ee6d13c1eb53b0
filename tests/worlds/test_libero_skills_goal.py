"""Issue 40: libero_goal skills that failed at 10 initial states per task, each reproduced on
the published state where it failed and judged by LIBERO's own predicates (helpers:
``tests/worlds/libero_cases.py``)."""

from __future__ import annotations

from typing import Any

from tests.worlds.libero_cases import SKILL_MARKS, holds, libero_world, put_fixture

pytestmark = SKILL_MARKS

CABINET_STATE_1 = (0.0396, -0.234)
"""Where the wooden cabinet stood (LIBERO's world frame) when libero_goal task 3, state 1
was first restored in a fresh env, as the demo and the eval restore it."""


def test_a_bowl_under_the_opened_drawer_is_slid_out_before_it_is_lifted() -> None:
    """libero_goal task 3 ("open the top drawer and put the bowl inside"), state 3: the top
    drawer, opened, reaches over the bowl; lifted straight up, the bowl met the drawer's
    bottom and was torn from the fingers (held by nothing after the pick). It is now slid
    out from under along the table first, then lifted and put in the drawer. Restored a
    second time, as an eval's shared env is between episodes (LIBERO places the cabinet
    anew on every reset, within 2 cm; it was not shoved by the opening, as was thought)."""
    world = libero_world("libero_goal", 3, 3)
    world.reset(init_state=3)
    try:
        opened = world.execute("open", {"ref": "wooden_cabinet_1_top_region"})
        assert opened.ok
        picked = world.execute("pick", {"ref": "akita_black_bowl_1"})
        # since the drag (``dragging.py``) the bowl is dragged out by its inside at this
        # placement of the cabinet, by the opening or the pick, before it is lifted (at
        # state 3's own placement the opening's drag leaves nothing over it: a plain lift)
        said = f"{opened.message} {picked.message}"
        out = ("slide out from under", "by its inside")
        assert picked.ok and any(how in said for how in out), said
        assert holds(world, "open", "wooden_cabinet_1_top_region")  # not pushed back in
        _the_held_bowl_goes_into_the_top_drawer(world)
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


def _cabinet_at_near_end(world: object) -> None:
    """Put the wooden cabinet where LIBERO's placement may put it nearest the bowl: its
    BDDL ``cabinet_region`` ranges x 0.02-0.04, y -0.25 to -0.23 (world frame), and LIBERO
    re-places it there at random on every reset (it has no joint; the published initial
    state does not fix it). The eval met this end at states 3-5."""
    env = world.env.env  # type: ignore[attr-defined]
    model = env.sim.model
    body = model.body_name2id("wooden_cabinet_1_main")
    model.body_pos[body][:2] = (0.04, -0.23)
    env.sim.forward()


def test_a_bowl_the_opened_drawer_would_leave_no_way_to_is_dragged_out_first() -> None:
    """libero_goal task 3, state 3, the cabinet at the near end of its placement range:
    opened, the top drawer's front corner stands 2 cm from the bowl's centre, and every rim
    grasp's hand (or wrist) came down on it (three picks, nothing held). The opening now
    first drags the bowl out of the way by its inside, saying so; then the bowl is picked
    and put in the drawer."""
    world = libero_world("libero_goal", 3, 3)
    try:
        _cabinet_at_near_end(world)
        opened = world.execute("open", {"ref": "wooden_cabinet_1_top_region"})
        assert opened.ok and "by its inside" in opened.message, opened.message
        assert holds(world, "open", "wooden_cabinet_1_top_region")
        assert world.execute("pick", {"ref": "akita_black_bowl_1"}).ok
        _the_held_bowl_goes_into_the_top_drawer(world)
    finally:
        world.disconnect()


def test_a_bowl_whose_drag_across_meets_the_wine_bottle_is_dragged_with_the_hand_along() -> None:
    """LIBERO-PRO libero_goal_lan task 3, state 0 (the cabinet where the eval's reset put
    it): the opened top drawer leaves the bowl no rim grasp, and the hand turned across
    every drag that would free it reached over the wine bottle's neck beside the bowl, so
    the drawer was opened without the drag and three picks came down on its front. The
    hand turned along the drag has room: the opening drags the bowl first, saying so, and
    the bowl is picked."""
    world = libero_world("libero_goal_lan", 3, 0)
    try:
        put_fixture(world, "wooden_cabinet_1_main", (0.0396, -0.234))
        opened = world.execute("open", {"ref": "wooden_cabinet_1_top_region"})
        assert opened.ok and "by its inside" in opened.message, opened.message
        assert holds(world, "open", "wooden_cabinet_1_top_region")
        assert world.execute("pick", {"ref": "akita_black_bowl_1"}).ok
        assert world.held_ref() == "akita_black_bowl_1"  # (the place: the test above)
        assert world.step_audit()["outside"] == 0
    finally:
        world.disconnect()


def test_a_bowl_hemmed_in_under_the_opened_drawer_is_raised_under_it_and_slid_out() -> None:
    """libero_goal task 3, state 1 (the cabinet where the demo's reset put it; failed in
    several evals): opened, the top drawer's front corner reaches 1 cm over the bowl, and
    the wine bottle, the plate and the cream cheese stand around it, so no slide along the
    table clears it. Lifted straight up, the bowl caught the drawer and pushed it from
    14.9 to 13.9 cm open, short of LIBERO's 14 cm for Open, and the place was refused as
    'closed; open it first'. The pick now raises the bowl to just under the drawer, slides
    it out there and lifts it: the drawer stays open and the bowl goes in."""
    world = libero_world("libero_goal", 3, 1)
    try:
        put_fixture(world, "wooden_cabinet_1_main", CABINET_STATE_1)
        assert world.execute("open", {"ref": "wooden_cabinet_1_top_region"}).ok
        assert holds(world, "open", "wooden_cabinet_1_top_region")
        picked = world.execute("pick", {"ref": "akita_black_bowl_1"})
        assert picked.ok, picked.message
        assert holds(world, "open", "wooden_cabinet_1_top_region")  # not pushed back in
        assert "raise under the overhang" in picked.message, picked.message
        _the_held_bowl_goes_into_the_top_drawer(world)
    finally:
        world.disconnect()


CABINET_STATE_8 = (0.0206, -0.2371)
"""Where LIBERO's placement stands the wooden cabinet (world frame) at libero_goal task 3,
state 8, drawn from that state's own seed (``env.placement_seed``)."""


def test_a_bowl_beside_a_taller_thing_is_still_slid_out_from_under_the_drawer() -> None:
    """libero_goal task 3, state 8: opened, the top drawer's front reaches 1 cm over the
    dragged-aside bowl's box, and the wine bottle's base stands inside that box too (beside
    the round bowl, taller than it). Counted as reaching over the bowl, the bottle made the
    rise under the overhang negative: no way out from under was found, the bowl lifted
    straight up scraped the drawer's front from 14.65 to 13.97 cm open, short of LIBERO's 14
    for Open, the place was refused ("closed; open it first") and three opens later the
    task was given up. The pick now raises the bowl under the drawer and slides it out: the
    drawer stays open and the bowl goes in."""
    world = libero_world("libero_goal", 3, 8)
    try:
        put_fixture(world, "wooden_cabinet_1_main", CABINET_STATE_8)
        assert world.execute("open", {"ref": "wooden_cabinet_1_top_region"}).ok
        assert holds(world, "open", "wooden_cabinet_1_top_region")
        picked = world.execute("pick", {"ref": "akita_black_bowl_1"})
        assert picked.ok, picked.message
        assert "slide out from under" in picked.message, picked.message
        assert holds(world, "open", "wooden_cabinet_1_top_region")  # not pushed back in
        _the_held_bowl_goes_into_the_top_drawer(world)
    finally:
        world.disconnect()


def test_a_drawer_pushed_back_short_of_open_is_opened_again_from_the_robots_left() -> None:
    """libero_goal task 3, state 8, as the episode left it before the pick above was fixed:
    the top drawer pushed back to 13.97 cm open (LIBERO's Open wants 14), its handle 69 cm
    out on the robot's left, the arm where the place's retreat left it. Pulled towards the
    initial state's joints, the arm came down to the face with its elbow nearly straight
    and its shoulder near the stop; the reach drifted 4 cm outwards, stopped 7 cm short of
    the handle and the fingers closed on nothing (twice; the third open ran out of steps).
    Leaning towards the joints solved at the grasp, it opens the drawer again."""
    world = libero_world("libero_goal", 3, 8)
    try:
        put_fixture(world, "wooden_cabinet_1_main", CABINET_STATE_8)
        env = world.env.env
        model = env.sim.model
        joint = env.object_sites_dict["wooden_cabinet_1_top_region"].joints[0]
        env.sim.data.qpos[model.get_joint_qpos_addr(joint)] = -0.1397
        env.sim.forward()
        assert not holds(world, "open", "wooden_cabinet_1_top_region")
        assert world.execute("move_to", {"x": 0.482, "y": -0.018, "z": 0.245}).ok
        assert world.execute("open", {"ref": "wooden_cabinet_1_top_region"}).ok
        assert holds(world, "open", "wooden_cabinet_1_top_region")
        assert world.step_audit()["outside"] == 0
    finally:
        world.disconnect()


def _the_held_bowl_goes_into_the_top_drawer(world: Any) -> None:
    """The bowl is held; placed in the opened top drawer, LIBERO says it is in, and no
    physics step left the profile."""
    assert world.held_ref() == "akita_black_bowl_1"
    args = {"ref": "akita_black_bowl_1", "target": "wooden_cabinet_1_top_region", "relation": "in"}
    assert world.execute("place", args).ok
    assert holds(world, "in", "akita_black_bowl_1", "wooden_cabinet_1_top_region")
    assert world.step_audit()["outside"] == 0


def test_a_rim_grasp_is_turned_to_the_way_the_wrist_can_turn() -> None:
    """libero_goal task 4 ("put the bowl on top of the cabinet"), state 20: the rim grasp
    faced -1.31 rad with the hand at +1.57; the controller turned the wrist the shorter
    way by joint 7 alone, from 0.91 into its 2.90 stop, and the gripper stalled 12 cm over
    the bowl, three times (the inverse kinematics held that yaw by spreading the turn over
    the arm, which the controller does not do). The half-turned grasp, the same for the
    hand, is taken: the bowl is picked and set on the cabinet."""
    world = libero_world("libero_goal", 4, 20)
    try:
        ref = "akita_black_bowl_1"
        done = world.execute("pick", {"ref": ref})
        assert done.ok, done.message
        assert world.held_ref() == ref
        env = world.env.env
        robot = env.robots[0]
        q7 = float(env.sim.data.qpos[robot._ref_joint_pos_indexes[-1]])
        high = float(env.sim.model.jnt_range[robot._ref_joint_indexes[-1]][1])
        assert q7 < high - 0.1
        placed = world.execute(
            "place", {"ref": ref, "target": "wooden_cabinet_1_top_side", "relation": "on"}
        )
        assert placed.ok, placed.message
        assert holds(world, "on", ref, "wooden_cabinet_1_top_side")
    finally:
        world.disconnect()
