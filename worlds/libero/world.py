"""The LIBERO world as the registry sees it (``--world libero``, ``harness eval libero_*``)."""

from __future__ import annotations

from worlds.contract import DriverEntry, World
from worlds.libero.config import PROFILE
from worlds.libero.demo import DEPLOYMENT, LiberoDemo
from worlds.libero.suites import LiberoSuites

__all__ = ["WORLD"]

WORLD = World(
    name="libero",
    summary="LIBERO's task suites on MuJoCo: a Franka Panda in kitchens and living rooms, "
    "judged by LIBERO's own BDDL goal predicates",
    drivers=(
        DriverEntry(
            "sim.libero",
            "worlds.libero.driver:LiberoSim",
            reusable=True,
            select_options=("suite", "task", "init_state"),
        ),
    ),
    profile="panda_libero",
    profiles={"panda_libero": PROFILE},
    scene="driver",
    task_check="goal_predicates",
    install="pip install 'embodied-harness[libero]'",
    requires=("libero", "robosuite", "mujoco"),
    deployment=DEPLOYMENT,
    demo=LiberoDemo(),
    suites=LiberoSuites(),
)
