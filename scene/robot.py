"""What the robot's own state says: where its gripper is, whether it is open, what it holds.

A driver reports these keys in ``Observation.state`` (all optional; a malformed value is
reported, never guessed):

- ``ee_position``: [x, y, z] of the gripper (grasp point) in world, metres;
- ``ee_orientation``: its quaternion (x, y, z, w);
- ``gripper_open``: bool; or ``gripper``: "open", "closed" or "partly closed" (closed on
  something);
- ``holding``: the ref held, a list of refs, or None/"" for nothing. When the key is
  present it is the truth; when absent, the graph falls back to the evaluator, perception
  and geometry (a closed gripper around an object);
- ``base_position``: [x, y, z] of the robot's base, for mobile robots.

``frames`` and ``cameras`` are read by :mod:`scene.frames` and :mod:`scene.camera`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from scene.nodes import Quaternion, Vec3, slug

__all__ = ["RobotState", "RobotView", "read_robot_state"]

_GRIPPER_WORDS = {"open": True, "opened": True, "closed": False, "partly closed": False}


class RobotState(BaseModel):
    """The robot keys of one observation's state, validated."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ee_position: Vec3 | None = None
    ee_orientation: Quaternion | None = None
    gripper_open: bool | None = None
    holding: list[str] | None = None
    """Refs held; None when the state does not say."""
    base_position: Vec3 | None = None


class RobotView(BaseModel):
    """The robot as the Brief shows it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    gripper: Vec3 | None = None
    gripper_open: bool | None = None
    holding: list[str] = Field(default_factory=list)

    @property
    def known(self) -> bool:
        return self.gripper is not None


def _numbers(value: Any, count: int) -> tuple[float, ...] | None:
    try:
        numbers = tuple(float(v) for v in value)
    except (TypeError, ValueError):
        return None
    if len(numbers) != count or not all(math.isfinite(v) for v in numbers):
        return None
    return numbers


def read_robot_state(state: Mapping[str, Any]) -> tuple[RobotState, list[str]]:
    """The robot keys of ``state`` and the problems found in them."""
    problems: list[str] = []
    values: dict[str, Any] = {}
    for key, count in (("ee_position", 3), ("ee_orientation", 4), ("base_position", 3)):
        raw = state.get(key)
        if raw is None:
            continue
        numbers = _numbers(raw, count)
        if numbers is None:
            problems.append(f"{key}: expected {count} finite numbers, got {raw!r}")
        else:
            values[key] = numbers
    opened = state.get("gripper_open")
    if isinstance(opened, bool):
        values["gripper_open"] = opened
    elif opened is not None:
        problems.append(f"gripper_open: expected true or false, got {opened!r}")
    elif isinstance(state.get("gripper"), str):
        word = state["gripper"].strip().lower()
        if word in _GRIPPER_WORDS:
            values["gripper_open"] = _GRIPPER_WORDS[word]
        else:
            problems.append(f"gripper: expected 'open' or 'closed', got {state['gripper']!r}")
    if "holding" in state:
        raw = state["holding"]
        items = [raw] if isinstance(raw, str) else list(raw or [])
        values["holding"] = sorted({slug(str(item)) for item in items if str(item).strip()})
    return RobotState(**values), problems
