"""Data that crosses the boundary between the harness and a robot (real or simulated).

These types deliberately import nothing from the harness: a driver author implements the
:class:`Driver` protocol with numpy and pydantic alone.
"""

from __future__ import annotations

import time
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ActionResult",
    "Driver",
    "Observation",
    "SafetyDecision",
]


class Observation(BaseModel):
    """One snapshot of what the robot senses.

    ``images`` maps a camera name (as declared in the profile) to an HxWx3 uint8 frame;
    ``state`` is JSON-able robot state (joint positions, end-effector pose, gripper);
    ``safety`` holds the readings the safety envelope needs (e.g. ``clearance_m.front``).
    A reading that is missing or None makes the envelope fail closed.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    timestamp: float = Field(default_factory=time.time)
    images: dict[str, np.ndarray] = Field(default_factory=dict)
    state: dict[str, Any] = Field(default_factory=dict)
    safety: dict[str, float | None] = Field(default_factory=dict)


class ActionResult(BaseModel):
    """What a driver actually did with an action (after clamping, or a partial motion)."""

    model_config = ConfigDict(frozen=True)

    ok: bool
    message: str = ""
    applied: dict[str, Any] = Field(default_factory=dict)
    interrupted: bool = False
    data: dict[str, Any] = Field(default_factory=dict)


class SafetyDecision(BaseModel):
    """The safety envelope's verdict on one physical tool call.

    ``arguments`` are the arguments the driver may see: unchanged for ``allow``, rewritten
    for ``clamp``, and irrelevant for ``block``.
    """

    model_config = ConfigDict(frozen=True)

    outcome: Literal["allow", "clamp", "block"]
    arguments: dict[str, Any] = Field(default_factory=dict)
    violations: list[str] = Field(default_factory=list)
    reason: str = ""


@runtime_checkable
class Driver(Protocol):
    """A robot or simulator the harness drives (LeRobot-like).

    ``execute`` returns what was actually applied. ``stop`` may be called from another
    thread at any time and must bring a motion in flight to a halt promptly.
    """

    def connect(self) -> None: ...

    def observe(self) -> Observation: ...

    def execute(self, action: str, arguments: dict[str, Any]) -> ActionResult: ...

    def stop(self) -> None: ...

    def disconnect(self) -> None: ...
