"""The mobile world as the registry sees it (``driver: sim.mobile``).

A holonomic base carrying an xArm 6 in a walled room with box obstacles (PyBullet), for
motion and safety work: it renders no camera and holds no objects, so it has no scene,
no task check and no demo task. ``harness check --world mobile`` builds it against its
profile.
"""

from __future__ import annotations

from pathlib import Path

from worlds.contract import DriverEntry, World

__all__ = ["PROFILE", "WORLD"]

PROFILE = Path(__file__).resolve().parent / "mobile_manipulator.yaml"

WORLD = World(
    name="mobile",
    summary="a mobile manipulator (an xArm 6 on a holonomic base) in a room with "
    "obstacles (PyBullet); motion and safety only, no camera",
    drivers=(DriverEntry("sim.mobile", "worlds.mobile.simulator:build"),),
    profile="mobile_manipulator",
    profiles={"mobile_manipulator": PROFILE},
    scene="none",
    task_check="none",
    install="pip install 'embodied-harness[sim]'",
    requires=("pybullet",),
)
