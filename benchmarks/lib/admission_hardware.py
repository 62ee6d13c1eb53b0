"""The hardware :mod:`benchmarks.admission_attacks` drives, and what judges it.

Each attack's "hardware" records its own ground truth: what the MCP arm's tools declare
(with the unsafe defaults a server falls back on), an arm's fixed readings, a base in a
corridor that records the true clearance each command arrived with, an evaluator that
never finishes, and a driver that counts calls overlapping in time. The oracles judge a
command from the profile's numbers and that ground truth alone, never from the envelope's
view.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from benchmarks.lib.readings_only import ReadingsOnlyDriver
from embodiment.profile import load_profile
from embodiment.types import ActionResult, ActionSpec, Observation
from harness.messages import Verdict

__all__ = [
    "ARM_SAFETY",
    "ARM_SCHEMAS",
    "HOME",
    "MID_JOINTS",
    "MOBILE",
    "MOVE_BASE",
    "PANDA",
    "Corridor",
    "MoveBase",
    "OverlapRecorder",
    "Readings",
    "StillGoing",
    "arm_problems",
]

ROOT = Path(__file__).resolve().parents[2]

PANDA = load_profile("panda_tabletop")
MOBILE = load_profile(ROOT / "worlds" / "mobile" / "mobile_manipulator.yaml")
HOME = [0.307, 0.0, 1.11]
MID_JOINTS = [0.0, 0.0, 0.0, -1.5708, 0.0, 1.8675, 0.0]
POSITION = {"type": "array", "items": {"type": "number"}, "minItems": 3, "maxItems": 3}
ARM_SCHEMAS: dict[str, dict[str, Any]] = {
    "move_arm": {
        "type": "object",
        "properties": {
            "x": {"type": "number"},
            "y": {"type": "number"},
            "z": {"type": "number"},
            "speed": {"type": "number", "default": 1.5},
        },
        "required": ["x", "y", "z"],
    },
    "move_point": {
        "type": "object",
        "properties": {"target": {**POSITION, "default": [0.0, 0.0, 0.7]}},
    },
    "set_joints": {
        "type": "object",
        "properties": {"joints": {"type": "array", "default": [0.0] * 7}},
    },
    "grip": {
        "type": "object",
        "properties": {
            "width": {"type": "number", "default": 0.15},
            "force": {"type": "number", "default": 140.0},
        },
    },
}
"""The issue's four tools, with the unsafe defaults a server would fall back on."""
ARM_SAFETY = {
    "move_arm": {"x": "position.x", "y": "position.y", "z": "position.z", "speed": "speed"},
    "move_point": {"target": "position"},
    "set_joints": {"joints": "joints"},
    "grip": {"width": "width", "force": "force"},
}


class Readings(ReadingsOnlyDriver):
    """An arm's readings, no actions (the MCP server is the hardware)."""

    def observe(self) -> Observation:
        return Observation(state={"ee_position": HOME, "joint_positions": MID_JOINTS})


class MoveBase(BaseModel):
    distance: float = Field(description="metres; negative drives backward")


MOVE_BASE = ActionSpec(
    name="move_base",
    description="Drive the base straight by a distance (relative).",
    arguments=MoveBase,
    safety={"distance": "distance"},
)


