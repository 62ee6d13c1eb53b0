"""What a worker process imports once to run tabletop episodes: the simulator and PyBullet.

Importing this module imports PyBullet through its quiet import, so PyBullet's build
banner is printed nowhere; ``harness eval``'s local workers are forked from a process
that imported it (the tabletop is the default world), which saves every episode that
import (about 0.65 s with the harness).
"""

from __future__ import annotations

import worlds.tabletop.simulator  # noqa: F401
from embodiment.pybullet_import import import_pybullet

import_pybullet()
