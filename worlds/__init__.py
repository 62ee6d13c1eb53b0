"""Worlds and robots the harness drives, each in its own folder, found through a registry.

A world folder (one beside this module per built-in world, or a separately installed
package) exports one :class:`World`: its drivers, its robot's profile, where
its scene comes from, who judges a task, its suites and its demo task. The harness finds
it only through :mod:`worlds.registry` (the built-in table plus the
``embodied_harness.worlds`` and ``embodied_harness.drivers`` entry points) and reads only
the contract (:mod:`worlds.contract`). Worlds depend on ``embodiment`` and ``scene``,
never on ``harness``.
"""

from worlds.contract import (
    DEMO_FLAGS,
    DemoPlan,
    DemoRequest,
    DriverEntry,
    SuiteSpec,
    SuiteTaskSpec,
    World,
    WorldDemo,
    WorldError,
    WorldSuites,
)
from worlds.registry import (
    DEFAULT_WORLD,
    PluginError,
    build_driver,
    default_world,
    driver_entry,
    find_worlds,
    load_profile,
    load_world,
    suite_world,
    world_names,
    world_of_driver,
)

__all__ = [
    "DEFAULT_WORLD",
    "DEMO_FLAGS",
    "DemoPlan",
    "DemoRequest",
    "DriverEntry",
    "PluginError",
    "SuiteSpec",
    "SuiteTaskSpec",
    "World",
    "WorldDemo",
    "WorldError",
    "WorldSuites",
    "build_driver",
    "default_world",
    "driver_entry",
    "find_worlds",
    "load_profile",
    "load_world",
    "suite_world",
    "world_names",
    "world_of_driver",
]
