"""What happened in the world: observations, scene updates, each tool call through the hooks
and the safety envelope to its result and its evaluation, and the robot's own safety
problems (a failed stop, a command that never returned).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from harness.events.base import EventBase
from harness.messages import Verdict

__all__ = [
    "ControlStepsEvent",
    "EvaluationEvent",
    "HookDecisionEvent",
    "ObservationEvent",
    "ProgressEvent",
    "SafetyCheckEvent",
    "SafetyEvent",
    "SceneUpdateEvent",
    "ToolCallEvent",
    "ToolResultEvent",
]


class ObservationEvent(EventBase):
    """A new observation replaced the previous one."""

    type: Literal["observation"] = "observation"
    cameras: dict[str, list[int]] = Field(default_factory=dict)
    """Camera name -> [width, height]."""
    images: list[str] = Field(default_factory=list)
    """sha256 of each encoded image (stored once in the run store)."""
    state: dict[str, Any] = Field(default_factory=dict)
    timestamp: float = 0.0


class ControlStepsEvent(EventBase):
    """The control steps of one physical command (``recording.control``): at the driver's
    control rate, the state it measured and the command it sent right after, with the
    camera frames of the same instant (stored once in the run store, by hash). Step ``k``
    is ``times[k]``, ``states[k]``, ``actions[k]`` and ``frames[camera][k]``; see
    :mod:`embodiment.recording` for what pairs with what."""

    type: Literal["control_steps"] = "control_steps"
    call_id: str
    tool: str
    segment: int = 1
    layout: dict[str, Any]
    """The driver's ``embodiment.recording.ControlLayout`` as JSON: rate, the name of each
    state and action component, what they mean, its cameras."""
    times: list[float] = Field(default_factory=list)
    """Seconds on the driver's clock (simulated time for a simulator)."""
    states: list[list[float]] = Field(default_factory=list)
    actions: list[list[float]] = Field(default_factory=list)
    frames: dict[str, list[str]] = Field(default_factory=dict)
    """Camera -> sha256 of each step's encoded frame."""
    started: float = 0.0
    """Wall time (like ``time``) when the first step arrived; ``time`` is the command's
    end. A replay places the steps between the two at the driver's own pace."""
    dropped: int = 0
    """Steps of the command that could not be recorded (a frame the store could not keep):
    the steps listed are not contiguous, and a dataset leaves the task out."""


class SceneUpdateEvent(EventBase):
    """What changed in the scene graph this turn, and the size of the rendered Brief."""

    type: Literal["scene_update"] = "scene_update"
    added: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    changed: list[str] = Field(default_factory=list)
    stale: list[str] = Field(default_factory=list)
    objects: int = 0
    brief_tokens: int = 0
    diff: dict[str, Any] | None = None
    """The detailed change (``scene.SceneDiff`` as JSON: new nodes, changed fields with old
    and new values, relations added and removed)."""
    snapshot: dict[str, Any] | None = None
    """A full ``scene.SceneSnapshot`` (the first update, then every
    ``scene.snapshot_interval``-th), so a reader can rebuild the scene at any turn."""
    warnings: list[str] = Field(default_factory=list)
    """Perception failures and detections the graph could not use."""


class SafetyCheckEvent(EventBase):
    """The safety envelope's decision on one physical tool call."""

    type: Literal["safety_check"] = "safety_check"
    call_id: str
    tool: str
    outcome: Literal["allow", "clamp", "block"]
    requested: dict[str, Any] = Field(default_factory=dict)
    applied: dict[str, Any] = Field(default_factory=dict)
    violations: list[str] = Field(default_factory=list)
    reason: str = ""
    segment: int = 1
    """Which command of the call it checked: a segmented tool is checked again before each
    re-run, on readings taken after the segment before."""


class HookDecisionEvent(EventBase):
    """A pre-execution hook rewrote or blocked a tool call."""

    type: Literal["hook_decision"] = "hook_decision"
    hook: str
    call_id: str
    tool: str
    action: Literal["rewrite", "block"]
    requested: dict[str, Any] = Field(default_factory=dict)
    applied: dict[str, Any] = Field(default_factory=dict)
    reason: str = ""


class ProgressEvent(EventBase):
    """Text surfaced to the operator without another model turn (beside a tool call, or
    reported by a running tool)."""

    type: Literal["progress"] = "progress"
    text: str
    source: Literal["model", "tool", "harness"] = "model"


class ToolCallEvent(EventBase):
    """Emitted after validation and checks, immediately before the tool runs."""

    type: Literal["tool_call"] = "tool_call"
    call_id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    physical: bool = False


class ToolResultEvent(EventBase):
    type: Literal["tool_result"] = "tool_result"
    call_id: str
    name: str
    is_error: bool = False
    error_kind: str | None = None
    text: str = ""
    archive: str | None = None
    images: list[str] = Field(default_factory=list)
    duration_s: float = 0.0
    evaluation: Verdict | None = None
    executed: bool = True


class EvaluationEvent(EventBase):
    """The hidden ``evaluate_run`` hook's verdict after a configured physical tool."""

    type: Literal["evaluation"] = "evaluation"
    call_id: str
    tool: str
    verdict: Verdict
    segment: int = 1


class SafetyEvent(EventBase):
    """The robot may not be stopped: the operator must look at it.

    ``stop_failed``: ``driver.stop()`` raised when the task ended; ``command_not_returned``:
    a physical command was abandoned after its timeout and ``stop()`` but its ``execute``
    never returned, so the driver may still be carrying it out.
    """

    type: Literal["safety"] = "safety"
    problem: Literal["stop_failed", "command_not_returned"]
    reason: str
    tool: str = ""
