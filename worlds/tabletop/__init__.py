"""The built-in PyBullet tabletop simulator (``driver: {name: sim.tabletop}``).

Importing this package does not import PyBullet; building a :class:`TabletopSim` does.
"""

from worlds.tabletop.scene import Faults, ObjectSpec, TabletopConfig, TraySpec

__all__ = ["Faults", "ObjectSpec", "TabletopConfig", "TabletopSim", "TraySpec"]


def __getattr__(name: str) -> object:
    if name == "TabletopSim":
        from worlds.tabletop.simulator import TabletopSim

        return TabletopSim
    raise AttributeError(name)
