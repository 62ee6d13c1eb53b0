"""Issue 40: two moka pots set down side by side on the stove (libero_10 task 8), judged
by LIBERO's own predicates (helpers: ``tests/worlds/libero_cases.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.worlds.libero_cases import SKILL_MARKS, holds, libero_world

pytestmark = SKILL_MARKS


@pytest.mark.parametrize("state", [0])
def test_both_moka_pots_stand_on_the_stove_side_by_side(state: int) -> None:
    """libero_10 task 8 failed 10/10 on main: both pots were set down in the middle of the
    stove's cook region (15 cm across; a pot is 8.1 cm), so the second landed on the first
    and pushed it off. The first now leaves room for the second beside it."""
    world = libero_world("libero_10", 8, state)
    try:
        region = "flat_stove_1_cook_region"
        for ref in ("moka_pot_1", "moka_pot_2"):
            assert world.execute("pick", {"ref": ref}).ok
            assert world.execute("place", {"ref": ref, "target": region, "relation": "on"}).ok
        assert holds(world, "on", "moka_pot_1", region)
        assert holds(world, "on", "moka_pot_2", region)
        assert world.env.env._check_success()  # the stove is on from the start
    finally:
        world.disconnect()


def test_both_moka_pots_on_a_stove_placed_at_the_reachs_edge() -> None:
    """LIBERO-PRO libero_10_swap task 8, state 0: the stove's cook region spans 0.804-0.954
    m out. Two pots 14.8 cm long fit side by side only turned a quarter, their bodies at
    least 0.819 m out, the fingers 1.4 cm further. Against a measured reach (0.82 m) no
    spot had them within it: the first pot went to the middle, the second to an
    unreachable spot, stalled at 0.805 and came down on the first's edge. Now the spots
    are those the arm holds with the hand tilted out at most 10 degrees at that turn
    (``reach.reach_radius``: 0.846 m there), and the place commands the tilt it needs
    rather than pointing down (commanded down, the controller stopped 3.9 cm short and the
    second pot, set beside the first, came down on it)."""
    world = libero_world("libero_10_swap", 8, 0)
    try:
        region = "flat_stove_1_cook_region"
        for ref in ("moka_pot_1", "moka_pot_2"):
            assert world.execute("pick", {"ref": ref}).ok
            placed = world.execute("place", {"ref": ref, "target": region, "relation": "on"})
            if not placed.ok:  # the planner retries a place stopped short
                placed = world.execute("place", {"ref": ref, "target": region, "relation": "on"})
            assert placed.ok
        assert holds(world, "on", "moka_pot_1", region)
        assert holds(world, "on", "moka_pot_2", region)
    finally:
        world.disconnect()


def test_the_stove_near_the_base_is_turned_off_inside_the_profile() -> None:
    """LIBERO-PRO libero_goal_task task 7 ("turn off the stove"), state 0: the knob stands
    31 cm from the robot's base axis at 0.0, against its stop at -0.005 (LIBERO's off: below
    0). The controller folded the elbow to its limit 2 cm short of the ridge, the full turn
    back strained against the stop, and the fingers dragged the knob to +0.51 (towards on);
    retried, the gripper came within 2 cm of the base's keep-out zone. Now the arm leans
    towards joints solved at the grasp and the knob goes just past its off end. Before the
    zone guard, the retries put 18 physics steps inside the base's zone; every step is
    checked here against the zone with an oracle of the test's own (no StepAudit code)."""
    world = libero_world("libero_goal_task", 7, 0)
    try:
        zone = next(z for z in world.profile.keep_out if z.name == "robot_base")
        low, high = np.array(zone.min), np.array(zone.max)  # the world frame
        gaps: list[float] = []

        def gap(point: tuple[float, float, float]) -> None:
            here = np.array(world.profile.to_world(point, "base"))
            gaps.append(
                float(np.linalg.norm(np.maximum(low - here, 0) + np.maximum(here - high, 0)))
            )

        world.add_step_observer(gap)
        done = world.execute("turn_off", {"ref": "flat_stove_1"})
        assert done.ok, done.message
        assert holds(world, "turnoff", "flat_stove_1")
        assert world.env.env._check_success()
        audit = world.step_audit()
        assert audit["outside"] == 0 and audit["steps"] == len(gaps) > 0
        assert min(gaps) > 0.0
    finally:
        world.disconnect()


def test_a_knob_out_of_the_arms_reach_is_refused_before_anything_moves() -> None:
    """The same stove moved 1.2 m out from the base (a fault injected into the fixture's
    pose): solved before moving, the arm cannot hold the gripper on its knob, so the turn
    is refused, naming why, and not one physics step is taken."""
    world = libero_world("libero_goal_task", 7, 0)
    try:
        env = world.env.env
        body = env.sim.model.body_name2id("flat_stove_1_main")
        env.sim.model.body_pos[body][0] += 1.2
        env.sim.forward()
        before = world.step_audit()["steps"]
        refused = world.execute("turn_off", {"ref": "flat_stove_1"})
        assert not refused.ok
        assert "cannot hold the gripper on flat_stove_1's knob" in refused.message
        assert world.step_audit()["steps"] == before
    finally:
        world.disconnect()


@pytest.mark.parametrize("state", [0, 1, 2])
def test_a_stove_left_on_is_turned_off_at_the_first_attempt(state: int) -> None:
    """libero_90 task 39 ("turn off the stove"), knobs left on at 0.98, 1.86 and 1.55 rad
    (states 0-2). State 1 was refused: from the grasp at yaw 0 the turn back needed joint 7
    at 3.64 of its 2.90 rad; the half-turned grasp (the hand is the same) is now taken.
    State 2: both grasps solved, but the solution spread the turn over the arm while the
    controller turns joint 7 alone, into its stop with the knob still on; the grasp with
    the last joint's more room is now taken. State 0: the fingers closed 34 degrees across
    the ridge (its world box, not its own axes, chose the yaw) and slipped; and a knob let
    go still turning, or short of its stop, sprang back on."""
    world = libero_world("libero_90", 39, state)
    try:
        assert not holds(world, "turnoff", "flat_stove_1")
        done = world.execute("turn_off", {"ref": "flat_stove_1"})
        assert done.ok, done.message
        assert holds(world, "turnoff", "flat_stove_1")
        assert world.step_audit()["outside"] == 0
    finally:
        world.disconnect()


def test_a_pan_held_by_its_handle_is_set_on_the_stove_with_the_fingers_inside_the_workspace() -> (
    None
):
    """libero_90 task 45 ("turn on the stove and put the frying pan on it"), state 0: with a
    shelf unit in the scene the pan is picked by its handle, its fingers 22 cm from its body
    towards the robot's left; over the middle of the cook region they were 1.9 cm past the
    workspace's side and the envelope refused the place. The place now keeps every waypoint
    inside the planner's reach (the workspace less the arm's guard), turning the pan a
    quarter so that its handle points at the robot; judged by LIBERO's On."""
    world = libero_world("libero_90", 45, 0)
    pan, region = "chefmate_8_frypan_1", "flat_stove_1_cook_region"
    try:
        assert world.execute("pick", {"ref": pan}).ok and world.held_ref() == pan
        plan = world._plan("place", {"ref": pan, "target": region, "relation": "on"})
        low, high = world._planner.reach
        for point in plan.waypoints:
            assert all(lo <= v <= hi for lo, v, hi in zip(low, point, high, strict=True)), point
        done = world.execute("place", {"ref": pan, "target": region, "relation": "on"})
        assert done.ok, done.message
        assert holds(world, "on", pan, region)
        assert world.step_audit()["outside"] == 0
    finally:
        world.disconnect()
