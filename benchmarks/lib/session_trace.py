"""A seeded, synthetic long robot session: the input every context policy is measured on.

The trace is plain data (no harness imports): what the model said and called at every
turn, what each tool returned, what the scene Brief and robot state were, and which
camera frame was current. Facts (object refs, coordinates, error codes) are planted inside
tool outputs at known turns and probed at later turns, so a benchmark can ask, for every
policy, whether the model could still read each fact when it needed it.

This module is what a trace *is*, for everything that reads one (replay, metrics,
policies); :mod:`benchmarks.lib.trace_generator` is how one is drawn from a seed, for the
benchmarks and tests that build one.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "DUMP_TOOLS",
    "PHYSICAL_TOOLS",
    "TOOL_NAMES",
    "FactKind",
    "PlantedFact",
    "Trace",
    "TraceSpec",
    "TraceTask",
    "TraceTurn",
]


FactKind = Literal["object_ref", "coordinates", "error_code"]

PHYSICAL_TOOLS = ("pick", "place", "move_to")
"""Tools that move the arm (they pass the safety gate in the harness run)."""
DUMP_TOOLS = ("read_force_log", "dump_joint_states", "read_system_log")
"""Tools whose results are the 5-50 KB sensor and log dumps."""
SMALL_TOOLS = ("pick", "place", "move_to", "look", "find_objects", "check_gripper")
TOOL_NAMES = SMALL_TOOLS + DUMP_TOOLS


class _Data(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TraceSpec(_Data):
    """How to generate a trace. Defaults are the issue's: 600 turns, ~60 probed facts."""

    turns: int = Field(600, ge=4, description="Tool turns before the final report.")
    facts: int = Field(60, ge=0)
    seed: int = 0
    dump_share: float = Field(0.06, ge=0, le=1, description="Share of turns that dump 5-50 KB.")
    small_chars: tuple[int, int] = (200, 2000)
    dump_chars: tuple[int, int] = (5_000, 50_000)
    headline_share: float = Field(
        1 / 3, ge=0, le=1, description="Share of facts on a result's first line."
    )
    image_size: tuple[int, int] = (320, 240)
    """Camera frame width x height (the built-in simulator's default camera)."""
    tasks: int = Field(1, ge=1, description="Tasks in the session, one instruction each.")


class PlantedFact(_Data):
    """One fact inside one tool output, and the turn at which it is needed again."""

    id: str
    kind: FactKind
    key: str
    """The exact string that must be readable at probe time (unique in the whole trace)."""
    plant_turn: int
    """The turn whose tool result carries the fact (visible from request plant_turn + 1)."""
    probe_turn: int
    """The turn whose model request is checked for the fact."""
    placement: Literal["headline", "body"]


class TraceTurn(_Data):
    """One model decision and, except for the final turn, the tool call it made."""

    turn: int
    """1-based; the final turn (no tool call) is ``len(trace.turns)``."""
    timestamp: float
    text: str
    tool: str | None = None
    arguments: dict[str, Any] = Field(default_factory=dict)
    output: str = ""
    is_error: bool = False
    brief: str
    state: dict[str, Any]


class TraceTask(_Data):
    """One task of the session: its instruction and its turns (the last one, without a
    tool call, is its final report)."""

    instruction: str
    first_turn: int
    last_turn: int

    @property
    def turns(self) -> int:
        return self.last_turn - self.first_turn + 1


class Trace(_Data):
    """A whole session: tasks, turns, planted facts, Resident profile text."""

    spec: TraceSpec
    instruction: str
    """The first task's instruction."""
    profile_text: str
    turns: list[TraceTurn]
    facts: list[PlantedFact]
    tasks: list[TraceTask] = Field(default_factory=list)

    @property
    def tool_turns(self) -> int:
        return sum(1 for turn in self.turns if turn.tool is not None)

    def task_starting_at(self, turn: int) -> TraceTask | None:
        """The task whose first turn is ``turn``."""
        return next((task for task in self.tasks if task.first_turn == turn), None)

    def at(self, turn: int) -> TraceTurn:
        """The turn with 1-based number ``turn``."""
        return self.turns[turn - 1]

    @cached_property
    def facts_by_probe(self) -> dict[int, list[PlantedFact]]:
        probes: dict[int, list[PlantedFact]] = {}
        for fact in self.facts:
            probes.setdefault(fact.probe_turn, []).append(fact)
        return probes

    @cached_property
    def frame_background(self) -> np.ndarray:
        """The gradient table every frame is drawn on (the same for every turn: computed
        once per trace, each frame starts from a copy)."""
        width, height = self.spec.image_size
        rows = np.linspace(60, 140, height, dtype=np.float32)[:, None]
        cols = np.linspace(0, 40, width, dtype=np.float32)[None, :]
        frame = np.empty((height, width, 3), dtype=np.uint8)
        frame[:, :, 0] = (rows + cols).astype(np.uint8)
        frame[:, :, 1] = (rows * 0.9 + cols).astype(np.uint8)
        frame[:, :, 2] = (rows * 0.7).astype(np.uint8)
        frame.flags.writeable = False
        return frame

    def frame(self, turn: int) -> np.ndarray:
        """The camera frame current at ``turn``: a deterministic scene-like picture.

        A gradient table with coloured squares that drift with the turn number, so every
        frame differs (a new image hash per turn, as a live camera gives) while JPEG
        sizes stay realistic.
        """
        width, height = self.spec.image_size
        frame = self.frame_background.copy()
        rng = np.random.default_rng(self.spec.seed * 100_003 + turn)
        side = max(4, height // 10)
        for index in range(5):
            x = int((index * 61 + turn * 3 + rng.integers(0, 5)) % max(1, width - side))
            y = int((index * 37 + turn) % max(1, height - side))
            colour = np.array(
                [(index * 80) % 256, (index * 140 + 60) % 256, (index * 50 + 120) % 256],
                dtype=np.uint8,
            )
            frame[y : y + side, x : x + side] = colour
        return frame
