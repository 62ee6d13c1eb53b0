"""The fake world as the registry sees it (``driver: fake``): a kinematic robot, no physics.

For tests, examples and dry runs of a deployment: the arm (and a mobile profile's base)
moves in small straight steps, graspable objects sit where its options put them, and it
renders synthetic frames. It has no scene perception and no task check of its own.
"""

from __future__ import annotations

from worlds.contract import DriverEntry, World

__all__ = ["WORLD"]

WORLD = World(
    name="fake",
    summary="a kinematic fake robot (no physics, no dependencies) for tests and dry runs",
    drivers=(DriverEntry("fake", "worlds.fake.robot:FakeRobot"),),
    profile="panda_tabletop",
    scene="none",
    task_check="none",
)
