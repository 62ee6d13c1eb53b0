"""Issue 40, item 5: a mug carried into the microwave through its door, and the door swept
shut (libero_10 task 9), judged by LIBERO's own predicates (helpers:
``tests/worlds/libero_cases.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.worlds.libero_cases import SKILL_MARKS, holds, libero_world

pytestmark = SKILL_MARKS


@pytest.mark.parametrize("state", [1, 9])
def test_a_mug_goes_in_through_the_microwaves_door_and_the_door_is_swept_shut(state: int) -> None:
    """libero_10 task 9 failed 3/3: a mug held over its rim (the hand on it taller than the
    14 cm opening) could not go in, and nothing moved a hinged door. The mug is now held by
    its handle, carried in with the hand outside, pushed deep enough for the door to clear
    its handle, and the door swept shut along its hinge; judged by LIBERO's In and Close.
    State 9 was refused ("no room to carry ... in"): the oven stands turned 6 degrees and
    its panels' axis-aligned boxes reached 2.3 cm out of its face; the boxes are now tested
    as they are turned."""
    world = libero_world("libero_10", 9, state)
    mug, oven = "white_yellow_mug_1", "microwave_1"
    try:
        assert holds(world, "open", oven)  # the published state leaves the door open
        assert world.execute("pick", {"ref": mug}).ok
        placed = world.execute("place", {"ref": mug, "target": oven, "relation": "in"})
        assert placed.ok, placed.message
        assert holds(world, "in", mug, "microwave_1_heating_region")
        _shut_on_it(world, oven, mug, "microwave_1_heating_region")
    finally:
        world.disconnect()


def test_a_door_facing_the_workspaces_edge_is_opened_wider_from_inside_it() -> None:
    """LIBERO-PRO libero_10_swap task 9, state 0: the microwave's front stands at y = -0.36
    and its door, open 80 degrees, leans over the opening towards the workspace's edge
    (y = -0.49): carried with the hand outside, the hand meets the leaf wherever the arm
    reaches. The place was refused, and opening wider was not named: the sweep pushed the
    leaf at its far end, 9 cm past the edge. The leaf is now pushed 12 cm out, inside the
    workspace, so the refusal names the remedy; opened to LIBERO's opened position, the mug
    picked again is carried over the oven's top (at the usual height it dragged over it and
    hung tilted 19 degrees in the fingers, its rim meeting the opening's top) and goes in,
    and the door is swept shut; nothing goes outside the workspace."""
    world = libero_world("libero_10_swap", 9, 0)
    mug, oven, inside = "white_yellow_mug_1", "microwave_1", "microwave_1_heating_region"
    try:
        # set down where it stood
        _refused_then_put_in_wider(
            world, mug, oven, inside, "kitchen_table_white_yellow_mug_init_region"
        )
        _shut_on_it(world, oven, mug, inside)
    finally:
        world.disconnect()


def test_a_door_open_too_little_is_named_and_opened_wider_then_the_mug_goes_in() -> None:
    """libero_10 task 9, state 11: the door stands open 76 degrees (LIBERO's Open holds),
    and its leaf left the opening 20 cm beside it for the 21 cm long hand trailing the mug
    outside; the place was refused as "no room", which named no remedy, and the task gave
    up. The refusal now says the door stands in the way and to open it wider; set down,
    the door opened (swept to LIBERO's opened position), the mug picked again goes in."""
    world = libero_world("libero_10", 9, 11)
    mug, oven, inside = "white_yellow_mug_1", "microwave_1", "microwave_1_heating_region"
    try:
        assert holds(world, "open", oven)
        _refused_then_put_in_wider(
            world, mug, oven, inside, "kitchen_table_porcelain_mug_front_region"
        )
        assert world.step_audit()["outside"] == 0
    finally:
        world.disconnect()


def test_a_mug_whose_handle_faces_the_door_is_turned_to_go_in() -> None:
    """LIBERO-PRO libero_10_task 9 ("put the white mug in the microwave and close it"): the
    white mug's handle faces the microwave, so the hand on it would have met the door before
    the mug was inside, and the place was refused twice. The wrist now turns the held mug
    (a half turn, in steps the arm is solved to reach) so that the hand trails outside."""
    world = libero_world("libero_10_task", 9, 0)
    mug, oven = "porcelain_mug_1", "microwave_1"
    try:
        assert world.execute("pick", {"ref": mug}).ok
        placed = world.execute("place", {"ref": mug, "target": oven, "relation": "in"})
        assert placed.ok, placed.message
        assert holds(world, "in", mug, "microwave_1_heating_region")
        assert world.step_audit()["outside"] == 0
    finally:
        world.disconnect()


def _refused_then_put_in_wider(world: Any, mug: str, oven: str, inside: str, spot: str) -> None:
    """The mug picked, its place in ``inside`` refused before anything moves as needing
    the door wider, the mug set down on ``spot``, the door opened, the mug picked again and
    put in: what the planner does after that refusal."""
    assert world.execute("pick", {"ref": mug}).ok
    placed = world.execute("place", {"ref": mug, "target": inside, "relation": "in"})
    assert not placed.ok and f"open {oven} wider first" in placed.message, placed.message
    assert world.held_ref() == mug  # refused before anything moved
    assert world.execute("place", {"ref": mug, "target": spot, "relation": "on"}).ok
    assert world.execute("open", {"ref": oven}).ok
    assert world.execute("pick", {"ref": mug}).ok
    placed = world.execute("place", {"ref": mug, "target": inside, "relation": "in"})
    assert placed.ok, placed.message
    assert holds(world, "in", mug, inside)


def test_a_mug_is_pushed_in_with_the_wrist_kept_in_where_the_oven_faces_the_edge() -> None:
    """LIBERO-PRO libero_10_swap task 9, state 1: the oven's opening faces the workspace's
    edge, and the push that takes the mug deeper (its handle past the door's plane) started
    at y = -0.39 with the hand dipped 45 degrees, the wrist trailing 0.75 m from the base's
    axis: the elbow straightened and the gripper strayed 6 cm, three times, and the task
    gave up. The hand now dips as steeply as keeps the wrist in (60 degrees here), pushes
    the mug in, and the door is swept shut over it."""
    world = libero_world("libero_10_swap", 9, 1)
    mug, oven, inside = "white_yellow_mug_1", "microwave_1", "microwave_1_heating_region"
    try:
        assert world.execute("pick", {"ref": mug}).ok
        placed = world.execute("place", {"ref": mug, "target": inside, "relation": "in"})
        assert placed.ok, placed.message
        assert holds(world, "in", mug, inside)
        _shut_on_it(world, oven, mug, inside)
    finally:
        world.disconnect()


def test_an_oven_too_near_the_edge_is_refused_naming_the_edge_and_how_far() -> None:
    """LIBERO-PRO libero_10_swap task 9, state 2: the oven stands 1.7 cm nearer the
    workspace's edge than at state 0, and the mug, held by its handle with the hand behind
    it, must come down in front of the opening with the hand 1.3 cm past the edge wherever
    along the opening it goes in (and the door, open 75 degrees, is in the way of some of
    those places too). The refusal said only "no room ... without touching it"; it now names
    the edge and the distance, and the door, before anything moves."""
    world = libero_world("libero_10_swap", 9, 2)
    mug, inside = "white_yellow_mug_1", "microwave_1_heating_region"
    try:
        assert world.execute("pick", {"ref": mug}).ok
        before = world.ee_position()
        placed = world.execute("place", {"ref": mug, "target": inside, "relation": "in"})
        assert not placed.ok
        assert "past the workspace's edge" in placed.message, placed.message
        assert "1.3 cm" in placed.message and "opened wider" in placed.message, placed.message
        assert world.held_ref() == mug  # refused before anything moved
        assert max(abs(a - b) for a, b in zip(world.ee_position(), before, strict=True)) < 0.002
    finally:
        world.disconnect()


def _shut_on_it(world: Any, oven: str, mug: str, inside: str) -> None:
    """The door swept shut with the mug inside, both by LIBERO's predicates, and not one
    physics step outside the profile in the whole episode."""
    shut = world.execute("close", {"ref": oven})
    assert shut.ok, shut.message
    assert holds(world, "close", oven) and holds(world, "in", mug, inside)
    assert world.step_audit()["outside"] == 0
