"""The tabletop world as the registry sees it (``harness demo``, ``driver: sim.tabletop``)."""

from __future__ import annotations

from worlds.contract import DriverEntry, World
from worlds.tabletop.demo import DEPLOYMENT, TabletopDemo

__all__ = ["WORLD"]

WORLD = World(
    name="tabletop",
    summary="a Franka Panda at a table with a tray and coloured cubes (PyBullet); "
    "the built-in demo",
    drivers=(DriverEntry("sim.tabletop", "worlds.tabletop.simulator:TabletopSim"),),
    profile="panda_tabletop",
    scene="driver",
    task_check="ground_truth",
    install="pip install 'embodied-harness[sim]'",
    requires=("pybullet",),
    deployment=DEPLOYMENT,
    demo=TabletopDemo(),
    preload=("worlds.tabletop.preload",),
)
