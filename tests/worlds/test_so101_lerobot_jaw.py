"""The ``lerobot.robot`` driver's jaw goal, without LeRobot (the driver imports LeRobot
only when it connects): never more than ``gripper_lead`` from the measured jaw, so a
closing jaw presses an object with a bounded error and a robot's ``max_relative_target``
of at least the lead never clips it; within the lead, the goal is sent as asked."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from worlds.registry import load_profile
from worlds.so101.lerobot_driver import LeRobotDriver

units = st.floats(min_value=-20.0, max_value=120.0, allow_nan=False)


def jaw_driver(**options: object) -> LeRobotDriver:
    return LeRobotDriver(load_profile("so101"), robot={"type": "so101_follower"}, **options)


@given(goal=units, now=units, lead=st.floats(min_value=0.1, max_value=50.0))
def test_the_goal_is_within_the_lead_of_the_jaw_and_towards_the_asked_goal(
    goal: float, now: float, lead: float
) -> None:
    driver = jaw_driver(gripper_lead=lead)
    sent = driver._within_lead(goal, {"gripper.pos": now})
    assert abs(sent - now) <= lead + 1e-9
    if abs(goal - now) <= lead - 1e-9:
        assert sent == goal
    else:  # as far towards the goal as the lead allows
        assert abs(sent - now) == pytest.approx(lead) and (sent - now) * (goal - now) >= 0


@given(goal=units, now=units)
def test_without_a_lead_the_goal_is_sent_as_asked(goal: float, now: float) -> None:
    assert jaw_driver(gripper_lead=None)._within_lead(goal, {"gripper.pos": now}) == goal


def test_a_lead_must_be_positive() -> None:
    with pytest.raises(ValueError, match="gripper_lead"):
        jaw_driver(gripper_lead=0.0)
