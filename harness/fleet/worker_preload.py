"""What the forkserver of ``harness eval``'s local workers imports once for all of them.

Importing this module imports what an episode on the default world imports anyway: the
harness's own parts and the modules the default world names in its ``preload`` (its
simulator and PyBullet, through its quiet import so no build banner lands in the eval's
output); about 0.65 s. :mod:`harness.fleet.local` forks every worker from the
process that did.

A model's SDK is not among them: ``anthropic`` alone takes 1.1 s, an offline episode
never needs it, and an episode that does imports its own. None of these imports starts a
thread (``tests/fleet/test_fleet_units.py`` checks), which is what makes forking from the
forkserver safe.
"""

from __future__ import annotations

import contextlib
import importlib
import sqlite3  # noqa: F401  (the run store)

import jsonschema  # noqa: F401
import networkx  # noqa: F401
import PIL.Image  # noqa: F401

import harness.assembly.build
import harness.config
import harness.fleet.driver_pool
import harness.fleet.episode
import harness.planner.policy
import harness.runtime.harness  # noqa: F401
from worlds.registry import default_world

for _module in default_world().preload:
    with contextlib.suppress(ImportError):  # the world's extra is not installed
        importlib.import_module(_module)
