"""The SO-101 world's suite: ``harness eval so101_tabletop``.

Four tasks on seeded layouts (``driver.layout``, ``driver.seed`` = the episode's seed),
judged by the harness's ground-truth task check against the simulator's state
(``check: programmatic``): the instruction is parsed and each goal condition is checked
with the driver's ``place`` post-condition (and, for a pick, its ``pick`` one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from worlds.contract import SuiteSpec, SuiteTaskSpec, WorldError

__all__ = ["CONFIG", "SUITE", "TASKS", "So101Suites"]

CONFIG = Path(__file__).resolve().parent / "eval.yaml"
SUITE = "so101_tabletop"
EPISODES = 10
"""Seeds 0..9 per task (``--episodes N`` takes the first N round-robin over the tasks)."""


@dataclass(frozen=True)
class Task:
    layout: str
    instruction: str
    description: str


TASKS: dict[str, Task] = {
    "place": Task("place", "put the red cube in the box", "one cube into the box"),
    "stack": Task("stack", "stack the blue cube on the red cube", "one cube on another"),
    "sort": Task(
        "sort", "put all the red cubes in the box", "sort by colour: the red cubes into the box"
    ),
    "pick": Task("pick", "pick up the green cube", "grasp a cube and hold it up"),
}


class So101Suites:
    def names(self) -> Sequence[str]:
        return (SUITE,)

    def claims(self, name: str) -> bool:
        return name == SUITE

    def build(self, name: str) -> SuiteSpec:
        if name != SUITE:
            raise WorldError(f"no SO-101 suite {name!r} (suites: {SUITE})", key="suite", value=name)
        return SuiteSpec(
            name=SUITE,
            description="SO-101 in MuJoCo: place, stack, sort by colour and pick, seeded layouts",
            config=CONFIG,
            tasks=tuple(
                SuiteTaskSpec(
                    name=key,
                    description=task.description,
                    instruction=task.instruction,
                    episodes=EPISODES,
                    overrides=(f"driver.layout={task.layout}",),
                )
                for key, task in TASKS.items()
            ),
            max_turns=30,
            check="programmatic",
            seed_option="driver.seed",
            acting_tools=("pick", "place", "move_to", "move_joints", "home"),
        )
