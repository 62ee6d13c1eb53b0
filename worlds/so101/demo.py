"""``harness demo --world so101``: the SO-101 at a table, the offline planner, ground truth.

``--task`` chooses a suite task's layout and instruction (``place``, ``stack``, ``sort``,
``pick``); ``--seed`` the layout's seed. An instruction given on the command line is used
as written (the planner and the task check read it; the layout is the task's, ``place``
by default).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from worlds.contract import DemoPlan, DemoRequest, WorldError
from worlds.so101.suites import TASKS

__all__ = ["DEPLOYMENT", "INSTRUCTION", "So101Demo"]

INSTRUCTION = "put the red cube in the box"
DEPLOYMENT: dict[str, Any] = {
    "model": {"provider": "planner", "name": "tabletop-planner"},
    "embodiment": "so101",
    "driver": {"name": "sim.so101", "seed": 0, "layout": "place"},
    "run": {"max_turns": 40, "failure_budget": 8, "store": ".harness"},
    "evaluation": {"required_tools": ["pick", "place"]},
    "context": {
        "episodes": {"enabled": True},
        "pressure": {"cache_aware": True},  # levels: the window table (default.yaml)
    },
}


class So101Demo:
    """The demo's flags: ``--seed`` and ``--task``."""

    instruction = INSTRUCTION
    flags = frozenset({"seed", "task"})

    def plan(self, request: DemoRequest) -> DemoPlan:
        overrides: list[str] = []
        if request.seed is not None:
            overrides.append(f"driver.seed={request.seed}")
        instruction = request.instruction or INSTRUCTION
        if request.task is not None:
            task = TASKS.get(request.task)
            if task is None:
                raise WorldError(
                    f"--task: the SO-101 world has the tasks {', '.join(TASKS)}, not "
                    f"{request.task!r}",
                    key="--task",
                    value=request.task,
                )
            overrides.append(f"driver.layout={task.layout}")
            instruction = request.instruction or task.instruction
        return DemoPlan(instruction, tuple(overrides), (f"instruction: {instruction}",))

    def check(self, request: DemoRequest, driver_options: Mapping[str, Any]) -> None:
        return None

    def describe(self, driver_options: Mapping[str, Any]) -> str:
        return (
            f"a simulated SO-101 arm (MuJoCo, the published model; layout "
            f"{driver_options.get('layout', 'place')}, seed {driver_options.get('seed', 0)})"
        )
