"""Typed stream events: what the harness did, kept apart from what the model saw.

Every event is a frozen pydantic model with a literal ``type``, the ``task_id`` and
``turn`` it belongs to and a per-session ``seq``. Parts of the harness build events with
the envelope left empty; :meth:`harness.Harness` stamps the envelope when it emits them, so
components never need to know the sequence counter. Every event serialises to one JSON line
(``event.model_dump_json()``), which is what ``harness run --json`` prints and what the
run store keeps.

Names are chosen once: renaming an event type is a breaking change for every consumer.

The classes live by concern (``base``: the envelope; ``task``: a task's life and its
``done``; ``outcome``: what its ending means; ``acting``: observations and tool calls;
``context``: compactions and pressure; ``model``: a model call; ``lanes``: sub-agents);
this module names them all, and ``Event`` is their union.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, TypeAdapter

from harness.events.acting import (
    ControlStepsEvent,
    EvaluationEvent,
    HookDecisionEvent,
    ObservationEvent,
    ProgressEvent,
    SafetyCheckEvent,
    SafetyEvent,
    SceneUpdateEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from harness.events.base import EventBase
from harness.events.context import (
    CompactionEvent,
    ContextPressureEvent,
    EpisodeEvent,
    PromptSnapshotEvent,
)
from harness.events.lanes import HandoffEvent, HandoffStatus, LaneStartedEvent, RecoveryEvent
from harness.events.model import (
    ModelDeltaEvent,
    ModelDiscardedEvent,
    ModelErrorEvent,
    ModelResponseEvent,
    ModelRetryEvent,
)
from harness.events.outcome import (
    GoalCondition,
    OutcomeEvidence,
    TaskOutcome,
    TaskStatus,
    task_succeeded,
)
from harness.events.task import (
    DoneEvent,
    MemoryConsolidationEvent,
    NotificationEvent,
    ReplanEvent,
    SkillLoadedEvent,
    TaskResumedEvent,
    TaskStartedEvent,
    ToolsListedEvent,
    UserQueryEvent,
)

__all__ = [
    "CompactionEvent",
    "ContextPressureEvent",
    "ControlStepsEvent",
    "DoneEvent",
    "EpisodeEvent",
    "EvaluationEvent",
    "Event",
    "EventBase",
    "GoalCondition",
    "HandoffEvent",
    "HandoffStatus",
    "HookDecisionEvent",
    "LaneStartedEvent",
    "MemoryConsolidationEvent",
    "ModelDeltaEvent",
    "ModelDiscardedEvent",
    "ModelErrorEvent",
    "ModelResponseEvent",
    "ModelRetryEvent",
    "NotificationEvent",
    "ObservationEvent",
    "OutcomeEvidence",
    "ProgressEvent",
    "PromptSnapshotEvent",
    "RecoveryEvent",
    "ReplanEvent",
    "SafetyCheckEvent",
    "SceneUpdateEvent",
    "SkillLoadedEvent",
    "TaskOutcome",
    "TaskResumedEvent",
    "TaskStartedEvent",
    "TaskStatus",
    "ToolCallEvent",
    "ToolResultEvent",
    "ToolsListedEvent",
    "UserQueryEvent",
    "event_adapter",
    "parse_event",
    "task_succeeded",
]


Event = Annotated[
    TaskStartedEvent
    | TaskResumedEvent
    | ToolsListedEvent
    | SkillLoadedEvent
    | ObservationEvent
    | SceneUpdateEvent
    | SafetyCheckEvent
    | HookDecisionEvent
    | CompactionEvent
    | EpisodeEvent
    | ContextPressureEvent
    | PromptSnapshotEvent
    | ModelDeltaEvent
    | ModelRetryEvent
    | ModelResponseEvent
    | ModelDiscardedEvent
    | ModelErrorEvent
    | ProgressEvent
    | ToolCallEvent
    | ToolResultEvent
    | ControlStepsEvent
    | EvaluationEvent
    | ReplanEvent
    | UserQueryEvent
    | NotificationEvent
    | MemoryConsolidationEvent
    | LaneStartedEvent
    | HandoffEvent
    | RecoveryEvent
    | SafetyEvent
    | DoneEvent,
    Field(discriminator="type"),
]
"""Any stream event."""

event_adapter: TypeAdapter[Event] = TypeAdapter(Event)


def parse_event(data: str | bytes | dict[str, Any]) -> Event:
    """Read an event back from its JSON line (or decoded dict)."""
    if isinstance(data, dict):
        return event_adapter.validate_python(data)
    return event_adapter.validate_json(data)
