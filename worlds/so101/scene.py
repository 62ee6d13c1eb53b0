"""The SO-101 world's scenes: which cubes and where, as a function of a task and a seed.

Every scene is an open box and a few 2.8 cm cubes on a table in front of the arm, laid
out from a seed (``numpy``'s generator), inside the part of the table where the arm can
grasp from above (the annulus the published model reaches with its gripper pointing
down, measured with its kinematics: about 0.12 to 0.29 m from the base). Cubes never
start closer than :data:`MIN_GAP_M` to each other or to the box.

A task names the layout it needs (``place``: three cubes of three colours; ``stack``: a
red and a blue cube; ``sort``: two red and two blue cubes; ``pick``: three cubes); the
instruction is the suite's (``worlds/so101/suites.py``), never read here.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from worlds.so101.model import SceneObject

__all__ = ["COLORS", "LAYOUTS", "Layout", "So101Config", "layout_objects"]

Layout = Literal["place", "stack", "sort", "pick"]
COLORS: dict[str, tuple[float, float, float, float]] = {
    "red": (0.85, 0.12, 0.10, 1.0),
    "green": (0.15, 0.65, 0.20, 1.0),
    "blue": (0.12, 0.25, 0.85, 1.0),
    "yellow": (0.90, 0.80, 0.10, 1.0),
}
BOX_RGBA = (0.55, 0.38, 0.22, 1.0)
LAYOUTS: dict[str, tuple[str, ...]] = {
    "place": ("red", "green", "blue"),
    "stack": ("red", "blue"),
    "sort": ("red", "blue", "red", "blue"),
    "pick": ("red", "green", "blue"),
}
"""The cube colours of each layout (refs are ``<colour>_cube_<n>``)."""
MIN_GAP_M = 0.065
CUBE_REACH = (0.17, 0.27)
"""Distances from the base at which cubes are laid (inside the top-down annulus)."""
CUBE_BEARING = (-0.55, 0.55)
"""Bearings (rad, 0 = straight ahead) at which cubes are laid."""
BOX_CENTRES = ((0.14, 0.17), (0.14, -0.17))
"""Where the box stands: to the arm's left or right (chosen by the seed)."""


class So101Config(BaseModel):
    """The ``sim.so101`` driver's options (``driver:`` in a config)."""

    model_config = ConfigDict(extra="forbid")

    seed: int = Field(0, ge=0)
    """The layout's seed (an eval episode's seed)."""
    layout: Layout = "place"
    """Which objects the scene holds (see the module docstring)."""
    width: int = Field(320, ge=32, le=1280)
    height: int = Field(240, ge=32, le=960)
    control_hz: float = Field(25.0, gt=0)
    """Control steps per simulated second (the rate joint targets change and a dataset
    records); the physics runs at 500 Hz, so 500 / control_hz must be whole."""
    real_time_factor: float = Field(0.0, ge=0)
    """0 runs as fast as the CPU allows; 1 paces motions at wall-clock speed."""


def layout_objects(layout: Layout, seed: int) -> tuple[SceneObject, ...]:
    """The box and cubes of ``layout`` for ``seed`` (deterministic)."""
    rng = np.random.default_rng(seed)
    box_xy = BOX_CENTRES[int(rng.integers(len(BOX_CENTRES)))]
    objects = [SceneObject("box_1", "box", "brown", BOX_RGBA, box_xy)]
    placed: list[tuple[float, float]] = [box_xy]
    counts: dict[str, int] = {}
    for color in LAYOUTS[layout]:
        counts[color] = counts.get(color, 0) + 1
        for _ in range(500):
            reach = float(rng.uniform(*CUBE_REACH))
            bearing = float(rng.uniform(*CUBE_BEARING))
            xy = (round(reach * math.cos(bearing), 4), round(reach * math.sin(bearing), 4))
            if all(_clear(xy, other, box=index == 0) for index, other in enumerate(placed)):
                break
        else:  # pragma: no cover - the region holds four cubes with room to spare
            raise RuntimeError(f"no room for a {color} cube in layout {layout} seed {seed}")
        placed.append(xy)
        yaw = round(float(rng.uniform(-0.6, 0.6)), 3)
        ref = f"{color}_cube_{counts[color]}"
        objects.append(SceneObject(ref, "cube", color, COLORS[color], xy, yaw))
    return tuple(objects)


def _clear(xy: tuple[float, float], other: tuple[float, float], *, box: bool) -> bool:
    if box:  # the box is 0.12 m wide: keep cubes off its footprint with room to grasp
        return abs(xy[0] - other[0]) > 0.1 or abs(xy[1] - other[1]) > 0.1
    return math.dist(xy, other) >= MIN_GAP_M
