"""``harness demo`` on the tabletop: the default task, its flags and the deployment.

The deployment is what ``harness demo``, ``run``, ``chat`` and ``check`` use when no
config file is read (``configs/default.yaml`` is the same; a test keeps the two equal):
the offline planner drives the Panda, the simulator's ground truth judges the goal.
``--scene hidden_cube`` (chosen by itself when the instruction asks to find something)
hides a yellow cube behind a deep tray, out of the front camera's view, so the model has
to search.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

from worlds.contract import DemoPlan, DemoRequest, WorldError
from worlds.tabletop.scene import TabletopConfig, assign_refs

__all__ = ["DEPLOYMENT", "INSTRUCTION", "SCENES", "TabletopDemo"]

INSTRUCTION = "put all the cubes in the tray"
SCENES = ("standard", "hidden_cube")
DEPLOYMENT: dict[str, Any] = {
    "model": {"provider": "planner", "name": "tabletop-planner"},
    "embodiment": "panda_tabletop",
    "driver": {"name": "sim.tabletop", "seed": 0},
    "run": {"max_turns": 60, "failure_budget": 8, "store": ".harness"},
    "evaluation": {"required_tools": ["pick", "place"]},
    "context": {
        "episodes": {"enabled": True},
        "pressure": {"cache_aware": True},  # levels: the window table (default.yaml)
    },
}
_HIDDEN_CUBE_NOTE = (
    "scene: hidden_cube (a yellow cube stands behind a deep tray, out of the front camera's "
    "view; the model may delegate the search to a sub-agent)"
)


class TabletopDemo:
    """The tabletop's demo: layout seed, scene variant, the PyBullet window, grasp faults."""

    instruction = INSTRUCTION
    flags = frozenset({"seed", "scene", "gui", "drop_first_grasp"})

    def plan(self, request: DemoRequest) -> DemoPlan:
        overrides: list[str] = []
        if request.seed is not None:
            overrides.append(f"driver.seed={request.seed}")
        if request.gui:
            overrides.append("driver.gui=true")
        for ref in request.drop_first_grasp:
            overrides.append(f"driver.faults.drop_on_lift.{ref}=1")
        scene = self.scene(request)
        if scene not in SCENES:
            raise WorldError(
                f"--scene: the tabletop has the scenes {', '.join(SCENES)}, not {scene!r}",
                key="--scene",
                value=scene,
            )
        if scene != "standard":
            overrides.append(f"driver.variant={scene}")
        notes = (_HIDDEN_CUBE_NOTE,) if scene == "hidden_cube" else ()
        return DemoPlan(request.instruction or INSTRUCTION, tuple(overrides), notes)

    @staticmethod
    def scene(request: DemoRequest) -> str:
        """``--scene``, else hidden_cube for an instruction that asks to find something."""
        if request.scene:
            return request.scene
        return "hidden_cube" if request.asks_to_find else "standard"

    def check(self, request: DemoRequest, driver_options: Mapping[str, Any]) -> None:
        """Flags that parse but cannot work: refused now, not as a PyBullet message or a
        fault that silently never fires."""
        if request.gui and sys.platform.startswith("linux"):
            if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
                raise WorldError(
                    "--gui needs a display (DISPLAY is not set); leave it out to run headless",
                    key="--gui",
                )
        if request.drop_first_grasp:
            options = {k: v for k, v in driver_options.items() if k != "faults"}
            scene = TabletopConfig.model_validate(options).scene()
            refs = [ref for ref, _ in assign_refs(scene.objects)]
            unknown = [ref for ref in request.drop_first_grasp if ref not in refs]
            if unknown:
                raise WorldError(
                    f"--drop-first-grasp {unknown[0]}: no such object in the scene "
                    f"(objects: {', '.join(refs)})",
                    key="--drop-first-grasp",
                    value=unknown[0],
                )

    def describe(self, driver_options: Mapping[str, Any]) -> str:
        return "a simulated Franka Panda (PyBullet)"
