"""Programmatic post-conditions of the fake's actions, judged from its own state.

``FakeRobot.post_conditions()`` returns a :class:`FakePostConditions`: ``pick`` holds
when the fake holds the ref, ``place`` when it let go, ``move_to`` when the gripper is at
the target. Kept apart from :mod:`.robot` so the judge reads only the robot's state and
never its motion code.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from embodiment.types import PostCondition

if TYPE_CHECKING:
    from worlds.fake.robot import FakeRobot

__all__ = ["FakePostConditions"]


class FakePostConditions:
    def __init__(self, robot: FakeRobot) -> None:
        self.robot = robot

    def check(self, action: str, arguments: Any, result: Any) -> PostCondition | None:
        robot = self.robot
        if action == "pick":
            ok = robot.held == arguments["ref"]
            return PostCondition(
                status="success" if ok else "failure",
                evidence=f"holding {robot.held}" if robot.held else "holding nothing",
            )
        if action == "place":
            ok = robot.held is None
            return PostCondition(
                status="success" if ok else "failure",
                evidence=f"{arguments['ref']} released" if ok else f"still holding {robot.held}",
            )
        if action == "move_to":
            error = math.dist(robot.ee, (arguments["x"], arguments["y"], arguments["z"]))
            return PostCondition(
                status="success" if error < 1e-6 else "failure",
                evidence=f"gripper {error:.3f} m from the target",
            )
        return None
