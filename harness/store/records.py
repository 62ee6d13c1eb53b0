"""What reading a run store hands back: sessions, tasks, items and the context at a turn as
frozen records, and whether the process that wrote a session still runs.
"""

from __future__ import annotations

import json
import socket
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter

from harness.context.introspection import ContextRow as IntrospectionRow
from harness.context.introspection import EpisodeRow
from harness.events import (
    OutcomeEvidence,
    PromptSnapshotEvent,
    TaskOutcome,
)
from harness.mcp.processes import is_alive, start_identity
from harness.messages import Item, Usage

__all__ = [
    "ContextRow",
    "ContextView",
    "StoredItem",
    "StoredSession",
    "StoredTask",
    "process_alive",
]

item_adapter: TypeAdapter[Item] = TypeAdapter(Item)


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True)


class StoredSession(_Record):
    id: str
    created_at: float
    updated_at: float
    pid: int | None = None
    host: str | None = None
    pid_started: str | None = None
    """The writing process's identity beyond its number (see :func:`process_alive`)."""
    tasks: int = 0
    config: dict[str, Any] = {}


class StoredTask(_Record):
    """One task as recorded; ``status`` is ``interrupted`` for a task left running by a
    process that no longer exists (a crash: ``harness resume`` continues it)."""

    id: str
    session_id: str
    instruction: str
    status: str
    recorded_status: str
    reason: str = ""
    report: str = ""
    turns: int = 0
    usage: Usage = Usage()
    started_at: float
    ended_at: float | None = None
    resumes: int = 0
    pid: int | None = None
    outcome: TaskOutcome = "unverified"
    """Whether the goal was met (``achieved``, ``not_achieved``, ``unverified``)."""
    evidence: OutcomeEvidence = OutcomeEvidence()
    lane: str = ""
    """A sub-agent lane's own id ("" for a main-lane task)."""
    parent_task_id: str | None = None
    parent_call_id: str | None = None
    parent_turn: int | None = None
    """The parent turn a lane worked for (None for a task, or a lane a control script
    started directly)."""

    @property
    def duration_s(self) -> float | None:
        return None if self.ended_at is None else self.ended_at - self.started_at

    @property
    def is_lane(self) -> bool:
        return bool(self.lane)


class StoredItem(_Record):
    item: Item
    pos: int
    lifetime: str
    tokens: int
    state: str
    reason: str

    @property
    def id(self) -> str:
        return self.item.id


class ContextRow(IntrospectionRow):
    """One item's context state at a turn (``harness context RUN --turn N``): the row of
    ``Harness.context_report()`` as recorded, plus a one-line preview of the item."""

    preview: str = ""


class ContextView(_Record):
    task_id: str
    turn: int
    snapshot: PromptSnapshotEvent | None
    skills: list[str]
    rows: list[ContextRow]
    episodes: list[EpisodeRow] = []
    """The task's episodes as they stood at that turn (from its ``episode`` events)."""


def process_alive(pid: int | None, host: str | None, started: str | None = None) -> bool:
    """Whether the process that wrote a session still runs (a zombie does not). With the
    writer's ``started`` identity recorded, a live process that merely got the same number
    later is not it: the writer crashed, and its task is interrupted, not running."""
    if pid is None:
        return False
    if host and host != socket.gethostname():
        return True  # cannot tell from here: assume it is alive
    if started is not None and is_alive(pid):
        return start_identity(pid) == started
    return is_alive(pid)


def item_preview(item: Item, limit: int = 80) -> str:
    """One line: a decision's tool call first (then its text), otherwise the item's text."""
    text = getattr(item, "text", "") or ""
    calls = getattr(item, "tool_calls", None)
    if calls:
        called = ", ".join(f"{c.name}({json.dumps(c.arguments)})" for c in calls)
        text = f"{called} - {text}" if text else called
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