class Corridor:
    """A mobile base in a corridor with an obstacle ahead; it records the true clearance
    each command arrived with (its ground truth, not a reading)."""

    def __init__(self, obstacle_m: float = 0.75) -> None:
        self.x = 0.0
        self.obstacle_m = obstacle_m
        self.commands: list[tuple[float, float]] = []
        """(distance, true clearance ahead when it arrived)."""

    def connect(self) -> None: ...

    def disconnect(self) -> None: ...

    def stop(self) -> None: ...

    def capabilities(self) -> list[ActionSpec]:
        return [MOVE_BASE]

    def execute(self, action: str, arguments: dict[str, Any]) -> ActionResult:
        distance = float(arguments["distance"])
        self.commands.append((distance, self.obstacle_m - self.x))
        self.x += distance
        return ActionResult(ok=True, message=f"moved {distance:.3f} m", applied=arguments)

    def observe(self) -> Observation:
        ahead = max(self.obstacle_m - self.x, 0.0)  # a sensor reads 0 at contact, never less
        return Observation(
            state={
                "ee_position": [self.x + 0.4, 0.0, 0.9],
                "joint_positions": [0.0] * 6,
                "base_pose": [self.x, 0.0, 0.0],
                "clearance": {"forward": ahead, "backward": 5.0, "left": 5.0, "right": 5.0},
            }
        )

    def bad_commands(self) -> list[tuple[float, float]]:
        """Commands that drove closer to the obstacle than the profile's margin."""
        margin = MOBILE.base.clearance_margin_m
        return [(d, clear) for d, clear in self.commands if d > 0 and clear - d < margin - 1e-9]


class StillGoing:
    """An evaluator that always answers "in progress" (the case that re-runs a tool)."""

    def evaluate(self, **_: Any) -> Verdict:
        return Verdict(status="process", evidence="not there yet", evaluator="attack")


class OverlapRecorder:
    """A driver that counts calls overlapping in time: a command arriving while another
    executes, or a ``stop()`` landing in one. Two recorders may share one count (two
    driver objects for the same hardware)."""

    def __init__(
        self,
        identity: str | None = None,
        *,
        shared: OverlapRecorder | None = None,
        hold_s: float = 0.005,
    ) -> None:
        self.identity = identity
        self.hold_s = hold_s
        self.counts: dict[str, int] = (
            shared.counts if shared else {"in_flight": 0, "overlaps": 0, "n": 0}
        )
        self.lock = shared.lock if shared else threading.Lock()

    def hardware_identity(self) -> str | None:
        return self.identity

    def connect(self) -> None: ...

    def disconnect(self) -> None: ...

    def stop(self) -> None:
        with self.lock:
            if self.counts["in_flight"]:
                self.counts["overlaps"] += 1

    def capabilities(self) -> list[ActionSpec]:
        return [MOVE_BASE]

    def execute(self, action: str, arguments: dict[str, Any]) -> ActionResult:
        with self.lock:
            self.counts["in_flight"] += 1
            self.counts["n"] += 1
            if self.counts["in_flight"] > 1:
                self.counts["overlaps"] += 1
        time.sleep(self.hold_s)
        with self.lock:
            self.counts["in_flight"] -= 1
        return ActionResult(ok=True, message="moved", applied=arguments)

    def observe(self) -> Observation:
        return Corridor(obstacle_m=100.0).observe()


def arm_problems(tool: str, executed: dict[str, Any]) -> list[str]:
    """What is wrong with a command the arm executes, from the profile's numbers alone."""
    limits, gripper, workspace = PANDA.limits, PANDA.grippers[0], PANDA.workspace
    problems = []
    speed, force, width = executed.get("speed"), executed.get("force"), executed.get("width")
    if speed is not None and not 0 < speed <= limits.max_speed_m_s:
        problems.append(f"speed {speed}")
    if force is not None and not 0 < force <= limits.max_force_n:
        problems.append(f"force {force}")
    if width is not None and not 0 <= width <= gripper.max_opening_m:
        problems.append(f"width {width}")
    for value, (low, high) in zip(
        executed.get("joints") or [], limits.joint_limits or [], strict=False
    ):
        if not low <= value <= high:
            problems.append(f"joint {value:.3f} outside [{low}, {high}]")
    point = executed.get("target")
    if point is None and "x" in executed:
        point = [executed["x"], executed["y"], executed["z"]]
    if point is not None:
        if not all(
            lo <= v <= hi for v, lo, hi in zip(point, workspace.min, workspace.max, strict=True)
        ):
            problems.append(f"point {point} outside the workspace")
        for zone in PANDA.keep_out:
            if all(lo <= v <= hi for v, lo, hi in zip(point, zone.min, zone.max, strict=True)):
                problems.append(f"point {point} inside {zone.name}")
    return problems
