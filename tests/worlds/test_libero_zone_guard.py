"""A LIBERO skill whose motion near the robot's base cannot follow its path stays out of the
base's keep-out zone in every physics step (LIBERO-PRO libero_goal_task 7, "Turn off the
stove", initial state 0: 18 physics steps inside ``robot_base`` before the guard looked
ahead and backed the arm off)."""

from __future__ import annotations

import numpy as np
import pytest

from worlds.libero import libero_available

pytestmark = [
    pytest.mark.long,
    pytest.mark.libero,
    pytest.mark.skipif(not libero_available(), reason="the LIBERO world needs the [libero] extra"),
]


def test_turning_off_the_stove_beside_the_base_never_enters_its_zone() -> None:
    from worlds.libero.driver import LiberoSim

    world = LiberoSim(suite="libero_goal_task", task=7, init_state=0)
    world.connect()
    try:
        zone = next(z for z in world.profile.keep_out if z.name == "robot_base")
        low, high = np.array(zone.min), np.array(zone.max)
        gaps: list[float] = []

        def gap(point: tuple[float, float, float]) -> None:
            # an oracle of its own (no StepAudit code): the zone is given in the profile frame
            world_point = np.array(world.profile.to_world(point, "base"))
            outside = np.maximum(low - world_point, 0) + np.maximum(world_point - high, 0)
            gaps.append(float(np.linalg.norm(outside)))

        world.add_step_observer(gap)
        messages = [world.execute("turn_off", {"ref": "flat_stove_1"}).message for _ in range(3)]
        # the case itself: the arm could not follow its path and the guard stopped it
        assert any("keep-out zone robot_base" in m for m in messages), messages
        audit = world.step_audit()
        assert audit["steps"] == len(gaps) > 0
        assert audit["outside"] == 0, audit
        assert min(gaps) > 0.0
    finally:
        world.disconnect()
